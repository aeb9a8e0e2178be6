"""The protocol of every version: a feature added then dropped with `checkpointProtection`.

The table (built with the project's writer, then by editing the log as Delta's DROP FEATURE
does): v0 a plain append; v1 adds the reader feature `adaptiveMetadata` (protocol_rfcs/
iceberg-v4-metadata.md, which this reader refuses); v2 drops it (the protocol goes down, writer
feature `checkpointProtection`, `delta.requireCheckpointProtectionBeforeVersion = 2`) with a
checkpoint at 2 that hides v1 from later readers; v3 appends. Each version is read, or refused,
by its own protocol, by version and by timestamp; `inspect.features(all_versions=True)` and
`inspect.diff` show the protocol of every version.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers import add, commit_info, write_commit, write_data

import deltaexplore as dx
from deltaexplore.core.operations import checkpoint, write_table

T0 = 1_700_000_000_000
HOUR = 3_600_000
BASE_WRITERS = ["appendOnly", "invariants"]


def _meta_of(root: Path) -> dict:
    lines = (root / "_delta_log" / f"{0:020d}.json").read_text().splitlines()
    return next(json.loads(line) for line in lines if line.startswith('{"metaData"'))


def _protocol(reader: int, writer: int, readers: list[str] | None, writers: list[str]) -> dict:
    p: dict = {"minReaderVersion": reader, "minWriterVersion": writer, "writerFeatures": writers}
    if readers is not None:
        p["readerFeatures"] = readers
    return {"protocol": p}


def build(root: Path) -> Path:
    write_table(str(root), pa.table({"id": pa.array([0], pa.int64())}))
    meta = _meta_of(root)
    write_commit(
        root,
        1,
        [
            commit_info("ALTER TABLE ADD FEATURE", ts=T0 + HOUR),
            _protocol(3, 7, ["adaptiveMetadata"], [*BASE_WRITERS, "adaptiveMetadata"]),
        ],
    )
    dropped = json.loads(json.dumps(meta))
    dropped["metaData"]["configuration"]["delta.requireCheckpointProtectionBeforeVersion"] = "2"
    write_commit(root, 2, [commit_info("DROP FEATURE", ts=T0 + 2 * HOUR), _protocol(1, 7, None, BASE_WRITERS), dropped])
    checkpoint(str(root), version=2)  # written before the protocol names checkpointProtection (our writer refuses it)
    protected = _protocol(1, 7, None, [*BASE_WRITERS, "checkpointProtection"])
    commit2 = root / "_delta_log" / f"{2:020d}.json"
    commit2.write_text(commit2.read_text().replace(json.dumps(_protocol(1, 7, None, BASE_WRITERS)), json.dumps(protected)))
    [ck] = (root / "_delta_log").glob(f"{2:020d}.checkpoint.parquet")
    t = pq.read_table(ck)
    rows = t.column("protocol").to_pylist()
    rows = [None if r is None else {**r, "writerFeatures": [*BASE_WRITERS, "checkpointProtection"]} for r in rows]
    t = t.set_column(t.schema.get_field_index("protocol"), "protocol", pa.array(rows, t.schema.field("protocol").type))
    pq.write_table(t, ck)
    (root / "_delta_log" / "_last_checkpoint").unlink()
    name, size = write_data(root, "part-v3.parquet", pa.table({"id": pa.array([3], pa.int64())}))
    write_commit(root, 3, [commit_info("WRITE", ts=T0 + 3 * HOUR), add(name, size, 1)])
    for v in range(4):  # commit times one hour apart (no in-commit timestamps: file times)
        ms = T0 + v * HOUR
        os.utime(root / "_delta_log" / f"{v:020d}.json", ns=(ms * 1_000_000, ms * 1_000_000))
    return root


@pytest.fixture
def table(tmp_path) -> dx.Table:
    return dx.open_table(str(build(tmp_path / "t")))


def test_each_version_is_read_by_its_own_protocol(table):
    assert table.snapshot(0).to_arrow().column("id").to_pylist() == [0]
    with pytest.raises(dx.UnsupportedFeatureError, match=r"adaptiveMetadata.*iceberg-v4-metadata\.md") as info:
        table.snapshot(1)
    assert info.value.feature == "adaptiveMetadata" and info.value.needed_by == "readers"
    assert table.snapshot(2).protocol.writer_features == (*BASE_WRITERS, "checkpointProtection")
    latest = table.snapshot()
    assert latest.checkpoint_version == 2  # v1's commit is hidden behind the protected checkpoint
    assert sorted(latest.to_arrow().column("id").to_pylist()) == [0, 3]


def test_time_travel_by_timestamp_checks_the_target_version(table):
    assert table.snapshot(timestamp=T0 + 30 * 60_000).version == 0
    with pytest.raises(dx.UnsupportedFeatureError, match="adaptiveMetadata"):
        table.snapshot(timestamp=T0 + HOUR + 60_000)
    assert table.snapshot(timestamp=T0 + 2 * HOUR + 60_000).version == 2
    # lenient: a version this reader refuses still has its protocol, files and history
    snap = table.snapshot(1, strict=False)
    assert isinstance(snap.problem, dx.UnsupportedFeatureError) and snap.num_files == 1
    with pytest.raises(dx.UnsupportedFeatureError):
        snap.to_arrow()


def test_features_of_every_version(table):
    rows = table.inspect.features(all_versions=True).to_pylist()
    assert [r["version"] for r in rows] == [0, 1, 2, 3]
    assert [r["change"] for r in rows] == ["created", "upgraded", "downgraded", None]
    assert [r["readable"] for r in rows] == [True, False, True, True]
    assert rows[1]["added"] == ["adaptiveMetadata"] and rows[1]["blockers"] == ["adaptiveMetadata"]
    assert "adaptiveMetadata" in rows[2]["removed"] and "checkpointProtection" in rows[2]["added"]
    assert (rows[1]["min_reader_version"], rows[2]["min_reader_version"]) == (3, 1)
    assert rows[3]["writer_features"] == rows[2]["writer_features"]
    assert [int(r["timestamp"].timestamp() * 1000) for r in rows] == [T0 + v * HOUR for v in range(4)]
    # the feature list of the unreadable version says what this reader does with each feature
    feats = {r["feature"]: r for r in table.inspect.features(version=1).to_pylist()}
    assert feats["adaptiveMetadata"]["deltaexplore_read"] is False
    assert feats["adaptiveMetadata"]["rfc"].startswith("delta-io/delta protocol_rfcs/iceberg-v4-metadata.md")
    assert feats["adaptiveMetadata"]["handling"].startswith("refused")
    latest = {r["feature"]: r for r in table.inspect.features().to_pylist()}
    assert latest["checkpointProtection"]["handling"].startswith("read; writes refused")


def test_diff_shows_the_protocol_going_up_and_down(table):
    d = table.inspect.diff(0, 3).to_pylist()
    between = [r for r in d if r["change"] == "changed_between"]
    assert [r["name"] for r in between] == ["version 1", "version 2"]
    assert "+adaptiveMetadata" in between[0]["detail"] and "does not read version 1" in between[0]["detail"]
    assert "-adaptiveMetadata" in between[1]["detail"] and "+checkpointProtection" in between[1]["detail"]
    features = {(r["change"], r["name"]) for r in d if r["section"] == "features"}
    assert ("added", "checkpointProtection") in features
    # a diff with the version this reader refuses is still a metadata diff
    d1 = {(r["section"], r["change"], r["name"]) for r in table.inspect.diff(0, 1).to_pylist()}
    assert ("features", "added", "adaptiveMetadata") in d1 and ("protocol", "changed", "minReaderVersion") in d1
