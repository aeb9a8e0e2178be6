"""Nothing outside the table root is ever written, deleted, or read where the spec forbids it.

Sentinel files live in a directory beside the table. The table holds links into it: a directory
symlink, a partition directory symlinked out, a file symlink. Every operation (writes, DELETE,
UPDATE, OPTIMIZE with Z-order, DV purge, VACUUM dry and real, RESTORE, checkpoints, log
cleanup, reads, every inspection, the explorer's data) runs on it, and the sentinels must come
out byte for byte and time for time unchanged, with nothing added beside them.

Hostile logs then point out of the table: a `u` deletion vector with a `../../../outside/`
prefix, sidecars with `../`, absolute and `file://` paths, a sidecar that is a data file, and
absolute / `file://` add paths. Relative DVs and sidecars must resolve under the table (under
`_delta_log/_sidecars/` for sidecars) or fail with a typed error, even when the file outside
is a valid one that a careless reader would use; absolute data paths are read (the protocol
allows them), but no maintenance copies them into the table or deletes them.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "write"))

from write_helpers import sample

import deltaexplore as dx
from deltaexplore import inspect as dxi
from deltaexplore.core.operations import (
    checkpoint,
    cleanup_metadata,
    delete,
    optimize,
    purge_deletion_vectors,
    restore,
    update,
    vacuum,
    write_table,
)
from deltaexplore.core.operations.vacuum import plan_vacuum
from deltaexplore.core.protocol.deletion_vectors import dv_file_bytes, encode_bitmap, z85_encode
from deltaexplore.core.write.log_cleanup import cleanup_log

DAY = 86400.0
CONF = {"delta.enableDeletionVectors": "true", "delta.enableChangeDataFeed": "true"}


# -- the scene: a table with links into a directory of sentinels ----------------------------------


def _backdate(path: Path, days: float) -> None:
    t = time.time() - days * DAY
    os.utime(path, (t, t), follow_symlinks=False)


def _snapshot_dir(directory: Path) -> dict[str, tuple[bytes, int]]:
    """Content and mtime (ns) of every file below `directory` (links not followed)."""
    out = {}
    for dirpath, _dirs, names in os.walk(directory):
        for name in names:
            p = Path(dirpath) / name
            out[str(p.relative_to(directory))] = (p.read_bytes(), p.lstat().st_mtime_ns)
    return out


def _dv_file(directory: Path, rows: list[int]) -> tuple[str, dict[str, Any]]:
    """A valid DV file in `directory`: (its UUID's Z85, a descriptor without the path)."""
    u = uuid.uuid4()
    bitmap = encode_bitmap(rows)
    data, offsets = dv_file_bytes([bitmap])
    (directory / f"deletion_vector_{u}.bin").write_bytes(data)
    return z85_encode(u.bytes), {"sizeInBytes": len(bitmap), "cardinality": len(rows), "offset": offsets[0]}


class Scene:
    """`base/outside/` (sentinels) and the table at `base/a/b/t` (so `../../../outside/` from
    the table's directories lands in the sentinels)."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.outside = base / "outside"
        self.root = base / "a" / "b" / "t"
        self.outside.mkdir(parents=True)
        (self.outside / "p=1").mkdir()
        pq.write_table(sample(4, 1000), self.outside / "sentinel.parquet")
        pq.write_table(sample(4, 2000).drop_columns(["part"]), self.outside / "p=1" / "orphan.parquet")
        (self.outside / "secret.txt").write_text("do not touch")
        self.dv_z85, self.dv_desc = _dv_file(self.outside, [0, 1])
        write_table(str(self.root), sample(20), partition_by=["part"], configuration=CONF, max_rows_per_file=5)
        write_table(str(self.root), sample(10, 100), partition_by=["part"])
        delete(str(self.root), "id = 3")  # a deletion vector inside the table
        # links out of the table: a directory, a partition directory, a file
        (self.root / "linkdir").symlink_to(self.outside, target_is_directory=True)
        (self.root / "part=z").symlink_to(self.outside / "p=1", target_is_directory=True)
        (self.root / "link.parquet").symlink_to(self.outside / "sentinel.parquet")
        (self.root / "orphan.parquet").write_bytes(b"not referenced: VACUUM deletes it")
        for p in [*self.outside.rglob("*"), *self.root.rglob("*")]:
            _backdate(p, 30)
        self.before = _snapshot_dir(self.outside)

    def check_outside_untouched(self, what: str) -> None:
        after = _snapshot_dir(self.outside)
        assert after.keys() == self.before.keys(), f"{what}: files appeared or vanished outside the table"
        for name, (data, mtime) in self.before.items():
            assert after[name][0] == data, f"{what}: {name} outside the table was modified"
            assert after[name][1] == mtime, f"{what}: {name} outside the table was rewritten"


@pytest.fixture
def scene(tmp_path: Path) -> Scene:
    return Scene(tmp_path)


def _explorer_data(root: str) -> None:
    pytest.importorskip("polars")
    from deltaexplore.widgets.views import TableView

    view = TableView(dx.open_table(root))
    view.overview()
    view.overview(stage=2)
    view.history()
    view.commit_detail(view.version)
    view.files()
    view.layout(view.default_layout_column())
    view.deletion_vectors()
    view.diff(0, view.version)
    view.health()


def _inspect_all(root: str) -> None:
    t = dx.open_table(root)
    for fn in (
        dxi.overview,
        dxi.files,
        dxi.partitions,
        dxi.layout_summary,
        dxi.deletion_vectors,
        lambda x: dxi.dv_files(x, check_files=True),
        dxi.log_health,
        dxi.log_files,
        dxi.history,
        lambda x: dxi.commits(x, checkpoints=True),
        dxi.reconstructable_versions,
        lambda x: dxi.reconstructable_versions(x, vacuum_retention_hours=0),
        lambda x: dxi.vacuum_preview(x, retention_hours=0),
        dxi.vacuum_preview,
        dxi.features,
        dxi.compatibility,
        lambda x: dxi.diff(x, 0),
        lambda x: dxi.diff_files(x, 0),
        lambda x: dxi.diff_rows(x, 1),
        lambda x: dxi.layout(x, "id"),
        lambda x: dxi.explain(x, "id > 3"),
        dxi.column_mapping,
        dxi.row_tracking,
    ):
        fn(t)


def _reads(root: str) -> None:
    t = dx.open_table(root)
    t.history()
    snap = t.snapshot()
    snap.files()
    snap.file_stats()
    snap.to_arrow()
    t.snapshot(0).to_arrow()
    t.changes(0)
    snap.validate_crc()


OPERATIONS: dict[str, Callable[[str], Any]] = {
    "append": lambda r: write_table(r, sample(4, 300), partition_by=["part"]),
    "append into the linked partition": lambda r: write_table(
        r, pa.table({"id": [1], "part": ["z"], "value": ["x"]}), partition_by=["part"]
    ),
    "overwrite": lambda r: write_table(r, sample(4, 400), mode="overwrite"),
    "delete with DVs": lambda r: delete(r, "id < 5"),
    "delete by rewrite": lambda r: delete(r, "id < 5", use_deletion_vectors=False),
    "delete a partition": lambda r: delete(r, "part = 'a'"),
    "update": lambda r: update(r, {"value": "'changed'"}, "id > 2"),
    "optimize": optimize,
    "optimize z-order": lambda r: optimize(r, zorder_by=["id"]),
    "purge DVs": purge_deletion_vectors,
    "vacuum dry run": lambda r: vacuum(r, retention_hours=0, enforce_retention_duration=False),
    "vacuum": lambda r: vacuum(r, dry_run=False),
    "vacuum retention 0": lambda r: vacuum(r, retention_hours=0, enforce_retention_duration=False, dry_run=False),
    "restore": lambda r: restore(r, version=0),
    "checkpoint": checkpoint,
    "log cleanup": lambda r: (checkpoint(r), cleanup_metadata(r)),
    "reads": _reads,
    "inspect": _inspect_all,
    "explorer data": _explorer_data,
}


@pytest.mark.parametrize("operation", list(OPERATIONS))
def test_operations_leave_everything_outside_alone(scene: Scene, operation: str) -> None:
    root = str(scene.root)
    try:
        OPERATIONS[operation](root)
    except dx.DeltaExploreError:
        pass  # refusing is fine (e.g. a write into a partition directory that leads outside)
    scene.check_outside_untouched(operation)
    assert (scene.root / "linkdir").is_symlink() and (scene.root / "part=z").is_symlink()
    # the table is still whole
    dx.open_table(root).snapshot().to_arrow()


def test_a_write_through_a_linked_partition_directory_is_refused(scene: Scene) -> None:
    with pytest.raises(dx.StorageError, match="outside the table root"):
        write_table(str(scene.root), pa.table({"id": [1], "part": ["z"], "value": ["x"]}), partition_by=["part"])
    assert dx.open_table(str(scene.root)).latest_version() == 2
    scene.check_outside_untouched("write")


def test_vacuum_deletes_inside_only(scene: Scene) -> None:
    plan = plan_vacuum(dx.open_table(str(scene.root)), retention_hours=0, enforce_retention_duration=False)
    planned = set(plan.files.column("path").to_pylist())
    assert "orphan.parquet" in planned and "link.parquet" in planned
    assert not any(p.startswith(("linkdir/", "part=z/")) for p in planned)
    vacuum(str(scene.root), retention_hours=0, enforce_retention_duration=False, dry_run=False)
    assert not (scene.root / "orphan.parquet").exists()
    assert not (scene.root / "link.parquet").is_symlink()  # the link went, its target stayed
    scene.check_outside_untouched("vacuum")
    assert dx.open_table(str(scene.root)).snapshot().to_arrow().num_rows == 29


def test_listing_never_follows_directory_symlinks(scene: Scene) -> None:
    storage = dx.open_table(str(scene.root)).storage
    listed = storage.list_tree().column("path").to_pylist()
    assert "link.parquet" in listed and "orphan.parquet" in listed
    assert not any(p.startswith(("linkdir/", "part=z/")) for p in listed)
    assert storage.list_tree("linkdir").num_rows == 0
    assert not storage.contains("linkdir/secret.txt") and not storage.contains("link.parquet")
    assert not storage.contains(str(scene.outside / "sentinel.parquet")) and storage.contains("orphan.parquet")
    fs_storage = dx.open_table(scene.root.as_uri(), {"auto_mkdir": True}).storage  # fsspec's local filesystem
    assert sorted(fs_storage.list_tree().column("path").to_pylist()) == sorted(listed)
    assert not fs_storage.contains("linkdir/secret.txt")


# -- hostile logs -----------------------------------------------------------------------------------


def _commit(root: Path, actions: list[dict[str, Any]]) -> int:
    log = root / "_delta_log"
    version = max(int(p.name[:20]) for p in log.glob("*.json") if p.name[:20].isdigit()) + 1
    info = {"commitInfo": {"timestamp": int(time.time() * 1000), "operation": "WRITE"}}
    (log / f"{version:020d}.json").write_text("\n".join(json.dumps(a) for a in [info, *actions]) + "\n")
    return version


def _an_add(root: Path) -> dict[str, Any]:
    adds = dx.open_table(str(root)).snapshot().add_actions().to_pylist()
    add = next(a for a in adds if a["deletionVector"] is None)
    add["partitionValues"] = dict(add["partitionValues"])
    return {k: v for k, v in add.items() if v is not None}


def test_relative_dv_climbing_out_of_the_table_is_refused(scene: Scene) -> None:
    add = _an_add(scene.root)
    dv = {"storageType": "u", "pathOrInlineDv": f"../../../outside/{scene.dv_z85}", **scene.dv_desc}
    _commit(scene.root, [{"remove": {"path": add["path"], "dataChange": True}}, {"add": {**add, "deletionVector": dv}}])
    table = dx.open_table(str(scene.root))
    with pytest.raises(dx.DeletionVectorError, match=r"outside|escapes"):
        table.snapshot().to_arrow()
    with pytest.raises(dx.DeltaExploreError):
        dxi.deleted_rows(table, add["path"])
    vacuum(str(scene.root), retention_hours=0, enforce_retention_duration=False, dry_run=False)
    scene.check_outside_untouched("hostile DV")


def _v2_json_checkpoint(root: Path) -> tuple[Path, dict[str, Any]]:
    """Turn the table into a V2 one with a JSON checkpoint and one sidecar: (checkpoint, its
    sidecar action)."""
    from deltaexplore.core.operations import set_table_properties

    set_table_properties(str(root), {"delta.checkpointPolicy": "v2"})
    from deltaexplore.core.write.checkpoint_writer import write_checkpoint

    result = write_checkpoint(dx.open_table(str(root)), v2_format="json")
    top = root / result.path
    lines = [json.loads(line) for line in top.read_text().splitlines()]
    return top, next(x["sidecar"] for x in lines if "sidecar" in x)


def _set_sidecar_path(top: Path, path: str) -> None:
    lines = [json.loads(line) for line in top.read_text().splitlines()]
    for x in lines:
        if "sidecar" in x:
            x["sidecar"]["path"] = path
    top.write_text("\n".join(json.dumps(x) for x in lines) + "\n")


@pytest.mark.parametrize("how", ["../ from the table", "../ from _sidecars", "absolute", "file URI", "table-relative"])
def test_sidecars_resolve_under_the_sidecar_directory_only(scene: Scene, how: str) -> None:
    top, sidecar = _v2_json_checkpoint(scene.root)
    real = scene.root / "_delta_log" / "_sidecars" / sidecar["path"]
    shutil.copy(real, scene.outside / "sc.parquet")  # a valid sidecar, outside
    scene.before = _snapshot_dir(scene.outside)
    path = {
        "../ from the table": "../../../outside/sc.parquet",
        "../ from _sidecars": "../../../../../outside/sc.parquet",
        "absolute": str(scene.outside / "sc.parquet"),
        "file URI": (scene.outside / "sc.parquet").as_uri(),
        "table-relative": f"_delta_log/_sidecars/{sidecar['path']}",  # not a name in _sidecars/
    }[how]
    _set_sidecar_path(top, path)
    table = dx.open_table(str(scene.root))
    with pytest.raises(dx.InvalidCheckpointError):
        table.snapshot().files()
    with pytest.raises(dx.InvalidCheckpointError):
        vacuum(str(scene.root), retention_hours=0, enforce_retention_duration=False, dry_run=False)
    scene.check_outside_untouched(f"sidecar {how}")


def test_a_sidecar_that_is_not_a_sidecar_stops_vacuum(scene: Scene) -> None:
    _top, sidecar = _v2_json_checkpoint(scene.root)
    before = sorted(p.name for p in scene.root.rglob("*.parquet") if "_delta_log" not in p.parts)
    real = scene.root / "_delta_log" / "_sidecars" / sidecar["path"]
    pq.write_table(sample(3), real)  # a data file where the sidecar should be
    table = dx.open_table(str(scene.root))
    with pytest.raises(dx.InvalidCheckpointError, match=sidecar["path"]):
        table.snapshot().files()
    with pytest.raises(dx.InvalidCheckpointError):
        vacuum(str(scene.root), retention_hours=0, enforce_retention_duration=False, dry_run=False)
    with pytest.raises(dx.InvalidCheckpointError):
        dxi.vacuum_preview(table, retention_hours=0)
    after = sorted(p.name for p in scene.root.rglob("*.parquet") if "_delta_log" not in p.parts)
    assert after == before


@pytest.mark.parametrize("form", ["absolute", "file URI"])
def test_absolute_data_paths_are_read_but_never_copied_or_deleted(scene: Scene, form: str) -> None:
    target = scene.outside / "sentinel.parquet"
    path = str(target) if form == "absolute" else target.as_uri()
    size = target.stat().st_size
    add = {"path": path, "partitionValues": {"part": "a"}, "size": size, "modificationTime": 0, "dataChange": True}
    _commit(scene.root, [{"add": {**add, "stats": json.dumps({"numRecords": 4})}}])
    root = str(scene.root)
    ids = dx.open_table(root).snapshot().to_arrow().column("id").to_pylist()
    assert {1000, 1001, 1002, 1003} <= set(ids)  # read, as the protocol says

    def outside_rows_in_table() -> int:
        """Rows with the sentinel's ids in files under the table root."""
        snap = dx.open_table(root).snapshot()
        local = [p for p in snap.add_actions().column("path").to_pylist() if "://" not in p and not p.startswith("/")]
        return sum(sum(1 for i in pq.read_table(scene.root / p).column("id").to_pylist() if i >= 1000) for p in local)

    from deltaexplore.core.operations import set_table_properties

    refused = []
    for what, run in [
        ("optimize", lambda: optimize(root)),
        ("optimize z-order", lambda: optimize(root, zorder_by=["id"])),
        ("delete with change data", lambda: delete(root, "id = 1001")),  # would copy the rows to _change_data
        ("no change data", lambda: set_table_properties(root, {"delta.enableChangeDataFeed": "false"})),
        ("delete with DVs", lambda: delete(root, "id = 1001")),
        ("purge DVs", lambda: purge_deletion_vectors(root)),
        ("delete by rewrite", lambda: delete(root, "id = 1002", use_deletion_vectors=False)),
        ("update", lambda: update(root, {"value": "'x'"}, "id = 1000")),
        ("vacuum", lambda: vacuum(root, retention_hours=0, enforce_retention_duration=False, dry_run=False)),
    ]:
        try:
            run()
        except dx.WriteRefusedError as exc:
            assert "outside the table root" in str(exc), f"{what}: {exc}"
            refused.append(what)
        assert outside_rows_in_table() == 0, f"{what} copied rows of a file outside the table into it"
        scene.check_outside_untouched(what)
    assert refused == ["delete with change data", "delete by rewrite", "update"]
    ids = dx.open_table(root).snapshot().to_arrow().column("id").to_pylist()
    assert {1000, 1002, 1003} <= set(ids) and 1001 not in ids  # the DV delete applied, nothing else changed
    adds = dx.open_table(root).snapshot().add_actions().to_pylist()
    assert [a["deletionVector"]["cardinality"] for a in adds if a["path"] == path] == [1]  # still outside, with its DV


@pytest.mark.parametrize("form", ["absolute", "file URI", "URL-encoded name"])
def test_a_sidecar_named_by_its_own_location_is_read(scene: Scene, form: str) -> None:
    top, sidecar = _v2_json_checkpoint(scene.root)
    real = scene.root / "_delta_log" / "_sidecars" / sidecar["path"]
    path = {"absolute": str(real), "file URI": real.as_uri(), "URL-encoded name": sidecar["path"].replace("-", "%2D")}[form]
    _set_sidecar_path(top, path)
    expected = dx.open_table(str(scene.root)).snapshot(2).to_arrow().num_rows
    assert dx.open_table(str(scene.root)).snapshot().to_arrow().num_rows == expected


def _drop_sidecar_rows(top: Path) -> None:
    t = pq.read_table(top)
    pq.write_table(t.filter(pa.compute.is_null(t.column("sidecar"))), top)


def _drop_add_rows(top: Path) -> None:
    t = pq.read_table(top)
    pq.write_table(t.filter(pa.compute.is_null(t.column("add"))), top)


def _drop_add_column(top: Path) -> None:
    pq.write_table(pq.read_table(top).drop_columns(["add"]), top)


def _drop_sidecar_lines(top: Path) -> None:
    top.write_text("".join(line + "\n" for line in top.read_text().splitlines() if '"sidecar"' not in line))


@pytest.mark.parametrize(
    ("kind", "damage"),
    [
        ("classic", _drop_add_rows),
        ("classic", _drop_add_column),
        ("v2-parquet", _drop_sidecar_rows),
        ("v2-json", _drop_sidecar_lines),
    ],
)
@pytest.mark.parametrize("record", [".crc", "_last_checkpoint"])
def test_a_checkpoint_that_reads_as_fewer_files_than_written_stops_vacuum(
    tmp_path: Path, kind: str, damage: Callable[[Path], None], record: str
) -> None:
    """A checkpoint of the right shape that lost its file actions reads as a table without
    files; VACUUM would delete all the data. What the log recorded when the version was written
    (its `.crc`, `_last_checkpoint`'s `numOfAddFiles`) tells: VACUUM and its preview refuse."""
    from deltaexplore.core.write.checkpoint_writer import write_checkpoint

    root = tmp_path / "t"
    conf = {"delta.checkpointPolicy": "v2"} if kind != "classic" else None
    write_table(str(root), sample(8), partition_by=["part"], configuration=conf)
    write_table(str(root), sample(8, 100), partition_by=["part"])
    result = write_checkpoint(dx.open_table(str(root)), v2_format="json" if kind == "v2-json" else "parquet")
    top = root / result.path
    damage(top)
    log = root / "_delta_log"
    (log / ("_last_checkpoint" if record == ".crc" else f"{1:020d}.crc")).unlink()  # only one record left
    for p in root.rglob("*"):
        _backdate(p, 30)
    data = sorted(p for p in root.rglob("*.parquet") if "_delta_log" not in p.parts)
    assert len(data) == 4
    table = dx.open_table(str(root))
    assert table.snapshot().files().num_rows == 0  # the damage: it reads as a table without files
    with pytest.raises(dx.InvalidCheckpointError, match=top.name):
        vacuum(str(root), retention_hours=0, enforce_retention_duration=False, dry_run=False)
    with pytest.raises(dx.InvalidCheckpointError, match=record.lstrip("_")):
        dxi.vacuum_preview(table, retention_hours=0)
    assert sorted(p for p in root.rglob("*.parquet") if "_delta_log" not in p.parts) == data
    write_table(str(root), sample(2, 900), partition_by=["part"])  # a commit after the checkpoint
    with pytest.raises(dx.InvalidCheckpointError, match=top.name):
        vacuum(str(root), retention_hours=0, enforce_retention_duration=False, dry_run=False)
    assert all(p.exists() for p in data)


def test_a_commit_only_state_that_disagrees_with_its_crc_stops_vacuum(tmp_path: Path) -> None:
    root = tmp_path / "t"
    write_table(str(root), sample(8), partition_by=["part"])
    commit = root / "_delta_log" / f"{0:020d}.json"
    commit.write_text("".join(line + "\n" for line in commit.read_text().splitlines() if '"add"' not in line))
    for p in root.rglob("*"):
        _backdate(p, 30)
    with pytest.raises(dx.InvalidLogError, match=f"{0:020d}.crc"):
        vacuum(str(root), retention_hours=0, enforce_retention_duration=False, dry_run=False)
    assert len([p for p in root.rglob("*.parquet") if "_delta_log" not in p.parts]) == 2


def test_log_cleanup_leaves_a_linked_sidecar_directory_alone(tmp_path: Path) -> None:
    """A `_delta_log/_sidecars` that is a symlink out of the table: log cleanup still cleans the
    log (no error) and deletes nothing through the link."""
    root = tmp_path / "t"
    for i in range(4):
        write_table(str(root), pa.table({"a": [i]}), mode="append" if i else "error")
    checkpoint(dx.open_table(str(root)))
    write_table(str(root), pa.table({"a": [9]}), mode="append")
    outside = tmp_path / "outside"
    outside.mkdir()
    sentinel = outside / "old.parquet"
    sentinel.write_bytes(b"not the table's")
    os.utime(sentinel, (0, 0))
    (root / "_delta_log" / "_sidecars").symlink_to(outside, target_is_directory=True)
    out = cleanup_log(dx.open_table(str(root)), retention_ms=0, now_ms=int(time.time() * 1000) + 10**9).to_pylist()[0]
    assert out["checkpoint_version"] == 3 and out["num_files"] > 0
    assert all(not f.startswith("_delta_log/_sidecars") for f in out["files"])
    assert sentinel.read_bytes() == b"not the table's"
    assert dx.open_table(str(root)).snapshot().to_arrow().num_rows == 5
