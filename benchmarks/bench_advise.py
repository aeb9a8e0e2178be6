"""The maintenance advisor on the 1M-file table against an open: `open_table(p).inspect.advise()`
vs `open_table(p).snapshot().add_actions()`, each in a fresh process, interleaved.

Usage:
    python benchmarks/bench_advise.py [--files 1000000] [--runs 3] [--dir benchmarks/tables]
        [--stats-parsed] [--table PATH] [--out benchmarks/results/advise.md]

The table is written once by `gen_many_files.py` (metadata only: a multi-part checkpoint and 20
commits after it, 1,000 partitions, every 20th file with a deletion vector; `--stats-parsed`: its
checkpoint carries the typed `stats_parsed` beside the JSON stats, as Spark writes it with
`delta.checkpoint.writeStatsAsStruct`). The report gives
each run's seconds, the medians and their ratio, and the CPU seconds of each process (every
thread: less sensitive to the machine's load). Timings are reported, never asserted.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

CHILD = """
import json, sys, time
import deltaexplore as dx
path, what = sys.argv[1], sys.argv[2]
t0, c0 = time.perf_counter(), time.process_time()
if what == "open":
    dx.open_table(path).snapshot().add_actions()
    out = {}
else:
    r = dx.open_table(path).inspect.advise()
    out = {"kinds": r.column("kind").to_pylist()}
out["seconds"] = time.perf_counter() - t0
out["cpu"] = time.process_time() - c0
print(json.dumps(out))
"""


def run(path: Path, what: str) -> dict:
    done = subprocess.run([sys.executable, "-c", CHILD, str(path), what], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", default=os.environ.get("DELTAEXPLORE_BENCH_DIR", str(HERE / "tables")))
    ap.add_argument("--stats-parsed", action="store_true", help="the table's checkpoint has stats_parsed too")
    ap.add_argument("--table", help="an existing table to measure instead (read only; --files is then only reported)")
    ap.add_argument("--out", default=str(HERE / "results" / "advise.md"))
    args = ap.parse_args()
    path = Path(args.dir) / (f"advise_{args.files}" + ("_parsed" if args.stats_parsed else ""))
    if args.table:
        path = Path(args.table)
    elif not (path / "_delta_log").exists():
        extra = ["--stats-parsed"] if args.stats_parsed else []
        subprocess.run(
            [sys.executable, str(HERE / "gen_many_files.py"), str(path), "--files", str(args.files), *extra], check=True
        )
    opens: list[float] = []
    advises: list[float] = []
    cpu_open: list[float] = []
    cpu_advise: list[float] = []
    kinds: list[str] = []
    for _ in range(args.runs):  # interleaved: the machine's load shifts between runs
        opened = run(path, "open")
        opens.append(opened["seconds"])
        cpu_open.append(opened["cpu"])
        got = run(path, "advise")
        advises.append(got["seconds"])
        cpu_advise.append(got["cpu"])
        kinds = got["kinds"]
    med = statistics.median
    lines = [
        "# The maintenance advisor on the 1M-file table",
        "",
        f"Run {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, load {os.getloadavg()[0]:.1f} (2 cores shared), "
        + (
            f"`benchmarks/bench_advise.py --table {path.name} --runs {args.runs}`: the table `{path.name}`, "
            if args.table
            else f"`benchmarks/bench_advise.py --files {args.files} --runs {args.runs}"
            f"{' --stats-parsed' if args.stats_parsed else ''}`: "
            f"{args.files:,} files (`gen_many_files.py`: multi-part checkpoint"
            f"{' with stats_parsed' if args.stats_parsed else ' (JSON stats only)'}, 20 commits, 1,000 partitions, "
            "a DV on every 20th file), "
        )
        + "each measurement in a fresh process, interleaved.",
        "",
        "| measurement | runs (s) | median s | vs open | CPU s, median | CPU vs open |",
        "|---|---|---|---|---|---|",
        f"| open: `open_table(p).snapshot().add_actions()` | {', '.join(f'{x:.1f}' for x in opens)} | {med(opens):.1f} "
        f"| 1.00x | {med(cpu_open):.1f} | 1.00x |",
        f"| `open_table(p).inspect.advise()` (open included) | {', '.join(f'{x:.1f}' for x in advises)} | "
        f"{med(advises):.1f} | {med(advises) / med(opens):.2f}x | {med(cpu_advise):.1f} "
        f"| {med(cpu_advise) / med(cpu_open):.2f}x |",
        "",
        f"Advice given: {', '.join(kinds) or 'none'}.",
        "",
        "Target (issue 26): the advisor <= 2x an open.",
        "",
    ]
    Path(args.out).write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
