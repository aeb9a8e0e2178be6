"""Local and Spark operations return the same metrics: one schema per operation (the core's
`METRICS`), and the same numbers where both engines see the same table.

Each operation runs on two copies of one table (the copy taken just before): the core's local
operation on one, the Spark one on the other. Counts of files an engine writes may differ (Spark
splits by task), so those and the bytes written are compared only for their presence.
"""

from __future__ import annotations

import shutil

import pyarrow as pa
import pytest

import deltaexplore as dx
from deltaexplore.core import operations as local
from deltaexplore.core.operations import METRICS

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

#: metrics that depend on how an engine splits what it writes
ENGINE_DEPENDENT = {"num_added_files", "num_files_added", "num_added_bytes", "bytes_added", "num_bins", "files"}


def _same(local_result: pa.Table, spark_result: pa.Table, operation: str) -> dict:
    schema = METRICS[operation]
    assert local_result.schema.names == schema.names, operation
    assert spark_result.schema.names == schema.names, operation
    assert local_result.schema == spark_result.schema, operation
    a, b = local_result.to_pylist()[0], spark_result.to_pylist()[0]
    assert a["operation"] == b["operation"] == operation
    for key in schema.names:
        if key not in ENGINE_DEPENDENT:
            assert a[key] == b[key], (operation, key, a[key], b[key])
    return a


def test_local_and_spark_operations_return_the_same_metrics(spark, tmp_path):
    import deltaexplore.spark as dxs

    here, there = tmp_path / "local", tmp_path / "spark"
    rows = pa.table({"id": pa.array(range(40), pa.int64()), "part": pa.array([f"p{i % 2}" for i in range(40)])})
    config = {"delta.enableDeletionVectors": "true"}
    for i in range(4):  # several small files per partition: OPTIMIZE has work
        local.write_table(str(here), rows.slice(10 * i, 10), partition_by=["part"], configuration=config)

    def copy() -> str:
        if there.exists():
            shutil.rmtree(there)
        shutil.copytree(here, there)  # file times kept: VACUUM sees the same table
        return str(there)

    more = pa.table({"id": pa.array(range(40, 50), pa.int64()), "part": pa.array(["p0"] * 10)})
    uri = copy()
    _same(local.write_table(str(here), more), dxs.write(spark, spark.createDataFrame(more.to_pandas()), uri), "WRITE")
    uri = copy()
    m = _same(local.delete(str(here), "id < 5"), dxs.delete(spark, uri, "id < 5"), "DELETE")
    assert m["num_deleted_rows"] == 5 and m["num_deletion_vectors_added"] >= 1
    uri = copy()
    m = _same(
        local.update(str(here), {"id": "id + 100"}, "id >= 10 AND id < 15"),
        dxs.update(spark, uri, {"id": "id + 100"}, "id >= 10 AND id < 15"),
        "UPDATE",
    )
    assert m["num_updated_rows"] == 5
    uri = copy()
    _same(local.optimize(str(here), dry_run=True), dxs.optimize(spark, uri, dry_run=True), "OPTIMIZE")
    m = _same(local.purge_deletion_vectors(str(here)), dxs.purge_deletion_vectors(spark, uri), "REORG")
    assert m["num_deleted_rows_purged"] == 10 and m["version"] is not None
    uri = copy()
    m = _same(local.optimize(str(here)), dxs.optimize(spark, uri), "OPTIMIZE")
    assert m["num_files_removed"] > 2
    uri = copy()
    m = _same(local.restore(str(here), version=1), dxs.restore(spark, uri, version=1), "RESTORE")
    assert m["restored_version"] == 1
    uri = copy()
    _same(local.checkpoint(str(here)), dxs.checkpoint(spark, uri), "CHECKPOINT")
    uri = copy()
    m = _same(
        local.vacuum(str(here), retention_hours=0, enforce_retention_duration=False),
        dxs.vacuum(spark, uri, retention_hours=0, enforce_retention_duration=False),
        "VACUUM",
    )
    assert m["num_files"] > 0 and m["dry_run"] is True

    # the explorer's maintenance reports the Spark operation's own metrics row (an active session
    # picks Spark; checkpoint is driver-only work and stays local)
    from deltaexplore.widgets import maintenance

    assert maintenance.find_runner("checkpoint")[0] == "local"
    backend, _, _ = maintenance.find_runner("optimize")
    assert backend == "spark"
    out = maintenance.run("optimize", dx.open_table(uri), lambda *_: None)
    assert out["backend"] == "spark" and out["metrics"].schema.names == METRICS["OPTIMIZE"].names
    assert out["result"]["operation"] == "OPTIMIZE" and set(out["result"]) <= set(METRICS["OPTIMIZE"].names)
    out = maintenance.run("checkpoint", dx.open_table(uri), lambda *_: None)
    assert out["result"]["operation"] == "CHECKPOINT" and set(out["result"]) <= set(METRICS["CHECKPOINT"].names)
    assert out["result"]["num_add_files"] == dx.open_table(uri).snapshot().num_files
