"""The whole Spark API on a Spark Connect session (a Connect server from pyspark's own
distribution on loopback), checked against the local reader and against the same work done on
the classic session: reads of the corpus tables with DVs, column mapping, partitions, type
widening and timestamp_ntz; the change data feed (also an empty change set); write, append,
delete, update, merge, optimize with Z-order, purge, restore, VACUUM of more than 500 files,
checkpoint — same rows, same metrics, same commits."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
from corpus_paths import CORPUS, corpus_catalog

import deltaexplore as dx

from .conftest import SPARK_MARKS, assert_same_rows

pytestmark = [*SPARK_MARKS]


@contextlib.contextmanager
def connect_mode() -> Iterator[None]:
    """pyspark in Connect mode, as a Connect client process is (functions build Connect columns)."""
    old = os.environ.get("SPARK_CONNECT_MODE_ENABLED")
    os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)
        else:
            os.environ["SPARK_CONNECT_MODE_ENABLED"] = old


@pytest.fixture(scope="module")
def remote(spark, connect_server):
    """A Connect session for the module; the classic `spark` session is started first."""
    with connect_mode():
        from pyspark.sql.connect.session import SparkSession as RemoteSession

        session = RemoteSession.builder.remote(connect_server.url).getOrCreate()
    yield session
    with connect_mode():
        session.stop()


def _corpus_selection() -> list[dict]:
    """A few corpus tables of each kind the issue names."""
    kinds = {
        "dv": lambda t: t.get("dv"),
        "column mapping": lambda t: t.get("column_mapping_mode") in ("name", "id"),
        "partitioned": lambda t: t.get("partition_columns"),
        "type widening": lambda t: t.get("type_widening"),
        "timestamp_ntz": lambda t: t.get("timestamp_ntz"),
    }
    chosen: dict[str, dict] = {}
    for wanted in kinds.values():
        found = [t for t in corpus_catalog() if t["status"] == "ok" and wanted(t) and t["id"] not in chosen]
        for t in found[:3]:
            chosen[t["id"]] = t
    return list(chosen.values())


def test_reads_on_connect_match_the_local_reader(remote):
    from deltaexplore.spark import read

    tables = _corpus_selection()
    if not tables:
        pytest.skip(f"corpus absent at {CORPUS}")
    assert len(tables) >= 10
    with connect_mode():
        for table in tables:
            root = str(CORPUS / table["table_root"])
            snap = dx.open_table(root).snapshot()
            assert_same_rows(read(remote, snap).toArrow(), snap.to_arrow(), f"{table['id']} on Connect")
            if table.get("dv"):
                got = read(remote, snap, dv_mode="executor").toArrow()
                assert_same_rows(got, snap.to_arrow(), f"{table['id']} on Connect, DVs decoded on executors")


def _cdf_cases() -> list[tuple[str, int, int | None]]:
    expected = CORPUS / "delta-kernel-rs" / "_expected" / "expected_from_tests.json"
    out = []
    if expected.exists():
        for c in json.loads(expected.read_text())["cases"]:
            if c["kind"] == "cdf":
                out.append((f"delta-kernel-rs/{c['table']}", c["start_version"], c.get("end_version")))
    for t in corpus_catalog():
        if t.get("cdf_enabled") and t["status"] == "ok" and t["table_root"].split("/")[0] in ("dat", "delta-rs"):
            out.append((t["table_root"], 0, None))
    return out


def test_changes_on_connect_match_the_local_reader(remote, tmp_path):
    from deltaexplore.core.operations import write_table
    from deltaexplore.spark import changes

    cases = _cdf_cases()
    if not cases:
        pytest.skip(f"corpus absent at {CORPUS}")
    with connect_mode():
        for root, start, end in cases:
            expected = dx.open_table(str(CORPUS / root)).changes(start, end)
            assert_same_rows(changes(remote, str(CORPUS / root), start, end).toArrow(), expected, f"{root} {start}..{end}")
        # a range whose change set is empty: a commit that only changes properties
        uri = str(tmp_path / "empty-cdf")
        write_table(uri, pa.table({"id": [1, 2]}), configuration={"delta.enableChangeDataFeed": "true"})
        dx.core.operations.set_table_properties(uri, {"delta.logRetentionDuration": "interval 30 days"})
        got = changes(remote, uri, 1, 1)
        assert got.columns == ["id", "_change_type", "_commit_version", "_commit_timestamp"]
        assert got.count() == 0


SCHEMA = "id long, cat string, amount double, day date"


def _frame(session, start: int, n: int):
    import datetime as dt

    rows = [(i, f"c{i % 3}", i / 4, dt.date(2024, 1, 1 + i % 28)) for i in range(start, start + n)]
    return session.createDataFrame(rows, SCHEMA)


def _operations(session, uri: str) -> list[dict]:
    """The same maintenance story on one session; the metrics of every step (timing-free)."""
    import deltaexplore.spark as dxs

    conf = {"delta.enableDeletionVectors": "true", "delta.enableChangeDataFeed": "true"}
    steps = [
        dxs.write(session, _frame(session, 0, 300).repartition(3), uri, partition_by=["cat"], configuration=conf),
        dxs.write(session, _frame(session, 300, 60), uri),
        dxs.delete(session, uri, "id % 10 = 3"),
        dxs.update(session, uri, {"amount": "amount * 2"}, "id < 50"),
        dxs.merge(
            session,
            uri,
            _frame(session, 340, 40),
            ["id"],
            [dxs.when_matched_update({"amount": "source.amount + 1"}), dxs.when_not_matched_insert_all()],
        ),
        dxs.delete(session, uri, "id > 340", use_deletion_vectors=False),
        dxs.optimize(session, uri, zorder_by=["id", "day"]),
        dxs.delete(session, uri, "id % 7 = 0"),
        dxs.purge_deletion_vectors(session, uri),
        dxs.restore(session, uri, version=3),
        dxs.checkpoint(session, uri),
    ]
    out = []
    for m in steps:
        row = m.to_pylist()[0]
        out.append({k: v for k, v in row.items() if k not in ("path", "size_in_bytes")})
    return out


def _commits(uri: str) -> list[tuple]:
    """Each commit's operation, parameters and file action counts (not paths or times)."""
    out = []
    for v in dx.open_table(uri).versions():
        kinds: dict[str, int] = {}
        operation = None
        for line in (Path(uri) / "_delta_log" / f"{v:020d}.json").read_text().splitlines():
            action = json.loads(line)
            [(kind, body)] = action.items()
            kinds[kind] = kinds.get(kind, 0) + 1
            if kind == "commitInfo":
                operation = (body.get("operation"), json.dumps(body.get("operationParameters"), sort_keys=True))
        out.append((v, operation, sorted(kinds.items())))
    return out


def test_operations_on_connect_equal_the_classic_session(spark, remote, tmp_path):
    classic_uri, connect_uri = str(tmp_path / "classic"), str(tmp_path / "connect")
    classic = _operations(spark, classic_uri)
    with connect_mode():
        remote_metrics = _operations(remote, connect_uri)
    assert remote_metrics == classic
    assert _commits(connect_uri) == _commits(classic_uri)
    a, b = dx.open_table(classic_uri).snapshot(), dx.open_table(connect_uri).snapshot()
    assert a.version == b.version == 9  # the checkpoint adds no version
    assert_same_rows(b.to_arrow(), a.to_arrow(), "rows after the story")
    with connect_mode():
        from deltaexplore.spark import read

        assert_same_rows(read(remote, connect_uri).toArrow(), b.to_arrow(), "read on Connect")
        assert_same_rows(read(remote, connect_uri, version=4).toArrow(), dx.open_table(connect_uri).snapshot(4).to_arrow(), "v4")


def test_vacuum_of_many_files_on_connect(remote, tmp_path):
    """More than 500 files: the deletes run on the executors (through Connect)."""
    import deltaexplore.spark as dxs

    uri = str(tmp_path / "many")
    with connect_mode():
        df = remote.range(0, 1300).selectExpr("id", "CAST(id % 650 AS STRING) AS part")
        dxs.write(remote, df, uri, partition_by=["part"])
        assert len(dx.open_table(uri).snapshot().add_actions()) == 650
        dxs.write(remote, df, uri, mode="overwrite")
        dry = dxs.vacuum(remote, uri, retention_hours=0, enforce_retention_duration=False)
        assert dry.column("num_files")[0].as_py() == 650
        done = dxs.vacuum(remote, uri, retention_hours=0, enforce_retention_duration=False, dry_run=False)
        assert done.column("num_files")[0].as_py() == 650
    left = [p for p in Path(uri).rglob("*.parquet")]
    assert len(left) == len(dx.open_table(uri).snapshot().add_actions())
    assert dx.open_table(uri).snapshot().to_arrow().num_rows == 1300


def test_progress_on_connect_reports_through_the_progress_handler(remote):
    from deltaexplore.spark import progress, report_progress_to

    seen: list[tuple[float, str]] = []
    with connect_mode():
        with report_progress_to(lambda f, m: seen.append((f, m))), progress(remote, "count on Connect") as p:
            remote.range(0, 40_000_000, numPartitions=4).selectExpr("sum(hash(id, id * 7))").collect()  # long enough for reports
    assert p.summary.tasks >= 4 and p.summary.jobs >= 1
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert "count on Connect" in seen[-1][1]


def test_connect_failures_are_spark_errors(remote, tmp_path):
    import deltaexplore.spark as dxs

    uri = str(tmp_path / "t")
    with connect_mode():
        dxs.write(remote, _frame(remote, 0, 10), uri)
        with pytest.raises(dx.SparkError, match="UPDATE"):
            dxs.update(remote, uri, {"amount": "no_such_column + 1"})
        with pytest.raises(dx.WriteRefusedError):
            dxs.write(remote, remote.range(3).selectExpr("CAST(id AS STRING) AS id"), uri)
    assert dx.open_table(uri).snapshot().version == 0


def test_get_spark_magics_and_the_explorer_on_connect(connect_server, tmp_path):
    """In a fresh Connect client process: `get_spark(remote=...)` and `%delta spark sc://...` give a
    Connect session (a URL where nothing listens is a SparkError naming the server, never its
    token); `%delta optimize --run --engine spark` and the explorer's maintenance runner use it,
    with progress from Connect's progress handler."""
    from deltaexplore.core.operations import write_table

    uri = str(tmp_path / "t")
    for i in range(4):
        write_table(uri, pa.table({"id": list(range(i * 5, i * 5 + 5))}), mode="append")
    script = f"""
import deltaexplore as dx
from deltaexplore.spark import get_spark, read
from deltaexplore.magics.commands import Context, run_command
from deltaexplore.widgets import maintenance
try:
    get_spark(remote="sc://127.0.0.1:1/;token=SENTINEL-token")
except dx.SparkError as exc:
    assert "127.0.0.1:1" in str(exc) and "SENTINEL" not in str(exc), str(exc)
else:
    raise AssertionError("no error")
ctx = Context()
assert run_command(ctx, "spark") == "no Spark session"
said = run_command(ctx, "spark {connect_server.url}")
assert "Spark Connect session on 127.0.0.1" in said, said
spark = get_spark()
assert type(spark).__module__.startswith("pyspark.sql.connect")
assert sorted(r[0] for r in read(spark, {uri!r}).collect()) == list(range(20))
report = run_command(ctx, "optimize {uri} --run --engine spark")
assert report["backend"] == "spark" and report["version_after"] == 4, repr(report)
assert dx.open_table({uri!r}).snapshot().add_actions().num_rows == 1
seen = []
out = maintenance.run("purge", dx.open_table({uri!r}), lambda f, m: seen.append((f, m)), engine="spark")
assert out["backend"] == "spark", out
assert seen and seen[-1][0] == 1.0, seen
print("ok")
"""
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE")}
    out = subprocess.run([sys.executable, "-c", script], check=False, capture_output=True, text=True, timeout=600, env=env)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-3000:]
