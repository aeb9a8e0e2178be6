"""rows_in_place.cancel_in_place: dropping the rows a rewrite kept in order never changes the
multiset difference (the net row diff), on generated rows (in-place updates, updated rows
moved, deleted rows shifting positions, inserts, reordered blocks, duplicates, nulls, NaN of
other bits, -0.0, strings only, nested columns, a budget too small, colliding mixes), and the
row diff with it equals the row diff without it (the hashed path alone)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pyarrow as pa
import pytest

import deltaexplore.inspect.row_diff as rd
import deltaexplore.inspect.rows_in_place as rip


def _key(row: dict) -> tuple:
    return tuple(repr(v) for v in row.values())  # -0.0 and 0.0 differ, NaN equals NaN


def _difference(old: pa.Table, new: pa.Table) -> Counter:
    out = Counter(_key(r) for r in new.to_pylist())
    out.subtract(Counter(_key(r) for r in old.to_pylist()))
    return Counter({k: v for k, v in out.items() if v})


def _same_net(old: pa.Table, new: pa.Table, kept: rip.Kept) -> bool:
    """`net_rows` of what was kept, in the read order of all rows, equals `net_rows` of all
    rows: the same rows, counts and order."""
    fast = rd.net_rows(kept.old, kept.new, kept.read_order)
    assert _difference(kept.old, kept.new) == _difference(old, new)
    return repr(fast.to_pylist()) == repr(rd.net_rows(old, new).to_pylist()) and fast.schema == old.schema.append(
        pa.field("_count", pa.int64())
    )


def _rows(ids, *, amount=None, name=None) -> pa.Table:
    ids = list(ids)
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "grp": pa.array([i % 3 for i in ids], pa.int32()),
            "amount": pa.array(amount if amount is not None else [i * 0.5 for i in ids], pa.float64()),
            "name": pa.array(name if name is not None else [f"n{i % 7}" for i in ids]),
        }
    )


def _nan(bits: int) -> float:
    return float(np.array([bits], np.uint64).view(np.float64)[0])


def _scenarios():
    base = list(range(3000))
    amount = [i * 0.5 for i in base]
    out = {}
    upd = amount.copy()
    for i in range(0, 3000, 250):
        upd[i] += 1
    out["updated in place"] = (_rows(base), _rows(base, amount=upd), True)
    moved = [i for i in base if i % 250] + [i for i in base if not i % 250]
    moved_amount = [i * 0.5 + (0 if i % 250 else 1) for i in moved]
    out["updated rows moved to the end"] = (_rows(base), _rows(moved, amount=moved_amount), True)
    out["a deleted row shifts the rest"] = (_rows(base), _rows([i for i in base if i != 17]), True)
    out["rows deleted here and there"] = (_rows(base), _rows([i for i in base if i % 97]), True)
    out["rows inserted in the middle"] = (_rows(base), _rows([*base[:1500], 9001, 9002, *base[1500:]]), True)
    blocks = [base[i : i + 300] for i in range(0, 3000, 300)]
    out["blocks reordered"] = (_rows(base), _rows([i for b in blocks[::-1] for i in b]), True)
    rng = np.random.default_rng(5)
    out["rows shuffled"] = (_rows(base), _rows(rng.permutation(3000).tolist()), False)
    dup = [i % 40 for i in base]
    out["duplicates"] = (_rows(dup), _rows([*dup[:2000], *dup[2100:], 1, 1, 1]), True)
    nulls = pa.table(
        {
            "id": pa.array([None if i % 5 == 0 else i for i in range(600)], pa.int64()),
            "f": pa.array([None if i % 7 == 0 else float(i) for i in range(600)], pa.float64()),
            "s": pa.array([None if i % 3 == 0 else str(i % 11) for i in range(600)]),
        }
    )
    null_new = nulls.set_column(
        1, "f", pa.array([None if i % 7 == 0 or i == 300 else float(i) for i in range(600)], pa.float64())
    )
    out["nulls, a value made null"] = (nulls, null_new, True)
    odd = pa.table(
        {
            "id": pa.array(range(400), pa.int64()),
            "f": pa.array([[float("nan"), _nan(0x7FF8000000000001), -0.0, 0.0, 1.0][i % 5] for i in range(400)]),
        }
    )
    swapped = [[_nan(0x7FF8000000000001), float("nan"), 0.0, -0.0, 1.0][i % 5] for i in range(400)]
    out["NaN of other bits, -0.0 for 0.0"] = (odd, odd.set_column(1, "f", pa.array(swapped)), None)
    strings = pa.table({"a": [f"s{i}" for i in range(500)], "b": [str(i % 4) for i in range(500)]})
    changed_b = pa.array([str(i % 4) if i != 250 else "x" for i in range(3, 500)])
    out["strings only"] = (strings, strings.slice(3).set_column(1, "b", changed_b), True)
    flags = pa.table({"k": pa.array(range(300), pa.int64()), "b": pa.array([i % 2 == 0 for i in range(300)])})
    out["booleans"] = (flags, flags.set_column(1, "b", pa.array([i % 2 == 0 or i == 150 for i in range(300)])), True)
    from decimal import Decimal

    dec = pa.table(
        {"k": pa.array(range(300), pa.int64()), "m": pa.array([Decimal(i) / 4 for i in range(300)], pa.decimal128(8, 2))}
    )
    out["decimals"] = (dec, dec.slice(0, 200), True)
    nested = pa.table({"k": pa.array(range(50), pa.int64()), "l": pa.array([[i] for i in range(50)], pa.list_(pa.int64()))})
    out["a nested column: left whole"] = (nested, nested.slice(1), False)
    out["one side empty"] = (_rows(base).slice(0, 0), _rows(base), False)
    return out


SCENARIOS = _scenarios()


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_cancel_in_place_keeps_the_multiset_difference(name):
    old, new, cancels = SCENARIOS[name]
    kept = rip.cancel_in_place(old, new)
    kept_old, kept_new = kept.old, kept.new
    assert _difference(kept_old, kept_new) == _difference(old, new)
    assert _same_net(old, new, kept)
    assert kept_old.schema == old.schema and kept_new.schema == new.schema
    assert old.num_rows - kept_old.num_rows == new.num_rows - kept_new.num_rows  # rows cancel in pairs
    if cancels is True:  # the walk found the stretches: what is left is about the rows that differ
        assert kept_old.num_rows + kept_new.num_rows < (old.num_rows + new.num_rows) // 4
    elif cancels is False and name != "rows shuffled":
        assert (kept_old, kept_new) == (old, new)


def test_negative_zero_and_other_nans_are_left_to_the_hashed_path(monkeypatch):
    """Rows equal only under the hashed path's equality (-0.0 against 0.0, NaN of other bits)
    are not cancelled here: the hashed path decides them as it did (the walk made to keep
    whatever it cancels, however little)."""
    monkeypatch.setattr(rip, "PAYING_ROWS", 0)
    monkeypatch.setattr(rip, "PAYING_SEEN", 10**9)
    monkeypatch.setattr(rip, "KEPT_SHARE", 0.0)
    monkeypatch.setattr(rip, "STRETCH_BUDGET", (10**6, 1))
    old, new, _ = SCENARIOS["NaN of other bits, -0.0 for 0.0"]
    kept = rip.cancel_in_place(old, new)
    assert _same_net(old, new, kept)
    kept_old, kept_new = kept.old, kept.new
    never = {i for i in range(400) if i % 5 < 4}
    assert never <= set(kept_old.column("id").to_pylist()) and never <= set(kept_new.column("id").to_pylist())
    assert kept_old.num_rows < 400  # the rows of 1.0 cancel


def test_small_budget_and_colliding_mixes_keep_the_difference(monkeypatch):
    """A budget of one stretch, and a mix equal for every row (every row a candidate, at most
    `CANDIDATES` tried): fewer rows cancel, the difference stays."""
    for name in ("updated in place", "duplicates", "rows deleted here and there", "strings only"):
        old, new, _ = SCENARIOS[name]
        with monkeypatch.context() as m:
            m.setattr(rip, "STRETCH_BUDGET", (1, 10**9))
            assert _same_net(old, new, rip.cancel_in_place(old, new)), name
        with monkeypatch.context() as m:
            m.setattr(
                rip,
                "_row_mix",
                lambda columns, table, lo=0, hi=None: np.zeros(min(hi or table.num_rows, table.num_rows) - lo, np.uint64),
            )
            assert _same_net(old, new, rip.cancel_in_place(old, new)), name


@pytest.mark.parametrize("seed", range(6))
def test_random_edits_keep_the_difference(seed):
    """Random runs of kept, changed, deleted, inserted and duplicated rows with nulls."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(50, 2000))
    ids = rng.integers(0, 60, n)
    vals = [None if v < 0.05 else round(float(v), 1) for v in rng.random(n)]
    old = pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array(vals, pa.float64()), "s": [str(i % 5) for i in ids]})
    pieces, at = [], 0
    while at < n:
        step = int(rng.integers(1, 200))
        kind = rng.integers(0, 4)
        piece = old.slice(at, step)
        if kind == 1:  # changed
            piece = piece.set_column(1, "v", pa.array(rng.random(piece.num_rows), pa.float64()))
        elif kind == 2:  # deleted
            piece = piece.slice(0, 0)
        elif kind == 3:  # inserted before, repeated
            pieces.append(old.slice(int(rng.integers(0, n)), 3))
        pieces.append(piece)
        at += step
    order = rng.permutation(len(pieces))
    new = pa.concat_tables([pieces[i] for i in order])
    kept = rip.cancel_in_place(old, new)
    kept_old, kept_new = kept.old, kept.new
    assert _same_net(old, new, kept)
    assert _difference(kept_old, kept_new) == _difference(old, new)


def test_the_walk_stops_where_it_does_not_pay(monkeypatch):
    """Rows in no shared order (shuffled, or every other row changed): the walk gives up after
    `PAYING_AFTER` steps whose stretches are short, keeps nothing when under half the rows
    cancelled (`KEPT_SHARE`), and the difference is still exact; rows with no equal row at all
    are looked at in growing lookaheads and the walk stops after `PAYING_SEEN` of them."""
    calls = []
    real = rip._Locator.first
    monkeypatch.setattr(rip._Locator, "first", lambda self, mix: calls.append(len(mix)) or real(self, mix))
    base = list(range(20_000))
    old = _rows(base)
    every_other = _rows(base, amount=[i * 0.5 + (i % 2) for i in base])
    shuffled = _rows(np.random.default_rng(2).permutation(20_000).tolist())
    for new in (every_other, shuffled):
        calls.clear()
        kept = rip.cancel_in_place(old, new)
        assert _same_net(old, new, kept)
        assert len(calls) <= rip.PAYING_AFTER + 1
        assert kept.walk is None and kept.order is None  # under half cancelled: kept whole
    calls.clear()
    apart = _rows(range(100_000, 120_000))  # nothing equal: lookaheads double
    kept = rip.cancel_in_place(old, apart)
    assert kept.old is old and kept.new is apart
    assert len(calls) < 20 and max(calls) > rip.LOOKAHEAD
