"""The file-size histogram: files and bytes per power-of-two size bin.

A file of `size` bytes falls in bin `e = floor(log2(max(size, 1)))`: [2^e, 2^(e+1)). Every engine
counts the same bins (`size_exponents` here; Spark and the streaming pass compute `e` with
integer arithmetic to the same values), then `finish_file_sizes` shapes them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.inspect.files import files as files_table
from deltaexplore.inspect.results import conform
from deltaexplore.inspect.schemas import FILE_SIZES_SCHEMA
from deltaexplore.inspect.snapshots import snapshot_of

if TYPE_CHECKING:
    from deltaexplore.core.snapshot import Snapshot
    from deltaexplore.core.table import Table

__all__ = ["SIZE_AGGREGATES", "file_sizes", "finish_file_sizes", "size_aggregates", "size_exponents"]

#: what an engine counts per size bin (`exponent` = e of the bin [2^e, 2^(e+1)))
SIZE_AGGREGATES = ("exponent", "files", "bytes", "small_files")


def size_exponents(sizes: np.ndarray) -> np.ndarray:
    """`floor(log2(max(size, 1)))` of every size, exactly: `frexp` reads the float's exponent
    (no rounding of a logarithm puts a power of two in the bin below), then sizes the float
    rounded up to the next power of two (past 2^53) are moved back one bin."""
    exact = np.maximum(sizes, 1).astype(np.uint64)
    exp = (np.frexp(exact.astype(np.float64))[1] - 1).astype(np.int64)
    return exp - (np.left_shift(np.uint64(1), exp.astype(np.uint64)) > exact)


def size_aggregates(sizes: np.ndarray, is_small: np.ndarray) -> pa.Table:
    """`SIZE_AGGREGATES` of some files (sizes as int64, `is_small` as bool)."""
    if len(sizes) == 0:
        return pa.table({n: pa.array([], pa.int64()) for n in SIZE_AGGREGATES})
    exp = size_exponents(sizes)
    low = int(exp.min())
    uniq, counts = np.unique(exp, return_counts=True)
    at = uniq - low
    return pa.table(
        {
            "exponent": uniq,
            "files": counts.astype(np.int64),
            "bytes": np.bincount(exp - low, weights=sizes.astype(np.float64))[at].astype(np.int64)
            if sizes.max(initial=0) < 1 << 53
            else np.array([int(sizes[exp == e].sum()) for e in uniq], np.int64),
            "small_files": np.bincount(exp - low, weights=is_small.astype(np.int64))[at].astype(np.int64),
        }
    )


def finish_file_sizes(aggregates: pa.Table) -> pa.Table:
    """`FILE_SIZES_SCHEMA` from per-bin `SIZE_AGGREGATES` (any engine's; bins may repeat: they
    are summed), smallest bin first."""
    if aggregates.num_rows == 0:
        return FILE_SIZES_SCHEMA.empty_table()
    grouped = aggregates.group_by("exponent").aggregate([("files", "sum"), ("bytes", "sum"), ("small_files", "sum")])
    grouped = grouped.sort_by("exponent")
    exp = grouped.column("exponent").to_numpy().astype(np.int64)
    # the last bin a long holds, [2^62, 2^63), ends at the largest long
    end = np.where(exp >= 62, np.iinfo(np.int64).max, np.left_shift(np.int64(1), np.minimum(exp + 1, 62)))
    return conform(
        {
            "bin_start": pa.array(np.left_shift(np.int64(1), exp), pa.int64()),
            "bin_end": pa.array(end, pa.int64()),
            "files": grouped.column("files_sum"),
            "bytes": grouped.column("bytes_sum"),
            "small_files": grouped.column("small_files_sum"),
        },
        FILE_SIZES_SCHEMA,
    )


def file_sizes(obj: Table | Snapshot, *, version: int | None = None, small_file_bytes: int | None = None) -> pa.Table:
    """Files per size bin (powers of two), smallest first (`FILE_SIZES_SCHEMA`).

    Columns: bin_start, bin_end (a file of `size` bytes is in the bin with bin_start <= size <
    bin_end; empty files in the first bin, [1, 2)), files, bytes, small_files (files under
    `small_file_bytes`: `delta.targetFileSize` / 2, else 128 MiB, as `files()` says). Only bins
    with files are listed.
    """
    snap = snapshot_of(obj, version)
    f = files_table(snap, small_file_bytes=small_file_bytes).select(["size", "is_small"])
    f = f.filter(pc.is_valid(f.column("size"))) if f.column("size").null_count else f
    sizes = f.column("size").to_numpy().astype(np.int64) if f.num_rows else np.zeros(0, np.int64)
    small = f.column("is_small").to_numpy(zero_copy_only=False).astype(bool) if f.num_rows else np.zeros(0, bool)
    return finish_file_sizes(size_aggregates(sizes, small))
