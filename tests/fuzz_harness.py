"""Fuzzing hostile logs: seeded mutations of corpus tables, run in a watched child process.

A case is (corpus table, mutation, seed). The parent copies the table, applies the mutation
and hands the copy to a worker process, which does what a user would (open, snapshot, files,
history, rows, changes, every inspection, dry runs of the operations) and reports, per case,
`ok` (everything answered), `typed` (some step raised a `DeltaExploreError`, none anything
else) or `other` (a raw exception: the step, its type and message). A case that runs longer
than its time budget is a `hang`: the worker is killed and a fresh one takes the next case; a
worker that dies (a crash, the memory limit) is a `crash`. Workers run with a bounded address
space, so a case that would eat the machine's memory fails instead.

Used by `tests/test_fuzz.py`; run it directly for statistics over any number of cases:

    python tests/fuzz_harness.py --cases 3200 [--seed 0] [--workers 2] [--timeout 20]
"""

from __future__ import annotations

import json
import os
import random
import select
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from corpus_paths import CORPUS, corpus_catalog  # noqa: E402

TABLES = [
    "delta-golden/dv-partitioned-with-checkpoint",
    "delta-golden/log-replay-dv-key-cases",
    "delta-golden/v2-checkpoint-json",
    "delta-golden/v2-checkpoint-parquet",
    "delta-kernel-java/basic-dv-no-checkpoint",
    "delta-kernel-java/kernel-pagination-v2-checkpoint-parquet",
    "dat/cdf",
    "dat/deletion_vectors",
    "dat/iceberg_compat_v1",
    "dat/stats_as_struct",
    "delta-rs/cdc_ict_table",
    "delta-rs/checkpoint-v2-table",
    "delta-rs/simple_table_with_checkpoint",
    "delta-rs/table_with_partitioning_mapping",
    "delta-kernel-rs/cdf-column-mapping-id-mode",
    "delta-kernel-rs/cdf-table-with-dv",
    "delta-kernel-rs/compacted-log-files-table",
    "delta-kernel-rs/v1-multi-part-partitioned-struct-stats-only",
    "delta-kernel-rs/v2-classic-checkpoint-json",
    "delta-kernel-rs/stats-writing-all-types",
]

MUTATIONS = [
    "truncate",
    "flip",
    "delete_line",
    "wrong_type",
    "deep_nesting",
    "huge_number",
    "broken_checkpoint",
    "dv_file",
    "last_checkpoint",
    "stray_version",
]

ADDRESS_SPACE = 8 << 30  # a worker's memory limit (virtual address space)


def table_roots() -> dict[str, Path]:
    """Corpus table id -> root, for the fuzzed tables present in the corpus."""
    rows = {t["id"]: t for t in corpus_catalog()}
    return {t: CORPUS / rows[t]["table_root"] for t in TABLES if t in rows and (CORPUS / rows[t]["table_root"]).exists()}


# -- mutations ---------------------------------------------------------------------------------------


def _log_files(root: Path, pattern: str = "*") -> list[Path]:
    return sorted(p for p in (root / "_delta_log").rglob(pattern) if p.is_file() and not p.name.endswith(".crc.crc"))


def _commits(root: Path) -> list[Path]:
    return [p for p in _log_files(root, "*.json") if p.name[:20].isdigit() and ".checkpoint" not in p.name]


def _checkpoints(root: Path) -> list[Path]:
    files = [p for p in _log_files(root) if ".checkpoint" in p.name and not p.name.startswith(".")]
    return files or _commits(root)


def _leaf_paths(obj: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _leaf_paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _leaf_paths(v, (*prefix, i))
    if prefix:
        yield prefix


def _set_at(obj: Any, path: tuple[Any, ...], value: Any) -> None:
    for key in path[:-1]:
        obj = obj[key]
    obj[path[-1]] = value


def _edit_json_line(path: Path, rng: random.Random, make: Callable[[Any, random.Random], Any]) -> None:
    """Replace one value (anywhere in one action line) by `make(old, rng)`; a line whose JSON
    does not parse is replaced whole."""
    lines = path.read_bytes().split(b"\n")
    idx = [i for i, line in enumerate(lines) if line.strip()]
    if not idx:
        path.write_bytes(json.dumps(make(None, rng)).encode())
        return
    i = rng.choice(idx)
    try:
        obj = json.loads(lines[i])
    except ValueError:
        lines[i] = json.dumps(make(None, rng)).encode()
    else:
        leaves = list(_leaf_paths(obj))
        if leaves:
            where = rng.choice(leaves)
            old = obj
            for key in where:
                old = old[key]
            _set_at(obj, where, make(old, rng))
        else:
            obj = make(obj, rng)
        lines[i] = json.dumps(obj).encode()
    path.write_bytes(b"\n".join(lines))


def _wrong_type(old: Any, rng: random.Random) -> Any:
    choices: list[Any] = ["text", 17, -1, 3.5, True, None, [1, "a"], {"k": "v"}, "", "1e3", {"path": 5}]
    return rng.choice([c for c in choices if type(c) is not type(old)] or choices)


def _deep(old: Any, rng: random.Random) -> Any:
    return _DeepText(rng.choice([900, 5_000, 200_000]), rng.choice("[{"))


class _DeepText:
    """A nesting too deep to build as Python objects: written as text."""

    def __init__(self, depth: int, kind: str) -> None:
        self.text = ("[" * depth + "]" * depth) if kind == "[" else ('{"a":' * depth + "1" + "}" * depth)


def _huge(old: Any, rng: random.Random) -> Any:
    return rng.choice([10**30, -(10**30), 2**63, 2**64, -(2**63) - 1, 1e308, float("inf"), float("nan"), -1, 10**400])


def _dump(obj: Any) -> str:
    """JSON text of `obj`, with `_DeepText` pieces spliced in and non-finite floats as the
    bare tokens a broken writer would emit."""
    slots: list[str] = []

    def encode(o: Any) -> Any:
        if isinstance(o, _DeepText):
            slots.append(o.text)
            return f"\x00SLOT{len(slots) - 1}\x00"
        if isinstance(o, dict):
            return {k: encode(v) for k, v in o.items()}
        if isinstance(o, list):
            return [encode(v) for v in o]
        return o

    text = json.dumps(encode(obj), allow_nan=True)
    for i, s in enumerate(slots):
        text = text.replace(f'"\\u0000SLOT{i}\\u0000"', s)
    return text


def _edit_with(path: Path, rng: random.Random, make: Callable[[Any, random.Random], Any]) -> None:
    lines = path.read_bytes().split(b"\n")
    idx = [i for i, line in enumerate(lines) if line.strip()]
    if not idx:
        return
    i = rng.choice(idx)
    try:
        obj = json.loads(lines[i])
    except ValueError:
        lines[i] = _dump(make(None, rng)).encode()
        path.write_bytes(b"\n".join(lines))
        return
    leaves = list(_leaf_paths(obj))
    if rng.random() < 0.2 or not leaves:
        obj = {rng.choice(["add", "remove", "metaData", "protocol", "commitInfo", "txn", "sidecar"]): make(None, rng)}
    else:
        _set_at(obj, rng.choice(leaves), make(None, rng))
    lines[i] = _dump(obj).encode()
    path.write_bytes(b"\n".join(lines))


def _flip(path: Path, rng: random.Random) -> None:
    buf = bytearray(path.read_bytes())
    for _ in range(rng.randint(1, max(1, len(buf) // 40))):
        if buf:
            buf[rng.randrange(len(buf))] = rng.randrange(256)
    path.write_bytes(bytes(buf))


def _truncate(path: Path, rng: random.Random) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: rng.randrange(0, max(1, len(data)))])


def mutate(root: Path, kind: str, rng: random.Random) -> str:
    """Apply mutation `kind` to the table copy at `root`; a description of what was done."""
    log = root / "_delta_log"
    if kind == "truncate":
        victim = rng.choice(_log_files(root))
        _truncate(victim, rng)
    elif kind == "flip":
        victim = rng.choice(_log_files(root))
        _flip(victim, rng)
    elif kind == "delete_line":
        victim = rng.choice(_commits(root) or _log_files(root))
        lines = victim.read_bytes().split(b"\n")
        if lines:
            del lines[rng.randrange(len(lines))]
        victim.write_bytes(b"\n".join(lines))
    elif kind == "wrong_type":
        victim = rng.choice(_commits(root) or _log_files(root))
        _edit_json_line(victim, rng, _wrong_type)
    elif kind == "deep_nesting":
        victim = rng.choice(_commits(root) or _log_files(root))
        _edit_with(victim, rng, _deep)
    elif kind == "huge_number":
        victim = rng.choice(_commits(root) or _log_files(root))
        _edit_with(victim, rng, _huge)
    elif kind == "broken_checkpoint":
        victim = rng.choice(_checkpoints(root))
        how = rng.choice(["truncate", "flip", "other_parquet", "empty"])
        if how == "truncate":
            _truncate(victim, rng)
        elif how == "flip":
            _flip(victim, rng)
        elif how == "empty":
            victim.write_bytes(b"")
        else:
            import pyarrow as pa
            import pyarrow.parquet as pq

            pq.write_table(pa.table({"add": [1, 2], "x": ["a", "b"]}), victim)
        return f"{how} {victim.relative_to(root)}"
    elif kind == "dv_file":
        dvs = sorted(root.rglob("deletion_vector_*.bin"))
        if not dvs:
            return mutate(root, "flip", rng)
        victim = rng.choice(dvs)
        rng.choice([_truncate, _flip])(victim, rng)
    elif kind == "last_checkpoint":
        victim = log / "_last_checkpoint"
        how = rng.choice(["garbage", "deep", "wrong_type", "huge", "truncate"])
        if how == "garbage":
            victim.write_bytes(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200))))
        elif how == "deep":
            victim.write_text(_dump({"version": _DeepText(rng.choice([5_000, 200_000]), rng.choice("[{"))}))
        elif how == "wrong_type" and victim.exists():
            _edit_json_line(victim, rng, _wrong_type)
        elif how == "huge":
            victim.write_text(_dump({"version": _huge(None, rng), "size": _huge(None, rng), "parts": _huge(None, rng)}))
        elif victim.exists():
            _truncate(victim, rng)
        else:
            victim.write_text('{"version": 1')
        return f"_last_checkpoint {how}"
    elif kind == "stray_version":
        version = rng.choice([10**6, 10**7, 10**12, 10**20 - 1])
        what = rng.choice(["commit", "commit", "checkpoint", "compaction", "crc"])
        checkpoints = [p for p in _checkpoints(root) if ".checkpoint." in p.name and p.parent == log]
        if what == "checkpoint" and checkpoints:
            src = rng.choice(checkpoints)
            name = f"{version:020d}{src.name[20:]}"
            shutil.copy(src, log / name)
        elif what == "compaction":
            name = f"{0:020d}.{version:020d}.compacted.json"
            shutil.copy(_commits(root)[0], log / name)
        elif what == "crc":
            name = f"{version:020d}.crc"
            (log / name).write_text('{"tableSizeBytes":1,"numFiles":1,"numMetadata":1,"numProtocol":1}')
        else:
            name = f"{version:020d}.json"
            (log / name).write_text(rng.choice(['{"commitInfo":{}}\n', "", '{"add":{"path":"x","size":1}}\n']))
        return f"stray {name}"
    else:
        raise ValueError(f"unknown mutation {kind}")
    return f"{kind} {victim.relative_to(root)}"


# -- the worker ----------------------------------------------------------------------------------------


def _steps() -> list[tuple[str, Callable[[Any], Any]]]:
    import deltaexplore as dx
    from deltaexplore import inspect as dxi
    from deltaexplore.core.operations import delete, optimize, plan_vacuum, vacuum

    def opened(fn: Callable[[Any], Any]) -> Callable[[str], Any]:
        return lambda root: fn(dx.open_table(root))

    return [
        ("open", lambda root: dx.open_table(root).versions()),
        ("snapshot", opened(lambda t: t.snapshot().schema)),
        ("history", opened(lambda t: t.history())),
        ("files", opened(lambda t: t.snapshot().files())),
        ("tombstones", opened(lambda t: t.snapshot().tombstones())),
        ("file_stats", opened(lambda t: t.snapshot().file_stats())),
        ("to_arrow", opened(lambda t: t.snapshot().to_arrow())),
        ("version 0", opened(lambda t: t.snapshot(0).to_arrow())),
        ("changes", opened(lambda t: t.changes(0) if t.snapshot().config.change_data_feed_enabled else None)),
        ("crc", opened(lambda t: t.snapshot().validate_crc())),
        ("explain", opened(lambda t: t.snapshot().scan(where=_first_column_predicate(t)).explain())),
        ("overview", opened(dxi.overview)),
        ("inspect files", opened(dxi.files)),
        ("partitions", opened(dxi.partitions)),
        ("layout_summary", opened(dxi.layout_summary)),
        ("deletion_vectors", opened(dxi.deletion_vectors)),
        ("dv_files", opened(lambda t: dxi.dv_files(t, check_files=True))),
        ("log_health", opened(dxi.log_health)),
        ("log_files", opened(dxi.log_files)),
        ("commits", opened(lambda t: dxi.commits(t, checkpoints=True))),
        ("versions", opened(lambda t: dxi.reconstructable_versions(t, vacuum_retention_hours=0))),
        ("vacuum_preview", opened(lambda t: dxi.vacuum_preview(t, retention_hours=0))),
        ("features", opened(dxi.compatibility)),
        ("diff", opened(lambda t: dxi.diff(t, 0))),
        ("plan_vacuum", opened(lambda t: plan_vacuum(t, retention_hours=0, enforce_retention_duration=False))),
        ("vacuum dry run", lambda root: vacuum(root, retention_hours=0, enforce_retention_duration=False)),
        ("optimize dry run", lambda root: optimize(root, dry_run=True)),
        ("delete dry run", lambda root: delete(root, _first_column_predicate(dx.open_table(root)), dry_run=True)),
    ]


def _first_column_predicate(table: Any) -> str | None:
    snap = table.snapshot()
    for f in snap.schema.fields:
        if str(f.type) in ("long", "integer", "short", "byte", "int", "bigint"):
            return f"`{f.name}` > 1" if f.name.isidentifier() else None
    return None


def run_case(root: str, steps: list[tuple[str, Callable[[Any], Any]]]) -> dict[str, Any]:
    """Run every step on the table at `root`: the outcome and the first raw exception."""
    import warnings

    from deltaexplore.errors import DeltaExploreError

    outcome = "ok"
    errors: list[str] = []
    for name, step in steps:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                step(root)
        except DeltaExploreError as exc:
            if outcome == "ok":
                outcome = "typed"
            errors.append(f"{name}: {type(exc).__name__}")
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # noqa: BLE001 - what the fuzzing looks for (Rust panics are BaseExceptions)
            import traceback

            tb = traceback.extract_tb(exc.__traceback__)
            where = next((f"{Path(f.filename).name}:{f.lineno}" for f in reversed(tb) if "deltaexplore" in f.filename), "?")
            return {"outcome": "other", "step": name, "error": f"{type(exc).__name__}: {str(exc)[:300]}", "where": where}
    return {"outcome": outcome, "errors": errors[:3]}


def worker() -> None:
    """Read table roots from stdin (one a line), answer one JSON line per case on stdout."""
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))
    sys.setrecursionlimit(10_000)
    steps = _steps()
    out = sys.stdout
    sys.stdout = sys.stderr  # anything a step prints must not mix with the answers
    out.write("ready\n")
    out.flush()
    for line in sys.stdin:
        root = line.rstrip("\n")
        try:
            result = run_case(root, steps)
        except BaseException as exc:  # noqa: BLE001 - MemoryError, RecursionError at the top
            result = {"outcome": "other", "step": "?", "error": f"{type(exc).__name__}: {str(exc)[:300]}", "where": "?"}
        out.write(json.dumps(result) + "\n")
        out.flush()


# -- the parent --------------------------------------------------------------------------------------


@dataclass
class Case:
    table: str
    mutation: str
    seed: int
    what: str = ""


@dataclass
class Stats:
    counts: Counter[str] = field(default_factory=Counter)
    failures: list[tuple[Case, dict[str, Any]]] = field(default_factory=list)
    seconds: float = 0.0

    def summary(self) -> str:
        c = self.counts
        return (
            f"cases {sum(c.values())}: ok {c['ok']}, typed {c['typed']}, other {c['other']}, "
            f"hang {c['hang']}, crash {c['crash']} ({self.seconds:.0f} s)"
        )


class _Worker:
    def __init__(self) -> None:
        env = {**os.environ, "PYTHONFAULTHANDLER": "1"}
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
        )
        self.readline(120)

    def readline(self, timeout: float) -> str | None:
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            return None
        return self.proc.stdout.readline()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None


def cases(n: int, seed: int = 0, mutations: list[str] | None = None) -> list[Case]:
    """`n` cases spread over the tables and mutations, deterministic for a seed."""
    tables = sorted(table_roots())
    kinds = mutations or MUTATIONS
    rng = random.Random(seed)
    out = []
    for i in range(n):
        out.append(Case(tables[i % len(tables)], kinds[(i // len(tables)) % len(kinds)], rng.randrange(1 << 30)))
    return out


def run(all_cases: list[Case], *, workers: int = 1, timeout: float = 20.0, log: Callable[[str], None] | None = None) -> Stats:
    """Run the cases on `workers` worker processes; statistics and the failing cases."""
    roots = table_roots()
    stats = Stats()
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="dx-fuzz-") as tmp:
        pending = list(enumerate(all_cases))
        pool: list[_Worker | None] = [None] * max(1, workers)
        busy: dict[int, tuple[int, Case, str, float]] = {}
        while pending or busy:
            for w in range(len(pool)):
                if w in busy or not pending:
                    continue
                worker_ = pool[w]
                if worker_ is None or not worker_.alive:
                    worker_ = pool[w] = _Worker()
                i, case = pending.pop(0)
                dst = Path(tmp) / f"c{i}"
                shutil.copytree(roots[case.table], dst, symlinks=True)
                case.what = mutate(dst, case.mutation, random.Random(case.seed))
                assert worker_.proc.stdin is not None
                worker_.proc.stdin.write(str(dst) + "\n")
                worker_.proc.stdin.flush()
                busy[w] = (i, case, str(dst), time.monotonic())
            streams = {pool[w].proc.stdout: w for w in busy}  # type: ignore[union-attr]
            ready, _, _ = select.select(list(streams), [], [], 0.5)
            now = time.monotonic()
            done: list[tuple[int, dict[str, Any]]] = []
            for stream in ready:
                w = streams[stream]
                line = stream.readline()  # type: ignore[union-attr]
                done.append((w, json.loads(line) if line else {"outcome": "crash"}))
            for w, (_i, _case, _dst, t0) in list(busy.items()):
                if w not in [d[0] for d in done] and now - t0 > timeout:
                    pool[w].kill()  # type: ignore[union-attr]
                    pool[w] = None
                    done.append((w, {"outcome": "hang", "seconds": round(now - t0, 1)}))
            for w, result in done:
                i, case, dst, _t0 = busy.pop(w)
                if result["outcome"] == "crash" and pool[w] is not None:
                    pool[w].kill()  # type: ignore[union-attr]
                    pool[w] = None
                stats.counts[result["outcome"]] += 1
                if result["outcome"] in ("other", "hang", "crash"):
                    stats.failures.append((case, result))
                    if log:
                        log(f"{result['outcome']}: {case.table} {case.what} (seed {case.seed}): {result}")
                shutil.rmtree(dst, ignore_errors=True)
        for worker_ in pool:
            if worker_ is not None:
                worker_.kill()
    stats.seconds = time.monotonic() - start
    return stats


def main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--cases", type=int, default=240)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=20.0)
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument("--mutations", help="comma-separated subset of: " + ", ".join(MUTATIONS))
    args = parser.parse_args(argv)
    if args.worker:
        worker()
        return 0
    stats = run(
        cases(args.cases, args.seed, args.mutations.split(",") if args.mutations else None),
        workers=args.workers,
        timeout=args.timeout,
        log=None if args.quiet else print,
    )
    print(stats.summary())
    kinds = Counter((r["outcome"], r.get("where", ""), r.get("error", "").split(":")[0]) for _, r in stats.failures)
    for (outcome, where, error), n in kinds.most_common():
        print(f"  {n:4d} {outcome} {error} at {where}")
    return 0 if not stats.failures else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
