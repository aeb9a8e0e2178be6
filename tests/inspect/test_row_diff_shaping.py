"""The keyed shaping of a row diff (`row_diff.shape_rows`): pairing a few changed rows by key in
Python and naming the changed columns with numpy give the table the polars shaping gave (kept
here as the reference: joins, group-bys and expressions), on generated net rows: changed
columns named, old and new side by side, keys repeated, nulls, NaN, compound and float keys,
both directions, and more rows than the Python pairing takes."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from deltaexplore.inspect import row_diff
from deltaexplore.inspect.errors import InspectError
from deltaexplore.inspect.row_diff import CHANGE, CHANGED, COUNT, _conform, _frame, shape_rows
from deltaexplore.inspect.schemas import diff_rows_schema


def reference_keyed(net: pa.Table, key: list[str], *, backwards: bool, meta: dict[str, str]) -> pa.Table:
    """The keyed shaping before the Python pairing (polars throughout)."""
    count = net.column(COUNT).combine_chunks()
    if backwards:
        count = pc.negate(count)
    values = net.drop_columns([COUNT])
    fields = list(values.schema)
    deleted = values.filter(pc.less(count, 0))
    inserted = values.filter(pc.greater(count, 0))
    d = _frame(deleted.select(key)).with_columns(pl.int_range(pl.len(), dtype=pl.Int64).alias("__d"))
    n = _frame(inserted.select(key)).with_columns(pl.int_range(pl.len(), dtype=pl.Int64).alias("__n"))
    for side, frame in (("older", d), ("newer", n)):
        dup = frame.group_by(key).len().filter(pl.col("len") > 1)
        if dup.height:
            raise InspectError(f"key {key} is not unique among the changed rows of the {side} version: {dup.row(0)[:-1]} repeats")
    pairs = d.join(n, on=key, how="full", nulls_equal=True, coalesce=True).sort(key, nulls_last=True)
    di = pairs.get_column("__d").to_arrow()
    ni = pairs.get_column("__n").to_arrow()
    before = deleted.take(di)
    after = inserted.take(ni)
    has_b, has_a = pc.is_valid(di), pc.is_valid(ni)
    change = pc.if_else(pc.and_(has_b, has_a), "update", pc.if_else(has_b, "delete", "insert"))
    others = [f for f in fields if f.name not in key]
    diffs = []
    bf, af = _frame(before.select([f.name for f in others])), _frame(after.select([f.name for f in others]))
    for f in others:
        diffs.append(pl.when(bf.get_column(f.name).ne_missing(af.get_column(f.name))).then(pl.lit(f.name)))
    if others:
        flags = pl.DataFrame({"__x": [0] * pairs.height}).select(pl.concat_list(diffs).list.drop_nulls().alias("c"))
        changed = flags.get_column("c").to_arrow().cast(pa.list_(pa.string()))
    else:
        changed = pa.array([[]] * pairs.height, pa.list_(pa.string()))
    changed = pc.if_else(pc.equal(change, "update"), changed, pa.nulls(pairs.height, pa.list_(pa.string())))
    out: dict[str, Any] = {CHANGE: change, CHANGED: changed}
    for k in key:
        out[k] = pc.coalesce(before.column(k), after.column(k))
    for f in others:
        out[f"before.{f.name}"] = before.column(f.name)
        out[f"after.{f.name}"] = after.column(f.name)
    key_fields = [f for f in fields if f.name in key]
    return _conform(out, diff_rows_schema(key_fields + others, key), meta, order=None)


def net_of(old: dict[str, list], new: dict[str, list], types: dict[str, pa.DataType]) -> pa.Table:
    """Net rows as `net_rows` gives them: the older side's rows -1, the newer side's +1."""
    schema = pa.schema([pa.field(c, t) for c, t in types.items()])
    a, b = pa.table(old, schema=schema), pa.table(new, schema=schema)
    both = pa.concat_tables([a, b])
    return both.append_column(COUNT, pa.array([-1] * a.num_rows + [1] * b.num_rows, pa.int64()))


def generated(seed: int, rows: int, *, key_type: pa.DataType, nulls: bool) -> pa.Table:
    """`rows` keys deleted, updated or inserted, values with nulls and NaN, shuffled."""
    rng = np.random.default_rng(seed)
    keys = rng.permutation(rows * 3)[:rows].tolist()
    if key_type == pa.string():
        keys = [f"k{k}" for k in keys]
    elif pa.types.is_floating(key_type):
        keys = [k / 2 for k in keys]
    fate = rng.integers(0, 3, rows)  # 0 deleted, 1 updated, 2 inserted
    amounts = rng.random(rows).tolist()
    amounts = [math_nan if i % 7 == 3 else a for i, a in enumerate(amounts)]
    names = [None if nulls and i % 5 == 0 else f"n{i}" for i in range(rows)]
    tags = [[i, i + 1] if i % 3 else None for i in range(rows)]
    old: dict[str, list] = {"k": [], "amount": [], "name": [], "tags": []}
    new: dict[str, list] = {"k": [], "amount": [], "name": [], "tags": []}
    for i, k in enumerate(keys):
        if nulls and i == rows // 2:
            k = None
        if fate[i] in (0, 1):
            for c, v in (("k", k), ("amount", amounts[i]), ("name", names[i]), ("tags", tags[i])):
                old[c].append(v)
        if fate[i] in (1, 2):
            change = i % 4
            new["k"].append(k)
            new["amount"].append(amounts[i] + 1 if change == 0 else amounts[i])
            new["name"].append(None if change == 1 else names[i])
            new["tags"].append([9] if change == 2 else tags[i])
            new.setdefault("_", [])
    new.pop("_", None)
    types = {"k": key_type, "amount": pa.float64(), "name": pa.string(), "tags": pa.list_(pa.int64())}
    net = net_of(old, new, types)
    return net.take(pa.array(rng.permutation(net.num_rows)))


math_nan = float("nan")


def same(net: pa.Table, key: list[str], backwards: bool = False) -> pa.Table:
    meta = {"v1": "0", "v2": "1"}
    try:
        want = reference_keyed(net, key, backwards=backwards, meta=meta)
    except InspectError as exc:
        with pytest.raises(InspectError) as got:
            shape_rows(net, key, backwards=backwards, meta=meta)
        assert str(got.value) == str(exc)
        return pa.table({})
    got = shape_rows(net, key, backwards=backwards, meta=meta)
    assert got.schema == want.schema
    assert repr(got.to_pylist()) == repr(want.to_pylist())  # NaN: as text
    return got


CASES = [
    (seed, rows, key_type, nulls)
    for seed, rows in ((0, 1), (1, 20), (2, 200), (3, 1500), (4, 1800))
    for key_type in (pa.int64(), pa.string(), pa.float64(), pa.int32())
    for nulls in (False, True)
]


@pytest.mark.parametrize(("seed", "rows", "key_type", "nulls"), CASES)
def test_keyed_shaping_equals_the_polars_shaping(seed, rows, key_type, nulls, monkeypatch):
    calls = []
    in_python = row_diff._pairs_in_python
    monkeypatch.setattr(row_diff, "_pairs_in_python", lambda *a: calls.append(1) or in_python(*a))
    net = generated(seed, rows, key_type=key_type, nulls=nulls)
    got = same(net, ["k"])
    assert bool(calls) == (net.num_rows <= row_diff.SMALL_PAIRING and not pa.types.is_floating(key_type))
    same(net, ["k"], backwards=True)
    if rows >= 20:
        changes = set(got.column(CHANGE).to_pylist())
        assert changes == {"insert", "delete", "update"}
        named = {c for cs in got.column(CHANGED).to_pylist() if cs for c in cs}
        assert named == {"amount", "name", "tags"}


def test_compound_keys_empty_sides_and_no_other_columns():
    types = {"a": pa.int64(), "b": pa.string(), "v": pa.float64()}
    net = net_of(
        {"a": [1, 1, None, 2], "b": ["x", None, "y", "x"], "v": [1.0, math_nan, 3.0, -0.0]},
        {"a": [1, 1, None, 3], "b": ["x", None, "y", None], "v": [1.5, math_nan, 3.0, 0.0]},
        types,
    )
    same(net, ["a", "b"])
    same(net, ["a", "b"], backwards=True)
    same(net, ["v"])  # a float key: the polars pairing
    same(net_of({"a": [], "b": [], "v": []}, {"a": [1], "b": ["x"], "v": [0.5]}, types), ["a"])
    same(net_of({"a": [2, 1], "b": ["x", "y"], "v": [0.5, 1.0]}, {"a": [], "b": [], "v": []}, types), ["a", "b"])
    same(net_of({"a": [], "b": [], "v": []}, {"a": [], "b": [], "v": []}, types), ["a"])
    # every comparison kind: floats with NaN, -0.0 and nulls on either side, timestamps,
    # decimals, booleans, binary and a struct (polars)
    from datetime import datetime
    from decimal import Decimal

    kinds = {
        "k": pa.int64(),
        "f": pa.float32(),
        "t": pa.timestamp("us", "UTC"),
        "d": pa.decimal128(10, 2),
        "b": pa.bool_(),
        "raw": pa.binary(),
        "s": pa.struct([("x", pa.float64())]),
    }
    day = datetime(2026, 1, 1)
    olds = {
        "k": [1, 2, 3, 4, 5, 6],
        "f": [math_nan, None, math_nan, -0.0, None, 1.0],
        "t": [day, None, day, None, day, day],
        "d": [Decimal("1.10"), None, Decimal("2.00"), None, Decimal("3"), Decimal("4")],
        "b": [True, None, False, None, True, False],
        "raw": [b"a", None, b"b", None, b"c", b"d"],
        "s": [{"x": math_nan}, None, {"x": 1.0}, {"x": None}, None, {"x": -0.0}],
    }
    news = {
        "k": [1, 2, 3, 4, 5, 6],
        "f": [math_nan, None, None, 0.0, math_nan, 1.5],
        "t": [day, None, None, day, day, datetime(2026, 1, 2)],
        "d": [Decimal("1.10"), None, None, Decimal("1"), Decimal("3.00"), Decimal("5")],
        "b": [True, None, None, True, True, True],
        "raw": [b"a", None, None, b"x", b"c", b"e"],
        "s": [{"x": math_nan}, None, None, {"x": 2.0}, None, {"x": 0.0}],
    }
    got = same(net_of(olds, news, kinds), ["k"])
    named = dict(zip(got.column("k").to_pylist(), got.column(CHANGED).to_pylist()))
    assert named[1] == named[2] == [] and named[3] == ["f", "t", "d", "b", "raw", "s"]
    assert named[5] == ["f"] and "f" not in named[4]
    keys_only = net_of({"a": [1, 2]}, {"a": [2, 3]}, {"a": pa.int64()})
    got = same(keys_only, ["a"])
    assert got.column(CHANGE).to_pylist() == ["delete", "update", "insert"] and got.column(CHANGED)[1].as_py() == []


@pytest.mark.parametrize("small", [True, False])
def test_repeated_keys_raise_the_same_error(small, monkeypatch):
    if not small:
        monkeypatch.setattr(row_diff, "SMALL_PAIRING", 0)
    types = {"k": pa.int64(), "v": pa.string()}
    for old, new in (
        ({"k": [1, 1], "v": ["a", "b"]}, {"k": [1], "v": ["c"]}),  # repeated at the older side
        ({"k": [1], "v": ["a"]}, {"k": [2, 2], "v": ["b", "c"]}),  # at the newer side
        ({"k": [None, None], "v": ["a", "b"]}, {"k": [], "v": []}),  # nulls repeat too
    ):
        net = net_of(old, new, types)
        with pytest.raises(InspectError, match="not unique among the changed rows of the"):
            shape_rows(net, ["k"], backwards=False, meta={})
        assert same(net, ["k"]).num_rows == 0  # the reference raises the same message
