"""One table per table feature, written by deltaexplore's core writer, for the clients matrix.

`WRITTEN[feature](root)` builds a table that has the feature with the operations that apply to
it (create, append, DELETE with deletion vectors, UPDATE, MERGE, OPTIMIZE, checkpoint, VACUUM)
and returns the rows it must hold, computed here without reading the table. Where the writer
cannot create the feature from table properties (invariants, generated / identity columns,
variant columns, a widened type), version 0 is a hand-written CREATE whose metadata declares it
and every later version is the writer's. `REFUSED[feature](root)` writes a one-file table whose
log lists a feature this writer refuses (hand-written, as another client would have written it);
the test then asks the writer to append to it.

Used by tests/write/test_clients_matrix.py (delta-rs both ways, DuckDB and this reader) and
tests/spark/test_spark_clients_matrix.py (Spark through this project).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import shutil
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from helpers import add, commit_info, metadata, protocol, write_commit, write_data

import deltaexplore as dx
from deltaexplore.core.operations import (
    checkpoint,
    delete,
    merge,
    optimize,
    set_table_properties,
    update,
    vacuum,
    when_matched_update,
    when_not_matched_insert_all,
    write_table,
)
from deltaexplore.core.protocol.actions import Protocol
from deltaexplore.core.protocol.features import FEATURES
from deltaexplore.core.protocol.schema import VARIANT_ARROW
from deltaexplore.core.protocol.variant import encode_object, encode_string
from deltaexplore.core.write.checkpoint_writer import write_checkpoint
from deltaexplore.core.write.transaction import Transaction

DV = {"delta.enableDeletionVectors": "true"}


def rows(start: int, n: int) -> pa.Table:
    """`n` rows from id `start`: every common type, a partition-friendly column, nulls."""
    ids = list(range(start, start + n))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "part": pa.array(["a" if i % 2 else "b c" for i in ids]),
            "amount": pa.array([Decimal(i) / 8 for i in ids], pa.decimal128(12, 3)),
            "day": pa.array([dt.date(2024, 2, 1 + i % 28) for i in ids]),
            "ts": pa.array([dt.datetime(2024, 3, 1, i % 24, i % 60, tzinfo=dt.UTC) for i in ids], pa.timestamp("us", tz="UTC")),
            "name": pa.array([None if i % 5 == 0 else f"name {i}" for i in ids]),
        }
    )


def _where(t: pa.Table, keep: pa.Array) -> pa.Table:
    return t.filter(keep)


def _without(t: pa.Table, ids: set[int]) -> pa.Table:
    return _where(t, pc.invert(pc.is_in(t.column("id"), pa.array(sorted(ids), pa.int64()))))


def _set(t: pa.Table, column: str, ids: set[int], value: Any) -> pa.Table:
    hit = pc.is_in(t.column("id"), pa.array(sorted(ids), pa.int64()))
    typ = t.schema.field(column).type
    new = pc.if_else(hit, pa.scalar(value, typ), t.column(column))
    return t.set_column(t.column_names.index(column), column, new)


def _create_by_hand(root: Path, fields: list[dict], proto: dict, *, configuration: dict | None = None, parts=None) -> None:
    schema = {"type": "struct", "fields": fields}
    write_commit(
        root, 0, [commit_info("CREATE TABLE"), proto, metadata(schema, partition_columns=parts, configuration=configuration)]
    )


def _field(name: str, type_: object, **meta: object) -> dict:
    return {"name": name, "type": type_, "nullable": True, "metadata": dict(meta)}


_COMMON = [
    _field("id", "long"),
    _field("part", "string"),
    _field("amount", "decimal(12,3)"),
    _field("day", "date"),
    _field("ts", "timestamp"),
    _field("name", "string"),
]


def _dml_history(root: Path, conf: dict[str, str], *, partition_by: list[str] | None = None) -> pa.Table:
    """Create, append, DELETE, UPDATE, MERGE (update + insert), OPTIMIZE, checkpoint, append."""
    r = str(root)
    write_table(r, rows(0, 30), partition_by=partition_by, configuration=conf, max_rows_per_file=8)
    write_table(r, rows(30, 10))
    delete(r, "id % 4 = 0")
    update(r, {"name": "'updated'"}, "id < 10")
    src = rows(35, 10)
    merge(r, src, "target.id = source.id", [when_matched_update({"name": "'merged'"}), when_not_matched_insert_all()])
    optimize(r)
    checkpoint(r)
    write_table(r, rows(100, 3))
    deleted = {i for i in range(40) if i % 4 == 0}
    expected = _set(_set(_without(rows(0, 40), deleted), "name", set(range(10)), "updated"), "name", set(range(35, 40)), "merged")
    inserted = _where(src, pc.invert(pc.is_in(src.column("id"), expected.column("id").combine_chunks())))  # 36 and 40-44
    return pa.concat_tables([expected, inserted, rows(100, 3)])


def append_only(root: Path) -> pa.Table:
    r = str(root)
    write_table(r, rows(0, 20), configuration={"delta.appendOnly": "true"})
    write_table(r, rows(20, 5))
    checkpoint(r)
    write_table(r, rows(25, 5))
    return rows(0, 30)


def invariants(root: Path) -> pa.Table:
    inv = {"delta.invariants": json.dumps({"expression": {"expression": "id >= 0"}})}
    fields = [_field("id", "long", **inv), *_COMMON[1:]]
    _create_by_hand(root, fields, protocol(1, 2))
    r = str(root)
    write_table(r, rows(0, 20))
    update(r, {"name": "'x'"}, "id < 3")
    delete(r, "id = 7")
    return _set(_without(rows(0, 20), {7}), "name", {0, 1, 2}, "x")


def check_constraints(root: Path) -> pa.Table:
    r = str(root)
    write_table(r, rows(0, 20), configuration={"delta.constraints.positive": "id >= 0"})
    update(r, {"name": "'x'"}, "id < 3")
    delete(r, "id = 7")
    write_table(r, rows(20, 5))
    return pa.concat_tables([_set(_without(rows(0, 20), {7}), "name", {0, 1, 2}, "x"), rows(20, 5)])


def change_data_feed(root: Path) -> pa.Table:
    return _dml_history(root, {"delta.enableChangeDataFeed": "true"})


def generated_columns(root: Path) -> pa.Table:
    fields = [*_COMMON, _field("double_id", "long", **{"delta.generationExpression": "id * 2"})]
    _create_by_hand(root, fields, protocol(1, 4))
    r = str(root)
    write_table(r, rows(0, 20))
    delete(r, "id = 7")
    update(r, {"name": "'x'"}, "id < 3")
    t = _set(_without(rows(0, 20), {7}), "name", {0, 1, 2}, "x")
    return t.append_column("double_id", pc.multiply(t.column("id"), 2))


def column_mapping(root: Path) -> pa.Table:
    r = str(root)
    write_table(r, rows(0, 20), partition_by=["part"], configuration={"delta.columnMapping.mode": "name"})
    write_table(r, rows(20, 5).append_column("extra", pa.array([1.5] * 5)), schema_mode="merge")
    delete(r, "id = 3")
    optimize(r)
    before = rows(0, 20).append_column("extra", pa.nulls(20, pa.float64()))
    return _without(pa.concat_tables([before, rows(20, 5).append_column("extra", pa.array([1.5] * 5))]), {3})


def identity_columns(root: Path) -> pa.Table:
    ident = {"delta.identity.start": 10, "delta.identity.step": 5, "delta.identity.allowExplicitInsert": False}
    fields = [_field("key", "long", **ident), *_COMMON]
    _create_by_hand(root, fields, protocol(1, 6))
    r = str(root)
    write_table(r, rows(0, 4))
    write_table(r, rows(4, 2))
    delete(r, "id = 1")
    t = _without(rows(0, 6), {1})
    keys = [10 + 5 * i for i in range(6) if i != 1]
    return t.add_column(0, "key", pa.array(keys, pa.int64()))


def deletion_vectors(root: Path) -> pa.Table:
    return _dml_history(root, DV, partition_by=["part"])


def row_tracking(root: Path) -> pa.Table:
    return _dml_history(root, {"delta.enableRowTracking": "true"})


def timestamp_ntz(root: Path) -> pa.Table:
    def with_ntz(t: pa.Table) -> pa.Table:
        local = pa.array(
            [dt.datetime(1999, 12, 31, 23, i % 60, 59, 123456) for i in t.column("id").to_pylist()], pa.timestamp("us")
        )
        return t.append_column("local", local)

    r = str(root)
    write_table(r, with_ntz(rows(0, 20)))
    delete(r, "local < '1999-12-31 23:05:00'")
    update(r, {"name": "'x'"}, "id > 15")
    drop = {i for i in range(20) if i % 60 < 5}
    return _set(_without(with_ntz(rows(0, 20)), drop), "name", {16, 17, 18, 19}, "x")


def domain_metadata(root: Path) -> pa.Table:
    r = str(root)
    write_table(r, rows(0, 10))
    table = dx.open_table(r)
    txn = Transaction(table, operation="WRITE")
    txn.update_protocol(Protocol(1, 7, None, ("appendOnly", "invariants", "domainMetadata")))
    txn.set_domain_metadata("com.example.app", {"owner": "matrix"})
    txn.commit()
    write_table(r, rows(10, 5))
    return rows(0, 15)


def v2_checkpoint(root: Path) -> pa.Table:
    r = str(root)
    write_table(r, rows(0, 20), configuration={"delta.checkpointPolicy": "v2"})
    write_table(r, rows(20, 5))
    delete(r, "id = 4")
    write_checkpoint(dx.open_table(r), actions_per_sidecar=1)
    write_table(r, rows(30, 5))
    return pa.concat_tables([_without(rows(0, 25), {4}), rows(30, 5)])


def in_commit_timestamp(root: Path) -> pa.Table:
    r = str(root)
    write_table(r, rows(0, 20), configuration={"delta.enableInCommitTimestamps": "true"})
    delete(r, "id = 4")
    write_table(r, rows(20, 5))
    return _without(rows(0, 25), {4})


def vacuum_protocol_check(root: Path) -> pa.Table:
    r = str(root)
    write_table(r, rows(0, 20))
    table = dx.open_table(r)
    txn = Transaction(table, operation="SET TBLPROPERTIES")
    txn.update_protocol(Protocol(3, 7, ("vacuumProtocolCheck",), ("appendOnly", "invariants", "vacuumProtocolCheck")))
    txn.commit()
    delete(r, "id < 5")
    optimize(r)
    set_table_properties(r, {"delta.deletedFileRetentionDuration": "interval 0 hours"})
    vacuum(r, retention_hours=0, dry_run=False, enforce_retention_duration=False)
    return _without(rows(0, 20), set(range(5)))


def _widened(root: Path, *, preview: bool) -> pa.Table:
    r = str(root)
    small = pa.table({"id": pa.array([1, 2, 3], pa.int32()), "name": ["a", "b", "c"]})
    write_table(r, small, configuration={"delta.enableTypeWidening": "true"})
    if preview:  # as Delta 3.x wrote it: the writer keeps the preview name
        first = root / "_delta_log" / f"{0:020d}.json"
        first.write_text(first.read_text().replace('"typeWidening"', '"typeWidening-preview"'))
    table = dx.open_table(r)
    meta = table.snapshot().metadata
    schema = json.loads(meta.schema_string)
    change = {"fromType": "integer", "toType": "long"}
    schema["fields"][0].update(type="long", metadata={"delta.typeChanges": [change]})
    txn = Transaction(table, operation="CHANGE COLUMN")
    txn.update_metadata(dataclasses.replace(meta, schema_string=json.dumps(schema)))
    txn.commit()
    write_table(r, pa.table({"id": pa.array([2**40], pa.int64()), "name": ["wide"]}))
    delete(r, "id = 2")
    return pa.table({"id": pa.array([1, 3, 2**40], pa.int64()), "name": ["a", "c", "wide"]})


def type_widening(root: Path) -> pa.Table:
    return _widened(root, preview=False)


def type_widening_preview(root: Path) -> pa.Table:
    return _widened(root, preview=True)


_EMPTY_METADATA = b"\x01\x00\x00"
_KEY_METADATA = bytes([1, 1, 0, 1]) + b"k"


def variants(ids: list[int]) -> pa.Array:
    """Variant values: a string for even ids, an object {"k": "<id>"} for odd ones."""
    out = []
    for i in ids:
        if i % 2:
            out.append({"metadata": _KEY_METADATA, "value": encode_object([("k", 0, encode_string(str(i)))])})
        else:
            out.append({"metadata": _EMPTY_METADATA, "value": encode_string(f"s{i}")})
    return pa.array(out, VARIANT_ARROW)


def _variant_table(root: Path, features: list[str], configuration: dict | None = None) -> pa.Table:
    _create_by_hand(
        root, [_field("id", "long"), _field("v", "variant")], protocol(3, 7, features, features), configuration=configuration
    )
    r = str(root)
    ids = list(range(8))
    write_table(r, pa.table({"id": pa.array(ids, pa.int64()), "v": variants(ids)}))
    write_table(r, pa.table({"id": pa.array([8, 9], pa.int64()), "v": variants([8, 9])}))
    delete(r, "id = 3")
    kept = [i for i in range(10) if i != 3]
    return pa.table({"id": pa.array(kept, pa.int64()), "v": variants(kept)})


def variant_type(root: Path) -> pa.Table:
    return _variant_table(root, ["variantType"])


def variant_type_preview(root: Path) -> pa.Table:
    return _variant_table(root, ["variantType-preview"])


def variant_shredding(root: Path) -> pa.Table:
    return _variant_table(root, ["variantType", "variantShredding"], {"delta.enableVariantShredding": "true"})


def variant_shredding_preview(root: Path) -> pa.Table:
    return _variant_table(root, ["variantType-preview", "variantShredding-preview"], {"delta.enableVariantShredding": "true"})


def catalog_managed(root: Path) -> pa.Table:
    catalog = dx.FileCatalog(root.parent / f"{root.name}-catalog.json")
    cm = ["catalogManaged"]
    _create_by_hand(
        root,
        [_field("id", "long"), _field("name", "string")],
        protocol(3, 7, cm, [*cm, "inCommitTimestamp"]),
        configuration={"delta.enableInCommitTimestamps": "true"},
    )
    catalog.register(str(root), latest_version=0)
    data = rows(0, 10).select(["id", "name"])
    write_table(str(root), data, catalog=catalog)
    write_table(str(root), rows(10, 5).select(["id", "name"]), catalog=catalog)
    delete(str(root), "id = 2", catalog=catalog)
    return _without(rows(0, 15).select(["id", "name"]), {2})


#: feature -> builder of a table written with it; every feature this writer writes
WRITTEN: dict[str, Callable[[Path], pa.Table]] = {
    "appendOnly": append_only,
    "invariants": invariants,
    "checkConstraints": check_constraints,
    "changeDataFeed": change_data_feed,
    "generatedColumns": generated_columns,
    "columnMapping": column_mapping,
    "identityColumns": identity_columns,
    "deletionVectors": deletion_vectors,
    "rowTracking": row_tracking,
    "timestampNtz": timestamp_ntz,
    "domainMetadata": domain_metadata,
    "v2Checkpoint": v2_checkpoint,
    "inCommitTimestamp": in_commit_timestamp,
    "vacuumProtocolCheck": vacuum_protocol_check,
    "typeWidening": type_widening,
    "typeWidening-preview": type_widening_preview,
    "variantType": variant_type,
    "variantType-preview": variant_type_preview,
    "variantShredding": variant_shredding,
    "variantShredding-preview": variant_shredding_preview,
    "catalogManaged": catalog_managed,
}

#: reader-writer features the refused tables list for readers too; the others are writer-only
_READER_WRITER_REFUSED = {"geospatial", "timestampNanos", "adaptiveMetadata", "catalogOwned-preview"}
_NEEDS = {
    "catalogOwned-preview": ["inCommitTimestamp"],
    "icebergCompatV1": ["columnMapping"],
    "icebergCompatV2": ["columnMapping"],
}


#: a column of the type a feature is about, in its refused table: (Delta type, Arrow values)
_TYPED = {
    "timestampNanos": ("timestamp_nanos", pa.array([1_730_982_834_123_456_789, None, -1], pa.timestamp("ns", tz="UTC"))),
    # WKB points (1 0), (2 0) and a null
    "geospatial": (
        "geometry",
        pa.array(
            [
                bytes.fromhex("0101000000000000000000f03f0000000000000000"),
                bytes.fromhex("010100000000000000000000400000000000000000"),
                None,
            ],
            pa.binary(),
        ),
    ),
}


def refused_table(root: Path, feature: str) -> pa.Table:
    """A one-file table (hand-written log) listing `feature` (and a column of its type where it
    is about a type); its rows."""
    data = rows(0, 3).select(["id", "name"])
    fields = [_field("id", "long"), _field("name", "string")]
    if feature in _TYPED:
        type_name, values = _TYPED[feature]
        data = data.append_column("x", values)
        fields.append(_field("x", type_name))
    writers = [feature, *_NEEDS.get(feature, [])]
    readers = [feature] if feature in _READER_WRITER_REFUSED else None
    if "columnMapping" in writers:
        readers = ["columnMapping"]
    proto = protocol(3 if readers else 1, 7, readers, writers)
    name, size = write_data(root, "part-0.parquet", data)
    schema = {"type": "struct", "fields": fields}
    write_commit(root, 0, [commit_info("CREATE TABLE"), proto, metadata(schema), add(name, size, data.num_rows)])
    return data


#: every feature this writer refuses to write
REFUSED = sorted(name for name, info in FEATURES.items() if not info.write)


def build_all(base: Path, *, refused: bool = False) -> dict[str, tuple[str, pa.Table]]:
    """Every `WRITTEN` table under `base` (with `refused`, every `REFUSED` one too): feature ->
    (root, expected rows)."""
    out = {}
    builders: dict[str, Callable[[Path], pa.Table]] = dict(WRITTEN)
    if refused:
        builders.update({f: (lambda root, f=f: refused_table(root, f)) for f in REFUSED})
    for feature, builder in builders.items():
        root = base / feature
        if root.exists():
            shutil.rmtree(root)
        out[feature] = (os.fspath(root), builder(root))
    return out
