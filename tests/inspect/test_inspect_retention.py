"""reconstructable_versions / vacuum_preview: files removed from storage, cleaned-up logs, gaps."""

from __future__ import annotations

import os
import shutil
import time

import pytest
from inspect_tables import build_history_table

import deltaexplore as dx
from deltaexplore.inspect import reconstructable_versions, vacuum_preview
from deltaexplore.inspect.errors import InspectError
from deltaexplore.inspect.schemas import VACUUM_SCHEMA, VERSIONS_SCHEMA


@pytest.fixture
def hist(tmp_path):
    build_history_table(tmp_path)
    return tmp_path, dx.open_table(str(tmp_path))


def test_all_versions_readable(hist):
    _, t = hist
    r = reconstructable_versions(t)
    assert r.schema == VERSIONS_SCHEMA
    assert r.column("version").to_pylist() == [0, 1, 2, 3]
    assert r.column("readable").to_pylist() == [True] * 4
    assert r.column("files").to_pylist() == [2, 2, 3, 3]  # v2: b and its DV file; c
    assert r.column("missing_files").to_pylist() == [0, 0, 0, 0]
    assert r.column("readable_after_vacuum").to_pylist() == [None] * 4


def test_missing_data_file_breaks_old_versions(hist):
    root, t = hist
    os.unlink(root / "a.parquet")  # removed at v1: only versions 0 needs it
    r = {row["version"]: row for row in reconstructable_versions(t).to_pylist()}
    assert (r[0]["readable"], r[0]["missing_files"]) == (False, 1)
    assert "1 data/DV files" in r[0]["reason"]
    assert all(r[v]["readable"] for v in (1, 2, 3))
    os.unlink(root / "dv1.bin")  # the DV file of b from v2 on
    r = {row["version"]: row for row in reconstructable_versions(t).to_pylist()}
    assert [r[v]["readable"] for v in range(4)] == [False, True, False, False]


def test_vacuum_preview_and_its_effect(hist):
    root, t = hist
    orphan = root / "orphan.parquet"
    orphan.write_bytes(b"x" * 7)
    hidden = root / "_tmp" / "x.parquet"
    hidden.parent.mkdir()
    hidden.write_bytes(b"y")
    old = time.time() - 30 * 86400
    for f in (orphan, hidden, root / "a.parquet"):
        os.utime(f, (old, old))
    v = vacuum_preview(t, retention_hours=0)
    assert v.schema == VACUUM_SCHEMA
    rows = {r["path"]: r for r in v.to_pylist()}
    assert set(rows) == {"a.parquet", "orphan.parquet"}  # hidden _tmp is left alone; b and c are active
    assert rows["a.parquet"]["reason"] == "expired_tombstone"
    assert (rows["a.parquet"]["first_version_needing"], rows["a.parquet"]["last_version_needing"]) == (0, 0)
    assert rows["orphan.parquet"]["reason"] == "unreferenced" and rows["orphan.parquet"]["size"] == 7
    assert rows["orphan.parquet"]["last_version_needing"] is None
    # a week of retention: the tombstone (2023) and both files are older
    assert set(vacuum_preview(t).column("path").to_pylist()) == {"a.parquet", "orphan.parquet"}
    # as Delta: a file modified inside the retention is kept whatever its tombstone says
    os.utime(root / "a.parquet", None)
    assert set(vacuum_preview(t).column("path").to_pylist()) == {"orphan.parquet"}
    os.utime(root / "a.parquet", (old, old))
    # a fresh orphan is protected by the retention
    os.utime(orphan, None)
    assert set(vacuum_preview(t, retention_hours=24).column("path").to_pylist()) == {"a.parquet"}
    r = reconstructable_versions(t, vacuum_retention_hours=0).column("readable_after_vacuum").to_pylist()
    assert r == [False, True, True, True]
    with pytest.raises(InspectError):
        vacuum_preview(t, retention_hours=-1)


def test_own_plan_matches_the_core_plan(hist):
    """The fallback used for tables the core refuses to vacuum applies the same rules."""
    import polars as pl

    from deltaexplore.inspect.retention import _core_plan, _own_plan

    root, t = hist
    old = time.time() - 30 * 86400
    (root / "orphan.parquet").write_bytes(b"x")
    for f in ("orphan.parquet", "a.parquet"):
        os.utime(root / f, (old, old))
    snap = t.snapshot()
    tombs = pl.DataFrame({"path": ["a.parquet"], "deletion_time": [1_700_000_000_000]})
    for hours in (0, 24 * 7, 24 * 365 * 10):
        cutoff = int(time.time() * 1000) - int(hours * 3_600_000)
        own = set(_own_plan(snap, tombs, cutoff).get_column("path").to_list())
        core = set(_core_plan(t, hours).column("path").to_pylist())
        assert own == core, hours


def test_cleaned_up_log_and_gaps(corpus, tmp_path):
    src = corpus / "delta-kernel-java" / "basic-dv-with-checkpoint"
    dst = tmp_path / "t"
    shutil.copytree(src, dst)
    for v in range(0, 10):
        (dst / "_delta_log" / f"{v:020d}.json").unlink()
    (dst / "_delta_log" / f"{25:020d}.json").unlink()  # a gap between checkpoints 20 and 30
    t = dx.open_table(str(dst))
    r = {row["version"]: row for row in reconstructable_versions(t, check_data=False).to_pylist()}
    assert min(r) == 10 and r[10]["checkpoint"] and r[10]["log_reconstructable"]
    assert [r[v]["log_reconstructable"] for v in (24, 26, 29, 30, 31)] == [True, False, False, True, True]
    assert r[26]["readable"] is False and "cannot be reconstructed" in r[26]["reason"]
    assert r[26]["missing_files"] is None and r[10]["missing_files"] is None  # not checked


@pytest.mark.corpus
def test_corpus_version_gap_table(corpus):
    t = dx.open_table(str(corpus / "delta-golden" / "versions-not-contiguous"))
    r = reconstructable_versions(t, check_data=False).to_pylist()
    assert [(x["version"], x["log_reconstructable"]) for x in r] == [(0, True), (2, False)]
