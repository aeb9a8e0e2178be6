"""A Delta table the size of a real one in everything the explorer shows, built in about a second.

`build_big(root)` writes only the log (no data file exists): a year of daily appends into 365
`date` partitions (3 files each, a few GiB and around 1.6 million rows per file, as their
statistics claim), an OPTIMIZE of the first week, a DELETE by deletion vectors on some files,
a property change and, last, five commits within one second. Totals: about 1,100 files,
TiB of bytes, billions of rows; Spark-style file names (`part-00002-<uuid>-c000.snappy.parquet`).

`build_regions(root)` is a small table partitioned by two columns (`region`, `day`), for the
partition columns shown one grid column each.

Every explorer tab reads metadata only (statistics, deletion vector descriptors, the log), so
the missing data files are never opened.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["BIG_PARTITIONS", "build_big", "build_regions"]

#: partitions of the big table (one per day)
BIG_PARTITIONS = 365
_FILES_PER_PARTITION = 3
_FIRST_DAY = date(2025, 11, 18)
_START = datetime(2025, 11, 18, 6, 0, tzinfo=UTC)
_SCHEMA = [
    ("id", "long"),
    ("event_time", "timestamp"),
    ("user_id", "string"),
    ("amount", "double"),
    ("category", "string"),
    ("date", "date"),
]


def _ms(t: datetime) -> int:
    return int(t.timestamp() * 1000)


class _Log:
    """Writes commits of one table: fixed clock and names derived from the table name."""

    def __init__(self, root: str | os.PathLike, name: str) -> None:
        self.root = Path(root)
        self.name = name
        self.version = -1
        self.rng = np.random.default_rng(20261127)
        self._n = 0
        shutil.rmtree(self.root, ignore_errors=True)
        (self.root / "_delta_log").mkdir(parents=True)

    def uid(self, kind: str) -> str:
        self._n += 1
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"deltaexplore-big/{self.name}/{kind}/{self._n}"))

    def commit(self, actions: list[dict[str, Any]], operation: str, when: datetime, **params: Any) -> None:
        self.version += 1
        info = {
            "commitInfo": {
                "timestamp": _ms(when),
                "operation": operation,
                "operationParameters": {k: v if isinstance(v, str) else json.dumps(v) for k, v in params.items()},
                "userName": "etl-service@example.com",
                "engineInfo": "Apache-Spark/4.0.0 Delta-Lake/4.0.0",
                "isBlindAppend": operation == "WRITE",
            }
        }
        path = self.root / "_delta_log" / f"{self.version:020d}.json"
        path.write_text("\n".join(json.dumps(a, separators=(",", ":")) for a in [info, *actions]) + "\n")
        os.utime(path, ns=(_ms(when) * 1_000_000,) * 2)


def _schema_string(columns: list[tuple[str, str]]) -> str:
    return json.dumps(
        {"type": "struct", "fields": [{"name": n, "type": t, "nullable": True, "metadata": {}} for n, t in columns]},
        separators=(",", ":"),
    )


def _add(
    log: _Log, pv: dict[str, str], task: int, when: datetime, rows: int, size: int, first_id: int, last_id: int | None = None
) -> dict[str, Any]:
    """An add of `rows` rows with ids `first_id`..`last_id` (default: consecutive)."""
    prefix = "".join(f"{k}={v}/" for k, v in pv.items())
    t0 = datetime.fromisoformat(f"{next(iter(pv.values()))}T00:00:00+00:00") if "date" in pv else when
    stats = {
        "numRecords": rows,
        "minValues": {
            "id": first_id,
            "event_time": (t0 + timedelta(seconds=int(log.rng.integers(0, 600)))).strftime("%Y-%m-%dT%H:%M:%S.000Z"),
            "user_id": f"user-{int(log.rng.integers(0, 1000)):06d}",
            "amount": 0.01,
            "category": "books",
        },
        "maxValues": {
            "id": first_id + rows - 1 if last_id is None else last_id,
            "event_time": (t0 + timedelta(hours=23, seconds=int(log.rng.integers(0, 3000)))).strftime("%Y-%m-%dT%H:%M:%S.000Z"),
            "user_id": f"user-{int(log.rng.integers(999_000, 1_000_000)):06d}",
            "amount": float(round(log.rng.uniform(5_000, 99_999), 2)),
            "category": "toys",
        },
        "nullCount": {"id": 0, "event_time": 0, "user_id": int(log.rng.integers(0, 50)), "amount": 0, "category": 0},
    }
    return {
        "add": {
            "path": f"{prefix}part-{task:05d}-{log.uid('file')}-c000.snappy.parquet",
            "partitionValues": pv,
            "size": size,
            "modificationTime": _ms(when),
            "dataChange": True,
            "stats": json.dumps(stats, separators=(",", ":")),
        }
    }


def _remove(add: dict[str, Any], when: datetime, *, data_change: bool) -> dict[str, Any]:
    a = add["add"]
    return {
        "remove": {
            "path": a["path"],
            "partitionValues": a["partitionValues"],
            "size": a["size"],
            "deletionTimestamp": _ms(when),
            "dataChange": data_change,
            "extendedFileMetadata": True,
            **({"deletionVector": a["deletionVector"]} if "deletionVector" in a else {}),
        }
    }


def build_big(root: str | os.PathLike) -> str:
    """Write the big table at `root` (see the module docstring); its path."""
    log = _Log(root, "events")
    proto = {
        "protocol": {
            "minReaderVersion": 3,
            "minWriterVersion": 7,
            "readerFeatures": ["deletionVectors"],
            "writerFeatures": ["deletionVectors"],
        }
    }
    md = {
        "metaData": {
            "id": str(uuid.uuid5(uuid.NAMESPACE_URL, "deltaexplore-big/events")),
            "name": "events",
            "description": "a year of events, one partition per day",
            "format": {"provider": "parquet", "options": {}},
            "schemaString": _schema_string(_SCHEMA),
            "partitionColumns": ["date"],
            "configuration": {"delta.enableDeletionVectors": "true", "delta.checkpointInterval": "1000"},
            "createdTime": _ms(_START),
        }
    }
    files: dict[str, list[dict[str, Any]]] = {}
    next_id = 7_000_000_000
    day_start: list[int] = []
    for day in range(BIG_PARTITIONS):
        d = (_FIRST_DAY + timedelta(days=day)).isoformat()
        when = _START + timedelta(days=day, seconds=int(log.rng.integers(0, 3600)), milliseconds=int(log.rng.integers(1, 999)))
        # a weekly rhythm and a few hot days: the partitions differ in size
        scale = (1.6 if day % 7 in (5, 6) else 1.0) * (6.0 if day in (120, 240, 300) else 1.0)
        adds = []
        counts = [int(scale * log.rng.integers(1_400_000, 1_800_000)) for _ in range(_FILES_PER_PARTITION)]
        for task, rows in enumerate(counts):
            size = int(rows * log.rng.uniform(700, 900))  # ~1.2 GiB per file
            # a day's tasks write interleaved ids: their ranges overlap (a point query reads 3)
            lo, hi = next_id + 17 * task, next_id + sum(counts) - 1 - 11 * task
            adds.append(_add(log, {"date": d}, task, when, rows, size, lo, hi))
        day_start.append(next_id)
        next_id += sum(counts)
        files[d] = adds
        actions = [proto, md, *adds] if day == 0 else adds
        log.commit(actions, "CREATE TABLE AS SELECT" if day == 0 else "WRITE", when, mode="Append", partitionBy=["date"])
    end = _START + timedelta(days=BIG_PARTITIONS)
    # the first week compacted: three files of each day into one
    actions = []
    for d in sorted(files)[:7]:
        old = files[d]
        rows = sum(json.loads(a["add"]["stats"])["numRecords"] for a in old)
        ids = [json.loads(a["add"]["stats"]) for a in old]
        first, last = min(x["minValues"]["id"] for x in ids), max(x["maxValues"]["id"] for x in ids)
        new = _add(log, {"date": d}, 0, end, rows, int(sum(a["add"]["size"] for a in old) * 0.93), first, last)
        new["add"]["dataChange"] = False
        actions += [_remove(a, end, data_change=False) for a in old] + [new]
        files[d] = [new]
    log.commit(actions, "OPTIMIZE", end, predicate=[], zOrderBy=[])
    # a DELETE by deletion vectors: every 9th day's first file loses a few percent of its rows
    actions = []
    when = end + timedelta(hours=2)
    for d in sorted(files)[10::9]:
        old = files[d][0]
        rows = json.loads(old["add"]["stats"])["numRecords"]
        dv = {
            "storageType": "u",
            "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^",  # a Z85 UUID: the file is never read here
            "offset": 1 + 40 * len(actions),
            "sizeInBytes": 34_000,
            "cardinality": int(rows * log.rng.uniform(0.01, 0.12)),
        }
        new = {"add": {**old["add"], "deletionVector": dv}}
        actions += [_remove(old, when, data_change=True), new]
        files[d][0] = new
    log.commit(actions, "DELETE", when, predicate=["amount > 90000"])
    md2 = json.loads(json.dumps(md))
    md2["metaData"]["configuration"]["delta.logRetentionDuration"] = "interval 400 days"
    log.commit(
        [md2], "SET TBLPROPERTIES", when + timedelta(minutes=20), properties={"delta.logRetentionDuration": "interval 400 days"}
    )
    # five appends within one second (a streaming writer's micro-batches)
    last = sorted(files)[-1]
    burst = end + timedelta(hours=3, minutes=33, seconds=28)
    for k in range(5):
        t = burst + timedelta(milliseconds=180 * k + 17)
        # late events: ids of the last month's days (their ranges overlap those days' files)
        rows, lo = int(log.rng.integers(40_000, 90_000)), day_start[-30 + 5 * k]
        add = _add(log, {"date": last}, 10 + k, t, rows, int(log.rng.integers(30, 90)) * 1024**2, lo, lo + 40_000_000)
        files[last].append(add)
        log.commit([add], "STREAMING UPDATE", t, outputMode="Append", queryId=log.uid("query"), epochId=str(k))
    return str(log.root)


def build_regions(root: str | os.PathLike) -> str:
    """A small table partitioned by `region` and `day` (3 regions x 12 days, one file each)."""
    log = _Log(root, "regions")
    md = {
        "metaData": {
            "id": str(uuid.uuid5(uuid.NAMESPACE_URL, "deltaexplore-big/regions")),
            "name": "regions",
            "format": {"provider": "parquet", "options": {}},
            "schemaString": _schema_string([("id", "long"), ("amount", "double"), ("region", "string"), ("day", "string")]),
            "partitionColumns": ["region", "day"],
            "configuration": {},
            "createdTime": _ms(_START),
        }
    }
    proto = {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}
    adds = []
    for r, region in enumerate(("emea", "amer", "apac")):
        for day in range(12):
            pv = {"region": region, "day": (_FIRST_DAY + timedelta(days=day)).isoformat()}
            rows = int(log.rng.integers(20_000, 2_000_000))
            adds.append(_add(log, pv, r, _START, rows, rows * 60, 1 + 10_000_000 * (r * 12 + day)))
    log.commit([proto, md, *adds], "CREATE TABLE AS SELECT", _START, partitionBy=["region", "day"])
    return str(log.root)
