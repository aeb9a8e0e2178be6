"""Write a metadata-only Delta table with millions of active files (no data files): a multi-part
checkpoint written part by part with pyarrow (bounded memory: one part at a time), then JSON
commits after it that remove and re-add files of the checkpoint.

    python benchmarks/gen_many_files.py OUT --files 10000000 [--parts 10] [--commits 20]

Every add has a size (log-normal around 64 MiB, so some are small), a partition value (`date`,
`--partitions` values), stats with numRecords and min/max/nullCount of `id` (files cover
overlapping id ranges) and `value`, and every 20th file a deletion vector descriptor. The
protocol is reader 3 / writer 7 with deletionVectors. Used by the memory test of the streaming
inspection (`tests/inspect/test_inspect_streaming.py`) and `bench_scale.py`.
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

STRING_MAP = pa.map_(pa.string(), pa.string())
DV = pa.struct(
    [
        ("storageType", pa.string()),
        ("pathOrInlineDv", pa.string()),
        ("offset", pa.int32()),
        ("sizeInBytes", pa.int32()),
        ("cardinality", pa.int64()),
    ]
)
ADD = pa.struct(
    [
        ("path", pa.string()),
        ("partitionValues", STRING_MAP),
        ("size", pa.int64()),
        ("modificationTime", pa.int64()),
        ("dataChange", pa.bool_()),
        ("stats", pa.string()),
        ("deletionVector", DV),
    ]
)
REMOVE = pa.struct(
    [
        ("path", pa.string()),
        ("deletionTimestamp", pa.int64()),
        ("dataChange", pa.bool_()),
        ("size", pa.int64()),
        ("deletionVector", DV),
    ]
)
PROTOCOL = pa.struct(
    [
        ("minReaderVersion", pa.int32()),
        ("minWriterVersion", pa.int32()),
        ("readerFeatures", pa.list_(pa.string())),
        ("writerFeatures", pa.list_(pa.string())),
    ]
)
METADATA = pa.struct(
    [
        ("id", pa.string()),
        ("format", pa.struct([("provider", pa.string()), ("options", STRING_MAP)])),
        ("schemaString", pa.string()),
        ("partitionColumns", pa.list_(pa.string())),
        ("configuration", STRING_MAP),
        ("createdTime", pa.int64()),
    ]
)
SCHEMA = pa.schema([("protocol", PROTOCOL), ("metaData", METADATA), ("add", ADD), ("remove", REMOVE)])
_BOUNDS = pa.struct([("id", pa.int64()), ("value", pa.float64())])
STATS_PARSED = pa.struct(
    [
        ("numRecords", pa.int64()),
        ("minValues", _BOUNDS),
        ("maxValues", _BOUNDS),
        ("nullCount", pa.struct([("id", pa.int64()), ("value", pa.int64())])),
    ]
)
#: the checkpoint schema when the adds carry `stats_parsed`
PARSED_SCHEMA = pa.schema(
    [
        ("protocol", PROTOCOL),
        ("metaData", METADATA),
        ("add", pa.struct([*ADD, pa.field("stats_parsed", STATS_PARSED)])),
        ("remove", REMOVE),
    ]
)
FIELDS = [
    {"name": "id", "type": "long", "nullable": True, "metadata": {}},
    {"name": "value", "type": "double", "nullable": True, "metadata": {}},
    {"name": "date", "type": "string", "nullable": True, "metadata": {}},
]
PROTOCOL_JSON = {
    "minReaderVersion": 3,
    "minWriterVersion": 7,
    "readerFeatures": ["deletionVectors"],
    "writerFeatures": ["deletionVectors"],
}
METADATA_JSON = {
    "id": "00000000-0000-0000-0000-00000000beef",
    "format": {"provider": "parquet", "options": {}},
    "schemaString": json.dumps({"type": "struct", "fields": FIELDS}),
    "partitionColumns": ["date"],
    "configuration": {"delta.enableDeletionVectors": "true"},
    "createdTime": 1_700_000_000_000,
}


def adds(start: int, n: int, partitions: int, rng: np.random.Generator, *, stats_parsed: bool = False) -> pa.StructArray:
    """Add actions of files `start`..`start + n` (vectorized); with `stats_parsed`, the typed
    stats too (what Spark writes in checkpoints with `delta.checkpoint.writeStatsAsStruct`)."""
    idx = np.arange(start, start + n, dtype=np.int64)
    path = pc.binary_join_element_wise(
        "date=", pc.cast(pa.array(idx % partitions), pa.string()), "/part-", pc.cast(pa.array(idx), pa.string()), ".parquet", ""
    )
    date = pc.cast(pa.array(idx % partitions), pa.string())
    offsets = pa.array(np.arange(n + 1, dtype=np.int32))
    pvals = pa.MapArray.from_arrays(offsets, pa.array(np.full(n, "date", dtype=object), pa.string()), date, type=STRING_MAP)
    size = np.maximum(1, rng.lognormal(np.log(64 << 20), 1.2, n)).astype(np.int64)
    records = (size // 100).astype(np.int64) + 1
    lo = idx * 1000 - rng.integers(0, 20_000, n)
    hi = lo + rng.integers(1, 40_000, n)
    s = lambda a: pc.cast(pa.array(a), pa.string())  # noqa: E731
    low_value, high_value, value_nulls = np.round(rng.random(n), 3), np.round(1 + rng.random(n), 3), rng.integers(0, 3, n)
    stats = pc.binary_join_element_wise(
        '{"numRecords":',
        s(records),
        ',"minValues":{"id":',
        s(lo),
        ',"value":',
        s(low_value),
        '},"maxValues":{"id":',
        s(hi),
        ',"value":',
        s(high_value),
        '},"nullCount":{"id":0,"value":',
        s(value_nulls),
        "}}",
        "",
    )
    with_dv = idx % 20 == 7
    cardinality = np.where(with_dv, records // 10 + 1, 0)
    dv = pa.StructArray.from_arrays(
        [
            pa.array(np.full(n, "u", dtype=object), pa.string()),
            pa.array(np.full(n, "ab^-aqEH.-t@S}K{vb[*k^", dtype=object), pa.string()),
            pa.array((idx % 1000).astype(np.int32) * 40 + 1, pa.int32()),
            pa.array(np.full(n, 34, np.int32), pa.int32()),
            pa.array(cardinality, pa.int64()),
        ],
        fields=list(DV),
        mask=pa.array(~with_dv),
    )
    mtime = pa.array(1_700_000_000_000 + idx, pa.int64())
    arrays = [path, pvals, pa.array(size), mtime, pa.array(np.ones(n, bool)), stats, dv]
    if not stats_parsed:
        return pa.StructArray.from_arrays(arrays, fields=list(ADD))

    def pair(a: np.ndarray, b: np.ndarray, t: pa.DataType) -> pa.StructArray:
        return pa.StructArray.from_arrays([pa.array(a, pa.int64()), pa.array(b, t)], names=["id", "value"])

    parsed = pa.StructArray.from_arrays(
        [
            pa.array(records, pa.int64()),
            pair(lo, low_value, pa.float64()),
            pair(hi, high_value, pa.float64()),
            pair(np.zeros(n, np.int64), value_nulls, pa.int64()),
        ],
        fields=list(STATS_PARSED),
    )
    return pa.StructArray.from_arrays([*arrays, parsed], fields=[*ADD, pa.field("stats_parsed", STATS_PARSED)])


def _non_file_rows(schema: pa.Schema = SCHEMA) -> pa.Table:
    """The checkpoint rows of the protocol and the metadata (maps as lists of pairs)."""
    metadata = {**METADATA_JSON, "format": {"provider": "parquet", "options": []}}
    metadata["configuration"] = list(METADATA_JSON["configuration"].items())
    return pa.table(
        {
            "protocol": pa.array([PROTOCOL_JSON, None], PROTOCOL),
            "metaData": pa.array([None, metadata], METADATA),
            "add": pa.nulls(2, schema.field("add").type),
            "remove": pa.nulls(2, REMOVE),
        },
        schema=schema,
    )


def write(
    out: Path,
    files: int,
    *,
    parts: int = 10,
    commits: int = 20,
    partitions: int = 1000,
    seed: int = 0,
    stats_parsed: bool = False,
) -> None:
    """The table at `out` (replaced): checkpoint at version 1 with `files` adds in `parts`
    parts, then `commits` JSON commits (each removes 50 checkpoint files and adds 40); with
    `stats_parsed` the checkpoint's adds carry the typed stats beside the JSON ones."""
    schema = PARSED_SCHEMA if stats_parsed else SCHEMA
    if out.exists():
        shutil.rmtree(out)
    log = out / "_delta_log"
    log.mkdir(parents=True)
    rng = np.random.default_rng(seed)
    now = int(time.time() * 1000)
    info = {"commitInfo": {"timestamp": now - 10_000, "operation": "CREATE TABLE"}}
    (log / f"{0:020d}.json").write_text(
        "\n".join(json.dumps(a) for a in (info, {"protocol": PROTOCOL_JSON}, {"metaData": METADATA_JSON})) + "\n"
    )
    (log / f"{1:020d}.json").write_text(json.dumps({"commitInfo": {"timestamp": now - 9_000, "operation": "WRITE"}}) + "\n")
    parts = max(1, min(parts, files or 1))
    bounds = np.linspace(0, files, parts + 1).astype(np.int64)
    for p in range(parts):
        a, b = int(bounds[p]), int(bounds[p + 1])
        add = adds(a, b - a, partitions, rng, stats_parsed=stats_parsed)
        nulls = {"protocol": pa.nulls(b - a, PROTOCOL), "metaData": pa.nulls(b - a, METADATA), "remove": pa.nulls(b - a, REMOVE)}
        table = pa.table({**nulls, "add": add}).select(schema.names).cast(schema)
        if p == 0:  # the first part starts with the protocol and metadata
            table = pa.concat_tables([_non_file_rows(schema), table])
        name = f"{1:020d}.checkpoint.{p + 1:010d}.{parts:010d}.parquet"
        pq.write_table(table, log / name, row_group_size=1 << 16)
        del add, table
    (log / "_last_checkpoint").write_text(json.dumps({"version": 1, "size": files + 2, "parts": parts, "numOfAddFiles": files}))
    removed = 0
    for c in range(commits):
        v = 2 + c
        gone = [int(i) for i in rng.choice(files, size=min(50, files), replace=False)] if files else []
        lines = [{"commitInfo": {"timestamp": now - 8_000 + c, "operation": "OPTIMIZE"}}]
        for i in gone:
            lines.append(
                {
                    "remove": {
                        "path": f"date={i % partitions}/part-{i}.parquet",
                        "deletionTimestamp": now - 8_000 + c,
                        "dataChange": False,
                        "size": 1000,
                    }
                }
            )
        new = adds(files + c * 40, 40, partitions, rng).to_pylist()
        for row in new:
            row["partitionValues"] = dict(row["partitionValues"])
            row = {k: v for k, v in row.items() if v is not None}
            lines.append({"add": row})
        removed += len(gone)
        (log / f"{v:020d}.json").write_text("\n".join(json.dumps(x) for x in lines) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--files", type=int, required=True)
    ap.add_argument("--parts", type=int, default=10)
    ap.add_argument("--commits", type=int, default=20)
    ap.add_argument("--partitions", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--stats-parsed", action="store_true", help="typed stats_parsed in the checkpoint too")
    args = ap.parse_args()
    t0 = time.perf_counter()
    write(
        args.out,
        args.files,
        parts=args.parts,
        commits=args.commits,
        partitions=args.partitions,
        seed=args.seed,
        stats_parsed=args.stats_parsed,
    )
    print(f"wrote {args.out}: {args.files} files, {args.parts} parts, {args.commits} commits in {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
