"""Peak memory and time of opening a table with millions of files and showing its overview:
deltaexplore's streaming pass against its replayed state and against delta-rs's open.

    python benchmarks/bench_scale.py --files 1000000,10000000 [--cap-gb 12] [--dir DIR] [--keep]

Tables are written by `gen_many_files.py` (multi-part checkpoint of 1M actions a part, 20
commits after it) into `--dir` and deleted afterwards unless `--keep`. Every contender runs
in a fresh process under an address-space cap (`--cap-gb`: a contender that needs more fails,
it does not take the machine), its peak resident memory read from its own `VmHWM`:

- `dx streaming`: `open_table` + `file_pass` + overview, partitions, file-size histogram, DV
  table (what the explorer's tabs show past its streaming threshold)
- `dx replayed`: `open_table` + `overview()` (the whole state replayed, statistics parsed)
- `delta-rs open`: `DeltaTable(path)` (its snapshot holds the active files) and its file count

Results go to `benchmarks/results/scale.md` (and `.json`). Timings on a shared machine are
noisy: read the ratios within one run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

CONTENDERS = {
    "dx streaming": """
import deltaexplore as dx
from deltaexplore.inspect.streaming import file_pass
fp = file_pass(dx.open_table(PATH).snapshot())
out = [fp.overview(), fp.partitions(), fp.file_sizes(), fp.deletion_vectors()]
FILES = fp.files
""",
    "dx replayed": """
import deltaexplore as dx
snap = dx.open_table(PATH).snapshot()
snap.inspect.overview()
FILES = snap.num_files
""",
    "delta-rs open": """
from deltalake import DeltaTable
t = DeltaTable(PATH)
FILES = len(t.file_uris())
""",
}

RUNNER = """
import sys, time
PATH = sys.argv[1]
t0 = time.perf_counter()
{code}
elapsed = time.perf_counter() - t0
peak = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM"))
print(f"RESULT {{elapsed}} {{peak}} {{FILES}}")
"""


def run(contender: str, path: Path, cap_bytes: int) -> dict[str, object]:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (cap_bytes, cap_bytes))

    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", RUNNER.format(code=CONTENDERS[contender]), str(path)],
        check=False,
        capture_output=True,
        text=True,
        preexec_fn=limit,  # a cap on the child only
    )
    line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT")), None)
    if proc.returncode != 0 or line is None:
        tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1][:160]
        return {"contender": contender, "ok": False, "error": tail, "seconds": time.perf_counter() - started}
    _, elapsed, peak_kb, files = line.split()
    return {"contender": contender, "ok": True, "seconds": float(elapsed), "peak_mb": int(peak_kb) / 1024, "files": int(files)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", default="1000000")
    ap.add_argument("--cap-gb", type=float, default=12.0)
    ap.add_argument("--dir", default=os.environ.get("DELTAEXPLORE_BENCH_DIR", str(HERE / "tables")))
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    cap = int(args.cap_gb * (1 << 30))
    results = []
    for n in (int(x) for x in args.files.split(",")):
        path = Path(args.dir) / f"many{n}"
        if not (path / "_delta_log").exists():
            subprocess.run(
                [
                    sys.executable,
                    str(HERE / "gen_many_files.py"),
                    str(path),
                    "--files",
                    str(n),
                    "--parts",
                    str(max(1, n // 1_000_000)),
                ],
                check=True,
            )
        for contender in CONTENDERS:
            row = {"table_files": n, **run(contender, path, cap)}
            results.append(row)
            print(json.dumps(row), flush=True)
        if not args.keep:
            shutil.rmtree(path)
    out = HERE / "results"
    (out / "scale.json").write_text(json.dumps(results, indent=1))
    lines = [
        "# Millions of files: open + overview, peak memory",
        "",
        f"Run {time.strftime('%Y-%m-%d %H:%M')} on {os.cpu_count()} cores (shared, loaded), each contender in a fresh "
        f"process under a {args.cap_gb:g} GiB address-space cap; peak = the process's VmHWM. Tables from "
        "`gen_many_files.py` (checkpoint parts of 1M actions, 20 commits after).",
        "",
        "| files | contender | seconds | peak MB | peak vs delta-rs | files seen |",
        "|---|---|---|---|---|---|",
    ]
    for n in sorted({r["table_files"] for r in results}):
        rows = [r for r in results if r["table_files"] == n]
        drs = next((r for r in rows if r["contender"] == "delta-rs open" and r["ok"]), None)
        for r in rows:
            if not r["ok"]:
                lines.append(f"| {n:,} | {r['contender']} | failed | - | - | {r['error']} |")
                continue
            ratio = f"{r['peak_mb'] / drs['peak_mb']:.2f}x" if drs else "(delta-rs failed)"
            lines.append(f"| {n:,} | {r['contender']} | {r['seconds']:.1f} | {r['peak_mb']:.0f} | {ratio} | {r['files']:,} |")
    (out / "scale.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
