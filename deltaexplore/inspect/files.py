"""Files and partitions: what a version is made of, per file and per partition.

`files()` is the core's flat files table plus derived columns (partition key, deleted and live
rows, whether stats exist, small-file flag). `partitions()` aggregates it per partition with
polars: file counts, bytes, rows, deletion vectors, small files and skew.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.inspect.file_columns import dv_cardinality, file_partitions
from deltaexplore.inspect.results import conform
from deltaexplore.inspect.schemas import FILES_SCHEMA, PARTITIONS_SCHEMA
from deltaexplore.inspect.snapshots import snapshot_cache, snapshot_of

if TYPE_CHECKING:
    from deltaexplore.core.snapshot import Snapshot
    from deltaexplore.core.table import Table

__all__ = [
    "DEFAULT_SMALL_FILE_BYTES",
    "PARTITION_AGGREGATES",
    "files",
    "files_ready",
    "finish_partitions",
    "partition_aggregates",
    "partitions",
    "small_file_threshold",
]

#: files below this size count as small unless the table sets delta.targetFileSize
#: (128 MiB: the target of Delta's auto compaction; OPTIMIZE aims at 1 GiB files)
DEFAULT_SMALL_FILE_BYTES = 128 * 1024 * 1024


def small_file_threshold(snapshot: Snapshot, small_file_bytes: int | None = None) -> int:
    """`small_file_bytes`, else `delta.targetFileSize` / 2, else 128 MiB."""
    if small_file_bytes is not None:
        return int(small_file_bytes)
    target = snapshot.properties.get("delta.targetFileSize")
    if target:
        try:
            size = _parse_size(target)
        except (ValueError, OverflowError):
            size = 0
        if 0 < size < 1 << 63:  # a size a long holds (anything else is no usable setting)
            return max(1, size // 2)
    return DEFAULT_SMALL_FILE_BYTES


def _parse_size(text: str) -> int:
    t = text.strip().lower().replace(" ", "")
    units = {"b": 1, "kb": 1024, "k": 1024, "mb": 1024**2, "m": 1024**2, "gb": 1024**3, "g": 1024**3, "tb": 1024**4}
    for suffix in sorted(units, key=len, reverse=True):
        if t.endswith(suffix) and t[: -len(suffix)].replace(".", "", 1).isdigit():
            return int(float(t[: -len(suffix)]) * units[suffix])
    return int(t)


def files_ready(snapshot: Snapshot, small_file_bytes: int | None = None) -> bool:
    """Whether `files(snapshot)` is computed already (then free)."""
    return ("files", small_file_threshold(snapshot, small_file_bytes)) in snapshot_cache(snapshot)


def files(obj: Table | Snapshot, *, version: int | None = None, small_file_bytes: int | None = None) -> pa.Table:
    """One row per active file (schema `schemas.FILES_SCHEMA`).

    The core's files columns (path, size, modification_time, data_change, partition_values,
    num_records, stats, the deletion vector descriptor, row tracking fields, tags), plus:

    - `partition`: `col=value/...` ('' when unpartitioned; nulls as `__HIVE_DEFAULT_PARTITION__`)
    - `deleted_rows`: rows deleted by the file's deletion vector (0 without one)
    - `live_rows`: `num_records - deleted_rows` (null without stats)
    - `has_stats`: the add carries statistics
    - `is_small`: `size < small_file_bytes` (default: `delta.targetFileSize` / 2, else 128 MiB)
    """
    snap = snapshot_of(obj, version)
    threshold = small_file_threshold(snap, small_file_bytes)
    cache = snapshot_cache(snap)
    hit = cache.get(("files", threshold))
    if hit is not None:
        return hit  # a snapshot never changes: overview, partitions and the explorer share one
    core = snap.files()
    adds = snap.add_actions()
    deleted = dv_cardinality(adds)
    num_records = core.column("num_records").combine_chunks()
    cols = {name: core.column(name) for name in core.column_names}
    cols["partition"] = file_partitions(snap)
    cols["deleted_rows"] = deleted
    cols["live_rows"] = pc.subtract(num_records, deleted)
    cols["has_stats"] = pc.is_valid(num_records)
    cols["is_small"] = pc.less(core.column("size").combine_chunks(), threshold) if core.num_rows else pa.array([], pa.bool_())
    out = conform(cols, FILES_SCHEMA)
    cache[("files", threshold)] = out
    return out


#: what an engine aggregates per partition over the active files: `PARTITIONS_SCHEMA` but for
#: the shares (`finish_partitions` adds them); the local engine's definition is `partition_aggregates`
PARTITION_AGGREGATES = tuple(f.name for f in PARTITIONS_SCHEMA if f.name not in ("bytes_share", "skew"))


def partition_aggregates(frame: pl.DataFrame) -> pl.DataFrame:
    """`PARTITION_AGGREGATES` (but `partition_values`) of a per-file frame with columns
    partition, size, num_records, deleted_rows, live_rows, has_stats, is_small, cardinality,
    and `_row` (the file's position: each partition's first `_row` is kept, to take its
    partition values from)."""
    return (
        frame.lazy()
        .group_by("partition")
        .agg(
            pl.len().cast(pl.Int64).alias("files"),
            pl.col("size").sum().alias("bytes"),
            pl.when(pl.col("num_records").is_not_null().any()).then(pl.col("num_records").sum()).alias("rows"),
            pl.col("deleted_rows").sum().alias("deleted_rows"),
            pl.when(pl.col("live_rows").is_not_null().any()).then(pl.col("live_rows").sum()).alias("live_rows"),
            (~pl.col("has_stats")).sum().cast(pl.Int64).alias("files_without_stats"),
            pl.col("cardinality").is_not_null().sum().cast(pl.Int64).alias("dv_files"),
            pl.col("is_small").sum().cast(pl.Int64).alias("small_files"),
            pl.col("size").filter(pl.col("is_small")).sum().alias("small_bytes"),
            pl.col("size").min().alias("min_file_bytes"),
            pl.col("size").max().alias("max_file_bytes"),
            pl.col("size").mean().alias("mean_file_bytes"),
            pl.col("size").median().alias("median_file_bytes"),
            pl.col("_row").min().alias("_row"),
        )
        .collect()
    )


def finish_partitions(aggregates: pa.Table) -> pa.Table:
    """`PARTITIONS_SCHEMA` from per-partition `PARTITION_AGGREGATES` (any engine's): each
    partition's share of the bytes and its skew (bytes / median bytes over partitions), largest
    first."""
    if aggregates.num_rows == 0:
        return PARTITIONS_SCHEMA.empty_table()
    frame = pl.from_arrow(aggregates.select([c for c in aggregates.column_names if c != "partition_values"]))
    assert isinstance(frame, pl.DataFrame)
    out = (
        frame.with_row_index("_at")
        .with_columns(
            (pl.col("bytes") / pl.col("bytes").sum()).alias("bytes_share"),
            (pl.col("bytes") / pl.col("bytes").median()).alias("skew"),
        )
        .sort(["bytes", "partition"], descending=[True, False])
    )
    table = out.to_arrow()
    cols = {name: table.column(name) for name in table.column_names if name != "_at"}
    if "partition_values" in aggregates.column_names:
        order = table.column("_at").cast(pa.int64())
        cols["partition_values"] = aggregates.column("partition_values").combine_chunks().take(order)
    return conform(cols, PARTITIONS_SCHEMA)


def partitions(obj: Table | Snapshot, *, version: int | None = None, small_file_bytes: int | None = None) -> pa.Table:
    """One row per partition, largest first (schema `schemas.PARTITIONS_SCHEMA`).

    Columns: partition, partition_values, files, bytes, rows (files with stats only),
    deleted_rows, live_rows, files_without_stats, dv_files, small_files, small_bytes,
    min/max/mean/median_file_bytes, bytes_share (of the table) and skew (bytes / median bytes
    over partitions: 1.0 is typical, 10 means ten times the median partition). An unpartitioned
    table has one row with partition ''.
    """
    snap = snapshot_of(obj, version)
    f = files(snap, small_file_bytes=small_file_bytes)
    if f.num_rows == 0:
        return PARTITIONS_SCHEMA.empty_table()
    frame = pl.from_arrow(
        f.select(["partition", "size", "num_records", "deleted_rows", "live_rows", "has_stats", "is_small", "cardinality"])
    )
    assert isinstance(frame, pl.DataFrame)
    agg = partition_aggregates(frame.with_row_index("_row")).to_arrow()
    # the partition_values map of each partition: the one of its first file
    pvals = f.column("partition_values").combine_chunks().take(agg.column("_row").cast(pa.int64()))
    return finish_partitions(agg.drop_columns(["_row"]).append_column("partition_values", pvals))
