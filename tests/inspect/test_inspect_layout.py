"""layout / layout_summary / explain: overlap metrics against brute force, exact values on hand
tables, agreement with the core's scan planner on the corpus."""

from __future__ import annotations

import json

import numpy as np
import pytest
from corpus_paths import CORPUS, corpus_catalog, tables_with_stats
from helpers import add, commit_info, metadata, protocol, write_commit
from inspect_tables import T0, build_partitioned_table, stats

import deltaexplore as dx
from deltaexplore.errors import ColumnNotFoundError
from deltaexplore.inspect import explain, layout, layout_summary
from deltaexplore.inspect.errors import InspectError
from deltaexplore.inspect.layout import overlap_metrics
from deltaexplore.inspect.schemas import EXPLAIN_SCHEMA, LAYOUT_SUMMARY_SCHEMA, layout_schema


def _brute(lo, hi):
    n = len(lo)
    ov = [sum(1 for j in range(n) if j != i and lo[j] <= hi[i] and hi[j] >= lo[i]) for i in range(n)]
    depth = [max(sum(1 for j in range(n) if lo[j] <= x <= hi[j]) for x in range(lo[i], hi[i] + 1)) for i in range(n)]
    return ov, depth


def test_overlap_metrics_match_brute_force():
    rng = np.random.default_rng(7)
    for _ in range(300):
        n = int(rng.integers(1, 40))
        lo = rng.integers(0, 50, n)
        hi = lo + rng.integers(0, 12, n)
        m = overlap_metrics(lo, hi)
        ov, depth = _brute(lo.tolist(), hi.tolist())
        assert m["overlapping_files"].tolist() == ov
        assert m["overlap_depth"].tolist() == depth
        by_rank = sorted(range(n), key=lambda i: m["rank"][i])
        assert by_rank == sorted(range(n), key=lambda i: (lo[i], hi[i], i))


def test_range_max_matches_slices():
    from deltaexplore.inspect.layout import _range_max

    rng = np.random.default_rng(5)
    for n in (1, 2, 3, 7, 100, 1000, 5000):
        values = rng.integers(0, 100, n)
        lo = rng.integers(0, n, 500)
        hi = np.minimum(lo + rng.integers(0, n, 500), n - 1)
        assert _range_max(values, lo, hi).tolist() == [int(values[a : b + 1].max()) for a, b in zip(lo, hi)]


def test_argsort_equals_the_stable_argsort():
    """`_argsort` (numpy's vectorized argsort, ties put back in index order) gives what a stable
    argsort gives: ints with many ties, distinct floats, floats with -0.0 and 0.0 tied, wide
    ints, runs of one value, tiny arrays, NaN (a stable sort); and `overlap_metrics` with it still equals brute force
    (`test_overlap_metrics_match_brute_force`)."""
    from deltaexplore.inspect.layout import _argsort

    rng = np.random.default_rng(11)
    nan = float("nan")
    cases = [np.zeros(0, np.int64), np.array([3]), np.array([2, 2]), np.full(1000, 7), np.arange(500)[::-1]]
    cases += [np.array([nan, 1.0, nan, 1.0, -np.inf, np.inf, nan]), np.array([nan, nan])]
    for trial in range(120):
        n = int(rng.integers(1, 5000))
        kind = trial % 4
        if kind == 0:
            cases.append(rng.integers(0, n // 10 + 1, n))
        elif kind == 1:
            cases.append(rng.random(n))
        elif kind == 2:
            v = np.round(rng.normal(size=n), 1)
            cases.append(np.where(v == 0, np.where(rng.random(n) < 0.5, -0.0, 0.0), v))
        else:
            cases.append(rng.integers(-(2**62), 2**62, n))
    for v in cases:
        assert _argsort(v).tolist() == np.argsort(v, kind="stable").tolist()
        assert _argsort(v).dtype == np.int64


def _ranges_table(root, ranges, *, schema=None, props=None, column="id"):
    actions = [commit_info("WRITE", T0), protocol(), metadata(schema=schema, configuration=props or {})]
    for i, r in enumerate(ranges):
        if r is None:
            actions.append(add(f"f{i}.parquet", 100 + i))
        else:
            actions.append(add(f"f{i}.parquet", 100 + i, stats=stats(10, r[0], r[1], column=column)))
    write_commit(root, 0, actions)
    return dx.open_table(str(root))


def test_layout_exact(tmp_path):
    # f0 [0,9] f1 [10,19] f2 [5,14] f3 no stats f4 [100,100]
    t = _ranges_table(tmp_path, [(0, 9), (10, 19), (5, 14), None, (100, 100)])
    lay = layout(t, "id")
    assert lay.schema == layout_schema(lay.schema.field("min").type)
    rows = {r["path"]: r for r in lay.to_pylist()}
    assert (rows["f0.parquet"]["min"], rows["f0.parquet"]["max"]) == (0, 9)
    assert rows["f0.parquet"]["overlapping_files"] == 1 and rows["f0.parquet"]["overlap_depth"] == 2
    assert rows["f2.parquet"]["overlapping_files"] == 2 and rows["f2.parquet"]["overlap_depth"] == 2
    assert rows["f4.parquet"]["overlapping_files"] == 0 and rows["f4.parquet"]["overlap_depth"] == 1
    assert rows["f3.parquet"]["has_stats"] is False and rows["f3.parquet"]["overlap_depth"] is None
    assert [rows[f"f{i}.parquet"]["rank"] for i in (0, 2, 1, 4)] == [0, 1, 2, 3]
    s = {r["column"]: r for r in layout_summary(t).to_pylist()}["id"]
    assert (s["files"], s["files_with_min_max"], s["coverage"]) == (5, 4, 0.8)
    assert (s["avg_depth"], s["max_depth"]) == (1.75, 2)
    assert s["clustering_quality"] == pytest.approx(1 - 0.75 / 3)
    assert (s["skipping"], s["min"], s["max"]) == ("partial", "0", "100")
    assert "1 of 5 files lack" in s["reason"]
    with pytest.raises(ColumnNotFoundError):
        layout(t, "nope")


def test_layout_truncated_strings_and_indexing(tmp_path):
    schema = {
        "type": "struct",
        "fields": [
            {"name": "s", "type": "string", "nullable": True, "metadata": {}},
            {"name": "b", "type": "binary", "nullable": True, "metadata": {}},
            {"name": "n", "type": "long", "nullable": True, "metadata": {}},
        ],
    }
    long = "x" * 32
    t = _ranges_table(
        tmp_path,
        [("a", "b"), (long, long + "\ufffd"[:0] + "y"), ("c", "d\uffff")],
        schema=schema,
        props={"delta.dataSkippingNumIndexedCols": "1"},
        column="s",
    )
    lay = {r["path"]: r["truncated"] for r in layout(t, "s").to_pylist()}
    assert lay == {"f0.parquet": False, "f1.parquet": True, "f2.parquet": True}
    summary = {r["column"]: r for r in layout_summary(t).to_pylist()}
    assert summary["s"]["truncated_files"] == 2 and summary["s"]["indexed"] is True and summary["s"]["skipping"] == "stats"
    assert summary["b"]["eligible_type"] is False and summary["b"]["skipping"] == "none"
    assert summary["n"]["indexed"] is False and summary["n"]["skipping"] == "none"
    assert "beyond the first 1 indexed columns" in summary["n"]["reason"]
    assert layout_summary(t).schema == LAYOUT_SUMMARY_SCHEMA


def test_layout_on_a_partition_column(tmp_path):
    build_partitioned_table(tmp_path)
    t = dx.open_table(str(tmp_path))
    lay = layout(t, "date").to_pylist()
    assert {str(r["min"]) for r in lay} == {"2024-01-01", "2024-01-02", "None"}
    s = {r["column"]: r for r in layout_summary(t).to_pylist()}
    assert s["date"]["is_partition"] and s["date"]["skipping"] == "partition"
    assert s["id"]["files_with_min_max"] == 3


def test_explain_reasons_and_counts(tmp_path):
    build_partitioned_table(tmp_path)
    t = dx.open_table(str(tmp_path))
    e = explain(t, "`date` = '2024-01-01' AND id > 20")
    assert e.schema == EXPLAIN_SCHEMA
    rows = {r["path"].split("/")[-1]: r for r in e.to_pylist()}
    assert rows["f3.parquet"]["stage"] == "partition_pruned" and rows["f3.parquet"]["reason"].startswith("date = '2024-01-01'")
    assert rows["f4.parquet"]["stage"] == "partition_pruned"
    assert rows["f1.parquet"]["stage"] == "stats_pruned" and rows["f1.parquet"]["reason"].startswith("id > 20")
    assert rows["f2.parquet"]["stage"] == "read" and rows["f2.parquet"]["selected"]
    plan = t.snapshot().scan(where="`date` = '2024-01-01' AND id > 20").explain()
    assert plan == {"total_files": 4, "partition_pruned": 2, "stats_pruned": 1, "selected_files": 1}
    # a file without stats cannot be skipped by them
    e2 = {r["path"].split("/")[-1]: r for r in explain(t, "id > 1000").to_pylist()}
    assert e2["f4.parquet"]["stage"] == "read" and e2["f4.parquet"]["missing_stats"]
    assert e2["f3.parquet"]["stage"] == "stats_pruned"
    with pytest.raises(InspectError):
        explain(t, "")
    with pytest.raises(ColumnNotFoundError):
        explain(t, "nope = 1")


def _explain_cases():
    out = []
    for t in corpus_catalog():
        if t["status"] != "ok" or not t["active_files"] or "stats:none" in t["tags"]:
            continue
        out.append(pytest.param(t, id=t["id"]))
    return out[:60]


@pytest.mark.corpus
@pytest.mark.parametrize("row", _explain_cases())
def test_corpus_explain_agrees_with_scan(row):
    table = dx.open_table(str(CORPUS / row["table_root"]))
    snap = table.snapshot()
    summary = {r["column"]: r for r in layout_summary(snap).to_pylist()}
    candidates = [c for c, r in summary.items() if r["min"] is not None and r["type"] in ("integer", "long", "short", "byte")]
    if not candidates:
        pytest.skip("no integer column with stats")
    col = candidates[0]
    mid = json.loads(summary[col]["min"]) + (json.loads(summary[col]["max"]) - json.loads(summary[col]["min"])) // 2
    for pred in (f"{col} > {mid}", f"{col} = {mid}", f"{col} < {mid} OR {col} IS NULL"):
        e = explain(snap, pred)
        counts = {s: e.column("stage").to_pylist().count(s) for s in ("partition_pruned", "stats_pruned", "read")}
        plan = snap.scan(where=pred).explain()
        assert (counts["partition_pruned"], counts["stats_pruned"], counts["read"]) == (
            plan["partition_pruned"],
            plan["stats_pruned"],
            plan["selected_files"],
        ), pred
        lay = layout(snap, col)
        assert lay.num_rows == snap.num_files


def test_layout_reads_stats_parsed_from_the_checkpoint(tmp_path):
    """Checkpoint adds with only `stats_parsed` (no JSON text) and newer JSON commits: layout
    equals the core's full parse on both kinds of rows."""
    import pyarrow as pa

    from deltaexplore.core.operations import write_table
    from deltaexplore.core.write.checkpoint_writer import write_checkpoint

    root = str(tmp_path / "t")
    props = {"delta.checkpoint.writeStatsAsStruct": "true", "delta.checkpoint.writeStatsAsJson": "false"}
    write_table(root, pa.table({"id": pa.array([5, 1, 9], pa.int64()), "v": ["a", "b", None]}), configuration=props)
    write_table(root, pa.table({"id": pa.array([3, 4], pa.int64()), "v": ["c", "d"]}))
    write_checkpoint(dx.open_table(root))
    write_table(root, pa.table({"id": pa.array([7, 20], pa.int64()), "v": pa.array([None, None], pa.string())}))
    snap = dx.open_table(root).snapshot()
    adds = snap.add_actions()
    assert "stats_parsed" in adds.column_names and adds.column("stats").null_count == 2  # checkpoint rows
    core = snap.file_stats(["id", "v"])
    for column in ("id", "v"):
        lay = layout(snap, column)
        assert lay.column("min").to_pylist() == core.column(f"min.{column}").to_pylist()
        assert lay.column("max").to_pylist() == core.column(f"max.{column}").to_pylist()
        assert lay.column("null_count").to_pylist() == core.column(f"null_count.{column}").to_pylist()
        assert lay.column("num_records").to_pylist() == core.column("num_records").to_pylist() == [3, 2, 2]


def _summary_tables():
    return [pytest.param(t, id=t["id"]) for t in tables_with_stats()]


@pytest.mark.corpus
@pytest.mark.parametrize("row", _summary_tables())
def test_corpus_layout_summary_same_by_scans_and_by_full_parse(row, monkeypatch):
    """`layout_summary` reads up to `core.scan.stats.column_limit()` columns with one scan each
    and more with the core's full parse: both give the same table."""
    import warnings

    from deltaexplore.core.scan import stats as module

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        snap = dx.open_table(str(CORPUS / row["table_root"])).snapshot()
        monkeypatch.setattr(module, "column_limit", lambda: 1000)
        scans = layout_summary(snap)
        monkeypatch.setattr(module, "column_limit", lambda: 0)
        parsed = layout_summary(snap)
    assert scans.equals(parsed)
