"""A checkpoint without its metaData or protocol row, and no later commit supplying it, is a
damaged log: `snapshot()` raises `InvalidLogError` naming the checkpoint (a reader starting from
a checkpoint never goes back to the commits before it, as delta-kernel-rs and kernel-java do).
`snapshot(strict=False)` still gives the log, history and files of such a version.

The tables are written with the project's writer (`core.operations`), then their checkpoint is
rewritten without the row.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from helpers import commit_info, write_commit

import deltaexplore as dx
from deltaexplore.core.operations import checkpoint, write_table


def _table_with_checkpoint(root: Path) -> Path:
    """Three appends (v0..v2), a checkpoint at 2, then one more append (v3)."""
    for i in range(3):
        write_table(str(root), pa.table({"id": pa.array([i], pa.int64()), "name": [f"n{i}"]}))
    checkpoint(str(root))
    write_table(str(root), pa.table({"id": pa.array([3], pa.int64()), "name": ["n3"]}))
    [ck] = sorted((root / "_delta_log").glob("*.checkpoint.parquet"))
    return ck


def _drop_row(ck: Path, column: str) -> None:
    t = pq.read_table(ck)
    keep = pc.is_null(t.column(column))
    pq.write_table(t.filter(keep), ck)
    (ck.parent / "_last_checkpoint").unlink(missing_ok=True)  # its size would no longer match


@pytest.mark.parametrize(("column", "action"), [("metaData", "metaData"), ("protocol", "protocol")])
def test_checkpoint_without_the_row_fails_the_snapshot(tmp_path, column, action):
    ck = _table_with_checkpoint(tmp_path)
    _drop_row(ck, column)
    table = dx.open_table(str(tmp_path))
    with pytest.raises(dx.InvalidLogError, match=rf"checkpoint .*{ck.name} \(version 2\) has no {action} action") as info:
        table.snapshot()
    assert info.value.path is not None and info.value.path.endswith(ck.name)
    with pytest.raises(dx.InvalidLogError, match=ck.name):
        table.snapshot(2)
    # versions before the checkpoint are read from their commits, as before
    assert table.snapshot(1).to_arrow().num_rows == 2
    # what can still be shown: history (every commit) and, leniently, the files of version 3
    assert table.history().num_rows == 4
    snap = table.snapshot(strict=False)
    assert isinstance(snap.problem, dx.InvalidLogError) and ck.name in str(snap.problem)
    assert snap.num_files == 4
    with pytest.raises(dx.InvalidLogError, match=ck.name):
        snap.to_arrow()


def test_a_later_commit_supplying_the_row_repairs_it(tmp_path):
    ck = _table_with_checkpoint(tmp_path)
    meta = next(
        json.loads(line)
        for line in (tmp_path / "_delta_log" / f"{0:020d}.json").read_text().splitlines()
        if line.startswith('{"metaData"')
    )
    _drop_row(ck, "metaData")
    write_commit(tmp_path, 4, [commit_info("SET TBLPROPERTIES"), meta])
    table = dx.open_table(str(tmp_path))
    assert table.snapshot().to_arrow().num_rows == 4
    with pytest.raises(dx.InvalidLogError, match=ck.name):
        table.snapshot(3)


def test_legacy_table_without_metadata_and_without_checkpoint_still_lists_files(corpus_table):
    """The corpus's log-only fixture without metaData (no checkpoint): files listed, data refused."""
    root = corpus_table("delta-golden/data-reader-absolute-paths-escaped-chars")
    snap = dx.open_table(root).snapshot()
    assert snap.num_files == 2 and snap.problem is None
    with pytest.raises(dx.InvalidLogError, match="no metaData"):
        _ = snap.metadata
