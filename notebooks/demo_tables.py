"""Deterministic demo tables for the notebooks and the UI tests.

Every table is written action by action with a fixed clock (commit times and file times start
at 2024-01-01T00:00:00Z and advance one hour per commit), fixed ids (table id and file names
derived from the table name) and fixed contents, so a notebook re-run shows the same versions,
files and rows. Parquet files are written with pyarrow; deletion vectors with the core's own
encoder (`deltaexplore.core.protocol.deletion_vectors`).

    from demo_tables import build_sales
    path = build_sales("tables/sales")
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from deltaexplore.core.protocol.deletion_vectors import dv_file_bytes, encode_bitmap, z85_encode

__all__ = ["DemoWriter", "build_events", "build_hostile", "build_sales"]

START_MS = 1_704_067_200_000  # 2024-01-01T00:00:00Z
HOUR_MS = 3_600_000

SALES_SCHEMA = [("id", "long"), ("region", "string"), ("amount", "double"), ("customer", "string")]


def _schema_string(columns: list[tuple[str, str]]) -> str:
    return json.dumps(
        {"type": "struct", "fields": [{"name": n, "type": t, "nullable": True, "metadata": {}} for n, t in columns]}
    )


def _stats(t: pa.Table, skip: set[str]) -> str:
    mins: dict[str, Any] = {}
    maxs: dict[str, Any] = {}
    nulls: dict[str, int] = {}
    for name in t.column_names:
        if name in skip:
            continue
        col = t.column(name)
        mm = pc.min_max(col).as_py()
        if mm["min"] is not None:
            mins[name], maxs[name] = mm["min"], mm["max"]
        nulls[name] = col.null_count
    return json.dumps({"numRecords": t.num_rows, "minValues": mins, "maxValues": maxs, "nullCount": nulls}, sort_keys=True)


class DemoWriter:
    """Writes a Delta table commit by commit with a fixed clock and deterministic names."""

    def __init__(self, root: str | os.PathLike, name: str, *, user: str = "demo-user") -> None:
        self.root = Path(root)
        self.name = name
        self.user = user
        self.version = -1
        self.partition_columns: list[str] = []
        self._n = 0
        shutil.rmtree(self.root, ignore_errors=True)
        (self.root / "_delta_log").mkdir(parents=True)

    def _id(self, kind: str) -> str:
        self._n += 1
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"deltaexplore-demo/{self.name}/{kind}/{self._n}"))

    def now(self, version: int | None = None) -> int:
        return START_MS + HOUR_MS * (self.version + 1 if version is None else version)

    def metadata(
        self,
        columns: list[tuple[str, str]],
        *,
        partition_columns: list[str] | None = None,
        configuration: dict[str, str] | None = None,
        description: str | None = None,
    ) -> dict[str, Any]:
        self.partition_columns = list(partition_columns or [])
        return {
            "metaData": {
                "id": str(uuid.uuid5(uuid.NAMESPACE_URL, f"deltaexplore-demo/{self.name}")),
                "name": self.name,
                "description": description,
                "format": {"provider": "parquet", "options": {}},
                "schemaString": _schema_string(columns),
                "partitionColumns": self.partition_columns,
                "configuration": configuration or {},
                "createdTime": START_MS,
            }
        }

    def add(self, rows: pa.Table, *, data_change: bool = True, name: str | None = None) -> dict[str, Any]:
        """Write `rows` as one parquet file (partition columns taken from the first row)."""
        pv = {c: str(rows.column(c)[0].as_py()) for c in self.partition_columns}
        prefix = "".join(f"{c}={v}/" for c, v in pv.items())
        rel = prefix + (name or f"part-{self._n:05d}-{self._id('file')}.c000.snappy.parquet")
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        data = rows.drop_columns([c for c in self.partition_columns if c in rows.column_names])
        pq.write_table(data, path, compression="snappy")
        mtime = self.now()
        os.utime(path, ns=(mtime * 1_000_000, mtime * 1_000_000))
        return {
            "add": {
                "path": rel,
                "partitionValues": pv,
                "size": path.stat().st_size,
                "modificationTime": mtime,
                "dataChange": data_change,
                "stats": _stats(data, set()),
            }
        }

    def remove(self, add: dict[str, Any], *, data_change: bool = True) -> dict[str, Any]:
        a = add["add"]
        r = {k: a[k] for k in ("path", "partitionValues", "size", "stats") if k in a}
        r.update(deletionTimestamp=self.now(), dataChange=data_change, extendedFileMetadata=True)
        if "deletionVector" in a:
            r["deletionVector"] = a["deletionVector"]
        return {"remove": r}

    def delete_rows(self, add: dict[str, Any], rows: list[int]) -> tuple[dict[str, Any], dict[str, Any]]:
        """(remove of the old add, add of the same file with a deletion vector over `rows`)."""
        dv_uuid = uuid.UUID(self._id("dv"))
        old = add["add"].get("deletionVector")
        previous: list[int] = []
        if old is not None:
            previous = list(getattr(self, "_dv_rows", {}).get(old["pathOrInlineDv"], []))
        all_rows = sorted(set(previous) | set(rows))
        bitmap = encode_bitmap(np.array(all_rows, dtype=np.uint64))
        content, offsets = dv_file_bytes([bitmap])
        (self.root / f"deletion_vector_{dv_uuid}.bin").write_bytes(content)
        encoded = z85_encode(dv_uuid.bytes)
        self.__dict__.setdefault("_dv_rows", {})[encoded] = all_rows
        dv = {
            "storageType": "u",
            "pathOrInlineDv": encoded,
            "offset": offsets[0],
            "sizeInBytes": len(bitmap),
            "cardinality": len(all_rows),
        }
        new = {"add": {**add["add"], "deletionVector": dv, "dataChange": True}}
        return self.remove(add), new

    def commit(
        self, actions: list[dict[str, Any]], operation: str, parameters: dict[str, Any] | None = None, **extra: Any
    ) -> int:
        self.version += 1
        info = {
            "commitInfo": {
                "timestamp": self.now(self.version),
                "operation": operation,
                "operationParameters": {k: json.dumps(v) if not isinstance(v, str) else v for k, v in (parameters or {}).items()},
                "userName": self.user,
                "engineInfo": "deltaexplore-demo",
                "isolationLevel": "Serializable",
                "isBlindAppend": operation == "WRITE",
                "txnId": str(uuid.uuid5(uuid.NAMESPACE_URL, f"deltaexplore-demo/{self.name}/txn/{self.version}")),
                **extra,
            }
        }
        path = self.root / "_delta_log" / f"{self.version:020d}.json"
        path.write_text("\n".join(json.dumps(a, sort_keys=True) for a in [info, *actions]) + "\n")
        ms = self.now(self.version)
        os.utime(path, ns=(ms * 1_000_000, ms * 1_000_000))
        return self.version


def _sales_rows(start: int, n: int, region: str, *, channel: bool = False) -> pa.Table:
    ids = np.arange(start, start + n, dtype=np.int64)
    cols: dict[str, Any] = {
        "id": pa.array(ids),
        "region": pa.array([region] * n),
        "amount": pa.array(np.round(ids * 1.25 % 97.0, 2)),
        "customer": pa.array([f"customer-{i % 17:02d}" for i in ids]),
    }
    if channel:
        cols["channel"] = pa.array(["web" if i % 3 else "store" for i in ids])
    return pa.table(cols)


def build_sales(root: str | os.PathLike) -> str:
    """The tour table: 8 versions of a partitioned sales table.

    v0 create (3 files) · v1, v2 appends · v3 DELETE (amount > 60) with deletion vectors · v4 a new column and a
    property change · v5 append with the new column · v6 OPTIMIZE of emea (small files compacted)
    · v7 DELETE that grows a deletion vector.
    """
    w = DemoWriter(root, "sales", user="ana")
    regions = ["emea", "amer", "apac"]
    proto = {
        "protocol": {
            "minReaderVersion": 3,
            "minWriterVersion": 7,
            "readerFeatures": ["deletionVectors"],
            "writerFeatures": ["deletionVectors"],
        }
    }
    md = w.metadata(
        SALES_SCHEMA,
        partition_columns=["region"],
        configuration={"delta.enableDeletionVectors": "true"},
        description="deltaexplore tour: sales by region",
    )
    files: dict[str, list[dict[str, Any]]] = {r: [] for r in regions}
    first = [w.add(_sales_rows(100 * k, 40, r)) for k, r in enumerate(regions)]
    for r, a in zip(regions, first):
        files[r].append(a)
    w.commit([proto, md, *first], "CREATE TABLE AS SELECT", {"partitionBy": ["region"]})
    for batch in range(2):
        adds = [w.add(_sales_rows(1000 + 100 * batch + 10 * k, 8, r)) for k, r in enumerate(regions)]
        for r, a in zip(regions, adds):
            files[r].append(a)
        w.commit(adds, "WRITE", {"mode": "Append"})
    # v3: delete rows with amount > 60 from the first amer and apac files, as deletion vectors
    actions = []
    for r in ("amer", "apac"):
        a = files[r][0]
        t = pq.read_table(w.root / a["add"]["path"])
        rows = np.nonzero(t.column("amount").to_numpy() > 60)[0].tolist()
        rm, new = w.delete_rows(a, rows)
        files[r][0] = new
        actions += [rm, new]
    w.commit(actions, "DELETE", {"predicate": ["amount > 60"]})
    schema2 = [*SALES_SCHEMA, ("channel", "string")]
    md2 = w.metadata(
        schema2,
        partition_columns=["region"],
        description="deltaexplore tour: sales by region",
        configuration={"delta.enableDeletionVectors": "true", "delta.logRetentionDuration": "interval 60 days"},
    )
    w.commit([md2], "ADD COLUMNS", {"columns": [{"column": {"name": "channel", "type": "string"}}]})
    adds = [w.add(_sales_rows(2000 + 10 * k, 12, r, channel=True)) for k, r in enumerate(regions)]
    for r, a in zip(regions, adds):
        files[r].append(a)
    w.commit(adds, "WRITE", {"mode": "Append"})
    # v6: OPTIMIZE emea: its files (no DVs) rewritten into one
    old = files["emea"]
    merged = pa.concat_tables([pq.read_table(w.root / a["add"]["path"]) for a in old], promote_options="default")
    merged = merged.append_column("region", pa.array(["emea"] * merged.num_rows))
    merged = merged.select(["id", "region", "amount", "customer", "channel"])
    big = w.add(merged, data_change=False)
    w.commit([*(w.remove(a, data_change=False) for a in old), big], "OPTIMIZE", {"predicate": [], "zOrderBy": []})
    files["emea"] = [big]
    # v7: delete more rows of the first amer file: its DV grows
    a = files["amer"][0]
    rm, new = w.delete_rows(a, [0, 1, 2])
    files["amer"][0] = new
    w.commit([rm, new], "DELETE", {"predicate": ["id < 103"]})
    return str(w.root)


def build_events(root: str | os.PathLike, *, files: int = 12, rows_per_file: int = 50) -> str:
    """A table for the layout tutorial: v0 has overlapping `event_id` ranges, v1 is the same rows sorted."""
    w = DemoWriter(root, "events", user="layout-bot")
    cols = [("event_id", "long"), ("kind", "string"), ("value", "double")]
    proto = {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}
    rng = np.random.default_rng(7)
    ids = rng.permutation(files * rows_per_file).astype(np.int64)
    kinds = np.array(["click", "view", "buy"])

    def rows(chunk: np.ndarray) -> pa.Table:
        return pa.table({"event_id": pa.array(chunk), "kind": pa.array(kinds[chunk % 3]), "value": pa.array(chunk * 0.5)})

    scattered = [w.add(rows(ids[i * rows_per_file : (i + 1) * rows_per_file])) for i in range(files)]
    w.commit([proto, w.metadata(cols), *scattered], "CREATE TABLE AS SELECT")
    ordered = np.sort(ids)
    clustered = [w.add(rows(ordered[i * rows_per_file : (i + 1) * rows_per_file]), data_change=False) for i in range(files)]
    w.commit([*(w.remove(a, data_change=False) for a in scattered), *clustered], "OPTIMIZE", {"zOrderBy": ["event_id"]})
    return str(w.root)


HOSTILE = "<script>alert('x')</script>"
HOSTILE_USER = "<img src=x onerror=alert(1)>"
HOSTILE_COLUMN = "<b>bold</b>"


def build_hostile(root: str | os.PathLike) -> str:
    """A table whose paths, partition values, user, column and property contain HTML/JS."""
    w = DemoWriter(root, HOSTILE, user=HOSTILE_USER)
    cols = [("id", "long"), (HOSTILE_COLUMN, "string"), ("part", "string")]
    proto = {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}
    md = w.metadata(cols, partition_columns=["part"], configuration={"x.note": HOSTILE}, description=HOSTILE)
    t = pa.table({"id": pa.array([1, 2], pa.int64()), HOSTILE_COLUMN: [HOSTILE, "ok"], "part": [HOSTILE_USER, HOSTILE_USER]})
    a = w.add(t, name=f"{HOSTILE}.parquet".replace("/", "_"))
    w.commit([proto, md, a], "CREATE TABLE", {"note": HOSTILE})
    t2 = pa.table({"id": pa.array([3], pa.int64()), HOSTILE_COLUMN: ["x"], "part": ["plain"]})
    w.commit([w.add(t2)], "WRITE", {"mode": "Append"})
    return str(w.root)


def show(table: pa.Table, columns: list[str] | None = None, limit: int = 20) -> None:
    """Print `table` as fixed-width text (stable across library versions, so notebooks can be checked)."""
    t = table.select(columns) if columns else table
    rows = t.slice(0, limit).to_pylist()
    cells = [[("–" if v is None else str(v)) for v in r.values()] for r in rows]
    widths = [max([len(c), *(len(r[i]) for r in cells)]) for i, c in enumerate(t.column_names)]
    print("  ".join(c.ljust(w) for c, w in zip(t.column_names, widths)).rstrip())
    for r in cells:
        print("  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip())
    if t.num_rows > limit:
        print(f"… {t.num_rows - limit} more rows")


def static_chart(chart: Any) -> Any:
    """An Altair chart as an SVG image: it survives saving the notebook (widget outputs do not)."""
    from IPython.display import SVG

    from deltaexplore.viz import to_svg

    return SVG(to_svg(chart))
