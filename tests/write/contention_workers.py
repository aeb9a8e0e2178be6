"""A blind-append worker for the contention test (importable by spawned children)."""

from __future__ import annotations

import traceback
from typing import Any

import pyarrow as pa


def append_worker(uri: str, options: dict[str, Any] | None, worker: int, commits: int, out: Any) -> None:
    """Append `commits` batches with the default retry policy, reporting each version (or the
    error) through `out`: ("append", worker, seq, version) / ("error", worker, text)."""
    from deltaexplore.core.operations import write_table

    try:
        for seq in range(commits):
            batch = pa.table({"worker": pa.array([worker] * 3, pa.int64()), "seq": pa.array([seq] * 3, pa.int64())})
            m = write_table(uri, batch, storage_options=options)
            out.put(("append", worker, seq, m.column("version")[0].as_py()))
    except Exception:  # noqa: BLE001 - reported to the test, which fails on it
        out.put(("error", worker, traceback.format_exc()))
    out.put(("done", worker, None, None))
