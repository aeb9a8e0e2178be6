"""Maintenance from the explorer: preview an operation, run it with progress, see the new version.

Operations (optimize, vacuum, checkpoint) are previewed from the snapshot alone (what would be
rewritten, deleted or written). Running one needs a backend that writes: the Spark pipeline
(`deltaexplore.spark`, when pyspark is installed) or the local writer in the core. Backends are
found by name at run time (`find_runner`) or registered explicitly with `register_runner`;
when none is there the operation can still be previewed and says what to install.

A runner is called as ``runner(table, progress=callback, **params)``; ``callback(fraction,
message)`` reports progress (0..1), and the runner returns a dict (or an Arrow table) describing
what it did.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.errors import DeltaExploreError

if TYPE_CHECKING:
    from deltaexplore.core.table import Table
    from deltaexplore.widgets.explorer_data import ExplorerData

__all__ = ["OPERATIONS", "Operation", "find_runner", "preview", "register_runner", "run"]

Progress = Callable[[float, str], None]
Runner = Callable[..., Any]

DEFAULT_TARGET_BYTES = 128 * 1024 * 1024


@dataclass(frozen=True)
class Operation:
    name: str
    label: str
    destructive: bool
    description: str


OPERATIONS: dict[str, Operation] = {
    "optimize": Operation("optimize", "OPTIMIZE (compact)", False, "rewrite small files of each partition into larger ones"),
    "vacuum": Operation("vacuum", "VACUUM", True, "delete data files no retained version needs"),
    "checkpoint": Operation("checkpoint", "checkpoint", False, "write a checkpoint at the latest version"),
}

#: (module, attribute) tried in order for each operation and backend; first callable wins
_CANDIDATES: dict[str, dict[str, list[tuple[str, str]]]] = {
    "spark": {
        "optimize": [("deltaexplore.spark", "optimize"), ("deltaexplore.spark.maintenance", "optimize")],
        "vacuum": [("deltaexplore.spark", "vacuum"), ("deltaexplore.spark.maintenance", "vacuum")],
        "checkpoint": [("deltaexplore.spark", "checkpoint"), ("deltaexplore.spark.maintenance", "checkpoint")],
    },
    "local": {
        "optimize": [("deltaexplore.core.maintenance", "optimize"), ("deltaexplore.core.optimize", "optimize")],
        "vacuum": [("deltaexplore.core.maintenance", "vacuum"), ("deltaexplore.core.vacuum", "vacuum")],
        "checkpoint": [
            ("deltaexplore.core.maintenance", "checkpoint"),
            ("deltaexplore.core.checkpoint_writer", "write_checkpoint"),
        ],
    },
}
_REGISTERED: dict[str, tuple[str, Runner]] = {}


def register_runner(op: str, backend: str, runner: Runner) -> None:
    """Use `runner` for `op` (called as ``runner(table, progress=cb, **params)``)."""
    if op not in OPERATIONS:
        raise DeltaExploreError(f"unknown maintenance operation {op!r}: expected one of {', '.join(OPERATIONS)}")
    _REGISTERED[op] = (backend, runner)


def _spark_available() -> bool:
    return importlib.util.find_spec("pyspark") is not None


def find_runner(op: str) -> tuple[str | None, Runner | None, str]:
    """(backend name, runner, reason): the runner is None when no backend provides `op`."""
    if op in _REGISTERED:
        backend, runner = _REGISTERED[op]
        return backend, runner, ""
    backends = (["spark"] if _spark_available() else []) + ["local"]
    for backend in backends:
        for module, attr in _CANDIDATES[backend][op]:
            try:
                mod = importlib.import_module(module)
            except ImportError:
                continue
            fn = getattr(mod, attr, None)
            if callable(fn):
                return backend, fn, ""
    spark_hint = "" if _spark_available() else " (pip install 'deltaexplore[spark]' for the Spark backend)"
    return (
        None,
        None,
        (
            f"{OPERATIONS[op].label} cannot run here yet: neither deltaexplore.spark nor the core's local writer provides "
            f"{op!r} in this installation{spark_hint}. The preview above is still exact."
        ),
    )


def describe(op: str) -> dict[str, Any]:
    o = OPERATIONS[op]
    backend, runner, reason = find_runner(op)
    return {
        "name": o.name,
        "label": o.label,
        "destructive": o.destructive,
        "description": o.description,
        "available": runner is not None,
        "backend": backend,
        "reason": reason,
    }


def preview(op: str, data: ExplorerData, **params: Any) -> dict[str, Any]:
    """What `op` would do at the data's current version, from metadata only."""
    if op not in OPERATIONS:
        raise DeltaExploreError(f"unknown maintenance operation {op!r}: expected one of {', '.join(OPERATIONS)}")
    if op == "optimize":
        return _preview_optimize(data, int(params.get("target_bytes", DEFAULT_TARGET_BYTES)))
    if op == "vacuum":
        return _preview_vacuum(data, params.get("retention_hours"))
    return _preview_checkpoint(data)


def _preview_optimize(data: ExplorerData, target: int) -> dict[str, Any]:
    fc = data.files_cache()
    small = pc.less(fc.files.column("size"), target)
    t = pa.table({"partition": fc.partition, "size": fc.files.column("size")}).filter(small)
    g = t.group_by("partition").aggregate([("size", "count"), ("size", "sum")])
    g = g.filter(pc.greater_equal(g.column("size_count"), 2))  # one small file alone is left as is
    files = int(pc.sum(g.column("size_count")).as_py() or 0)
    size = int(pc.sum(g.column("size_sum")).as_py() or 0)
    out_files = sum(max(1, math.ceil(s / target)) for s in g.column("size_sum").to_pylist())
    return {
        "target_file_bytes": target,
        "partitions_to_compact": g.num_rows,
        "files_to_rewrite": files,
        "bytes_to_rewrite": size,
        "files_after": out_files,
        "file_count_change": out_files - files,
    }


def _preview_vacuum(data: ExplorerData, retention_hours: float | None) -> dict[str, Any]:
    from deltaexplore.inspect import reconstructable_versions, vacuum_preview

    hours = None if retention_hours is None else float(retention_hours)
    files = vacuum_preview(data.snap, retention_hours=hours)
    versions = reconstructable_versions(data.snap, check_data=False, vacuum_retention_hours=hours)
    lost = versions.filter(pc.and_(versions.column("readable"), pc.invert(versions.column("readable_after_vacuum"))))
    reasons = files.group_by("reason").aggregate([("size", "count")]).to_pylist() if files.num_rows else []
    return {
        "retention_hours": hours if hours is not None else "table default",
        "files_to_delete": files.num_rows,
        "bytes_to_free": int(pc.sum(files.column("size")).as_py() or 0) if files.num_rows else 0,
        "by_reason": {r["reason"]: r["size_count"] for r in reasons},
        "versions_no_longer_readable": lost.column("version").to_pylist()[:50],
    }


def _preview_checkpoint(data: ExplorerData) -> dict[str, Any]:
    listing = data.listing
    latest = data.table.latest_version()
    cps = [v for v in listing.checkpoints if v <= latest]
    return {
        "at_version": latest,
        "last_checkpoint_version": max(cps) if cps else None,
        "commits_since_checkpoint": latest - max(cps) if cps else latest + 1,
        "files_in_state": data.snapshot(latest).num_files,
    }


def run(op: str, table: Table, progress: Progress, **params: Any) -> dict[str, Any]:
    """Run `op` with the first backend that provides it; returns what the backend reported."""
    backend, runner, reason = find_runner(op)
    if runner is None:
        raise DeltaExploreError(reason)
    progress(0.0, f"starting {OPERATIONS[op].label} with {backend}")
    before = table.latest_version()
    result = runner(table, progress=progress, **params)
    table.listing(refresh=True)
    after = table.latest_version()
    progress(1.0, "done")
    out: dict[str, Any] = {"backend": backend, "version_before": before, "version_after": after}
    if isinstance(result, dict):
        out["result"] = {k: v for k, v in result.items() if isinstance(v, (int, float, str, bool)) or v is None}
    elif isinstance(result, pa.Table):
        out["result"] = {"rows": result.num_rows}
    return out
