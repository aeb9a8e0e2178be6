"""Features of delta-io/delta's protocol_rfcs/ still in flight (2025-2026), in tables a newer
client may write: each is read where its encoding is settled, or refused naming the feature and
its RFC, and `inspect.features` says what this reader does with every feature a table declares.

Fixtures are hand-written logs with parquet files written by pyarrow, as the RFCs describe.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from helpers import add, commit_info, metadata, protocol, write_commit, write_data

import deltaexplore as dx
from deltaexplore.core.operations import write_table


def _field(name: str, type_: object, **meta: object) -> dict:
    return {"name": name, "type": type_, "nullable": True, "metadata": dict(meta)}


def _table(root: Path, fields: list[dict], proto: dict, files: list[tuple[pa.Table, dict]], parts: list[str] | None = None):
    actions = [commit_info("CREATE TABLE"), proto, metadata({"type": "struct", "fields": fields}, partition_columns=parts)]
    for i, (data, pv) in enumerate(files):
        name, size = write_data(root, f"part-{i}.parquet", data)
        actions.append(add(name, size, data.num_rows, pv=pv))
    write_commit(root, 0, actions)
    return dx.open_table(str(root))


def test_nanosecond_timestamps_read_as_arrow_nanoseconds(tmp_path):
    features = ["timestampNtz", "timestampNanos"]
    utc = pa.array([1_730_982_834_123_456_789, None], pa.timestamp("ns", tz="UTC"))
    local = pa.array([-383_657_165_876_543_211, 1], pa.timestamp("ns"))
    table = _table(
        tmp_path,
        [
            _field("id", "long"),
            _field("ts", "timestamp_nanos"),
            _field("ntz", "timestamp_ntz_nanos"),
            _field("p", "timestamp_nanos"),
        ],
        protocol(3, 7, features, features),
        [(pa.table({"id": pa.array([1, 2], pa.int64()), "ts": utc, "ntz": local}), {"p": "1970-01-01T00:00:00.123456789Z"})],
        parts=["p"],
    )
    rows = table.snapshot().to_arrow().sort_by("id")
    assert rows.schema.field("ts").type == pa.timestamp("ns", tz="UTC")
    assert rows.schema.field("ntz").type == pa.timestamp("ns")
    assert rows.column("ts").cast(pa.int64()).to_pylist() == [1_730_982_834_123_456_789, None]
    assert rows.column("ntz").cast(pa.int64()).to_pylist() == [-383_657_165_876_543_211, 1]
    assert rows.column("p").cast(pa.int64()).to_pylist() == [123_456_789, 123_456_789]
    picked = table.snapshot().to_arrow(where="ts > '2024-11-07T12:33:54.123456Z'")
    assert picked.column("id").to_pylist() == [1]
    feats = {r["feature"]: r for r in table.inspect.features().to_pylist()}
    assert feats["timestampNanos"]["deltaexplore_read"] is True
    assert "nanosecond-timestamps.md" in feats["timestampNanos"]["rfc"]
    assert "timestamp[ns]" in feats["timestampNanos"]["handling"]


def test_interval_columns_read_and_never_skipped_on(tmp_path):
    fields = [
        _field("id", "long"),
        _field("ym", "interval month"),  # a narrowed spelling of interval year to month
        _field("ds", "interval hour to second"),  # of interval day to second
        _field("p", "interval day to second"),
    ]
    data = pa.table(
        {
            "id": pa.array([1, 2], pa.int64()),
            "ym": pa.array([18, -1], pa.int32()),
            "ds": pa.array([131_076_000_022, None], pa.int64()),
        }
    )
    table = _table(tmp_path, fields, protocol(1, 2), [(data, {"p": "INTERVAL '7 12:34:56.123456' DAY TO SECOND"})], parts=["p"])
    snap = table.snapshot()
    assert [str(f.type) for f in snap.schema.fields] == ["long", "interval year to month", "interval day to second"] * 1 + [
        "interval day to second"
    ]
    rows = snap.to_arrow().sort_by("id").to_pylist()
    assert rows[0]["ym"].months == 18 and rows[1]["ym"].months == -1
    assert rows[0]["ds"] == pa.scalar(131_076_000_022, pa.duration("us")).as_py() and rows[1]["ds"] is None
    assert rows[0]["p"] == pa.scalar(((7 * 24 + 12) * 60 + 34) * 60_000_000 + 56_123_456, pa.duration("us")).as_py()
    # the partition column is never pruned on: every file is read and the rows are filtered
    assert snap.scan(where="p IS NULL").partition_pruned == 0 and snap.to_arrow(where="p IS NULL").num_rows == 0
    explained = table.inspect.explain("p IS NULL").to_pylist()
    assert explained[0]["selected"] and "p: interval column" in explained[0]["ignored_stats"]


@pytest.mark.parametrize("spelling", ["interval month to second", "interval second to day", "INTERVAL Year To Month"])
def test_interval_spellings_the_rfc_forbids(tmp_path, spelling):
    table = _table(tmp_path, [_field("x", spelling)], protocol(1, 2), [])
    with pytest.raises(dx.DeltaProtocolError, match=r"interval-types\.md"):
        _ = table.snapshot().schema


def test_bad_interval_partition_value(tmp_path):
    table = _table(
        tmp_path,
        [_field("id", "long"), _field("p", "interval year to month")],
        protocol(1, 2),
        [(pa.table({"id": pa.array([1], pa.int64())}), {"p": "18 months"})],
        parts=["p"],
    )
    with pytest.raises(dx.InvalidLogError, match="not an interval year to month literal"):
        table.snapshot().to_arrow()


def test_materialized_partition_columns_read_from_the_log(corpus_table):
    """materializePartitionColumns: partition values come from the add actions, as the RFC asks
    (the corpus table, written by delta-kernel-rs)."""
    table = dx.open_table(corpus_table("delta-kernel-rs/partitioned_with_materialize_feature"))
    snap = table.snapshot()
    feats = {r["feature"]: r for r in table.inspect.features().to_pylist()}
    assert feats["materializePartitionColumns"]["handling"].startswith("read; writes refused")
    rows = snap.to_arrow()
    assert rows.num_rows > 0
    for name in snap.partition_columns:
        assert rows.column(name).null_count < rows.num_rows
    with pytest.raises(dx.UnsupportedFeatureError, match=r"materializePartitionColumns.*materialize-partition-columns\.md"):
        write_table(table, rows.slice(0, 1))


@pytest.mark.parametrize(
    ("feature", "rfc"),
    [
        ("icebergCompatV3", "iceberg-compat-v3.md"),
        ("columnMappingUsageTracking", "column-mapping-usage-tracking.md"),
        ("icebergWriterCompatV1", "iceberg-writer-compat-v1.md"),
        ("checkpointProtection", "checkpoint-protection.md"),
    ],
)
def test_writer_features_in_flight_read_and_refuse_writes(tmp_path, feature, rfc):
    data = pa.table({"id": pa.array([1, 2], pa.int64())})
    table = _table(tmp_path, [_field("id", "long")], protocol(1, 7, None, ["appendOnly", feature]), [(data, {})])
    assert table.snapshot().to_arrow().column("id").to_pylist() == [1, 2]
    feats = {r["feature"]: r for r in table.inspect.features().to_pylist()}
    assert feats[feature]["kind"] == "writer" and rfc in feats[feature]["rfc"]
    with pytest.raises(dx.UnsupportedFeatureError, match=rf"{feature}.*{rfc}") as info:
        write_table(table, data)
    assert info.value.feature == feature and info.value.needed_by == "writers"


def test_a_reader_feature_in_flight_is_refused_but_described(tmp_path):
    feats = ["adaptiveMetadata"]
    data = pa.table({"id": pa.array([1], pa.int64())})
    table = _table(tmp_path, [_field("id", "long")], protocol(3, 7, feats, feats), [(data, {})])
    with pytest.raises(
        dx.UnsupportedFeatureError, match=r"'adaptiveMetadata' \(delta-io/delta protocol_rfcs/iceberg-v4-metadata.md"
    ):
        table.snapshot()
    rows = {r["feature"]: r for r in table.inspect.features().to_pylist()}
    assert rows["adaptiveMetadata"]["kind"] == "reader-writer" and not rows["adaptiveMetadata"]["deltaexplore_read"]
    assert table.history().num_rows == 1  # the log is still there to read
    snap = table.snapshot(strict=False)
    assert snap.files().num_rows == 1 and snap.schema.names == ["id"]


def test_every_declared_feature_has_a_handling(corpus):
    """Every feature any corpus table declares says what this reader does with it; the only
    unknown ones are delta-rs test logs' names (a made-up one, and catalogOwned, an early name of
    catalogManaged), which are refused."""
    from corpus_paths import corpus_catalog

    from deltaexplore.core.protocol.features import FEATURES, handling

    declared = set()
    for t in corpus_catalog():
        ever = t.get("features_ever") or {}
        declared |= set(ever.get("reader") or ()) | set(ever.get("writer") or ())
    unknown = sorted(f for f in declared if f not in FEATURES)
    assert set(unknown) <= {"fakeFeature", "catalogOwned"}, unknown
    assert handling(None).startswith("refused")
    for name in declared & set(FEATURES):
        assert handling(FEATURES[name])
    assert all(handling(info) for info in FEATURES.values())
    assert json.dumps([handling(None)])
