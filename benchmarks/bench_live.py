"""A live table on the same `Table`: refresh after new commits, one and ten versions back or
forward, the timeline of every version, each against a cold open. Reported, never asserted.

    .venv/bin/python benchmarks/bench_live.py [TABLE] [--runs 3]   # writes benchmarks/results/live.md

TABLE defaults to benchmarks/tables/f1m_c1000 (1,000,200 active files at version 1100, checkpoint
at 1000), generated when missing with `python ../shared/tools/gen_big_log.py
benchmarks/tables/f1m_c1000 --files 1000000 --commits 1000 --post-commits 100`.

Each run works on a fresh copy of the table's log (hard links: nothing is copied; the table is
metadata only), in one process, the steps interleaved run by run:

* cold open: `dx.open_table(path).snapshot().add_actions()` (the unit: median of the runs);
* refresh after 10 commits: the latest opened on a `Table` (files replayed), 10 append commits
  written (each like the table's last append, new paths), then `snapshot.refresh().add_actions()`;
* one / ten versions back from the latest, one / ten forward from ten back:
  `table.snapshot_from(base, v).add_actions()` on the same `Table` holding only `base`;
* the timeline of every version: `table.inspect.timeline()` on a fresh `Table`;
* full history with derived counts: `table.history()` on a fresh `Table` (files, bytes and rows
  added and removed per commit);
* the explorer's slider, kernel side: a warm open (`TableView` of the latest version and its
  counted overview: past the streaming threshold, one streaming pass) and then one step back
  (`set_version(latest - 1)` and the counted overview: the counts stepped from the pass kept,
  `inspect.stepped_totals`), ten back and one forward again; the browser's part is
  `bench_explorer.py --early`'s.

`--work DIR` puts the runs' hard-linked copies in DIR (same file system as TABLE; default:
TABLE's parent directory).

Timings on this machine are noisy: ratios are within one run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
GEN = ROOT.parent / "shared" / "tools" / "gen_big_log.py"
DEFAULT = HERE / "tables" / "f1m_c1000"
GEN_ARGS = ["--files", "1000000", "--commits", "1000", "--post-commits", "100"]


def _copy_log(src: Path, dst: Path) -> None:
    """`src`'s `_delta_log` as hard links under `dst` (metadata-only tables: no data files)."""
    (dst / "_delta_log").mkdir(parents=True)
    for entry in os.scandir(src / "_delta_log"):
        if entry.is_file():
            os.link(entry.path, dst / "_delta_log" / entry.name)


def _append_commits(root: Path, count: int) -> None:
    """`count` commits after the latest, each the table's last blind append with new paths."""
    log = root / "_delta_log"
    commits = sorted(p for p in log.iterdir() if re.fullmatch(r"\d{20}\.json", p.name))
    latest = int(commits[-1].name[:20])
    template = next(p for p in reversed(commits) if '"isBlindAppend":true' in p.read_text()[:4096])
    text = template.read_text()
    for i in range(1, count + 1):
        body = text.replace("part-", f"part-live{latest + i}-")
        (log / f"{latest + i:020d}.json").write_text(body)


#: the process time (CPU, all threads) of the last `_timed` call: `one_run` keeps it as "<step> cpu"
_CPU = [0.0]


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start, cpu = time.perf_counter(), time.process_time()
    out = fn()
    _CPU[0] = time.process_time() - cpu
    return time.perf_counter() - start, out


def _cpu_of(out: dict[str, float], step: str) -> None:
    out[f"{step} cpu"] = _CPU[0]


def one_run(table_dir: Path, work: Path) -> dict[str, float]:
    import deltaexplore as dx

    out: dict[str, float] = {}
    copy = work / "t"
    _copy_log(table_dir, copy)
    out["cold open"], _ = _timed(lambda: dx.open_table(str(copy)).snapshot().add_actions())
    _cpu_of(out, "cold open")
    table = dx.open_table(str(copy))
    latest = table.snapshot()
    latest.add_actions()
    v = latest.version
    back10 = table.snapshot(version=v - 10)  # a base for the moves forward (moved, files replayed)

    def move(base: Any, version: int) -> Any:
        table.forget_snapshots()  # only `base` to move from: the move itself is timed
        return table.snapshot_from(base, version).add_actions()

    for label, base, version in (
        ("one version back", latest, v - 1),
        ("ten versions back", latest, v - 10),
        ("one version forward", back10, v - 9),
        ("ten versions forward", back10, v),
    ):
        out[label], _ = _timed(lambda base=base, version=version: move(base, version))
    _append_commits(copy, 10)
    out["refresh after 10 commits"], _ = _timed(lambda: latest.refresh().add_actions())
    fresh = dx.open_table(str(copy))
    out["timeline of every version"], tl = _timed(fresh.inspect.timeline)
    _cpu_of(out, "timeline of every version")
    out["versions in the timeline"] = tl.num_rows
    out["full history with derived counts"], _ = _timed(dx.open_table(str(copy)).history)
    _cpu_of(out, "full history with derived counts")
    _explorer_steps(copy, out)
    shutil.rmtree(copy)
    return out


def _explorer_steps(copy: Path, out: dict[str, float]) -> None:
    """The explorer's slider on the kernel side (module docstring): a warm open, then steps."""
    import deltaexplore as dx
    from deltaexplore.widgets.views import TableView

    dx.open_table(str(copy)).snapshot()  # imports and the page cache warm, as in an open explorer
    out["explorer warm open (kernel)"], view = _timed(lambda: _counted(TableView(dx.open_table(str(copy)))))
    latest = view.version
    for label, version in (
        ("explorer slider step back (kernel)", latest - 1),
        ("explorer slider ten back (kernel)", latest - 11),
        ("explorer slider step forward (kernel)", latest - 10),
    ):
        out[label], _ = _timed(lambda version=version: _counted(view, version))


def _counted(view: Any, version: int | None = None) -> Any:
    """`view` moved to `version` (when given) with its overview counted (stage 2)."""
    if version is not None:
        view.set_version(version)
    view.overview(stage=2)
    return view


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("table", nargs="?", default=str(DEFAULT))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out", default=str(HERE / "results" / "live.md"))
    ap.add_argument("--work", help="where the runs' hard-linked copies go (default: TABLE's parent)")
    ap.add_argument("--one", help=argparse.SUPPRESS)  # a single run in this process (JSON out)
    args = ap.parse_args()
    table_dir = Path(args.table)
    if args.one:
        print(json.dumps(one_run(table_dir, Path(args.one))))
        return
    if not (table_dir / "_delta_log").is_dir():
        subprocess.run([sys.executable, str(GEN), str(table_dir), *GEN_ARGS], check=True)
    runs = []
    for _ in range(args.runs):  # each run in a fresh process: nothing cached from the one before
        with tempfile.TemporaryDirectory(prefix="bench-live-", dir=args.work or table_dir.parent) as work:
            done = subprocess.run(
                [sys.executable, __file__, str(table_dir), "--one", work], check=True, capture_output=True, text=True, cwd=ROOT
            )
            runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    cold = statistics.median(r["cold open"] for r in runs)
    cold_cpu = statistics.median(r["cold open cpu"] for r in runs)
    targets = {
        "refresh after 10 commits": "≤ 0.05",
        "one version back": "≤ 0.10",
        "one version forward": "≤ 0.10",
        "ten versions back": "≤ 0.25",
        "ten versions forward": "≤ 0.25",
        "timeline of every version": "≤ 2",
        "full history with derived counts": "≤ 0.5",
    }
    explorer = [
        "explorer slider step back (kernel)",
        "explorer slider ten back (kernel)",
        "explorer slider step forward (kernel)",
    ]
    lines = [
        "# A live table on the same `Table` (`benchmarks/bench_live.py`)",
        "",
        f"Table: `{table_dir.name}` ({runs[0]['versions in the timeline']:.0f} versions in the timeline), "
        f"{len(runs)} runs, each in a fresh process on a fresh hard-linked copy of the log. "
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}. "
        f"Cold open (`open_table().snapshot().add_actions()`, median): {cold:.2f} s.",
        "",
        "| step | median s | runs (s) | x cold open | target (issue 23) |",
        "|---|---|---|---|---|",
    ]
    for step, target in [("cold open", "1"), *targets.items()]:
        values = [r[step] for r in runs]
        med = statistics.median(values)
        lines.append(f"| {step} | {med:.3f} | {', '.join(f'{x:.2f}' for x in values)} | {med / cold:.3f} | {target} |")
    lines += [
        "",
        f"CPU (process time, all threads) of the steps that have it, x the cold open's (median {cold_cpu:.2f} s):",
        "",
        "| step | median CPU s | runs (s) | x cold open CPU |",
        "|---|---|---|---|",
    ]
    for step in ("cold open", "timeline of every version", "full history with derived counts"):
        values = [r[f"{step} cpu"] for r in runs]
        med = statistics.median(values)
        lines.append(f"| {step} | {med:.3f} | {', '.join(f'{x:.2f}' for x in values)} | {med / cold_cpu:.3f} |")
    warm = statistics.median(r["explorer warm open (kernel)"] for r in runs)
    lines += [
        "",
        f"The explorer's slider, kernel side (x its warm open: `TableView` + counted overview, median {warm:.2f} s):",
        "",
        "| step | median s | runs (s) | x warm open | target (issue 23) |",
        "|---|---|---|---|---|",
    ]
    for step in ["explorer warm open (kernel)", *explorer]:
        values = [r[step] for r in runs]
        med = statistics.median(values)
        target = "1" if "warm open" in step else "≤ 0.10 (with the browser's part)"
        lines.append(f"| {step} | {med:.3f} | {', '.join(f'{x:.2f}' for x in values)} | {med / warm:.3f} | {target} |")
    lines.append("")
    Path(args.out).write_text("\n".join(lines))
    (Path(args.out).with_suffix(".json")).write_text(json.dumps({"cold_open_s": cold, "runs": runs}, indent=1))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
