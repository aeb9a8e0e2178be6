"""Writing checkpoints: classic (V1 spec) parquet, V2 (UUID-named parquet or json top file with
sidecars), and `_last_checkpoint` with the spec's MD5 checksum.

A checkpoint holds the reconciled state of one version: protocol, metaData, txn, domainMetadata
(removed domains dropped), add actions (stats as JSON; `stats_parsed` and
`partitionValues_parsed` when `delta.checkpoint.writeStatsAsStruct`) and the remove tombstones
younger than `delta.deletedFileRetentionDuration`. Tables with the `v2Checkpoint` feature get V2
checkpoints: sidecar files under `_delta_log/_sidecars/` hold the file actions and the top file
holds the rest plus `checkpointMetadata` and `sidecar` actions.

Crash safety: every file is created with put-if-absent from complete bytes (an atomic link or a
conditional PUT), sidecars before the top file that references them, `_last_checkpoint` last; a
half-written checkpoint is never visible, and an existing checkpoint is never replaced.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from deltaexplore.core.log.checkpoint_reader import Checkpoint
from deltaexplore.core.log.file_names import LOG_DIR, SIDECAR_DIR
from deltaexplore.core.log.last_checkpoint import checksum_of, parse_last_checkpoint
from deltaexplore.core.protocol.action_codec import json_text
from deltaexplore.core.protocol.actions import ADD_FIELDS, REMOVE_FIELDS, STRING_MAP
from deltaexplore.core.protocol.features import CATALOG_FEATURES
from deltaexplore.core.scan.plan import partition_table
from deltaexplore.core.scan.stats_parse import parse_stats, stats_columns
from deltaexplore.core.snapshot import Snapshot
from deltaexplore.core.table import Table
from deltaexplore.errors import WriteRefusedError

__all__ = ["CHECKPOINT_SCHEMA", "CheckpointResult", "checkpoint_tables", "write_checkpoint", "write_last_checkpoint"]

PROTOCOL_T = pa.struct(
    [
        pa.field("minReaderVersion", pa.int32()),
        pa.field("minWriterVersion", pa.int32()),
        pa.field("readerFeatures", pa.list_(pa.string())),
        pa.field("writerFeatures", pa.list_(pa.string())),
    ]
)
METADATA_T = pa.struct(
    [
        pa.field("id", pa.string()),
        pa.field("name", pa.string()),
        pa.field("description", pa.string()),
        pa.field("format", pa.struct([pa.field("provider", pa.string()), pa.field("options", STRING_MAP)])),
        pa.field("schemaString", pa.string()),
        pa.field("partitionColumns", pa.list_(pa.string())),
        pa.field("configuration", STRING_MAP),
        pa.field("createdTime", pa.int64()),
    ]
)
TXN_T = pa.struct([pa.field("appId", pa.string()), pa.field("version", pa.int64()), pa.field("lastUpdated", pa.int64())])
DOMAIN_T = pa.struct([pa.field("domain", pa.string()), pa.field("configuration", pa.string()), pa.field("removed", pa.bool_())])
CHECKPOINT_REMOVE_FIELDS = [f for f in REMOVE_FIELDS if f.name != "stats"]
CHECKPOINT_METADATA_T = pa.struct([pa.field("version", pa.int64()), pa.field("tags", STRING_MAP)])
SIDECAR_T = pa.struct(
    [
        pa.field("path", pa.string()),
        pa.field("sizeInBytes", pa.int64()),
        pa.field("modificationTime", pa.int64()),
        pa.field("tags", STRING_MAP),
    ]
)

#: the classic checkpoint schema (without the optional parsed add fields)
CHECKPOINT_SCHEMA = pa.schema(
    [
        pa.field("txn", TXN_T),
        pa.field("add", pa.struct(ADD_FIELDS)),
        pa.field("remove", pa.struct(CHECKPOINT_REMOVE_FIELDS)),
        pa.field("metaData", METADATA_T),
        pa.field("protocol", PROTOCOL_T),
        pa.field("domainMetadata", DOMAIN_T),
    ]
)


@dataclass(frozen=True)
class CheckpointResult:
    """A checkpoint written (or found already written, `written=False`)."""

    version: int
    kind: str  # classic | v2-parquet | v2-json
    path: str
    sidecars: tuple[str, ...]
    num_actions: int
    num_add_files: int
    size_in_bytes: int
    written: bool


@dataclass
class _Actions:
    protocol: pa.Array
    metadata: pa.Array
    txns: pa.Array
    domains: pa.Array
    adds: pa.Array
    removes: pa.Array

    @property
    def num_file_actions(self) -> int:
        return len(self.adds) + len(self.removes)


def _protocol_array(snapshot: Snapshot) -> pa.Array:
    p = snapshot.protocol
    row = {
        "minReaderVersion": p.min_reader_version,
        "minWriterVersion": p.min_writer_version,
        "readerFeatures": list(p.reader_features or []) if p.min_reader_version >= 3 else None,
        "writerFeatures": list(p.writer_features or []) if p.min_writer_version >= 7 else None,
    }
    return pa.array([row], PROTOCOL_T)


def _metadata_array(snapshot: Snapshot) -> pa.Array:
    md = snapshot.metadata
    row = {
        "id": md.id,
        "name": md.name,
        "description": md.description,
        "format": {"provider": md.format_provider, "options": list(md.format_options.items())},
        "schemaString": md.schema_string,
        "partitionColumns": list(md.partition_columns),
        "configuration": list(md.configuration.items()),
        "createdTime": md.created_time,
    }
    return pa.array([row], METADATA_T)


def _struct_of(table: pa.Table, fields: list[pa.Field]) -> pa.StructArray:
    cols = []
    for f in fields:
        if f.name in table.column_names:
            col = table.column(f.name).combine_chunks()
            cols.append(col if col.type == f.type else col.cast(f.type))
        else:
            cols.append(pa.nulls(table.num_rows, f.type))
    return pa.StructArray.from_arrays(cols, fields=fields) if cols else pa.array([], pa.struct(fields))


def _nest(paths: list[tuple[tuple[str, ...], pa.Array]], n: int) -> pa.StructArray:
    """A struct array nesting leaf arrays by (physical) path."""
    tree: dict[str, Any] = {}
    for path, arr in paths:
        node = tree
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = arr

    def build(node: dict[str, Any]) -> pa.StructArray:
        names, arrays = [], []
        for key, value in node.items():
            names.append(key)
            arrays.append(build(value) if isinstance(value, dict) else value)
        if not names:
            return pa.array([{}] * n, pa.struct([]))
        return pa.StructArray.from_arrays(arrays, names=names)

    return build(tree)


def _parsed_fields(snapshot: Snapshot, adds: pa.Table) -> dict[str, pa.Array]:
    """`stats_parsed` and (partitioned tables) `partitionValues_parsed` of the adds."""
    out: dict[str, pa.Array] = {}
    n = adds.num_rows
    mode = snapshot.column_mapping_mode
    cols = stats_columns(snapshot.schema, mode, snapshot.partition_columns)
    stats = adds.column("stats").combine_chunks() if n else pa.array([], pa.string())
    parsed = parse_stats(stats, cols)
    pieces = [
        ("numRecords", parsed["num_records"]),
        ("tightBounds", parsed["tight_bounds"]),
        ("minValues", _nest([(c.physical, parsed[f"min.{c.name}"]) for c in cols], n)),
        ("maxValues", _nest([(c.physical, parsed[f"max.{c.name}"]) for c in cols], n)),
        ("nullCount", _nest([(c.physical, parsed[f"null_count.{c.name}"]) for c in cols], n)),
    ]
    valid = pc.is_valid(stats) if n else pa.array([], pa.bool_())
    out["stats_parsed"] = pa.StructArray.from_arrays(
        [p[1] for p in pieces], names=[p[0] for p in pieces], mask=pc.invert(valid) if n and stats.null_count else None
    )
    if snapshot.partition_columns:
        parts = partition_table(snapshot, adds)
        schema = snapshot.schema
        names = [schema.field(c).physical_name if mode != "none" else c for c in snapshot.partition_columns]
        arrays = [parts.column(c).combine_chunks() for c in snapshot.partition_columns]
        out["partitionValues_parsed"] = pa.StructArray.from_arrays(arrays, names=names)
    return out


def checkpoint_tables(snapshot: Snapshot, *, now_ms: int | None = None) -> _Actions:
    """The actions a checkpoint of `snapshot` holds, as typed struct arrays."""
    config = snapshot.config
    now = now_ms if now_ms is not None else int(time.time() * 1000)
    txns = sorted(snapshot.txns().values(), key=lambda t: t.app_id)
    txn_arr = pa.array([{"appId": t.app_id, "version": t.version, "lastUpdated": t.last_updated} for t in txns], TXN_T)
    domains = sorted(snapshot.domain_metadata().values(), key=lambda d: d.domain)
    dom_arr = pa.array([{"domain": d.domain, "configuration": d.configuration, "removed": False} for d in domains], DOMAIN_T)
    adds = snapshot.add_actions()
    add_fields = list(ADD_FIELDS)
    if not config.write_stats_as_json:
        add_fields = [f for f in add_fields if f.name != "stats"]
    add_struct = _struct_of(adds, add_fields)
    if config.write_stats_as_struct:
        parsed = _parsed_fields(snapshot, adds)
        names = [f.name for f in add_fields] + list(parsed)
        arrays = [add_struct.field(i) for i in range(len(add_fields))] + list(parsed.values())
        add_struct = pa.StructArray.from_arrays(arrays, names=names)
    tombstones = snapshot.tombstones()
    if tombstones.num_rows:
        cutoff = now - config.deleted_file_retention_ms
        keep = pc.fill_null(pc.greater(tombstones.column("deletionTimestamp"), cutoff), False)
        tombstones = tombstones.filter(keep)
    remove_struct = _struct_of(tombstones, CHECKPOINT_REMOVE_FIELDS)
    return _Actions(_protocol_array(snapshot), _metadata_array(snapshot), txn_arr, dom_arr, add_struct, remove_struct)


def _column(parts: list[tuple[int, pa.Array | None]], typ: pa.DataType) -> pa.Array:
    """One checkpoint column: each part is (row count, values or None for nulls)."""
    arrays = [values if values is not None else pa.nulls(n, typ) for n, values in parts]
    arrays = [a for a in arrays if len(a)]
    if not arrays:
        return pa.nulls(0, typ)
    return pa.concat_arrays(arrays) if len(arrays) > 1 else arrays[0]


def _layout(columns: dict[str, tuple[pa.DataType, pa.Array | None]], order: list[str]) -> pa.Table:
    """Stack action arrays: rows of `order[i]` hold that action, every other column null."""
    counts = {name: (len(arr) if arr is not None else 0) for name, (_, arr) in columns.items()}
    out = {}
    for name, (typ, arr) in columns.items():
        out[name] = _column([(counts[o], arr if o == name else None) for o in order], typ)
    return pa.table(out)


def _parquet_bytes(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="snappy", row_group_size=1 << 20)
    return sink.getvalue().to_pybytes()


def write_checkpoint(
    table: Table | Snapshot,
    *,
    version: int | None = None,
    kind: str = "auto",
    v2_format: str = "parquet",
    actions_per_sidecar: int = 1_000_000,
    now_ms: int | None = None,
) -> CheckpointResult:
    """Write a checkpoint of `version` (default: latest) and update `_last_checkpoint`.

    Args:
        table: the table, or the snapshot to checkpoint.
        kind: 'auto' (V2 when the table has `v2Checkpoint`, else classic), 'classic' or 'v2'.
        v2_format: 'parquet' or 'json' top file for V2 checkpoints.
        actions_per_sidecar: file actions per sidecar file (V2).

    Raises:
        WriteRefusedError: classic checkpoints on a `v2Checkpoint` table, or an unpublished
            version of a catalog-managed table.
    """
    snapshot = table if isinstance(table, Snapshot) else table.snapshot(version)
    storage = snapshot.storage
    root = snapshot.table.uri
    v = snapshot.version
    v2_table = "v2Checkpoint" in snapshot.protocol.reader_feature_set or "v2Checkpoint" in snapshot.protocol.writer_feature_set
    if kind == "auto":
        kind = "v2" if v2_table or snapshot.config.v2_checkpoints else "classic"
    if kind not in ("classic", "v2"):
        raise WriteRefusedError(f"checkpoint kind must be 'auto', 'classic' or 'v2', got {kind!r}")
    if kind == "classic" and v2_table:
        raise WriteRefusedError(f"{root} has the v2Checkpoint feature: only V2 checkpoints may be written", path=root)
    if kind == "v2" and not v2_table:
        raise WriteRefusedError(f"{root} lacks the v2Checkpoint feature: V2 checkpoints need it", path=root)
    if snapshot.protocol.has(*CATALOG_FEATURES) and v not in snapshot.table.listing(refresh=False).commits:
        raise WriteRefusedError(f"version {v} of catalog-managed {root} is not published yet: cannot checkpoint it", path=root)
    existing = snapshot.table.listing(refresh=True).checkpoints.get(v)
    if existing:  # one checkpoint per version is enough (V2 names are unique: never write a second)
        return _existing(snapshot, existing[0])
    actions = checkpoint_tables(snapshot, now_ms=now_ms)
    if kind == "classic":
        result = _write_classic(storage, v, actions)
    else:
        result = _write_v2(storage, v, actions, v2_format, actions_per_sidecar)
    if result.written:
        write_last_checkpoint(storage, result)
    return result


def _existing(snapshot: Snapshot, found: Checkpoint) -> CheckpointResult:
    """The result for a checkpoint already there (`written=False`); counts from
    `_last_checkpoint` when it describes that checkpoint, else 0."""
    lc = snapshot.table.listing(refresh=False).last_checkpoint
    described = lc.usable and lc.version == found.version
    return CheckpointResult(
        found.version,
        found.kind,
        found.parts[0].path,
        (),
        (lc.size or 0) if described else 0,
        (lc.num_of_add_files or 0) if described else 0,
        found.size,
        False,
    )


def _non_file_columns(actions: _Actions) -> dict[str, tuple[pa.DataType, pa.Array | None]]:
    return {
        "protocol": (PROTOCOL_T, actions.protocol),
        "metaData": (METADATA_T, actions.metadata),
        "txn": (TXN_T, actions.txns),
        "domainMetadata": (DOMAIN_T, actions.domains),
    }


def _write_classic(storage: Any, version: int, actions: _Actions) -> CheckpointResult:
    columns = _non_file_columns(actions)
    columns["add"] = (actions.adds.type, actions.adds)
    columns["remove"] = (actions.removes.type, actions.removes)
    table = _layout(columns, ["protocol", "metaData", "txn", "domainMetadata", "add", "remove"])
    data = _parquet_bytes(table)
    path = f"{LOG_DIR}/{version:020d}.checkpoint.parquet"
    written = storage.put_if_absent(path, data)
    return CheckpointResult(version, "classic", path, (), table.num_rows, len(actions.adds), len(data), written)


def _write_v2(storage: Any, version: int, actions: _Actions, fmt: str, per_sidecar: int) -> CheckpointResult:
    if fmt not in ("parquet", "json"):
        raise WriteRefusedError(f"V2 checkpoint format must be 'parquet' or 'json', got {fmt!r}")
    sidecars: list[dict[str, Any]] = []
    sidecar_paths: list[str] = []
    total = actions.num_file_actions
    per = max(1, per_sidecar)
    n_add = len(actions.adds)
    for start in range(0, total, per):
        stop = min(total, start + per)
        a0, a1 = min(start, n_add), min(stop, n_add)
        r0, r1 = max(0, start - n_add), max(0, stop - n_add)
        part = _layout(
            {
                "add": (actions.adds.type, actions.adds.slice(a0, a1 - a0)),
                "remove": (actions.removes.type, actions.removes.slice(r0, r1 - r0)),
            },
            ["add", "remove"],
        )
        data = _parquet_bytes(part)
        name = f"{uuid.uuid4()}.parquet"
        rel = f"{SIDECAR_DIR}/{name}"
        storage.put_if_absent(rel, data)
        info = storage.head(rel)
        sidecars.append(
            {"path": name, "sizeInBytes": len(data), "modificationTime": info.modification_time if info else 0, "tags": None}
        )
        sidecar_paths.append(rel)
    top_name = f"{LOG_DIR}/{version:020d}.checkpoint.{uuid.uuid4()}.{fmt}"
    if fmt == "json":
        lines = [json_text({"checkpointMetadata": {"version": version}})]
        lines.append(json_text({"protocol": _clean(actions.protocol.to_pylist()[0])}))
        md = _clean(actions.metadata.to_pylist()[0])
        md["format"]["options"] = dict(md["format"].get("options") or [])
        md["configuration"] = dict(md.get("configuration") or [])
        lines.append(json_text({"metaData": md}))
        lines += [json_text({"txn": _clean(t)}) for t in actions.txns.to_pylist()]
        lines += [json_text({"domainMetadata": _clean(d)}) for d in actions.domains.to_pylist()]
        lines += [json_text({"sidecar": _clean(s)}) for s in sidecars]
        data = ("\n".join(lines) + "\n").encode("utf-8")
        num_rows = len(lines)
    else:
        columns = _non_file_columns(actions)
        columns["checkpointMetadata"] = (
            CHECKPOINT_METADATA_T,
            pa.array([{"version": version, "tags": None}], CHECKPOINT_METADATA_T),
        )
        columns["sidecar"] = (SIDECAR_T, pa.array(sidecars, SIDECAR_T))
        table = _layout(columns, ["checkpointMetadata", "protocol", "metaData", "txn", "domainMetadata", "sidecar"])
        data = _parquet_bytes(table)
        num_rows = table.num_rows
    written = storage.put_if_absent(top_name, data)
    size = len(data) + sum(int(s["sizeInBytes"]) for s in sidecars)
    return CheckpointResult(
        version, f"v2-{fmt}", top_name, tuple(sidecar_paths), num_rows + total, len(actions.adds), size, written
    )


def _clean(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items() if v is not None}
    if isinstance(obj, list):
        return [_clean(v) for v in obj]
    return obj


def write_last_checkpoint(storage: Any, result: CheckpointResult) -> bool:
    """Point `_last_checkpoint` at `result` unless it already points at a newer version."""
    path = f"{LOG_DIR}/_last_checkpoint"
    try:
        current = parse_last_checkpoint(storage.read_bytes(path))
    except FileNotFoundError:
        current = None
    if current is not None and current.usable and current.version is not None and current.version > result.version:
        return False
    obj: dict[str, Any] = {
        "version": result.version,
        "size": result.num_actions,
        "sizeInBytes": result.size_in_bytes,
        "numOfAddFiles": result.num_add_files,
    }
    if result.kind.startswith("v2"):
        info = storage.head(result.path)
        obj["v2Checkpoint"] = {
            "path": result.path.rsplit("/", 1)[-1],
            "sizeInBytes": info.size if info else 0,
            "modificationTime": info.modification_time if info else 0,
        }
    obj["checksum"] = checksum_of(obj)
    storage.write(path, json.dumps(obj, separators=(",", ":")).encode("utf-8"))
    return True
