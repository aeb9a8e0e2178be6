"""Data layout: per-file value ranges of a column, how much they overlap, and what skipping can do.

Bounds come from the per-file statistics (partition columns use their partition values). All
computations run on integer ranks of the bounds (`pyarrow.compute.rank`, dense), so every
orderable type works the same way, vectorized with numpy:

- `overlapping_files`: other files whose [min, max] intersects a file's, by binary search over
  the sorted mins and maxes;
- depth D(x): files whose range contains the value x, a prefix sum over the ranks;
  `overlap_depth` of a file is the largest D over its range (a range-maximum query answered
  level by level with a sparse table that keeps one level in memory);
- `clustering_quality` = 1 - (mean depth - 1) / (files - 1): 1 when ranges are disjoint (a
  point query reads one file), 0 when every file overlaps every other.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.arrow import take_rows
from deltaexplore.core.protocol.schema import ArrayType, MapType, leaf_paths, to_arrow_type
from deltaexplore.core.scan.plan import partition_table
from deltaexplore.core.scan.stats import column_bounds, num_records
from deltaexplore.core.scan.stats_columns import physical_path, stats_columns
from deltaexplore.errors import ColumnNotFoundError, DeltaExploreError
from deltaexplore.inspect.file_columns import file_partitions
from deltaexplore.inspect.formatting import count_noun, human_count
from deltaexplore.inspect.results import conform
from deltaexplore.inspect.schemas import LAYOUT_SUMMARY_SCHEMA, layout_schema
from deltaexplore.inspect.snapshots import snapshot_cache, snapshot_of

if TYPE_CHECKING:
    from deltaexplore.core.snapshot import Snapshot
    from deltaexplore.core.table import Table

__all__ = [
    "BoundsOf",
    "clustering_columns",
    "coverage_and_depth",
    "known_num_records",
    "layout",
    "layout_columns_bounds",
    "layout_of_bounds",
    "layout_summary",
    "order_keys",
    "overlap_metrics",
    "point_query_files",
    "resolved_column",
    "sampled_coverage_and_depth",
    "stable_argsort",
    "summarize_layout",
]

_NO_STATS_TYPES = ("binary", "variant", "void")
DEFAULT_PREFIX_LENGTH = 32
DEFAULT_NUM_INDEXED_COLS = 32


# -- overlap metrics on ranks ------------------------------------------------------------------


def _range_max(values: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """max(values[lo[i]:hi[i]+1]) for every i (lo <= hi), O((n + q) log n) time, O(n) memory.

    A sparse table built level by level in two buffers used in turn (no fresh array per level:
    new large arrays are what costs most here); the queries of each level are answered when it
    is built."""
    out = np.empty(len(lo), dtype=values.dtype)
    if len(lo) == 0:
        return out
    length = hi - lo + 1
    _, exponent = np.frexp(length.astype(np.float64))
    k = (exponent - 1).astype(np.int8)  # floor(log2(length)), exact for integers
    order = np.argsort(k, kind="stable")  # radix sort on int8
    ks = k[order]
    bounds = np.searchsorted(ks, np.arange(int(ks[-1]) + 2))
    level, spare = values.copy(), np.empty_like(values)
    size = len(values)
    for j in range(int(ks[-1]) + 1):
        if j:
            step = 1 << (j - 1)
            np.maximum(level[: size - step], level[step:size], out=spare[: size - step])
            level, spare, size = spare, level, size - step
        sel = order[bounds[j] : bounds[j + 1]]
        if len(sel):
            width = 1 << j
            out[sel] = np.maximum(level[lo[sel]], level[hi[sel] - width + 1])
    return out


def _argsort(values: np.ndarray) -> np.ndarray:
    """Indices that sort `values` (numbers), ties in index order: what
    `np.argsort(values, kind="stable")` gives. numpy's default argsort (vectorized, not
    stable: 3-4x faster than the stable one or polars' sort by CPU time), then each run of
    equal values has its indices sorted, packed with the run's number in one word (one
    `np.sort` of the tied positions only)."""
    n = len(values)
    order = np.argsort(values)
    if n < 2:
        return order.astype(np.int64)
    ordered = values[order]
    if ordered.dtype.kind == "f" and np.isnan(ordered[-1]):  # NaN (sorted last) equals no NaN
        return np.argsort(values, kind="stable").astype(np.int64)
    same = ordered[1:] == ordered[:-1]
    if not same.any():
        return order.astype(np.int64)
    tied = np.zeros(n, bool)
    tied[1:] = same
    tied[:-1] |= same
    at = np.flatnonzero(tied)
    run = np.cumsum(np.concatenate([[False], ~same]))[at].astype(np.uint64)  # runs in sorted order
    bits = max(1, (n - 1).bit_length())
    keys = np.sort(run << np.uint64(bits) | order[at].astype(np.uint64))
    order = order.astype(np.int64)
    order[at] = (keys & np.uint64((1 << bits) - 1)).astype(np.int64)
    return order


#: `_argsort` for other modules: `np.argsort(values, kind="stable")` of numbers
stable_argsort = _argsort


def _merge_counts(sorted_lo: np.ndarray, sorted_hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`searchsorted(sorted_lo, sorted_hi, "right")` and `searchsorted(sorted_hi, sorted_lo, "left")`
    from one stable merge of the two sorted runs (timsort: linear), where each value's
    position counts the values of the other run before it (equal los come before his)."""
    n = len(sorted_lo)
    merged = np.argsort(np.concatenate([sorted_lo, sorted_hi]), kind="stable")
    position = np.empty(2 * n, dtype=np.int64)
    position[merged] = np.arange(2 * n, dtype=np.int64)
    counted = np.arange(n, dtype=np.int64)
    return position[n:] - counted, position[:n] - counted


_Sorted = tuple[np.ndarray, np.ndarray, np.ndarray]


def _start_depths(sorted_lo: np.ndarray, sorted_hi: np.ndarray) -> tuple[np.ndarray, ...]:
    """Over sorted starts and ends (numbers, no NaN): per end, the ranges starting at or before
    it; per start, the ranges ending before it, the first start equal to it, and the depth D
    there (ranges with lo <= x minus ranges with hi < x)."""
    n = len(sorted_lo)
    started, ended = _merge_counts(sorted_lo, sorted_hi)
    # runs of equal starts: where each begins, and the ranges started by its end
    new = np.ones(n, dtype=bool)
    new[1:] = sorted_lo[1:] != sorted_lo[:-1]
    begins = np.flatnonzero(new)
    run = np.cumsum(new) - 1
    return started, ended, begins[run], np.append(begins[1:], n)[run] - ended


def overlap_metrics(lo: np.ndarray, hi: np.ndarray) -> dict[str, np.ndarray]:
    """Per range [lo, hi] (any numeric keys, lo <= hi): overlapping ranges, depth, sort rank.

    Two stable sorts (by hi, then that order by lo: the order by (lo, hi) and file order,
    which is the rank order); every count is then a `searchsorted` of one sorted array into
    the other (sorted queries: linear merges, no random access). The depth D(x) only rises
    at a range start, so a range's overlap depth is the largest D over the starts inside it."""
    return _overlap(lo, hi)[0]


def point_query_files(lo: np.ndarray, hi: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Per point x: the files whose [lo, hi] contains x, the depth D(x) — what a point query
    for x reads after data skipping (two binary searches over the sorted bounds)."""
    order = np.argsort(points, kind="stable")  # sorted queries walk the bounds once
    at = np.sort(points)
    out = np.empty(len(points), np.int64)
    out[order] = np.searchsorted(np.sort(lo), at, "right") - np.searchsorted(np.sort(hi), at, "left")
    return out


def _overlap(lo: np.ndarray, hi: np.ndarray) -> tuple[dict[str, np.ndarray], _Sorted]:
    """`overlap_metrics`, and the sorted los and his with the depth D at each sorted lo (what
    `layout_density` bins)."""
    n = len(lo)
    if n == 0:
        z = np.zeros(0, np.int64)
        return {"overlapping_files": z, "overlap_depth": z, "rank": z}, (lo, hi, z)
    order_hi = _argsort(hi)
    order_lo = order_hi[_argsort(lo[order_hi])]
    sorted_lo, sorted_hi = lo[order_lo], hi[order_hi]

    def scatter(order: np.ndarray, values: np.ndarray) -> np.ndarray:
        out = np.empty(n, dtype=np.int64)
        out[order] = values
        return out

    started_sorted, ended_sorted, first_lo, depth_at = _start_depths(sorted_lo, sorted_hi)
    started = scatter(order_hi, started_sorted)
    overlapping = started - scatter(order_lo, ended_sorted) - 1
    # the largest depth over the starts within each range
    depth = _range_max(depth_at, scatter(order_lo, first_lo), started - 1)
    rank = scatter(order_lo, np.arange(n, dtype=np.int64))  # order by (lo, hi), ties by file order
    return {"overlapping_files": overlapping, "overlap_depth": depth, "rank": rank}, (sorted_lo, sorted_hi, depth_at)


_SIGN = np.int64(0x7FFFFFFFFFFFFFFF)


def _keys(values: pa.Array) -> np.ndarray | None:
    """int64 keys in the order of `values` (no nulls) without sorting them, or None for types
    that need ranks (strings, binary, wide decimals)."""
    t = values.type
    if pa.types.is_boolean(t) or pa.types.is_integer(t):
        return values.cast(pa.int64()).to_numpy(zero_copy_only=False)
    if pa.types.is_date(t) or pa.types.is_timestamp(t) or pa.types.is_time(t) or pa.types.is_duration(t):
        return values.view(pa.int64() if t.bit_width == 64 else pa.int32()).to_numpy(zero_copy_only=False).astype(np.int64)
    if pa.types.is_floating(t):
        f = values.cast(pa.float64()).to_numpy(zero_copy_only=False) + 0.0  # -0.0 == 0.0
        f = np.where(np.isnan(f), np.nan, f)  # one NaN, after +inf (as Arrow sorts)
        bits = f.view(np.int64)
        return np.where(bits < 0, bits ^ _SIGN, bits)
    if pa.types.is_decimal128(t) and t.precision <= 18 and len(values):
        words = np.frombuffer(values.buffers()[1], dtype=np.int64)
        return words[2 * values.offset : 2 * (values.offset + len(values)) : 2].copy()
    return None


def order_keys(mins: pa.Array, maxs: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """int64 keys of mins and maxes (no nulls) in one shared order: what `overlap_metrics` takes."""
    return _ranks(mins, maxs)


def _ranks(mins: pa.Array, maxs: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Order keys of mins and maxes in one shared order: the values themselves as int64 when the
    type allows, else dense ranks."""
    lo, hi = _keys(mins), _keys(maxs)
    if lo is not None and hi is not None:
        return lo, hi
    both = pa.concat_arrays([mins, maxs])
    ranks = pc.rank(both, sort_keys="ascending", tiebreaker="dense").to_numpy().astype(np.int64) - 1
    return ranks[: len(mins)], ranks[len(mins) :]


# -- column resolution -------------------------------------------------------------------------


def _resolve(snap: Snapshot, column: str) -> tuple[str, Any, bool]:
    """(logical name, StatsColumn-or-field, is_partition)."""
    if not isinstance(column, str):
        raise ColumnNotFoundError(f"a column name is a string, got {column!r}")
    schema = snap.schema
    parts = {p.lower(): p for p in snap.partition_columns}
    if column.lower() in parts:
        f = schema.get(parts[column.lower()])
        if f is not None:
            return f.name, f, True
    cols = stats_columns(schema, snap.column_mapping_mode, snap.partition_columns, None)
    for c in cols:
        if c.name == column or c.name.lower() == column.lower():
            return c.name, c, False
    names = [c.name for c in cols] + list(snap.partition_columns)
    raise ColumnNotFoundError(
        f"column {column!r} has no per-file statistics in {snap.table.uri} (columns with bounds: {', '.join(names)})"
    )


def _bounds(snap: Snapshot, adds: pa.Table, columns: list[str]) -> dict[str, dict[str, Any]]:
    """Per requested column: typed min, max, null_count, and the stats table's num_records.

    Kept per snapshot and column (`layout`, `layout_summary` and `layout_density` of one
    column read its bounds once)."""
    cache = snapshot_cache(snap).setdefault("bounds", {})
    names = [_resolve(snap, c)[0] for c in columns]
    missing = [n for n in names if n not in cache]
    if missing:
        cache.update(_read_bounds(snap, adds, missing))
    return {n: cache[n] for n in names}


def known_num_records(snap: Snapshot) -> pa.Array | None:
    """numRecords per active file as some column's bounds read them on their way (kept with
    them), when every file has one; None when no bounds were read or some count is missing
    (the stats search gives `num_records`' values; the parse agrees wherever it has one)."""
    for b in snapshot_cache(snap).get("bounds", {}).values():
        records = b.get("num_records")
        if records is not None and records.null_count == 0:
            return records
    return None


def layout_columns_bounds(snap: Snapshot, adds: pa.Table, columns: list[str]) -> dict[str, dict[str, Any]]:
    """`_bounds` of some add actions (a batch of a streaming pass: not kept), by resolved name."""
    return _read_bounds(snap, adds, [_resolve(snap, c)[0] for c in columns])


def _read_bounds(snap: Snapshot, adds: pa.Table, columns: list[str]) -> dict[str, dict[str, Any]]:
    resolved = [_resolve(snap, c) for c in columns]
    out: dict[str, dict[str, Any]] = {}
    stat_names = [name for name, _, is_part in resolved if not is_part]
    stats = column_bounds(snap, adds, stat_names) if stat_names else {}
    parts = partition_table(snap, adds) if any(is_part for _, _, is_part in resolved) else None
    for name, col, is_part in resolved:
        if is_part:
            assert parts is not None
            values = parts.column(name).combine_chunks()
            out[name] = {
                "min": values,
                "max": values,
                "null_count": None,
                "type": col.type,
                "physical": col.physical_name,
                "partition": True,
            }
        else:
            b = stats[name]
            out[name] = {
                "num_records": b.num_records,
                "min": b.min,
                "max": b.max,
                "null_count": b.null_count,
                "type": col.field.type,
                "physical": ".".join(col.physical),
                "partition": False,
            }
    return out


def _truncated(mins: pa.Array, maxs: pa.Array, prefix: int) -> pa.Array:
    if not pa.types.is_string(mins.type) and not pa.types.is_large_string(mins.type):
        return pa.array(np.zeros(len(mins), bool))
    long_min = pc.greater_equal(pc.utf8_length(mins), prefix)
    long_max = pc.greater_equal(pc.utf8_length(maxs), prefix)
    tie = pc.match_substring_regex(maxs, "[\ufffd\uffff\U0010ffff]$")
    out = pc.or_(pc.or_(pc.fill_null(long_min, False), pc.fill_null(long_max, False)), pc.fill_null(tie, False))
    return out


def _prefix_length(snap: Snapshot) -> int:
    try:
        return int(snap.properties.get("delta.dataSkippingStringPrefixLength", DEFAULT_PREFIX_LENGTH))
    except ValueError:
        return DEFAULT_PREFIX_LENGTH


def _metrics(mins: pa.Array, maxs: pa.Array) -> tuple[dict[str, np.ndarray], np.ndarray, _Sorted]:
    """Overlap metrics of the files with both bounds, the mask of those files, and their sorted
    keys with the depth at each sorted lo (`_overlap`)."""
    has = pc.and_(pc.is_valid(mins), pc.is_valid(maxs)).to_numpy(zero_copy_only=False).astype(bool)
    if has.all():
        lo, hi = _ranks(mins, maxs)
    elif has.any():
        take = pa.array(np.flatnonzero(has), pa.int64())
        lo, hi = _ranks(mins.take(take), maxs.take(take))
    else:
        lo, hi = np.zeros(0, np.int64), np.zeros(0, np.int64)
    swap = lo > hi  # malformed stats: keep the range well-formed
    if swap.any():
        lo, hi = np.where(swap, hi, lo), np.where(swap, lo, hi)
    metrics, keys = _overlap(lo, hi)
    return metrics, has, keys


def _column_metrics(b: dict[str, Any]) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """`_metrics` of one column's bounds, kept with them (the bounds are kept per snapshot);
    the sorted keys go to `b["sorted_keys"]` (`layout_density` takes them when they fit)."""
    if "metrics" not in b:
        values, has, b["sorted_keys"] = _metrics(b["min"], b["max"])
        b["metrics"] = values, has
    metrics: tuple[dict[str, np.ndarray], np.ndarray] = b["metrics"]
    return metrics


def _coverage_and_depth(metrics: dict[str, np.ndarray], has: np.ndarray) -> tuple[float | None, float | None]:
    """(coverage, avg_depth) as `summarize_layout` defines them from one column's metrics."""
    n, k = len(has), int(has.sum())
    return (k / n if n else None), (float(metrics["overlap_depth"].mean()) if k else None)


def coverage_and_depth(snap: Snapshot, column: str) -> tuple[float | None, float | None]:
    """`layout_summary`'s coverage and avg_depth of one column (its bounds and metrics kept
    per snapshot, as `layout` and `layout_summary` keep them)."""
    adds = snap.add_actions()
    if not adds.num_rows:
        return None, None
    b = _bounds(snap, adds, [column])[_resolve(snap, column)[0]]
    return _coverage_and_depth(*_column_metrics(b))


def sampled_coverage_and_depth(
    snap: Snapshot, adds: pa.Table, columns: list[str], rows: np.ndarray
) -> dict[str, tuple[float | None, float | None]]:
    """Per column (data columns: their statistics), the coverage and avg_depth of the files
    `rows` (increasing) of `adds` alone (nothing kept)."""
    # what the stats search and parse read (a take of every column of a million adds costs
    # ~20x more), in one chunk
    stats = adds.select([c for c in ("path", "stats", "stats_parsed") if c in adds.column_names])
    sample = take_rows(stats, rows).combine_chunks()
    found = _read_bounds(snap, sample, columns)
    out = {}
    for name, b in found.items():
        metrics, has, _ = _metrics(b["min"], b["max"])
        out[name] = _coverage_and_depth(metrics, has)
    return out


def _scatter(values: np.ndarray, has: np.ndarray) -> pa.Array:
    if len(values) == len(has):  # every file has bounds: no copy
        return pa.array(values)
    full = np.zeros(len(has), np.int64)
    full[has] = values
    return pa.array(full, mask=~has)


def layout(obj: Table | Snapshot, column: str, *, version: int | None = None) -> pa.Table:
    """Per-file value ranges of `column` and how they overlap (`schemas.layout_schema(type)`).

    Columns: path, partition, size, num_records, null_count, min, max (the column's type;
    partition values for a partition column), has_stats, truncated (string bounds that look
    truncated: at least `delta.dataSkippingStringPrefixLength` (32) characters or ending with a
    tie-breaker character), rank (order by (min, max)), overlapping_files (other files whose
    range intersects) and overlap_depth (the most files, this one included, that contain a
    single value of this file's range: what a point query landing here must read). Files
    without bounds have null metrics. Rows are in the snapshot's file order.

    Raises:
        ColumnNotFoundError: the column has no per-file bounds.
    """
    snap = snapshot_of(obj, version)
    adds = snap.add_actions()
    name = _resolve(snap, column)[0]
    b = _bounds(snap, adds, [name])[name]
    records = b.get("num_records")
    files = pa.table(
        {
            "path": adds.column("path"),
            "partition": file_partitions(snap),
            "size": adds.column("size"),
            "num_records": records if records is not None else num_records(adds),
        }
    )
    return layout_of_bounds(snap, files, b)


def layout_of_bounds(snap: Snapshot, files: pa.Table, b: dict[str, Any]) -> pa.Table:
    """`layout`'s table from the files' `path`, `partition`, `size` and `num_records` and one
    column's bounds `b` (`layout_columns_bounds`, merged; rows in the same order): what a
    streaming pass or Spark job that kept those builds it from. The metrics are kept in `b`."""
    mins, maxs = b["min"], b["max"]
    metrics, has = _column_metrics(b)
    value_type = to_arrow_type(b["type"])
    cols = {
        "path": files.column("path"),
        "partition": files.column("partition"),
        "size": files.column("size"),
        "num_records": files.column("num_records"),
        "null_count": b["null_count"],
        "min": mins,
        "max": maxs,
        "has_stats": pa.array(has),
        "truncated": _truncated(mins, maxs, _prefix_length(snap)),
        "rank": _scatter(metrics["rank"], has),
        "overlapping_files": _scatter(metrics["overlapping_files"], has),
        "overlap_depth": _scatter(metrics["overlap_depth"], has),
    }
    return conform(cols, layout_schema(value_type))


def resolved_column(snap: Snapshot, column: str) -> str:
    """The name `layout_columns_bounds` keys `column`'s bounds by.

    Raises:
        ColumnNotFoundError: the column has no per-file bounds.
    """
    return _resolve(snap, column)[0]


# -- per-column summary ------------------------------------------------------------------------


def clustering_columns(snap: Snapshot) -> list[tuple[str, ...]]:
    """Physical paths of the liquid clustering columns (from the `delta.clustering` domain)."""
    dom = snap.domain_metadata().get("delta.clustering")
    if dom is None:
        return []
    conf = dom.config
    cols = conf.get("clusteringColumns") if isinstance(conf, dict) else None
    out = []
    for c in cols or []:
        if isinstance(c, list):
            out.append(tuple(str(x) for x in c))
        elif isinstance(c, str):
            out.append(tuple(c.split(".")))
    return out


def _indexed(snap: Snapshot) -> tuple[set[str] | None, int]:
    props = snap.properties
    listed = props.get("delta.dataSkippingStatsColumns")
    if listed:
        return {c.strip().strip("`").lower() for c in listed.split(",") if c.strip()}, -1
    try:
        n = int(props.get("delta.dataSkippingNumIndexedCols", DEFAULT_NUM_INDEXED_COLS))
    except ValueError:
        n = DEFAULT_NUM_INDEXED_COLS
    return None, n


def layout_summary(obj: Table | Snapshot, columns: list[str] | None = None, *, version: int | None = None) -> pa.Table:
    """Per column: stats coverage, data-skipping eligibility and clustering quality (`LAYOUT_SUMMARY_SCHEMA`).

    One row per leaf column (nested struct fields dotted; arrays and maps have no bounds) and per
    partition column, or only `columns`. Columns: column, physical_name, type, position (leaf
    index counted by `delta.dataSkippingNumIndexedCols`), is_partition, is_clustering,
    eligible_type, indexed (writers collect stats: first `dataSkippingNumIndexedCols` (32) leaves
    or `dataSkippingStatsColumns`), files, files_with_min_max, files_with_null_count, coverage,
    truncated_files, min/max (text), avg_depth, max_depth, clustering_quality, skipping
    (partition | stats | partial | none) and reason.
    """
    snap = snapshot_of(obj, version)
    adds = snap.add_actions()
    return summarize_layout(snap, columns, files=adds.num_rows, bounds=lambda names: _bounds(snap, adds, names))


#: bounds of some columns by logical name: per column a dict with `min`, `max` (the column's
#: type) and `null_count` (None for a partition column), one value per active file
BoundsOf = Callable[[list[str]], dict[str, dict[str, Any]]]


def summarize_layout(snap: Snapshot, columns: list[str] | None, *, files: int, bounds: BoundsOf) -> pa.Table:
    """`layout_summary` of `snap` from per-file bounds some engine read (`bounds`: this
    module's for the local files table, `deltaexplore.spark.inspect` or the streaming pass
    others) over its `files` active files: the one definition of every column of the summary."""
    schema = snap.schema
    n = files
    parts = list(snap.partition_columns)
    part_lower = {p.lower() for p in parts}
    listed, num_indexed = _indexed(snap)
    clustering = {tuple(p.lower() for p in c) for c in clustering_columns(snap)}
    mode = snap.column_mapping_mode
    prefix = _prefix_length(snap)
    entries: list[dict[str, Any]] = []
    position = 0
    for logical, f in leaf_paths(schema):
        name = ".".join(logical)
        is_part = len(logical) == 1 and logical[0].lower() in part_lower
        phys = physical_path(schema, logical, mode)
        complex_type = isinstance(f.type, (ArrayType, MapType))
        eligible = not complex_type and f.type.name not in _NO_STATS_TYPES
        if is_part:
            indexed = True
        elif listed is not None:
            indexed = any(name.lower() == c or name.lower().startswith(c + ".") for c in listed)
        else:
            indexed = num_indexed < 0 or position < num_indexed
        entries.append(
            {
                "column": name,
                "physical_name": ".".join(phys),
                "type": str(f.type),
                "position": None if is_part else position,
                "is_partition": is_part,
                "is_clustering": tuple(p.lower() for p in phys) in clustering,
                "eligible_type": eligible or is_part,
                "indexed": indexed,
            }
        )
        if not is_part:
            position += 1
    if columns is not None:
        wanted = {c.lower() for c in columns}
        known = {e["column"].lower() for e in entries}
        missing = [c for c in columns if c.lower() not in known]
        if missing:
            raise ColumnNotFoundError(
                f"columns {missing} are not in the table (columns: {', '.join(e['column'] for e in entries)})"
            )
        entries = [e for e in entries if e["column"].lower() in wanted]
    with_bounds = [e["column"] for e in entries if e["eligible_type"]]
    found = bounds(with_bounds) if with_bounds and n else {}
    # columns' overlap metrics side by side (numpy, Arrow and polars release the GIL)
    with ThreadPoolExecutor(max_workers=min(os.cpu_count() or 1, 4)) as pool:
        measured = dict(zip(found, pool.map(_column_metrics, found.values())))
    for e in entries:
        b = found.get(e["column"])
        e["files"] = n
        if b is None:
            e.update(files_with_min_max=0, files_with_null_count=0, coverage=0.0 if n else None, truncated_files=0)
        else:
            metrics, has = measured[e["column"]]
            k = int(has.sum())
            nulls = b["null_count"]
            e["files_with_min_max"] = k
            e["files_with_null_count"] = n if nulls is None else int(pc.sum(pc.is_valid(nulls).cast(pa.int64())).as_py() or 0)
            e["coverage"] = k / n if n else None
            e["truncated_files"] = int(pc.sum(_truncated(b["min"], b["max"], prefix).cast(pa.int64())).as_py() or 0)
            if k:
                e["min"] = _text(pc.min(b["min"]))
                e["max"] = _text(pc.max(b["max"]))
                depth = metrics["overlap_depth"]
                e["avg_depth"] = float(depth.mean())
                e["max_depth"] = int(depth.max())
                e["clustering_quality"] = 1.0 - (e["avg_depth"] - 1.0) / (k - 1) if k > 1 else 1.0
        e["skipping"], e["reason"] = _skipping(e, num_indexed, listed is not None)
    cols = {f.name: [e.get(f.name) for e in entries] for f in LAYOUT_SUMMARY_SCHEMA}
    return conform(cols, LAYOUT_SUMMARY_SCHEMA)


def _text(scalar: pa.Scalar) -> str | None:
    value = scalar.as_py()
    if value is None:
        return None
    if isinstance(value, bytes):
        return value.hex()
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


def _skipping(e: dict[str, Any], num_indexed: int, listed: bool) -> tuple[str, str | None]:
    if e["is_partition"]:
        return "partition", None
    if not e["eligible_type"]:
        return "none", f"{e['type']} columns have no min/max statistics"
    files, k = e["files"], e["files_with_min_max"]
    if files == 0:
        return "none", "the table has no files"
    if k == files:
        return "stats", None
    if not e["indexed"]:
        why = "not in delta.dataSkippingStatsColumns" if listed else f"beyond the first {num_indexed} indexed columns"
        return ("partial" if k else "none"), f"writers skip statistics for it ({why})"
    if k == 0:
        return "none", "no file has min/max statistics for it"
    return "partial", f"{human_count(files - k)} of {count_noun(files, 'file')} lack min/max statistics for it"


def clustering_view(snap: Snapshot) -> list[dict[str, Any]]:
    """Rows for `clustering()`: clustering columns with their layout metrics."""
    phys_cols = clustering_columns(snap)
    if not phys_cols:
        return []
    schema = snap.schema
    mode = snap.column_mapping_mode
    by_phys = {tuple(p.lower() for p in physical_path(schema, logical, mode)): (logical, f) for logical, f in leaf_paths(schema)}
    rows = []
    for i, phys in enumerate(phys_cols):
        found = by_phys.get(tuple(p.lower() for p in phys))
        logical_name = ".".join(found[0]) if found else None
        row: dict[str, Any] = {
            "position": i,
            "column": logical_name,
            "physical_path": ".".join(phys),
            "type": str(found[1].type) if found else None,
        }
        if logical_name is not None:
            try:
                summary = layout_summary(snap, [logical_name]).to_pylist()[0]
                row.update(
                    coverage=summary["coverage"],
                    avg_depth=summary["avg_depth"],
                    max_depth=summary["max_depth"],
                    clustering_quality=summary["clustering_quality"],
                )
            except DeltaExploreError as exc:
                row["type"] = f"{row['type']} ({exc})"
        rows.append(row)
    return rows


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)
