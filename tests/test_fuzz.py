"""Fuzzed hostile logs give a result or a `DeltaExploreError`, within bounded time and memory.

Seeded mutations of corpus tables (`fuzz_harness.py`: truncation, byte flips, deleted lines,
wrong JSON types, deep nesting, huge numbers, broken checkpoints and sidecars, damaged DV
files and `_last_checkpoint`, stray files at huge versions), each read every way a user would in
a worker process with a memory limit and a time budget per case. `DELTAEXPLORE_FUZZ_CASES`
sets the number of cases (default 240), `DELTAEXPLORE_FUZZ_SEED` the seed.
"""

from __future__ import annotations

import os

import pytest
from fuzz_harness import cases, run, table_roots

CASES = int(os.environ.get("DELTAEXPLORE_FUZZ_CASES", "240"))
SEED = int(os.environ.get("DELTAEXPLORE_FUZZ_SEED", "0"))
#: seconds per case before it counts as a hang (a case takes well under 2 s; the budget is wide
#: for a loaded machine, and a hang is about time that does not end)
TIMEOUT = float(os.environ.get("DELTAEXPLORE_FUZZ_TIMEOUT", "60"))


@pytest.mark.corpus
@pytest.mark.slow
def test_fuzzed_logs_only_raise_typed_errors() -> None:
    if not table_roots():
        pytest.skip("conformance corpus not found")
    stats = run(cases(CASES, SEED), workers=1, timeout=TIMEOUT)
    print(stats.summary())
    failures = [f"{r['outcome']}: {c.table} {c.what}: {r.get('step', '')} {r.get('error', '')}" for c, r in stats.failures]
    assert not failures, f"{stats.summary()}\n" + "\n".join(failures[:20])
    assert stats.counts["ok"] and stats.counts["typed"]  # the mutations both break tables and leave some readable
