"""Inspection on Spark (`deltaexplore.spark.inspect`): the partitions, file sizes, overview,
deletion vector and layout summary tables and the file listing computed as Spark jobs over the
checkpoint parts and JSON commits equal the local tables, on corpus tables of every checkpoint
kind (classic, multi-part, V2 with sidecars, V2 JSON, stats_parsed only, JSON only), with
partitions, column mapping and deletion vectors; on the classic session and on Spark Connect."""

from __future__ import annotations

import itertools
import warnings

import pytest
from corpus_paths import CORPUS, corpus_catalog
from helpers import amounts_table, assert_same_table

import deltaexplore as dx
import deltaexplore.inspect as dxi
from deltaexplore.inspect.streaming import file_pass
from deltaexplore.spark.inspect import spark_file_pass

from .conftest import SPARK_MARKS

pytestmark = [*SPARK_MARKS]

#: one readable corpus table with each of these tags
TAGS = (
    "partitioned:multi-column",
    "dv:uuid-file",
    "column-mapping:name",
    "checkpoint:stats_parsed",
    "checkpoint:v2-sidecars",
    "checkpoint:v2-json",
    "checkpoint:multipart",
    "log:10+commits",
    "timestamp_ntz",
)


def _readable(row: dict) -> bool:
    if row["status"] != "ok" or not row["active_files"] or "{{" in row.get("log_fingerprint", ""):
        return False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            dx.open_table(str(CORPUS / row["table_root"])).snapshot().add_actions()
        except dx.DeltaExploreError:
            return False
    return True


def _chosen() -> list[dict]:
    rows, seen = [], set()
    for tag in TAGS:
        for row in corpus_catalog():
            if tag in row["tags"] and row["id"] not in seen and _readable(row):
                rows.append(row)
                seen.add(row["id"])
                break
    return rows


CHOSEN = _chosen()


def _compare(spark, root: str) -> None:
    local = dx.open_table(root).snapshot()
    fp = spark_file_pass(spark, dx.open_table(root).snapshot())
    assert_same_table(fp.partitions(), dxi.partitions(local))
    assert_same_table(fp.file_sizes(), dxi.file_sizes(local))
    assert_same_table(fp.overview(), dxi.overview(local))
    assert_same_table(fp.deletion_vectors(), dxi.deletion_vectors(local))
    assert_same_table(fp.layout_summary(), dxi.layout_summary(local))
    listed = fp.file_list().sort_by("path")
    assert_same_table(listed, file_pass(local, keep_file_list=True).file_list().sort_by("path"))
    assert listed.num_rows == fp.files == local.add_actions().num_rows


@pytest.mark.corpus
def test_spark_inspection_equals_local_on_the_corpus(spark):
    assert len(CHOSEN) >= 7, [r["id"] for r in CHOSEN]
    for row in CHOSEN:
        _compare(spark, str(CORPUS / row["table_root"]))


@pytest.mark.corpus
def test_spark_inspection_on_spark_connect(spark_connect):
    for row in CHOSEN[:4]:
        _compare(spark_connect, str(CORPUS / row["table_root"]))


def test_explorer_tabs_past_the_spark_threshold(spark, tmp_path):
    """The explorer given a session and a low threshold computes its overview, files and DV tabs
    on Spark, says so, equals the explorer on the replayed state, and replays nothing."""
    import subprocess
    import sys
    from pathlib import Path

    from deltaexplore.widgets import views

    generator = Path(__file__).resolve().parents[2] / "benchmarks" / "gen_many_files.py"
    root = tmp_path / "t"
    subprocess.run([sys.executable, str(generator), str(root), "--files", "3000", "--parts", "2", "--commits", "3"], check=True)
    on_spark = views.TableView(dx.open_table(str(root)), spark=spark, spark_files=0)
    local = views.TableView(dx.open_table(str(root)), streaming_files=10**12)
    assert on_spark.engine()["name"] == "spark" and "Spark jobs" in on_spark.engine()["reason"]
    s_out, s_files, s_parts = on_spark.files()
    l_out, l_files, l_parts = local.files()
    assert s_out["engine"]["name"] == "spark" and s_out["size_chart"] == l_out["size_chart"]
    for s_src, l_src, key in ((s_files, l_files, "path"), (s_parts, l_parts, "partition")):
        assert s_src.window(0, 5000, sort=[[key, "asc"]])[1].to_pylist() == l_src.window(0, 5000, sort=[[key, "asc"]])[1].to_pylist()
    s_dv, l_dv = on_spark.deletion_vectors()[0], local.deletion_vectors()[0]
    assert s_dv["engine"]["name"] == "spark" and s_dv["summary"] == l_dv["summary"] and s_dv["dv_files"] == l_dv["dv_files"]
    assert on_spark.overview(stage=2)["metrics"] == local.overview(stage=2)["metrics"]
    assert not on_spark.snap.files_loaded


def test_explorer_shows_the_progress_of_its_spark_jobs(spark):
    """Past the Spark threshold, the explorer's status line follows each tab's Spark jobs (the
    fraction `spark.jobs.progress` reports, never backwards, then the jobs' summary), and the
    line is cleared once the tab is loaded."""
    from deltaexplore.widgets.explorer import Explorer

    ex = Explorer(dx.open_table(str(CORPUS / CHOSEN[0]["table_root"])), spark=spark, spark_files=0)
    assert ex.view.engine()["name"] == "spark"
    lines: list[str] = []
    ex.observe(lambda change: lines.append(change["new"]), names="busy")
    ex._load("files", force=True)
    on_spark = [line for line in lines if line.startswith("loading files… on Spark ")]
    assert on_spark, lines
    fractions = [int(line.split("on Spark ", 1)[1].split("%", 1)[0]) for line in on_spark]
    assert all(b >= a or a == 100 for a, b in itertools.pairwise(fractions)), fractions  # a job climbs to 100%
    assert any(f == 100 and "Spark job(s)" in line for f, line in zip(fractions, on_spark))
    assert lines[-1] == "" and ex.error == ""
    assert ex.files_data["engine"]["name"] == "spark"


def test_at_versions_on_spark_equals_the_local_engine(spark, tmp_path):
    """`dxs.at_versions`: the same table as `table.inspect.at_versions` at every version (Spark
    SQL over the same skipped scan); an aggregate Spark SQL cannot evaluate is typed."""
    import deltaexplore.spark as dxs
    from deltaexplore.inspect import ExpressionError

    uri = amounts_table(tmp_path / "t")
    for expression in ("count(*) where amount > 10", "sum(amount) where day = 'd2'"):
        local = dx.open_table(uri).inspect.at_versions(expression)
        assert dxs.at_versions(spark, uri, expression).equals(local), expression
    with pytest.raises(ExpressionError, match="Spark SQL cannot evaluate"):
        dxs.at_versions(spark, uri, "amount", [4])
