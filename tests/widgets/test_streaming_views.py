"""The explorer past its streaming threshold: the overview, files, layout, DV and health tabs counted by
one streaming pass (`inspect.streaming`) equal the tabs of the replayed state, say which engine
computed them and why, and never replay the state."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

import deltaexplore as dx
from deltaexplore.widgets import views

GENERATOR = Path(__file__).resolve().parents[2] / "benchmarks" / "gen_many_files.py"


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    out = tmp_path_factory.mktemp("many") / "t"
    subprocess.run([sys.executable, str(GENERATOR), str(out), "--files", "60000", "--parts", "2", "--commits", "4"], check=True)
    return str(out)


def _ipc(data: bytes | dict) -> pa.Table:
    return pa.ipc.open_stream(data).read_all() if isinstance(data, (bytes, bytearray, memoryview)) else data


def _window(source, sort):
    total, rows = source.window(0, 100_000, sort=sort)
    return total, rows.to_pylist()


def test_streaming_tabs_equal_the_replayed_tabs(generated):
    streamed = views.TableView(dx.open_table(generated), streaming_files=0)
    replayed = views.TableView(dx.open_table(generated), streaming_files=10**12)
    assert (
        streamed.engine()["name"] == "streaming" and "about 60,160 files" in streamed.engine()["reason"]
    )  # 60,000 + the adds of 4 commits
    assert replayed.engine()["name"] == "local"

    s_out, s_files, s_parts = streamed.files()
    r_out, r_files, r_parts = replayed.files()
    assert s_out["engine"]["name"] == "streaming" and r_out["engine"]["name"] == "local"
    assert s_out["size_chart"] == r_out["size_chart"] and s_out["skew_chart"] == r_out["skew_chart"]
    assert s_files.table.schema == r_files.table.schema
    by_path = [["path", "asc"]]
    assert _window(s_files, by_path) == _window(r_files, by_path)
    assert _window(s_files, [["size", "desc"], ["path", "asc"]]) == _window(r_files, [["size", "desc"], ["path", "asc"]])
    assert _window(s_parts, [["partition", "asc"]]) == _window(r_parts, [["partition", "asc"]])

    s_dv, s_dv_rows = streamed.deletion_vectors()
    r_dv, r_dv_rows = replayed.deletion_vectors()
    assert s_dv["summary"] == r_dv["summary"] and s_dv["files_with_dv"] == r_dv["files_with_dv"] > 2000
    assert s_dv["dv_files"] == r_dv["dv_files"] and s_dv["chart"] == r_dv["chart"]
    assert _window(s_dv_rows, by_path) == _window(r_dv_rows, by_path)

    s_health, r_health = streamed.health(), replayed.health()
    assert s_health["engine"]["name"] == "streaming"
    assert _ipc(s_health["metrics"]).drop_columns(["detail"]).equals(_ipc(r_health["metrics"]).drop_columns(["detail"]))

    for column in ("id", "value"):  # the pass of the files tab keeps no bounds: one more pass per column
        s_lay, s_lay_rows = streamed.layout(column)
        r_lay, r_lay_rows = replayed.layout(column)
        assert s_lay["engine"]["name"] == "streaming" and r_lay["engine"]["name"] == "local"
        assert _ipc(s_lay["summary"]).equals(_ipc(r_lay["summary"]))
        assert s_lay["density_chart"] == r_lay["density_chart"] and s_lay["ranges_chart"] == r_lay["ranges_chart"]
        assert s_lay["integral_positions"] == r_lay["integral_positions"]
        worst = [["overlap_depth", "desc"], ["path", "asc"]]
        assert _window(s_lay_rows, worst) == _window(r_lay_rows, worst)
        assert streamed.file_pass().kept_columns == (column,)  # the files tab reads the new pass too
    assert _window(streamed.files()[1], by_path) == _window(r_files, by_path)

    s_over, r_over = streamed.overview(stage=2), replayed.overview(stage=2)
    assert s_over["engine"]["name"] == "streaming"
    assert _ipc(s_over["metrics"]).equals(_ipc(r_over["metrics"]))
    assert not streamed.snap.files_loaded  # the streaming view never replayed the state
    assert replayed.snap.files_loaded


def test_spark_threshold_estimated_from_the_free_memory(generated, monkeypatch):
    """Given a session and no threshold, the explorer computes on Spark past the file count half
    the free memory holds at `KERNEL_BYTES_PER_FILE` a file, compared with the count the log
    states, and its reason says so; the free memory unknown, the streaming threshold."""
    from deltaexplore.inspect.streaming import KERNEL_BYTES_PER_FILE, available_memory, spark_threshold

    free = available_memory()
    assert free is not None and free > 0 and spark_threshold(free) == free // 2 // KERNEL_BYTES_PER_FILE
    session = object()  # the engine is chosen before any job: the session is not touched
    monkeypatch.setattr(views, "available_memory", lambda: 2 * 50_000 * KERNEL_BYTES_PER_FILE)
    tight = views.TableView(dx.open_table(generated), spark=session)
    engine = tight.engine()
    assert tight.spark_files == 50_000 and engine["name"] == "spark"
    assert "about 60,160 files" in engine["reason"] and "at least 50,000 (estimated from the free memory" in engine["reason"]
    monkeypatch.setattr(views, "available_memory", lambda: 2 * 100_000 * KERNEL_BYTES_PER_FILE)
    roomy = views.TableView(dx.open_table(generated), spark=session, streaming_files=0)
    assert roomy.spark_files == 100_000 and roomy.engine()["name"] == "streaming"
    given = views.TableView(dx.open_table(generated), spark=session, spark_files=60_000)
    assert given.engine()["name"] == "spark" and "(the threshold given to the explorer)" in given.engine()["reason"]
    monkeypatch.setattr(views, "available_memory", lambda: None)
    unknown = views.TableView(dx.open_table(generated), spark=session, streaming_files=60_000)
    assert unknown.spark_files == 60_000 and "the free memory is unknown" in unknown.engine()["reason"]


def test_a_slider_step_on_a_streamed_table_is_counted_from_the_pass_kept(generated, monkeypatch):
    """One and two versions back and forward again: the overview's counts are the kept pass's
    changed by the commits between (`inspect.stepped_totals`), equal to the replayed view's of
    that version, and no new pass is made for them."""
    streamed = views.TableView(dx.open_table(generated), streaming_files=0)
    latest = streamed.version
    streamed.overview(stage=2)
    assert list(streamed._passes) == [latest]
    passes = []
    monkeypatch.setattr(views, "file_pass", lambda *a, **k: passes.append(a) or pytest.fail("a pass was made for a step"))
    for version in (latest - 1, latest - 2, latest - 1, latest):
        streamed.set_version(version)
        got = streamed.overview()  # the first view of the version: its counts come at once
        assert got["stage"] == 2 and got["complete"]
        assert _ipc(got["metrics"]).equals(_ipc(streamed.overview(stage=2)["metrics"]))
        want = views.TableView(dx.open_table(generated), version=version, streaming_files=10**12).overview(stage=2)
        assert got["version"] == version and got["engine"]["name"] == "streaming"
        assert _ipc(got["metrics"]).equals(_ipc(want["metrics"])), version
    assert list(streamed._passes) == [latest] and not passes
