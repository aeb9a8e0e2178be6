"""Checkpoint selection and `_last_checkpoint` handling (hint validated, never trusted blindly)."""

from __future__ import annotations

import json
import os
import shutil

import pytest

import deltaexplore as dx
from deltaexplore.core.log.last_checkpoint import canonicalize, checksum_of, loads_exact, parse_last_checkpoint

SPEC_JSON = '{"k0":"\'v 0\'", "checksum": "adsaskfljadfkjadfkj", "k1":{"k2": 2, "k3": ["v3", [1, 2], {"k4": "v4", "k5": ["v5", "v6", "v7"]}]}}'


def test_canonicalization_spec_example():
    obj = loads_exact(SPEC_JSON)
    assert canonicalize(obj) == (
        '"k0"="%27v%200%27","k1"+"k2"=2,"k1"+"k3"+0="v3","k1"+"k3"+1+0=1,"k1"+"k3"+1+1=2,'
        '"k1"+"k3"+2+"k4"="v4","k1"+"k3"+2+"k5"+0="v5","k1"+"k3"+2+"k5"+1="v6","k1"+"k3"+2+"k5"+2="v7"'
    )
    assert checksum_of(obj) == "6a92d155a59bf2eecbd4b4ec7fd1f875"


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (None, "missing"),
        (b"", "empty"),
        (b"{not json", "corrupt"),
        (b'{"version": 1, "version": 2}', "corrupt"),
        (b'{"version": 3, "size": 4, "checksum": "00000000000000000000000000000000"}', "checksum"),
    ],
)
def test_bad_hints_are_recorded(content, problem):
    lc = parse_last_checkpoint(content)
    assert not lc.usable
    assert problem in (lc.problem or "")


def test_valid_hint():
    obj = {"version": 10, "size": 13}
    obj["checksum"] = checksum_of(obj)
    lc = parse_last_checkpoint(json.dumps(obj).encode())
    assert lc.usable and lc.version == 10 and lc.checksum_valid


@pytest.fixture
def checkpointed(corpus, tmp_path):
    """delta-golden/checkpoint: checkpoint at 10 + commits 11..14, one active file."""
    src = corpus / "delta-golden" / "checkpoint"
    dst = tmp_path / "t"
    shutil.copytree(src, dst)
    return dst


@pytest.mark.parametrize("hint", [b"", b"garbage", b'{"version": 3, "size": 1}', b'{"version": 99, "size": 1}'])
def test_wrong_last_checkpoint_falls_back_to_listing(checkpointed, hint):
    (checkpointed / "_delta_log" / "_last_checkpoint").write_bytes(hint)
    snap = dx.open_table(str(checkpointed)).snapshot()
    assert (snap.version, snap.files().num_rows, snap.checkpoint_version) == (14, 1, 10)


def test_missing_checkpoint_file_in_hint(checkpointed):
    (checkpointed / "_delta_log" / f"{10:020d}.checkpoint.parquet").unlink()
    table = dx.open_table(str(checkpointed))
    listing = table.listing()
    assert "missing" in (listing.last_checkpoint.problem or "")
    snap = table.snapshot()
    assert snap.checkpoint_version is None and snap.files().num_rows == 1


def test_never_uses_checkpoint_newer_than_version(checkpointed):
    snap = dx.open_table(str(checkpointed)).snapshot(version=9)
    assert snap.checkpoint_version is None
    assert snap.version == 9


def test_incomplete_multipart_checkpoint_is_ignored(corpus, tmp_path):
    src = corpus / "delta-kernel-rs" / "v1-multi-part-struct-stats-only"
    dst = tmp_path / "t"
    shutil.copytree(src, dst)
    parts = sorted((dst / "_delta_log").glob("*.checkpoint.*.parquet"))
    assert len(parts) >= 2
    version = int(parts[0].name.split(".")[0])
    expected = dx.open_table(str(src)).snapshot()
    parts[-1].unlink()
    snap = dx.open_table(str(dst)).snapshot()
    assert snap.checkpoint_version != version
    assert snap.files().num_rows == expected.files().num_rows


@pytest.mark.parametrize(
    "name",
    [
        "v2-checkpoints-json-with-sidecars",
        "v2-checkpoints-parquet-without-sidecars",
        "v2-parquet-sidecars-struct-stats-only",
        "v2-json-sidecars-struct-stats-only",
        "v2-classic-checkpoint-json",
        "v2-checkpoints-json-with-last-checkpoint",
    ],
)
def test_v2_checkpoints(corpus, name):
    root = corpus / "delta-kernel-rs" / name
    if not root.exists():
        pytest.skip(f"{name} not in corpus")
    snap = dx.open_table(str(root)).snapshot()
    assert snap.checkpoint_version is not None
    # Replaying without the checkpoint (all commits are kept) must give the same files.
    files = sorted(snap.files().column("path").to_pylist())
    assert files
    assert snap.segment.checkpoint.kind.startswith(("v2", "classic"))


def test_sidecar_missing_is_an_error(corpus, tmp_path):
    src = corpus / "delta-kernel-rs" / "v2-checkpoints-json-with-sidecars"
    dst = tmp_path / "t"
    shutil.copytree(src, dst)
    sidecar = sorted((dst / "_delta_log" / "_sidecars").glob("*.parquet"))[-1]
    sidecar.unlink()
    with pytest.raises(dx.InvalidCheckpointError, match="sidecars"):
        dx.open_table(str(dst)).snapshot().files()


def _snapshot_state(root):
    snap = dx.open_table(str(root)).snapshot()
    files = snap.files().select(["path", "size", "stats", "partition_values", "path_or_inline"]).sort_by("path")
    return snap, files.to_pylist()


def test_checkpoint_read_in_small_batches_equals_json_replay(tmp_path, monkeypatch):
    """Checkpoint columns are read a batch of rows at a time (file actions) and the non-file
    actions kept from whichever batch holds them: with batches of a few rows the snapshot is
    the one the JSON commits alone give, including rows a later commit removes or re-adds."""
    from helpers import add, commit_info, metadata, protocol, remove, write_commit

    from deltaexplore.core.log import checkpoint_reader as ckpt
    from deltaexplore.core.write.checkpoint_writer import write_checkpoint

    root = tmp_path / "t"
    write_commit(root, 0, [commit_info(), protocol(), metadata(partition_columns=["p"])])
    for v in range(1, 4):
        actions = [commit_info(), {"txn": {"appId": f"app-{v}", "version": v}}]
        actions += [add(f"p={i % 3}/f{v}-{i}.parquet", size=v * 100 + i, records=i, pv={"p": str(i % 3)}) for i in range(9)]
        write_commit(root, v, actions)
    write_commit(root, 4, [commit_info(), {"domainMetadata": {"domain": "d", "configuration": "{}", "removed": False}}])
    assert write_checkpoint(dx.open_table(str(root))).version == 4
    dv = {
        "storageType": "i",
        "pathOrInlineDv": "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L",
        "offset": None,
        "sizeInBytes": 40,
        "cardinality": 6,
    }
    write_commit(
        root,
        5,
        [
            commit_info(),
            remove("p=0/f1-0.parquet"),
            remove("p=2/f3-8.parquet"),
            remove("p=1/f2-4.parquet"),
            add("p=1/f2-4.parquet", size=7, records=4, pv={"p": "1"}, dv=dv),
        ],
    )

    monkeypatch.setattr(ckpt, "FILE_BATCH_ROWS", 4)
    monkeypatch.setattr(ckpt, "NON_FILE_BATCH_ROWS", 1)
    snap, files = _snapshot_state(root)
    assert snap.checkpoint_version == 4
    # the oracle: the same log without its checkpoint
    without = tmp_path / "json-only"
    shutil.copytree(root, without)
    for name in os.listdir(without / "_delta_log"):
        if "checkpoint" in name:
            os.remove(without / "_delta_log" / name)
    monkeypatch.undo()
    oracle, expected = _snapshot_state(without)
    assert oracle.checkpoint_version is None
    assert files == expected and len(files) == 3 * 9 - 2
    assert (snap.protocol, snap.metadata) == (oracle.protocol, oracle.metadata)
    assert snap.txns() == oracle.txns() and sorted(snap.txns()) == ["app-1", "app-2", "app-3"]
    assert snap.domain_metadata() == oracle.domain_metadata() and list(snap.domain_metadata()) == ["d"]


@pytest.mark.parametrize("rows", [[], [0], [3, 4, 10, 29], [29, 0, 7, 7, 15, 2], list(range(30))[::-1]])
@pytest.mark.parametrize("layout", ["one chunk", "even chunks", "ragged columns"])
def test_take_rows_equals_table_take(rows, layout):
    """Picking rows batch by batch (no concatenation of chunked columns) gives exactly
    `Table.take`: any order, repeats, columns chunked differently."""
    from itertools import pairwise

    import pyarrow as pa

    from deltaexplore.core.arrow import take_rows

    ids = list(range(30))
    texts = [f"s{i}" * (i % 4) for i in ids]
    if layout == "one chunk":
        table = pa.table({"id": ids, "text": texts})
    else:
        cuts = [0, 8, 16, 24, 30] if layout == "even chunks" else [0, 5, 21, 30]
        table = pa.table(
            {
                "id": pa.chunked_array([ids[a:b] for a, b in pairwise([0, 8, 16, 24, 30])]),
                "text": pa.chunked_array([texts[a:b] for a, b in pairwise(cuts)]),
            }
        )
    got = take_rows(table, rows)
    assert got.schema == table.schema
    assert got.to_pylist() == [{"id": i, "text": texts[i]} for i in rows]
    assert take_rows(table, pa.array(rows, pa.int64())).to_pylist() == got.to_pylist()
    with pytest.raises(IndexError):
        take_rows(table, [30])
