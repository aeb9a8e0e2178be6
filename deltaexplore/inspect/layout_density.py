"""Layout density: how many files cover each range of a column's values (readable at any size).

`layout(column)` has one row per file; a million ranges cannot be drawn one by one. Here the
column's value range is cut into equal bins and, per bin, counted: the files whose [min, max]
intersects it, the most files that contain one single value of it (the files a point query
there reads: the overlap depth, as `layout` defines it) and the files that start in it. Numbers,
dates and times are binned by value; strings and other types by the rank of their bounds.
Everything is `searchsorted` over the sorted bounds (numpy), so 1M files take milliseconds once
the bounds are read.
"""

from __future__ import annotations

import decimal
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.protocol.schema import to_arrow_type
from deltaexplore.inspect.errors import InspectError
from deltaexplore.inspect.layout import _bounds, _keys, _resolve, _start_depths
from deltaexplore.inspect.schemas import layout_density_schema
from deltaexplore.inspect.snapshots import snapshot_of

if TYPE_CHECKING:
    from deltaexplore.core.snapshot import Snapshot
    from deltaexplore.core.table import Table

__all__ = ["bound_positions", "file_positions", "layout_density"]


def _linear_keys(values: pa.Array) -> np.ndarray | None:
    """int64 keys proportional to the values (integers, dates, times, decimals up to 18 digits)."""
    t = values.type
    if pa.types.is_floating(t):
        return None
    return _keys(values)


def _from_keys(keys: np.ndarray, value_type: pa.DataType) -> pa.Array:
    """Values of `value_type` from their linear int64 keys (the inverse of `_linear_keys`)."""
    t = value_type
    ints = pa.array(keys.astype(np.int64), pa.int64())
    if pa.types.is_boolean(t):
        return pc.not_equal(ints, 0)
    if pa.types.is_integer(t):
        return ints.cast(t, safe=False)
    if pa.types.is_decimal(t):
        scale = t.scale
        return pa.array([decimal.Decimal(int(k)).scaleb(-scale) for k in keys], t)
    width = pa.int64() if t.bit_width == 64 else pa.int32()
    return ints.cast(width, safe=False).view(t)


def _positions(mins: pa.Array, maxs: pa.Array) -> tuple[np.ndarray, np.ndarray, str, pa.Array | None]:
    """Bounds as positions on one numeric axis: (lo, hi, kind, distinct values). `kind` is
    linear (integers, dates, times, decimals: their int64 keys), float (the values) or rank
    (the rank among the `distinct` bounds). No nulls or NaN in the input."""
    lo_k, hi_k = _linear_keys(mins), _linear_keys(maxs)
    if lo_k is not None and hi_k is not None:
        lo, hi, kind, distinct = lo_k.astype(np.float64), hi_k.astype(np.float64), "linear", None
    elif pa.types.is_floating(mins.type):
        lo = mins.cast(pa.float64()).to_numpy(zero_copy_only=False)
        hi = maxs.cast(pa.float64()).to_numpy(zero_copy_only=False)
        kind, distinct = "float", None
    else:
        both = pa.concat_arrays([mins, maxs])
        distinct = pc.unique(both).sort()
        ranks = pc.index_in(both, value_set=distinct).to_numpy(zero_copy_only=False).astype(np.float64)
        lo, hi, kind = ranks[: len(mins)], ranks[len(mins) :], "rank"
    return np.minimum(lo, hi), np.maximum(lo, hi), kind, distinct  # malformed stats: keep ranges well-formed


def _usable(mins: pa.Array, maxs: pa.Array) -> pa.Array:
    """Files with both bounds (and no NaN bound)."""
    has = pc.and_(pc.is_valid(mins), pc.is_valid(maxs))
    if pa.types.is_floating(mins.type):
        has = pc.and_(has, pc.invert(pc.or_(pc.is_nan(mins), pc.is_nan(maxs))))
    return pc.fill_null(has, False)


class _Positions(NamedTuple):
    """`_positions` of the files with usable bounds (`usable`: their mask, None when all are)."""

    usable: np.ndarray | None
    lo: np.ndarray
    hi: np.ndarray
    kind: str
    distinct: pa.Array | None


def _file_positions(mins: pa.Array, maxs: pa.Array) -> _Positions:
    has = _usable(mins, maxs).to_numpy(zero_copy_only=False)
    if has.all():
        return _Positions(None, *_positions(mins, maxs))
    if not has.any():
        empty = np.zeros(0, np.float64)
        return _Positions(has, empty, empty, "linear", None)
    take = pa.array(np.flatnonzero(has))
    return _Positions(has, *_positions(mins.take(take), maxs.take(take)))


def _column_positions(b: dict[str, Any]) -> _Positions:
    """`_file_positions` of one column's bounds, kept with them (per snapshot and column)."""
    if "positions" not in b:
        b["positions"] = _file_positions(b["min"], b["max"])
        b["positions"].lo.flags.writeable = b["positions"].hi.flags.writeable = False  # shared
    positions: _Positions = b["positions"]
    return positions


def _depths(b: dict[str, Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sorted lo and hi positions of one column's files and the depth D at each sorted lo, kept
    with its bounds: `layout`'s sorted keys when it ran and they are the positions (linear
    columns with keys exact as float64), else computed."""
    if "depths" not in b:
        p = _column_positions(b)
        keys = b.get("sorted_keys")
        if p.kind == "linear" and keys is not None and len(keys[0]) == len(p.lo) and _exact(keys[0], keys[1]):
            b["depths"] = keys[0].astype(np.float64), keys[1].astype(np.float64), keys[2]
        else:
            sorted_lo, sorted_hi = np.sort(p.lo), np.sort(p.hi)
            b["depths"] = sorted_lo, sorted_hi, _start_depths(sorted_lo, sorted_hi)[3]
    depths: tuple[np.ndarray, np.ndarray, np.ndarray] = b["depths"]
    return depths


def _exact(sorted_lo: np.ndarray, sorted_hi: np.ndarray) -> bool:
    """Whether int64 keys convert to float64 exactly (|key| <= 2**53)."""
    return not len(sorted_lo) or (-(2**53) <= sorted_lo[0] and sorted_hi[-1] <= 2**53)


def _position_table(p: _Positions, n: int) -> tuple[pa.Table, bool]:
    if p.usable is None:
        lo, hi, mask = p.lo, p.hi, None
    else:
        lo, hi = np.full(n, np.nan), np.full(n, np.nan)
        lo[p.usable], hi[p.usable] = p.lo, p.hi
        mask = ~p.usable
    out = pa.table({"min_position": pa.array(lo, mask=mask), "max_position": pa.array(hi, mask=mask)})
    return out, p.kind != "float"


def bound_positions(layout: pa.Table) -> tuple[pa.Table, bool]:
    """Each file's min and max of an `inspect.layout(column)` table on the numeric axis of
    `layout_density` (`min_position`, `max_position`; null without bounds), and whether those
    positions are integers (then a bin [start, end) holds positions start..end - 1).

    A file overlaps bins b0..b1 exactly when `min_position < position_hi(b1)` and
    `max_position >= position_lo(b0)`: the explorer lists the files of a brushed range so."""
    mins, maxs = layout.column("min").combine_chunks(), layout.column("max").combine_chunks()
    return _position_table(_file_positions(mins, maxs), layout.num_rows)


def file_positions(obj: Table | Snapshot, column: str, *, version: int | None = None) -> tuple[pa.Table, bool]:
    """`bound_positions(layout(obj, column))`, computed once per snapshot and column (shared
    with `layout_density`).

    Raises:
        ColumnNotFoundError: the column has no per-file bounds.
    """
    snap = snapshot_of(obj, version)
    name = _resolve(snap, column)[0]
    return positions_of_bounds(_bounds(snap, snap.add_actions(), [name])[name])


def positions_of_bounds(b: dict[str, Any]) -> tuple[pa.Table, bool]:
    """`file_positions` from one column's bounds (`layout_columns_bounds`, merged; kept in `b`)."""
    return _position_table(_column_positions(b), len(b["min"]))


def layout_density(obj: Table | Snapshot, column: str, *, bins: int = 100, version: int | None = None) -> pa.Table:
    """Files per range of `column`'s values (`schemas.layout_density_schema(type)`), in value order.

    Columns: bin, lo and hi (the bin's smallest and largest value, in the column's type),
    position_lo / position_hi (the bin on a numeric axis: the values for numbers, dates and
    times, bound ranks for strings), files (files whose [min, max] intersects the bin),
    max_depth (the most files containing a single value of the bin) and starts (files whose min
    falls in it). Files without both bounds are left out. At most `bins` rows (fewer when the
    column spans fewer distinct integer values).

    Raises:
        ColumnNotFoundError: the column has no per-file bounds.
        InspectError: `bins` is not a positive integer.
    """
    if not isinstance(bins, int) or isinstance(bins, bool) or bins < 1:
        raise InspectError(f"bins must be a positive integer, got {bins!r}")
    snap = snapshot_of(obj, version)
    name = _resolve(snap, column)[0]
    return density_of_bounds(_bounds(snap, snap.add_actions(), [name])[name], bins=bins)


def density_of_bounds(b: dict[str, Any], *, bins: int = 100) -> pa.Table:
    """`layout_density` from one column's bounds (`layout_columns_bounds`, merged): what a
    streaming pass or Spark job that kept them computes it from (positions kept in `b`)."""
    if not isinstance(bins, int) or isinstance(bins, bool) or bins < 1:
        raise InspectError(f"bins must be a positive integer, got {bins!r}")
    value_type = to_arrow_type(b["type"])
    schema = layout_density_schema(value_type)
    p = _column_positions(b)
    if len(p.lo) == 0:
        return schema.empty_table()
    kind, distinct = p.kind, p.distinct
    kmin, kmax = float(p.lo.min()), float(p.hi.max())

    if kind == "float":
        count = bins if kmax > kmin else 1
        edges = np.linspace(kmin, kmax, count + 1) if kmax > kmin else np.array([kmin, kmin])
        starts, ends = edges[:-1], edges[1:].copy()
        ends_excl = ends.copy()
        ends_excl[-1] = np.inf  # the last bin holds the maximum
        last_incl = ends
    else:
        span = kmax - kmin + 1
        width = max(1.0, float(np.ceil(span / bins)))
        count = int(np.ceil(span / width))
        starts = kmin + width * np.arange(count, dtype=np.float64)
        ends_excl = starts + width
        last_incl = np.minimum(ends_excl - 1, kmax)
        ends = ends_excl

    sorted_lo, sorted_hi, depth_at_lo = _depths(b)
    lo_before_end = np.searchsorted(sorted_lo, ends_excl, side="left")
    first = np.searchsorted(sorted_lo, starts, side="left")  # the ranges starting in bin i: first[i]..first[i+1]-1
    ended = np.searchsorted(sorted_hi, starts, side="left")  # ranges ending before bin i
    files = lo_before_end - ended
    started = lo_before_end - first
    # depth D(x) = ranges with lo <= x minus ranges with hi < x: it rises only at a range start,
    # so its maximum over a bin is at the bin's start or at a start inside the bin
    max_depth = (np.searchsorted(sorted_lo, starts, side="right") - ended).astype(np.int64)
    filled = first < np.append(first[1:], len(sorted_lo))
    if filled.any():
        max_depth[filled] = np.maximum(max_depth[filled], np.maximum.reduceat(depth_at_lo, first[filled]))

    if kind == "linear":
        lo_values = _from_keys(starts.astype(np.int64), value_type)
        hi_values = _from_keys(last_incl.astype(np.int64), value_type)
    elif kind == "float":
        lo_values = pa.array(starts).cast(value_type)
        hi_values = pa.array(last_incl).cast(value_type)
    else:
        assert distinct is not None
        lo_values = distinct.take(pa.array(starts.astype(np.int64))).cast(value_type)
        hi_values = distinct.take(pa.array(last_incl.astype(np.int64))).cast(value_type)
    cols = [
        pa.array(np.arange(count, dtype=np.int64)),
        lo_values,
        hi_values,
        pa.array(starts, pa.float64()),
        pa.array(ends.astype(np.float64), pa.float64()),
        pa.array(files.astype(np.int64)),
        pa.array(max_depth),
        pa.array(started.astype(np.int64)),
    ]
    return pa.Table.from_arrays(cols, schema=schema)
