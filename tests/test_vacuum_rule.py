"""One VACUUM rule: the operation (`plan_vacuum`), the preview (`inspect.vacuum_preview`) and the
preview's own plan for tables the core refuses to vacuum pick the same files, on a table whose
directories look like partitions, hide things, or are our own temporary files."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "write"))

from write_helpers import sample

import deltaexplore as dx
from deltaexplore import inspect as dxi
from deltaexplore.core.operations import vacuum, write_table
from deltaexplore.core.operations.vacuum import plan_vacuum, vacuumable
from deltaexplore.inspect import retention

#: orphan files put into the table, and whether VACUUM may delete them
ORPHANS = {
    "orphan.parquet": True,
    "part=a/orphan.parquet": True,
    "x=1/orphan.parquet": True,  # looks like a partition, is not one, is not hidden either
    "_p=1/orphan.parquet": True,  # `_p` is a partition column: its directories are not hidden
    "_p=1/part=b/orphan.parquet": True,
    "_x=1/orphan.parquet": False,  # partition-like but `_x` is no partition column: hidden
    "_hidden/orphan.parquet": False,
    ".hidden/orphan.parquet": False,
    "part=a/_tmp/orphan.parquet": False,
    "part=a/.orphan.parquet": False,
    "_orphan.parquet": False,
    "_change_data/orphan.parquet": True,
    "_delta_index/orphan.idx": True,
    "metadata/v1.metadata.json": False,  # Iceberg metadata of UniForm tables
    "part=a/.part-1.parquet.0123456789abcdef0123456789abcdef.tmp": True,  # our killed write's temp file
    "_delta_log/orphan.json": False,
}


@pytest.fixture
def table(tmp_path: Path) -> str:
    root = tmp_path / "t"
    data = sample(8).append_column("_p", pa.array(["1", "2"] * 4))
    write_table(str(root), data, partition_by=["_p", "part"])
    write_table(str(root), data, mode="overwrite")  # tombstones: expired files to delete too
    for rel in ORPHANS:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"orphan")
    old = time.time() - 30 * 86400
    for p in root.rglob("*"):
        os.utime(p, (old, old))
    return str(root)


def test_the_rule_itself() -> None:
    paths = list(ORPHANS)
    assert dict(zip(paths, vacuumable(paths, ["_p", "part"]).tolist())) == ORPHANS
    assert vacuumable([]).tolist() == []


def test_operation_preview_and_own_plan_pick_the_same_files(table: str, monkeypatch: pytest.MonkeyPatch) -> None:
    t = dx.open_table(table)
    expired = {p for p in t.snapshot(0).add_actions().column("path").to_pylist()}
    expected = {p for p, ok in ORPHANS.items() if ok} | expired
    planned = set(plan_vacuum(t, retention_hours=0, enforce_retention_duration=False).files.column("path").to_pylist())
    assert planned == expected
    previewed = set(dxi.vacuum_preview(t, retention_hours=0).column("path").to_pylist())
    assert previewed == expected
    monkeypatch.setattr(retention, "_core_plan", lambda *a, **k: None)  # as for a table the core refuses
    own = set(dxi.vacuum_preview(t, retention_hours=0).column("path").to_pylist())
    assert own == expected
    done = vacuum(table, retention_hours=0, enforce_retention_duration=False, dry_run=False)
    assert set(done.column("files")[0].as_py()) == expected
    root = Path(table)
    assert all((root / p).exists() != ok for p, ok in ORPHANS.items())
    assert dx.open_table(table).snapshot().to_arrow().num_rows == 8


def test_relative_paths_equal_the_one_by_one_rule(tmp_path: Path) -> None:
    """`relative_paths` (plain paths as they are, vectorised) gives `_relative` of every path:
    escapes, dot parts, empty parts, absolute paths inside and outside the table, null."""
    from deltaexplore.core.operations.vacuum import _relative, relative_paths

    root = tmp_path / "t"
    write_table(str(root), sample(4))
    storage = dx.open_table(str(root)).storage
    raw = [
        "a.parquet",
        "p=1/a.parquet",
        "p=a%20b/x.parquet",
        "./a.parquet",
        "p=1/../a.parquet",
        "p=1//a.parquet",
        "p=1/",
        "",
        None,
        ".hidden/a.parquet",
        "a..parquet",
        "..",
        f"{root.as_posix()}/in/a.parquet",
        f"file://{root.as_posix()}/in/b.parquet",
        "/elsewhere/c.parquet",
        "s3://bucket/d.parquet",
    ]
    got = relative_paths(storage, pa.array(raw, pa.string())).to_pylist()
    assert got == [_relative(storage, x) for x in raw]
    assert got[0] == "a.parquet" and got[12] == "in/a.parquet" and got[14] is None
