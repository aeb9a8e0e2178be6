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
