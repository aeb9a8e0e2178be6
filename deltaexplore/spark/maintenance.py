"""Table maintenance on Spark: OPTIMIZE (bin-packing, Z-order), DV purge, VACUUM, RESTORE,
CHECKPOINT.

The core decides (`plan_optimize`: which files, in which bins; `plan_vacuum`: which files no
retained version needs; `restore_actions`; `write_checkpoint`); Spark does the data work: the
rows of a bin are read with DVs applied and written by Spark's parquet writer (`native_write`)
with `dataChange=false`. Bin-packing needs no shuffle: each bin is one task (a union of per-bin
scans coalesced to one partition). Z-order: each column is mapped to a range bucket
(boundaries from a sample, so any orderable type works), the bucket numbers' bits are
interleaved into one key on Spark, rows are range-partitioned and sorted by (bin, key), and
each bin goes to its own directory. Row tracking: rewritten rows keep their stable row ids and
commit versions in the materialized columns (as the core's optimize does). Tables with types
Spark cannot write as Delta stores them go through the Python writer (`writer.write_files`).
"""

from __future__ import annotations

import json
from functools import reduce
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.operations import OptimizePlan, open_for_write, plan_optimize, plan_vacuum, total_bytes
from deltaexplore.core.operations import checkpoint as core_checkpoint
from deltaexplore.core.operations import restore as core_restore
from deltaexplore.core.protocol.schema import PrimitiveType, StructField
from deltaexplore.core.scan.data_file import row_counts
from deltaexplore.core.scan.partition_values import partition_groups
from deltaexplore.core.snapshot import Snapshot
from deltaexplore.core.table import Table
from deltaexplore.errors import SparkError, WriteRefusedError
from deltaexplore.spark.executor import path_deleter, ship
from deltaexplore.spark.file_values import FILE_COL, ROW_COL
from deltaexplore.spark.jobs import progress
from deltaexplore.spark.native_write import (
    NativeFile,
    Staging,
    data_fields,
    discard_staging,
    native_adds,
    physical_columns,
    supports_native,
    write_native,
    write_session,
)
from deltaexplore.spark.reader import scan_files
from deltaexplore.spark.session import default_parallelism, spark_errors
from deltaexplore.spark.writer import write_files

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession


__all__ = ["checkpoint", "optimize", "purge_deletion_vectors", "restore", "vacuum", "zorder_key"]

ZORDER_BITS = 8  # bits (255 range buckets + null) per column; fewer when the key would pass 62 bits
BINS_PER_JOB = 256  # bins written by one Spark job (one union of per-bin scans)
FILE_SLACK = 1.25  # a file may pass the target size by this factor before Spark starts another
SHUFFLE_BELOW = 8 << 20  # many bins smaller than this on average: one scan and a shuffle
DRIVER_DELETES = 100  # VACUUM deletes more files than this on the executors


def _bucket_expr(col: Column, bounds: list[Any]) -> Column:
    """Number of `bounds` <= col (a balanced tree of comparisons), 0 for null."""
    from pyspark.sql import functions as F

    def tree(lo: int, hi: int) -> Column:
        # bounds[lo:hi] undecided; result offset lo
        if lo >= hi:
            return F.lit(lo)
        mid = (lo + hi) // 2
        return F.when(col < F.lit(bounds[mid]), tree(lo, mid)).otherwise(tree(mid + 1, hi))

    return F.when(col.isNull(), F.lit(0)).otherwise(tree(0, len(bounds)) + F.lit(1)).cast("long")


def zorder_key(df: DataFrame, columns: list[str], *, sample_rows: int = 100_000, total: int | None = None) -> Column:
    """A long whose order follows a Z-order curve over `columns` (see the module docstring).

    `total` (rows of `df`, when known) saves counting them.
    """
    from pyspark.sql import functions as F

    bits = max(1, min(ZORDER_BITS, 62 // max(1, len(columns))))
    buckets = (1 << bits) - 1  # bucket 0 is null
    total = max(1, total if total is not None else df.count())
    fraction = min(1.0, sample_rows / total)
    sample = df.select(*[F.col(f"`{c}`") for c in columns]).sample(fraction=fraction, seed=7).collect()
    ranks = []
    for i, c in enumerate(columns):
        values = sorted(r[i] for r in sample if r[i] is not None)
        if not values:
            ranks.append(F.lit(0).cast("long"))
            continue
        step = max(1, len(values) // buckets)
        bounds = sorted({v for v in values[step::step] if v > values[0]})[: buckets - 1]  # bucket 1 holds the minimum
        # buckets 0 (null) .. len(bounds) + 1 spread over the whole bit width, so the top bit
        # splits the rows in half (bucket numbers 0..33 would leave bits 6 and 7 unused and
        # put the top bit's split at bucket 32)
        spread = F.floor(_bucket_expr(F.col(f"`{c}`"), bounds) * F.lit(float(1 << bits) / (len(bounds) + 2)))
        ranks.append(spread.cast("long"))
    key = F.lit(0).cast("long")
    for b in range(bits - 1, -1, -1):
        for r in ranks:
            key = F.shiftleft(key, 1).bitwiseOR(F.shiftright(r, b).bitwiseAND(F.lit(1)))
    return key


def optimize(
    spark: SparkSession,
    uri: Any,
    *,
    target_size: int | None = None,
    partition_filter: Any = None,
    max_deleted_rows_ratio: float = 0.05,
    zorder_by: list[str] | None = None,
    dry_run: bool = False,
    storage_options: dict[str, Any] | None = None,
    max_retries: int = 10,
    _dv_files_only: bool = False,
    _python_writer: bool = False,
) -> pa.Table:
    """Compact small files (and files with many deleted rows) into files of about `target_size`.

    Files are written by Spark's parquet writer (`native_write`; the Python writer only for
    types it cannot write). Rows are rewritten as they are, so NOT NULL, invariants and CHECK
    constraints are not evaluated again. Each bin's rows are counted in the new files' footers
    and must equal the bin's live rows before anything is committed.

    Executors: pyspark, pyarrow and numpy; tables with variant or geo columns (the Python
    writer) need deltaexplore there too.

    Args:
        target_size: bytes per output file (default ``delta.targetFileSize`` or 128 MiB).
        partition_filter: only partitions matching this predicate (partition columns only).
        max_deleted_rows_ratio: files whose DVs delete more than this share are rewritten.
        zorder_by: cluster rows along a Z-order curve of these data columns (whole partitions
            are rewritten).
        dry_run: plan only.
        _python_writer: write with the Python writer even when Spark's can (tests).

    Returns:
        One row of metrics: operation, version (null for a dry run / nothing to do), dry_run,
        num_bins, num_files_removed, num_files_added, bytes_removed, bytes_added,
        num_partitions_optimized, total_considered_files, num_deleted_rows_purged.
    """
    table = open_for_write(uri, storage_options)
    snapshot = table.snapshot()
    plan = plan_optimize(
        snapshot,
        target_size=target_size,
        partition_filter=partition_filter,
        max_deleted_rows_ratio=max_deleted_rows_ratio,
        dv_files_only=_dv_files_only,
        zorder_by=zorder_by,
    )
    operation = "REORG" if _dv_files_only else "OPTIMIZE"
    stagings: list[Staging] = []

    def discard_stagings() -> None:  # files of jobs that succeeded before a failure
        for staging in stagings:
            discard_staging(spark, table, staging)

    with plan.start(table, operation, partition_filter=partition_filter, dry_run=dry_run) as op:
        if dry_run or not plan.bins:
            return op.result()
        native = supports_native(snapshot) and not _python_writer
        if snapshot.config.row_tracking_enabled and not native:
            raise WriteRefusedError(
                f"{operation} on Spark would rewrite files of {table.uri}, which tracks row ids: not supported on Spark yet "
                "(use deltaexplore.core.operations.optimize)"
            )
        op.on_failure(discard_stagings)
        with progress(spark, f"deltaexplore {operation} {table.uri}"), spark_errors(operation, path=table.uri):
            if native:
                adds = rewrite_native(
                    spark,
                    table,
                    snapshot,
                    plan.bins,
                    target_size=plan.target_size,
                    zorder_by=plan.zorder_by,
                    stagings=stagings,
                    storage_options=storage_options,
                )
            else:
                adds = _rewrite_python(spark, table, snapshot, plan, storage_options)
        op.written(adds)
        op.txn.remove_files(plan.files, data_change=False)
        op.txn.add_files(adds)
        op.metrics.update(num_files_added=adds.num_rows, bytes_added=total_bytes(adds))
        return op.commit(max_retries=max_retries)


def _live_rows(snapshot: Snapshot, files: pa.Table) -> np.ndarray:
    """Rows of each file its deletion vector keeps."""
    counts = row_counts(snapshot, files)
    dv = files.column("deletionVector").combine_chunks()
    if len(dv) and dv.null_count < len(dv):
        card = pc.fill_null(pc.if_else(pc.is_valid(dv), dv.field("cardinality"), pa.scalar(0, pa.int64())), 0)
        counts = counts - card.to_numpy(zero_copy_only=False).astype(np.int64)
    return counts


def _materialized_fields(snapshot: Snapshot) -> list[StructField]:
    """The materialized row id / row commit version columns rewritten rows carry (row tracking)."""
    config = snapshot.config
    if not config.row_tracking_enabled:
        return []
    names = (config.materialized_row_id_column, config.materialized_row_commit_version_column)
    if not all(names):
        return []  # as the core's optimize: nothing to keep them in
    return [StructField(str(n), PrimitiveType("long"), True, {}) for n in names]


def _row_tracking_columns(tracked: list[StructField], base: Column, commit_version: Column) -> list[Column]:
    """Stable row ids and commit versions: the materialized value, else the file's
    ``baseRowId + row index`` / ``defaultRowCommitVersion`` (what readers compute)."""
    from pyspark.sql import functions as F

    if not tracked:
        return []
    id_col, cv_col = (f.name for f in tracked)
    return [
        F.coalesce(F.col(f"`{id_col}`"), base + F.col(ROW_COL)).alias(id_col),
        F.coalesce(F.col(f"`{cv_col}`"), commit_version).alias(cv_col),
    ]


def _bin_frame(
    session: SparkSession,
    snapshot: Snapshot,
    files: pa.Table,
    fields: list[StructField],
    tracked: list[StructField],
    mode: str,
    storage_options: dict[str, Any] | None,
    keep: Column | None = None,
) -> DataFrame:
    """The live rows of one bin (those `keep` holds for) as the data files store them, in one
    partition."""
    from pyspark.sql import functions as F

    read = fields if keep is None else [f for f in snapshot.schema.fields if f.type != PrimitiveType("void")]
    rows = scan_files(session, snapshot, files, read + tracked, with_ids=bool(tracked), storage_options=storage_options)
    if keep is not None:
        rows = rows.where(keep)
    kept: list[Column] = []
    if tracked:

        def per_file(name: str) -> Column:
            values = F.array(*[F.lit(v).cast("long") for v in files.column(name).to_pylist()])
            return values[F.col(FILE_COL)]

        kept = _row_tracking_columns(tracked, per_file("baseRowId"), per_file("defaultRowCommitVersion"))
    return rows.select(*physical_columns(fields, mode), *kept).coalesce(1)


def pack_bins(snapshot: Snapshot, files: pa.Table, target_size: int) -> list[pa.Table]:
    """Files (add rows of `snapshot`) grouped by partition and packed (in order) into bins of
    about `target_size`."""
    groups = partition_groups(snapshot, files)
    sizes = files.column("size").to_pylist()
    bins: list[list[int]] = []
    current: dict[int, tuple[int, int]] = {}  # partition -> (bin index, bytes)
    for i, (g, size) in enumerate(zip(groups.tolist(), sizes)):
        at = current.get(g)
        if at is None or (at[1] and at[1] + size > target_size):
            bins.append([])
            at = (len(bins) - 1, 0)
        bins[at[0]].append(i)
        current[g] = (at[0], at[1] + size)
    return [files.take(pa.array(b, pa.int64())) for b in bins]


def rewrite_native(
    spark: SparkSession,
    table: Table,
    snapshot: Snapshot,
    bins: list[pa.Table],
    *,
    target_size: int,
    stagings: list[Staging],
    zorder_by: list[str] | None = None,
    keep: Column | None = None,
    dropped: np.ndarray | None = None,
    data_change: bool = False,
    storage_options: dict[str, Any] | None = None,
) -> pa.Table:
    """The live rows of `bins` (add actions) written by Spark's parquet writer; the add actions
    (nothing committed).

    Bin-packing: one union of per-bin scans, each coalesced to one task (no shuffle), so task
    *i* writes bin *i*. Z-order: rows are range-partitioned and sorted by (bin, key) and each
    bin goes to its own directory (``partitionBy``). Many small bins (more than 4 per core, under
    `SHUFFLE_BELOW` bytes on average): one scan, hash-partitioned by bin, one directory per bin.
    Staging directories go to `stagings` as they are created, for the caller to delete if the
    commit fails.

    Args:
        keep: only rows where this (logical columns) is true are written (DELETE by rewrite);
            `dropped` then gives, per file, how many live rows it drops.
        data_change: the adds' `dataChange` (false for OPTIMIZE, true for DELETE).

    Raises:
        SparkError: a job failed, or a bin's new files do not hold exactly its rows.
    """
    from pyspark.sql import functions as F

    if keep is not None and zorder_by:
        raise WriteRefusedError("a row filter and Z-order cannot be combined")
    session = write_session(spark)
    fields = data_fields(snapshot)
    mode = snapshot.column_mapping_mode
    tracked = _materialized_fields(snapshot)
    removed = pa.concat_tables(bins)
    live = _live_rows(snapshot, removed)
    if dropped is not None:
        live = live - dropped
    bin_sizes = [b.num_rows for b in bins]
    starts = np.concatenate([[0], np.cumsum(bin_sizes)])
    expected = [int(live[starts[b] : starts[b + 1]].sum()) for b in range(len(bins))]
    in_bytes = int(pc.sum(removed.column("size")).as_py() or 0)
    total = int(live.sum())
    per_file = max(1, int(FILE_SLACK * target_size * max(total, 1) / max(in_bytes, 1)))
    written: list[NativeFile] = []
    parallelism = default_parallelism(spark)
    many_small = len(bins) > 4 * parallelism and in_bytes < SHUFFLE_BELOW * len(bins)
    if zorder_by or many_small:
        # One scan and a shuffle: Z-order needs the rows sorted; many small bins would spend
        # more time planning one scan each than shuffling their few bytes.
        bin_col = "dxbin"
        while bin_col in {f.physical_name.lower() if mode != "none" else f.name.lower() for f in fields}:
            bin_col += "_"
        read = fields if keep is None else [f for f in snapshot.schema.fields if f.type != PrimitiveType("void")]
        wanted = read + [f for f in snapshot.schema.fields if f.name in (zorder_by or []) and f not in read] + tracked
        rows = scan_files(session, snapshot, removed, wanted, with_ids=True, storage_options=storage_options)
        if keep is not None:
            rows = rows.where(keep)
        bin_of = pa.array([b for b, n in enumerate(bin_sizes) for _ in range(n)], pa.int32())
        ids = pa.table(
            {
                FILE_COL: pa.array(range(removed.num_rows), pa.int32()),
                "__dx_bin": bin_of,
                "__dx_base": removed.column("baseRowId"),
                "__dx_cv": removed.column("defaultRowCommitVersion"),
            }
        )
        rows = rows.join(F.broadcast(session.createDataFrame(ids)), on=FILE_COL)
        if zorder_by:
            rows = rows.withColumn("__dx_z", zorder_key(rows, zorder_by, total=total))
            tasks = max(len(bins), -(-in_bytes // target_size))
            rows = rows.repartitionByRange(tasks, "__dx_bin", "__dx_z").sortWithinPartitions("__dx_bin", "__dx_z")
        else:  # a bin stays in one task: one file per bin
            tasks = max(parallelism, min(len(bins), -(-in_bytes // target_size)))
            rows = rows.repartition(tasks, "__dx_bin").sortWithinPartitions("__dx_bin")
        kept = _row_tracking_columns(tracked, F.col("__dx_base"), F.col("__dx_cv"))
        out = rows.select(*physical_columns(fields, mode), *kept, F.col("__dx_bin").alias(bin_col))
        staging, files = write_native(
            session, out, table, partition_by=bin_col, groups=range(len(bins)), max_records_per_file=per_file
        )
        stagings.append(staging)
        written += files
    else:
        for start in range(0, len(bins), BINS_PER_JOB):
            chunk = bins[start : start + BINS_PER_JOB]
            frames = [_bin_frame(session, snapshot, b, fields, tracked, mode, storage_options, keep) for b in chunk]
            out = reduce(lambda a, b: a.union(b), frames)
            staging, files = write_native(session, out, table, max_records_per_file=per_file)
            stagings.append(staging)
            written += [NativeFile(f.path, f.size, f.modification_time, start + f.group) for f in files]
    first_pv = [b.column("partitionValues")[0].as_py() for b in bins]
    adds = native_adds(snapshot, written, [first_pv[f.group] for f in written], data_change=data_change)
    # Every bin's rows must be in its new files (a wrong task-to-bin mapping or a lost row fails here).
    group_of = {quote(f.path, safe="/="): f.group for f in written}
    got = [0] * len(bins)
    for path, stats in zip(adds.column("path").to_pylist(), adds.column("stats").to_pylist()):
        got[group_of[path]] += int(json.loads(stats)["numRecords"])
    if got != expected:
        bad = next(b for b in range(len(got)) if got[b] != expected[b])
        raise SparkError(
            f"Spark wrote {got[bad]} rows for bin {bad}, expected {expected[bad]}: nothing committed", path=table.uri
        )
    return adds


def _rewrite_python(
    spark: SparkSession, table: Table, snapshot: Snapshot, plan: OptimizePlan, storage_options: dict[str, Any] | None
) -> pa.Table:
    """The bins' rows written by Python tasks (`writer.write_files`); the add actions."""
    from pyspark.sql import functions as F

    removed = plan.files
    schema = snapshot.schema
    bin_of = pa.array([b for b, files in enumerate(plan.bins) for _ in range(files.num_rows)], pa.int32())
    rows = scan_files(spark, snapshot, removed, list(schema.fields), with_ids=True, storage_options=storage_options)
    bins = spark.createDataFrame(pa.table({FILE_COL: pa.array(range(removed.num_rows), pa.int32()), "__dx_bin": bin_of}))
    rows = rows.join(F.broadcast(bins), on=FILE_COL)
    in_bytes = int(pc.sum(removed.column("size")).as_py() or 0)
    tasks = max(len(plan.bins), -(-in_bytes // plan.target_size))
    names = [F.col(f"`{n}`") for n in schema.names]
    if plan.zorder_by:
        rows = rows.withColumn("__dx_z", zorder_key(rows, plan.zorder_by))
        rows = rows.repartitionByRange(tasks, "__dx_bin", "__dx_z").sortWithinPartitions("__dx_bin", "__dx_z")
    else:
        rows = rows.repartition(len(plan.bins), "__dx_bin")
    return write_files(
        spark,
        rows.select(*names),
        table,
        snapshot.metadata,
        snapshot.protocol,
        data_change=False,
        target_size=plan.target_size,
        check_rules=False,
        storage_options=storage_options,
    )


def purge_deletion_vectors(
    spark: SparkSession,
    uri: Any,
    *,
    partition_filter: Any = None,
    dry_run: bool = False,
    storage_options: dict[str, Any] | None = None,
) -> pa.Table:
    """Rewrite every file that carries a deletion vector (REORG ... APPLY (PURGE))."""
    return optimize(
        spark, uri, partition_filter=partition_filter, dry_run=dry_run, storage_options=storage_options, _dv_files_only=True
    )


def vacuum(
    spark: SparkSession,
    uri: Any,
    *,
    retention_hours: float | None = None,
    dry_run: bool = True,
    enforce_retention_duration: bool = True,
    storage_options: dict[str, Any] | None = None,
) -> pa.Table:
    """Delete files no retained version needs (a dry run by default).

    The core's `plan_vacuum` decides (retention check, default 7 days, shorter refused unless
    `enforce_retention_duration=False`; `vacuumProtocolCheck`; only files under the root);
    past `DRIVER_DELETES` files the deletes run on Spark executors (pyarrow only there).

    Returns:
        One row: operation, version, dry_run, retention_hours, num_files, num_bytes, files.
    """
    table = open_for_write(uri, storage_options)
    plan = plan_vacuum(table, retention_hours=retention_hours, enforce_retention_duration=enforce_retention_duration)
    paths = plan.files.column("path").to_pylist()
    if not dry_run and paths:
        if len(paths) <= DRIVER_DELETES:
            for path in paths:
                table.storage.delete(path)
        else:
            from pyspark.sql import types as T

            ship()
            listed = spark.createDataFrame(
                pa.table({"path": pa.array(paths, pa.string())}), schema=T.StructType([T.StructField("path", T.StringType())])
            )
            tasks = max(1, min(len(paths) // 200, default_parallelism(spark) * 4))
            with progress(spark, f"deltaexplore VACUUM {table.uri}"), spark_errors("VACUUM deletes", path=table.uri):
                listed.repartition(tasks).mapInArrow(path_deleter(table.storage.root, storage_options), "deleted long").collect()
    return plan.metrics(dry_run=dry_run)


def restore(
    spark: SparkSession,
    uri: Any,
    *,
    version: int | None = None,
    timestamp: Any = None,
    dry_run: bool = False,
    storage_options: dict[str, Any] | None = None,
) -> pa.Table:
    """Make the latest version equal to `version` (or the version at `timestamp`).

    A log-only operation (files are re-added or removed; no data is rewritten), done by the
    core: `spark` is accepted for a uniform API.
    """
    _ = spark
    return core_restore(uri, version=version, timestamp=timestamp, dry_run=dry_run, storage_options=storage_options)


def checkpoint(
    spark: SparkSession,
    uri: Any,
    *,
    version: int | None = None,
    kind: str = "auto",
    dry_run: bool = False,
    storage_options: dict[str, Any] | None = None,
) -> pa.Table:
    """Write a checkpoint of `version` (default latest) now (the core's checkpoint writer)."""
    _ = spark
    return core_checkpoint(uri, version=version, kind=kind, dry_run=dry_run, storage_options=storage_options)
