"""OPTIMIZE (bin-packing compaction, optional Z-order) and deletion vector purge.

`plan_optimize` is the engine-neutral part shared with Spark: per partition (optionally only
those matching a partition filter) it picks the files worth rewriting — files smaller than the
target size and files whose deletion vectors hide more than `max_deleted_rows_ratio` of their
rows — and packs them into bins of about the target size. A bin of one small file without
deletes is left alone. `optimize` rewrites each bin locally (rows with deletion vectors applied,
row tracking ids preserved in the materialized columns) and commits removes and adds with
`dataChange=false`. `purge_deletion_vectors` rewrites every file that carries a DV.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.arguments import count
from deltaexplore.core.arrow import take_rows
from deltaexplore.core.log.catalog import CatalogClient
from deltaexplore.core.operations.engine import OPTIMIZE_METRICS, OperationRun, open_for_write, total_bytes
from deltaexplore.core.operations.rewrite import read_files_for_rewrite
from deltaexplore.core.protocol.predicates import parse_predicate
from deltaexplore.core.scan.data_file import row_counts
from deltaexplore.core.scan.partition_values import partition_groups, partition_keys
from deltaexplore.core.snapshot import Snapshot
from deltaexplore.core.table import Table
from deltaexplore.core.write.data_writer import DEFAULT_TARGET_FILE_SIZE, write_data_files
from deltaexplore.errors import WriteRefusedError

__all__ = ["OptimizePlan", "optimize", "plan_optimize", "purge_deletion_vectors", "zorder_indices"]


@dataclass
class OptimizePlan:
    """Bins of files to rewrite together (each a table of add actions)."""

    snapshot: Snapshot
    bins: list[pa.Table] = field(default_factory=list)
    target_size: int = DEFAULT_TARGET_FILE_SIZE
    considered_files: int = 0
    zorder_by: list[str] = field(default_factory=list)

    @property
    def files(self) -> pa.Table:
        if not self.bins:
            return self.snapshot.add_actions().slice(0, 0)
        return pa.concat_tables(self.bins)

    def metrics(self) -> dict[str, Any]:
        """The numbers of the plan (`OPTIMIZE_METRICS`), before anything is written."""
        removed = self.files
        dv = removed.column("deletionVector").combine_chunks() if removed.num_rows else pa.array([], pa.null())
        purged = int(pc.sum(dv.field("cardinality")).as_py() or 0) if removed.num_rows and dv.null_count < len(dv) else 0
        return {
            "num_bins": len(self.bins),
            "num_files_removed": removed.num_rows,
            "num_files_added": 0,
            "bytes_removed": total_bytes(removed),
            "bytes_added": 0,
            "num_partitions_optimized": len({partition_keys(self.snapshot, b)[0].as_py() for b in self.bins}),
            "total_considered_files": self.considered_files,
            "num_deleted_rows_purged": purged,
        }

    def start(self, table: Table, operation: str, *, partition_filter: Any = None, dry_run: bool = False) -> OperationRun:
        """The OPTIMIZE (or REORG) of this plan on `table`: its transaction and metrics row."""
        parameters = {
            "predicate": json.dumps([str(partition_filter)] if partition_filter is not None else []),
            "zOrderBy": json.dumps(self.zorder_by),
        }
        return OperationRun.start(
            table,
            operation,
            OPTIMIZE_METRICS,
            read_snapshot=self.snapshot,
            parameters=parameters,
            dry_run=dry_run,
            metrics=self.metrics(),
        )


def _target_size(snapshot: Snapshot, target_size: int | None) -> int:
    size = count(target_size, "target_size", positive=True)
    if size is not None:
        return size
    value = snapshot.properties.get("delta.targetFileSize")
    try:
        size = int(value) if value else DEFAULT_TARGET_FILE_SIZE
    except ValueError:
        return DEFAULT_TARGET_FILE_SIZE
    return size if 0 < size < 1 << 63 else DEFAULT_TARGET_FILE_SIZE


def plan_optimize(
    snapshot: Snapshot,
    *,
    target_size: int | None = None,
    partition_filter: Any = None,
    max_deleted_rows_ratio: float = 0.05,
    dv_files_only: bool = False,
    zorder_by: list[str] | None = None,
) -> OptimizePlan:
    """Choose the bins of an OPTIMIZE (see the module docstring).

    Args:
        partition_filter: only partitions matching this predicate (partition columns only).
        max_deleted_rows_ratio: files whose DVs delete more than this share are rewritten.
        dv_files_only: only files with deletion vectors (DV purge).
        zorder_by: Z-order these columns: every file of a partition is rewritten together.

    Raises:
        WriteRefusedError: the filter uses non-partition columns, or an unknown Z-order column.
    """
    target = _target_size(snapshot, target_size)
    expr = parse_predicate(partition_filter)
    parts = {p.lower() for p in snapshot.partition_columns}
    if expr is not None and not {c.lower() for c in expr.columns()} <= parts:
        raise WriteRefusedError(
            f"OPTIMIZE partition filter {partition_filter!r} may only use partition columns {snapshot.partition_columns}"
        )
    zorder = list(zorder_by or [])
    for c in zorder:
        f = snapshot.schema.get(c)
        if f is None:
            raise WriteRefusedError(f"Z-order column {c!r} is not in the table (columns: {', '.join(snapshot.schema.names)})")
        if f.name.lower() in parts:
            raise WriteRefusedError(f"Z-order column {c!r} is a partition column: Z-order by data columns only")
    files = snapshot.scan(where=expr).files
    outside = snapshot.storage.outside(files.column("path"))
    if outside.any():  # data outside the root is read, never copied into the table
        files = files.filter(pa.array(~outside))
    plan = OptimizePlan(snapshot, target_size=target, considered_files=files.num_rows, zorder_by=zorder)
    if files.num_rows == 0:
        return plan
    sizes = files.column("size").to_numpy(zero_copy_only=False).astype(np.int64)
    dv = files.column("deletionVector").combine_chunks()
    has_dv = pc.is_valid(dv).to_numpy(zero_copy_only=False) if len(dv) else np.zeros(0, bool)
    deleted = np.zeros(files.num_rows, dtype=np.int64)
    if has_dv.any():
        card = pc.fill_null(pc.if_else(pc.is_valid(dv), dv.field("cardinality"), pa.scalar(0, pa.int64())), 0)
        deleted = card.to_numpy(zero_copy_only=False).astype(np.int64)
    ratio = np.zeros(files.num_rows)
    if has_dv.any():
        counts = row_counts(snapshot, files)
        ratio = np.where(counts > 0, deleted / np.maximum(counts, 1), 0.0)
    must = has_dv if dv_files_only else (ratio > max_deleted_rows_ratio)
    small = np.zeros(files.num_rows, bool) if dv_files_only else sizes < target
    group = partition_groups(snapshot, files)
    if zorder:  # Z-order rewrites whole partitions
        order = np.argsort(group, kind="stable")
        plan.bins.extend(_bins(files, np.split(order, np.flatnonzero(np.diff(group[order])) + 1)))
        return plan
    cand = np.flatnonzero(must | small)
    cand = cand[np.lexsort((sizes[cand], group[cand]))]  # by partition, smallest first
    # Greedy packing in one pass over plain ints (no Python object per file beyond them).
    bin_of = np.empty(len(cand), dtype=np.int64)
    c_sizes, c_groups = sizes[cand].tolist(), group[cand].tolist()
    current_bin, current_size, current_group = -1, 0, None
    for k, (size, g) in enumerate(zip(c_sizes, c_groups)):
        if g != current_group or (current_size and current_size + size > target):
            current_bin, current_size, current_group = current_bin + 1, 0, g
        current_size += size
        bin_of[k] = current_bin
    if len(cand):
        bounds = np.flatnonzero(np.diff(bin_of)) + 1
        plan.bins.extend(_bins(files, [idx for idx in np.split(cand, bounds) if len(idx) > 1 or must[idx[0]]]))
    return plan


def _bins(files: pa.Table, bins: list[np.ndarray]) -> list[pa.Table]:
    """The add actions of each bin: one take of every bin's rows, then a slice per bin (a take
    per bin walked the whole files table once per bin: minutes at 1M files)."""
    if not bins:
        return []
    taken = take_rows(files, np.concatenate(bins))
    ends = np.cumsum([len(b) for b in bins])
    return [taken.slice(int(end - len(b)), len(b)) for b, end in zip(bins, ends)]


def zorder_indices(data: pa.Table, columns: list[str]) -> np.ndarray:
    """Row order that sorts `data` along a Z-order curve of `columns` (ranks interleaved bit by bit)."""
    n = data.num_rows
    if n == 0 or not columns:
        return np.arange(n)
    bits = max(1, 63 // len(columns))
    ranks = []
    import polars as pl

    for c in columns:
        values = pl.Series(data.column(c).combine_chunks())
        ranked = values.rank("dense")  # 1..distinct values
        ranked = ranked.fill_null(0) if values.null_count() else ranked - 1  # nulls first, else from 0
        r = ranked.to_numpy().astype(np.float64)
        # spread the ranks over the whole bit width, so the top bit splits the values in half
        # (ranks 0..16 would put 16 alone on a fifth bit, and half the curve on one value)
        ranks.append((r * float(1 << bits) / (r.max() + 1)).astype(np.uint64))
    z = np.zeros(n, dtype=np.uint64)
    for b in range(bits - 1, -1, -1):
        for r in ranks:
            z = (z << np.uint64(1)) | ((r >> np.uint64(b)) & np.uint64(1))
    return np.argsort(z, kind="stable")


def optimize(
    table: Table | str | os.PathLike[str],
    *,
    target_size: int | None = None,
    partition_filter: Any = None,
    max_deleted_rows_ratio: float = 0.05,
    zorder_by: list[str] | None = None,
    dry_run: bool = False,
    storage_options: dict[str, Any] | None = None,
    catalog: CatalogClient | None = None,
    max_retries: int = 10,
    _dv_files_only: bool = False,
) -> pa.Table:
    """Compact small files (and files with many deleted rows) into files of about `target_size`.

    Returns:
        One row of metrics: operation, version (null for a dry run / nothing to do), dry_run,
        num_bins, num_files_removed, num_files_added, bytes_removed, bytes_added,
        num_partitions_optimized, total_considered_files, num_deleted_rows_purged.
    """
    t = open_for_write(table, storage_options, catalog)
    snapshot = t.snapshot()
    plan = plan_optimize(
        snapshot,
        target_size=target_size,
        partition_filter=partition_filter,
        max_deleted_rows_ratio=max_deleted_rows_ratio,
        dv_files_only=_dv_files_only,
        zorder_by=zorder_by,
    )
    operation = "REORG" if _dv_files_only else "OPTIMIZE"
    with plan.start(t, operation, partition_filter=partition_filter, dry_run=dry_run) as op:
        if dry_run or not plan.bins:
            return op.result()
        md = snapshot.metadata
        for files in plan.bins:
            rows, extra = read_files_for_rewrite(snapshot, files)
            if plan.zorder_by:
                rows = rows.take(pa.array(zorder_indices(rows, plan.zorder_by), pa.int64()))
            adds = op.written(
                write_data_files(
                    t.storage,
                    rows,
                    schema=snapshot.schema,
                    partition_columns=md.partition_columns,
                    mode=snapshot.column_mapping_mode,
                    configuration=md.configuration,
                    target_file_size=plan.target_size,
                    data_change=False,
                    extra_columns=extra,
                    existing_partitions=True,
                )
            )
            op.txn.remove_files(files, data_change=False)
            op.txn.add_files(adds)
            op.metrics["num_files_added"] += adds.num_rows
            op.metrics["bytes_added"] += total_bytes(adds)
        return op.commit(max_retries=max_retries)


def purge_deletion_vectors(
    table: Table | str | os.PathLike[str],
    *,
    partition_filter: Any = None,
    dry_run: bool = False,
    storage_options: dict[str, Any] | None = None,
    catalog: CatalogClient | None = None,
) -> pa.Table:
    """Rewrite every file that carries a deletion vector (REORG ... APPLY (PURGE))."""
    return optimize(
        table,
        partition_filter=partition_filter,
        dry_run=dry_run,
        storage_options=storage_options,
        catalog=catalog,
        _dv_files_only=True,
    )
