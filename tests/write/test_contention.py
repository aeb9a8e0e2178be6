"""Blind appends under contention succeed: 8 writer processes append at once (local disk and
S3 on moto) with the default retry policy (back-off with jitter, a larger budget for blind
appends, which can never conflict), and every batch lands exactly once."""

from __future__ import annotations

import collections
import multiprocessing as mp
import time

import pyarrow as pa
import pytest
from contention_workers import append_worker

import deltaexplore as dx
from deltaexplore.core.operations import write_table

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("reliability")]

WORKERS = 8
APPENDS = 8


def test_blind_appends_of_8_writers_all_land(location) -> None:
    uri, options = location
    write_table(uri, pa.table({"worker": pa.array([-1], pa.int64()), "seq": pa.array([0], pa.int64())}), storage_options=options)
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=append_worker, args=(uri, options, w, APPENDS, queue)) for w in range(WORKERS)]
    for p in procs:
        p.start()
    events = []
    done = 0
    deadline = time.monotonic() + 600
    while done < WORKERS:
        assert time.monotonic() < deadline, "the writers did not finish in time"
        try:
            event = queue.get(timeout=5)
        except Exception:  # noqa: BLE001 - queue.Empty: check the workers are alive
            assert any(p.is_alive() for p in procs), "the writers died"
            continue
        events.append(event)
        done += event[0] == "done"
    for p in procs:
        p.join(30)
    errors = [e[2] for e in events if e[0] == "error"]
    assert not errors, errors[0]
    versions = sorted(e[3] for e in events if e[0] == "append")
    assert versions == list(range(1, WORKERS * APPENDS + 1))  # every append committed, no gap
    table = dx.open_table(uri, options)
    rows = collections.Counter((r["worker"], r["seq"]) for r in table.snapshot().to_arrow().to_pylist())
    assert rows == collections.Counter({(-1, 0): 1} | {(w, s): 3 for w in range(WORKERS) for s in range(APPENDS)})
    history = table.history().to_pylist()
    assert all(h["is_blind_append"] for h in history if h["version"] > 0)
