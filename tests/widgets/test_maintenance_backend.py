"""Maintenance backends: chosen sensibly and stated, driver-only work never starts Spark, one
progress whose fraction only moves forward, the operation's metrics table as the result."""

from __future__ import annotations

import io
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pytest

import deltaexplore as dx
from deltaexplore.widgets import maintenance

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


def test_without_a_spark_session_the_local_engine_runs(monkeypatch):
    monkeypatch.setattr(maintenance, "_active_spark", lambda: False)
    assert maintenance.choose_backend("optimize") == ("local", "no active Spark session (engine='spark' starts one)")
    assert maintenance.choose_backend("vacuum", "local") == ("local", "asked for the local engine")
    assert maintenance.choose_backend("checkpoint", "spark")[0] == "local"  # driver-only
    assert "driver-only" in maintenance.choose_backend("checkpoint", "spark")[1]
    with pytest.raises(dx.DeltaExploreError, match="unknown engine 'gpu'"):
        maintenance.choose_backend("optimize", "gpu")
    described = maintenance.describe("optimize")
    assert (described["backend"], described["available"]) == ("local", True) and "no active Spark session" in described[
        "backend_reason"
    ]


def test_an_active_session_or_a_request_picks_spark(monkeypatch):
    pytest.importorskip("pyspark")
    monkeypatch.setattr(maintenance, "_active_spark", lambda: True)
    assert maintenance.choose_backend("optimize") == ("spark", "an active Spark session")
    assert maintenance.choose_backend("purge") == ("spark", "an active Spark session")
    assert maintenance.choose_backend("optimize", "local")[0] == "local"
    monkeypatch.setattr(maintenance, "_active_spark", lambda: False)
    assert maintenance.choose_backend("optimize", "spark") == ("spark", "asked for Spark")


def test_cells_never_start_spark_unless_asked(tmp_path):
    """In a fresh process: `%delta optimize --run` without a session and `%delta checkpoint
    --run --engine spark` both run locally and never import pyspark (no JVM is started)."""
    code = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(NOTEBOOKS)!r})
        import demo_tables
        from IPython.testing.globalipapp import get_ipython
        ip = get_ipython()
        ip.run_line_magic("load_ext", "deltaexplore")
        path = demo_tables.build_sales({str(tmp_path / "sales")!r})
        o = ip.run_line_magic("delta", f"optimize {{path}} --run")
        c = ip.run_line_magic("delta", f"checkpoint {{path}} --run --engine spark")
        print(o["backend"], o["version_after"], c["backend"], c["version_after"], "pyspark" in sys.modules)
        print(o.table.column_names)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    first, second = out.stdout.strip().splitlines()[-2:]
    assert first == "local 8 local 8 False"
    assert "num_files_removed" in second and "num_files_added" in second  # the operation's metrics
    assert "[deltaexplore] OPTIMIZE (compact) · sales [" in out.stderr  # text progress outside a notebook
    assert "100% done in " in out.stderr


def test_progress_only_moves_forward_and_the_result_is_the_metrics_table(tmp_path):
    import demo_tables

    path = demo_tables.build_sales(tmp_path / "sales")
    steps = [0.1, 0.6, 0.3, 0.9, 0.2, float("nan")]

    def runner(table, *, progress, storage_options=None, **params):
        for f in steps:
            progress(f, f"stage at {f}")
        from deltaexplore.core.operations import optimize

        return optimize(table)

    seen: list[float] = []
    maintenance.register_runner("optimize", "stepper", runner)
    try:
        out = maintenance.run("optimize", dx.open_table(path), lambda f, m: seen.append(f))
    finally:
        maintenance._REGISTERED.clear()
    assert seen == sorted(seen) and seen[0] == 0.0 and seen[-1] == 1.0
    assert max(seen[:-1]) == 0.9  # what the runner reported, held when it went backwards
    assert out["backend"] == "stepper" and (out["version_before"], out["version_after"]) == (7, 8)
    assert isinstance(out["metrics"], pa.Table) and out["metrics"].num_rows == 1
    assert out["result"]["num_files_removed"] == 8 and "files" not in out["result"]


def test_the_progress_display_is_text_outside_a_notebook():
    stream = io.StringIO()
    show = maintenance.progress_display("VACUUM · t", html_output=False, stream=stream)
    for f in (0.0, 0.0, 0.5, 1.0):
        show(f, "working" if f < 1 else "done")
    lines = stream.getvalue().splitlines()
    assert lines == [
        "[deltaexplore] VACUUM · t [....................]   0% working",
        "[deltaexplore] VACUUM · t [##########..........]  50% working",
        "[deltaexplore] VACUUM · t [####################] 100% done",
    ]
    bar = maintenance._ProgressDisplay("<b>x</b>", html_output=False).html(0.25, "<i>")
    assert "<progress value='0.250' max='1'" in bar and "&lt;b&gt;x&lt;/b&gt;" in bar and "&lt;i&gt;" in bar


def test_the_spark_runner_hands_the_table_and_its_credentials_on(monkeypatch):
    """The adapter gives Spark the `Table` itself (its storage) and its storage options, and
    Spark's tracker reports into the caller's progress (no second display)."""
    pytest.importorskip("pyspark")
    import deltaexplore.spark as dxs

    received: dict = {}

    def operation(spark, table, *, dry_run, storage_options=None, **kwargs):
        from deltaexplore.spark import jobs

        received.update(spark=spark, table=table, dry_run=dry_run, storage_options=storage_options, kwargs=kwargs)
        received["sink"] = jobs._SINK.get()
        return pa.table({"operation": ["VACUUM"], "num_files": [3]})

    monkeypatch.setattr(dxs, "get_spark", lambda: "the-session")
    monkeypatch.setattr(dxs, "active_session", lambda: "the-session")
    runner = maintenance._spark_runner(operation, "vacuum")
    table = object()
    seen: list[float] = []
    out = runner(table, progress=lambda f, m: seen.append(f), storage_options={"key": "k"}, retention_hours=5)
    assert received["table"] is table and received["storage_options"] == {"key": "k"} and received["dry_run"] is False
    assert received["kwargs"] == {"retention_hours": 5} and received["spark"] == "the-session"
    received["sink"](0.5, "half")
    assert seen == [0.02, 0.05 + 0.9 * 0.5]
    assert out.column("num_files").to_pylist() == [3]


def test_storage_options_stay_with_the_table():
    table = dx.open_table("memory://bucket/t", storage_options={"skip_instance_cache": True})
    assert maintenance._storage_options(table, None) == {"skip_instance_cache": True}
    assert maintenance._storage_options(table, {"a": 1}) == {"a": 1}
