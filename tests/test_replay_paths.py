"""`add_actions_for(paths)`: the replay of a few paths agrees with the full replay, and a huge
checkpoint's row groups without those paths are not read (what makes a diff of two big versions cheap)."""

from __future__ import annotations

import json
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


def test_json_paths_replay_reads_only_lines_naming_them_and_sees_escaped_paths(tmp_path):
    """A table without checkpoint: `add_actions_for` parses only the lines that may name the paths
    (`LogLines.naming`) and still finds a path its writer escaped (`\\u0061`, `\\u002d`), a path
    that is a prefix of another, and a path removed and re-added."""
    root = tmp_path / "t"
    for i in range(5):
        write_table(str(root), pa.table({"id": pa.array([i], pa.int64())}))
    log = root / "_delta_log"
    first = log / f"{1:020d}.json"
    lines = first.read_text().splitlines()
    add_line = next(ln for ln in lines if ln.startswith('{"add"'))
    path = json.loads(add_line)["add"]["path"]
    escaped = add_line.replace(f'"path":"{path}"', '"path":"' + path.replace("a", "\\u0061", 1) + '"', 1)
    assert escaped != add_line
    first.write_text("\n".join(escaped if ln == add_line else ln for ln in lines) + "\n")
    second = log / f"{2:020d}.json"
    lines2 = second.read_text().splitlines()
    add2 = next(ln for ln in lines2 if ln.startswith('{"add"'))
    path2 = json.loads(add2)["add"]["path"]
    second.write_text(
        "\n".join(ln.replace(f'"path":"{path2}"', '"path":"' + path2.replace("-", "\\u002d", 1) + '"') for ln in lines2) + "\n"
    )
    full = dx.open_table(str(root)).snapshot()
    every = full.add_actions()
    paths = every.column("path").to_pylist()
    assert path in paths
    for wanted in ([path], [path2], paths[:2], [paths[-1], "no/such.parquet"], [p[:-3] for p in paths]):
        fresh = dx.open_table(str(root)).snapshot()
        got = fresh.add_actions_for(pa.array(wanted, pa.string()))
        expected = every.filter(pc.is_in(every.column("path"), value_set=pa.array(wanted, pa.string())))
        assert _rows(got) == _rows(expected)
        assert not fresh.files_loaded


def test_naming_keeps_a_superset_of_the_lines(tmp_path):
    """`LogLines.naming`: lines holding a path as written or any escaped path value; every line
    when a path needs escaping; the replay order kept."""
    from deltaexplore.core.log.file_names import parse_log_file
    from deltaexplore.core.log.json_log import lines_from_bytes
    from deltaexplore.storage.base import FileInfo

    text = (
        b'{"commitInfo":{"operation":"WRITE"}}\n'
        b'{"add":{"path":"a/x.parquet","size":1}}\n'
        b'{"add":{"path":"b\\/y.parquet","size":2}}\n'
        b'{"add":{"path":"c/z.parquet","size":3}}\n'
        b'{"remove":{"path":"a/x.parquet"}}\n'
    )
    log_file = parse_log_file(FileInfo(f"_delta_log/{3:020d}.json", len(text), 0))
    assert log_file is not None
    lines = lines_from_bytes([log_file], [text], [3])
    some = lines.naming(["a/x.parquet"])
    assert [s.as_py() for s in some.text] == [lines.text[i].as_py() for i in (1, 2, 4)]
    assert some.file_actions("add").column("line").to_pylist() == [1, 2]
    assert some.file_actions("remove").column("path").to_pylist() == ["a/x.parquet"]
    odd = "d=a b+(1)[x]{2}^$|?*/p.parquet"  # regex characters stand for themselves
    text2 = text + ('{"add":{"path":"' + odd + '","size":4}}\n').encode()
    lines2 = lines_from_bytes([log_file], [text2], [3])
    assert lines2.naming([odd]).file_actions("add").column("path").to_pylist() == ["b/y.parquet", odd]
    assert lines.naming(['q"uote']) is lines
    assert lines.naming(["é.parquet"]) is lines
