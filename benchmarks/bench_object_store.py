"""Opening a table on S3 at an object store's latency: deltaexplore vs delta-rs, in one run.

moto's S3 server runs in its own process on 127.0.0.1 (`tests/s3_server.py`), and a loopback
proxy in another (`latency_proxy.py`, asyncio) answers every request after a fixed delay (20 ms
and 100 ms: a region away, a continent away). moto spends milliseconds of CPU on a request on
this 2-core machine (werkzeug, a thread per connection), which would hide the latency being
measured: the proxy answers a repeated GET/HEAD (object or listing page; nothing changes during
the run; one unmeasured open per contender warms it) from memory, after the delay, serving all
connections at once on one asyncio loop at ~50 µs of CPU per request (see its docstring). Each
contender opens the same table in a fresh process, a few times, interleaved:

Each run reports the whole process (imports included) and the open after the imports.

- deltaexplore: ``dx.open_table("s3://...", storage_options=...).snapshot().files()``
- deltaexplore at a baseline git ref (``--baseline main``: the code before a change, measured
  in the same run as after it), extracted with ``git archive``
- delta-rs: ``DeltaTable("s3://...", storage_options=...)`` + ``get_add_actions(flatten=True)``

Tables (``../shared/tools/gen_big_log.py``, uploaded to the server once per latency):

- ``c1000``: 1,000 JSON commits, no checkpoint (10k files)
- ``ck900``: a checkpoint at version 900 and 100 commits after it (10k files)

Usage: ``python benchmarks/bench_object_store.py [--runs 3] [--latencies 20,100] [--baseline main]``.
Results go to ``benchmarks/results/object-store.md`` (and ``.json``). Nothing here asserts timings.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PYCACHE = HERE / ".pycache"
GEN = ROOT.parent / "shared" / "tools" / "gen_big_log.py"
SERVER = ROOT / "tests" / "s3_server.py"
PROXY = HERE / "latency_proxy.py"
TABLES = {
    "c1000": ["--files", "10000", "--commits", "1000", "--no-checkpoint"],
    "ck900": ["--files", "10000", "--commits", "900", "--post-commits", "100"],
}

CONTENDERS = {  # (imports, open after the imports)
    "deltaexplore": (
        "import deltaexplore as dx",
        """
opts = {"key": "testing", "secret": "testing", "client_kwargs": {"endpoint_url": ENDPOINT, "region_name": "us-east-1"}}
ROWS = dx.open_table(URI, storage_options=opts).snapshot().files().num_rows
""",
    ),
    "delta-rs": (
        "from deltalake import DeltaTable",
        """
opts = {"AWS_ENDPOINT_URL": ENDPOINT, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION": "us-east-1", "AWS_ALLOW_HTTP": "true"}
ROWS = DeltaTable(URI, storage_options=opts).get_add_actions(flatten=True).num_rows
""",
    ),
}
CONTENDERS["baseline"] = CONTENDERS["deltaexplore"]

RUNNER = """
import sys, time
URI, ENDPOINT = sys.argv[1], sys.argv[2]
t0, c0 = time.perf_counter(), time.process_time()
{imports}
t1 = time.perf_counter()
{code}
elapsed, opened, cpu = time.perf_counter() - t0, time.perf_counter() - t1, time.process_time() - c0
print(f"RESULT {{elapsed}} {{opened}} {{ROWS}} {{cpu}} {{int('pandas' in sys.modules)}}")
"""


def ensure_table(name: str, base: Path) -> Path:
    path = base / name
    if (path / "_delta_log").exists():
        return path
    base.mkdir(parents=True, exist_ok=True)
    print(f"generating {path} ...", flush=True)
    subprocess.run([sys.executable, str(GEN), str(path), *TABLES[name], "--no-validate"], check=True)
    return path


def start_server(latency_ms: float) -> tuple[list[subprocess.Popen[str]], str, str]:
    """moto's server (no latency of its own) and the latency proxy in front of it, each in its
    own process: (processes, the proxy's endpoint, moto's endpoint for uploads)."""
    procs: list[subprocess.Popen[str]] = []

    def start(args: list[str]) -> str:
        proc = subprocess.Popen([sys.executable, *args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        procs.append(proc)
        assert proc.stdout is not None
        endpoint = proc.stdout.readline().strip()
        if not endpoint.startswith("http"):
            for p in procs:
                p.kill()
            raise RuntimeError(f"{args[0]} did not start (said {endpoint!r})")
        return endpoint

    moto = start([str(SERVER), "--latency-ms", "0"])
    proxy = start([str(PROXY), "--upstream", moto, "--latency-ms", str(latency_ms)])
    return procs, proxy, moto


def upload(endpoint: str, name: str, path: Path) -> None:
    import boto3

    client = boto3.client(
        "s3", endpoint_url=endpoint, aws_access_key_id="testing", aws_secret_access_key="testing", region_name="us-east-1"
    )
    files = [Path(d) / f for d, _, names in os.walk(path) for f in names]
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda f: client.upload_file(str(f), "lake", f"{name}/{f.relative_to(path).as_posix()}"), files))


def baseline_checkout(ref: str, into: Path) -> Path:
    """The package at git `ref`, extracted (its code only) under `into`."""
    archive = into / "baseline.tar"
    subprocess.run(["git", "-C", str(ROOT), "archive", "-o", str(archive), ref, "deltaexplore"], check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into / "baseline", filter="data")
    return into / "baseline"


def env_for(code_root: Path) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(code_root), PYTHONPYCACHEPREFIX=str(PYCACHE))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def requests_since(endpoint: str) -> dict[str, int]:
    """Requests the server answered since the last call, by kind (`tests/s3_server.py`)."""
    import urllib.request

    with urllib.request.urlopen(f"{endpoint}/_faults/requests", timeout=30) as r:
        return dict(json.loads(r.read()))


def run_once(contender: str, uri: str, endpoint: str, code_root: Path) -> tuple[float, float, int, float, bool]:
    """(seconds of the whole process from before its imports, seconds of the open after them,
    rows, CPU seconds of the whole process (all its threads), whether it imported pandas)."""
    imports, code = CONTENDERS[contender]
    code = RUNNER.format(imports=imports, code=code)
    out = subprocess.run(
        [sys.executable, "-c", code, uri, endpoint],
        capture_output=True,
        text=True,
        check=True,
        env=env_for(code_root),
        cwd=str(code_root),  # `python -c` puts the working directory first on sys.path: the checkout's own code
    )
    line = next(line for line in out.stdout.splitlines() if line.startswith("RESULT"))
    _, elapsed, opened, rows, cpu, pandas = line.split()
    return float(elapsed), float(opened), int(rows), float(cpu), pandas == "1"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--latencies", default="20,100", help="milliseconds per request, comma-separated")
    ap.add_argument("--tables", default="c1000,ck900")
    ap.add_argument("--baseline", default=None, help="also run deltaexplore at this git ref (before a change)")
    ap.add_argument("--dir", default=os.environ.get("DELTAEXPLORE_BENCH_DIR", str(HERE / "tables")))
    args = ap.parse_args()
    load_before = os.getloadavg()[0]
    tables = {name: ensure_table(name, Path(args.dir)) for name in args.tables.split(",")}
    contenders = ["deltaexplore", "delta-rs"] + (["baseline"] if args.baseline else [])
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        roots = {"deltaexplore": ROOT, "delta-rs": ROOT}
        if args.baseline:
            roots["baseline"] = baseline_checkout(args.baseline, Path(tmp))
        for root in set(roots.values()):
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(root / "deltaexplore")], check=True, env=env_for(root))
        for latency in [float(x) for x in args.latencies.split(",")]:
            servers, endpoint, moto = start_server(latency)
            try:
                for name, path in tables.items():
                    upload(moto, name, path)
                    uri = f"s3://lake/{name}"
                    measured: dict[str, list[tuple[float, float, int, float, bool]]] = {c: [] for c in contenders}
                    counts: dict[str, dict[str, int]] = {}
                    requests_since(endpoint)
                    for c in contenders:  # warms the server's read cache; counts the requests of an open
                        run_once(c, uri, endpoint, roots[c])
                        counts[c] = requests_since(endpoint)
                    for _ in range(args.runs):
                        for c in contenders:
                            measured[c].append(run_once(c, uri, endpoint, roots[c]))
                    for c in contenders:
                        times = [m[0] for m in measured[c]]
                        opens = [m[1] for m in measured[c]]
                        row = {
                            "latency_ms": latency,
                            "table": name,
                            "contender": c,
                            "median_s": statistics.median(times),
                            "min_s": min(times),
                            "open_median_s": statistics.median(opens),
                            "open_min_s": min(opens),
                            "cpu_median_s": statistics.median(m[3] for m in measured[c]),
                            "imported_pandas": any(m[4] for m in measured[c]),
                            "rows": measured[c][-1][2],
                            "requests": counts[c],
                        }
                        results.append(row)
                        print(
                            f"{latency:5.0f} ms {name:6} {c:12} median {row['median_s']:6.2f}s "
                            f"(open after imports {row['open_median_s']:6.2f}s) cpu {row['cpu_median_s']:6.2f}s "
                            f"pandas {row['imported_pandas']} rows {row['rows']}",
                            flush=True,
                        )
            finally:
                for server in servers:
                    server.kill()
                    server.wait()
    out_dir = HERE / "results"
    (out_dir / "object-store.json").write_text(json.dumps(results, indent=1))
    by = {(r["latency_ms"], r["table"], r["contender"]): r for r in results}
    head = (
        "| latency | table | deltaexplore, process | delta-rs, process | vs delta-rs | "
        "deltaexplore, open after imports | delta-rs, open after imports | vs delta-rs | "
        "CPU s, process (dx / delta-rs) | CPU vs delta-rs |"
    )
    sep = "|---|---|---|---|---|---|---|---|---|---|"
    if args.baseline:
        head += f" before (`{args.baseline}`), process | open after imports | vs delta-rs (open) |"
        sep += "---|---|---|"
    lines = [
        "# Opening a table on S3 at a latency (`snapshot().files()`)",
        "",
        f"Run {time.strftime('%Y-%m-%d %H:%M')} on {os.cpu_count()} cores (load average {load_before:.1f} at the start, "
        f"{os.getloadavg()[0]:.1f} at the end): "
        "moto's S3 server in its own process behind a loopback proxy (`latency_proxy.py`, its own process) "
        "answering every request after the latency, repeated reads and listing pages from memory; "
        f"median of {args.runs} interleaved runs, each in a fresh process. *Process*: from before the "
        "imports to the file list (what a script waits for); *open after imports*: the same process "
        "from after `import deltaexplore` / `from deltalake import DeltaTable` (what a notebook "
        "that imported the library waits for); *CPU*: the whole process's CPU seconds (all its threads), "
        "what a loaded machine blurs least. deltaexplore's processes imported pandas: "
        f"{'yes' if any(r['imported_pandas'] for r in results if r['contender'] == 'deltaexplore') else 'no'}.",
        "",
        head,
        sep,
    ]
    for latency in sorted({r["latency_ms"] for r in results}):
        for name in tables:
            dx_, rs = by[(latency, name, "deltaexplore")], by[(latency, name, "delta-rs")]
            line = (
                f"| {latency:.0f} ms | {name} | {dx_['median_s']:.2f} s | {rs['median_s']:.2f} s | "
                f"{dx_['median_s'] / rs['median_s']:.2f}x | {dx_['open_median_s']:.2f} s | {rs['open_median_s']:.2f} s | "
                f"{dx_['open_median_s'] / rs['open_median_s']:.2f}x | {dx_['cpu_median_s']:.2f} / {rs['cpu_median_s']:.2f} | "
                f"{dx_['cpu_median_s'] / rs['cpu_median_s']:.2f}x |"
            )
            if args.baseline:
                b = by[(latency, name, "baseline")]
                line += f" {b['median_s']:.2f} s | {b['open_median_s']:.2f} s | {b['open_median_s'] / rs['open_median_s']:.2f}x |"
            lines.append(line)
    lines += [
        "",
        "Requests of one open (the machine-independent measure: each costs a round trip; LIST is a listing page), "
        "and the most connections and requests the proxy saw open at once:",
        "",
        "| table | " + " | ".join(contenders) + " |",
        "|---|" + "---|" * len(contenders),
    ]
    first = min(r["latency_ms"] for r in results)
    for name in tables:
        cells = []
        for c in contenders:
            n = by[(first, name, c)]["requests"]
            kinds = ", ".join(f"{v} {k}" for k, v in sorted(n.items()) if k != "total" and not k.startswith("max_"))
            cells.append(
                f"{n.get('total', 0)} ({kinds}); at most {n.get('max_connections', '?')} connections, "
                f"{n.get('max_in_flight', '?')} requests open at once"
            )
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    (out_dir / "object-store.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
