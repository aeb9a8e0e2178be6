"""`add_actions_for(paths)`: the replay of a few paths agrees with the full replay, and a huge
checkpoint's row groups without those paths are not read (what makes a diff of two big versions cheap)."""

from __future__ import annotations

import random
import warnings

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from corpus_paths import CORPUS, corpus_catalog

import deltaexplore as dx
from deltaexplore.core.log import checkpoint_reader
from deltaexplore.core.operations import checkpoint, write_table


def _with_checkpoints() -> list:
    return [
        pytest.param(t["table_root"], id=t["id"])
        for t in corpus_catalog()
        if t["status"] == "ok" and t["checkpoint_versions"] and t["active_files"]
    ]


def _rows(actions: pa.Table) -> list[dict]:
    return sorted(actions.to_pylist(), key=lambda r: (r["path"], str(r.get("deletionVector"))))


def _paths_to_ask(snapshot, seed: int) -> pa.Array:
    """Some active paths, every path a JSON commit of the segment touched, and one that never existed."""
    active = snapshot.add_actions().column("path").to_pylist()
    lines = snapshot.json_lines
    touched = lines.file_actions("add").column("path").to_pylist() + lines.file_actions("remove").column("path").to_pylist()
    picked = random.Random(seed).sample(active, min(5, len(active)))
    return pa.array([*picked, *touched, "no/such/file.parquet"], pa.string())


@pytest.mark.corpus
@pytest.mark.parametrize("root", _with_checkpoints())
def test_paths_replay_matches_the_full_replay(root):
    table = dx.open_table(str(CORPUS / root))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            full = table.snapshot()
            full_adds = full.add_actions()
        except dx.DeltaExploreError as exc:
            pytest.skip(f"not readable here: {exc}")
        paths = _paths_to_ask(full, seed=len(root))
        fresh = dx.open_table(str(CORPUS / root)).snapshot()
        assert not fresh.files_loaded
        some = fresh.add_actions_for(paths)  # replayed for those paths alone
        assert not fresh.files_loaded
    expected = full_adds.filter(pc.is_in(full_adds.column("path"), value_set=paths.cast(full_adds.schema.field("path").type)))
    assert some.schema.names == full_adds.schema.names
    assert _rows(some) == _rows(expected)
    assert _rows(full.add_actions_for(paths)) == _rows(expected)  # from the loaded state


def test_row_groups_without_the_paths_are_not_read(tmp_path, monkeypatch):
    """A checkpoint of several row groups: asking for files of one row group reads that one only."""
    root = tmp_path / "t"
    for i in range(6):
        write_table(str(root), pa.table({"id": pa.array([i], pa.int64())}))
    checkpoint(str(root))
    ck = next((root / "_delta_log").glob("*.checkpoint.parquet"))
    pq.write_table(pq.read_table(ck), ck, row_group_size=2)  # the same actions, in row groups of 2 rows
    assert pq.ParquetFile(ck).metadata.num_row_groups > 2
    write_table(str(root), pa.table({"id": pa.array([9], pa.int64())}))

    snapshot = dx.open_table(str(root)).snapshot()
    in_checkpoint = pq.read_table(ck, columns=["add"]).column("add").combine_chunks()
    rows = [i for i, v in enumerate(in_checkpoint.to_pylist()) if v is not None]
    wanted_row = rows[-1]
    wanted = pa.array([in_checkpoint[wanted_row]["path"].as_py()])
    read = []
    newest = [
        p
        for p in dx.open_table(str(root)).snapshot().add_actions().column("path").to_pylist()
        if p not in in_checkpoint.field("path").to_pylist()
    ]
    assert len(newest) == 1
    original = checkpoint_reader._read_file_columns

    def spy(pf, columns, path, keep=None, row_groups=None):
        read.append(row_groups)
        return original(pf, columns, path, keep, row_groups)

    monkeypatch.setattr(checkpoint_reader, "_read_file_columns", spy)
    got = snapshot.add_actions_for(wanted)
    assert got.column("path").to_pylist() == wanted.to_pylist()
    assert read == [[wanted_row // 2]]
    # a file no checkpoint row holds (added after it): found, and no row group read at all
    read.clear()
    assert snapshot.add_actions_for(pa.array(newest)).column("path").to_pylist() == newest
    assert read == [[]]
