"""The protocol-currency fixtures read on Spark through this project, with the local reader's
results: a checkpoint without its metaData / protocol row, a protocol that goes down with
`checkpointProtection`, a collated column with statistics, and the RFCs in flight (nanosecond
timestamps, intervals, writer features, a reader feature refused). The fixtures are the ones the
local tests build (tests/test_damaged_checkpoints.py, test_protocol_versions.py,
test_collations.py, test_features_in_flight.py)."""

from __future__ import annotations

import pyarrow as pa
import pytest
import test_collations
import test_damaged_checkpoints as damaged
import test_features_in_flight as in_flight
import test_protocol_versions as versions
from helpers import protocol

import deltaexplore as dx

from .conftest import SPARK_MARKS, assert_same_rows

pytestmark = SPARK_MARKS


def _read(spark, table, **kwargs) -> pa.Table:
    from deltaexplore.spark import read

    return read(spark, table, **kwargs).toArrow()


@pytest.mark.parametrize("column", ["metaData", "protocol"])
def test_checkpoint_without_the_row_on_spark(spark, tmp_path, column):
    ck = damaged._table_with_checkpoint(tmp_path)
    damaged._drop_row(ck, column)
    table = dx.open_table(str(tmp_path))
    with pytest.raises(dx.InvalidLogError, match=ck.name):
        _read(spark, table)
    assert_same_rows(_read(spark, table, version=1), table.snapshot(1).to_arrow(), "v1, before the checkpoint")


def test_each_version_by_its_own_protocol_on_spark(spark, tmp_path):
    table = dx.open_table(str(versions.build(tmp_path / "t")))
    for v in (0, 2, 3):
        assert_same_rows(_read(spark, table, version=v), table.snapshot(v).to_arrow(), f"v{v}")
    with pytest.raises(dx.UnsupportedFeatureError, match=r"adaptiveMetadata.*iceberg-v4-metadata\.md"):
        _read(spark, table, version=1)
    with pytest.raises(dx.UnsupportedFeatureError, match="adaptiveMetadata"):
        _read(spark, table, timestamp=versions.T0 + versions.HOUR + 60_000)


def test_collated_column_on_spark(spark, tmp_path):
    table = test_collations.build(tmp_path)
    for where in ("name = 'APPLE'", "name IN ('APPLE', 'cherry')", "name > 'BANANA'", "plain = 'z'"):
        got = _read(spark, table, where=where)
        assert_same_rows(got, table.snapshot().to_arrow(where=where), where)
    assert sorted(_read(spark, table, where="name = 'APPLE'").column("name").to_pylist()) == ["Apple", "apple"]
    with pytest.raises(dx.UnsupportedFeatureError, match=r"icu\.UNICODE"):
        _read(spark, table, where="uni = 'x'")


def test_features_in_flight_on_spark(spark, tmp_path):
    """Writer features in flight read the same; a reader feature in flight is refused naming its
    RFC; nanosecond timestamps and intervals are read as the local reader reads them, or refused
    naming what Spark lacks."""
    data = pa.table({"id": pa.array([1, 2], pa.int64())})
    for feature in ("icebergCompatV3", "columnMappingUsageTracking", "icebergWriterCompatV1", "checkpointProtection"):
        table = in_flight._table(
            tmp_path / feature, [in_flight._field("id", "long")], protocol(1, 7, None, ["appendOnly", feature]), [(data, {})]
        )
        assert_same_rows(_read(spark, table), table.snapshot().to_arrow(), feature)
    adaptive = ["adaptiveMetadata"]
    table = in_flight._table(
        tmp_path / "adaptive", [in_flight._field("id", "long")], protocol(3, 7, adaptive, adaptive), [(data, {})]
    )
    with pytest.raises(dx.UnsupportedFeatureError, match=r"adaptiveMetadata.*iceberg-v4-metadata\.md"):
        _read(spark, table)


def test_nanoseconds_refused_on_spark_naming_the_rfc(spark, tmp_path):
    """Spark has no nanosecond timestamps: refused naming the RFC, where the local reader reads them."""
    nanos = ["timestampNtz", "timestampNanos"]
    ts = pa.array([1_730_982_834_123_456_789, None], pa.timestamp("ns", tz="UTC"))
    table = in_flight._table(
        tmp_path / "ns",
        [in_flight._field("id", "long"), in_flight._field("ts", "timestamp_nanos")],
        protocol(3, 7, nanos, nanos),
        [(pa.table({"id": pa.array([1, 2], pa.int64()), "ts": ts}), {})],
    )
    assert table.snapshot().to_arrow().schema.field("ts").type == pa.timestamp("ns", tz="UTC")
    with pytest.raises(dx.UnsupportedFeatureError, match=r"timestampNanos.*nanosecond-timestamps\.md") as info:
        _read(spark, table)
    assert info.value.feature == "timestampNanos"
    assert_same_rows(_read(spark, table, columns=["id"]), table.snapshot().to_arrow(columns=["id"]), "other columns")


DAY_SECOND = ["INTERVAL '7 12:34:56.123456' DAY TO SECOND", "INTERVAL '-0 00:00:00.000001' DAY TO SECOND"]


@pytest.mark.parametrize("strategy", ["literal", "broadcast"])
def test_intervals_read_on_spark_as_ansi_intervals(spark, tmp_path, monkeypatch, strategy):
    """Interval columns (data and partition, both families, narrowed spellings, nulls) read on
    Spark as YearMonthIntervalType / DayTimeIntervalType with the local reader's values, whichever
    way the partition values are attached."""
    from pyspark.sql import types as T

    from deltaexplore.spark import file_values, read

    monkeypatch.setattr(file_values, "STRATEGY", strategy)
    f = in_flight._field
    fields = [
        f("id", "long"),
        f("ym", "interval month"),
        f("ds", "interval hour to second"),
        f("p", "interval day to second"),
        f("q", "interval year"),
    ]
    files = []
    for k, (p, q) in enumerate(
        [(DAY_SECOND[0], "INTERVAL '1-6' YEAR TO MONTH"), (DAY_SECOND[1], "INTERVAL '-2-0' YEAR TO MONTH")]
    ):
        data = pa.table(
            {
                "id": pa.array([2 * k, 2 * k + 1], pa.int64()),
                "ym": pa.array([18 - 40 * k, None], pa.int32()),
                "ds": pa.array([131_076_000_022 * (1 - 2 * k), -1], pa.int64()),
            }
        )
        files.append((data, {"p": p, "q": q}))
    files.append(
        (
            pa.table({"id": pa.array([9], pa.int64()), "ym": pa.array([0], pa.int32()), "ds": pa.array([0], pa.int64())}),
            {"p": None, "q": None},
        )
    )
    table = in_flight._table(tmp_path / "iv", fields, protocol(1, 2), files, parts=["p", "q"])
    local = table.snapshot().to_arrow().sort_by("id")
    df = read(spark, table)
    types = {fld.name: fld.dataType for fld in df.schema.fields}
    assert types["ym"] == types["q"] == T.YearMonthIntervalType(0, 1)
    assert types["ds"] == types["p"] == T.DayTimeIntervalType(0, 3)
    # PySpark cannot hand year-month intervals to Python: compared as months; day-time ones as they are
    months = df.selectExpr(
        "id", "CAST(CAST(ym AS INTERVAL MONTH) AS INT) AS ym", "ds", "p", "CAST(CAST(q AS INTERVAL MONTH) AS INT) AS q"
    )
    got = months.toArrow().sort_by("id")
    for name in ("ym", "q"):
        assert got.column(name).to_pylist() == [None if v is None else v.months for v in local.column(name).to_pylist()], name
        assert any(v is not None for v in got.column(name).to_pylist())
    for name in ("ds", "p"):
        assert got.column(name).cast(pa.int64()).to_pylist() == local.column(name).cast(pa.int64()).to_pylist(), name
    assert got.column("p").cast(pa.int64()).to_pylist()[:4] == [650_096_123_456] * 2 + [-1] * 2
    # Spark SQL over the columns agrees with the values, and a read's filter on them too
    assert df.where("ym > INTERVAL '1' YEAR").select("id").toArrow().column("id").to_pylist() == [0]
    filtered = read(spark, table, where="p IS NULL").select("id").toArrow()
    assert filtered.column("id").to_pylist() == table.snapshot().to_arrow(where="p IS NULL").column("id").to_pylist() == [9]
