"""MERGE on Spark against delta-rs's `merge` and the local engine on the same generated inputs
(the generator of tests/write/test_merge_deltars.py: every clause kind, several of a kind with
conditions, null and duplicate keys, one-side ON terms), with and without deletion vectors and
the change data feed, partitioned or not; plus Spark-only behaviour (multiple matches, dry runs,
schema evolution, conflicts)."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import deltaexplore as dx
from deltaexplore.core.operations import delete, merge, when_matched_update_all, when_not_matched_insert_all, write_table

from .conftest import SPARK_MARKS

pytestmark = [*SPARK_MARKS]

_WRITE_TESTS = Path(__file__).resolve().parent.parent / "write"
sys.path.insert(0, str(_WRITE_TESTS))
_spec = importlib.util.spec_from_file_location("merge_cases", _WRITE_TESTS / "test_merge_deltars.py")
cases_module = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
try:
    _spec.loader.exec_module(cases_module)  # type: ignore[union-attr]
except pytest.skip.Exception:  # deltalake missing: the delta-rs comparison skips below
    cases_module = None  # type: ignore[assignment]

CASES = 3


def _prepare(rng: np.random.Generator, root: Path, k: int, conf: dict[str, str], partitioned: bool) -> tuple[Any, list, str]:
    target, source, clauses = cases_module._case(rng, first=k == 0)
    write_table(str(root), target, partition_by=["part"] if partitioned else None, configuration=conf, max_rows_per_file=12)
    if conf["delta.enableDeletionVectors"] == "true":
        delete(str(root), "value >= 90")
    on = "source.id = target.id" + (" AND source.part = target.part" if partitioned and k % 2 else "")
    on += {0: "", 1: " AND target.value < 95", 2: " AND source.value >= 10"}[k % 3]
    return source, clauses, on


def _result(root: Path, before: int, cdf: bool) -> dict[str, Any]:
    table = dx.open_table(str(root))
    out: dict[str, Any] = {"rows": cases_module.table_rows(table.snapshot().to_arrow())}
    if cdf:
        changes = table.changes(before + 1) if table.latest_version() > before else None
        out["cdf"] = cases_module.table_rows(changes.drop_columns(["_commit_version", "_commit_timestamp"])) if changes else []
    return out


@pytest.mark.parametrize("partitioned", [False, True], ids=["flat", "partitioned"])
@pytest.mark.parametrize(
    ("dvs", "cdf"), [(False, False), (True, True), (False, True), (True, False)], ids=["rewrite", "dv-cdf", "rewrite-cdf", "dv"]
)
def test_spark_merge_matches_delta_rs_and_the_local_engine(spark, tmp_path, dvs, cdf, partitioned):
    import deltaexplore.spark as dxs

    if cases_module is None:
        pytest.skip("deltalake is not installed")
    rng = np.random.default_rng(7000 + 100 * dvs + 10 * cdf + partitioned)
    conf = {"delta.enableDeletionVectors": str(dvs).lower(), "delta.enableChangeDataFeed": str(cdf).lower()}
    specs, spark_results, local_results = [], [], []
    for k in range(CASES):
        spark_root, local_root, rs_root = tmp_path / f"spark{k}", tmp_path / f"local{k}", tmp_path / f"rs{k}"
        source, clauses, on = _prepare(rng, spark_root, k, conf, partitioned)
        shutil.copytree(spark_root, local_root)
        shutil.copytree(spark_root, rs_root)
        before = dx.open_table(str(spark_root)).latest_version()
        got = dxs.merge(spark, str(spark_root), spark.createDataFrame(source), on, clauses).to_pylist()[0]
        local = merge(str(local_root), source, on, clauses).to_pylist()[0]
        spark_results.append({**_result(spark_root, before, cdf), "metrics": got})
        local_results.append({**_result(local_root, before, cdf), "metrics": local})
        source_path = tmp_path / f"source{k}.parquet"
        pq.write_table(source, source_path)
        specs.append(
            {
                "root": str(rs_root),
                "source": str(source_path),
                "on": on,
                "clauses": [cases_module._spec(c) for c in clauses],
                "cdf": cdf,
            }
        )
    spec_path = tmp_path / "cases.json"
    spec_path.write_text(json.dumps(specs))
    theirs = cases_module.run("merge-deltars", str(spec_path))
    for spec, got, local, want in zip(specs, spark_results, local_results, theirs):
        label = f"{spec['on']} {[c['kind'] + ':' + c['action'] for c in spec['clauses']]}"
        assert "error" not in want, f"{label}: delta-rs failed: {want.get('error')}"
        assert got["rows"] == want["rows"], f"{label}: rows differ from delta-rs"
        assert got["rows"] == local["rows"], f"{label}: rows differ from the local engine"
        if cdf:
            assert got["cdf"] == want["cdf"], f"{label}: change data differs from delta-rs"
        for name in ("num_source_rows", "num_target_rows_inserted", "num_target_rows_updated", "num_target_rows_deleted"):
            assert got["metrics"][name] == want["metrics"][name], f"{label}: {name}"
        if not dvs:
            assert got["metrics"]["num_target_rows_copied"] == want["metrics"]["num_target_rows_copied"], label
        # every row metric Spark and the local engine both count is equal (files differ: writers split differently)
        same = [n for n in got["metrics"] if n.startswith("num_target_rows") or n in ("num_source_rows", "num_output_rows")]
        same += ["num_target_files_removed", "num_target_deletion_vectors_added", "num_target_deletion_vectors_removed"]
        same += ["num_target_files_after_skipping"]
        assert {n: got["metrics"][n] for n in same} == {n: local["metrics"][n] for n in same}, label
    # the commit reads like any other operation's: operation, parameters, Delta's metric names
    info = dx.open_table(str(tmp_path / "spark0")).history(limit=1).to_pylist()[0]
    assert info["operation"] == "MERGE"


def test_spark_merge_multiple_matches_dry_run_and_schema_evolution(spark, tmp_path):
    import deltaexplore.spark as dxs

    uri = str(tmp_path / "t")
    write_table(uri, pa.table({"id": [1, 2, 3], "v": [10, 20, 30]}), configuration={"delta.enableDeletionVectors": "true"})
    dup = spark.createDataFrame([(1, 5), (1, 6)], "id long, v long")
    with pytest.raises(dx.MultipleMatchError):
        dxs.merge(spark, uri, dup, ["id"], [when_matched_update_all()])
    assert dx.open_table(uri).latest_version() == 0
    src = spark.createDataFrame([(2, 200, "x"), (4, 400, "y")], "id long, v long, extra string")
    dry = dxs.merge(spark, uri, src, ["id"], [when_matched_update_all(), when_not_matched_insert_all()], dry_run=True)
    row = dry.to_pylist()[0]
    assert row["version"] is None and row["num_target_rows_updated"] == 1 and row["num_target_rows_inserted"] == 1
    assert row["num_target_deletion_vectors_added"] == 1
    assert dx.open_table(uri).latest_version() == 0
    done = dxs.merge(spark, uri, src, ["id"], [when_matched_update_all(), when_not_matched_insert_all()], schema_mode="merge")
    assert done.column("version")[0].as_py() == 1
    snap = dx.open_table(uri).snapshot()
    assert snap.schema.names == ["id", "v", "extra"]
    rows = sorted(snap.to_arrow().to_pylist(), key=lambda r: r["id"])
    assert rows == [
        {"id": 1, "v": 10, "extra": None},
        {"id": 2, "v": 200, "extra": "x"},
        {"id": 3, "v": 30, "extra": None},
        {"id": 4, "v": 400, "extra": "y"},
    ]
    commit = json.loads((Path(uri) / "_delta_log" / f"{1:020d}.json").read_text().splitlines()[0])["commitInfo"]
    assert commit["operation"] == "MERGE"
    assert (
        commit["operationMetrics"]["numTargetRowsUpdated"] == "1" and commit["operationMetrics"]["numTargetRowsInserted"] == "1"
    )
    [predicate] = json.loads(commit["operationParameters"]["predicate"])
    assert "source" in predicate and "target" in predicate and "id" in predicate
    with pytest.raises(dx.WriteRefusedError):
        dxs.merge(spark, uri, src, ["id"], [dx.core.operations.when_matched_update({"nope": "source.v"})])


def test_spark_merge_rewrite_with_schema_evolution_copies_rows_with_the_new_column_null(spark, tmp_path):
    import deltaexplore.spark as dxs

    uri = str(tmp_path / "t")
    write_table(uri, pa.table({"id": [1, 2, 3], "v": [10, 20, 30]}))  # one file, no deletion vectors
    src = spark.createDataFrame([(2, 200, "x")], "id long, v long, extra string")
    m = dxs.merge(spark, uri, src, ["id"], [when_matched_update_all()], schema_mode="merge").to_pylist()[0]
    assert m["num_target_rows_updated"] == 1 and m["num_target_rows_copied"] == 2 and m["num_target_files_removed"] == 1
    rows = sorted(dx.open_table(uri).snapshot().to_arrow().to_pylist(), key=lambda r: r["id"])
    assert rows == [{"id": 1, "v": 10, "extra": None}, {"id": 2, "v": 200, "extra": "x"}, {"id": 3, "v": 30, "extra": None}]
