"""No work left behind: files of a commit that lost (data, change data, deletion vectors) are
removed, temporary files a killed writer left in the log go at the next commit or log cleanup,
and a second checkpoint of a version that has one writes nothing."""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import pytest
from write_helpers import sample

import deltaexplore as dx
from deltaexplore.core.operations import checkpoint, cleanup_metadata, delete, update, write_table
from deltaexplore.core.write.transaction import Transaction

DV = {"delta.enableDeletionVectors": "true"}
CDF = {"delta.enableChangeDataFeed": "true"}


def _files(root: Path) -> set[str]:
    """Every file under the table root outside `_delta_log`."""
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and "_delta_log" not in p.parts}


def _referenced(root: Path) -> set[str]:
    """Data, change data and DV files any version of the table refers to."""
    table = dx.open_table(str(root))
    out: set[str] = set()
    for v in table.versions():
        lines = table.snapshot(v).json_lines
        for kind in ("add", "remove", "cdc"):
            out |= set(lines.file_actions(kind).column("path").to_pylist())
        for a in table.snapshot(v).add_actions().to_pylist():
            dv = a["deletionVector"]
            if dv and dv["storageType"] == "u":
                from deltaexplore.core.protocol.deletion_vectors import DeletionVectorDescriptor

                path = DeletionVectorDescriptor.from_dict(dv).file_path()
                assert path is not None
                out.add(path)
    return out


def _lose_the_race(monkeypatch: pytest.MonkeyPatch, root: Path) -> None:
    """Make the next commit lose to a DELETE of every row (a conflicting winner)."""
    original = Transaction.commit

    def commit(self: Transaction, **kw: object) -> object:
        monkeypatch.setattr(Transaction, "commit", original)
        delete(str(root), "id >= 0", use_deletion_vectors=False)  # the winner removes every file
        return original(self, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(Transaction, "commit", commit)


@pytest.mark.parametrize(
    ("configuration", "kwargs"),
    [
        (DV, {}),  # a deletion vector file
        ({**DV, **CDF}, {}),  # a deletion vector file and change data
        (CDF, {"use_deletion_vectors": False}),  # rewritten files and change data
    ],
)
def test_a_delete_that_loses_its_commit_leaves_no_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, configuration: dict, kwargs: dict
) -> None:
    root = tmp_path / "t"
    write_table(str(root), sample(10), partition_by=["part"], configuration=configuration, max_rows_per_file=5)
    _lose_the_race(monkeypatch, root)
    with pytest.raises(dx.CommitConflictError):
        delete(str(root), "id = 2", **kwargs)
    assert _files(root) <= _referenced(root)  # nothing written by the loser is left
    assert dx.open_table(str(root)).snapshot().to_arrow().num_rows == 0


@pytest.mark.parametrize("configuration", [DV, {**DV, **CDF}, CDF])
def test_an_update_that_loses_its_commit_leaves_no_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, configuration: dict
) -> None:
    root = tmp_path / "t"
    write_table(str(root), sample(10), partition_by=["part"], configuration=configuration, max_rows_per_file=5)
    _lose_the_race(monkeypatch, root)
    with pytest.raises(dx.CommitConflictError):
        update(str(root), {"value": "'x'"}, "id = 2")
    assert _files(root) <= _referenced(root)


def _tmp(directory: Path, name: str, age_hours: float) -> Path:
    path = directory / f".{name}.{uuid.uuid4().hex}.tmp"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"half a commit")
    t = time.time() - age_hours * 3600
    os.utime(path, (t, t))
    return path


def test_the_next_commit_removes_temporary_files_a_killed_writer_left(tmp_path: Path) -> None:
    root = tmp_path / "t"
    write_table(str(root), sample(2))
    log = root / "_delta_log"
    old = _tmp(log, "00000000000000000001.json", 2)
    fresh = _tmp(log, "00000000000000000001.json", 0)  # a writer may be using it right now
    write_table(str(root), sample(2, 10))
    assert not old.exists() and fresh.exists()


def test_log_cleanup_removes_temporary_files_without_a_cutoff(tmp_path: Path) -> None:
    root = tmp_path / "t"
    write_table(str(root), sample(2))
    log = root / "_delta_log"
    old = [_tmp(log, "00000000000000000001.json", 2), _tmp(log / "_sidecars", "x.parquet", 2)]
    fresh = _tmp(log, "00000000000000000001.json", 0)
    m = cleanup_metadata(str(root))
    assert m.column("checkpoint_version")[0].as_py() is None  # nothing else is expired
    assert sorted(m.column("files")[0].as_py()) == sorted(str(p.relative_to(root)) for p in old)
    assert not any(p.exists() for p in old) and fresh.exists()
    assert dx.open_table(str(root)).snapshot().to_arrow().num_rows == 2


@pytest.mark.parametrize("policy", ["classic", "v2"])
def test_a_second_checkpoint_of_a_version_writes_nothing(tmp_path: Path, policy: str) -> None:
    root = tmp_path / "t"
    conf = {"delta.checkpointPolicy": "v2"} if policy == "v2" else {}
    write_table(str(root), sample(4), configuration=conf)
    write_table(str(root), sample(4, 10))
    log = root / "_delta_log"

    def files() -> set[str]:
        return {str(p.relative_to(log)) for p in log.rglob("*") if p.is_file()}

    first = checkpoint(str(root)).to_pylist()[0]
    assert first["written"] and first["version"] == 1
    after_first = files()
    for _ in range(3):
        again = checkpoint(str(root)).to_pylist()[0]
        assert not again["written"] and again["path"] == first["path"] and again["version"] == 1
        assert again["num_add_files"] == first["num_add_files"] == 2
    assert files() == after_first
    if policy == "v2":
        assert len([f for f in after_first if ".checkpoint." in f and not f.startswith("_sidecars")]) == 1
        assert len([f for f in after_first if f.startswith("_sidecars/")]) == 1
