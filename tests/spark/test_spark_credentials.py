"""What the Spark layer hands to Spark holds no credential of `storage_options` (they only reach
the executors' own storage, the option they are meant for): not the Spark or Hadoop
configuration, job groups and descriptions, local properties, nor the plans of the DataFrames
it builds."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

KEY = "AKIASENTINELKEY7Q3Z"
SECRET = "sentinel/Secret+Value=9f2c41"
TOKEN = "SENTINEL-session-token-4b7d"
SAS = "sv=2024-11-04&sig=SENTINELsasSIGNATURE%3D"
SENTINELS = (KEY, SECRET, TOKEN, SAS)


def leaks(text: str) -> list[str]:
    return [s for s in SENTINELS if s in text or quote(s, safe="") in text]


def _hadoop_conf(spark: Any) -> str:
    entries = []
    it = spark.sparkContext._jsc.hadoopConfiguration().iterator()
    while it.hasNext():
        e = it.next()
        entries.append(f"{e.getKey()}={e.getValue()}")
    return "\n".join(entries)


def test_spark_is_handed_no_credential(spark, tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pyspark import SparkContext

    import deltaexplore.spark as dxs

    handed: list[str] = []
    for name in ("setLocalProperty", "setJobGroup", "setJobDescription"):
        original = getattr(SparkContext, name)

        def record(self: Any, *args: Any, _original: Any = original, **kwargs: Any) -> Any:
            handed.append(f"{args!r} {kwargs!r}")
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(SparkContext, name, record)
    # a local table opened through fsspec with credentials (the local filesystem ignores them)
    uri = (tmp_path / "t").as_uri()
    opts = {"key": KEY, "secret": SECRET, "token": TOKEN, "sas_token": SAS}
    opts |= {"allow_unsafe_commits": True, "auto_mkdir": True}  # one writer; parent directories made
    df = spark.createDataFrame([(i, f"p{i % 2}") for i in range(20)], "id long, part string")
    dxs.write(spark, df, uri, partition_by=["part"], configuration={"delta.enableDeletionVectors": "true"}, storage_options=opts)
    dxs.delete(spark, uri, "id = 3", storage_options=opts)
    dxs.write(spark, df, uri, storage_options=opts)
    out = dxs.read(spark, uri, storage_options=opts)
    handed.append(out._jdf.queryExecution().toString())
    assert out.count() == 39
    dxs.optimize(spark, uri, storage_options=opts)
    dxs.vacuum(spark, uri, retention_hours=0, enforce_retention_duration=False, dry_run=False, storage_options=opts)
    assert dxs.read(spark, uri, storage_options=opts).count() == 39
    handed.append("\n".join(f"{k}={v}" for k, v in spark.sparkContext.getConf().getAll()))
    handed.append("\n".join(f"{r[0]}={r[1]}" for r in spark.sql("SET").collect()))
    handed.append(_hadoop_conf(spark))
    assert len(handed) > 5
    assert not [h[:300] for h in handed if leaks(h)]
