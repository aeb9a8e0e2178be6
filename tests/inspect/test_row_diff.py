"""diff_rows: the net row diff of two versions, against a brute-force multiset difference of both
versions read whole, on generated tables (UPDATE, DELETE with and without DVs, OPTIMIZE, MERGE,
overwrite, schema changes; keyed and unkeyed) and on the corpus tables with several versions."""

from __future__ import annotations

import math
import warnings
from collections import Counter

import numpy as np
import pyarrow as pa
import pytest
from corpus_paths import CORPUS, corpus_catalog

import deltaexplore as dx
from deltaexplore.core.operations import (
    delete,
    merge,
    optimize,
    purge_deletion_vectors,
    restore,
    set_table_properties,
    update,
    vacuum,
    when_matched_update_all,
    when_not_matched_insert_all,
    write_table,
)
from deltaexplore.inspect import diff_rows
from deltaexplore.inspect.errors import InspectError
from deltaexplore.inspect.row_diff import Column, align, plan_row_diff, read_summary
from deltaexplore.inspect.schemas import diff_rows_schema


def _hashable(v):
    if isinstance(v, dict):
        return tuple(sorted((k, _hashable(x)) for k, x in v.items()))
    if isinstance(v, (list, tuple)):
        return tuple(_hashable(x) for x in v)
    if isinstance(v, float) and math.isnan(v):
        return "NaN"
    return v


def _aligned_full(table, version, columns):
    snap = table.snapshot(version)
    return align(snap.to_arrow(), columns, older=True)


def brute_force(table, v1, v2, columns=None):
    """Both versions read whole, in the newer version's columns: Counter(new) - Counter(old)."""
    plan = plan_row_diff(table, v1, v2, columns=columns)
    lo, hi = plan.older.version, plan.newer.version
    newer = [Column(c.name, c.type, c.name) for c in plan.columns]
    old = Counter(tuple(_hashable(v) for v in r.values()) for r in _aligned_full(table, lo, plan.columns).to_pylist())
    new = Counter(tuple(_hashable(v) for v in r.values()) for r in _aligned_full(table, hi, newer).to_pylist())
    first, second = (old, new) if v1 <= v2 else (new, old)
    out = Counter()
    for row, n in (second - first).items():
        out[("insert", row)] = n
    for row, n in (first - second).items():
        out[("delete", row)] = n
    return out


def as_counter(result):
    names = [n for n in result.column_names if n not in ("_change", "_count")]
    out = Counter()
    for r in result.to_pylist():
        out[(r["_change"], tuple(_hashable(r[n]) for n in names))] += r["_count"]
    return out


def check(table, v1, v2, **kw):
    got = diff_rows(table, v1, v2, **kw)
    assert as_counter(got) == brute_force(table, v1, v2, kw.get("columns")), (v1, v2)
    return got


def rows(ids, amount=1.0, name="a"):
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "part": pa.array([i % 3 for i in ids], pa.int64()),
            "amount": pa.array([amount * i for i in ids], pa.float64()),
            "name": pa.array([f"{name}{i}" for i in ids]),
        }
    )


@pytest.fixture
def dv_table(tmp_path):
    """v0 create (3 files), v1 append, v2 UPDATE (DV), v3 DELETE (DV), v4 DV purge, v5-6 small
    appends, v7 OPTIMIZE."""
    path = str(tmp_path / "dv")
    write_table(path, rows(range(0, 300)), max_rows_per_file=100, configuration={"delta.enableDeletionVectors": "true"})
    write_table(path, rows(range(300, 400)))
    update(path, {"amount": "amount + 1000"}, "id % 10 = 0")
    delete(path, "id >= 350")
    purge_deletion_vectors(path)
    write_table(path, rows(range(400, 410)))
    write_table(path, rows(range(410, 420)))
    optimize(path)
    return dx.open_table(path)


@pytest.fixture
def cow_table(tmp_path):
    """Copy-on-write: v0 create partitioned, v1 UPDATE, v2 DELETE, v3 MERGE, v4 OPTIMIZE,
    v5 add a column, v6 UPDATE the new column, v7 overwrite, v8 duplicates appended."""
    path = str(tmp_path / "cow")
    write_table(
        path,
        rows(range(0, 200)),
        partition_by=["part"],
        max_rows_per_file=20,
        configuration={"delta.enableDeletionVectors": "false"},
    )
    update(path, {"name": "'changed'"}, "id < 15")
    delete(path, "id between 100 and 104")
    source = rows(list(range(190, 210)), amount=2.0, name="m")
    merge(path, source, "source.id = target.id", [when_matched_update_all(), when_not_matched_insert_all()])
    optimize(path)
    write_table(path, rows([500]).append_column("extra", pa.array(["x"])), schema_mode="merge")
    update(path, {"extra": "'set'"}, "id < 5")
    write_table(path, rows(range(0, 50)), mode="overwrite")
    write_table(path, rows([1, 1, 2]))
    return dx.open_table(path)


def test_dv_table_every_pair_matches_brute_force(dv_table):
    latest = dv_table.latest_version()
    for v1 in range(latest + 1):
        for v2 in range(latest + 1):
            check(dv_table, v1, v2)


def test_cow_table_every_pair_matches_brute_force(cow_table):
    latest = cow_table.latest_version()
    for v1 in range(latest + 1):
        for v2 in range(v1, latest + 1):
            check(cow_table, v1, v2)
    check(cow_table, latest, 0)


def test_rewrites_cancel_out(dv_table, cow_table):
    """OPTIMIZE and DV purge change files but no row: an empty diff that still read the files."""
    for table, v, op in ((dv_table, 4, "REORG"), (dv_table, 7, "OPTIMIZE"), (cow_table, 4, "OPTIMIZE")):
        ops = dict(zip(table.history().column("version").to_pylist(), table.history().column("operation").to_pylist()))
        assert ops[v] == op
        got = diff_rows(table, v - 1, v)
        assert got.num_rows == 0
        summary = read_summary(got)
        assert summary["files_read"] > 0 and summary["bytes_read"] > 0
    # an UPDATE by copy-on-write rewrote whole files, but only 15 rows changed
    got = diff_rows(cow_table, 0, 1)
    assert Counter(got.column("_change").to_pylist()) == {"insert": 15, "delete": 15}
    changed_files = cow_table.inspect.diff_files(0, 1).num_rows
    assert changed_files > 1 and changed_files == read_summary(got)["files_read"]


def test_reads_only_files_that_differ(dv_table):
    got = diff_rows(dv_table, 2, 3)  # DELETE through DVs: files re-added with new DVs
    files = dv_table.inspect.diff_files(2, 3)
    assert set(files.column("change").to_pylist()) == {"dv_changed"}
    summary = read_summary(got)
    assert summary["files_read"] == files.num_rows
    assert summary["bytes_read"] >= sum(files.column("size").to_pylist())
    assert (summary["v1"], summary["v2"]) == (2, 3)
    assert got.num_rows == 50 and set(got.column("_change").to_pylist()) == {"delete"}
    assert sorted(got.column("id").to_pylist()) == list(range(350, 400))


def test_keyed_update_names_changed_columns(dv_table):
    got = diff_rows(dv_table, 1, 2, key="id")
    assert got.schema.names[:3] == ["_change", "_changed_columns", "id"]
    assert "before.amount" in got.schema.names and "after.amount" in got.schema.names
    assert got.num_rows == 40
    r = {x["id"]: x for x in got.to_pylist()}[30]
    assert r["_change"] == "update" and r["_changed_columns"] == ["amount"]
    assert (r["before.amount"], r["after.amount"]) == (30.0, 1030.0)
    assert r["before.name"] == r["after.name"] == "a30"
    assert got.column("id").to_pylist() == sorted(got.column("id").to_pylist())
    # inserts and deletes by key, and the reverse direction swaps them
    keyed = diff_rows(dv_table, 2, 3, key=["id"])
    assert set(keyed.column("_change").to_pylist()) == {"delete"}
    assert keyed.column("_changed_columns").null_count == keyed.num_rows
    back = diff_rows(dv_table, 3, 2, key="id")
    assert set(back.column("_change").to_pylist()) == {"insert"}
    assert back.column("after.name").to_pylist() == keyed.column("before.name").to_pylist()


def test_keyed_merge_and_schema_change(cow_table):
    got = {r["id"]: r for r in diff_rows(cow_table, 2, 3, key="id").to_pylist()}
    assert {r["_change"] for i, r in got.items() if i >= 200} == {"insert"}
    assert {r["_change"] for i, r in got.items() if i < 200} == {"update"}
    assert got[195]["_changed_columns"] == ["amount", "name"]
    # a column added later: null at the older version, then set by UPDATE
    got = {r["id"]: r for r in diff_rows(cow_table, 4, 6, key="id").to_pylist()}
    assert got[3]["_changed_columns"] == ["extra"] and got[3]["before.extra"] is None and got[3]["after.extra"] == "set"
    assert got[500]["_change"] == "insert"
    # the comparison limited to some columns
    only = diff_rows(cow_table, 5, 6, key="id", columns=["name"])
    assert only.num_rows == 0
    assert diff_rows(cow_table, 5, 6, key="id", columns=["extra"]).num_rows == 5


def test_duplicates_are_counted_and_keys_must_be_unique(cow_table):
    latest = cow_table.latest_version()
    got = check(cow_table, latest - 1, latest)
    counts = {(r["id"], r["_change"]): r["_count"] for r in got.to_pylist()}
    assert counts == {(1, "insert"): 2, (2, "insert"): 1}
    with pytest.raises(InspectError, match="not unique"):
        diff_rows(cow_table, latest - 1, latest, key="id")


def test_bad_arguments(dv_table):
    with pytest.raises(InspectError):
        diff_rows(dv_table, 0, 1, key="nope")
    with pytest.raises(InspectError):
        diff_rows(dv_table, 0, 1, columns=["nope"])
    with pytest.raises(InspectError):
        diff_rows(dv_table, -1, 1)
    with pytest.raises(dx.VersionNotFoundError):
        diff_rows(dv_table, 0, 99)
    with pytest.raises(dx.StorageError, match="vacuumed"):
        vacuumed = dv_table.uri
        vacuum(vacuumed, retention_hours=0, dry_run=False, enforce_retention_duration=False)
        diff_rows(dx.open_table(vacuumed), 0, 1)
    same = diff_rows(dv_table, 2, 2)
    assert same.num_rows == 0 and read_summary(same)["files_read"] == 0


def test_declared_schema(dv_table):
    got = diff_rows(dv_table, 0, 2)
    fields = list(dv_table.snapshot(2).arrow_schema)
    expected = diff_rows_schema(fields, None)
    assert got.schema.remove_metadata() == expected.remove_metadata()
    assert got.schema.metadata[b"deltaexplore.table"] == b"diff_rows"
    assert got.schema.field("_count").metadata[b"unit"] == b"count"


def test_restore_and_namespace(tmp_path):
    path = str(tmp_path / "r")
    write_table(path, rows(range(10)), configuration={"delta.enableChangeDataFeed": "true"})
    delete(path, "id < 3")
    set_table_properties(path, {"a": "b"})
    restore(path, version=0)
    table = dx.open_table(path)
    assert table.inspect.diff_rows(0, 3).num_rows == 0  # restored: nothing differs
    assert table.inspect.diff_rows(0, 1).num_rows == 3
    assert table.snapshot(1).inspect.diff_rows().column("_change").to_pylist() == ["delete"] * 3
    # with a change data feed the result is the same net change
    cdf = table.changes(1, 1)
    assert sorted(cdf.column("id").to_pylist()) == sorted(table.inspect.diff_rows(0, 1).column("id").to_pylist())


def _corpus_pairs():
    out = []
    for t in corpus_catalog():
        if t["status"] != "ok" or t["latest_version"] < 1 or not t["active_files"]:
            continue
        lv = t["latest_version"]
        out.append(pytest.param(t["table_root"], 0, lv, id=f"{t['id']}:0-{lv}"))
        if lv > 2:
            out.append(pytest.param(t["table_root"], lv - 1, lv, id=f"{t['id']}:{lv - 1}-{lv}"))
    return out


@pytest.mark.corpus
@pytest.mark.parametrize(("root", "lo", "hi"), _corpus_pairs())
def test_corpus_matches_brute_force(root, lo, hi):
    table = dx.open_table(str(CORPUS / root))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            expected = brute_force(table, lo, hi)
        except dx.DeltaExploreError as exc:
            pytest.skip(f"versions not readable whole: {exc}")
        got = diff_rows(table, lo, hi)
    assert as_counter(got) == expected


def test_progress_pieces_and_stop(cow_table, monkeypatch):
    """`progress` follows the read piece by piece up to 1.0; an exception it raises stops the diff."""
    import deltaexplore.inspect.row_diff as rd

    monkeypatch.setattr(rd, "PIECE_BYTES", 1)  # every file its own piece
    monkeypatch.setattr(rd, "MIN_PIECE_BYTES", 1)
    seen = []
    got = diff_rows(cow_table, 0, 7, progress=lambda f, m: seen.append((f, m)))
    assert as_counter(got) == brute_force(cow_table, 0, 7)
    fractions = [f for f, _ in seen]
    files = read_summary(got)["files_read"]
    # one report before each file (a piece), one when read, then comparing, pairing, done
    assert fractions == sorted(fractions) and fractions[-1] == 1.0 and len(seen) == files + 4
    assert "comparing" in seen[-3][1] and seen[-1][1] == f"{got.num_rows:,} changed rows"

    class Stop(Exception):
        pass

    calls = []

    def stop(f, m):
        calls.append(f)
        if len(calls) == 3:
            raise Stop

    with pytest.raises(Stop):
        diff_rows(cow_table, 0, 7, progress=stop)
    assert len(calls) == 3


def test_hash_collisions_fall_back_on_every_column(cow_table, dv_table, monkeypatch):
    """Rows are grouped by a hash of the row; rows that differ under one hash are grouped by
    every column: a hash that collides for every row still gives the exact result."""
    import polars as pl

    expected = {(t, v1, v2): as_counter(diff_rows(t, v1, v2)) for t, v1, v2 in ((cow_table, 0, 3), (dv_table, 1, 7))}
    monkeypatch.setattr(pl.DataFrame, "hash_rows", lambda self, seed=0: pl.Series("h", [7] * self.height, pl.UInt64))
    for (t, v1, v2), want in expected.items():
        assert as_counter(diff_rows(t, v1, v2)) == want == brute_force(t, v1, v2)


def _tricky(n: int, changed: int | None = None) -> pa.Table:
    """Rows of many types with nulls, NaN, -0.0, empty strings; `changed`: that row's every
    value replaced."""
    import datetime as dt
    from decimal import Decimal

    def pick(i, values):
        return values[(i if i != changed else i + 1) % len(values)]

    return pa.table(
        {
            "i": pa.array([pick(i, [None, 1, 2, 3, 4]) for i in range(n)], pa.int32()),
            "f": pa.array([pick(i, [float("nan"), -0.0, 0.0, None, 1.5, 2.5]) for i in range(n)], pa.float64()),
            "b": pa.array([pick(i, [True, False, None]) for i in range(n)]),
            "s": pa.array([pick(i, ["", "a", None, "bb", "a" * 40]) for i in range(n)]),
            "y": pa.array([pick(i, [b"", b"\x00", None, b"xy"]) for i in range(n)], pa.binary()),
            "d": pa.array([pick(i, [dt.date(2020, 1, 1), None, dt.date(1969, 12, 31)]) for i in range(n)]),
            "t": pa.array([pick(i, [0, None, 10**15]) for i in range(n)], pa.timestamp("us", tz="UTC")),
            "m": pa.array([pick(i, [Decimal("1.10"), None, Decimal("-2.00")]) for i in range(n)], pa.decimal128(6, 2)),
            "l": pa.array([pick(i, [[1, 2], None, [], [None]]) for i in range(n)], pa.list_(pa.int64())),
            "r": pa.array([pick(i, [{"x": 1}, None, {"x": None}]) for i in range(n)], pa.struct([("x", pa.int64())])),
        }
    )


def _multiset_difference(old: pa.Table, new: pa.Table) -> Counter:
    def key(row):
        return tuple(repr(v) for v in row.values())

    out = Counter(key(r) for r in new.to_pylist())
    out.subtract(Counter(key(r) for r in old.to_pylist()))
    return +out + Counter({k: -v for k, v in out.items() if v < 0})


def _net_counter(net: pa.Table) -> Counter:
    counts = net.column("_count").to_pylist()
    rows = net.drop_columns(["_count"]).to_pylist()
    return Counter({tuple(repr(v) for v in r.values()): abs(c) for r, c in zip(rows, counts)})


def test_column_by_column_exactness_check_equals_the_group_by(monkeypatch):
    """`net_rows` through the hash grouping (its exactness check column by column) equals the
    group-by over every column, on rows of every kind of type (NaN, -0.0, nulls, nested); with a
    hash that collides for every row, a row differing in any one column still comes out."""
    import polars as pl

    import deltaexplore.inspect.row_diff as rd

    old = pa.concat_tables([_tricky(60), _tricky(7)])
    new = pa.concat_tables([_tricky(60).slice(5), _tricky(9)])  # rows gone and added, rest cancel
    fast = rd.net_rows(old, new)
    with monkeypatch.context() as m:
        m.setattr(rd, "_hashed_groups", lambda *a: None)
        slow = rd.net_rows(old, new)
    assert repr(fast.to_pylist()) == repr(slow.to_pylist())  # NaN: compared as text
    assert fast.num_rows > 0
    for column in _tricky(1).column_names:
        base = _tricky(12)
        other = base.set_column(base.schema.get_field_index(column), column, _tricky(12, changed=4).column(column))
        with monkeypatch.context() as m:
            m.setattr(pl.DataFrame, "hash_rows", lambda self, seed=0: pl.Series("h", [7] * self.height, pl.UInt64))
            got = rd.net_rows(base, other)
        assert _net_counter(got) == _multiset_difference(base, other), column
        assert got.num_rows == 2, column


def test_packed_hash_sort_equals_the_argsort(monkeypatch):
    """The hashes sorted with the row packed in their low bits (`PACKED_ROW_BITS`) group rows
    as an argsort of the whole hashes does; hashes equal but for those low bits (rows that
    differ sharing the packed hash) still give the exact result, through the exactness check."""
    import polars as pl

    import deltaexplore.inspect.row_diff as rd

    old = pa.concat_tables([_tricky(60), _tricky(7), _tricky(60)])
    new = pa.concat_tables([_tricky(60).slice(5), _tricky(9), _tricky(30)])
    expected = _multiset_difference(old, new)
    packed = rd.net_rows(old, new)
    with monkeypatch.context() as m:
        m.setattr(rd, "PACKED_ROW_BITS", 0)
        assert repr(rd.net_rows(old, new).to_pylist()) == repr(packed.to_pylist())  # NaN: compared as text
    assert _net_counter(packed) == expected and packed.num_rows > 0
    with monkeypatch.context() as m:  # every hash differs, but only in the bits the rows take
        m.setattr(pl.DataFrame, "hash_rows", lambda self, seed=0: pl.Series("h", range(self.height), pl.UInt64))
        assert _net_counter(rd.net_rows(old, new)) == expected
    sorted_rows, _ = rd._sorted_by_hash(np.array([5, 3, 5, 1, 3, 5], np.uint64) << np.uint64(40))
    assert sorted_rows.tolist() == [3, 1, 4, 0, 2, 5]  # rows of one hash in increasing order


def _without_in_place(monkeypatch):
    import deltaexplore.inspect.row_diff as rd
    from deltaexplore.inspect.rows_in_place import Kept

    monkeypatch.setattr(rd, "cancel_in_place", Kept)


def _same_result(table, v1, v2, monkeypatch, **kw):
    """diff_rows with the in-place cancellation and without it (the hashed path alone): the
    same table (values, order, metadata), or the same error."""

    def run():
        try:
            return diff_rows(table, v1, v2, **kw)
        except InspectError as exc:
            return str(exc)

    fast = run()
    with monkeypatch.context() as m:
        _without_in_place(m)
        slow = run()
    if isinstance(fast, str):
        assert fast == slow
        return None
    assert not isinstance(slow, str), slow
    assert repr(fast.to_pylist()) == repr(slow.to_pylist()) and fast.schema == slow.schema, (v1, v2, kw)  # NaN: as text
    return fast


def test_in_place_cancellation_equals_the_hashed_path(dv_table, cow_table, monkeypatch):
    """Every pair of versions of both generated tables (UPDATE, DELETE with and without DVs, DV
    purge, OPTIMIZE, MERGE, a column added, overwrite, duplicates), both ways, keyed and
    unkeyed: the same result with the cancellation of rows kept in order as without it, and
    the brute-force difference."""
    for table in (dv_table, cow_table):
        last = table.latest_version()
        for v1 in range(last + 1):
            for v2 in range(v1 + 1, last + 1):
                got = _same_result(table, v1, v2, monkeypatch)
                assert as_counter(got) == brute_force(table, v1, v2)
                _same_result(table, v1, v2, monkeypatch, key="id")
        _same_result(table, last, 0, monkeypatch)
        _same_result(table, last - 1, 1, monkeypatch, key="id")


def test_an_update_cancels_its_unchanged_rows_in_place(tmp_path, monkeypatch):
    """A copy-on-write UPDATE of one row in each of several files, a DELETE shifting the rows
    after it, a MERGE: the hashed path sees only the rows that differ (the cancellation ran),
    and the result is the brute-force one."""
    import deltaexplore.inspect.row_diff as rd

    path = str(tmp_path / "t")
    write_table(path, rows(range(0, 4000)), max_rows_per_file=500, configuration={"delta.enableDeletionVectors": "false"})
    update(path, {"amount": "amount + 1"}, "id % 500 = 7 AND id < 2000")
    delete(path, "id = 2600")
    merge(
        path, rows([3000, 9000], amount=3.0), "source.id = target.id", [when_matched_update_all(), when_not_matched_insert_all()]
    )
    table = dx.open_table(path)
    seen = []
    real = rd.net_rows
    monkeypatch.setattr(rd, "net_rows", lambda old, new, *a: seen.append((old.num_rows, new.num_rows)) or real(old, new, *a))
    for v1, v2, changed in ((0, 1, (4, 4)), (1, 2, (1, 0)), (2, 3, (1, 2)), (0, 3, (6, 6))):
        seen.clear()
        got = diff_rows(table, v1, v2)
        assert as_counter(got) == brute_force(table, v1, v2)
        assert seen == [changed], (v1, v2)
    monkeypatch.setattr(rd, "net_rows", real)
    for v1, v2 in ((0, 1), (1, 2), (2, 3), (0, 3), (3, 0)):
        _same_result(table, v1, v2, monkeypatch)
        _same_result(table, v1, v2, monkeypatch, key="id")


@pytest.mark.corpus
@pytest.mark.parametrize(("root", "lo", "hi"), _corpus_pairs())
def test_corpus_in_place_cancellation_equals_the_hashed_path(root, lo, hi, monkeypatch):
    table = dx.open_table(str(CORPUS / root))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            _same_result(table, lo, hi, monkeypatch)
            _same_result(table, hi, lo, monkeypatch)
        except dx.DeltaExploreError as exc:
            pytest.skip(f"not diffable: {exc}")
