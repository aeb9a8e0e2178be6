"""Helpers to write small Delta tables by hand (logs, parquet files, DV files) for unit tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

SCHEMA_ID_VALUE = {
    "type": "struct",
    "fields": [
        {"name": "id", "type": "long", "nullable": True, "metadata": {}},
        {"name": "value", "type": "string", "nullable": True, "metadata": {}},
    ],
}


def mapped_field(name: str, type_name: Any, column_id: int, physical: str, *, nullable: bool = True) -> dict:
    """A schema field with column mapping metadata (id and physical name)."""
    metadata = {"delta.columnMapping.id": column_id, "delta.columnMapping.physicalName": physical}
    return {"name": name, "type": type_name, "nullable": nullable, "metadata": metadata}


def run_script(script: str, *args: str, timeout: int = 300, what: str = "") -> str:
    """Run a Python `script` in a child process; its stdout. Raises RuntimeError with the end of
    its stderr when it fails."""
    out = subprocess.run([sys.executable, script, *args], capture_output=True, text=True, timeout=timeout, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{what or script} failed ({out.returncode}): {out.stderr[-3000:]}")
    return out.stdout


#: what a first open must not import: pyarrow imports pandas on its first conversion of a Python
#: or NumPy value, the core reads a table without polars and Altair (tests/test_open_imports.py)
HEAVY_MODULES = ("pandas", "polars", "altair")

_OPEN_IN_FRESH_PROCESS = """
import json, sys, traceback
seen = {}
class Hook:
    def find_spec(self, name, path=None, target=None):
        if name in HEAVY and name not in seen:
            seen[name] = "".join(traceback.format_stack()[:-1])
        return None
HEAVY = json.loads(sys.argv[3])
sys.meta_path.insert(0, Hook())
import deltaexplore as dx
files = dx.open_table(sys.argv[1], storage_options=json.loads(sys.argv[2]) or None).snapshot().files()
print(json.dumps({"rows": files.num_rows, "imported": seen}))
"""


def open_in_fresh_process(path: str, storage_options: dict | None = None) -> tuple[int, dict[str, str]]:
    """`open_table(path).snapshot().files()` in a new interpreter: its row count and, for each
    of `HEAVY_MODULES` it imported, the stack that imported it."""
    args = [path, json.dumps(storage_options or {}), json.dumps(HEAVY_MODULES)]
    out = subprocess.run(
        [sys.executable, "-c", _OPEN_IN_FRESH_PROCESS, *args], capture_output=True, text=True, timeout=300, check=False
    )
    if out.returncode != 0:
        raise RuntimeError(f"open of {path} failed ({out.returncode}): {out.stderr[-3000:]}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    return result["rows"], result["imported"]


def protocol(reader: int = 1, writer: int = 2, readers: list[str] | None = None, writers: list[str] | None = None) -> dict:
    p: dict[str, Any] = {"minReaderVersion": reader, "minWriterVersion": writer}
    if readers is not None:
        p["readerFeatures"] = readers
    if writers is not None:
        p["writerFeatures"] = writers
    return {"protocol": p}


def metadata(
    schema: dict | None = None,
    partition_columns: list[str] | None = None,
    configuration: dict | None = None,
    table_id: str = "test-table",
) -> dict:
    return {
        "metaData": {
            "id": table_id,
            "format": {"provider": "parquet", "options": {}},
            "schemaString": json.dumps(schema or SCHEMA_ID_VALUE),
            "partitionColumns": partition_columns or [],
            "configuration": configuration or {},
            "createdTime": 1_700_000_000_000,
        }
    }


def commit_info(op: str = "WRITE", ts: int = 1_700_000_000_000, **extra: Any) -> dict:
    return {"commitInfo": {"timestamp": ts, "operation": op, "operationParameters": {}, **extra}}


def add(
    path: str,
    size: int = 100,
    records: int | None = None,
    pv: dict | None = None,
    dv: dict | None = None,
    data_change: bool = True,
    **extra: Any,
) -> dict:
    a: dict[str, Any] = {
        "path": path,
        "partitionValues": pv or {},
        "size": size,
        "modificationTime": 1_700_000_000_000,
        "dataChange": data_change,
    }
    if records is not None:
        a["stats"] = json.dumps({"numRecords": records})
    if dv is not None:
        a["deletionVector"] = dv
    a.update(extra)
    return {"add": a}


def remove(path: str, dv: dict | None = None, data_change: bool = True, **extra: Any) -> dict:
    r: dict[str, Any] = {"path": path, "deletionTimestamp": 1_700_000_000_000, "dataChange": data_change}
    if dv is not None:
        r["deletionVector"] = dv
    r.update(extra)
    return {"remove": r}


def write_commit(root: str | os.PathLike, version: int, actions: list[dict], *, mtime_ms: int | None = None) -> Path:
    log = Path(root) / "_delta_log"
    log.mkdir(parents=True, exist_ok=True)
    path = log / f"{version:020d}.json"
    path.write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    if mtime_ms is not None:
        os.utime(path, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))
    return path


def write_data(root: str | os.PathLike, name: str, table: pa.Table, **kwargs: Any) -> tuple[str, int]:
    path = Path(root) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, **kwargs)
    return name, path.stat().st_size


def simple_table(root: str | os.PathLike, rows: int = 5) -> str:
    """A one-commit table with `rows` rows (id, value) in one parquet file."""
    t = pa.table({"id": pa.array(range(rows), pa.int64()), "value": [f"v{i}" for i in range(rows)]})
    name, size = write_data(root, f"part-{uuid.uuid4()}.parquet", t)
    write_commit(root, 0, [commit_info("CREATE TABLE"), protocol(), metadata(), add(name, size, rows)])
    return name


def variant_metadata(keys: list[str]) -> bytes:
    """A variant metadata dictionary of `keys` (unsorted, one-byte offsets: short keys only)."""
    raw = [k.encode() for k in keys]
    offsets = [0]
    for r in raw:
        offsets.append(offsets[-1] + len(r))
    return bytes([0x01, len(keys), *offsets]) + b"".join(raw)


def variant_stats_table(root: str | os.PathLike) -> Any:
    """A table `(n long, v variant)` of one file and three rows, `v` unshredded, whose stats
    carry the spec's variant bounds (`$['a']` from "min-string" to "variant", `$['b']['c']`
    from 1 to 100) z85-encoded, as "Statistics for Variant Columns" writes them."""
    import deltaexplore as dx
    from deltaexplore.core.protocol.dv_format import z85_encode
    from deltaexplore.core.protocol.variant import encode_object, encode_string

    def z85(meta: bytes, value: bytes) -> str:
        data = meta + value
        return z85_encode(data + b"\x00" * (-len(data) % 4))

    int8 = lambda n: bytes([0x0C, n])  # noqa: E731  (primitive int8)
    path_keys = variant_metadata(["$['a']", "$['b']['c']"])
    low = encode_object([("$['a']", 0, encode_string("min-string")), ("$['b']['c']", 1, int8(1))])
    high = encode_object([("$['a']", 0, encode_string("variant")), ("$['b']['c']", 1, int8(100))])
    meta = variant_metadata(["a", "b", "c"])
    rows = [
        encode_object([("a", 0, encode_string("min-string")), ("b", 1, encode_object([("c", 2, int8(1))]))]),
        encode_object([("a", 0, encode_string("variant")), ("b", 1, encode_object([("c", 2, int8(100))]))]),
        None,
    ]
    variant = pa.struct([pa.field("metadata", pa.binary(), False), pa.field("value", pa.binary(), False)])
    data = pa.table(
        {
            "n": pa.array([1, 2, 3], pa.int64()),
            "v": pa.array([None if r is None else {"metadata": meta, "value": r} for r in rows], variant),
        }
    )
    name, size = write_data(root, "part-0.parquet", data)
    stats = {
        "numRecords": 3,
        "minValues": {"n": 1, "v": z85(path_keys, low)},
        "maxValues": {"n": 3, "v": z85(path_keys, high)},
        "nullCount": {"n": 0, "v": 1},
    }
    schema = {
        "type": "struct",
        "fields": [
            {"name": "n", "type": "long", "nullable": True, "metadata": {}},
            {"name": "v", "type": "variant", "nullable": True, "metadata": {}},
        ],
    }
    shredding = ["variantType", "variantShredding"]
    write_commit(
        root,
        0,
        [
            commit_info("CREATE TABLE"),
            protocol(3, 7, shredding, shredding),
            metadata(schema),
            add(name, size, stats=json.dumps(stats)),
        ],
    )
    return dx.open_table(str(root))


def assert_same_table(a: pa.Table, b: pa.Table) -> None:
    """Equal tables; floats equal to 1e-12 relative (a mean summed in another order)."""
    import math

    import pytest

    assert a.schema == b.schema and a.num_rows == b.num_rows
    for x, y in zip(a.to_pylist(), b.to_pylist()):
        for key, u in x.items():
            v = y[key]
            if isinstance(u, float) and isinstance(v, float) and not (math.isnan(u) and math.isnan(v)):
                assert u == pytest.approx(v, rel=1e-12), key
            elif not (isinstance(u, float) and math.isnan(u)):
                assert u == v, key


def amounts_table(root: Path) -> str:
    """Three appends, a delete and an update of (day, amount), partitioned by day."""
    from deltaexplore.core import operations as ops

    uri = str(root)
    for day, amounts in (("d1", [1.0, 5.0, 20.0]), ("d2", [11.0, 12.0]), ("d3", [30.0, 2.0, 40.0, 50.0])):
        ops.write_table(uri, pa.table({"day": [day] * len(amounts), "amount": amounts}), partition_by=["day"])
    ops.delete(uri, "amount > 45")
    ops.update(uri, {"amount": "amount + 100"}, "day = 'd2'")
    return uri


def first_primitive_column(snap: Any) -> str | None:
    """A snapshot's first top-level primitive column with orderable stats (what layout, explain
    and the layout tab's tables are asked about), or None."""
    from deltaexplore.core.protocol.schema import PrimitiveType
    from deltaexplore.errors import DeltaExploreError

    try:
        fields = snap.schema.fields
    except DeltaExploreError:
        return None
    for f in fields:
        if isinstance(f.type, PrimitiveType) and f.type.name not in ("binary", "variant", "void", "boolean"):
            return f.name
    return None
