"""The maintenance advisor: each kind of advice on a generated table built to need it and absent
on one that does not; predictions (files, bytes, overlap depth, files a point query reads)
against what the table measures after the operation runs (`advise(check=True)`)."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest

import deltaexplore as dx
from deltaexplore.core.operations import (
    checkpoint,
    delete,
    optimize,
    purge_deletion_vectors,
    set_table_properties,
    write_table,
)
from deltaexplore.inspect import advise
from deltaexplore.inspect.advise import TOLERANCE, simulate_zorder
from deltaexplore.inspect.errors import InspectError
from deltaexplore.inspect.schemas import ADVICE_CHECK_SCHEMA, ADVICE_SCHEMA


def _kinds(t: pa.Table) -> set[str]:
    return set(t.column("kind").to_pylist())


def _row(t: pa.Table, kind: str) -> dict:
    return next(r for r in t.to_pylist() if r["kind"] == kind)


def _random(n: int, seed: int, start: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "id": pa.array(rng.integers(0, 1_000_000, n), pa.int64()),
            "seq": pa.array(np.arange(start, start + n), pa.int64()),
            "v": pa.array(rng.random(n)),
            "region": pa.array(["hot" if i % 10 else "cold" for i in range(n)]),
        }
    )


@pytest.fixture
def small_files(tmp_path):
    """20 appends of random keys: small files, every file spanning the whole id domain."""
    path = str(tmp_path / "small")
    for i in range(20):
        write_table(path, _random(3000, i, start=3000 * i))
    return dx.open_table(path)


@pytest.fixture
def compact(tmp_path):
    """One file, ids sequential: nothing to do."""
    path = str(tmp_path / "compact")
    write_table(path, _random(20000, 0))
    return dx.open_table(path)


def test_schema_and_ranking(small_files):
    got = small_files.inspect.advise(columns=["id"])
    assert got.schema == ADVICE_SCHEMA
    assert got.column("rank").to_pylist() == list(range(1, got.num_rows + 1))
    scores = got.column("score").to_pylist()
    assert scores == sorted(scores, reverse=True)
    assert json.loads(_row(got, "zorder")["parameters"]) == {"zorder_by": ["id"]}


def test_compaction_names_partitions_and_is_absent_on_a_compact_table(tmp_path, compact):
    path = str(tmp_path / "skewed")
    for i in range(12):  # the hot partition gets many small files, the cold one two
        data = _random(1000, i)
        write_table(
            path, data.filter(pa.array([r == "hot" or i < 2 for r in data.column("region").to_pylist()])), partition_by=["region"]
        )
    got = _row(advise(dx.open_table(path)), "compaction")
    assert got["target"].startswith("region=hot (12 files)")
    assert "region=cold (2 files)" in got["target"]
    assert (got["files_before"], got["files_after"]) == (14, 2)
    assert got["operation"] == "optimize" and got["bytes_rewritten"] == got["bytes_before"]
    assert "compaction" not in _kinds(advise(compact))


def test_dv_purge_only_with_heavy_deletion_vectors(tmp_path, compact):
    path = str(tmp_path / "dv")
    write_table(path, _random(20000, 1), configuration={"delta.enableDeletionVectors": "true"}, max_rows_per_file=5000)
    delete(path, "v < 0.3")
    table = dx.open_table(path)
    got = _row(advise(table), "dv_purge")
    assert got["operation"] == "purge" and "deleted rows" in got["reason"]
    assert got["bytes_after"] < got["bytes_before"]
    assert "dv_purge" not in _kinds(advise(compact))
    # light deletes (under 5% of every file) are not worth a purge
    light = str(tmp_path / "light")
    write_table(light, _random(20000, 1), configuration={"delta.enableDeletionVectors": "true"}, max_rows_per_file=5000)
    delete(light, "v < 0.01")
    assert "dv_purge" not in _kinds(advise(dx.open_table(light)))


def test_zorder_random_keys_but_not_clustered_keys(small_files, tmp_path):
    got = _row(small_files.inspect.advise(columns=["id"]), "zorder")
    assert got["columns"] == ["id"]
    assert got["point_files_before"] > 15 and got["mean_depth_before"] > 15
    # one file after compaction at the default target: a point query reads it alone
    assert got["point_files_after"] == pytest.approx(1.0) and got["max_depth_after"] == 1
    clustered = str(tmp_path / "clustered")
    for i in range(20):
        write_table(clustered, _random(3000, i, start=3000 * i))
    # on seq (appended in order) point queries already read one file: no Z-order advice
    assert "zorder" not in _kinds(advise(dx.open_table(clustered), columns=["seq"]))
    # without columns, the deepest numeric column is the candidate
    assert _row(advise(small_files), "zorder")["columns"] in (["id"], ["v"])
    with pytest.raises(InspectError):
        simulate_zorder(small_files, ["region"])  # strings are not simulated


def test_stats_columns_when_a_query_column_has_no_statistics(tmp_path, small_files):
    path = str(tmp_path / "nostats")
    write_table(path, _random(2000, 0), configuration={"delta.dataSkippingNumIndexedCols": "1"})
    write_table(path, _random(2000, 1))
    got = _row(advise(dx.open_table(path), columns=["v"]), "stats_columns")
    assert got["columns"] == ["v"] and json.loads(got["parameters"]) == {"delta.dataSkippingStatsColumns": "v"}
    assert "stats_columns" not in _kinds(advise(dx.open_table(path), columns=["id"]))
    assert "stats_columns" not in _kinds(advise(small_files, columns=["id"]))


def test_checkpoint_log_cleanup_and_vacuum(tmp_path, compact):
    path = str(tmp_path / "log")
    write_table(
        path,
        _random(100, 0),
        configuration={
            "delta.checkpointInterval": "1000",
            "delta.deletedFileRetentionDuration": "interval 0 hours",
            "delta.logRetentionDuration": "interval 0 hours",
            "delta.enableExpiredLogCleanup": "false",
        },
    )
    for i in range(11):
        write_table(path, _random(100, i + 1), mode="overwrite")
    set_table_properties(path, {"delta.checkpointInterval": "5"})  # v12: no checkpoint written
    table = dx.open_table(path)
    got = advise(table)
    cp = _row(got, "checkpoint")
    assert cp["bytes_before"] > 0 and cp["bytes_after"] == 0 and "13 commits" in cp["reason"]
    vac = _row(got, "vacuum")
    assert vac["retention_hours"] == 0 and vac["bytes_before"] - vac["bytes_after"] > 0
    assert "log_cleanup" not in _kinds(got)  # no checkpoint yet: every commit is needed
    checkpoint(path)
    set_table_properties(path, {"x": "1"})
    got = advise(dx.open_table(path))
    assert "checkpoint" not in _kinds(got)
    clean = _row(got, "log_cleanup")
    assert clean["retention_hours"] == 0 and clean["bytes_after"] < clean["bytes_before"]
    assert not _kinds(advise(compact)) & {"checkpoint", "log_cleanup", "vacuum"}


# -- predicted vs measured ---------------------------------------------------------------------


def _check(table) -> dict[str, dict]:
    got = table.inspect.advise(check=True)
    assert got.schema == ADVICE_CHECK_SCHEMA
    rows = {r["metric"]: r for r in got.to_pylist()}
    for r in rows.values():
        assert r["within"], r
        assert r["tolerance"] == TOLERANCE[r["metric"]]
    return rows


def test_compaction_prediction_holds(small_files):
    predicted = _row(small_files.inspect.advise(), "compaction")
    optimize(small_files.uri)
    table = dx.open_table(small_files.uri)
    rows = _check(table)
    assert rows["files"]["measured"] == predicted["files_after"] == 1
    assert rows["bytes"]["predicted"] == predicted["bytes_after"]


def test_zorder_prediction_holds_random_keys(tmp_path):
    path = str(tmp_path / "z")
    for i in range(16):
        write_table(path, _random(5000, i, start=5000 * i))
    table = dx.open_table(path)
    size = int(sum(table.snapshot().files().column("size").to_pylist()))
    target = size // 4
    predicted = _row(advise(table, zorder_by=["id"], target_size=target), "zorder")
    assert predicted["point_files_before"] > 10
    assert 3 <= predicted["files_after"] <= 5 and predicted["point_files_after"] < 2
    optimize(path, zorder_by=["id"], target_size=target)
    rows = {r["metric"]: r for r in advise(dx.open_table(path), check=True, target_size=target).to_pylist()}
    assert set(rows) == {"files", "bytes", "mean_depth", "max_depth", "point_files"}
    assert all(r["within"] for r in rows.values()), rows
    assert rows["point_files"]["measured"] < 2


def test_zorder_two_columns_prediction_holds(tmp_path):
    path = str(tmp_path / "z2")
    for i in range(16):
        write_table(path, _random(5000, i, start=5000 * i))
    table = dx.open_table(path)
    target = int(sum(table.snapshot().files().column("size").to_pylist())) // 8
    predicted = simulate_zorder(table, ["id", "v"], target_size=target)
    assert predicted.point_files_after < predicted.point_files_before / 2
    optimize(path, zorder_by=["id", "v"], target_size=target)
    rows = {r["metric"]: r for r in advise(dx.open_table(path), check=True, target_size=target).to_pylist()}
    assert all(r["within"] for r in rows.values()), rows


def test_dv_purge_prediction_holds(tmp_path):
    path = str(tmp_path / "purge")
    write_table(path, _random(20000, 3), configuration={"delta.enableDeletionVectors": "true"}, max_rows_per_file=5000)
    delete(path, "v < 0.5")
    predicted = _row(advise(dx.open_table(path)), "dv_purge")
    purge_deletion_vectors(path)
    rows = _check(dx.open_table(path))
    assert rows["files"]["predicted"] == predicted["files_after"]
    assert rows["bytes"]["predicted"] == predicted["bytes_after"]


def test_check_needs_a_maintenance_commit(compact):
    with pytest.raises(InspectError, match="nothing to check"):
        compact.inspect.advise(check=True)


def test_advice_runs_through_the_maintenance_path(tmp_path):
    """Each advice's operation and parameters are what the explorer's maintenance runs."""
    from deltaexplore.widgets import maintenance

    path = str(tmp_path / "run")
    for i in range(12):
        write_table(path, _random(4000, i, start=4000 * i))
    table = dx.open_table(path)
    target = int(sum(table.snapshot().files().column("size").to_pylist())) // 3
    advice = _row(advise(table, zorder_by=["id"], target_size=target), "zorder")
    assert json.loads(advice["parameters"]) == {"zorder_by": ["id"], "target_bytes": target}
    out = maintenance.run(advice["operation"], table, lambda f, m: None, engine="local", **json.loads(advice["parameters"]))
    assert out["backend"] == "local" and out["version_after"] == out["version_before"] + 1
    after = dx.open_table(path)
    assert json.loads(dict(after.history(1).column("parameters")[0].as_py())["zOrderBy"]) == ["id"]
    rows = {r["metric"]: r for r in advise(after, check=True, target_size=target).to_pylist()}
    assert rows["files"]["predicted"] == advice["files_after"] and all(r["within"] for r in rows.values()), rows


# -- the one shared pass gives what the straightforward computation gives ----------------------


def _straight_prediction(plan) -> tuple[int, int, int, int, list[tuple[str, int]]]:
    """`predict_bins` the plain way: every bin's add actions as a table, one bin at a time."""
    from math import ceil

    from deltaexplore.core.scan.partition_values import partition_keys
    from deltaexplore.inspect.advise import _live_fraction

    snap = plan.snapshot
    removed = added = bytes_removed = 0
    live_total = 0.0
    parts: dict[str, int] = {}
    for b in plan.bins:
        sizes = np.asarray(b.column("size").to_pylist(), np.float64)
        live = float(np.add.reduce(sizes * _live_fraction(snap, b)))
        removed += b.num_rows
        added += max(1, ceil(live / plan.target_size))
        bytes_removed += int(sizes.sum())
        live_total += round(live)
        key = partition_keys(snap, b)[0].as_py() or "(unpartitioned)"
        parts[key] = parts.get(key, 0) + b.num_rows
    return removed, added, bytes_removed, int(live_total), sorted(parts.items(), key=lambda kv: (-kv[1], kv[0]))


def test_shared_pass_predictions_equal_the_bin_by_bin_ones(tmp_path):
    """Compaction, DV purge and Z-order plans from one `file_facts` pass: `predict_bins` equals
    the bin-by-bin computation on a partitioned table with small files and deletion vectors."""
    from deltaexplore.core.operations import plan_optimize
    from deltaexplore.core.operations.optimize import file_facts
    from deltaexplore.inspect.advise import predict_bins

    path = str(tmp_path / "parts")
    conf = {"delta.enableDeletionVectors": "true"}
    for i in range(12):
        data = _random(400 + 50 * i, i, start=1000 * i).append_column("p", pa.array([f"k{i % 4}"] * (400 + 50 * i)))
        write_table(path, data, partition_by=["p"], configuration=conf if i == 0 else None)
    delete(path, "id % 7 = 0 AND seq < 5000")
    snap = dx.open_table(path).snapshot()
    facts = file_facts(snap)
    sizes = facts.sizes
    for kw in ({}, {"dv_files_only": True}, {"zorder_by": ["id"]}, {"target_size": int(np.median(sizes)) * 3}):
        shared = plan_optimize(snap, facts=facts, **kw)
        alone = plan_optimize(snap, **kw)
        assert [b.to_pylist() for b in shared.bins] == [b.to_pylist() for b in alone.bins]
        p = predict_bins(shared)
        assert (p.files_removed, p.files_added, p.bytes_removed, p.bytes_added, p.partitions) == _straight_prediction(alone)
        assert shared.num_bins and p.partitions


def test_packing_equals_the_greedy_loop():
    """`pack_starts` (binary searches and pointer doubling) opens the bins the one-file-at-a-time
    greedy loop opens: zero sizes, files larger than the target, one and many partitions."""
    from deltaexplore.core.operations.optimize import _pack_loop, pack_starts

    rng = np.random.default_rng(7)
    for _ in range(2000):
        n = int(rng.integers(1, 80))
        groups = np.sort(rng.integers(0, int(rng.integers(1, 6)), n))
        sizes = rng.integers(0, 40, n) * rng.integers(0, 2, n) + rng.integers(0, 3, n) * rng.integers(0, 60, n)
        order = np.lexsort((sizes, groups))
        sizes, groups = sizes[order].astype(np.int64), groups[order]
        target = int(rng.integers(1, 70))
        assert pack_starts(sizes, groups, target).tolist() == _pack_loop(sizes, groups, target).tolist()


def test_packed_group_and_size_order_equals_the_lexsort():
    """`plan_optimize`'s order of candidate files (partition, then size, ties by position) by
    one stable argsort of both packed in an int64 equals `np.lexsort((sizes, group))`: ties,
    one group, sizes too wide to pack, negative values and floats (both fall back), empty."""
    from deltaexplore.core.operations.optimize import by_group_then_size

    rng = np.random.default_rng(4)
    cases = [(np.zeros(0, np.int64), np.zeros(0, np.int64)), (np.zeros(5, np.int64), np.full(5, 7))]
    for n in (1, 10, 1000, 50_000):
        cases.append((rng.integers(0, 30, n), rng.integers(0, 5, n)))  # many ties
        cases.append((rng.integers(0, 1000, n), rng.integers(0, 1 << 30, n)))
        cases.append((rng.integers(0, 1 << 20, n), rng.integers(0, 1 << 50, n)))  # too wide: the lexsort
        cases.append((rng.integers(-5, 5, n), rng.integers(0, 100, n)))
        cases.append((rng.integers(0, 5, n), rng.random(n)))
    for group, sizes in cases:
        assert by_group_then_size(group, sizes).tolist() == np.lexsort((sizes, group)).tolist()


def test_zorder_of_every_bin_at_once_equals_each_bin_alone():
    """`zorder_keys` with groups orders each group as `zorder_indices` orders it alone (ties,
    nulls in some groups, one to three columns)."""
    from deltaexplore.core.operations.optimize import zorder_indices, zorder_keys

    rng = np.random.default_rng(3)
    for k in (1, 2, 3):
        cols = [f"c{i}" for i in range(k)]
        parts = []
        for g in range(6):
            n = int(rng.integers(1, 120))
            parts.append(
                pa.table(
                    {
                        c: pa.array(
                            [None if g % 3 == 0 and rng.random() < 0.2 else float(x) for x in rng.integers(0, 9 + 30 * g, n)]
                        )
                        for c in cols
                    }
                )
            )
        both = pa.concat_tables(parts)
        groups = np.concatenate([np.full(p.num_rows, i) for i, p in enumerate(parts)])
        z = zorder_keys({c: both.column(c).combine_chunks() for c in cols}, cols, groups=groups)
        offsets = np.cumsum([0] + [p.num_rows for p in parts])[:-1]
        expected = np.concatenate([zorder_indices(p, cols) + o for p, o in zip(parts, offsets)])
        assert np.lexsort((z, groups)).tolist() == expected.tolist()


def test_zorder_order_of_one_column_equals_the_z_values():
    """`_zorder_order` of one column (a sort of the values, then of the bins) equals the order
    of `zorder_keys` with groups (ties, -0.0, many bins, one bin); two columns use the keys."""
    from deltaexplore.core.operations.optimize import zorder_keys
    from deltaexplore.inspect.advise import _zorder_order

    rng = np.random.default_rng(5)
    for n, nbins, distinct in ((5000, 40, 30), (3000, 1, 10_000), (20_000, 900, 200_000), (7, 3, 2)):
        values = {"a": np.round(rng.random(n) * distinct) / 7.0, "b": rng.random(n)}
        values["a"][rng.random(n) < 0.05] = -0.0
        bins = rng.integers(0, nbins, n)
        for cols in (["a"], ["b"], ["a", "b"]):
            z = zorder_keys({c: pa.array(values[c]) for c in cols}, cols, groups=bins)
            assert _zorder_order(values, cols, bins).tolist() == np.lexsort((z, bins)).tolist(), (n, cols)


def test_depths_before_from_layout_equal_the_float_measure(small_files, tmp_path):
    """The what-if's depths before come from `layout`'s measure when the float bounds are exact:
    the same numbers as `overlap_metrics` of the floats; taken for decimals of at most 15
    digits (distinct ones are distinct floats), not for wider ones."""
    from decimal import Decimal

    from deltaexplore.inspect.advise import _bounds_and_depths, layout_measures
    from deltaexplore.inspect.layout import overlap_metrics

    big, wide = str(tmp_path / "big"), str(tmp_path / "wide")
    for i in range(6):
        ids = pa.array([Decimal(i * 7 + j) / 4 for j in range(5)], pa.decimal128(10, 2))
        # 15 digits: neighbours one cent apart near 10**13, and ties between files
        cents = pa.array([Decimal(10**13 - 1) - Decimal(i * 3 + j) / 100 for j in range(5)], pa.decimal128(15, 2))
        write_table(big, pa.table({"id": ids, "d": [1.5 * i + 0.25 * j for j in range(5)], "cents": cents}))
        digits = pa.array([Decimal(10**17) + Decimal(i * 3 + j) / 100 for j in range(5)], pa.decimal128(20, 2))
        write_table(wide, pa.table({"id": digits}))
    found = {}
    for name, table, cols in (
        ("small", small_files, ["id"]),
        ("small", small_files, ["id", "v"]),
        ("big", dx.open_table(big), ["id", "d", "cents"]),
        ("wide", dx.open_table(wide), ["id"]),
    ):
        snap = table.snapshot()
        bounds, _, depths = _bounds_and_depths(snap, cols)
        found[name] = depths
        rng = np.random.default_rng(0)
        points = {c: rng.uniform(np.nanmin(lo), np.nanmax(hi), 500) for c, (lo, hi) in bounds.items()}
        assert layout_measures(bounds, points, depths) == layout_measures(bounds, points)
        for c, (lo, hi) in bounds.items():
            if depths[c] is not None:  # per file, not only on average
                ok = ~(np.isnan(lo) | np.isnan(hi))
                assert depths[c][ok].tolist() == overlap_metrics(lo[ok], hi[ok])["overlap_depth"].tolist()
    assert all(found["big"][c] is not None for c in ("id", "d", "cents"))
    assert found["wide"]["id"] is None


def test_ids_beyond_two_to_the_53_are_advised_on(tmp_path):
    """Integer ids beyond 2**53 (snowflake ids, hashes) do not fit a float exactly: the advisor
    still advises, and its Z-order what-if on them measures the same depths as on the ids
    shifted into the exact range (their order is the same; only ties could differ)."""
    big, small = str(tmp_path / "big"), str(tmp_path / "small")
    for i in range(6):
        ids = [i * 1000 + (k * 7919) % 3000 for k in range(100)]
        write_table(big, pa.table({"id": pa.array([(1 << 60) + v * 4096 for v in ids], pa.int64())}))
        write_table(small, pa.table({"id": pa.array(ids, pa.int64())}))
    got = advise(dx.open_table(big), zorder_by=["id"])
    want = advise(dx.open_table(small), zorder_by=["id"])
    assert _kinds(got) == _kinds(want) == {"compaction", "zorder"}
    cols = ["kind", "files_after", "point_files_after", "max_depth_before", "max_depth_after"]
    assert got.select(cols).to_pylist() == want.select(cols).to_pylist()
    # the points a query lands on are sampled values: rounded, a few land on a bound's other side
    before = zip(got.column("point_files_before").to_pylist(), want.column("point_files_before").to_pylist())
    assert all((a is None and b is None) or a == pytest.approx(b, rel=1e-3) for a, b in before)


def test_counts_read_with_the_bounds_equal_the_stats_counts(small_files, tmp_path):
    """The advisor takes numRecords from the candidate columns' bounds (`known_num_records`)
    instead of reading them again: they equal `num_records`, on a written table and on a
    metadata-only one with deletion vectors (`gen_many_files`); the advice equals the advice
    with the counts read afresh."""
    import subprocess
    import sys
    from pathlib import Path

    from deltaexplore.core.operations.optimize import FileFacts
    from deltaexplore.core.scan.stats import num_records
    from deltaexplore.inspect.layout import known_num_records, layout_summary

    generator = Path(__file__).resolve().parents[2] / "benchmarks" / "gen_many_files.py"
    generated = tmp_path / "many"
    args = [str(generated), "--files", "3000", "--parts", "2", "--commits", "3", "--partitions", "20"]
    subprocess.run([sys.executable, str(generator), *args], check=True, capture_output=True)
    for root in (str(small_files.uri), str(generated)):
        snap = dx.open_table(root).snapshot()
        assert known_num_records(snap) is None
        layout_summary(snap, ["id"])
        got = known_num_records(snap)
        assert got is not None
        assert got.to_pylist() == num_records(snap.add_actions()).to_pylist()
        shared = dx.open_table(root).inspect.advise()
        original = FileFacts.use_records
        try:
            FileFacts.use_records = lambda self, records: None  # type: ignore[method-assign]
            afresh = dx.open_table(root).inspect.advise()
        finally:
            FileFacts.use_records = original  # type: ignore[method-assign]
        assert shared.equals(afresh)


def test_point_measures_do_not_depend_on_the_points_order():
    """`layout_measures` averages over the points: sorted points (what `simulate_zorder` passes,
    sorted once for before and after) give exactly what the sampled order gives."""
    from deltaexplore.inspect.advise import layout_measures

    rng = np.random.default_rng(11)
    lo = rng.random(4000) * 100
    hi = lo + rng.random(4000) * 30
    lo[::97] = np.nan
    points = rng.random(20_000) * 130
    for depths in (None, {"x": None}):
        shuffled = layout_measures({"x": (lo, hi)}, {"x": points}, depths)
        assert layout_measures({"x": (lo, hi)}, {"x": np.sort(points)}, depths) == shuffled
        assert shuffled["point_files"] > 1


def test_advice_from_stats_parsed_equals_the_advice_from_json_stats(tmp_path):
    """The same 3,000 files with JSON stats only and with `stats_parsed` in the checkpoint
    (`gen_many_files.py --stats-parsed`, what Spark writes with writeStatsAsStruct): the
    advice, read from the typed stats, is the same."""
    import subprocess
    import sys
    from pathlib import Path

    generator = Path(__file__).resolve().parents[2] / "benchmarks" / "gen_many_files.py"
    roots = []
    for extra in ([], ["--stats-parsed"]):
        root = tmp_path / f"t{len(extra)}"
        args = [str(root), "--files", "3000", "--parts", "2", "--commits", "3", "--partitions", "20", *extra]
        subprocess.run([sys.executable, str(generator), *args], check=True, capture_output=True)
        roots.append(str(root))
    parsed = dx.open_table(roots[1]).snapshot().add_actions()
    assert "stats_parsed" in parsed.column_names and parsed.column("stats_parsed").null_count < parsed.num_rows
    for kw in ({}, {"zorder_by": ["id"]}, {"columns": ["id", "value"]}):
        json_advice = dx.open_table(roots[0]).inspect.advise(**kw)
        assert json_advice.num_rows > 0
        assert dx.open_table(roots[1]).inspect.advise(**kw).equals(json_advice), kw


def test_candidate_ranked_on_a_sample_equals_the_exact_ranking(tmp_path, monkeypatch):
    """Tables of more than `RANK_SAMPLE` files rank the candidate columns on a sample and
    compute the exact depth of the best estimate only: on a generated table (3,000 files, `id`
    shallow, `value` deep) and on a written one (a random, a partly clustered and a sequential
    column, and two columns where every file overlaps every other: a tie) the advice equals the
    exact ranking's, and only the chosen column's bounds are read for every file."""
    import subprocess
    import sys
    from pathlib import Path

    import deltaexplore.inspect.advise  # noqa: F401  (the module, not the function)
    from deltaexplore.inspect.snapshots import snapshot_cache

    module = sys.modules["deltaexplore.inspect.advise"]
    generator = Path(__file__).resolve().parents[2] / "benchmarks" / "gen_many_files.py"
    generated = tmp_path / "many"
    args = [str(generated), "--files", "3000", "--parts", "2", "--commits", "3", "--partitions", "20"]
    subprocess.run([sys.executable, str(generator), *args], check=True, capture_output=True)
    written = str(tmp_path / "written")
    rng = np.random.default_rng(3)
    for i in range(60):
        seq = np.arange(i * 200, (i + 1) * 200)
        write_table(
            written,
            pa.table(
                {
                    "seq": pa.array(seq, pa.int64()),
                    "near": pa.array(seq + rng.integers(0, 2400, 200), pa.int64()),  # ~12 files deep
                    "id": pa.array(rng.integers(0, 10**6, 200), pa.int64()),  # every file deep
                    "id2": pa.array(rng.integers(0, 10**6, 200), pa.int64()),  # as deep: a tie, the later wins
                }
            ),
        )
    for root, sample in ((str(generated), 500), (written, 20)):
        exact = dx.open_table(root).inspect.advise()
        assert "zorder" in _kinds(exact)
        monkeypatch.setattr(module, "RANK_SAMPLE", sample)
        snap = dx.open_table(root).snapshot()
        sampled = advise(snap)
        monkeypatch.setattr(module, "RANK_SAMPLE", 10**9)
        assert sampled.equals(exact), root
        chosen = _row(sampled, "zorder")["columns"]
        assert sorted(snapshot_cache(snap)["bounds"]) == chosen, root
        if root == written:
            assert chosen == ["id2"]
    # more columns than the stats search takes (the bounds parsed): the sample reads them too
    wide = str(tmp_path / "wide")
    for _ in range(30):
        write_table(wide, pa.table({f"c{j}": pa.array(rng.integers(0, 10**6, 100), pa.int64()) for j in range(40)}))
    exact = advise(dx.open_table(wide))
    monkeypatch.setattr(module, "RANK_SAMPLE", 10)
    assert advise(dx.open_table(wide)).equals(exact) and "zorder" in _kinds(exact)
    monkeypatch.setattr(module, "RANK_SAMPLE", 10**9)
    # no column deep enough: no candidate either way
    flat = str(tmp_path / "flat")
    for i in range(30):
        seq = np.arange(i * 100, (i + 1) * 100)
        write_table(flat, pa.table({"a": pa.array(seq, pa.int64()), "b": pa.array(seq * 2, pa.int64())}))
    monkeypatch.setattr(module, "RANK_SAMPLE", 10)
    assert module._candidate_columns(dx.open_table(flat).snapshot(), None) == []
