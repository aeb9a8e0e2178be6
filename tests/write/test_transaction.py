"""Transactions: commit files, commitInfo, protocol rules, row tracking, in-commit timestamps,
app transactions, domain metadata, catalog-managed commits."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import pyarrow as pa
import pytest
from helpers import add, commit_info, metadata, protocol, write_commit
from write_helpers import rows, sample

import deltaexplore as dx
from deltaexplore.core.operations import new_table_metadata, set_table_properties, write_table
from deltaexplore.core.protocol.actions import Metadata, Protocol
from deltaexplore.core.write.data_writer import write_table_files
from deltaexplore.core.write.transaction import Transaction


def _log(root, version: int) -> list[dict]:
    text = (Path(root) / "_delta_log" / f"{version:020d}.json").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _create(root, data=None, **kw) -> Transaction:
    data = data if data is not None else sample()
    md = new_table_metadata(data.schema, **kw)
    t = dx.open_table(str(root))
    txn = Transaction(t, operation="CREATE TABLE")
    txn.update_metadata(md)
    proto = txn.upgrade_protocol_for(md)
    txn.add_files(write_table_files(t.storage, data, proto, md))
    txn.commit()
    return txn


def test_create_and_append_commit_info(tmp_path):
    root = tmp_path / "t"
    _create(root)
    t = dx.open_table(str(root))
    txn = Transaction(t, operation="WRITE", parameters={"mode": "Append"})
    snap = t.snapshot()
    txn.add_files(write_table_files(t.storage, sample(5, 10), snap.protocol, snap.metadata))
    result = txn.commit()
    assert result.version == 1 and result.attempts == 1 and result.read_version == 0
    actions = _log(root, 1)
    info = actions[0]["commitInfo"]  # commitInfo is the first action
    assert info["operation"] == "WRITE" and info["readVersion"] == 0
    assert info["isolationLevel"] == "Serializable" and info["isBlindAppend"] is True
    assert info["engineInfo"].startswith("deltaexplore/")
    assert uuid.UUID(info["txnId"])
    assert info["operationMetrics"]["numOutputRows"] == "5"
    assert rows(t.snapshot().to_arrow(), "id") == [(i,) for i in range(15)]
    assert result.checksum_written
    assert all(t.snapshot().validate_crc().column("ok").to_pylist())


def test_commit_never_overwrites_and_rebases(tmp_path):
    root = tmp_path / "t"
    _create(root)
    t = dx.open_table(str(root))
    txn = Transaction(t, operation="WRITE")
    snap = txn.read_snapshot
    txn.add_files(write_table_files(t.storage, sample(3, 100), snap.protocol, snap.metadata))
    # Another writer takes version 1 first (a blind append).
    other = Transaction(dx.open_table(str(root)), operation="WRITE")
    other.add_files(write_table_files(t.storage, sample(2, 200), snap.protocol, snap.metadata))
    assert other.commit().version == 1
    first = (Path(root) / "_delta_log" / f"{1:020d}.json").read_bytes()
    result = txn.commit()
    assert result.version == 2 and result.attempts == 2 and result.rebased_over == (1,)
    assert (Path(root) / "_delta_log" / f"{1:020d}.json").read_bytes() == first  # never overwritten
    assert rows(t.snapshot().to_arrow(), "id") == sorted([(i,) for i in range(10)] + [(100,), (101,), (102,), (200,), (201,)])


def test_commit_twice_refused(tmp_path):
    txn = _create(tmp_path / "t")
    with pytest.raises(dx.WriteRefusedError, match="already been committed"):
        txn.commit()


def test_remove_files_carry_extended_metadata(tmp_path):
    root = tmp_path / "t"
    _create(root, partition_by=["part"])
    t = dx.open_table(str(root))
    adds = t.snapshot().add_actions()
    txn = Transaction(t, operation="DELETE")
    removes = txn.remove_files([adds.column("path")[0].as_py()])
    txn.commit()
    rm = next(a["remove"] for a in _log(root, 1) if "remove" in a)
    assert rm["path"] == adds.column("path")[0].as_py()
    assert rm["extendedFileMetadata"] is True and rm["dataChange"] is True
    assert rm["size"] == adds.column("size")[0].as_py()
    assert rm["partitionValues"] == dict(adds.column("partitionValues")[0].as_py())
    assert json.loads(rm["stats"])["numRecords"] == 5
    assert rm["deletionTimestamp"] > 0
    assert removes.num_rows == 1
    with pytest.raises(dx.WriteRefusedError, match="not an active file"):
        Transaction(t, operation="DELETE").remove_files(["nope.parquet"])


def test_unknown_writer_feature_refused_table_unchanged(tmp_path):
    root = tmp_path / "t"
    write_commit(root, 0, [commit_info(), protocol(1, 7, writers=["someFutureFeature"]), metadata()])
    t = dx.open_table(str(root))
    txn = Transaction(t, operation="WRITE")
    txn.add_files([add("x.parquet", 10, 1)["add"]])
    with pytest.raises(dx.UnsupportedFeatureError, match="someFutureFeature") as err:
        txn.commit()
    assert err.value.needed_by == "writers"
    assert t.latest_version() == 0


@pytest.mark.parametrize("feature", ["icebergCompatV2", "clustering", "allowColumnDefaults"])
def test_unimplemented_writer_features_refused(tmp_path, feature):
    root = tmp_path / "t"
    write_commit(root, 0, [commit_info(), protocol(1, 7, writers=[feature]), metadata()])
    with pytest.raises(dx.UnsupportedFeatureError, match=feature):
        Transaction(dx.open_table(str(root)), operation="WRITE").commit()


def test_append_only_refuses_removes(tmp_path):
    root = tmp_path / "t"
    _create(root, configuration={"delta.appendOnly": "true"})
    t = dx.open_table(str(root))
    assert "appendOnly" in t.snapshot().protocol.writer_feature_set
    txn = Transaction(t, operation="DELETE")
    txn.remove_files(t.snapshot().add_actions())
    with pytest.raises(dx.WriteRefusedError, match="append-only"):
        txn.commit()
    assert t.latest_version() == 0
    # rearranging data (dataChange=false) is allowed
    txn = Transaction(t, operation="OPTIMIZE")
    adds = t.snapshot().add_actions()
    txn.remove_files(adds, data_change=False)
    txn.add_files(
        adds.set_column(adds.column_names.index("dataChange"), "dataChange", pa.array([False] * adds.num_rows)).slice(0, 0)
    )
    txn.commit()


def test_protocol_downgrade_and_feature_removal_refused(tmp_path):
    root = tmp_path / "t"
    _create(root, configuration={"delta.enableDeletionVectors": "true"})
    t = dx.open_table(str(root))
    txn = Transaction(t, operation="SET TBLPROPERTIES")
    txn.update_protocol(Protocol(1, 2))
    with pytest.raises(dx.WriteRefusedError, match="downgrade"):
        txn.commit()
    txn = Transaction(t, operation="SET TBLPROPERTIES")
    txn.update_protocol(Protocol(3, 7, (), ()))
    with pytest.raises(dx.WriteRefusedError, match="drop table features"):
        txn.commit()


def test_property_needs_feature(tmp_path):
    root = tmp_path / "t"
    _create(root)
    t = dx.open_table(str(root))
    md = t.snapshot().metadata
    txn = Transaction(t, operation="SET TBLPROPERTIES")
    txn.update_metadata(Metadata(md.id, md.schema_string, md.partition_columns, {"delta.enableDeletionVectors": "true"}))
    with pytest.raises(dx.WriteRefusedError, match="deletionVectors"):
        txn.commit()
    set_table_properties(str(root), {"delta.enableDeletionVectors": "true"})
    snap = dx.open_table(str(root)).snapshot()
    assert snap.config.deletion_vectors_enabled and snap.protocol.min_reader_version == 3


def test_feature_property_adds_the_feature(tmp_path):
    """`delta.feature.<name> = supported` turns the feature on (Delta's way for features without
    a property of their own); an unknown feature or another value is refused, nothing written."""
    data = pa.table({"id": pa.array([1, 2], pa.int64())})
    write_table(str(tmp_path / "a"), data, configuration={"delta.feature.deletionVectors": "supported"})
    proto = dx.open_table(str(tmp_path / "a")).snapshot().protocol
    assert "deletionVectors" in (proto.reader_features or ()) and "deletionVectors" in (proto.writer_features or ())
    write_table(str(tmp_path / "b"), data, configuration={"delta.feature.appendOnly": "enabled"})
    assert dx.open_table(str(tmp_path / "b")).snapshot().protocol.writer_features == ("appendOnly",)
    with pytest.raises(dx.UnsupportedFeatureError) as info:
        write_table(str(tmp_path / "c"), data, configuration={"delta.feature.noSuchFeature": "supported"})
    assert info.value.feature == "noSuchFeature"
    with pytest.raises(dx.WriteRefusedError, match="supported"):
        write_table(str(tmp_path / "d"), data, configuration={"delta.feature.deletionVectors": "true"})
    for name in "cd":
        log = tmp_path / name / "_delta_log"
        assert not log.exists() or not any(log.iterdir())


def test_new_table_needs_metadata(tmp_path):
    with pytest.raises(dx.WriteRefusedError, match="update_metadata"):
        Transaction(dx.open_table(str(tmp_path / "t")), operation="WRITE").commit()
    assert not (tmp_path / "t" / "_delta_log").exists() or not list((tmp_path / "t" / "_delta_log").glob("*.json"))


def test_partition_values_required(tmp_path):
    root = tmp_path / "t"
    _create(root, partition_by=["part"])
    t = dx.open_table(str(root))
    txn = Transaction(t, operation="WRITE")
    txn.add_files([add("x.parquet", 10, 1)["add"]])
    with pytest.raises(dx.WriteRefusedError, match="partition"):
        txn.commit()
    txn = Transaction(t, operation="WRITE")
    txn.add_files([add("x.parquet", 10, 1)["add"], add("x.parquet", 10, 1)["add"]])
    with pytest.raises(dx.WriteRefusedError, match="at most one add"):
        txn.commit()


def test_app_transactions_idempotent_and_conflicting(tmp_path):
    root = tmp_path / "t"
    write_table(str(root), sample(), app_id="stream-1", app_version=1)
    m = write_table(str(root), sample(), app_id="stream-1", app_version=1)
    assert m.column("skipped")[0].as_py() is True
    t = dx.open_table(str(root))
    assert t.snapshot().transaction_version("stream-1") == 1
    assert t.snapshot().num_files == 1
    # two writers recording the same app id: the second conflicts
    a = Transaction(t, operation="WRITE")
    b = Transaction(t, operation="WRITE")
    a.set_app_transaction("stream-1", 2)
    b.set_app_transaction("stream-1", 2)
    a.commit()
    with pytest.raises(dx.CommitConflictError, match="stream-1"):
        b.commit()


def test_domain_metadata_rules(tmp_path):
    root = tmp_path / "t"
    _create(root)
    t = dx.open_table(str(root))
    txn = Transaction(t, operation="SET DOMAIN")
    with pytest.raises(dx.WriteRefusedError, match="system-controlled"):
        txn.set_domain_metadata("delta.rowTracking", {"rowIdHighWaterMark": 5})
    txn.set_domain_metadata("com.example.app", {"k": "v"})
    with pytest.raises(dx.WriteRefusedError, match="domainMetadata"):
        txn.commit()  # the protocol lacks the feature
    txn = Transaction(t, operation="SET DOMAIN")
    txn.upgrade_protocol_for(t.snapshot().metadata, extra=("domainMetadata",))
    txn.set_domain_metadata("com.example.app", {"k": "v"})
    txn.commit()
    assert dx.open_table(str(root)).snapshot().domain_metadata()["com.example.app"].config == {"k": "v"}
    txn = Transaction(t, operation="SET DOMAIN")
    txn.set_domain_metadata("com.example.app", "", removed=True)
    txn.commit()
    assert "com.example.app" not in dx.open_table(str(root)).snapshot().domain_metadata()


def test_row_tracking_ids_and_high_water_mark(tmp_path):
    root = tmp_path / "t"
    write_table(str(root), sample(4), configuration={"delta.enableRowTracking": "true"})
    write_table(str(root), sample(3, 10))
    snap = dx.open_table(str(root)).snapshot()
    adds = snap.add_actions().sort_by("baseRowId")
    assert adds.column("baseRowId").to_pylist() == [0, 4]
    assert adds.column("defaultRowCommitVersion").to_pylist() == [0, 1]
    assert snap.row_id_high_water_mark == 6
    ids = snap.to_arrow(row_tracking=True).column("_row_id").to_pylist()
    assert sorted(ids) == list(range(7))


def test_row_tracking_rebase_reassigns_ids(tmp_path):
    root = tmp_path / "t"
    write_table(str(root), sample(4), configuration={"delta.enableRowTracking": "true"})
    t = dx.open_table(str(root))
    snap = t.snapshot()
    slow = Transaction(t, operation="WRITE", read_snapshot=snap)
    slow.add_files(write_table_files(t.storage, sample(2, 50), snap.protocol, snap.metadata))
    write_table(str(root), sample(5, 20))  # takes version 1 with ids 4..8
    result = slow.commit()
    assert result.version == 2 and result.attempts == 2
    latest = dx.open_table(str(root)).snapshot()
    ids = latest.to_arrow(row_tracking=True).column("_row_id").to_pylist()
    assert sorted(ids) == list(range(11))  # no duplicates after the rebase
    versions = {r["id"]: r["_row_commit_version"] for r in latest.to_arrow(row_tracking=True).to_pylist()}
    assert versions[50] == 2 and versions[20] == 1 and versions[0] == 0


def test_in_commit_timestamps_increase_and_enablement(tmp_path):
    root = tmp_path / "t"
    write_table(str(root), sample(2))
    set_table_properties(str(root), {"delta.enableInCommitTimestamps": "true"})
    for i in range(3):
        write_table(str(root), sample(1, 100 + i))
    t = dx.open_table(str(root))
    snap = t.snapshot()
    conf = snap.metadata.configuration
    assert conf["delta.inCommitTimestampEnablementVersion"] == "1"
    assert int(conf["delta.inCommitTimestampEnablementTimestamp"]) == _log(root, 1)[0]["commitInfo"]["inCommitTimestamp"]
    icts = [_log(root, v)[0]["commitInfo"]["inCommitTimestamp"] for v in range(1, 5)]
    assert icts == sorted(icts) and len(set(icts)) == 4  # strictly increasing
    assert "inCommitTimestamp" not in _log(root, 0)[0]["commitInfo"]
    assert snap.timestamp_ms == icts[-1]
    assert t.snapshot(timestamp=icts[1]).version == 2


def test_ict_strictly_after_previous_even_if_clock_is_behind(tmp_path):
    root = tmp_path / "t"
    write_table(str(root), sample(2), configuration={"delta.enableInCommitTimestamps": "true"})
    far_future = _log(root, 0)[0]["commitInfo"]["inCommitTimestamp"] + 10**9
    write_commit(root, 1, [{"commitInfo": {"inCommitTimestamp": far_future, "timestamp": far_future}}])
    write_table(str(root), sample(1, 5))
    assert _log(root, 2)[0]["commitInfo"]["inCommitTimestamp"] == far_future + 1


def test_catalog_managed_commits_go_through_catalog(tmp_path):
    root = tmp_path / "t"
    catalog = dx.FileCatalog(tmp_path / "catalog.json")
    catalog.register(str(root), latest_version=-1)
    data = sample(4)
    md = new_table_metadata(data.schema, configuration={"delta.enableInCommitTimestamps": "true"})
    t = dx.open_table(str(root), catalog=catalog)
    txn = Transaction(t, operation="CREATE TABLE")
    txn.update_metadata(md)
    txn.update_protocol(Protocol(3, 7, ("catalogManaged",), ("catalogManaged", "inCommitTimestamp")))
    txn.add_files(write_table_files(t.storage, data, txn.protocol, md))
    result = txn.commit()
    assert result.version == 0
    staged = list((root / "_delta_log" / "_staged_commits").glob("*.json"))
    assert len(staged) == 1
    assert (root / "_delta_log" / f"{0:020d}.json").read_bytes() == staged[0].read_bytes()  # published
    assert catalog.get_ratified_commits(str(root)).commits == ()  # forgotten once published
    info = _log(root, 0)[0]["commitInfo"]
    assert "txnId" in info and "inCommitTimestamp" in info
    write_table(t, sample(2, 10))
    assert rows(dx.open_table(str(root), catalog=catalog).snapshot().to_arrow(), "id") == [(i,) for i in [0, 1, 2, 3, 10, 11]]
    # filesystem commits (no catalog) are refused
    with pytest.warns(dx.CatalogManagedWarning):
        by_path = dx.open_table(str(root))
        with pytest.raises(dx.WriteRefusedError, match="catalog"):
            write_table(by_path, sample(1, 99))
    assert dx.open_table(str(root), catalog=catalog).latest_version() == 1


def test_catalog_managed_lost_race_retries(tmp_path):
    root = tmp_path / "t"
    catalog = dx.FileCatalog(tmp_path / "catalog.json")
    catalog.register(str(root), latest_version=-1)
    md = new_table_metadata(sample().schema, configuration={"delta.enableInCommitTimestamps": "true"})
    t = dx.open_table(str(root), catalog=catalog)
    txn = Transaction(t, operation="CREATE TABLE")
    txn.update_metadata(md)
    txn.update_protocol(Protocol(3, 7, ("catalogManaged",), ("catalogManaged", "inCommitTimestamp")))
    txn.commit()
    a = Transaction(t, operation="WRITE")
    b = Transaction(t, operation="WRITE")
    snap = a.read_snapshot
    a.add_files(write_table_files(t.storage, sample(2), snap.protocol, snap.metadata))
    b.add_files(write_table_files(t.storage, sample(3, 10), snap.protocol, snap.metadata))
    assert a.commit().version == 1
    r = b.commit()
    assert r.version == 2 and r.attempts == 2
    assert sorted(n for n in os.listdir(root / "_delta_log") if n.endswith(".json")) == [f"{v:020d}.json" for v in range(3)]


def test_add_and_remove_of_the_same_logical_file_refused(tmp_path):
    root = tmp_path / "t"
    _create(root)
    t = dx.open_table(str(root))
    adds = t.snapshot().add_actions()
    txn = Transaction(t, operation="WRITE")
    txn.remove_files(adds)
    txn.add_files(adds)
    with pytest.raises(dx.WriteRefusedError, match="same logical file"):
        txn.commit()


def _preview_type_widening_table(path) -> str:
    """A table whose protocol names `typeWidening-preview` (as Delta 3.x wrote it)."""
    from deltaexplore.core.operations import write_table

    uri = str(path)
    write_table(uri, pa.table({"id": pa.array([1, 2], pa.int32())}), configuration={"delta.enableTypeWidening": "true"})
    first = path / "_delta_log" / f"{0:020d}.json"
    first.write_text(first.read_text().replace('"typeWidening"', '"typeWidening-preview"'))
    return uri


def test_append_keeps_the_preview_type_widening_feature(tmp_path):
    """No silent upgrade to the stable name, which would lock out readers knowing only the preview."""
    from deltaexplore.core.operations import write_table

    uri = _preview_type_widening_table(tmp_path / "t")
    before = dx.open_table(uri).snapshot().protocol
    assert "typeWidening-preview" in before.writer_feature_set and "typeWidening" not in before.writer_feature_set
    write_table(uri, pa.table({"id": pa.array([3], pa.int32())}), mode="append")
    snap = dx.open_table(uri).snapshot()
    assert snap.version == 1 and snap.protocol == before
    assert '"protocol"' not in (tmp_path / "t" / "_delta_log" / f"{1:020d}.json").read_text()
    assert sorted(snap.to_arrow().column("id").to_pylist()) == [1, 2, 3]
