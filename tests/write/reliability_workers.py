"""Worker processes for the reliability tests (importable by spawned/forked children)."""

from __future__ import annotations

import random
import time
import traceback
from typing import Any

import pyarrow as pa


def batch_rows(name: str, n: int) -> pa.Table:
    return pa.table({"batch": pa.array([name] * n), "id": pa.array(range(n), pa.int64())})


def concurrent_worker(root: str, worker: int, commits: int, seed: int, out: Any) -> None:
    """Commit `commits` times (append / delete own batch / optimize), retrying after conflicts.

    Reports through `out` (a queue): ("append", batch, n), ("delete", batch), ("conflict", msg),
    ("error", traceback), ("done", worker).
    """
    import deltaexplore as dx
    from deltaexplore.core.operations import delete, optimize, write_table

    rng = random.Random(seed)
    mine: list[str] = []
    done = seq = 0
    try:
        while done < commits:
            op = rng.choices(["append", "delete", "optimize"], [6, 2, 2])[0]
            if op == "delete" and not mine:
                op = "append"
            try:
                if op == "append":
                    seq += 1
                    name = f"w{worker}-{seq}"
                    n = rng.randint(1, 5)
                    m = write_table(root, batch_rows(name, n))
                    mine.append(name)
                    out.put(("append", name, n, m.column("version")[0].as_py()))
                elif op == "delete":
                    name = rng.choice(mine)
                    m = delete(root, f"batch = '{name}'")
                    if m.column("version")[0].as_py() is None:
                        continue
                    mine.remove(name)
                    out.put(("delete", name, m.column("version")[0].as_py()))
                else:
                    m = optimize(root, target_size=1 << 30)
                    if m.column("version")[0].as_py() is None:
                        continue
                    out.put(("optimize", m.column("version")[0].as_py()))
                done += 1
            except dx.CommitConflictError as exc:
                out.put(("conflict", str(exc)))
    except Exception:  # noqa: BLE001 - reported to the test, which fails on it
        out.put(("error", traceback.format_exc()))
    out.put(("done", worker))


def chaos_worker(root: str, seed: int, phase_file: str | None = None) -> None:
    """Loop forever over appends, deletes, optimize, checkpoints and vacuum (killed with -9).

    Appends record their batch as `userMetadata`; deletes use the predicate `batch = '<name>'`.
    The operation under way is written to `phase_file` (outside the table) so the test knows
    where the kill landed.
    """
    import deltaexplore as dx
    from deltaexplore.core.operations import checkpoint, delete, optimize, vacuum, write_table

    rng = random.Random(seed)
    i = 0
    while True:
        i += 1
        op = rng.choices(["append", "delete", "optimize", "checkpoint", "vacuum"], [5, 2, 1, 2, 2])[0]
        if phase_file:
            with open(phase_file, "w") as fh:
                fh.write(op)
        try:
            if op == "append":
                name = f"s{seed}-{i}"
                write_table(root, batch_rows(name, rng.randint(1, 4)), user_metadata=name)
            elif op == "delete":
                batches = dx.open_table(root).snapshot().to_arrow(columns=["batch"]).column("batch").unique().to_pylist()
                if batches:
                    delete(root, f"batch = '{rng.choice(batches)}'")
            elif op == "optimize":
                optimize(root, target_size=1 << 30)
            elif op == "checkpoint":
                checkpoint(root)
            else:
                vacuum(root, retention_hours=0, enforce_retention_duration=False, dry_run=False)
        except dx.CommitConflictError:
            pass
        time.sleep(rng.random() * 0.01)
