"""Maintenance from the explorer with the Spark backend: a real local Spark session."""

from __future__ import annotations

import importlib.util

import pytest

import deltaexplore as dx
from deltaexplore.widgets import explore, maintenance
from deltaexplore.widgets.arrow_ipc import from_ipc

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.xdist_group("spark")]


@pytest.fixture(scope="module")
def spark_ready():
    if importlib.util.find_spec("pyspark") is None:
        pytest.skip("pyspark is not installed (pip install -e '.[dev]')")
    from deltaexplore.spark.session import java_available

    if java_available() is None:
        pytest.skip("no Java runtime for Spark")
    return True


def test_optimize_and_vacuum_run_with_spark_and_report_progress(spark_ready, tmp_path):
    import demo_tables

    path = demo_tables.build_sales(tmp_path / "sales")
    rows = dx.open_table(path).snapshot().to_arrow().num_rows
    w = explore(path, tab="maintenance")
    backend, _, _ = maintenance.find_runner("optimize")
    assert backend == "spark"
    progress: list[float] = []
    w.observe(lambda ch: progress.append(ch["new"].get("progress") or 0), names="maintenance")
    w._on_custom_msg(w, {"type": "run", "op": "optimize"}, [])
    assert w.error == ""
    metrics = {r["metric"]: r["number"] for r in from_ipc(w.overview_data["metrics"]).to_pylist()}
    assert (w.version, metrics["files"]) == (8, 3)
    assert "with spark: version 7 -> 8" in w.maintenance["result"]
    assert progress[-1] == 1.0 and any(0 < p < 1 for p in progress)
    assert dx.open_table(path).snapshot().to_arrow().num_rows == rows
    # VACUUM really deletes (not the Spark API's default dry run) files past retention 0
    w.run("vacuum", retention_hours=0)
    assert "retention" in w.error  # refused: retention below the table's minimum is enforced
