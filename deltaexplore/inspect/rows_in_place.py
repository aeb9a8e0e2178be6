"""Rows a rewrite kept in order: the cheap first step of the net row diff.

An UPDATE, a copy-on-write DELETE or MERGE, a DV purge or a compaction rewrite files keeping
the order of the rows they leave alone: the rows of a removed file come back in an added file
as a few long stretches, in the same order. `cancel_in_place` walks the older side's rows,
finds where a stretch starts among the newer side's rows (`_Locator`: a 64-bit mix of the
row's numbers, sorted once), measures how far the two sides then agree row for row (whole
rows, column by column on slices, `_equal`) and drops those rows from both sides. Any
pairing of equal rows may cancel in a multiset difference, so the rows left have the same net
counts as all rows, and `row_diff.net_rows` hashes, sorts and checks only them. A row that
finds no equal row is left (changed, deleted or inserted); the walk stops after a budget of
stretches (`STRETCH_BUDGET`) or when its stretches are too short to pay (`PAYING_ROWS`),
leaving the rest to the hashed path.

Equality here is stricter than the hashed path's, never looser: numbers, dates and times are
equal when their bits are (NaN of the same bits equal, -0.0 and 0.0 left to the hashed path),
strings, binary, booleans and decimals as Arrow values, nulls equal to nulls. A table with a
column of another type (nested, ...) is left whole.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.arrow import take_rows

__all__ = ["STRETCH_BUDGET", "Kept", "cancel_in_place", "comparable", "compared_as"]

_BITS = {8: pa.int8(), 16: pa.int16(), 32: pa.int32(), 64: pa.int64()}

#: the walk looks up at most `STRETCH_BUDGET.0 + rows // STRETCH_BUDGET.1` stretch starts
STRETCH_BUDGET = (64, 256)
#: ... and after `PAYING_AFTER` steps goes on only while its steps cancel `PAYING_ROWS` rows
#: each on average (a step costs about what hashing, sorting and checking that many rows does);
#: after `PAYING_SEEN` older rows, only while at least half the rows seen cancelled. What it
#: cancelled is kept only when that is half the rows or more (`KEPT_SHARE`): fewer would not pay
#: the ordering of the result (`Kept.read_order`) and the copies of what is left
PAYING_AFTER, PAYING_ROWS, PAYING_SEEN = 32, 512, 16_384
KEPT_SHARE = 0.5
#: rows compared at a stretch's start, at least (the last stretch's length if longer; doubled
#: while the sides keep agreeing)
FIRST_WINDOW = 1024
#: new rows of one mix tried as a stretch's start (rows alike in every number: strings differ)
CANDIDATES = 16
#: rows looked up at once when a row finds no equal row on the other side (doubled while
#: none does, up to `MAX_LOOKAHEAD`)
LOOKAHEAD, MAX_LOOKAHEAD = 64, 1 << 16


def compared_as(t: pa.DataType) -> pa.DataType | None:
    """How a column of type `t` compares exactly with Arrow: as itself (booleans, strings,
    binary), as the integers of its bits (numbers, dates, times), or None (neither)."""
    if pa.types.is_boolean(t) or pa.types.is_string(t) or pa.types.is_large_string(t):
        return t
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return t
    numeric = pa.types.is_integer(t) or pa.types.is_floating(t)
    temporal = pa.types.is_date(t) or pa.types.is_timestamp(t) or pa.types.is_time(t) or pa.types.is_duration(t)
    if numeric or temporal:
        return _BITS.get(t.bit_width)
    return None


def comparable(t: pa.DataType) -> bool:
    """Whether `cancel_in_place` compares columns of type `t`."""
    return compared_as(t) is not None or pa.types.is_decimal(t)


def _one_chunk(column: pa.ChunkedArray) -> pa.Array:
    if column.num_chunks == 1:
        return column.chunk(0)
    if column.num_chunks == 0:
        return pa.array([], column.type)
    return column.combine_chunks()


class _Column:
    """One column of one side, ready for comparisons of slices: the integers of its bits and
    where it is valid (numbers, dates, times) or the Arrow array (other types)."""

    def __init__(self, column: pa.ChunkedArray) -> None:
        arr = _one_chunk(column)
        as_type = compared_as(arr.type)
        self.bits: np.ndarray | None = None
        self.valid: np.ndarray | None = None
        self.array = arr
        if as_type is not None and pa.types.is_integer(as_type):
            view = arr.view(as_type) if as_type != arr.type else arr
            if view.null_count:
                self.valid = np.asarray(pc.is_valid(view).to_numpy(zero_copy_only=False), bool)
                view = pc.fill_null(view, 0)
            self.bits = view.to_numpy()


def _equal(a: _Column, o: int, b: _Column, n: int, w: int) -> np.ndarray:
    """Whether row `o + i` of `a` equals row `n + i` of `b`, for i < `w`."""
    if a.bits is not None and b.bits is not None:
        eq = a.bits[o : o + w] == b.bits[n : n + w]
        if a.valid is None and b.valid is None:
            return eq
        va = np.ones(w, bool) if a.valid is None else a.valid[o : o + w]
        vb = np.ones(w, bool) if b.valid is None else b.valid[n : n + w]
        return (va == vb) & (eq | ~va)
    x, y = a.array.slice(o, w), b.array.slice(n, w)
    equal = pc.equal(x, y)
    if x.null_count or y.null_count:
        equal = pc.or_(pc.fill_null(equal, False), pc.and_(pc.is_null(x), pc.is_null(y)))
    return np.asarray(equal.to_numpy(zero_copy_only=False), bool)


_MIX = np.uint64(0x9E3779B97F4A7C15)


def _row_mix(columns: list[_Column], table: pa.Table, lo: int = 0, hi: int | None = None) -> np.ndarray:
    """A 64-bit mix of the numbers of each row `lo`..`hi` (equal rows mix alike); a polars
    hash of the whole row when no column holds numbers."""
    hi = table.num_rows if hi is None else min(hi, table.num_rows)
    numeric = [c.bits for c in columns if c.bits is not None]
    if not numeric:
        frame = pl.from_arrow(table.slice(lo, hi - lo))
        assert isinstance(frame, pl.DataFrame)
        return frame.hash_rows(seed=0).to_numpy()
    h = np.zeros(hi - lo, np.uint64)
    with np.errstate(over="ignore"):
        for bits in numeric:
            h = (h ^ bits[lo:hi].astype(np.uint64, copy=False)) * _MIX
            h ^= h >> np.uint64(29)
    return h


class _Locator:
    """Where rows of the newer side are, by their mix: the mixes sorted with the row number
    packed in their low bits."""

    def __init__(self, mix: np.ndarray) -> None:
        n = len(mix)
        self.bits = max(1, (n - 1).bit_length())
        shift = np.uint64(self.bits)
        self.keys = np.sort(mix >> shift << shift | np.arange(n, dtype=np.uint64))
        self.shift = shift

    def first(self, mix: np.ndarray) -> np.ndarray:
        """For each mix, the position in `keys` of the first key sharing its high bits (== len
        when none does)."""
        lo = mix >> self.shift << self.shift
        at = np.searchsorted(self.keys, lo)
        found = at < len(self.keys)
        found[found] = (self.keys[at[found]] >> self.shift) == (lo[found] >> self.shift)
        return np.where(found, at, len(self.keys))

    def group(self, mix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For each mix, the keys `lo`..`hi` of the new rows sharing its high bits."""
        lo = mix >> self.shift << self.shift
        top = lo | np.uint64((1 << self.bits) - 1)
        return np.searchsorted(self.keys, lo), np.searchsorted(self.keys, top, side="right")

    def rows(self, keys: np.ndarray) -> np.ndarray:
        """The new rows of keys at positions `keys`."""
        return (self.keys[keys] & np.uint64((1 << self.bits) - 1)).astype(np.int64)

    def rows_at(self, at: int, mix: int, after: int, limit: int) -> list[int]:
        """Up to `limit` rows of the newer side whose mix shares the high bits of `mix` (found
        at key `at` by `first`): those from row `after` on first, then the ones before it."""
        shift = int(self.shift)
        high = mix >> shift
        top = ((high + 1) << shift) - 1  # the last key of this mix
        end = int(np.searchsorted(self.keys, np.uint64(top), side="right")) if top < 1 << 64 else len(self.keys)
        mid = int(np.searchsorted(self.keys[at:end], np.uint64((high << shift) | after))) + at
        mask = (1 << self.bits) - 1
        picked = [*self.keys[mid : min(end, mid + limit)].tolist(), *self.keys[at : min(mid, at + limit)].tolist()]
        return [int(k) & mask for k in picked[:limit]]


class Kept:
    """What `cancel_in_place` kept of both sides (`old`, `new`), and where each kept row was
    read (`read_order`)."""

    def __init__(self, old: pa.Table, new: pa.Table, walk: _Walk | None = None) -> None:
        self.walk = walk
        if walk is None:
            self.old, self.new = old, new
        else:
            self.old, self.new = _rows_where(old, walk.partner < 0), _rows_where(new, walk.used < 0)

    @property
    def order(self) -> Callable[[np.ndarray, pa.Table], np.ndarray] | None:
        """`read_order` when rows were cancelled, else None (the rows kept are all the rows)."""
        return None if self.walk is None else self.read_order

    def read_order(self, first: np.ndarray, values: pa.Table) -> np.ndarray:
        """For rows `first` of the kept rows (old then new; their values `values`), where the
        earliest row equal to each was read among all rows (old then new): its own place, or
        that of a cancelled old row. Ordering by it gives the order all rows would give. A
        cancelled old row equal to a value has its partner among the new rows of the value's
        mix (`_Locator`): those are looked up, not the old rows."""
        walk = self.walk
        if walk is None:
            return first
        n_old = len(walk.partner)
        at = np.concatenate([np.flatnonzero(walk.partner < 0), n_old + np.flatnonzero(walk.used < 0)])[first]
        if not len(first):
            return at
        mine = [_Column(c) for c in values.columns]
        lo, hi = walk.where.group(_row_mix(mine, values))
        count = hi - lo
        value = np.repeat(np.arange(len(first)), count)  # each value against each new row of its mix
        keys = np.repeat(lo, count) + (np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count))
        rows = walk.where.rows(keys)
        old_partner = walk.used[rows]
        cancelled = old_partner >= 0
        value, rows, old_partner = value[cancelled], rows[cancelled], old_partner[cancelled]
        equal = np.ones(len(rows), bool)
        for x, y in zip(walk.sides.new, mine):
            equal &= _equal_rows(x, rows, y, value)
        np.minimum.at(at, value[equal], old_partner[equal])
        return at


def _rows_where(table: pa.Table, keep: np.ndarray) -> pa.Table:
    """`table.filter(keep)`; a take of the rows when they are few (batch by batch)."""
    rows = np.flatnonzero(keep)
    if len(rows) * 8 < len(keep):
        return take_rows(table, rows)
    return table.filter(pa.array(keep))


class _Walk:
    """The walk's outcome: `partner[o]` the new row old row `o` cancelled with (-1: kept),
    `used[n]` the old row new row `n` cancelled with (-1: kept)."""

    def __init__(self, sides: _Sides, where: _Locator) -> None:
        self.sides, self.where = sides, where
        self.partner = np.full(sides.old_table.num_rows, -1, np.int64)
        self.used = np.full(sides.new_table.num_rows, -1, np.int64)


class _Sides:
    """Both sides' tables and columns, ready for comparisons."""

    def __init__(self, old: pa.Table, new: pa.Table) -> None:
        self.old_table, self.new_table = old, new
        self.old = [_Column(c) for c in old.columns]
        self.new = [_Column(c) for c in new.columns]


def _equal_rows(a: _Column, ai: np.ndarray, b: _Column, bi: np.ndarray) -> np.ndarray:
    """Whether row `ai[i]` of `a` equals row `bi[i]` of `b`, for each i (as `_equal`)."""
    if a.bits is not None and b.bits is not None:
        eq = a.bits[ai] == b.bits[bi]
        if a.valid is None and b.valid is None:
            return eq
        va = np.ones(len(ai), bool) if a.valid is None else a.valid[ai]
        vb = np.ones(len(bi), bool) if b.valid is None else b.valid[bi]
        return (va == vb) & (eq | ~va)
    x, y = a.array.take(pa.array(ai, pa.int64())), b.array.take(pa.array(bi, pa.int64()))
    equal = pc.equal(x, y)
    if x.null_count or y.null_count:
        equal = pc.or_(pc.fill_null(equal, False), pc.and_(pc.is_null(x), pc.is_null(y)))
    return np.asarray(equal.to_numpy(zero_copy_only=False), bool)


def cancel_in_place(old: pa.Table, new: pa.Table) -> Kept:
    """`old` and `new` (the same columns) without the stretches of rows they share in the same
    order (see the module docstring): the multiset difference of what is kept equals theirs."""
    if not old.num_rows or not new.num_rows or not old.num_columns:
        return Kept(old, new)
    if not all(comparable(t) for t in old.schema.types) or old.schema.types != new.schema.types:
        return Kept(old, new)
    sides = _Sides(old, new)
    a, b = sides.old, sides.new
    numeric = any(c.bits is not None for c in a)
    try:
        where = _Locator(_row_mix(b, new))
        old_mix = None if numeric else _row_mix(a, old)  # numbers: mixed a lookahead at a time
    except pl.exceptions.PolarsError:
        return Kept(old, new)
    walk = _Walk(sides, where)
    used = walk.used
    rows_old, rows_new = old.num_rows, new.num_rows

    # numbers first: a later column is compared only up to the first row that differed so far
    cheap_first = sorted(range(len(a)), key=lambda i: a[i].bits is None)

    def agree(o: int, n: int, w: int) -> int:
        """How many rows from `o` and `n` on agree (at most `w`), the new ones not used yet."""
        free = used[n : n + w] < 0
        run = w if free.all() else int(np.argmin(free))
        for i in cheap_first:
            if not run:
                break
            eq = _equal(a[i], o, b[i], n, run)
            if not eq.all():
                run = int(np.argmin(eq))
        return run

    budget = STRETCH_BUDGET[0] + (rows_old + rows_new) // STRETCH_BUDGET[1]
    o, last = 0, 0  # last: the new row after the last stretch (where the next one likely starts)
    steps, cancelled, look, previous = 0, 0, LOOKAHEAD, 0
    while o < rows_old and budget > 0:
        budget -= 1
        steps += 1
        if steps > PAYING_AFTER and cancelled < PAYING_ROWS * steps:
            break  # stretches too short to pay: the hashed path does the rest
        if o >= PAYING_SEEN and 2 * cancelled < o:
            break  # most rows find no equal row in order: an overwrite, a shuffle
        # the next old row (from o, `look` at a time) that some new row may equal
        ahead = _row_mix(a, old, o, o + look) if old_mix is None else old_mix[o : o + look]
        first = where.first(ahead)
        hits = np.flatnonzero(first < len(where.keys))
        if not len(hits):
            o += len(ahead)
            look = min(2 * look, MAX_LOOKAHEAD)
            continue
        look = LOOKAHEAD
        o += int(hits[0])
        start = None
        for n in where.rows_at(int(first[hits[0]]), int(ahead[hits[0]]), last, CANDIDATES):
            if used[n] < 0 and agree(o, n, 1):
                start = n
                break
        if start is None:
            o += 1
            continue
        n, w, run = start, max(FIRST_WINDOW, previous), 0  # stretches tend to be alike (files of one size)
        while True:
            w = min(w, rows_old - o - run, rows_new - n - run)
            if w <= 0:
                break
            got = agree(o + run, n + run, w)
            run += got
            if got < w:
                break
            w *= 2
        walk.partner[o : o + run] = np.arange(n, n + run)
        used[n : n + run] = np.arange(o, o + run)
        o, last, previous = o + run, n + run, run
        cancelled += run
    if 2 * cancelled < KEPT_SHARE * (rows_old + rows_new):
        return Kept(old, new)
    return Kept(old, new, walk)
