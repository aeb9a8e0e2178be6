"""Checkpoints (classic V1, V2 with sidecars), _last_checkpoint, .crc files, log cleanup."""

from __future__ import annotations

import json
import os
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers import add, commit_info, metadata, protocol, remove, write_commit
from write_helpers import rows, sample

import deltaexplore as dx
from deltaexplore.core.log.last_checkpoint import parse_last_checkpoint
from deltaexplore.core.operations import checkpoint, delete, set_table_properties, write_table
from deltaexplore.core.write.checkpoint_writer import write_checkpoint
from deltaexplore.core.write.log_cleanup import cleanup_log, plan_log_cleanup

DAY = 86_400_000


def _log_files(root):
    return sorted(os.listdir(os.path.join(root, "_delta_log")))


def _table_with_history(root, n=4, **kw):
    write_table(str(root), sample(4), partition_by=["part"], **kw)
    for i in range(1, n):
        write_table(str(root), sample(2, 10 * i))
    return dx.open_table(str(root))


def test_classic_checkpoint_schema_and_contents(tmp_path):
    root = tmp_path / "t"
    t = _table_with_history(root)
    delete(str(root), "id = 10")
    result = write_checkpoint(t)
    assert result.kind == "classic" and result.written and result.version == 4
    assert result.path == f"_delta_log/{4:020d}.checkpoint.parquet"
    table = pq.read_table(root / result.path)
    assert set(table.column_names) == {"txn", "add", "remove", "metaData", "protocol", "domainMetadata"}
    add_type = table.schema.field("add").type
    assert add_type.field("stats").type == pa.string() and add_type.get_field_index("stats_parsed") < 0
    assert table.schema.field("protocol").type.field("minReaderVersion").type == pa.int32()
    n_add = table.column("add").combine_chunks().is_valid().to_pylist().count(True)
    n_rem = table.column("remove").combine_chunks().is_valid().to_pylist().count(True)
    assert (n_add, n_rem) == (result.num_add_files, 1)
    proto = next(p for p in table.column("protocol").to_pylist() if p)
    assert proto["readerFeatures"] is None and proto["writerFeatures"] is None  # legacy (1, 2)
    lc = parse_last_checkpoint((root / "_delta_log" / "_last_checkpoint").read_bytes())
    assert lc.usable and lc.checksum_valid and lc.version == 4 and lc.num_of_add_files == result.num_add_files
    # the table reads the same from the checkpoint
    fresh = dx.open_table(str(root)).snapshot()
    assert fresh.checkpoint_version == 4
    assert rows(fresh.to_arrow()) == rows(dx.open_table(str(root)).snapshot(4).to_arrow())
    assert len(fresh.tombstones()) == 1


def test_existing_checkpoint_is_never_replaced(tmp_path):
    root = tmp_path / "t"
    t = _table_with_history(root, 2)
    first = write_checkpoint(t)
    before = (root / first.path).read_bytes()
    again = write_checkpoint(t)
    assert not again.written and (root / first.path).read_bytes() == before


def test_stats_parsed_and_partition_values_parsed(tmp_path):
    root = tmp_path / "t"
    t = _table_with_history(root, 2, configuration={"delta.checkpoint.writeStatsAsStruct": "true"})
    result = write_checkpoint(t)
    adds = [a for a in pq.read_table(root / result.path).column("add").to_pylist() if a]
    a = adds[0]
    assert a["partitionValues_parsed"]["part"] in ("a", "b")
    stats = json.loads(a["stats"])
    assert a["stats_parsed"]["numRecords"] == stats["numRecords"]
    assert a["stats_parsed"]["minValues"]["id"] == stats["minValues"]["id"]
    assert a["stats_parsed"]["nullCount"]["value"] == 0


def test_tombstones_expire_with_retention(tmp_path):
    root = tmp_path / "t"
    now = int(time.time() * 1000)
    write_commit(
        root,
        0,
        [commit_info(), protocol(), metadata(), add("a.parquet", 1, 1), add("b.parquet", 1, 1), add("c.parquet", 1, 1)],
    )
    write_commit(
        root, 1, [commit_info(), remove("a.parquet", deletionTimestamp=now - 8 * DAY), remove("b.parquet", deletionTimestamp=now)]
    )
    result = write_checkpoint(dx.open_table(str(root)))
    removes = [r for r in pq.read_table(root / result.path).column("remove").to_pylist() if r]
    assert [r["path"] for r in removes] == ["b.parquet"]  # a's tombstone expired (7 days)


def test_v2_checkpoint_with_sidecars(tmp_path):
    root = tmp_path / "t"
    t = _table_with_history(root, 3, configuration={"delta.checkpointPolicy": "v2"})
    snap = t.snapshot()
    assert "v2Checkpoint" in snap.protocol.reader_feature_set
    with pytest.raises(dx.WriteRefusedError, match="only V2"):
        write_checkpoint(t, kind="classic")
    result = write_checkpoint(t, actions_per_sidecar=2)
    assert result.kind == "v2-parquet" and len(result.sidecars) == 3  # 6 adds, 2 per sidecar
    assert all(s.startswith("_delta_log/_sidecars/") for s in result.sidecars)
    top = pq.read_table(root / result.path)
    assert "checkpointMetadata" in top.column_names and "add" not in top.column_names
    assert next(c for c in top.column("checkpointMetadata").to_pylist() if c)["version"] == 2
    lc = json.loads((root / "_delta_log" / "_last_checkpoint").read_text())
    assert lc["v2Checkpoint"]["path"] == result.path.rsplit("/", 1)[1]
    fresh = dx.open_table(str(root)).snapshot()
    assert fresh.checkpoint_version == 2 and fresh.segment.checkpoint.kind == "v2-parquet"
    assert rows(fresh.to_arrow()) == rows(t.snapshot().to_arrow()) and len(fresh.to_arrow()) == 8
    again = write_checkpoint(t, v2_format="json")
    assert not again.written and again.path == result.path  # one checkpoint per version
    write_table(str(root), sample(1, 99))  # a new version, checkpointed as JSON
    json_result = write_checkpoint(dx.open_table(str(root)), v2_format="json")
    assert json_result.kind == "v2-json" and json_result.path.endswith(".json") and json_result.version == 3
    lines = [json.loads(x) for x in (root / json_result.path).read_text().splitlines()]
    assert next(iter(lines[0])) == "checkpointMetadata" and any("sidecar" in x for x in lines)


def test_checkpoint_interval_and_crc(tmp_path):
    root = tmp_path / "t"
    write_table(str(root), sample(2), configuration={"delta.checkpointInterval": "3"})
    for i in range(1, 7):
        write_table(str(root), sample(1, 100 + i))
    names = _log_files(root)
    assert f"{3:020d}.checkpoint.parquet" in names and f"{6:020d}.checkpoint.parquet" in names
    assert all(f"{v:020d}.crc" in names for v in range(7))
    t = dx.open_table(str(root))
    for v in range(7):
        assert all(t.snapshot(v).validate_crc().column("ok").to_pylist()), v
    crc = json.loads((root / "_delta_log" / f"{6:020d}.crc").read_text())
    assert crc["numFiles"] == 7 and crc["numMetadata"] == 1 and crc["fileSizeHistogram"]["sortedBinBoundaries"][0] == 0
    assert sum(crc["fileSizeHistogram"]["fileCounts"]) == 7


def test_crc_with_deletion_vectors(tmp_path):
    root = tmp_path / "t"
    write_table(str(root), sample(10), configuration={"delta.enableDeletionVectors": "true"})
    delete(str(root), "id < 4")
    crc = json.loads((root / "_delta_log" / f"{1:020d}.crc").read_text())
    assert crc["numDeletedRecordsOpt"] == 4 and crc["numDeletionVectorsOpt"] == 1
    assert crc["deletedRecordCountsHistogramOpt"]["deletedRecordCounts"][1] == 1
    assert all(dx.open_table(str(root)).snapshot().validate_crc().column("ok").to_pylist())


def _age(root, versions, days):
    """Backdate commit (and checkpoint) files of `versions` by `days`."""
    for name in _log_files(root):
        if name[:20].isdigit() and int(name[:20]) in versions:
            path = os.path.join(root, "_delta_log", name)
            t = time.time() - days * 86400
            os.utime(path, (t, t))


def test_log_cleanup_keeps_what_retained_versions_need(tmp_path):
    root = tmp_path / "t"
    write_table(str(root), sample(2))
    for i in range(1, 8):
        write_table(str(root), sample(1, 100 + i))
    t = dx.open_table(str(root))
    write_checkpoint(t.snapshot(3))
    write_checkpoint(t.snapshot(6))
    _age(root, range(0, 5), 40)  # versions 0..4 are past the 30-day retention
    plan = plan_log_cleanup(t)
    assert plan.cutoff_version == 4 and plan.checkpoint_version == 3
    deleted = {os.path.basename(p) for p in plan.files}
    assert deleted == {f"{v:020d}.json" for v in range(3)} | {f"{v:020d}.crc" for v in range(3)}
    out = cleanup_log(t, dry_run=True)
    assert out.column("num_files")[0].as_py() == 6 and len(_log_files(root)) > 6 + 8
    cleanup_log(t)
    left = _log_files(root)
    assert f"{3:020d}.checkpoint.parquet" in left and f"{3:020d}.json" in left and f"{2:020d}.json" not in left
    t = dx.open_table(str(root))
    for v in range(3, 8):  # every retained version still reconstructs
        assert t.snapshot(v).version == v
    with pytest.raises(dx.VersionNotFoundError):
        t.snapshot(1)
    assert len(t.snapshot().to_arrow()) == 9


def test_log_cleanup_without_checkpoint_deletes_nothing(tmp_path):
    root = tmp_path / "t"
    _table_with_history(root, 4)
    _age(root, range(0, 4), 40)
    assert plan_log_cleanup(dx.open_table(str(root))).files == []


def test_log_retention_property(tmp_path):
    root = tmp_path / "t"
    t = _table_with_history(root, 4)
    set_table_properties(str(root), {"delta.logRetentionDuration": "interval 1 days"})
    write_checkpoint(t.snapshot(2))
    _age(root, range(0, 3), 2)
    plan = plan_log_cleanup(dx.open_table(str(root)))
    assert plan.checkpoint_version == 2 and len(plan.files) == 4


def test_checkpoint_operation_dry_run(tmp_path):
    root = tmp_path / "t"
    _table_with_history(root, 2)
    out = checkpoint(str(root), dry_run=True).to_pylist()[0]
    assert out["written"] is False and out["num_add_files"] == 4
    assert not any("checkpoint" in n for n in _log_files(root))
    out = checkpoint(str(root)).to_pylist()[0]
    assert out["written"] is True and out["path"].endswith(".checkpoint.parquet")
