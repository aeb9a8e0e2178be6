"""The maintenance advisor: what to run on this table, in what order, and what it will change.

Every recommendation comes from the planners and metrics that already exist, so a prediction
means what running the operation means: compaction and DV purge are `plan_optimize`'s bins (live
bytes of each bin / target size = the files it writes), Z-order is simulated on the per-file
bounds (`simulate_zorder`), VACUUM is `vacuum_preview`, log cleanup `plan_log_cleanup`, the
checkpoint advice `log_health`'s rule (more commits since the last checkpoint than
`delta.checkpointInterval`), depths are `layout`'s overlap metrics and the files a point query
reads `layout.point_query_files`. Nothing is written.

The Z-order what-if: each file's rows are sampled uniformly inside its [min, max] box of the
chosen columns (as many samples as its share of the live rows, 100k in all, seeded), every
partition's samples are put in the order the one Z-order definition gives
(`operations.zorder_indices`) and cut into the files that partition's live bytes fill at the
target size; those files' ranges are the predicted layout. `advise(check=True)` redoes the
prediction at the version before the newest OPTIMIZE / REORG and compares it with the version
after it (`ADVICE_CHECK_SCHEMA`, with the tolerances of `TOLERANCE`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.arrow import combined
from deltaexplore.core.operations import plan_optimize
from deltaexplore.core.operations.optimize import FileFacts, OptimizePlan, file_facts, zorder_keys
from deltaexplore.core.operations.vacuum import list_vacuumable, relative_paths, vacuum_partition_names
from deltaexplore.core.protocol.config import DEFAULT_DELETED_FILE_RETENTION_MS
from deltaexplore.core.scan.data_file import row_counts
from deltaexplore.core.scan.partition_values import partition_keys
from deltaexplore.core.write.log_cleanup import plan_log_cleanup
from deltaexplore.errors import DeltaExploreError
from deltaexplore.inspect.deletion_vectors import deleted_ratio, deletion_vectors, past_threshold
from deltaexplore.inspect.errors import InspectError
from deltaexplore.inspect.file_columns import dv_cardinality
from deltaexplore.inspect.layout import (
    clustering_columns,
    coverage_and_depth,
    known_num_records,
    layout,
    layout_summary,
    overlap_metrics,
    point_query_files,
    sampled_coverage_and_depth,
    stable_argsort,
)
from deltaexplore.inspect.log_health import commits_since_checkpoint
from deltaexplore.inspect.results import conform
from deltaexplore.inspect.retention import vacuum_preview
from deltaexplore.inspect.schemas import ADVICE_CHECK_SCHEMA, ADVICE_SCHEMA
from deltaexplore.inspect.snapshots import snapshot_of, table_of

if TYPE_CHECKING:
    from deltaexplore.core.snapshot import Snapshot
    from deltaexplore.core.table import Table

__all__ = ["TOLERANCE", "advise", "check_advice", "simulate_zorder"]

SAMPLES = 100_000
#: relative tolerance per checked metric (a difference of one file / one depth step always passes)
TOLERANCE = {"files": 0.3, "bytes": 0.3, "mean_depth": 0.5, "max_depth": 0.5, "point_files": 0.5}
#: a Z-order is advised (unasked) when point queries read at least this many files and it cuts them by 30%
MIN_POINT_FILES = 2.0


# -- per-file numbers ------------------------------------------------------------------------


def _live_fraction(snap: Snapshot, adds: pa.Table) -> np.ndarray:
    """Live rows / physical rows per file (1 without DV)."""
    if adds.num_rows == 0:
        return np.zeros(0)
    card = pc.fill_null(dv_cardinality(adds), 0).to_numpy(zero_copy_only=False).astype(np.float64)
    return _live_of(card, lambda: np.asarray(row_counts(snap, adds), np.float64))


def _live_of(deleted: np.ndarray, counts: Callable[[], np.ndarray]) -> np.ndarray:
    """`_live_fraction` from the rows each file's DV deletes and its physical rows (asked for
    only when some file has deletes)."""
    if not deleted.any():
        return np.ones(len(deleted))
    rows = np.asarray(counts(), np.float64)
    return np.where(rows > 0, 1.0 - deleted / np.maximum(rows, 1.0), 1.0)


def _facts_live(facts: FileFacts) -> np.ndarray:
    return _live_of(facts.deleted.astype(np.float64), facts.counts)


@dataclass
class BinPrediction:
    files_removed: int
    files_added: int
    bytes_removed: int
    bytes_added: int
    partitions: list[tuple[str, int]]  # (partition key, files rewritten), most first


@dataclass
class _Bins:
    """A plan's bins as numbers: where each begins among the plan's positions, its files, its
    live bytes and the files it writes at the target size."""

    starts: np.ndarray
    lengths: np.ndarray
    sizes: np.ndarray  # of the plan's files, bin after bin (float)
    live: np.ndarray  # live bytes per bin
    writes: np.ndarray  # files written per bin


def _bin_numbers(plan: OptimizePlan) -> _Bins:
    assert plan.facts is not None
    lengths = np.diff(np.concatenate([[0], plan.bin_ends])).astype(np.int64)
    starts = np.concatenate([[0], plan.bin_ends[:-1]]).astype(np.int64)
    sizes = plan.facts.sizes[plan.positions].astype(np.float64)
    live = np.add.reduceat(sizes * _facts_live(plan.facts)[plan.positions], starts)
    writes = np.maximum(1, np.ceil(live / plan.target_size)).astype(np.int64)
    return _Bins(starts, lengths, sizes, live, writes)


def predict_bins(plan: OptimizePlan) -> BinPrediction:
    """What an OPTIMIZE plan writes: per bin, its live bytes in files of the target size
    (every bin at once, from the plan's positions: no table per bin)."""
    if not plan.num_bins or plan.facts is None:
        return BinPrediction(0, 0, 0, 0, [])
    facts = plan.facts
    nums = _bin_numbers(plan)
    first = plan.positions[nums.starts]
    groups, at = np.unique(facts.group[first], return_index=True)
    files = np.bincount(np.searchsorted(groups, facts.group[first]), weights=nums.lengths, minlength=len(groups))
    firsts = facts.files.select(["partitionValues"]).take(pa.array(first[at]))  # not the stats column
    keys = partition_keys(facts.snapshot, firsts).to_pylist()
    parts = sorted(((k or "(unpartitioned)", int(v)) for k, v in zip(keys, files)), key=lambda kv: (-kv[1], kv[0]))
    return BinPrediction(
        int(nums.lengths.sum()), int(nums.writes.sum()), int(nums.sizes.sum()), int(np.round(nums.live).sum()), parts
    )


# -- the Z-order what-if ---------------------------------------------------------------------


def _numeric(values: pa.ChunkedArray | pa.Array) -> np.ndarray | None:
    """Bounds on a numeric axis (numbers, dates, timestamps), NaN where missing; None for other types.
    Integers beyond 2**53 (ids, nanosecond times) round to the nearest float: an order kept up to
    ties, which `_depth_if_exact` knows."""
    arr = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    t = arr.type
    if pa.types.is_timestamp(t) or pa.types.is_date(t) or pa.types.is_time(t):
        arr = arr.cast(pa.int64()) if not pa.types.is_date32(t) else arr.cast(pa.int32())
    elif pa.types.is_boolean(t):
        arr = arr.cast(pa.int8())
    elif not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)):
        return None
    return pc.fill_null(arr.cast(pa.float64(), safe=False), float("nan")).to_numpy(zero_copy_only=False)


@dataclass
class ZorderWhatIf:
    columns: list[str]
    files_after: int
    bytes_rewritten: int
    bytes_after: int
    mean_depth_before: float
    mean_depth_after: float
    max_depth_before: int
    max_depth_after: int
    point_files_before: float
    point_files_after: float
    points: dict[str, np.ndarray]  # the sampled values a point query lands on, per column


#: integers up to this magnitude are exact as float64
EXACT_INT = float(1 << 53)
#: decimals of at most this many digits are distinct, ordered floats (a double keeps 15 digits)
EXACT_DECIMAL_DIGITS = 15


def _bounds(snap: Snapshot, columns: list[str]) -> tuple[dict[str, tuple[np.ndarray, np.ndarray]], pa.Table]:
    bounds, first, _ = _bounds_and_depths(snap, columns)
    return bounds, first


def _bounds_and_depths(
    snap: Snapshot, columns: list[str]
) -> tuple[dict[str, tuple[np.ndarray, np.ndarray]], pa.Table, dict[str, np.ndarray | None]]:
    """Per column the bounds as floats (NaN where missing), the first column's `layout`, and
    the overlap depth per file `layout` measured on the typed bounds, where the floats keep
    their order and equality (then it is what `overlap_metrics` of the floats gives)."""
    out = {}
    depths: dict[str, np.ndarray | None] = {}
    first = None
    for c in columns:
        lay = layout(snap, c)
        first = first or lay
        lo, hi = _numeric(lay.column("min")), _numeric(lay.column("max"))
        if lo is None or hi is None:
            raise InspectError(f"Z-order what-if: column {c!r} is not numeric or temporal ({lay.schema.field('min').type})")
        out[c] = (lo, hi)
        depths[c] = _depth_if_exact(lay, lo, hi)
    assert first is not None
    return out, first, depths


def _depth_if_exact(lay: pa.Table, lo: np.ndarray, hi: np.ndarray) -> np.ndarray | None:
    """`lay`'s overlap depths when the float bounds order as the typed ones: NaN only where a
    bound is missing, integers (and dates, times) within 2**53, decimals of at most 15 digits
    (`EXACT_DECIMAL_DIGITS`: distinct ones stay distinct floats, in order)."""
    t = lay.schema.field("min").type
    if pa.types.is_decimal(t) and t.precision > EXACT_DECIMAL_DIGITS:
        return None
    if int(np.isnan(lo).sum()) != lay.column("min").null_count or int(np.isnan(hi).sum()) != lay.column("max").null_count:
        return None
    if not (pa.types.is_floating(t) or pa.types.is_decimal(t)):
        finite = np.concatenate([lo[~np.isnan(lo)], hi[~np.isnan(hi)]])
        if len(finite) and float(np.abs(finite).max()) > EXACT_INT:
            return None
    return lay.column("overlap_depth").to_numpy(zero_copy_only=False)


def _depths(lo: np.ndarray, hi: np.ndarray) -> tuple[float, int]:
    """(mean, max) overlap depth of ranges, `layout_summary`'s avg_depth and max_depth."""
    if len(lo) == 0:
        return 0.0, 0
    d = overlap_metrics(lo, hi)["overlap_depth"]
    return float(d.mean()), int(d.max())


def layout_measures(
    bounds: dict[str, tuple[np.ndarray, np.ndarray]],
    points: dict[str, np.ndarray],
    depths: dict[str, np.ndarray | None] | None = None,
) -> dict[str, float]:
    """Mean over the columns of (mean depth, max depth, files a point query reads, averaged
    over `points`: in any order, sorted ones cost least); `depths`: per column the overlap
    depth per file when measured already (`_bounds_and_depths`)."""
    means, maxes, point = [], [], []
    for c, (lo, hi) in bounds.items():
        ok = ~(np.isnan(lo) | np.isnan(hi))
        known = None if depths is None else depths.get(c)
        if known is not None:
            d = known[ok].astype(np.int64)
            m, x = (float(d.mean()), int(d.max())) if len(d) else (0.0, 0)
        else:
            m, x = _depths(lo[ok], hi[ok])
        means.append(m)
        maxes.append(x)
        pts = points[c]
        point.append(float(point_query_files(lo[ok], hi[ok], pts).mean()) if len(pts) else 0.0)
    return {"mean_depth": float(np.mean(means)), "max_depth": float(np.max(maxes)), "point_files": float(np.mean(point))}


def simulate_zorder(
    obj: Table | Snapshot,
    columns: list[str],
    *,
    target_size: int | None = None,
    version: int | None = None,
    seed: int = 0,
    facts: FileFacts | None = None,
) -> ZorderWhatIf:
    """The layout a Z-order by `columns` would leave, simulated from the per-file bounds (see the
    module docstring); nothing is read but the log and nothing is written. `facts`: the
    snapshot's `file_facts`, when the caller has them.

    Raises:
        InspectError: no column, or a column that is not numeric or temporal.
        WriteRefusedError: a column OPTIMIZE cannot Z-order by (unknown, a partition column).
    """
    snap = snapshot_of(obj, version)
    if not columns:
        raise InspectError("simulate_zorder needs at least one column")
    plan = plan_optimize(snap, target_size=target_size, zorder_by=list(columns), facts=facts)
    bounds, lay, depths = _bounds_and_depths(snap, columns)
    n = lay.num_rows
    adds = snap.add_actions()
    shared = plan.facts is not None and plan.facts.files is adds
    if not n:
        live_rows = np.zeros(0)
    elif shared:
        assert plan.facts is not None
        live_rows = plan.facts.counts().astype(np.float64) * _facts_live(plan.facts)
    else:
        live_rows = np.asarray(row_counts(snap, adds), np.float64) * _live_fraction(snap, adds)
    has = np.ones(n, bool)
    for lo, hi in bounds.values():
        has &= ~(np.isnan(lo) | np.isnan(hi))
    total = float(live_rows[has].sum())
    rng = np.random.default_rng(seed)
    per_file = np.zeros(n, np.int64)
    if total > 0:
        per_file[has] = np.maximum(1, np.round(live_rows[has] / total * SAMPLES)).astype(np.int64)
        per_file[has & (live_rows <= 0)] = 0
    owner = np.repeat(np.arange(n), per_file)
    points = {c: lo[owner] + rng.random(len(owner)) * (hi[owner] - lo[owner]) for c, (lo, hi) in bounds.items()}
    queries = {c: np.sort(p) for c, p in points.items()}  # the measures average over the points: sorted once
    before = layout_measures(bounds, queries, depths)
    # the files each Z-order bin rewrites, and what they become
    in_plan = np.zeros(n, bool)
    new_lo: dict[str, np.ndarray] = {c: np.zeros(0) for c in columns}
    new_hi: dict[str, np.ndarray] = {c: np.zeros(0) for c in columns}
    pred = predict_bins(plan)
    files_added = 0
    if plan.num_bins:
        assert plan.facts is not None
        nums = _bin_numbers(plan)
        if shared:
            idx = plan.positions
        else:
            paths = plan.facts.files.column("path").combine_chunks().take(pa.array(plan.positions))
            idx = pc.index_in(paths, value_set=adds.column("path").combine_chunks()).to_numpy(zero_copy_only=False)
            idx = idx.astype(np.int64)
        in_plan[idx] = True
        files_added = int(nums.writes.sum())
        bin_of_file = np.full(n, -1, np.int64)
        bin_of_file[idx] = np.repeat(np.arange(len(nums.lengths)), nums.lengths)
        new_lo, new_hi = _zorder_bins(points, list(columns), bin_of_file[owner], nums.writes)
    after_bounds = {}
    for c, (lo, hi) in bounds.items():
        keep = ~in_plan
        after_bounds[c] = (np.concatenate([lo[keep], new_lo[c]]), np.concatenate([hi[keep], new_hi[c]]))
    after = layout_measures(after_bounds, queries)
    total_bytes = int(pc.sum(adds.column("size")).as_py() or 0) if n else 0
    return ZorderWhatIf(
        columns=list(columns),
        files_after=n - pred.files_removed + files_added,
        bytes_rewritten=pred.bytes_removed,
        bytes_after=total_bytes - pred.bytes_removed + pred.bytes_added,
        mean_depth_before=before["mean_depth"],
        mean_depth_after=after["mean_depth"],
        max_depth_before=int(before["max_depth"]),
        max_depth_after=int(after["max_depth"]),
        point_files_before=before["point_files"],
        point_files_after=after["point_files"],
        points=points,
    )


def _zorder_order(values: dict[str, np.ndarray], columns: list[str], bins: np.ndarray) -> np.ndarray:
    """The positions of `values` (floats, no NaN) by (bin, Z-value, position): what
    `np.lexsort((zorder_keys(values, columns, groups=bins), bins))` gives. One column's Z-value
    is its dense rank within the bin, so its order is the values' own: one stable sort of the
    values, then a stable sort of their bins (a radix sort for 16-bit bins), no ranking."""
    if len(columns) == 1 and len(bins) and int(bins.max()) < 1 << 15 and int(bins.min()) >= 0:
        by_value = stable_argsort(values[columns[0]])  # what kind="stable" gives, ~2x faster
        return by_value[np.argsort(bins[by_value].astype(np.int16), kind="stable")]
    return np.lexsort((zorder_keys(values, columns, groups=bins), bins))


def _zorder_bins(
    points: dict[str, np.ndarray], columns: list[str], sample_bin: np.ndarray, writes: np.ndarray
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The ranges of the files every Z-order bin writes, all bins at once: each bin's samples
    (`sample_bin`, -1 outside every bin) in the order `zorder_indices` gives them within the
    bin (ranks per bin, one sort by (bin, z-value)), cut into its `writes` files as
    `np.array_split` cuts (consecutive runs, the first ones a sample longer)."""
    sel = np.flatnonzero(sample_bin >= 0)
    lo: dict[str, np.ndarray] = {c: np.zeros(0) for c in columns}
    hi: dict[str, np.ndarray] = {c: np.zeros(0) for c in columns}
    if not len(sel):
        return lo, hi
    bins = sample_bin[sel]
    order = sel[_zorder_order({c: points[c][sel] for c in columns}, columns, bins)]
    per_bin = np.bincount(bins, minlength=len(writes))
    begin = np.concatenate([[0], np.cumsum(per_bin)[:-1]])
    used = per_bin > 0
    count, files, begin = per_bin[used], np.minimum(writes[used], per_bin[used]), begin[used]
    size, extra = np.divmod(count, files)
    owner = np.repeat(np.arange(len(files)), files)
    j = np.arange(int(files.sum())) - np.repeat(np.cumsum(files) - files, files)
    cuts = begin[owner] + j * size[owner] + np.minimum(j, extra[owner])
    for c in columns:
        values = points[c][order]
        lo[c] = np.minimum.reduceat(values, cuts)
        hi[c] = np.maximum.reduceat(values, cuts)
    return lo, hi


# -- the advice --------------------------------------------------------------------------------


def _advice(kind: str, **kw: Any) -> dict[str, Any]:
    row: dict[str, Any] = {f.name: None for f in ADVICE_SCHEMA}
    row.update(kind=kind, **kw)
    if isinstance(row.get("parameters"), dict):
        row["parameters"] = json.dumps(row["parameters"])
    return row


#: a column is a Z-order candidate when point queries on it read this many files on average
MIN_CANDIDATE_DEPTH = 4.0
#: with more active files than `RANK_SAMPLE`, candidate columns are ranked on a seeded uniform
#: sample of `RANK_SAMPLE` files (`_ranked_on_a_sample`)
RANK_SAMPLE = 20_000
#: ... and the exact depth is computed for at most this many of them, best estimate first
RANK_EXACT = 2


def _candidate_columns(snap: Snapshot, columns: list[str] | None) -> list[str]:
    """Point-query columns: the given ones, else the clustering columns, else the numeric data
    column with the deepest overlap (`MIN_CANDIDATE_DEPTH`+ files on average, every file with
    bounds). Tables of more than `RANK_SAMPLE` files with several such columns rank them on a
    sample first (`_ranked_on_a_sample`)."""
    if columns:
        return list(columns)
    clustered = [c[0] for c in clustering_columns(snap) if len(c) == 1]
    if clustered:
        return clustered
    parts = {p.lower() for p in snap.partition_columns}
    numeric = [
        f.name
        for f in snap.schema.fields
        if f.name.lower() not in parts and _numeric(pa.nulls(0, _arrow_type(snap, f.name))) is not None
    ]
    if not numeric:
        return []
    if len(numeric) > 1 and snap.add_actions().num_rows > RANK_SAMPLE:
        return _ranked_on_a_sample(snap, numeric)
    summary = layout_summary(snap, numeric)  # only the columns that could be chosen
    best, depth = None, MIN_CANDIDATE_DEPTH
    for r in summary.to_pylist():
        if r["is_partition"] or r["column"].lower() in parts or r["avg_depth"] is None or r["coverage"] != 1.0:
            continue
        f = snap.schema.get(r["column"])
        if f is None or _numeric(pa.nulls(0, _arrow_type(snap, r["column"]))) is None:
            continue
        if r["avg_depth"] >= depth:
            best, depth = r["column"], r["avg_depth"]
    return [best] if best else []


def _ranked_on_a_sample(snap: Snapshot, numeric: list[str]) -> list[str]:
    """The candidate column of a table with many files: each column's mean overlap depth is
    estimated on a uniform sample of `RANK_SAMPLE` files (seeded) as 1 + (sample depth - 1) *
    files / sampled files (a file's depth is itself plus the files overlapping it at its
    deepest point, and a uniform sample keeps that share of those), columns whose sampled
    files all have bounds are taken best estimate first (on a tie the later column, as the
    exact ranking takes the later of equal depths), and the first whose exact depth
    (`layout_summary`'s, all files) reaches `MIN_CANDIDATE_DEPTH` with every file bounded is
    the candidate; at most `RANK_EXACT` are computed exactly. Where columns' depths are close
    the sample may rank another first: the chosen column's numbers are exact either way."""
    adds = snap.add_actions()
    n = adds.num_rows
    rows = np.sort(np.random.default_rng(0).choice(n, RANK_SAMPLE, replace=False))
    sampled = sampled_coverage_and_depth(snap, adds, numeric, rows)
    estimates = []
    for i, c in enumerate(numeric):
        coverage, depth = sampled.get(c, (None, None))
        if coverage == 1.0 and depth is not None:
            estimates.append((1.0 + (depth - 1.0) * n / RANK_SAMPLE, i, c))
    estimates.sort(key=lambda e: (-e[0], -e[1]))  # ties: the later column, as the exact ranking
    for _, _, c in estimates[:RANK_EXACT]:
        coverage, depth = coverage_and_depth(snap, c)
        if coverage == 1.0 and depth is not None and depth >= MIN_CANDIDATE_DEPTH:
            return [c]
    return []


def _arrow_type(snap: Snapshot, column: str) -> pa.DataType:
    return snap.arrow_schema.field(column).type


def advise(
    obj: Table | Snapshot,
    *,
    columns: list[str] | None = None,
    zorder_by: list[str] | None = None,
    target_size: int | None = None,
    version: int | None = None,
    check: bool = False,
) -> pa.Table:
    """Ranked maintenance recommendations with their predicted effect (`ADVICE_SCHEMA`).

    Kinds: `compaction` (small files and files with many deleted rows, by partition),
    `zorder` (point queries on `columns` read fewer files; `zorder_by` asks for the what-if of
    those columns whatever it predicts), `dv_purge`, `checkpoint`, `log_cleanup`, `vacuum`,
    `stats_columns` (a query column without statistics). Each row: reason, the call that
    does it, files / bytes before and after, bytes rewritten, overlap depths and files read by
    a point query before and after, retention needed. With `check=True`, the prediction made
    before the newest OPTIMIZE / REORG against what the version after it measures
    (`check_advice`).
    """
    if check:
        return check_advice(obj, target_size=target_size, version=version)
    snap = snapshot_of(obj, version)
    adds = snap.add_actions()
    n = adds.num_rows
    total_bytes = int(pc.sum(adds.column("size")).as_py() or 0) if n else 0
    rows: list[dict[str, Any]] = []
    if n:
        facts = file_facts(snap, adds)  # one pass over the files, shared by every plan
        candidates = list(zorder_by) if zorder_by else _candidate_columns(snap, columns)
        records = known_num_records(snap)  # read with the candidates' bounds: not read again
        if records is not None and facts.files is adds:
            facts.use_records(records)
        rows += _compaction(snap, n, total_bytes, target_size, facts)
        rows += _dv_purge(snap, n, total_bytes, target_size, facts)
        rows += _zorder(snap, candidates, bool(zorder_by), n, total_bytes, target_size, facts)
        rows += _stats_columns(snap, columns or zorder_by, n, total_bytes)
    rows += _checkpoint(snap)
    rows += _log_cleanup(snap)
    rows += _vacuum(snap, total_bytes)
    rows.sort(key=lambda r: -(r["score"] or 0.0))
    for i, r in enumerate(rows):
        r["rank"] = i + 1
    return conform({f.name: [r[f.name] for r in rows] for f in ADVICE_SCHEMA}, ADVICE_SCHEMA)


def _compaction(snap: Snapshot, n: int, total: int, target_size: int | None, facts: FileFacts) -> list[dict[str, Any]]:
    plan = plan_optimize(snap, target_size=target_size, facts=facts)
    pred = predict_bins(plan)
    if not plan.num_bins or pred.files_removed <= pred.files_added:
        return []
    named = ", ".join(f"{k} ({v} files)" for k, v in pred.partitions[:5]) + (
        f" and {len(pred.partitions) - 5} more" if len(pred.partitions) > 5 else ""
    )
    return [
        _advice(
            "compaction",
            target=named,
            reason=f"{pred.files_removed} of {n} files are smaller than half the target "
            f"({plan.target_size:,} bytes) or hide many deleted rows; they compact into {pred.files_added}",
            action="optimize()" if target_size is None else f"optimize(target_size={target_size})",
            operation="optimize",
            parameters={} if target_size is None else {"target_bytes": target_size},
            score=pred.files_removed / n * (1 - pred.files_added / pred.files_removed),
            files_before=n,
            files_after=n - pred.files_removed + pred.files_added,
            bytes_before=total,
            bytes_after=total - pred.bytes_removed + pred.bytes_added,
            bytes_rewritten=pred.bytes_removed,
        )
    ]


def _dv_purge(snap: Snapshot, n: int, total: int, target_size: int | None, facts: FileFacts) -> list[dict[str, Any]]:
    adds = snap.add_actions()
    if facts.files is adds:  # `deletion_vectors`' numbers from the shared pass
        if not facts.has_dv.any():
            return []
        dv = combined(adds.column("deletionVector")).filter(pa.array(facts.has_dv))
        card = dv.field("cardinality").cast(pa.int64())
        past_files = past_threshold(deleted_ratio(card, facts.records().filter(pa.array(facts.has_dv))))
        dv_count = int(facts.has_dv.sum())
    else:
        dvs = deletion_vectors(snap)
        card, past_files, dv_count = dvs.column("cardinality"), dvs.column("past_threshold"), dvs.num_rows
    if dv_count == 0 or not pc.any(past_files).as_py():
        return []
    plan = plan_optimize(snap, target_size=target_size, dv_files_only=True, facts=facts)
    pred = predict_bins(plan)
    deleted = int(pc.sum(card).as_py() or 0)
    past = int(pc.sum(past_files.cast(pa.int64())).as_py() or 0)
    counts = facts.counts() if facts.files is adds else row_counts(snap, adds)
    rows_total = float(np.asarray(counts, np.float64).sum()) or 1.0
    return [
        _advice(
            "dv_purge",
            target=f"{dv_count} files with deletion vectors",
            reason=f"{deleted:,} deleted rows are still read and skipped; {past} files hide 5% or more of their rows",
            action="purge_deletion_vectors()",
            operation="purge",
            parameters={},
            score=min(1.0, 4 * deleted / rows_total),
            files_before=n,
            files_after=n - pred.files_removed + pred.files_added,
            bytes_before=total,
            bytes_after=total - pred.bytes_removed + pred.bytes_added,
            bytes_rewritten=pred.bytes_removed,
        )
    ]


def _zorder(
    snap: Snapshot,
    candidates: list[str],
    asked: bool,
    n: int,
    total: int,
    target_size: int | None,
    facts: FileFacts,
) -> list[dict[str, Any]]:
    """The Z-order advice on `candidates` (`asked`: the caller's `zorder_by`, given whatever it predicts)."""
    cols = list(candidates)
    parts = {p.lower() for p in snap.partition_columns}
    cols = [c for c in cols if c.lower() not in parts]
    if not cols:
        return []
    try:
        w = simulate_zorder(snap, cols, target_size=target_size, facts=facts)
    except InspectError:
        if asked:
            raise
        return []
    gain = 1 - w.point_files_after / w.point_files_before if w.point_files_before else 0.0
    if not asked and (w.point_files_before < MIN_POINT_FILES or gain < 0.3):
        return []
    names = ", ".join(cols)
    return [
        _advice(
            "zorder",
            target=names,
            reason=f"a point query on {names} reads {w.point_files_before:.1f} files on average now, "
            f"{w.point_files_after:.1f} after a Z-order (simulated from the per-file bounds)",
            action=f"optimize(zorder_by={cols!r})",
            operation="optimize",
            parameters={"zorder_by": cols} | ({} if target_size is None else {"target_bytes": target_size}),
            score=max(0.0, gain),
            files_before=n,
            files_after=w.files_after,
            bytes_before=total,
            bytes_after=w.bytes_after,
            bytes_rewritten=w.bytes_rewritten,
            columns=cols,
            mean_depth_before=w.mean_depth_before,
            mean_depth_after=w.mean_depth_after,
            max_depth_before=w.max_depth_before,
            max_depth_after=w.max_depth_after,
            point_files_before=w.point_files_before,
            point_files_after=w.point_files_after,
        )
    ]


def _stats_columns(snap: Snapshot, columns: list[str] | None, n: int, total: int) -> list[dict[str, Any]]:
    cols = list(columns or []) or [c[0] for c in clustering_columns(snap) if len(c) == 1]
    if not cols:
        return []
    summary = layout_summary(snap, cols)
    missing = [r for r in summary.to_pylist() if not r["is_partition"] and (not r["indexed"] or (r["coverage"] or 0) < 1.0)]
    if not missing:
        return []
    names = [r["column"] for r in missing]
    lacking = max(n - min(r["files_with_min_max"] for r in missing), 0)
    listed = snap.properties.get("delta.dataSkippingStatsColumns")
    value = ",".join(dict.fromkeys([*(listed.split(",") if listed else []), *names]))
    return [
        _advice(
            "stats_columns",
            target=", ".join(names),
            reason=f"{lacking} of {n} files have no min/max for {', '.join(names)}: queries on them read every file",
            action=f"set_table_properties({{'delta.dataSkippingStatsColumns': {value!r}}}) then optimize() rewrites with stats",
            operation=None,
            parameters={"delta.dataSkippingStatsColumns": value},
            score=0.9 * lacking / n,
            files_before=n,
            files_after=n,
            bytes_before=total,
            bytes_after=total,
            bytes_rewritten=int(total * lacking / n),
            columns=names,
        )
    ]


def _checkpoint(snap: Snapshot) -> list[dict[str, Any]]:
    since, interval = commits_since_checkpoint(snap)
    if since <= interval:
        return []
    replay = sum(f.size for f in snap.segment.json_files)
    return [
        _advice(
            "checkpoint",
            target=f"version {snap.version}",
            reason=f"{since} commits ({replay:,} bytes of JSON) are replayed to open the table; "
            f"writers checkpoint every {interval}",
            action="checkpoint()",
            operation="checkpoint",
            parameters={},
            score=min(1.0, since / (4 * interval)),
            bytes_before=replay,
            bytes_after=0,
        )
    ]


def _log_cleanup(snap: Snapshot) -> list[dict[str, Any]]:
    table = table_of(snap)
    if snap.version != table.latest_version():
        return []
    try:
        plan = plan_log_cleanup(table)
    except DeltaExploreError:
        return []
    if not plan.files:
        return []
    listing = table.listing(refresh=False)
    log_bytes = sum(f.size for f in listing.commits.values()) + sum(c.size for cps in listing.checkpoints.values() for c in cps)
    freed = sum(plan.sizes)
    return [
        _advice(
            "log_cleanup",
            target=f"{len(plan.files)} log files before version {plan.checkpoint_version}",
            reason=f"{len(plan.files)} log files ({freed:,} bytes) are past delta.logRetentionDuration",
            action="cleanup_metadata()",
            operation=None,
            parameters={},
            score=min(1.0, freed / log_bytes) * 0.5 if log_bytes else 0.0,
            bytes_before=log_bytes,
            bytes_after=log_bytes - freed,
            retention_hours=snap.config.log_retention_ms / 3_600_000,
        )
    ]


#: the pre-check of `_vacuum` counts files this much younger than the cut-off as old too
#: (the preview takes the time again a moment later)
CUTOFF_MARGIN_MS = 60_000


def _may_vacuum(snap: Snapshot) -> bool:
    """Whether `vacuum_preview` could find anything: a listed file older than the cut-off
    that the latest version's adds do not reference (a superset of what VACUUM deletes, in
    one listing and one vectorised lookup; the preview's checks of the log's records need
    not run when nothing could be deleted)."""
    table = table_of(snap)
    latest = snapshot_of(table)
    try:
        retention = latest.config.deleted_file_retention_ms if latest.has_metadata else DEFAULT_DELETED_FILE_RETENTION_MS
    except DeltaExploreError:
        retention = DEFAULT_DELETED_FILE_RETENTION_MS
    cutoff = int(time.time() * 1000) - retention + CUTOFF_MARGIN_MS
    try:
        listed = list_vacuumable(table.storage, vacuum_partition_names(latest))
    except DeltaExploreError:
        return True
    old = listed.filter(pc.fill_null(pc.less(listed.column("modification_time"), pa.scalar(cutoff, pa.int64())), False))
    if old.num_rows == 0:
        return False
    paths = latest.add_actions().column("path")
    referenced = relative_paths(table.storage, paths)
    if not pc.all(pc.equal(referenced, paths.combine_chunks().cast(pa.string()))).as_py():
        return True  # paths written otherwise than plainly: the preview decides
    return bool(pc.any(pc.invert(pc.is_in(old.column("path"), value_set=referenced))).as_py())


def _vacuum(snap: Snapshot, total: int) -> list[dict[str, Any]]:
    if not _may_vacuum(snap):
        return []
    try:
        preview = vacuum_preview(snap)
    except DeltaExploreError:
        return []
    if preview.num_rows == 0:
        return []
    freed = int(pc.sum(preview.column("size")).as_py() or 0)
    hours = snap.config.deleted_file_retention_ms / 3_600_000
    return [
        _advice(
            "vacuum",
            target=f"{preview.num_rows} unreferenced files",
            reason=f"{preview.num_rows} files ({freed:,} bytes) no retained version needs after {hours:g} hours",
            action="vacuum(dry_run=False)",
            operation="vacuum",
            parameters={"retention_hours": hours},
            score=min(1.0, freed / max(total + freed, 1)),
            bytes_before=total + freed,
            bytes_after=total,
            retention_hours=hours,
        )
    ]


# -- predicted vs measured ---------------------------------------------------------------------


def _row(kind: str, before: int, after: int, metric: str, predicted: float, measured: float) -> dict[str, Any]:
    tol = TOLERANCE[metric]
    base = max(abs(predicted), 1.0)
    slack = 1.0 if metric in ("files", "mean_depth", "max_depth", "point_files") else 0.0
    within = abs(measured - predicted) <= max(tol * base, slack)
    return {
        "kind": kind,
        "version_before": before,
        "version_after": after,
        "metric": metric,
        "predicted": float(predicted),
        "measured": float(measured),
        "error": (measured - predicted) / base,
        "tolerance": tol,
        "within": bool(within),
    }


def check_advice(obj: Table | Snapshot, *, target_size: int | None = None, version: int | None = None) -> pa.Table:
    """The advice made at the version before the newest OPTIMIZE / REORG (up to `version`)
    against what the version after it measures (`ADVICE_CHECK_SCHEMA`).

    Raises:
        InspectError: no OPTIMIZE or REORG commit to check.
    """
    snap = snapshot_of(obj, version)
    table = table_of(snap)
    hist = table.history(end_version=snap.version)
    after_v = None
    op = params = None
    for v, o, p in zip(
        hist.column("version").to_pylist(), hist.column("operation").to_pylist(), hist.column("parameters").to_pylist()
    ):
        if o in ("OPTIMIZE", "REORG") and v > 0:
            after_v, op, params = v, o, p
            break
    if after_v is None:
        raise InspectError(f"no OPTIMIZE or REORG commit up to version {snap.version}: nothing to check")
    params = json.loads(params) if isinstance(params, str) else dict(params or {})
    zorder = params.get("zOrderBy")
    zorder = json.loads(zorder) if isinstance(zorder, str) else list(zorder or [])
    before_snap = table.snapshot(after_v - 1)
    after_snap = table.snapshot(after_v)
    measured_files = after_snap.num_files
    measured_bytes = int(pc.sum(after_snap.add_actions().column("size")).as_py() or 0)
    rows: list[dict[str, Any]] = []
    if zorder:
        w = simulate_zorder(before_snap, zorder, target_size=target_size)
        kind = "zorder"
        predicted_files, predicted_bytes = w.files_after, w.bytes_after
        bounds, _ = _bounds(after_snap, zorder)
        m = layout_measures(bounds, w.points)
        depth_rows = [
            ("mean_depth", w.mean_depth_after, m["mean_depth"]),
            ("max_depth", w.max_depth_after, m["max_depth"]),
            ("point_files", w.point_files_after, m["point_files"]),
        ]
    else:
        plan = plan_optimize(before_snap, target_size=target_size, dv_files_only=op == "REORG")
        pred = predict_bins(plan)
        kind = "dv_purge" if op == "REORG" else "compaction"
        n_before = before_snap.num_files
        predicted_files = n_before - pred.files_removed + pred.files_added
        total_before = int(pc.sum(before_snap.add_actions().column("size")).as_py() or 0)
        predicted_bytes = total_before - pred.bytes_removed + pred.bytes_added
        depth_rows = []
    rows.append(_row(kind, after_v - 1, after_v, "files", predicted_files, measured_files))
    rows.append(_row(kind, after_v - 1, after_v, "bytes", predicted_bytes, measured_bytes))
    rows += [_row(kind, after_v - 1, after_v, name, p, m_) for name, p, m_ in depth_rows]
    return conform({f.name: [r[f.name] for r in rows] for f in ADVICE_CHECK_SCHEMA}, ADVICE_CHECK_SCHEMA)
