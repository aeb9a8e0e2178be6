"""A table's snapshots moved from the ones it keeps: refresh and time travel from a cached state.

Every moved snapshot is compared with a cold read of its version (a fresh `Table`): files, add
actions, tombstones, protocol, metadata, transactions, domains, commit time, segment
(`snapshot_compare.state`). The tests also check that the snapshots were moved, not read cold.
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path

import pyarrow as pa
import pytest
from corpus_paths import CORPUS, corpus_catalog
from helpers import add, commit_info, metadata, protocol, remove, write_commit
from snapshot_compare import cold_state, differences, moved_state, state

import deltaexplore as dx
from deltaexplore.core import operations as ops
from deltaexplore.core.write.log_cleanup import cleanup_log
from deltaexplore.errors import DeltaExploreError, VersionNotFoundError
from deltaexplore.storage.local import LocalStorage

TABLES = [t for t in corpus_catalog() if t["status"] != "negative"]


@pytest.mark.corpus
@pytest.mark.parametrize("entry", TABLES, ids=[t["id"] for t in TABLES])
def test_every_version_of_every_corpus_table_moves_like_a_cold_read(entry: dict) -> None:
    root = str(CORPUS / entry["table_root"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dx.CatalogManagedWarning)
        table = dx.open_table(root)
        try:
            versions = table.versions()
            table.snapshot().files()
        except DeltaExploreError:
            pytest.skip("the latest version does not read (a negative case for snapshots)")
        cold = {v: cold_state(root, v) for v in versions}
        moves = 0
        # down from the latest, then up from the oldest, then jumps
        for v in [*reversed(versions), *versions, *versions[::3], *reversed(versions[1::2])]:
            got, moved = moved_state(table, v)
            assert differences(got, cold[v]) == [], f"version {v}"
            moves += moved
    readable = [v for v in versions if isinstance(cold[v], dict)]
    if len(readable) > 1:
        assert moves > 0


def _append(root: Path, ids: range, **kwargs) -> None:
    ops.write_table(str(root), pa.table({"id": pa.array(list(ids), pa.int64()), "part": [i % 3 for i in ids]}), **kwargs)


def _same_as_cold(table: dx.Table, snapshot: dx.Snapshot) -> None:
    assert differences(state(snapshot), cold_state(table.uri, snapshot.version)) == []


def test_refresh_follows_writes_checkpoints_and_log_cleanup(tmp_path: Path) -> None:
    root = tmp_path / "t"
    _append(root, range(10), partition_by=["part"], configuration={"delta.enableDeletionVectors": "true"})
    reader = dx.open_table(str(root))
    snap = reader.snapshot()
    snap.files()
    steps = [
        lambda: _append(root, range(10, 20)),
        lambda: ops.delete(str(root), "id < 3"),  # deletion vectors
        lambda: ops.update(str(root), {"id": "id + 100"}, "id = 15", use_deletion_vectors=False),  # rewrite
        lambda: ops.checkpoint(str(root)),
        lambda: _append(root, range(20, 25)),
        lambda: ops.optimize(str(root)),
        lambda: ops.set_table_properties(str(root), {"delta.logRetentionDuration": "interval 0 seconds"}),
        lambda: ops.checkpoint(str(root)),
        lambda: cleanup_log(dx.open_table(str(root)), retention_ms=0, now_ms=int(time.time() * 1000) + 60_000),
        lambda: _append(root, range(25, 30), mode="overwrite"),
        lambda: _append(root, range(30, 31)),
    ]
    moved = 0
    for step in steps:
        step()
        newer = snap.refresh()
        assert newer.version == reader.latest_version()
        moved += newer.files_loaded
        _same_as_cold(reader, newer)
        snap = newer
    assert snap.refresh() is snap  # nothing new: the same snapshot
    assert moved >= len(steps) - 2  # a cleaned-up log or a new checkpoint may be read cold
    # time travel on the same table over every version still readable
    for v in [*reversed(reader.versions()), *reader.versions()]:
        got, _ = moved_state(reader, v)
        assert differences(got, cold_state(str(root), v)) == [], f"version {v}"


def test_a_table_written_while_snapshots_move_back_and_forth(tmp_path: Path) -> None:
    root = tmp_path / "t"
    _append(root, range(5), configuration={"delta.checkpointInterval": "4", "delta.enableDeletionVectors": "true"})
    reader = dx.open_table(str(root))
    for i in range(1, 13):
        if i % 4 == 3:
            ops.delete(str(root), f"id = {i}")
        else:
            _append(root, range(5 * i, 5 * i + 5))
        latest = reader.snapshot()
        latest.files()
        _same_as_cold(reader, latest)
        for back in (1, 3):  # the explorer's slider: a step or a few back, then forward again
            if latest.version - back >= 0:
                got, _ = moved_state(reader, latest.version - back)
                assert differences(got, cold_state(str(root), latest.version - back)) == []
        assert len(reader._states) <= dx.Table.CACHED_STATES


def _hand_table(root: Path) -> None:
    """v0: two files with stats, tags and partition values; v1: a checkpoint is taken there;
    v2: one removed by a remove that names only its path; v3: the other gets a deletion vector
    (remove + add of the same path); v4: a new file."""
    schema = {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {"name": "p", "type": "string", "nullable": True, "metadata": {}},
        ],
    }
    stats = '{"numRecords":10,"minValues":{"id":1},"maxValues":{"id":9},"nullCount":{"id":0}}'
    write_commit(
        root,
        0,
        [
            commit_info("CREATE TABLE"),
            protocol(3, 7, ["deletionVectors"], ["deletionVectors"]),
            metadata(schema, ["p"], {"delta.enableDeletionVectors": "true"}),
            add("p=a/f1.parquet", 111, pv={"p": "a"}, stats=stats, tags={"k": "v"}),
            add("p=b/f2.parquet", 222, pv={"p": "b"}, stats=stats),
        ],
    )
    write_commit(root, 1, [commit_info(), add("p=a/f3.parquet", 333, pv={"p": "a"}, stats=stats)])
    ops.checkpoint(str(root))
    write_commit(root, 2, [commit_info("DELETE"), {"remove": {"path": "p=a/f1.parquet", "dataChange": True}}])
    dv = {"storageType": "i", "pathOrInlineDv": "wi5b=000010000siXQKl0rr91000f55c8Xg0@fZ", "sizeInBytes": 40, "cardinality": 1}
    write_commit(
        root, 3, [commit_info("DELETE"), remove("p=b/f2.parquet"), add("p=b/f2.parquet", 222, pv={"p": "b"}, stats=stats, dv=dv)]
    )
    write_commit(root, 4, [commit_info(), add("p=c/f4.parquet", 444, pv={"p": "c"}, stats=stats)])


def test_going_back_restores_what_a_remove_omits(tmp_path: Path) -> None:
    root = tmp_path / "t"
    _hand_table(root)
    table = dx.open_table(str(root))
    table.snapshot().files()
    for v in (3, 2, 1, 2, 3, 4, 1):
        got, moved = moved_state(table, v)
        assert moved, f"version {v} was read cold"
        assert differences(got, cold_state(str(root), v)) == [], f"version {v}"
    one = table.snapshot(version=1).files()
    f1 = one.filter(pa.compute.equal(one.column("path"), "p=a/f1.parquet")).to_pylist()[0]
    assert (f1["size"], f1["tags"], f1["partition_values"]) == (111, [("k", "v")], [("p", "a")])
    assert f1["num_records"] == 10


def test_before_the_checkpoint_is_read_cold_or_refused_like_a_cold_read(tmp_path: Path) -> None:
    root = tmp_path / "t"
    _hand_table(root)
    (root / "_delta_log" / f"{0:020d}.json").unlink()  # cleaned up: version 0 is gone
    table = dx.open_table(str(root))
    table.snapshot().files()
    with pytest.raises(VersionNotFoundError):
        table.snapshot(version=0)
    assert differences(moved_state(table, 1)[0], cold_state(str(root), 1)) == []


class CountingStorage(LocalStorage):
    """A local table read like an object store (no local fast path), counting what is read."""

    def __init__(self, root: str) -> None:
        super().__init__(root)
        self.reads: list[str] = []

    @property
    def local_root(self) -> None:  # type: ignore[override]
        return None

    def read_bytes(self, path: str) -> bytes:
        self.reads.append(path)
        return super().read_bytes(path)

    def open_input(self, path: str) -> pa.NativeFile:
        self.reads.append(path)
        return super().open_input(path)


def test_refresh_reads_only_the_new_commits(tmp_path: Path) -> None:
    root = tmp_path / "t"
    _append(root, range(3))
    ops.checkpoint(str(root))
    for i in range(1, 4):
        _append(root, range(3 * i, 3 * i + 3))
    storage = CountingStorage(str(root))
    table = dx.Table(storage)
    snap = table.snapshot()
    snap.files()
    assert any("checkpoint" in p for p in storage.reads)
    for i in range(4, 7):
        _append(root, range(3 * i, 3 * i + 3))
    storage.reads.clear()
    newer = snap.refresh()
    newer.files()
    commits = sorted(p for p in storage.reads if p.endswith(".json"))
    assert commits == [f"_delta_log/{v:020d}.json" for v in (4, 5, 6)]
    assert not any("checkpoint.parquet" in p for p in storage.reads)
    _same_as_cold(table, newer)
    storage.reads.clear()
    older = table.snapshot(version=2)  # back: nothing read
    older.files()
    assert [p for p in storage.reads if not p.endswith("_last_checkpoint")] == []
    _same_as_cold(table, older)


def test_a_table_replaced_at_the_same_place_is_read_again(tmp_path: Path) -> None:
    root = tmp_path / "t"
    _append(root, range(3))
    _append(root, range(3, 6))
    table = dx.open_table(str(root))
    table.snapshot().files()
    for f in (root / "_delta_log").iterdir():
        f.unlink()
    time.sleep(0.01)
    ops.write_table(str(root), pa.table({"x": pa.array([1.5, 2.5])}))
    _append_x = pa.table({"x": pa.array([3.5])})
    ops.write_table(str(root), _append_x)
    ops.write_table(str(root), _append_x)  # version 2 again, another log
    snap = table.snapshot()
    assert snap.arrow_schema.names == ["x"]
    _same_as_cold(table, snap)
    _same_as_cold(table, table.snapshot(version=1))


def test_the_table_keeps_a_bounded_number_of_snapshots(tmp_path: Path) -> None:
    root = tmp_path / "t"
    for i in range(8):
        _append(root, range(i, i + 1))
    table = dx.open_table(str(root))
    for v in range(8):
        table.snapshot(version=v)
    assert len(table._states) == dx.Table.CACHED_STATES
    assert sorted(table._states) == [4, 5, 6, 7]
    table.forget_snapshots()
    assert len(table._states) == 0


@pytest.mark.s3
def test_refresh_on_s3(tmp_path: Path) -> None:
    from s3_server import fsspec_options, s3_endpoint

    with s3_endpoint() as endpoint:
        options = fsspec_options(endpoint)
        uri = "s3://lake/live"
        ops.write_table(uri, pa.table({"id": pa.array([1, 2], pa.int64())}), storage_options=options)
        table = dx.open_table(uri, options)
        snap = table.snapshot()
        snap.files()
        for i in range(3):
            ops.write_table(uri, pa.table({"id": pa.array([i], pa.int64())}), storage_options=options)
        newer = snap.refresh()
        assert newer.version == 3 and newer.files_loaded
        assert differences(state(newer), cold_state(uri, 3, options)) == []
        back = table.snapshot(version=1)
        assert back.files_loaded
        assert differences(state(back), cold_state(uri, 1, options)) == []
