"""Local operations: write modes, DELETE (deletion vectors or rewrites, CDF), OPTIMIZE
(bin-packing, partition filter, Z-order, DV purge), VACUUM, RESTORE, on local disk and S3."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from helpers import add, commit_info, metadata, protocol, write_commit
from write_helpers import rows, sample

import deltaexplore as dx
from deltaexplore.core.operations import (
    delete,
    optimize,
    plan_optimize,
    plan_vacuum,
    purge_deletion_vectors,
    restore,
    vacuum,
    write_table,
)

DV = {"delta.enableDeletionVectors": "true"}


def one(metrics: pa.Table) -> dict:
    assert metrics.num_rows == 1
    return metrics.to_pylist()[0]


def ids(uri, options=None, version=None) -> list[int]:
    return sorted(dx.open_table(uri, options).snapshot(version).to_arrow().column("id").to_pylist())


# -- write -------------------------------------------------------------------------------------


def test_write_modes(location):
    uri, options = location
    m = one(write_table(uri, sample(4), partition_by=["part"], storage_options=options))
    assert m["operation"] == "CREATE TABLE" and m["version"] == 0 and m["num_added_files"] == 2
    with pytest.raises(dx.WriteRefusedError, match="already exists"):
        write_table(uri, sample(1), mode="error", storage_options=options)
    assert one(write_table(uri, sample(1), mode="ignore", storage_options=options))["skipped"]
    write_table(uri, sample(2, 10), storage_options=options)
    assert ids(uri, options) == [0, 1, 2, 3, 10, 11]
    m = one(write_table(uri, sample(2, 20), mode="overwrite", storage_options=options))
    assert m["num_removed_files"] == 4 and ids(uri, options) == [20, 21]
    assert ids(uri, options, version=1) == [0, 1, 2, 3, 10, 11]


def test_write_dry_run_writes_nothing(tmp_path):
    root = tmp_path / "t"
    m = one(write_table(str(root), sample(3), dry_run=True))
    assert m["dry_run"] and m["version"] is None and m["num_output_rows"] == 3
    assert not root.exists()


def test_overwrite_partition_predicate(tmp_path):
    root = str(tmp_path / "t")
    write_table(root, sample(6), partition_by=["part"])
    new = pa.table({"id": pa.array([100], pa.int64()), "part": ["a"], "value": ["new"]})
    with pytest.raises(dx.WriteRefusedError, match="does not all match"):
        write_table(root, new.set_column(1, "part", pa.array(["b"])), mode="overwrite", predicate="part = 'a'")
    with pytest.raises(dx.WriteRefusedError, match="partition columns"):
        write_table(root, new, mode="overwrite", predicate="id > 3")
    write_table(root, new, mode="overwrite", predicate="part = 'a'")
    assert ids(root) == [1, 3, 5, 100]


def test_partition_by_mismatch_refused(tmp_path):
    root = str(tmp_path / "t")
    write_table(root, sample(2), partition_by=["part"])
    with pytest.raises(dx.WriteRefusedError, match="partitioned by"):
        write_table(root, sample(2), partition_by=["value"])


# -- delete ------------------------------------------------------------------------------------


def test_delete_with_deletion_vectors(location):
    uri, options = location
    write_table(uri, sample(20), partition_by=["part"], configuration=DV, storage_options=options)
    m = one(delete(uri, "id >= 15", storage_options=options))
    assert m["num_deleted_rows"] == 5 and m["num_deletion_vectors_added"] == 2 and m["num_added_files"] == 0
    assert ids(uri, options) == list(range(15))
    snap = dx.open_table(uri, options).snapshot()
    dvs = snap.files().column("storage_type").to_pylist()
    assert dvs == ["u", "u"]
    files = snap.add_actions()
    dv_path = files.column("deletionVector")[0].as_py()
    stats = json.loads(files.column("stats")[0].as_py())
    assert stats["tightBounds"] is False and dv_path["offset"] >= 1
    # a second delete merges into the existing DV; deleting everything left removes the file
    one(delete(uri, "id = 0", storage_options=options))
    m = one(delete(uri, "part = 'b'", storage_options=options))
    assert m["num_removed_files"] == 1
    assert ids(uri, options) == [2, 4, 6, 8, 10, 12, 14]
    assert ids(uri, options, version=1) == list(range(15))


def test_delete_dry_run_and_no_match(tmp_path):
    root = str(tmp_path / "t")
    write_table(root, sample(10), configuration=DV)
    m = one(delete(root, "id < 3", dry_run=True))
    assert m["dry_run"] and m["num_deleted_rows"] == 3 and m["version"] is None
    assert dx.open_table(root).latest_version() == 0
    assert one(delete(root, "id > 100"))["version"] is None  # nothing matched: no commit
    assert dx.open_table(root).latest_version() == 0


def test_delete_by_rewriting_without_deletion_vectors(tmp_path):
    root = str(tmp_path / "t")
    write_table(root, sample(10), max_rows_per_file=5)
    m = one(delete(root, "id % 5 = 0"))  # any SQL condition (evaluated on the rows)
    assert m["num_deleted_rows"] == 2 and m["num_removed_files"] == 2 and m["num_copied_rows"] == 8
    assert ids(root) == [1, 2, 3, 4, 6, 7, 8, 9]
    snap = dx.open_table(root).snapshot()
    assert snap.add_actions().column("deletionVector").null_count == snap.num_files  # no DVs


def test_delete_everything_and_partitions_without_reading(tmp_path):
    root = str(tmp_path / "t")
    write_table(root, sample(6), partition_by=["part"])
    m = one(delete(root, "part = 'a'"))
    assert m["num_removed_files"] == 1 and m["num_deleted_rows"] == 3
    one(delete(root))
    assert ids(root) == [] and dx.open_table(root).snapshot().num_files == 0


def test_delete_writes_change_data(tmp_path):
    root = str(tmp_path / "t")
    write_table(root, sample(10), configuration={**DV, "delta.enableChangeDataFeed": "true"})
    delete(root, "id < 2")
    delete(root, "id > 7", use_deletion_vectors=False)
    t = dx.open_table(root)
    ch = t.changes(1, 2)
    assert sorted(zip(ch.column("id").to_pylist(), ch.column("_change_type").to_pylist())) == [
        (0, "delete"),
        (1, "delete"),
        (8, "delete"),
        (9, "delete"),
    ]
    cdc = [f for f in t.history().to_pylist() if f["cdc_files"]]
    assert len(cdc) == 2


def test_append_only_table_refuses_delete(tmp_path):
    root = str(tmp_path / "t")
    write_table(root, sample(3), configuration={"delta.appendOnly": "true"})
    with pytest.raises(dx.WriteRefusedError, match="append-only"):
        delete(root, "id = 1")


# -- optimize ----------------------------------------------------------------------------------


def test_optimize_bin_packing(location):
    uri, options = location
    write_table(uri, sample(40), partition_by=["part"], max_rows_per_file=4, storage_options=options)
    before = dx.open_table(uri, options).snapshot()
    assert before.num_files == 10
    dry = one(optimize(uri, dry_run=True, storage_options=options))
    assert dry["num_files_removed"] == 10 and dry["version"] is None and dry["num_bins"] == 2
    m = one(optimize(uri, storage_options=options))
    assert m["num_files_added"] == 2 and m["num_partitions_optimized"] == 2
    after = dx.open_table(uri, options).snapshot()
    assert after.num_files == 2 and rows(after.to_arrow()) == rows(before.to_arrow())
    commit = after.json_lines.file_actions("add")
    commit = commit.filter(pc.equal(commit.column("version"), after.version))
    assert commit.num_rows == 2 and not any(commit.column("dataChange").to_pylist())  # rearranging only
    hist = after.table.history(1).to_pylist()[0]
    assert hist["operation"] == "OPTIMIZE"
    assert one(optimize(uri, storage_options=options))["version"] is None  # nothing left to do


def test_optimize_target_size_and_partition_filter(tmp_path):
    root = str(tmp_path / "t")
    write_table(root, sample(40), partition_by=["part"], max_rows_per_file=2)
    sizes = dx.open_table(root).snapshot().add_actions().column("size").to_pylist()
    plan = plan_optimize(dx.open_table(root).snapshot(), target_size=max(sizes) * 3)
    assert all(sum(b.column("size").to_pylist()) <= max(sizes) * 3 for b in plan.bins)
    m = one(optimize(root, partition_filter="part = 'a'"))
    assert m["num_partitions_optimized"] == 1
    parts = [dict(p)["part"] for p in dx.open_table(root).snapshot().add_actions().column("partitionValues").to_pylist()]
    assert parts.count("a") == 1 and parts.count("b") == 10
    with pytest.raises(dx.WriteRefusedError, match="partition columns"):
        optimize(root, partition_filter="id > 3")


def test_optimize_rewrites_files_with_many_deleted_rows(tmp_path):
    root = str(tmp_path / "t")
    write_table(root, sample(100), configuration=DV)  # one file: nothing to bin-pack
    assert one(optimize(root))["version"] is None
    delete(root, "id < 30")
    m = one(optimize(root))  # 30% deleted > 5%: rewritten without its DV
    assert m["num_files_removed"] == 1 and m["num_deleted_rows_purged"] == 30
    snap = dx.open_table(root).snapshot()
    assert snap.add_actions().column("deletionVector").null_count == 1 and ids(root) == list(range(30, 100))


def test_purge_deletion_vectors(tmp_path):
    root = str(tmp_path / "t")
    write_table(root, sample(100), configuration=DV, max_rows_per_file=50)
    delete(root, "id = 1")
    m = one(purge_deletion_vectors(root))
    assert m["operation"] == "REORG" and m["num_files_removed"] == 1 and m["num_deleted_rows_purged"] == 1
    snap = dx.open_table(root).snapshot()
    assert snap.add_actions().column("deletionVector").null_count == snap.num_files
    assert ids(root) == [i for i in range(100) if i != 1]


def test_zorder(tmp_path):
    root = str(tmp_path / "t")
    data = pa.table({"id": pa.array(range(400), pa.int64()), "x": pa.array([i % 20 for i in range(400)], pa.int64())})
    write_table(root, data, max_rows_per_file=100)
    m = one(optimize(root, zorder_by=["id", "x"], target_size=1))  # tiny target: one file per row group
    assert m["version"] is not None
    snap = dx.open_table(root).snapshot()
    assert rows(snap.to_arrow()) == rows(data)
    assert json.loads(snap.table.history(1).to_pylist()[0]["parameters"][1][1]) == ["id", "x"]


def _grid(n: int = 16, seed: int = 3) -> pa.Table:
    """Every (a, b) of an n x n grid once, in a shuffled order."""
    import random

    cells = [(a, b) for a in range(n) for b in range(n)]
    random.Random(seed).shuffle(cells)
    return pa.table({"a": pa.array([c[0] for c in cells], pa.int64()), "b": pa.array([c[1] for c in cells], pa.int64())})


def _spans(chunks: list[list[tuple[int, int]]], n: int) -> list[tuple[float, float]]:
    """Per chunk of (a, b) points: the share of the full range its a values and b values span."""
    return [
        ((max(p[0] for p in c) - min(p[0] for p in c)) / (n - 1), (max(p[1] for p in c) - min(p[1] for p in c)) / (n - 1))
        for c in chunks
    ]


def test_zorder_indices_interleave_ranks():
    """The order is the Z-order (Morton) curve of the columns' dense ranks (from 0, spread over
    the bit width), the first column's bit first at every level (checked against a plain
    bit-by-bit interleaving)."""
    from deltaexplore.core.operations import zorder_indices

    data = _grid()
    a, b = data.column("a").to_pylist(), data.column("b").to_pylist()

    def morton(x: int, y: int) -> int:
        key = 0
        for bit in range(31, -1, -1):
            key = (key << 2) | (((x >> bit) & 1) << 1) | ((y >> bit) & 1)
        return key

    expected = sorted(range(len(a)), key=lambda i: (morton(a[i], b[i]), i))
    assert zorder_indices(data, ["a", "b"]).tolist() == expected
    # locality: 4 runs of 64 points each stay within part of both ranges (a sort by a alone
    # spans all of b in every run)
    order = zorder_indices(data, ["a", "b"])
    points = [(a[i], b[i]) for i in order]
    assert all(sa <= 0.75 and sb <= 0.75 for sa, sb in _spans([points[k : k + 64] for k in range(0, 256, 64)], 16))
    by_a = sorted(zip(a, b))
    assert all(sb == 1.0 for _, sb in _spans([by_a[k : k + 64] for k in range(0, 256, 64)], 16))


def test_zorder_files_cluster_both_columns(tmp_path):
    """After OPTIMIZE ZORDER BY (a, b), every new file covers part of both columns' ranges
    (the input files, written in random order, each spanned nearly all of both)."""
    from deltaexplore.inspect import layout

    root = str(tmp_path / "t")
    write_table(root, _grid(64), max_rows_per_file=1024)
    before = layout(dx.open_table(root), "b").to_pylist()
    assert len(before) == 4 and all(r["max"] - r["min"] >= 60 for r in before)
    one(optimize(root, zorder_by=["a", "b"], target_size=1))  # a new file every 1024 rows
    snap = dx.open_table(root).snapshot()
    assert snap.add_actions().num_rows == 4
    files = {c: {r["path"]: (r["min"], r["max"]) for r in layout(snap, c).to_pylist()} for c in ("a", "b")}
    for path in files["a"]:
        (alo, ahi), (blo, bhi) = files["a"][path], files["b"][path]
        assert (ahi - alo) / 63 <= 0.5 and (bhi - blo) / 63 <= 0.5, (path, files["a"][path], files["b"][path])


def test_optimize_preserves_row_ids(tmp_path):
    root = str(tmp_path / "t")
    write_table(root, sample(10), configuration={"delta.enableRowTracking": "true"}, max_rows_per_file=3)
    before = {
        r["id"]: (r["_row_id"], r["_row_commit_version"])
        for r in dx.open_table(root).snapshot().to_arrow(row_tracking=True).to_pylist()
    }
    optimize(root)
    after = {
        r["id"]: (r["_row_id"], r["_row_commit_version"])
        for r in dx.open_table(root).snapshot().to_arrow(row_tracking=True).to_pylist()
    }
    assert after == before  # stable row ids and commit versions survive the rewrite


# -- vacuum ------------------------------------------------------------------------------------


def _backdate(path: Path, days: float) -> None:
    t = time.time() - days * 86400
    os.utime(path, (t, t))


def test_vacuum_defaults_and_retention_check(tmp_path):
    from deltaexplore.core.write.transaction import Transaction

    root = tmp_path / "t"
    write_table(str(root), sample(4), max_rows_per_file=2)
    t = dx.open_table(str(root))
    txn = Transaction(t, operation="DELETE")
    gone = t.snapshot().add_actions().slice(0, 1)
    txn.remove_files(gone, deletion_timestamp=int((time.time() - 10 * 86400) * 1000))  # removed 10 days ago
    txn.commit()
    with pytest.raises(dx.WriteRefusedError, match="shorter than"):
        vacuum(str(root), retention_hours=1)
    m = one(vacuum(str(root)))
    assert m["dry_run"] is True and m["num_files"] == 0 and m["retention_hours"] == 168  # files are new
    for p in [*root.glob("*.parquet"), *(root / "_delta_log").iterdir()]:
        _backdate(p, 10)
    m = one(vacuum(str(root)))
    assert m["dry_run"] and m["files"] == [gone.column("path")[0].as_py()]
    assert all((root / f).exists() for f in m["files"])
    m = one(vacuum(str(root), dry_run=False))
    assert m["num_files"] == 1 and m["num_bytes"] == gone.column("size")[0].as_py()
    assert not any((root / f).exists() for f in m["files"])
    assert ids(str(root)) == [2, 3]


def test_vacuum_never_deletes_what_retained_versions_need(tmp_path):
    root = tmp_path / "t"
    write_table(str(root), sample(6), configuration=DV, partition_by=["part"])
    delete(str(root), "id = 2")  # DV file + the DV'd file both needed
    write_table(str(root), sample(2, 50), mode="overwrite")  # recent tombstones
    (root / "orphan.parquet").write_bytes(b"x")
    _backdate(root / "orphan.parquet", 30)
    (root / "_hidden").mkdir()
    (root / "_hidden" / "keep.parquet").write_bytes(b"x")
    _backdate(root / "_hidden" / "keep.parquet", 30)
    (root / ".dotfile").write_bytes(b"x")
    _backdate(root / ".dotfile", 30)
    plan = plan_vacuum(dx.open_table(str(root)))
    assert plan.files.column("path").to_pylist() == ["orphan.parquet"]
    m = one(vacuum(str(root), dry_run=False))
    assert m["files"] == ["orphan.parquet"]
    t = dx.open_table(str(root))
    assert ids(str(root), version=1) == [0, 1, 3, 4, 5]  # time travel inside the retention works
    assert (root / "_hidden" / "keep.parquet").exists() and (root / ".dotfile").exists()
    assert t.latest_version() == 2


def test_vacuum_with_zero_retention_keeps_latest(tmp_path):
    root = tmp_path / "t"
    write_table(str(root), sample(6), configuration=DV)
    delete(str(root), "id = 2")
    write_table(str(root), sample(2, 50))
    m = one(vacuum(str(root), retention_hours=0, enforce_retention_duration=False, dry_run=False))
    assert m["num_files"] == 0  # the DV'd file is still live, its DV file too
    optimize(str(root))
    m = one(vacuum(str(root), retention_hours=0, enforce_retention_duration=False, dry_run=False))
    assert m["num_files"] == 3  # two old data files and the DV file
    assert ids(str(root)) == [0, 1, 3, 4, 5, 50, 51]


def test_vacuum_checks_the_whole_protocol(tmp_path):
    root = tmp_path / "t"
    write_commit(
        root,
        0,
        [
            commit_info(),
            protocol(3, 7, ["vacuumProtocolCheck", "someReaderThing"], ["vacuumProtocolCheck", "someReaderThing"]),
            metadata(),
        ],
    )
    with pytest.raises(dx.UnsupportedFeatureError, match="someReaderThing"):
        vacuum(str(root))
    root2 = tmp_path / "u"
    write_commit(root2, 0, [commit_info(), protocol(1, 7, writers=["futureWriterThing"]), metadata(), add("a.parquet")])
    with pytest.raises(dx.UnsupportedFeatureError, match="futureWriterThing"):
        vacuum(str(root2))


def test_vacuum_ignores_files_outside_the_root(tmp_path):
    outside = tmp_path / "outside.parquet"
    outside.write_bytes(b"x")
    _backdate(outside, 30)
    root = tmp_path / "t"
    write_table(str(root), sample(2))
    t = dx.open_table(str(root))
    snap = t.snapshot()
    from deltaexplore.core.write.transaction import Transaction

    txn = Transaction(t, operation="WRITE", read_snapshot=snap)
    txn.add_files([add(outside.as_uri(), 1, 1)["add"]])
    txn.commit()
    txn = Transaction(t, operation="DELETE")
    txn.remove_files([outside.as_uri()])
    txn.commit()
    for p in list(root.rglob("*")):
        _backdate(p, 30)
    vacuum(str(root), retention_hours=0, enforce_retention_duration=False, dry_run=False)
    assert outside.exists()


# -- restore ---------------------------------------------------------------------------------------


def test_restore_version_and_timestamp(location):
    uri, options = location
    write_table(uri, sample(3), configuration=DV, storage_options=options)
    write_table(uri, sample(2, 10), storage_options=options)
    delete(uri, "id = 0", storage_options=options)
    m = one(restore(uri, version=1, storage_options=options))
    assert m["restored_version"] == 1 and m["version"] == 3 and m["num_files_after_restore"] == 2
    assert ids(uri, options) == [0, 1, 2, 10, 11]
    t = dx.open_table(uri, options)
    assert t.history(1).to_pylist()[0]["operation"] == "RESTORE"
    ts = t.snapshot(0).timestamp
    one(restore(uri, timestamp=ts, storage_options=options))
    assert ids(uri, options) == [0, 1, 2]
    dry = one(restore(uri, version=2, dry_run=True, storage_options=options))
    assert dry["version"] is None and ids(uri, options) == [0, 1, 2]


def test_restore_refuses_vacuumed_version(tmp_path):
    root = tmp_path / "t"
    write_table(str(root), sample(3))
    write_table(str(root), sample(2, 10), mode="overwrite")
    vacuum(str(root), retention_hours=0, enforce_retention_duration=False, dry_run=False)
    files = list(root.glob("*.parquet"))
    assert len(files) == 1
    with pytest.raises(dx.WriteRefusedError, match="vacuumed"):
        restore(str(root), version=0)


def test_restore_brings_back_metadata(tmp_path):
    root = str(tmp_path / "t")
    write_table(root, sample(2))
    write_table(root, sample(1, 5).append_column("extra", pa.array([1])), schema_mode="merge")
    restore(root, version=0)
    snap = dx.open_table(root).snapshot()
    assert snap.schema.names == ["id", "part", "value"]
    assert pc.sum(snap.add_actions().column("size")).as_py() > 0


def test_vacuum_checkpoint_and_cleanup_through_storage(location):
    uri, options = location
    write_table(uri, sample(4), max_rows_per_file=2, storage_options=options)
    write_table(uri, sample(2, 10), mode="overwrite", storage_options=options)
    time.sleep(0.01)
    dry = one(vacuum(uri, retention_hours=0, enforce_retention_duration=False, storage_options=options))
    assert dry["num_files"] == 2 and dry["dry_run"]
    done = one(vacuum(uri, retention_hours=0, enforce_retention_duration=False, dry_run=False, storage_options=options))
    assert sorted(done["files"]) == sorted(dry["files"])
    assert one(vacuum(uri, retention_hours=0, enforce_retention_duration=False, storage_options=options))["num_files"] == 0
    assert ids(uri, options) == [10, 11]
    from deltaexplore.core.operations import checkpoint, cleanup_metadata

    cp = one(checkpoint(uri, storage_options=options))
    assert cp["written"] and cp["version"] == 1
    assert dx.open_table(uri, options).snapshot().checkpoint_version == 1
    assert one(cleanup_metadata(uri, storage_options=options))["num_files"] == 0  # nothing expired


# -- update ------------------------------------------------------------------------------------


@pytest.mark.parametrize("conf", [{}, DV])
def test_update_with_and_without_deletion_vectors(location, conf):
    from deltaexplore.core.operations import update

    uri, options = location
    write_table(uri, sample(8), partition_by=["part"], configuration=conf, storage_options=options)
    m = one(update(uri, {"value": "concat(value, '!')", "id": "id * 10"}, "id >= 5", storage_options=options))
    assert m["num_updated_rows"] == 3 and m["version"] == 1
    assert m["num_deletion_vectors_added"] == (2 if conf else 0)
    got = sorted((r["id"], r["value"]) for r in dx.open_table(uri, options).snapshot().to_arrow().to_pylist())
    assert got == [(0, "v0"), (1, "v1"), (2, "v2"), (3, "v3"), (4, "v4"), (50, "v5!"), (60, "v6!"), (70, "v7!")]
    assert one(update(uri, {"value": "'x'"}, "id > 1000", storage_options=options))["version"] is None
    dry = one(update(uri, {"value": "'x'"}, dry_run=True, storage_options=options))
    assert dry["num_updated_rows"] == 8 and dry["version"] is None


def test_update_rules_and_change_data(tmp_path):
    from deltaexplore.core.operations import update

    root = str(tmp_path / "t")
    conf = {**DV, "delta.enableChangeDataFeed": "true", "delta.enableRowTracking": "true", "delta.constraints.small": "id < 100"}
    write_table(root, sample(4), configuration=conf)
    with pytest.raises(dx.WriteRefusedError, match="CHECK constraint 'small'"):
        update(root, {"id": "id + 1000"}, "id = 1")
    with pytest.raises(dx.WriteRefusedError, match="not in the table"):
        update(root, {"nope": "1"})
    assert dx.open_table(root).latest_version() == 0
    before = {r["id"]: r["_row_id"] for r in dx.open_table(root).snapshot().to_arrow(row_tracking=True).to_pylist()}
    update(root, {"id": "id + 50"}, "id % 2 = 1")
    after = {
        r["id"]: (r["_row_id"], r["_row_commit_version"])
        for r in dx.open_table(root).snapshot().to_arrow(row_tracking=True).to_pylist()
    }
    assert after[51] == (before[1], 1) and after[53] == (before[3], 1) and after[0] == (before[0], 0)
    changes = dx.open_table(root).changes(1)
    assert sorted(zip(changes.column("id").to_pylist(), changes.column("_change_type").to_pylist())) == [
        (1, "update_preimage"),
        (3, "update_preimage"),
        (51, "update_postimage"),
        (53, "update_postimage"),
    ]
