"""`inspect.timeline`: every version's numbers from one replay equal those of that version's
snapshot read on its own (files, bytes, rows, small files, deletion vectors, partitions, schema
and protocol changes), on every corpus table and on a table written with deletes, updates,
OPTIMIZE, a schema change, checkpoints and log cleanup."""

from __future__ import annotations

import time
import warnings
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from corpus_paths import CORPUS, corpus_catalog

import deltaexplore as dx
from deltaexplore import inspect
from deltaexplore.core import operations as ops
from deltaexplore.core.scan.stats import num_records
from deltaexplore.core.write.log_cleanup import cleanup_log
from deltaexplore.inspect.files import small_file_threshold
from deltaexplore.inspect.schemas import TIMELINE_SCHEMA

TABLES = [t for t in corpus_catalog() if t["status"] != "negative"]


def _schema(snap: dx.Snapshot) -> object:
    """The snapshot's schema, parsed when it parses (else its text): writers format it differently."""
    if not snap.has_metadata:
        return None
    try:
        return snap.metadata.schema
    except dx.DeltaExploreError:
        return snap.metadata.schema_string


def _expected(root: str, version: int, threshold: int, previous: dx.Snapshot | None) -> tuple[dict, dx.Snapshot]:
    """The timeline row of `version` computed from a cold snapshot of it alone."""
    snap = dx.open_table(root).snapshot(version=version)
    files = snap.files()
    size = [s or 0 for s in files.column("size").to_pylist()]
    known = num_records(snap.add_actions()).to_pylist()  # the one numRecords reader
    records = [r or 0 for r in known]
    deleted = [c or 0 for c in files.column("cardinality").to_pylist()]
    small = sum(1 for s in size if s < threshold)
    n = files.num_rows
    parts = {tuple(sorted((p or {}) if isinstance(p, dict) else (p or []))) for p in files.column("partition_values").to_pylist()}
    row = {
        "version": version,
        "files": n,
        "bytes": sum(size),
        # where this version's own read has no count for a file, the timeline may know it from
        # the commit that added it (a checkpoint written without stats): not compared
        "rows": sum(records) - sum(deleted) if None not in known else None,
        "small_files": small,
        "dv_files": sum(1 for c in deleted if c > 0),
        "dv_deleted_rows": sum(deleted),
        "partitions": len(parts) if snap.partition_columns else None,
        "tombstones": snap.tombstones().num_rows,
        "schema_changed": previous is not None and _schema(snap) != _schema(previous),
        "protocol_changed": previous is not None and snap.protocol != previous.protocol,
    }
    return row, snap


def _check(root: str) -> int:
    table = dx.open_table(root)
    tl = table.inspect.timeline()
    assert tl.schema == TIMELINE_SCHEMA
    threshold = small_file_threshold(table.snapshot())
    previous = None
    for got in tl.to_pylist():
        want, previous = _expected(root, got["version"], threshold, previous)
        if want["rows"] is None:
            want["rows"] = got["rows"]
        assert {k: got[k] for k in want} == want, f"version {got['version']}"
        assert got["timestamp"] == previous.timestamp
    return tl.num_rows


@pytest.mark.corpus
@pytest.mark.parametrize("entry", TABLES, ids=[t["id"] for t in TABLES])
def test_every_version_of_every_corpus_table(entry: dict) -> None:
    root = str(CORPUS / entry["table_root"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dx.CatalogManagedWarning)
        try:
            dx.open_table(root).snapshot().files()
        except dx.DeltaExploreError:
            pytest.skip("the latest version does not read")
        try:
            rows = _check(root)
        except inspect.InspectError as exc:
            pytest.skip(f"no timeline: {exc}")
    assert rows >= 1


def test_a_table_through_deletes_updates_optimize_schema_change_checkpoint_and_cleanup(tmp_path: Path) -> None:
    root = str(tmp_path / "t")

    def append(ids: range, **kwargs) -> None:
        ops.write_table(root, pa.table({"id": pa.array(list(ids), pa.int64()), "part": [f"p{i % 3}" for i in ids]}), **kwargs)

    append(range(30), partition_by=["part"], configuration={"delta.enableDeletionVectors": "true"})
    append(range(30, 40))
    ops.delete(root, "id < 5")  # deletion vectors
    ops.update(root, {"id": "id + 100"}, "id = 35", use_deletion_vectors=False)
    ops.write_table(
        root, pa.table({"id": pa.array([50], pa.int64()), "part": ["p9"], "note": ["new column"]}), schema_mode="merge"
    )
    ops.checkpoint(root)
    ops.optimize(root)
    ops.delete(root, "part = 'p9'")  # a partition empties
    assert _check(root) == dx.open_table(root).latest_version() + 1
    tl = dx.open_table(root).inspect.timeline()
    assert tl.column("schema_changed").to_pylist()[4] is True and sum(tl.column("schema_changed").to_pylist()) == 1
    assert tl.column("partitions").to_pylist()[4] == 4 and tl.column("partitions").to_pylist()[-1] == 3
    assert max(tl.column("dv_deleted_rows").to_pylist()) > 0
    # a range, and a snapshot's timeline ends at it
    assert tl.slice(2, 3).to_pylist() == dx.open_table(root).inspect.timeline(2, 4).to_pylist()
    assert dx.open_table(root).snapshot(version=3).inspect.timeline().column("version").to_pylist() == [0, 1, 2, 3]
    # the log's start cleaned up: the timeline starts at the oldest checkpoint
    ops.set_table_properties(root, {"delta.logRetentionDuration": "interval 0 seconds"})
    ops.checkpoint(root)
    cleanup_log(dx.open_table(root), retention_ms=0, now_ms=int(time.time() * 1000) + 60_000)
    append(range(60, 62))
    first = dx.open_table(root).inspect.timeline().column("version").to_pylist()[0]
    assert first > 0
    _check(root)
    with pytest.raises(inspect.InspectError):
        dx.open_table(root).inspect.timeline(0, 1)


def _timelines(root: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    """The timeline by the compiled rows and key hashes, by the plain parse (no kernel), and
    with every key hash colliding (the keys dictionary-encoded after the check); or the error."""
    import importlib

    from deltaexplore.core.scan import action_counts

    timeline_module = importlib.import_module("deltaexplore.inspect.timeline")  # the package's `timeline` is the function

    def one() -> object:
        try:
            return dx.open_table(root).inspect.timeline()
        except dx.DeltaExploreError as exc:
            return type(exc).__name__

    out = {"kernel": one()}
    with monkeypatch.context() as m:
        m.setattr(action_counts, "KERNEL", None)
        out["plain"] = one()
    with monkeypatch.context() as m:
        m.setattr(timeline_module, "key_hashes", lambda keys: np.zeros(len(keys), np.uint64))
        out["colliding"] = one()
    return out


@pytest.mark.corpus
def test_the_timeline_is_the_same_without_the_kernel_and_when_key_hashes_collide(monkeypatch, tmp_path: Path) -> None:
    """The compiled rows (`scan.action_rows`) and the hash sort of the keys give the timeline the
    plain parse and the dictionary of keys give, on every corpus table and on a written one."""
    root = str(tmp_path / "t")
    ops.write_table(
        root,
        pa.table({"id": pa.array(range(20), pa.int64()), "p": [f"p{i % 4}" for i in range(20)]}),
        partition_by=["p"],
        configuration={"delta.enableDeletionVectors": "true"},
    )
    ops.delete(root, "id < 3")
    ops.optimize(root)
    ops.update(root, {"id": "id + 100"}, "id = 7", use_deletion_vectors=False)
    compared = 0
    for entry in [{"table_root": None}, *TABLES]:
        path = root if entry["table_root"] is None else str(CORPUS / entry["table_root"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", dx.CatalogManagedWarning)
            got = _timelines(path, monkeypatch)
        if isinstance(got["kernel"], pa.Table):
            assert got["kernel"].equals(got["plain"]) and got["kernel"].equals(got["colliding"]), path
            compared += 1
        else:
            assert got["kernel"] == got["plain"] == got["colliding"], path
    assert compared > 100


def test_a_columns_overlap_depth_per_version_is_the_layouts(tmp_path: Path) -> None:
    """mean and max overlap depth of a column at every version equal `layout(column)` of that
    version read on its own; `metrics=` keeps the chosen columns; a bad metric or column is typed."""
    root = str(tmp_path / "t")
    for ids in (range(0, 10), range(5, 15), range(100, 110), range(0, 200)):
        ops.write_table(root, pa.table({"id": pa.array(list(ids), pa.int64()), "g": [i % 2 for i in ids]}))
    ops.checkpoint(root)
    ops.optimize(root, zorder_by=["id"])
    ops.delete(root, "id < 3")
    table = dx.open_table(root)
    tl = table.inspect.timeline(column="id")
    assert tl.schema == TIMELINE_SCHEMA
    for row in tl.to_pylist():
        v = row["version"]
        depth = dx.open_table(root).inspect.layout("id", version=v).column("overlap_depth").to_pylist()
        assert row["overlap_depth_max"] == max(depth), v
        assert row["overlap_depth_mean"] == pytest.approx(sum(depth) / len(depth)), v
    assert tl.column("overlap_depth_max").to_pylist()[3] == 3  # ids 5..9 lie in three appends
    assert table.inspect.timeline().column("overlap_depth_mean").null_count == tl.num_rows  # no column: null
    # a range starts from its first version's state (read from its checkpoint): the same rows
    assert table.inspect.timeline(3, 5, column="id").to_pylist() == tl.slice(3, 3).to_pylist()
    kept = table.inspect.timeline(metrics=["files", "tombstones"])
    assert kept.column_names == ["version", "timestamp", "files", "tombstones", "schema_changed", "protocol_changed"]
    assert kept.column("tombstones").to_pylist()[4] > 0  # OPTIMIZE removed the appends' files
    with pytest.raises(inspect.InspectError, match="unknown timeline metrics"):
        table.inspect.timeline(metrics=["filez"])
    with pytest.raises(dx.ColumnNotFoundError):
        table.inspect.timeline(column="nope")
