"""Spark layer basics: lazy import, get_spark without Java, progress, filters, time travel and
file names with special characters (tables written by delta-rs)."""

from __future__ import annotations

import datetime as dt
import io
import os
import re
import subprocess
import sys

import pyarrow as pa
import pytest

import deltaexplore as dx

from . import deltars_writer
from .conftest import assert_same_rows


def test_importing_the_spark_layer_does_not_import_pyspark():
    code = "import sys, deltaexplore, deltaexplore.spark as s; s.__dir__(); print('pyspark' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_get_spark_without_java_names_the_fix(tmp_path):
    pytest.importorskip("pyspark")
    code = (
        "import deltaexplore as dx\n"
        "from deltaexplore.spark import get_spark\n"
        "try:\n    get_spark()\nexcept dx.SparkError as e:\n    print('SparkError:', e)\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME",)}
    env["JAVA_HOME"] = str(tmp_path / "no-jdk")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120, check=False)
    assert "SparkError:" in out.stdout, out.stderr[-2000:]
    assert "JAVA_HOME" in out.stdout and "openjdk" in out.stdout


def _write_delta_rs(path, table: pa.Table, **kw) -> str:
    """A table written by delta-rs, in a child process (`deltalake` is never imported here)."""
    if not deltars_writer.available():
        pytest.skip("deltalake is not installed")
    return deltars_writer.write_deltalake(str(path), table, **kw)


FILTER_DATA = pa.table(
    {
        "id": pa.array([1, 2, 3, 4, 5, 6, None], pa.int64()),
        "x": pa.array([1.5, float("nan"), -2.0, None, 0.0, 10.0, 3.0], pa.float64()),
        "name": pa.array(["a", "b", None, "a b", "z%", "[q]", "é"], pa.string()),
        "ts": pa.array([dt.datetime(2024, 1, d, 12, tzinfo=dt.UTC) for d in range(1, 7)] + [None], pa.timestamp("us", tz="UTC")),
        "day": pa.array(
            [dt.date(2024, 1, 1), dt.date(2024, 1, 2), None, dt.date(2024, 1, 1), dt.date(2024, 2, 1)] * 1
            + [dt.date(2024, 1, 1)] * 2,
            pa.date32(),
        ),
        "part": pa.array(["p 1", "p%2", "p/3", None, "p 1", "p=5", "ü[6]"], pa.string()),
    }
)

FILTERS = [
    "id > 2",
    "id != 3",
    "x > 0",
    "x != 1.5",
    "x <= 3",
    "id IN (1, 3, 99)",
    "id NOT IN (1, 3)",
    "name NOT IN ('a')",
    "name IS NULL OR id = 1",
    "NOT (id < 3 AND name = 'b')",
    "ts >= '2024-01-03T00:00:00Z'",
    "ts < '2024-01-03 12:00:00'",
    "day = '2024-01-01'",
    "part = 'p 1'",
    "part IS NULL",
    "part IN ('p%2', 'ü[6]') AND id >= 2",
    "id BETWEEN 2 AND 5",
    [("id", ">", 1), ("part", "!=", "p 1")],
]


@pytest.mark.spark
@pytest.mark.xdist_group("spark")
def test_filters_match_the_core(spark, tmp_path):
    from pyspark.sql import functions as F

    from deltaexplore.core.protocol.predicates import parse_predicate
    from deltaexplore.spark import read
    from deltaexplore.spark.filters import to_spark_filter

    uri = _write_delta_rs(tmp_path / "t", FILTER_DATA, partition_by=["part"])
    snap = dx.open_table(uri).snapshot()
    # Every filter as a boolean column of one read (one Spark job): rows where it is true.
    df = read(spark, uri)
    flags = [
        F.coalesce(to_spark_filter(parse_predicate(w), snap.schema), F.lit(False)).alias(f"__f{i}") for i, w in enumerate(FILTERS)
    ]
    marked = df.select("*", *flags).toArrow()
    names = snap.schema.names
    for i, where in enumerate(FILTERS):
        got = marked.filter(marked.column(f"__f{i}")).select(names)
        assert_same_rows(got, snap.to_arrow(where=where), str(where))
    # The planned path: file pruning + the filter, and a projection with a filter-only column.
    for where in ("part = 'p 1'", "id > 2 AND x != 1.5"):
        assert_same_rows(read(spark, uri, where=where).toArrow(), snap.to_arrow(where=where), where)
    got = read(spark, uri, columns=["name"], where="id >= 5").toArrow()
    assert_same_rows(got, snap.to_arrow(columns=["name"], where="id >= 5"), "projection")
    assert snap.scan(where="part = 'p 1'").explain()["partition_pruned"] > 0


@pytest.mark.spark
@pytest.mark.xdist_group("spark")
def test_time_travel_and_special_file_names(spark, tmp_path):
    from deltaexplore.spark import read

    uri = _write_delta_rs(tmp_path / "d i r+é", FILTER_DATA.slice(0, 3), partition_by=["part"])
    _write_delta_rs(uri, FILTER_DATA.slice(3), partition_by=["part"], mode="append")
    table = dx.open_table(uri)
    assert table.latest_version() == 1
    assert "deltalake" not in sys.modules  # delta-rs ran in a child process
    for version in (0, 1):
        assert_same_rows(read(spark, uri, version=version).toArrow(), table.snapshot(version).to_arrow(), f"v{version}")
    ts = table.snapshot(0).timestamp
    assert_same_rows(read(spark, uri, timestamp=ts).toArrow(), table.snapshot(0).to_arrow(), "timestamp")
    with pytest.raises(dx.VersionNotFoundError):
        read(spark, uri, version=7)
    with pytest.raises(dx.ColumnNotFoundError):
        read(spark, uri, columns=["nope"])


@pytest.mark.spark
@pytest.mark.xdist_group("spark")
def test_progress_text_html_and_one_sink(spark):
    from deltaexplore.spark import progress, report_progress_to

    buf = io.StringIO()
    with progress(spark, "sum of ids", display="text", stream=buf) as p:
        total = spark.range(0, 100_000, numPartitions=3).selectExpr("sum(id) AS s").collect()[0]["s"]
    assert total == sum(range(100_000))
    text = buf.getvalue()
    bars = re.findall(r"^\[deltaexplore\] \[[#.]{20}\] sum of ids: (\d+)/(\d+) tasks", text, re.M)
    # the bar ends full: all tasks of the stages Spark ran (skipped, reused stages count none)
    assert bars and bars[-1][0] == bars[-1][1] and int(bars[-1][0]) >= 3, text
    assert p.summary.jobs >= 1 and p.summary.tasks >= 3 and p.summary.failed_tasks == 0
    assert p.fraction == 1.0
    assert text.strip().endswith(p.summary.text())
    assert spark.sparkContext.getLocalProperty("spark.jobGroup.id") is None
    with progress(spark, "count <b>", display="none") as h:
        spark.range(0, 1000, numPartitions=2).count()
    bar = h._bar_html(done=True)
    assert "<progress value='1.000' max='1'" in bar and "count &lt;b&gt;" in bar and "<b>" not in bar
    # a caller that shows progress itself gets one fraction over all stages, never decreasing,
    # and the tracker draws nothing of its own
    seen: list[float] = []
    quiet = io.StringIO()
    with report_progress_to(lambda f, m: seen.append(f)):
        with progress(spark, "two stages", stream=quiet) as q:
            df = spark.range(0, 20_000, numPartitions=4).repartition(3)
            df.groupBy((df.id % 7).alias("k")).count().collect()
    assert q.display == "none" and quiet.getvalue() == ""
    assert seen and seen == sorted(seen) and seen[-1] == 1.0 and q.summary.stages >= 2


@pytest.mark.spark
@pytest.mark.xdist_group("spark")
def test_spark_failures_become_spark_errors(spark, tmp_path):
    from deltaexplore.spark import read

    uri = _write_delta_rs(tmp_path / "t", FILTER_DATA.slice(0, 2))
    df = read(spark, uri)
    for f in (tmp_path / "t").glob("*.parquet"):
        f.unlink()
    from deltaexplore.spark.session import spark_errors

    with pytest.raises(dx.SparkError, match="collecting failed in Spark"):
        with spark_errors("collecting"):
            df.collect()


@pytest.mark.spark
@pytest.mark.xdist_group("spark")
def test_bitmap_literals_are_primitive_arrays(spark):
    """DV bitmaps become array<bigint> literals backed by primitive long arrays (boxed ones make
    every task deserialize an object per word); the boxed fallback gives the same values."""
    import numpy as np

    from deltaexplore.spark import file_values as fv

    arrays = [np.array([5, -1, 1 << 62], dtype=np.int64), np.zeros(0, dtype=np.int64), np.arange(1000, dtype=np.int64)]
    for primitive in (True, False):
        cols = fv._long_array_literals(spark, arrays, primitive=primitive)
        frame = spark.range(1).select(*[c.alias(f"a{i}") for i, c in enumerate(cols)])
        row = frame.collect()[0]
        assert [list(row[f"a{i}"]) for i in range(len(arrays))] == [a.tolist() for a in arrays]
        plan = frame._jdf.queryExecution().optimizedPlan().toString()
        assert ("UnsafeArrayData" in plan) == primitive, plan[:300]


def test_sql_type_text_says_exactly_the_spark_type():
    """Projections are SQL text where the type's text is exact; anything it cannot say (a
    non-nullable element or value) is left to the Column API (None)."""
    from deltaexplore.core.protocol.schema import ArrayType, DecimalType, MapType, PrimitiveType, StructField, StructType
    from deltaexplore.spark.types import quoted, sql_type

    nested = StructType(
        (
            StructField("a b", PrimitiveType("long"), False, {}),
            StructField("c`d", ArrayType(PrimitiveType("timestamp"), True), True, {}),
            StructField("m", MapType(PrimitiveType("string"), DecimalType(38, 9), True), True, {}),
        )
    )
    assert sql_type(nested) == "STRUCT<`a b`: BIGINT, `c``d`: ARRAY<TIMESTAMP_LTZ>, `m`: MAP<STRING, DECIMAL(38,9)>>"
    assert sql_type(PrimitiveType("timestamp_ntz")) == "TIMESTAMP_NTZ"
    assert sql_type(PrimitiveType("variant")) == "STRUCT<`metadata`: BINARY, `value`: BINARY>"
    assert sql_type(ArrayType(PrimitiveType("integer"), False)) is None
    assert sql_type(MapType(PrimitiveType("string"), PrimitiveType("string"), False)) is None
    assert sql_type(DecimalType(39, 2)) is None
    assert quoted("x`y") == "`x``y`"


def test_bitmap_words_set_bit_r_and_63_of_word_r_shift_6():
    import numpy as np

    from deltaexplore.spark.deletion_vectors import bitmap_words

    rows = np.array([0, 1, 63, 64, 127, 130, 1000, (1 << 20) + 5], dtype=np.int64)
    words = bitmap_words(rows)
    assert len(words) == ((1 << 20) + 5) // 64 + 1
    expected = [0] * len(words)
    for r in rows.tolist():
        expected[r >> 6] |= 1 << (r & 63)
    assert [w & ((1 << 64) - 1) for w in words.tolist()] == expected
    assert len(bitmap_words(np.zeros(0, dtype=np.int64))) == 0


@pytest.mark.spark
@pytest.mark.xdist_group("spark")
@pytest.mark.parametrize("strategy", ["literal", "broadcast"])
def test_rows_of_an_unknown_file_fail_the_job(spark, monkeypatch, strategy):
    """Per-file values attach by key; a row whose key matches no planned file fails the job
    with a message naming the key (never silently loses or mislabels rows)."""
    import numpy as np

    from deltaexplore.spark import file_values as fv

    monkeypatch.setattr(fv, "STRATEGY", strategy)
    values = fv.FileValues(ids=[3, 4], sizes=[100, 200], bitmaps=[np.array([5], dtype=np.int64), np.zeros(0, dtype=np.int64)])
    known = spark.range(2).selectExpr("id AS v", f"CAST(100 + id * 100 AS BIGINT) AS {fv.KEY_COL}")
    rows = fv.attach(spark, known, values).orderBy("v").collect()
    assert [(r["v"], r[fv.FILE_COL], list(r[fv.BITMAP_COL])) for r in rows] == [(0, 3, [5]), (1, 4, [])]
    assert fv.KEY_COL not in fv.attach(spark, known, values).columns
    unknown = spark.range(1).selectExpr("id AS v", f"CAST(150 AS BIGINT) AS {fv.KEY_COL}")
    with pytest.raises(Exception, match="matches no file of the scan plan: 150"):
        fv.attach(spark, unknown, values).collect()


def test_progress_picks_html_in_a_notebook_kernel_and_text_elsewhere():
    """`display="auto"`: a real Jupyter kernel gets one HTML progress bar, this test process (no
    kernel) text; an unknown display is a DeltaExploreError."""
    jupyter_client = pytest.importorskip("jupyter_client")
    from deltaexplore.spark.jobs import SparkProgress, _in_notebook

    assert _in_notebook() is False
    km, kc = jupyter_client.manager.start_new_kernel(kernel_name="python3")
    try:
        printed: list[str] = []
        reply = kc.execute_interactive(
            "from deltaexplore.spark.jobs import _in_notebook\nprint(_in_notebook())",
            timeout=60,
            output_hook=lambda msg: printed.append(msg["content"].get("text", "")),
        )
        assert reply["content"]["status"] == "ok"
        assert "".join(printed).strip() == "True"
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    with pytest.raises(dx.DeltaExploreError, match="display must be"):
        SparkProgress(None, "x", display="fancy")  # type: ignore[arg-type]


@pytest.mark.spark
@pytest.mark.xdist_group("spark")
def test_dv_read_of_many_files_with_several_row_groups_plans_without_a_job(spark, tmp_path):
    """DVs deleting rows in every row group of files of several row groups: `_metadata.row_index`
    counts from the file's start, so both DV modes give the core's rows. More files than Spark
    lists with a job (32), sizes equal and unique (both file keys): planning runs no Spark job."""
    import numpy as np
    import pyarrow.parquet as pq

    from deltaexplore.core.operations import delete, write_table
    from deltaexplore.spark import read

    rng = np.random.default_rng(5)
    n = 150_000
    data = pa.table({"id": np.arange(n, dtype=np.int64), "x": rng.random(n)})
    root = tmp_path / "t"
    conf = {"delta.enableDeletionVectors": "true"}
    write_table(str(root), data, configuration=conf, target_file_size=30_000, max_rows_per_file=4096)
    write_table(str(root), data.slice(0, 10), configuration=conf)  # a file of a size no other has...
    write_table(str(root), data.slice(10, 10), configuration=conf)  # ...and two of the same size likely
    delete(str(root), "id % 7 = 3 OR id >= 149990")
    snap = dx.open_table(str(root)).snapshot()
    adds = snap.add_actions()
    paths = [root / p for p in adds.column("path").to_pylist()]
    groups = [pq.read_metadata(p).num_row_groups for p in paths]
    assert adds.num_rows > 32 and max(groups) >= 3, (adds.num_rows, groups)
    assert all(adds.column("deletionVector").to_pylist())
    expected = snap.to_arrow()
    assert expected.num_rows == n + 20 - len([i for i in range(n) if i % 7 == 3 or i >= 149990]) - 3
    tracker = spark.sparkContext.statusTracker()
    for mode in ("driver", "executor"):
        before = set(tracker.getJobIdsForGroup(None))
        df = read(spark, str(root), dv_mode=mode)
        assert set(tracker.getJobIdsForGroup(None)) == before, f"{mode}: planning ran a Spark job"
        assert_same_rows(df.toArrow(), expected, f"dv_mode={mode}")


def _glob_regex(glob: str) -> re.Pattern[str]:
    """The regular expression Hadoop's `GlobPattern` makes of the globs `name_glob` writes."""
    out = []
    for ch in glob:
        out.append({"{": "(?:", "}": ")", ",": "|", "*": ".*"}.get(ch, re.escape(ch)))
    return re.compile("".join(out))


def test_name_glob_matches_exactly_the_names_among_the_others():
    """The directory scan's filter: every name read matches, no other name of the directories
    does (uuid-like names, a name that is a prefix of another, names sharing long prefixes)."""
    import random
    import uuid

    from deltaexplore.spark.reader import name_glob

    rng = random.Random(4)
    names = [f"part-{i:05d}-{uuid.UUID(int=rng.getrandbits(128))}.c000.snappy.parquet" for i in range(300)]
    names += ["a.parquet", "a.parquet.1", "b.parquet"]
    for trial in range(20):
        wanted = sorted(rng.sample(names, rng.randint(1, len(names) - 1)))
        others = set(names) - set(wanted) | {"deletion_vector_1.bin", "a.parquet.crc"}
        regex = _glob_regex(name_glob(wanted, others) or "*")
        assert all(regex.fullmatch(n) for n in wanted), trial
        assert not any(regex.fullmatch(n) for n in others), trial
    assert name_glob(["x.parquet"], set()) is None  # nothing else there: no filter


@pytest.mark.spark
@pytest.mark.xdist_group("spark")
def test_many_files_read_by_listing_their_directory_skip_removed_and_missing_files(spark, tmp_path, monkeypatch):
    """More than 32 files in one directory that also holds removed files (not vacuumed) and DV
    files: the scan lists the directory with a filter of the names read, its files are exactly
    the snapshot's, the rows the core's; a data file gone from disk fails the read as a
    `SparkError` naming it, never drops its rows."""
    import numpy as np

    from deltaexplore.core.operations import delete, write_table
    from deltaexplore.spark import file_values as fv
    from deltaexplore.spark import read
    from deltaexplore.spark import reader as R

    root = tmp_path / "t"
    conf = {"delta.enableDeletionVectors": "true"}
    old = pa.table({"id": np.arange(5_000, dtype=np.int64), "x": np.zeros(5_000)})
    write_table(str(root), old, configuration=conf, max_rows_per_file=100)  # 50 files, then removed
    new = pa.table({"id": np.arange(8_000, dtype=np.int64), "x": np.arange(8_000) / 3})
    write_table(str(root), new, mode="overwrite", configuration=conf, max_rows_per_file=80)
    delete(str(root), "id % 5 = 1")
    snap = dx.open_table(str(root)).snapshot()
    live = {root / p for p in snap.add_actions().column("path").to_pylist()}
    on_disk = {p for p in root.iterdir() if p.suffix == ".parquet"}
    assert len(live) == 100 and len(on_disk - live) == 50
    scans = []
    original = R._directory_scan

    def spy(*args, **kwargs):
        df = original(*args, **kwargs)
        scans.append(df)
        return df

    monkeypatch.setattr(R, "_directory_scan", spy)
    keys = []
    split = fv.split_by_key
    monkeypatch.setattr(fv, "split_by_key", lambda *a: keys.append(split(*a)) or keys[-1])
    df = read(spark, str(root))
    assert any(key == "stamp" and len(positions) > 32 for groups in keys for positions, key in groups), keys
    assert scans and all(s is not None for s in scans), "the directory was not listed"
    listed = {f.split(":", 1)[1].lstrip("/") for s in scans for f in s.inputFiles()}
    assert len(listed) > 32 and listed <= {str(p).lstrip("/") for p in live}  # groups of <= 32 files: by path
    assert_same_rows(df.toArrow(), snap.to_arrow())

    gone = sorted(live)[7]
    gone.unlink()  # Spark may still list it (its cache of listings): then the job fails on it
    with pytest.raises(dx.SparkError) as err:
        read(spark, str(root)).toArrow()
    assert gone.name in str(err.value)


def test_files_are_keyed_by_size_else_size_and_time_else_path(monkeypatch):
    """Each file by the key that tells it apart: a unique size; (size, time) when that tells
    more files apart; the path for the rest (and for sizes or times unknown)."""
    import numpy as np

    from deltaexplore.spark import file_values as fv

    def split(sizes, times=None):
        return [(list(p), key) for p, key in fv.split_by_key(np.asarray(sizes), None if times is None else np.asarray(times))]

    assert split([10, 20, 30], [1, 1, 1]) == [([0, 1, 2], "size"), ([], "path")]
    assert split([10, 10, 10, 20], [1, 2, 2, 1]) == [([0, 3], "stamp"), ([1, 2], "path")]
    assert split([10, 10, 20], [1, 2, 3]) == [([0, 1, 2], "stamp"), ([], "path")]
    assert split([10, 10, 20], [1, -1, 3]) == [([0, 2], "stamp"), ([1], "path")]
    assert split([10, 10, 20]) == [([2], "size"), ([0, 1], "path")]
    monkeypatch.setattr(fv, "STRATEGY", "literal")  # literals index sizes only
    assert split([10, 10, 20], [1, 2, 3]) == [([2], "size"), ([0, 1], "path")]
