"""A Spark DELETE or UPDATE that loses its commit leaves none of its files behind (the deletion
vector file included), and refuses to copy rows of data files outside the table root."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import deltaexplore as dx
from deltaexplore.core.operations import delete, write_table
from deltaexplore.core.protocol.deletion_vectors import DeletionVectorDescriptor
from deltaexplore.core.write.transaction import Transaction

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and "_delta_log" not in p.parts}


def _referenced(root: Path) -> set[str]:
    table = dx.open_table(str(root))
    out: set[str] = set()
    for v in table.versions():
        snap = table.snapshot(v)
        for kind in ("add", "remove", "cdc"):
            out |= set(snap.json_lines.file_actions(kind).column("path").to_pylist())
        for dv in snap.add_actions().column("deletionVector").to_pylist():
            if dv and dv["storageType"] == "u":
                out.add(str(DeletionVectorDescriptor.from_dict(dv).file_path()))
    return out


@pytest.mark.parametrize("operation", ["delete", "update"])
def test_a_spark_dml_that_loses_its_commit_leaves_no_files(spark, tmp_path, monkeypatch, operation) -> None:
    import deltaexplore.spark as dxs

    root = tmp_path / "t"
    data = pa.table({"id": pa.array(range(10), pa.int64()), "part": ["a", "b"] * 5})
    write_table(str(root), data, partition_by=["part"], configuration={"delta.enableDeletionVectors": "true"})
    original = Transaction.commit

    def commit(self: Transaction, **kw: object) -> object:
        monkeypatch.setattr(Transaction, "commit", original)
        delete(str(root), "id >= 0", use_deletion_vectors=False)  # a conflicting winner
        return original(self, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(Transaction, "commit", commit)
    with pytest.raises(dx.CommitConflictError):
        if operation == "delete":
            dxs.delete(spark, str(root), "id = 2")
        else:
            dxs.update(spark, str(root), {"id": "id + 100"}, "id = 2")
    assert _files(root) <= _referenced(root)


def test_spark_refuses_to_copy_rows_from_outside_the_root(spark, tmp_path) -> None:
    import deltaexplore.spark as dxs

    root = tmp_path / "t"
    outside = tmp_path / "outside.parquet"
    pq.write_table(pa.table({"id": pa.array([1000, 1001], pa.int64()), "part": ["a", "a"]}), outside)
    write_table(str(root), pa.table({"id": pa.array(range(4), pa.int64()), "part": ["a", "b"] * 2}), partition_by=["part"])
    add = {"path": str(outside), "partitionValues": {"part": "a"}, "size": outside.stat().st_size, "modificationTime": 0}
    line = {"add": {**add, "dataChange": True, "stats": json.dumps({"numRecords": 2})}}
    (root / "_delta_log" / f"{1:020d}.json").write_text(
        json.dumps({"commitInfo": {"timestamp": 1}}) + "\n" + json.dumps(line) + "\n"
    )
    before = outside.read_bytes()
    with pytest.raises(dx.WriteRefusedError, match="outside the table root"):
        dxs.delete(spark, str(root), "id = 1000")
    with pytest.raises(dx.WriteRefusedError, match="outside the table root"):
        dxs.update(spark, str(root), {"id": "id + 1"}, "id = 1001")
    assert outside.read_bytes() == before and dx.open_table(str(root)).latest_version() == 1
