"""Bad input to the writer: every failure is a `DeltaExploreError` that names the problem, and
the table is left unchanged."""

from __future__ import annotations

import pyarrow as pa
import pytest
from write_helpers import sample

import deltaexplore as dx
from deltaexplore.core.operations import delete, optimize, restore, vacuum, write_table
from deltaexplore.core.write.checkpoint_writer import write_checkpoint
from deltaexplore.core.write.transaction import Transaction


@pytest.fixture
def root(tmp_path):
    path = str(tmp_path / "t")
    write_table(path, sample(4))
    return path


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda r: write_table(r, 42), "cannot write int"),
        (lambda r: write_table(r, sample(1), mode="upsert"), "mode must be"),
        (lambda r: write_table(r, sample(1), schema_mode="rename"), "schema_mode"),
        (lambda r: write_table(r, sample(1), app_id="x"), "app_version"),
        (lambda r: write_table(r, pa.table({"id": pa.array([1], pa.uint64())})), "no Delta equivalent"),
        (lambda r: write_table(r, pa.table({"t": pa.array([1], pa.time64("us"))}), schema_mode="merge"), "no Delta equivalent"),
        (lambda r: delete(r, "id >"), "cannot (parse|evaluate)"),
        (lambda r: delete(r, "nope = 1"), "nope"),
        (lambda r: optimize(r, target_size=-1), "positive"),
        (lambda r: optimize(r, target_size="big"), "target_size must be a whole number, got 'big'"),
        (lambda r: vacuum(r, retention_hours="x"), "retention_hours must be a number, got 'x'"),
        (lambda r: optimize(r, zorder_by=["missing"]), "missing"),
        (restore, "exactly one"),
        (lambda r: restore(r, version=99), "99"),
        (lambda r: vacuum(r, retention_hours=-1, enforce_retention_duration=False), "negative"),
        (lambda r: write_checkpoint(dx.open_table(r), kind="v3"), "kind"),
        (lambda r: write_checkpoint(dx.open_table(r), kind="v2"), "v2Checkpoint"),
        (lambda r: Transaction(r, operation="WRITE", isolation="Chaos"), "isolation"),
        (lambda r: Transaction(r, operation=""), "operation"),
        (lambda r: Transaction(r, operation="WRITE").add_files([{"size": 1}]), "path"),
        (lambda r: Transaction(r, operation="WRITE").add_files([{"path": "a", "size": "big"}]), "wrong type"),
        (lambda r: Transaction(r, operation="WRITE").add_files(["a.parquet"]), "dicts"),
        (lambda r: Transaction(r, operation="WRITE").set_app_transaction("", 1), "app id"),
    ],
)
def test_refused_with_a_clear_error(root, call, match):
    with pytest.raises(dx.DeltaExploreError, match=match):
        call(root)
    assert dx.open_table(root).latest_version() == 0


def test_write_into_a_file_location(tmp_path):
    target = tmp_path / "file"
    target.write_text("not a directory")
    with pytest.raises(dx.DeltaExploreError):
        write_table(str(target), sample(1))
    assert target.read_text() == "not a directory"


def test_refused_write_leaves_no_data_files(tmp_path):
    root = tmp_path / "t"
    write_table(str(root), sample(2), configuration={"delta.constraints.small": "id < 100"})
    before = sorted(p.name for p in root.glob("*.parquet"))
    with pytest.raises(dx.WriteRefusedError):
        write_table(str(root), sample(1, 500))
    assert sorted(p.name for p in root.glob("*.parquet")) == before


def test_commits_refused_where_create_is_not_atomic(tmp_path):
    """fsspec's generic create checks then writes: commits there could overwrite a concurrent
    writer's, so they are refused (before any data file is written) unless the user says
    only one writer commits; reading is unaffected; memory:// (and s3://, tests/test_s3.py)
    commit as usual."""
    import os

    local = tmp_path / "t"
    uri = f"file://{local}"
    with pytest.raises(dx.StorageError, match="allow_unsafe_commits"):
        write_table(uri, sample(3), storage_options={"auto_mkdir": True})
    assert not local.exists() or not any(os.scandir(local))  # nothing written at all
    write_table(uri, sample(3), storage_options={"auto_mkdir": True, "allow_unsafe_commits": True})
    assert dx.open_table(uri, storage_options={"auto_mkdir": True}).snapshot().to_arrow().num_rows == 3
    with pytest.raises(dx.StorageError, match="not known to be atomic"):
        delete(uri, "id > 0", storage_options={"auto_mkdir": True})
    assert dx.open_table(str(local)).latest_version() == 0
    write_table("memory://atomic-ok/t", sample(2))
    assert dx.open_table("memory://atomic-ok/t").snapshot().to_arrow().num_rows == 2
