"""A standalone Spark cluster (a master and one worker on loopback, started by the suite from
pyspark's own distribution) whose executors have pyspark, pyarrow and numpy but NOT
deltaexplore, driven by a driver in its own process:

- deleting 2M of 5M rows into deletion vectors (and the same at 10x the rows) grows the
  driver's Python peak memory by at most 64 MB: row positions never reach the driver;
- reads with DVs decoded on the executors, the change data feed, UPDATE with DVs and VACUUM
  work there; an operation that needs deltaexplore on the executors (the Python data writer)
  fails with a `SparkError` naming the missing package.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import deltaexplore as dx

# its own group: the cluster and its driver run in processes of their own (no session of the
# `spark` group's worker), so xdist may run it beside the other Spark tests
pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark-cluster"), pytest.mark.slow]

GROWTH_LIMIT_MB = 64


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    pytest.importorskip("pyspark", reason="pyspark is not installed")
    from deltaexplore.spark.session import java_available

    if java_available() is None:
        pytest.skip("no Java runtime: the standalone cluster needs java 17+")
    from .servers import python_without_deltaexplore, start_standalone

    workdir = tmp_path_factory.mktemp("standalone")
    python = python_without_deltaexplore(workdir)
    check = subprocess.run([python, "-c", "import deltaexplore"], check=False, capture_output=True, text=True)
    assert check.returncode != 0 and "No module named 'deltaexplore'" in check.stderr, (
        "the executors' Python must lack deltaexplore"
    )
    master, worker = start_standalone(workdir, python=python, cores=2, memory="3g")
    yield master.url, python
    worker.stop()
    master.stop()


def _table(path: Path, rows: int, files: int, *, cdf: bool = False) -> str:
    """`rows` rows in `files` files, deletion vectors enabled (written by the local engine)."""
    from deltaexplore.core.operations import write_table

    uri = str(path)
    per = rows // files
    conf = {"delta.enableDeletionVectors": "true", "delta.enableChangeDataFeed": str(cdf).lower()}
    for i in range(files):
        ids = np.arange(i * per, (i + 1) * per, dtype=np.int64)
        write_table(
            uri, pa.table({"id": ids, "v": (ids % 1000).astype(np.int32)}), mode="append", configuration=conf if i == 0 else None
        )
    return uri


DRIVER = textwrap.dedent(
    """
    import json, resource, sys
    import deltaexplore as dx
    import deltaexplore.spark as dxs
    from pyspark.sql import SparkSession

    master, python, uri, step = sys.argv[1:5]
    spark = (
        SparkSession.builder.master(master).appName("dx-cluster-test")
        .config("spark.pyspark.python", python).config("spark.executor.memory", "2g")
        .config("spark.driver.memory", "1g").config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4").getOrCreate()
    )
    assert dxs.get_spark() is spark  # an existing cluster session is used as it is
    assert spark.conf.get("spark.sql.shuffle.partitions") == "4"  # no laptop defaults forced on it

    def peak_mb():
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    out = {}
    if step == "delete":
        dx.open_table(uri).snapshot().files()  # the driver's own per-file work, before the baseline
        spark.range(10).count()
        before = peak_mb()
        m = dxs.delete(spark, uri, "id % 5 < 2")
        out["growth_mb"] = peak_mb() - before
        out["metrics"] = m.to_pylist()[0]
    elif step == "reads":
        out["read_executor"] = dxs.read(spark, uri, dv_mode="executor").count()
        out["read_auto"] = dxs.read(spark, uri).count()
        v = dx.open_table(uri).latest_version()
        out["changes"] = dxs.changes(spark, uri, v).groupBy("_change_type").count().toArrow().to_pylist()
    elif step == "needs-deltaexplore":
        errors = []
        for run in (
            lambda: dxs.write(spark, spark.range(5).selectExpr("id", "CAST(id AS INT) AS v"), uri),
            lambda: dxs.update(spark, uri, {"v": "v + 1"}, "id < 1000"),
        ):
            try:
                run()
            except dx.SparkError as exc:
                errors.append(str(exc))
        out["errors"] = errors
    elif step == "vacuum":
        m = dxs.vacuum(spark, uri, retention_hours=0, enforce_retention_duration=False, dry_run=False)
        out["vacuum"] = m.select(["num_files"]).to_pylist()[0]
    spark.stop()
    print("RESULT " + json.dumps(out, default=str))
    """
)


def _drive(cluster, uri: str, step: str) -> dict:
    master, python = cluster
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE")}
    env["PYSPARK_PYTHON"] = python  # what the executors run (a driver started by python, not spark-submit, reads this)
    out = subprocess.run(
        [sys.executable, "-c", DRIVER, master, python, uri, step],
        check=False,
        capture_output=True,
        text=True,
        timeout=1200,
        env=env,
    )
    lines = [line for line in out.stdout.splitlines() if line.startswith("RESULT ")]
    assert out.returncode == 0 and lines, f"driver failed ({out.returncode}):\n{out.stderr[-4000:]}"
    return json.loads(lines[-1][len("RESULT ") :])


@pytest.mark.parametrize("scale", [1, 10], ids=["5M-rows", "50M-rows"])
def test_delete_into_dvs_keeps_the_driver_flat(cluster, tmp_path, scale):
    rows, files = 5_000_000 * scale, 50
    uri = _table(tmp_path / "t", rows, files)
    result = _drive(cluster, uri, "delete")
    metrics = result["metrics"]
    assert metrics["num_deleted_rows"] == rows * 2 // 5
    assert metrics["num_deletion_vectors_added"] == files
    assert result["growth_mb"] <= GROWTH_LIMIT_MB, f"driver Python peak grew {result['growth_mb']:.0f} MB"
    snap = dx.open_table(uri).snapshot()
    dvs = snap.add_actions().column("deletionVector").to_pylist()
    assert all(d and d["cardinality"] == rows // files * 2 // 5 for d in dvs)
    if scale == 1:
        ids = snap.to_arrow(columns=["id"]).column("id").to_numpy()
        assert len(ids) == rows * 3 // 5 and not np.any(ids % 5 < 2)


def test_executors_without_deltaexplore(cluster, tmp_path):
    """DELETE into DVs, reads (DVs decoded on executors), the change data feed and VACUUM need
    only pyspark, pyarrow and numpy on the executors; writing rows (the Python data writer) says
    that deltaexplore is missing there."""
    from deltaexplore.core.operations import update

    uri = _table(tmp_path / "t", 200_000, 8, cdf=True)
    update(uri, {"v": "v + 1"}, "id < 1000")  # change data written by the local engine
    deleted = _drive(cluster, _table(tmp_path / "plain", 200_000, 8), "delete")
    assert deleted["metrics"]["num_deleted_rows"] == 80_000
    reads = _drive(cluster, uri, "reads")
    assert reads["read_executor"] == reads["read_auto"] == 200_000
    changes = {r["_change_type"]: r["count"] for r in reads["changes"]}
    assert changes == {"update_preimage": 1000, "update_postimage": 1000}, changes
    v = dx.open_table(uri).latest_version()
    errors = _drive(cluster, uri, "needs-deltaexplore")["errors"]
    assert len(errors) == 2 and all("'deltaexplore' is not installed on the Spark executors" in e for e in errors), errors
    assert dx.open_table(uri).latest_version() == v  # nothing committed
    dx.core.operations.write_table(
        uri, pa.table({"id": [1], "v": [1]}).cast(dx.open_table(uri).snapshot().arrow_schema), mode="overwrite"
    )
    assert _drive(cluster, uri, "vacuum")["vacuum"]["num_files"] >= 8
    assert dx.open_table(uri).snapshot().to_arrow().num_rows == 1
