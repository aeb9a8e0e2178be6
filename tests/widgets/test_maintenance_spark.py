"""Maintenance from the explorer with the Spark backend: a real local Spark session."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from s3_server import fsspec_options, s3_endpoint

import deltaexplore as dx
from deltaexplore.widgets import explore, maintenance
from deltaexplore.widgets.arrow_ipc import from_ipc
from deltaexplore.widgets.views import TableView

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.xdist_group("spark")]


@pytest.fixture(scope="module")
def s3_options():
    """A moto S3 server on 127.0.0.1 (started and stopped here) with a bucket `lake`."""
    with s3_endpoint() as endpoint:
        yield fsspec_options(endpoint)


@pytest.fixture(scope="module")
def spark_ready():
    if importlib.util.find_spec("pyspark") is None:
        pytest.skip("pyspark is not installed (pip install -e '.[dev]')")
    from deltaexplore.spark.session import java_available

    if java_available() is None:
        pytest.skip("no Java runtime for Spark")
    import deltaexplore.spark as dxs

    return dxs.get_spark()  # an active session: maintenance picks Spark by itself


def test_optimize_and_vacuum_run_with_spark_and_report_progress(spark_ready, tmp_path):
    import demo_tables

    path = demo_tables.build_sales(tmp_path / "sales")
    rows = dx.open_table(path).snapshot().to_arrow().num_rows
    w = explore(path, tab="maintenance")
    backend, _, why = maintenance.find_runner("optimize")
    assert (backend, why) == ("spark", "an active Spark session")
    assert maintenance.choose_backend("checkpoint") == ("local", "checkpoint is driver-only work (no Spark needed)")
    progress: list[float] = []
    w.observe(lambda ch: progress.append(ch["new"].get("progress") or 0), names="maintenance")
    w._on_custom_msg(w, {"type": "run", "op": "optimize"}, [])
    assert w.error == ""
    metrics = {r["metric"]: r["number"] for r in from_ipc(w.overview_data["metrics"]).to_pylist()}
    assert (w.version, metrics["files"]) == (8, 3)
    assert "with spark: version 7 -> 8" in w.maintenance["result"]
    assert progress[-1] == 1.0 and any(0 < p < 1 for p in progress)
    assert progress == sorted(progress)  # one fraction over every stage, never backwards
    assert dx.open_table(path).snapshot().to_arrow().num_rows == rows
    # VACUUM really deletes (not the Spark API's default dry run) files past retention 0
    w.run("vacuum", retention_hours=0)
    assert "retention" in w.error  # refused: retention below the table's minimum is enforced


def test_metrics_have_the_same_columns_on_both_backends(spark_ready, tmp_path):
    import demo_tables

    outs = {}
    for engine in ("local", "spark"):
        path = demo_tables.build_sales(tmp_path / engine)
        outs[engine] = maintenance.run("optimize", dx.open_table(path), lambda f, m: None, engine=engine)
    assert outs["spark"]["backend"] == "spark" and outs["local"]["backend"] == "local"
    # every metric of the local engine is in Spark's (the backends' shared metrics schema is issue 15's)
    assert set(outs["local"]["metrics"].column_names) <= set(outs["spark"]["metrics"].column_names)
    assert outs["spark"]["result"]["num_files_removed"] == outs["local"]["result"]["num_files_removed"] == 8


def test_credentials_follow_the_table_to_the_spark_backend(spark_ready, tmp_path, s3_options):
    """A table on S3 (moto on 127.0.0.1) opened with credentials: VACUUM through the Spark
    backend deletes its expired files with those credentials (the runner used to pass only
    the URI, and lost them)."""
    import boto3
    import demo_tables

    from deltaexplore.core.operations import set_table_properties
    from deltaexplore.inspect import vacuum_preview

    local = demo_tables.build_sales(tmp_path / "sales")
    # uploaded files are new on S3: a zero retention lets VACUUM delete the tombstoned ones now
    set_table_properties(local, {"delta.deletedFileRetentionDuration": "interval 0 hours"})
    endpoint = s3_options["client_kwargs"]["endpoint_url"]
    client = boto3.client(
        "s3", endpoint_url=endpoint, aws_access_key_id="testing", aws_secret_access_key="testing", region_name="us-east-1"
    )
    for f in Path(local).rglob("*"):
        if f.is_file():
            client.upload_file(str(f), "lake", f"sales/{f.relative_to(local).as_posix()}")
    table = dx.open_table("s3://lake/sales", storage_options=s3_options)
    expired = vacuum_preview(table).column("path").to_pylist()
    assert len(expired) >= 5 and maintenance.preview("vacuum", TableView(table))["files_to_delete"] == len(expired)
    out = maintenance.run("vacuum", table, lambda f, m: None, engine="spark")
    assert out["backend"] == "spark" and out["result"]["num_files"] == len(expired)
    keys = {o["Key"] for o in client.list_objects_v2(Bucket="lake", Prefix="sales/")["Contents"]}
    assert keys and not keys & {f"sales/{p}" for p in expired}
    assert dx.open_table("s3://lake/sales", storage_options=s3_options).snapshot().to_arrow().num_rows == 158
