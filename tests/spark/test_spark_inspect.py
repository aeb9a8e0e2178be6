"""Inspection on Spark (`deltaexplore.spark.inspect`): the partitions, file sizes, overview,
deletion vector, layout summary, layout and layout density tables and the file listing computed
as Spark jobs over the checkpoint parts and JSON commits equal the local tables, on every corpus
table the local path opens (every checkpoint kind: classic, multi-part, V2 with sidecars, V2
JSON, stats_parsed only, JSON only; partitions, column mapping, deletion vectors), one test per
table on one classic session, and a table of each kind on one Spark Connect session."""

from __future__ import annotations

import itertools
import warnings

import pytest
from corpus_paths import CORPUS, corpus_catalog
from helpers import amounts_table, assert_same_table, first_primitive_column

import deltaexplore as dx
import deltaexplore.inspect as dxi
from deltaexplore.inspect.streaming import file_pass
from deltaexplore.spark.inspect import spark_file_pass

from .conftest import SPARK_MARKS

pytestmark = [*SPARK_MARKS]

#: tags the corpus must cover among the tables compared (every checkpoint kind, DVs, mapping)
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
    if not row.get("is_table", True) or row["status"] not in ("ok", "special") or "{{" in row.get("log_fingerprint", ""):
        return False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            dx.open_table(str(CORPUS / row["table_root"])).snapshot().add_actions()
        except dx.DeltaExploreError:
            return False
    return True


def _distinct_logs(rows: list[dict]) -> list[dict]:
    """The first table of each log (tables copied between sources have the same log)."""
    seen: set[str] = set()
    out = []
    for row in rows:
        key = row.get("log_fingerprint") or row["id"]
        if key not in seen:
            seen.add(key)
            out.append(row)
    return out


#: every corpus log the local path opens, once (what Spark cannot open is skipped with its reason)
READABLE = _distinct_logs([row for row in corpus_catalog() if _readable(row)])


def _covering(rows: list[dict], tags: tuple[str, ...]) -> list[dict]:
    """The first table of each tag (the same DataFrame code on a Connect session: a table of
    each kind, not the whole corpus a second time, which would double the suite's Spark time)."""
    out: list[dict] = []
    for tag in tags:
        row = next((r for r in rows if tag in r["tags"]), None)
        if row is not None and row not in out:
            out.append(row)
    return out


#: on Spark Connect: one table of each kind the corpus must cover
CONNECT_SAMPLE = _covering(READABLE, TAGS)


def _compare(spark, root: str) -> None:
    local = dx.open_table(root).snapshot()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fp = spark_file_pass(spark, dx.open_table(root).snapshot())
        try:
            fp.partitions()
        except dx.DeltaExploreError as exc:
            pytest.skip(f"Spark cannot read this log: {exc}")
    column = first_primitive_column(local) if local.has_metadata else None
    pairs = [
        (fp.partitions, lambda: dxi.partitions(local)),
        (fp.file_sizes, lambda: dxi.file_sizes(local)),
        (fp.overview, lambda: dxi.overview(local)),
        (fp.deletion_vectors, lambda: dxi.deletion_vectors(local)),
        (fp.layout_summary, lambda: dxi.layout_summary(local)),
        (lambda: fp.file_list().sort_by("path"), lambda: file_pass(local, keep_file_list=True).file_list().sort_by("path")),
    ]
    if column:  # the layout tab's tables
        pairs.append((lambda: fp.layout_density(column, bins=17), lambda: dxi.layout_density(local, column, bins=17)))
    for on_spark, replayed in pairs:
        try:
            expected = replayed()
        except dx.DeltaExploreError:
            with pytest.raises(dx.DeltaExploreError):
                on_spark()
            continue
        assert_same_table(on_spark(), expected)
    assert fp.files == local.add_actions().num_rows
    if column:  # rows in Spark's order: compared by path; files of equal bounds take their
        # ranks in file order, so ranks are compared as the bounds they order
        got, expected = fp.layout(column), dxi.layout(local, column)
        assert_same_table(got.drop_columns(["rank"]).sort_by("path"), expected.drop_columns(["rank"]).sort_by("path"))
        by_rank = [("rank", "ascending")]
        assert_same_table(
            got.select(["rank", "min", "max"]).sort_by(by_rank), expected.select(["rank", "min", "max"]).sort_by(by_rank)
        )


def test_the_compared_tables_cover_every_kind():
    covered = {tag for row in READABLE for tag in row["tags"]}
    assert set(TAGS) <= covered, set(TAGS) - covered
    assert len(READABLE) > 120
    assert {tag for row in CONNECT_SAMPLE for tag in row["tags"]} >= set(TAGS)


@pytest.mark.corpus
@pytest.mark.parametrize("row", READABLE, ids=[r["id"] for r in READABLE])
def test_spark_inspection_equals_local_on_the_corpus(spark, row):
    _compare(spark, str(CORPUS / row["table_root"]))


@pytest.fixture(scope="module")
def connect_session(spark, connect_server):
    """One Spark Connect session for the module's Connect tests (`spark_connect_mode` around each)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SPARK_CONNECT_MODE_ENABLED", "1")
        from pyspark.sql.connect.session import SparkSession as RemoteSession

        session = RemoteSession.builder.remote(connect_server.url).getOrCreate()
    yield session
    session.stop()


@pytest.fixture
def spark_connect_mode(connect_session, monkeypatch):
    """The shared Connect session, pyspark in Connect mode for this test only (classic tests
    of the same process never see it)."""
    monkeypatch.setenv("SPARK_CONNECT_MODE_ENABLED", "1")
    return connect_session


@pytest.mark.corpus
@pytest.mark.parametrize("row", CONNECT_SAMPLE, ids=[r["id"] for r in CONNECT_SAMPLE])
def test_spark_inspection_on_spark_connect(spark_connect_mode, row):
    _compare(spark_connect_mode, str(CORPUS / row["table_root"]))


def test_explorer_tabs_past_the_spark_threshold(spark, tmp_path):
    """The explorer given a session and a low threshold computes its overview, files, layout and
    DV tabs on Spark, says so, equals the explorer on the replayed state, and replays nothing."""
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
        assert (
            s_src.window(0, 5000, sort=[[key, "asc"]])[1].to_pylist() == l_src.window(0, 5000, sort=[[key, "asc"]])[1].to_pylist()
        )
    s_dv, l_dv = on_spark.deletion_vectors()[0], local.deletion_vectors()[0]
    assert s_dv["engine"]["name"] == "spark" and s_dv["summary"] == l_dv["summary"] and s_dv["dv_files"] == l_dv["dv_files"]
    assert on_spark.overview(stage=2)["metrics"] == local.overview(stage=2)["metrics"]
    s_lay, s_rows = on_spark.layout("id")
    l_lay, l_rows = local.layout("id")
    assert s_lay["engine"]["name"] == "spark" and s_lay["summary"] == l_lay["summary"]
    assert s_lay["density_chart"] == l_lay["density_chart"]
    by_path = [["path", "asc"]]
    drop = ["rank"]  # files of equal bounds take their ranks in file order
    assert s_rows.window(0, 5000, sort=by_path)[1].drop_columns(drop) == l_rows.window(0, 5000, sort=by_path)[1].drop_columns(
        drop
    )
    assert not on_spark.snap.files_loaded


def test_explorer_shows_the_progress_of_its_spark_jobs(spark):
    """Past the Spark threshold, the explorer's status line follows each tab's Spark jobs (the
    fraction `spark.jobs.progress` reports, never backwards, then the jobs' summary), and the
    line is cleared once the tab is loaded."""
    from deltaexplore.widgets.explorer import Explorer

    chosen = next(r for r in READABLE if "partitioned:multi-column" in r["tags"])
    ex = Explorer(dx.open_table(str(CORPUS / chosen["table_root"])), spark=spark, spark_files=0)
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
