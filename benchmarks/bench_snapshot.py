"""Snapshot loading: deltaexplore vs delta-rs vs pyarrow alone, in one run.

For each table, each contender runs in a fresh subprocess (so peak memory is its own) a few
times; the median wall time and the peak RSS are reported:

- deltaexplore: ``dx.open_table(path).snapshot().files()``
- delta-rs: ``DeltaTable(path)`` + ``get_add_actions(flatten=True)``
- pyarrow alone: read the checkpoint columns deltaexplore needs (``add.*`` fields) and parse
  the JSON commits after it with ``pyarrow.json`` — the floor for any Arrow-based reader.

Tables come from ``../shared/tools/gen_big_log.py`` (generated under ``benchmarks/tables/`` if
missing, ~2 GB for all three):

- ``f100k``: 100k files at a checkpoint + 100 JSON commits after it
- ``f1m``: 1M files at a checkpoint + 100 JSON commits after it
- ``json10k``: 10k JSON commits, no checkpoint

Usage: ``python benchmarks/bench_snapshot.py [--runs 3] [--tables f100k,f1m,json10k] [--core-venv] [--kernel]``.
``--kernel`` also runs deltaexplore's open as the first cell of a fresh IPython kernel (started
through ``jupyter_client``, its start not counted): what a notebook user waits for.
Results go to ``benchmarks/results/snapshot.md`` (and ``.json``; ``snapshot-core.*`` with
``--core-venv``). Nothing here asserts timings.

The runs interleave the contenders (run 1 of each, then run 2 of each, ...) so that bursts of
machine noise fall on all of them. Environment matters for the fixed costs of a short process:
in the dev environment pandas is installed, and pyarrow imports it (about 0.3 s) on the first
conversion of a Python or NumPy object; delta-rs does not. ``--core-venv`` runs every contender
in ``benchmarks/.venv-core``: deltaexplore's own dependencies (from ``pyproject.toml``, the code
from this checkout) plus ``deltalake``, as after ``pip install deltaexplore deltalake``.

Like an installed package, the checkout's code is imported from bytecode compiled once before
the runs (into ``benchmarks/.pycache``, whatever ``PYTHONDONTWRITEBYTECODE`` says): pip compiles
what it installs, so compiling the sources in every run would charge deltaexplore ~30-40 ms
of import that no user pays (delta-rs and pyarrow come compiled from pip).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PYCACHE = HERE / ".pycache"
GEN = ROOT.parent / "shared" / "tools" / "gen_big_log.py"
TABLES = {
    "f100k": ["--files", "100000", "--commits", "100", "--post-commits", "100"],
    "f1m": ["--files", "1000000", "--commits", "100", "--post-commits", "100"],
    "json10k": ["--files", "100000", "--commits", "10000", "--no-checkpoint"],
}

CONTENDERS = {
    "deltaexplore": """
import deltaexplore as dx
files = dx.open_table(PATH).snapshot().files()
ROWS = files.num_rows
""",
    "delta-rs": """
from deltalake import DeltaTable
actions = DeltaTable(PATH).get_add_actions(flatten=True)
ROWS = actions.num_rows
""",
    "pyarrow": """
import glob, os
import pyarrow as pa, pyarrow.json as pj, pyarrow.parquet as pq
log = os.path.join(PATH, "_delta_log")
ckpts = sorted(glob.glob(os.path.join(log, "*.checkpoint.parquet")))
ROWS = 0
start = -1
if ckpts:
    cols = ["add.path", "add.partitionValues", "add.size", "add.modificationTime", "add.dataChange", "add.stats",
            "add.tags", "add.deletionVector", "add.baseRowId", "add.defaultRowCommitVersion"]
    pf = pq.ParquetFile(ckpts[-1])
    names = {f.name for f in pf.schema_arrow.field("add").type}
    t = pf.read(columns=[c for c in cols if c.split(".")[1] in names])
    ROWS += t.num_rows
    start = int(os.path.basename(ckpts[-1]).split(".")[0])
commits = sorted(p for p in glob.glob(os.path.join(log, "*.json")) if int(os.path.basename(p).split(".")[0]) > start)
data = b"".join(open(p, "rb").read() for p in commits)
dv = pa.struct([("storageType", pa.string()), ("pathOrInlineDv", pa.string()), ("offset", pa.int32()),
                ("sizeInBytes", pa.int32()), ("cardinality", pa.int64())])
add = pa.struct([("path", pa.string()), ("size", pa.int64()), ("modificationTime", pa.int64()), ("dataChange", pa.bool_()),
                 ("stats", pa.string()), ("deletionVector", dv), ("baseRowId", pa.int64()),
                 ("defaultRowCommitVersion", pa.int64()), ("partitionValues", pa.struct([])), ("tags", pa.struct([]))])
rm = pa.struct([("path", pa.string()), ("deletionTimestamp", pa.int64()), ("dataChange", pa.bool_()), ("deletionVector", dv)])
schema = pa.schema([("add", add), ("remove", rm)])
t = pj.read_json(pa.BufferReader(pa.py_buffer(data)), read_options=pj.ReadOptions(block_size=1 << 24),
                 parse_options=pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore"))
ROWS += t.num_rows
""",
}

RUNNER = """
import resource, sys, time
PATH = sys.argv[1]
t0, c0 = time.perf_counter(), time.process_time()
{code}
elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(f"RESULT {{elapsed}} {{peak_kb}} {{ROWS}} {{cpu}}")
print(f"PANDAS {{int('pandas' in sys.modules)}}")
"""


def ensure_table(name: str, base: Path) -> Path:
    path = base / name
    if (path / "_delta_log").exists():
        return path
    base.mkdir(parents=True, exist_ok=True)
    print(f"generating {path} ...", flush=True)
    subprocess.run([sys.executable, str(GEN), str(path), *TABLES[name], "--no-validate"], check=True)
    return path


def core_venv(path: Path) -> str:
    """The interpreter of a venv with deltaexplore's dependencies and deltalake (created once)."""
    python = path / "bin" / "python"
    if not python.exists():
        deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
        subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *deps, "deltalake"], check=True)
    return str(python)


def contender_env() -> dict[str, str]:
    """The checkout on the path, its bytecode read from (and written to) `PYCACHE`."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONPYCACHEPREFIX=str(PYCACHE))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def compile_checkout(python: str) -> None:
    """Byte-compile deltaexplore for `python` once, as pip does on install."""
    subprocess.run([python, "-m", "compileall", "-q", str(ROOT / "deltaexplore")], check=True, env=contender_env())


def run_once(contender: str, path: Path, python: str = sys.executable) -> tuple[float, float, int, float]:
    """(wall seconds, peak MB, rows, CPU seconds of the process: all its threads)."""
    code = RUNNER.format(code=CONTENDERS[contender])
    out = subprocess.run([python, "-c", code, str(path)], capture_output=True, text=True, check=True, env=contender_env())
    line = next(line for line in out.stdout.splitlines() if line.startswith("RESULT"))
    _, elapsed, peak_kb, rows, cpu = line.split()
    if contender == "deltaexplore" and "PANDAS 1" in out.stdout:
        IMPORTED_PANDAS.add(path.name)
    return float(elapsed), int(peak_kb) / 1024, int(rows), float(cpu)


#: tables whose deltaexplore open imported pandas (pyarrow does on a first conversion of a Python value)
IMPORTED_PANDAS: set[str] = set()

KERNEL_RUNNER = """
import resource, time
PATH = {path!r}
t0, c0 = time.perf_counter(), time.process_time()
{code}
elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
print(f"RESULT {{elapsed}} {{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}} {{ROWS}} {{cpu}}")
"""


def run_in_kernel(path: Path, python: str = sys.executable) -> tuple[float, float, int, float]:
    """deltaexplore's open as the first cell of a fresh IPython kernel (its start not counted):
    what a notebook user waits for on the first open."""
    km, kc = _kernel_for(python)
    try:
        out: list[str] = []

        def hook(msg: dict) -> None:
            if msg["msg_type"] == "stream":
                out.append(msg["content"]["text"])
            elif msg["msg_type"] == "error":
                out.append("\n".join(msg["content"]["traceback"]))

        code = KERNEL_RUNNER.format(path=str(path), code=CONTENDERS["deltaexplore"])
        kc.execute_interactive(code, output_hook=hook, timeout=600)
        line = next(line for line in "".join(out).splitlines() if line.startswith("RESULT"))
        _, elapsed, peak_kb, rows, cpu = line.split()
        return float(elapsed), int(peak_kb) / 1024, int(rows), float(cpu)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def _kernel_for(python: str) -> tuple[Any, Any]:
    """A started IPython kernel of `python` and its client, ready."""
    from jupyter_client.manager import KernelManager

    km = KernelManager(kernel_cmd=[python, "-m", "ipykernel_launcher", "-f", "{connection_file}"])
    km.start_kernel(env=contender_env(), cwd=str(ROOT))
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=120)
    return km, kc


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--tables", default="f100k,f1m,json10k")
    ap.add_argument("--dir", default=os.environ.get("DELTAEXPLORE_BENCH_DIR", str(HERE / "tables")))
    ap.add_argument("--core-venv", action="store_true", help="run the contenders in benchmarks/.venv-core (no pandas)")
    ap.add_argument("--kernel", action="store_true", help="also open with deltaexplore as the first cell of a fresh kernel")
    args = ap.parse_args()
    load_before = os.getloadavg()[0]
    python = core_venv(HERE / ".venv-core") if args.core_venv else sys.executable
    compile_checkout(python)
    environment = (
        "`benchmarks/.venv-core`: deltaexplore's dependencies + deltalake, no pandas"
        if args.core_venv
        else "the dev environment (pandas installed: pyarrow imports it, ~0.3 s, on the first conversion of a Python value, "
        "which deltaexplore's open no longer makes)"
    )
    results = []
    for name in args.tables.split(","):
        path = ensure_table(name, Path(args.dir))
        contenders = [*CONTENDERS, *(["kernel"] if args.kernel else [])]
        measured: dict[str, list[tuple[float, float, int, float]]] = {c: [] for c in contenders}
        for _ in range(args.runs):
            for contender in CONTENDERS:
                measured[contender].append(run_once(contender, path, python))
            if args.kernel:
                measured["kernel"].append(run_in_kernel(path, python))
        for contender in contenders:
            times = [m[0] for m in measured[contender]]
            peaks = [m[1] for m in measured[contender]]
            rows = measured[contender][-1][2]
            row = {
                "table": name,
                "contender": contender,
                "median_s": statistics.median(times),
                "min_s": min(times),
                "cpu_median_s": statistics.median(m[3] for m in measured[contender]),
                "peak_mb": max(peaks),
                "rows": rows,
                "table_dir": path.resolve().name,
            }
            results.append(row)
            print(
                f"{name:8} {contender:12} median {row['median_s']:7.2f}s  min {row['min_s']:7.2f}s  "
                f"cpu {row['cpu_median_s']:7.2f}s  "
                f"peak {row['peak_mb']:8.0f} MB  rows {rows}",
                flush=True,
            )
    out_dir = HERE / "results"
    out_dir.mkdir(exist_ok=True)
    stem = "snapshot-core" if args.core_venv else "snapshot"
    (out_dir / f"{stem}.json").write_text(json.dumps(results, indent=1))
    lines = [
        "# Snapshot loading (`snapshot().files()`)",
        "",
        f"Run {time.strftime('%Y-%m-%d %H:%M')} on {os.cpu_count()} cores (load average {load_before:.1f} at the start, "
        f"{os.getloadavg()[0]:.1f} at the end), "
        f"median of {args.runs} interleaved runs, "
        f"each in a fresh process (import included, from bytecode compiled once as pip does), in {environment}. "
        "Wall seconds, then the process's CPU seconds (all its threads: what a loaded machine blurs least). "
        f"deltaexplore's open imported pandas: {', '.join(sorted(IMPORTED_PANDAS)) or 'in no run'}.",
        "",
        "| table | deltaexplore | delta-rs | pyarrow alone | vs delta-rs | vs pyarrow | CPU s (dx / delta-rs) | CPU vs delta-rs "
        "| peak MB (dx / delta-rs) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    by = {(r["table"], r["contender"]): r for r in results}
    for name in args.tables.split(","):
        dx_, rs, pa_ = by[(name, "deltaexplore")], by[(name, "delta-rs")], by[(name, "pyarrow")]
        label = name if dx_["table_dir"] == name else f"{name} (`{dx_['table_dir']}`)"
        lines.append(
            f"| {label} | {dx_['median_s']:.2f} s | {rs['median_s']:.2f} s | {pa_['median_s']:.2f} s | "
            f"{dx_['median_s'] / rs['median_s']:.2f}x | {dx_['median_s'] / pa_['median_s']:.2f}x | "
            f"{dx_['cpu_median_s']:.2f} / {rs['cpu_median_s']:.2f} | {dx_['cpu_median_s'] / rs['cpu_median_s']:.2f}x | "
            f"{dx_['peak_mb']:.0f} / {rs['peak_mb']:.0f} |"
        )
    if args.kernel:
        lines += [
            "",
            "The same open as the first cell of a fresh IPython kernel (kernel start not counted; peak includes the kernel):",
            "",
            "| table | in a kernel | fresh process | kernel vs process | CPU s (kernel / process) | CPU, kernel vs process "
            "| peak MB (kernel / process) |",
            "|---|---|---|---|---|---|---|",
        ]
        for name in args.tables.split(","):
            k, dx_ = by[(name, "kernel")], by[(name, "deltaexplore")]
            lines.append(
                f"| {name} | {k['median_s']:.2f} s | {dx_['median_s']:.2f} s | {k['median_s'] / dx_['median_s']:.2f}x | "
                f"{k['cpu_median_s']:.2f} / {dx_['cpu_median_s']:.2f} | {k['cpu_median_s'] / dx_['cpu_median_s']:.2f}x | "
                f"{k['peak_mb']:.0f} / {dx_['peak_mb']:.0f} |"
            )
    (out_dir / f"{stem}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
