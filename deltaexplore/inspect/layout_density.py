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
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.protocol.schema import to_arrow_type
from deltaexplore.inspect.errors import InspectError
from deltaexplore.inspect.layout import _bounds, _keys, _resolve
from deltaexplore.inspect.schemas import layout_density_schema
from deltaexplore.inspect.snapshots import snapshot_of

if TYPE_CHECKING:
    from deltaexplore.core.snapshot import Snapshot
    from deltaexplore.core.table import Table

__all__ = ["bound_positions", "layout_density"]


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


def bound_positions(layout: pa.Table) -> tuple[pa.Table, bool]:
    """Each file's min and max of an `inspect.layout(column)` table on the numeric axis of
    `layout_density` (`min_position`, `max_position`; null without bounds), and whether those
    positions are integers (then a bin [start, end) holds positions start..end - 1).

    A file overlaps bins b0..b1 exactly when `min_position < position_hi(b1)` and
    `max_position >= position_lo(b0)`: the explorer lists the files of a brushed range so."""
    mins, maxs = layout.column("min").combine_chunks(), layout.column("max").combine_chunks()
    has = _usable(mins, maxs)
    idx = np.flatnonzero(has.to_numpy(zero_copy_only=False))
    lo = np.full(len(mins), np.nan)
    hi = np.full(len(mins), np.nan)
    kind = "linear"
    if len(idx):
        take = pa.array(idx)
        plo, phi, kind, _ = _positions(mins.take(take), maxs.take(take))
        lo[idx], hi[idx] = plo, phi
    mask = ~has.to_numpy(zero_copy_only=False)
    out = pa.table({"min_position": pa.array(lo, mask=mask), "max_position": pa.array(hi, mask=mask)})
    return out, kind != "float"


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
    adds = snap.add_actions()
    name = _resolve(snap, column)[0]
    b = _bounds(snap, adds, [name])[name]
    value_type = to_arrow_type(b["type"])
    schema = layout_density_schema(value_type)
    mins, maxs = b["min"], b["max"]
    has = _usable(mins, maxs)
    if not pc.all(has).as_py():
        mins, maxs = mins.filter(has), maxs.filter(has)
    if len(mins) == 0:
        return schema.empty_table()

    lo, hi, kind, distinct = _positions(mins, maxs)
    kmin, kmax = float(lo.min()), float(hi.max())

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

    sorted_lo, sorted_hi = np.sort(lo), np.sort(hi)
    lo_before_end = np.searchsorted(sorted_lo, ends_excl, side="left")
    files = lo_before_end - np.searchsorted(sorted_hi, starts, side="left")
    started = lo_before_end - np.searchsorted(sorted_lo, starts, side="left")
    # depth D(x) = ranges with lo <= x minus ranges with hi < x: it rises only at a range start,
    # so its maximum over a bin is at the bin's start or at a start inside the bin
    depth_at_start = np.searchsorted(sorted_lo, starts, side="right") - np.searchsorted(sorted_hi, starts, side="left")
    depth_at_lo = np.searchsorted(sorted_lo, sorted_lo, side="right") - np.searchsorted(sorted_hi, sorted_lo, side="left")
    bin_of_lo = np.clip(np.searchsorted(starts, sorted_lo, side="right") - 1, 0, count - 1)
    max_depth = depth_at_start.astype(np.int64)
    np.maximum.at(max_depth, bin_of_lo, depth_at_lo)

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
