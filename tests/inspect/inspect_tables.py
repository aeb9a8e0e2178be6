"""Hand-built tables with known contents for the inspection tests (every number is by construction)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
from helpers import add, commit_info, mapped_field, metadata, protocol, remove, write_commit, write_data

from deltaexplore.core.protocol.deletion_vectors import dv_file_bytes, encode_bitmap, z85_encode

T0 = 1_700_000_000_000
DAY = 86_400_000

SCHEMA_CM = {
    "type": "struct",
    "fields": [
        mapped_field("id", "integer", 1, "col-1"),
        mapped_field("name", "string", 2, "col-2"),
        mapped_field("part", "string", 3, "col-3"),
    ],
}


def stats(n: int, lo: Any = None, hi: Any = None, column: str = "id", nulls: int = 0) -> str:
    s: dict[str, Any] = {"numRecords": n}
    if lo is not None:
        s["minValues"] = {column: lo}
        s["maxValues"] = {column: hi}
        s["nullCount"] = {column: nulls}
    return json.dumps(s)


def dv_file(root: str | os.PathLike, name: str, rows_per_dv: list[list[int]]) -> tuple[str, list[dict]]:
    """Write a DV file holding one bitmap per entry; return (file name, descriptors with `p` paths)."""
    bitmaps = [encode_bitmap(r) for r in rows_per_dv]
    data, offsets = dv_file_bytes(bitmaps)
    path = Path(root) / name
    path.write_bytes(data)
    descriptors = [
        {"storageType": "p", "pathOrInlineDv": str(path), "offset": off, "sizeInBytes": len(b), "cardinality": len(r)}
        for off, b, r in zip(offsets, bitmaps, rows_per_dv)
    ]
    return name, descriptors


def inline_dv(rows: list[int]) -> dict:
    bitmap = encode_bitmap(rows)
    padded = bitmap + b"\x00" * (-len(bitmap) % 4)
    return {"storageType": "i", "pathOrInlineDv": z85_encode(padded), "sizeInBytes": len(bitmap), "cardinality": len(rows)}


def data_file(root: str | os.PathLike, name: str, ids: list[int]) -> int:
    t = pa.table({"id": pa.array(ids, pa.int64()), "value": [f"v{i}" for i in ids]})
    return write_data(root, name, t)[1]


def build_history_table(root: str | os.PathLike) -> dict[str, Any]:
    """Versions:

    0: CREATE: a.parquet (ids 0-9, 10 rows), b.parquet (ids 10-29, 20 rows); property x=1
    1: WRITE: add c.parquet (ids 30-34, 5 rows); remove a.parquet
    2: DELETE: b.parquet re-added with a DV deleting rows 0, 1, 2 (3 rows); txn app1 v=7
    3: SET TBLPROPERTIES / ADD COLUMN: schema gains `extra` (long), x=2, y=3 added,
       protocol writer 2 -> 4 (changeDataFeed), domain `my.domain` added
    """
    root = str(root)
    sizes = {
        name: data_file(root, name, ids)
        for name, ids in (("a.parquet", list(range(10))), ("b.parquet", list(range(10, 30))), ("c.parquet", list(range(30, 35))))
    }
    dv_name, (dv,) = dv_file(root, "dv1.bin", [[0, 1, 2]])
    write_commit(
        root,
        0,
        [
            commit_info("CREATE TABLE", T0),
            protocol(1, 2),
            metadata(configuration={"x": "1"}),
            add("a.parquet", sizes["a.parquet"], stats=stats(10, 0, 9)),
            add("b.parquet", sizes["b.parquet"], stats=stats(20, 10, 29)),
        ],
        mtime_ms=T0,
    )
    write_commit(
        root,
        1,
        [
            commit_info("WRITE", T0 + 1000),
            add("c.parquet", sizes["c.parquet"], stats=stats(5, 30, 34)),
            remove("a.parquet", size=sizes["a.parquet"]),
        ],
        mtime_ms=T0 + 1000,
    )
    write_commit(
        root,
        2,
        [
            commit_info("DELETE", T0 + 2000),
            remove("b.parquet", size=sizes["b.parquet"]),
            add("b.parquet", sizes["b.parquet"], dv=dv, stats=stats(20, 10, 29)),
            {"txn": {"appId": "app1", "version": 7, "lastUpdated": T0 + 2000}},
        ],
        mtime_ms=T0 + 2000,
    )
    schema2 = {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {"name": "value", "type": "string", "nullable": True, "metadata": {}},
            {"name": "extra", "type": "long", "nullable": True, "metadata": {}},
        ],
    }
    write_commit(
        root,
        3,
        [
            commit_info("SET TBLPROPERTIES", T0 + 3000),
            protocol(1, 4),
            metadata(schema=schema2, configuration={"x": "2", "y": "3"}),
            {"domainMetadata": {"domain": "my.domain", "configuration": '{"k": 1}', "removed": False}},
        ],
        mtime_ms=T0 + 3000,
    )
    return {"sizes": sizes, "dv_file": dv_name}


def build_partitioned_table(root: str | os.PathLike) -> dict[str, Any]:
    """One commit, partitioned by `date`, log only (sizes chosen, no data files):

    date=2024-01-01: f1 (100 B, 10 rows), f2 (300 B, 30 rows, DV of 6 rows, inline)
    date=2024-01-02: f3 (1000 B, 100 rows)
    date=null:       f4 (50 B, no stats)
    """
    schema = {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {"name": "date", "type": "date", "nullable": True, "metadata": {}},
        ],
    }
    dv = inline_dv([0, 1, 2, 3, 4, 5])
    write_commit(
        root,
        0,
        [
            commit_info("WRITE", T0),
            protocol(3, 7, ["deletionVectors"], ["deletionVectors"]),
            metadata(schema=schema, partition_columns=["date"], configuration={"delta.enableDeletionVectors": "true"}),
            add("date=2024-01-01/f1.parquet", 100, pv={"date": "2024-01-01"}, stats=stats(10, 0, 9)),
            add("date=2024-01-01/f2.parquet", 300, pv={"date": "2024-01-01"}, stats=stats(30, 5, 40), dv=dv),
            add("date=2024-01-02/f3.parquet", 1000, pv={"date": "2024-01-02"}, stats=stats(100, 100, 199)),
            add("date=__HIVE_DEFAULT_PARTITION__/f4.parquet", 50, pv={"date": None}),
        ],
        mtime_ms=T0,
    )
    return {"dv_rows": [0, 1, 2, 3, 4, 5]}
