"""`stepped_totals`: a version's overview totals from a neighbouring version's streaming pass and
the commits in between equal a pass of that version, on every corpus table (every version, from
the latest and from a middle version) and on tables written while read (appends, deletes with
and without deletion vectors, updates, OPTIMIZE, a checkpoint between, removes without fields)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pyarrow as pa
import pytest
from corpus_paths import CORPUS, corpus_catalog

import deltaexplore as dx
from deltaexplore.core import operations as ops
from deltaexplore.inspect.stepped_totals import stepped_totals
from deltaexplore.inspect.streaming import file_pass

TABLES = [t for t in corpus_catalog() if t.get("is_table", True) and t["status"] in ("ok", "log-only", "special")]


def _check_from(root: str, base_version: int) -> set[int]:
    """Every version's stepped totals from the pass of `base_version` equal its own pass's
    (when a step is made); the versions stepped to."""
    table = dx.open_table(root)
    base = file_pass(table.snapshot(version=base_version), keep_file_list=True)
    made = set()
    for v in table.versions():
        try:
            snap = dx.open_table(root).snapshot(version=v)
            want = file_pass(snap).totals()
        except dx.DeltaExploreError:
            continue
        got = stepped_totals(base, snap)
        if got is not None:
            assert got == want, f"version {v} stepped from {base_version}"
            made.add(v)
    return made


@pytest.mark.corpus
@pytest.mark.parametrize("row", TABLES, ids=[t["id"] for t in TABLES])
def test_stepped_totals_equal_a_pass_on_every_corpus_version(row):
    root = str(CORPUS / row["table_root"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dx.CatalogManagedWarning)
        try:
            table = dx.open_table(root)
            latest = table.snapshot().version
            versions = table.versions() or [latest]
        except dx.DeltaExploreError:
            pytest.skip("the latest version does not read")
        for base in sorted({latest, versions[len(versions) // 2]}):
            try:
                _check_from(root, base)
            except dx.DeltaExploreError as exc:
                pytest.skip(f"version {base} does not read: {exc}")


def _remove_fields(root: str, version: int) -> None:
    """Strip the removes of commit `version` down to path, time, dataChange and deletion vector
    (the key: the spec lets the other fields go): no size, stats or partition values to step with."""
    path = Path(root) / "_delta_log" / f"{version:020d}.json"
    lines = []
    for line in path.read_text().splitlines():
        action = json.loads(line)
        if "remove" in action:
            r = action["remove"]
            action = {"remove": {k: r[k] for k in ("path", "deletionTimestamp", "dataChange", "deletionVector") if k in r}}
        lines.append(json.dumps(action))
    path.write_text("\n".join(lines) + "\n")


def test_steps_through_appends_deletes_updates_optimize_and_a_checkpoint(tmp_path: Path) -> None:
    root = str(tmp_path / "t")

    def append(ids: range, **kwargs) -> None:
        ops.write_table(root, pa.table({"id": pa.array(list(ids), pa.int64()), "part": [f"p{i % 3}" for i in ids]}), **kwargs)

    append(range(30), partition_by=["part"], configuration={"delta.enableDeletionVectors": "true"})
    append(range(30, 40))
    ops.checkpoint(root)  # version 1: later steps back reach checkpoint rows
    ops.delete(root, "id < 5")  # deletion vectors on checkpoint files
    ops.update(root, {"id": "id + 100"}, "id = 35", use_deletion_vectors=False)
    append(range(40, 45))
    ops.optimize(root)
    _remove_fields(root, dx.open_table(root).latest_version())  # OPTIMIZE's removes carry nothing
    ops.delete(root, "part = 'p2'")  # a partition empties
    append(range(60, 63))
    latest = dx.open_table(root).latest_version()
    for base in range(latest + 1):
        made = _check_from(root, base)
        # every step forward is made; back, every one to the base's checkpoint (version 1) or after
        assert made == set(range(base if base < 1 else 1, latest + 1)), base


def test_a_step_back_over_an_optimize_uses_no_remove_field(tmp_path: Path) -> None:
    """One step back over an OPTIMIZE of checkpoint files whose removes carry only their path:
    the files come back with their checkpoint rows, kept by the base pass."""
    root = str(tmp_path / "t")
    for i in range(4):
        ops.write_table(root, pa.table({"id": pa.array(range(i * 10, i * 10 + 10), pa.int64())}))
    ops.checkpoint(root)
    ops.optimize(root)
    latest = dx.open_table(root).latest_version()
    _remove_fields(root, latest)
    table = dx.open_table(root)
    base = file_pass(table.snapshot(), keep_file_list=True)
    assert base.files == 1 and sum(t.num_rows for t in base.superseded) == 4
    back = table.snapshot(version=latest - 1)
    got = stepped_totals(base, back)
    assert got == file_pass(back).totals()
    assert got is not None and got.files == 4 and got.rows == 40
    # a pass over a replayed state (its slices) keeps the replaced checkpoint rows all the same,
    # also when that state was moved there from another version
    for replayed in (dx.open_table(root).snapshot(), dx.open_table(root).snapshot(version=latest - 1)):
        replayed.add_actions()
        moved = replayed.table.snapshot_from(replayed, latest) if replayed.version != latest else replayed
        moved.add_actions()
        assert moved.files_loaded
        kept = file_pass(moved, keep_file_list=True)
        assert sum(t.num_rows for t in kept.superseded) == 4
        assert stepped_totals(kept, back) == got


def test_no_step_where_it_cannot_be_told(tmp_path: Path) -> None:
    """Back past the base's checkpoint, or without the file list, the caller makes the pass."""
    root = str(tmp_path / "t")
    for i in range(3):
        ops.write_table(root, pa.table({"id": pa.array([i], pa.int64())}))
    ops.checkpoint(root)
    ops.write_table(root, pa.table({"id": pa.array([9], pa.int64())}))
    table = dx.open_table(root)
    base = file_pass(table.snapshot(), keep_file_list=True)
    assert stepped_totals(base, table.snapshot(version=1)) is None  # before the checkpoint
    assert stepped_totals(file_pass(table.snapshot()), table.snapshot(version=2)) is None  # no file list
    assert stepped_totals(base, table.snapshot(version=2)) == file_pass(table.snapshot(version=2)).totals()


def test_steps_forward_onto_commits_written_after_the_pass(tmp_path: Path) -> None:
    """The pass is made, then the table is written while it is read (appends, a delete with
    deletion vectors, a newer checkpoint, OPTIMIZE): steps forward onto each new version, and
    back from the newest to the newer checkpoint's versions, equal a pass of that version."""
    root = str(tmp_path / "t")
    ops.write_table(
        root,
        pa.table({"id": pa.array(range(20), pa.int64()), "part": [f"p{i % 2}" for i in range(20)]}),
        partition_by=["part"],
        configuration={"delta.enableDeletionVectors": "true"},
    )
    ops.checkpoint(root)
    table = dx.open_table(root)
    base = file_pass(table.snapshot(), keep_file_list=True)
    first = base.snapshot.version
    ops.write_table(root, pa.table({"id": pa.array([100, 101], pa.int64()), "part": ["p0", "p5"]}))
    ops.delete(root, "id < 3")
    ops.checkpoint(root)  # a newer checkpoint than the base's
    ops.optimize(root)
    ops.write_table(root, pa.table({"id": pa.array([200], pa.int64()), "part": ["p1"]}))
    latest = table.snapshot().version  # the same Table, its listing refreshed
    assert latest == first + 4
    for version in range(first + 1, latest + 1):
        snap = table.snapshot(version=version)
        got = stepped_totals(base, snap)
        assert got is not None and got == file_pass(snap).totals(), version
    newest = file_pass(table.snapshot(), keep_file_list=True)
    for version in range(first + 2, latest):  # back to the newer checkpoint's versions (2, 3)
        snap = table.snapshot(version=version)
        got = stepped_totals(newest, snap)
        assert got is not None and got == file_pass(snap).totals(), version
