"""Net row diff: `diff_rows` of two versions where one commit rewrote 1% of the files, against
reading the changed files alone (pyarrow, the same files, every column).

Usage:
    python benchmarks/bench_row_diff.py [--rows 10000000] [--files 1000] [--repeat 3]
        [--out benchmarks/results/row_diff.md]

The table is generated once under `benchmarks/tables/` (random ids, copy-on-write: no deletion
vectors), then an UPDATE changes one row in each of 1% of the files, so the diff reads 1% of the
files twice (removed and added) and returns as many updated rows. Each measurement opens a fresh
`Table`; the report gives min and median seconds, the ratio of medians, and the CPU seconds of
the process (every thread: less sensitive to the machine's load). Timings are reported, never
asserted.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

import deltaexplore as dx
from deltaexplore.core.operations import update, write_table
from deltaexplore.inspect.row_diff import read_summary

ROOT = Path(__file__).resolve().parent.parent


def build(path: Path, rows: int, files: int) -> None:
    if (path / "_delta_log").exists():
        return
    per = rows // files
    rng = np.random.default_rng(0)
    ids = np.arange(rows, dtype=np.int64)
    data = pa.table(
        {
            "id": ids,
            "file_no": ids // per,
            "amount": rng.random(rows),
            "name": pc.binary_join_element_wise("n", pa.array(ids % 100_000).cast(pa.string()), ""),
        }
    )
    write_table(str(path), data, max_rows_per_file=per, configuration={"delta.enableDeletionVectors": "false"})
    touched = max(1, files // 100)
    update(str(path), {"amount": "amount + 1"}, f"id % {per} = 0 AND file_no < {touched}")


def timed(fn: Callable[[], object], cpu: list[float]) -> float:
    """Wall seconds of one call; its CPU seconds (every thread of the process) go to `cpu`."""
    c0, t0 = time.process_time(), time.perf_counter()
    fn()
    cpu.append(time.process_time() - c0)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "row_diff.md"))
    args = ap.parse_args()
    path = ROOT / "benchmarks" / "tables" / f"rowdiff_{args.rows}_{args.files}"
    t0 = time.perf_counter()
    build(path, args.rows, args.files)
    built = time.perf_counter() - t0
    table = dx.open_table(str(path))
    changed = table.inspect.diff_files(0, 1)
    paths = [str(path / p) for p in changed.column("path").to_pylist()]

    def read_changed() -> None:
        for p in paths:
            pq.read_table(p)

    def row_diff() -> None:
        dx.open_table(str(path)).inspect.diff_rows(0, 1)

    def keyed() -> None:
        dx.open_table(str(path)).inspect.diff_rows(0, 1, key="id")

    read_changed()  # warm the page cache for both
    result = dx.open_table(str(path)).inspect.diff_rows(0, 1, key="id")
    base: list[float] = []
    unkeyed: list[float] = []
    with_key: list[float] = []
    cpu: dict[str, list[float]] = {"base": [], "unkeyed": [], "keyed": []}
    for _ in range(args.repeat):  # interleaved: the machine's load shifts between runs
        base.append(timed(read_changed, cpu["base"]))
        unkeyed.append(timed(row_diff, cpu["unkeyed"]))
        with_key.append(timed(keyed, cpu["keyed"]))
    summary = read_summary(result)
    med = statistics.median
    lines = [
        "# Net row diff",
        "",
        f"Run {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, load {os.getloadavg()[0]:.1f}, "
        f"`benchmarks/bench_row_diff.py --rows {args.rows} --files {args.files} --repeat {args.repeat}` "
        f"(table built in {built:.0f} s or reused).",
        "",
        f"{args.rows:,} rows in {table.snapshot(0).num_files:,} files; version 1 is an UPDATE of "
        f"{result.num_rows} rows that rewrote {len(paths)} files (copy-on-write, removed and added): "
        f"the diff reads {summary['files_read']} files, {summary['bytes_read']:,} bytes, and returns the "
        f"{result.num_rows} updated rows.",
        "",
        "| measurement | min s | median s | vs reading the changed files (medians) | CPU s, median | CPU vs reading |",
        "|---|---|---|---|---|---|",
        f"| pyarrow reads the changed files alone | {min(base):.3f} | {med(base):.3f} | 1.00x | {med(cpu['base']):.3f} | 1.00x |",
        f"| `diff_rows(0, 1)` (a fresh table each time) | {min(unkeyed):.3f} | {med(unkeyed):.3f} "
        f"| {med(unkeyed) / med(base):.2f}x | {med(cpu['unkeyed']):.3f} | {med(cpu['unkeyed']) / med(cpu['base']):.2f}x |",
        f"| `diff_rows(0, 1, key='id')` | {min(with_key):.3f} | {med(with_key):.3f} | {med(with_key) / med(base):.2f}x "
        f"| {med(cpu['keyed']):.3f} | {med(cpu['keyed']) / med(cpu['base']):.2f}x |",
        "",
        "Target (issue 26): <= 2x reading the changed files alone.",
        "",
    ]
    Path(args.out).write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
