"""Reliability: concurrent writer processes, and writers killed with SIGKILL mid-operation.

1. 8 processes commit 200 times in all (appends, deletes of their own batches, OPTIMIZE) to one
   table: every failure must be a `CommitConflictError` (then the worker retries), versions must
   have no gap, and the final rows must equal the appended rows minus the deleted batches, with
   no row lost or duplicated.
2. A writer looping over appends, deletes, OPTIMIZE, checkpoints and VACUUM is killed with
   `kill -9` at a random moment, 100 times: after each kill the table opens, every committed
   batch is there (and no deleted one), every commit seen before is unchanged, and no half-written
   file (commit, checkpoint, sidecar, `_last_checkpoint`) is visible.
"""

from __future__ import annotations

import collections
import json
import multiprocessing as mp
import os
import random
import time
from pathlib import Path

import pytest
from reliability_workers import batch_rows, chaos_worker, concurrent_worker

import deltaexplore as dx
from deltaexplore.core.log.checkpoint_reader import CheckpointReader
from deltaexplore.core.log.last_checkpoint import parse_last_checkpoint
from deltaexplore.core.operations import write_table

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("reliability")]

WORKERS = 8
COMMITS = 200


def test_concurrent_writers_200_commits(tmp_path):
    root = str(tmp_path / "t")
    write_table(root, batch_rows("seed", 3), configuration={"delta.enableDeletionVectors": "true"})
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    per = COMMITS // WORKERS
    procs = [ctx.Process(target=concurrent_worker, args=(root, w, per, 1000 + w, queue)) for w in range(WORKERS)]
    for p in procs:
        p.start()
    events: list[tuple] = []
    finished = 0
    deadline = time.monotonic() + 420
    while finished < WORKERS:
        assert time.monotonic() < deadline, "workers did not finish in time"
        try:
            event = queue.get(timeout=5)
        except Exception:  # noqa: BLE001 - queue.Empty: check the workers are alive
            assert any(p.is_alive() for p in procs) or finished == WORKERS, "workers died"
            continue
        events.append(event)
        if event[0] == "done":
            finished += 1
    for p in procs:
        p.join(30)
    errors = [e[1] for e in events if e[0] == "error"]
    assert not errors, errors[0]
    appended = {e[1]: e[2] for e in events if e[0] == "append"}
    deleted = {e[1] for e in events if e[0] == "delete"}
    versions = sorted(e[-1] for e in events if e[0] in ("append", "delete", "optimize"))
    assert len(versions) == COMMITS and len(set(versions)) == COMMITS  # one version per success
    table = dx.open_table(root)
    assert table.versions() == list(range(COMMITS + 1))  # no gap, nothing extra
    assert versions == list(range(1, COMMITS + 1))
    expected = collections.Counter({("seed", i): 1 for i in range(3)})
    for name, n in appended.items():
        if name not in deleted:
            expected.update((name, i) for i in range(n))
    got = collections.Counter((r["batch"], r["id"]) for r in table.snapshot().to_arrow().to_pylist())
    assert got == expected  # no lost, no duplicated, no resurrected row
    conflicts = [e for e in events if e[0] == "conflict"]
    assert all("conflicts with this transaction" in e[1] or "gave up" in e[1] for e in conflicts)
    ops = collections.Counter(h["operation"] for h in table.history().to_pylist())
    assert ops["DELETE"] == len(deleted) and ops["OPTIMIZE"] >= 1
    # every checksum file written by the racing writers agrees with the replayed state
    crcs = sorted(table.listing().crcs)  # rebased commits build on the winner's checksum
    assert len(crcs) > COMMITS // 2, len(crcs)
    for v in crcs[-40:]:
        check = table.snapshot(v).validate_crc()
        assert all(check.column("ok").to_pylist()), (v, check.to_pylist())


def _expected_batches(table: dx.Table) -> tuple[set[str], set[str]]:
    """Batches appended and deleted according to the committed log."""
    appended, deleted = set(), set()
    for h in table.history().to_pylist():
        if h["operation"] in ("WRITE", "CREATE TABLE") and h["user_metadata"]:
            appended.add(h["user_metadata"])
        if h["operation"] == "DELETE":
            pred = json.loads(dict(h["parameters"])["predicate"])[0]
            deleted.add(pred.split("'")[1])
    return appended, deleted


def _check_consistent(root: str, seen: dict[str, bytes]) -> None:
    log = Path(root) / "_delta_log"
    table = dx.open_table(root)
    listing = table.listing()
    # nothing committed is lost: every commit seen before is still there, byte for byte
    for name, data in seen.items():
        assert (log / name).read_bytes() == data, f"commit {name} changed or vanished"
    for f in listing.commits.values():
        data = (log / f.name).read_bytes()
        for line in data.decode().splitlines():
            json.loads(line)  # a commit file is always complete JSON lines
        seen[f.name] = data
    # every complete checkpoint is readable (nothing half-written is selected)
    for cps in listing.checkpoints.values():
        for cp in cps:
            reader = CheckpointReader(table.storage, cp)
            reader.non_file_actions()
            reader.file_actions("add")
    lc_path = log / "_last_checkpoint"
    if lc_path.exists():
        lc = parse_last_checkpoint(lc_path.read_bytes())
        assert lc.usable and lc.version in listing.checkpoints, lc
    snap = table.snapshot()
    assert snap.version == max(listing.commits)
    rows = snap.to_arrow().to_pylist()  # every data and DV file of the latest version exists
    batches = {r["batch"] for r in rows}
    appended, deleted = _expected_batches(table)
    assert batches == appended - deleted
    ids = collections.Counter((r["batch"], r["id"]) for r in rows)
    assert max(ids.values(), default=1) == 1  # no duplicated row


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def test_writer_killed_100_times(tmp_path):
    root = str(tmp_path / "t")
    write_table(root, batch_rows("start", 2), user_metadata="start", configuration={"delta.enableDeletionVectors": "true"})
    ctx = mp.get_context("forkserver")
    # pandas too: pyarrow imports it on the first conversion of Python lists (0.5 s per child)
    preload = ["deltaexplore.core.operations", "reliability_workers", "pyarrow.dataset"]
    ctx.set_forkserver_preload([*preload, "pandas"] if _has("pandas") else preload)
    rng = random.Random(7)
    seen: dict[str, bytes] = {}
    phase_file = str(tmp_path / "phase")
    killed_in: collections.Counter[str] = collections.Counter()
    for i in range(100):
        if os.path.exists(phase_file):
            os.unlink(phase_file)
        proc = ctx.Process(target=chaos_worker, args=(root, i, phase_file))
        proc.start()
        time.sleep(0.05 + rng.random() * 0.35)
        os.kill(proc.pid, 9)
        proc.join(10)
        assert proc.exitcode == -9, f"iteration {i}: the writer exited by itself ({proc.exitcode})"
        killed_in[Path(phase_file).read_text() if os.path.exists(phase_file) else "startup"] += 1
        _check_consistent(root, seen)
    print("kills by operation:", dict(killed_in))
    # the kills landed in commits (append/delete/optimize), checkpoints and vacuums alike
    assert killed_in["append"] + killed_in["delete"] + killed_in["optimize"] >= 10, killed_in
    assert killed_in["checkpoint"] >= 3 and killed_in["vacuum"] >= 3, killed_in
    table = dx.open_table(root)
    assert table.latest_version() > 10, table.latest_version()  # the writers got work done between kills
    ops = {h["operation"] for h in table.history().to_pylist()}
    assert {"WRITE", "DELETE"} <= ops
    assert any(n.endswith(".checkpoint.parquet") for n in os.listdir(Path(root) / "_delta_log"))
