"""Maintenance from the explorer: preview an operation, run it with progress, see the new version.

Operations (optimize, vacuum, checkpoint) are previewed from the snapshot alone, with the same
planning code that runs them (`plan_optimize`, `inspect.vacuum_preview`). Running one needs a
backend that writes: the Spark pipeline (`deltaexplore.spark`, used when pyspark is installed and
it provides the operation) or the core's local operations (`deltaexplore.core.operations`).
`register_runner` puts any other backend first.

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
    "purge": Operation(
        "purge", "DV purge", False, "rewrite files with deletion vectors without their deleted rows (REORG … APPLY (PURGE))"
    ),
}

_REGISTERED: dict[str, tuple[str, Runner]] = {}


def _rows(result: Any) -> dict[str, Any]:
    """The one-row metrics table the core operations return, as a dict."""
    return result.to_pylist()[0] if isinstance(result, pa.Table) and result.num_rows else {}


def _local_optimize(table: Table, *, progress: Progress, target_bytes: int | None = None, **_: Any) -> dict[str, Any]:
    from deltaexplore.core.operations import optimize

    progress(0.05, "compacting small files (local pyarrow writer)")
    return _rows(optimize(table, target_size=target_bytes))


def _local_vacuum(table: Table, *, progress: Progress, retention_hours: float | None = None, **_: Any) -> dict[str, Any]:
    from deltaexplore.core.operations import vacuum

    progress(0.05, "deleting files no retained version needs")
    out = _rows(vacuum(table, retention_hours=retention_hours, dry_run=False))
    out.pop("files", None)
    return out


def _local_checkpoint(table: Table, *, progress: Progress, **_: Any) -> dict[str, Any]:
    from deltaexplore.core.operations import checkpoint

    progress(0.05, "writing a checkpoint")
    return _rows(checkpoint(table))


def _local_purge(table: Table, *, progress: Progress, **_: Any) -> dict[str, Any]:
    from deltaexplore.core.operations import purge_deletion_vectors

    progress(0.05, "rewriting files with deletion vectors (local pyarrow writer)")
    return _rows(purge_deletion_vectors(table))


#: explorer parameter -> `deltaexplore.spark` keyword, per operation
_SPARK_PARAMS = {
    "optimize": {"target_bytes": "target_size"},
    "vacuum": {"retention_hours": "retention_hours"},
    "checkpoint": {},
    "purge": {},
}


def _spark_runner(fn: Runner, op: str) -> Runner:
    """Adapt a `deltaexplore.spark` operation (``fn(spark, uri, dry_run=False, ...)``) to a runner.

    Progress comes from Spark's status tracker (completed / total tasks of the active stages),
    polled in a thread while the operation runs.
    """

    def run(table: Table, *, progress: Progress, **params: Any) -> Any:
        import threading

        import deltaexplore.spark as dxs

        progress(0.02, f"starting Spark for {op}")
        spark = dxs.get_spark()
        kwargs = {_SPARK_PARAMS[op][k]: v for k, v in params.items() if k in _SPARK_PARAMS[op] and v is not None}
        stop = threading.Event()

        def poll() -> None:
            tracker = spark.sparkContext.statusTracker()
            while not stop.wait(0.25):
                done = total = 0
                for stage in tracker.getActiveStageIds():
                    info = tracker.getStageInfo(stage)
                    if info is not None:
                        done, total = done + info.numCompletedTasks, total + info.numTasks
                if total:
                    progress(0.05 + 0.9 * done / total, f"Spark {op}: {done}/{total} tasks")

        watcher = threading.Thread(target=poll, name=f"deltaexplore-{op}-progress", daemon=True)
        watcher.start()
        try:
            return fn(spark, table.storage.root, dry_run=False, **kwargs)
        finally:
            stop.set()
            watcher.join()

    return run


#: built-in backends, tried in order (Spark first when pyspark is installed and it provides the operation)
_BACKENDS: dict[str, dict[str, tuple[str, str] | Runner]] = {
    "spark": {
        "optimize": ("deltaexplore.spark", "optimize"),
        "vacuum": ("deltaexplore.spark", "vacuum"),
        "checkpoint": ("deltaexplore.spark", "checkpoint"),
        "purge": ("deltaexplore.spark", "purge_deletion_vectors"),
    },
    "local": {"optimize": _local_optimize, "vacuum": _local_vacuum, "checkpoint": _local_checkpoint, "purge": _local_purge},
}


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
        entry = _BACKENDS[backend][op]
        if callable(entry):
            return backend, entry, ""
        module, attr = entry
        try:
            fn = getattr(importlib.import_module(module), attr, None)
        except (ImportError, AttributeError):
            fn = None
        if callable(fn):
            return backend, _spark_runner(fn, op), ""
    return None, None, f"no backend provides {OPERATIONS[op].label} in this installation"


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
        target = params.get("target_bytes")
        return _preview_optimize(data, int(target) if target is not None else None)
    if op == "vacuum":
        return _preview_vacuum(data, params.get("retention_hours"))
    if op == "purge":
        return _preview_purge(data)
    return _preview_checkpoint(data)


#: above this many files the OPTIMIZE preview is a vectorized estimate (the exact plan is per-file Python)
EXACT_PLAN_MAX_FILES = 200_000


def _preview_optimize(data: ExplorerData, target: int | None) -> dict[str, Any]:
    from deltaexplore.core.operations import plan_optimize

    if data.snap.num_files > EXACT_PLAN_MAX_FILES:
        return _estimate_optimize(data, target)
    plan = plan_optimize(data.snap, target_size=target)
    files = plan.files
    size = int(pc.sum(files.column("size")).as_py() or 0) if files.num_rows else 0
    out_files = sum(max(1, math.ceil(int(pc.sum(b.column("size")).as_py() or 0) / plan.target_size)) for b in plan.bins)
    return {
        "target_file_bytes": plan.target_size,
        "files_considered": plan.considered_files,
        "bins": len(plan.bins),
        "files_to_rewrite": files.num_rows,
        "bytes_to_rewrite": size,
        "files_after": out_files,
    }


def _estimate_optimize(data: ExplorerData, target: int | None) -> dict[str, Any]:
    """Small files per partition (two or more), grouped by columns: what OPTIMIZE would roughly rewrite."""
    if target is None:
        value = data.snap.properties.get("delta.targetFileSize") if data.snap.has_metadata else None
        target = int(value) if value and value.isdigit() else 128 * 1024 * 1024
    fc = data.files_cache()
    sizes = fc.files.column("size")
    t = pa.table({"partition": fc.partition, "size": sizes}).filter(pc.less(sizes, target))
    g = t.group_by("partition").aggregate([("size", "count"), ("size", "sum")])
    g = g.filter(pc.greater_equal(g.column("size_count"), 2))
    totals = g.column("size_sum").to_numpy(zero_copy_only=False) if g.num_rows else []
    return {
        "target_file_bytes": target,
        "files_considered": fc.files.num_rows,
        "estimate": "over 200,000 files: counted per partition, bins not planned",
        "partitions_to_compact": g.num_rows,
        "files_to_rewrite": int(pc.sum(g.column("size_count")).as_py() or 0),
        "bytes_to_rewrite": int(pc.sum(g.column("size_sum")).as_py() or 0),
        "files_after": int(sum(max(1, math.ceil(x / target)) for x in totals)),
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


def _preview_purge(data: ExplorerData) -> dict[str, Any]:
    from deltaexplore.inspect import deletion_vectors

    dvs = deletion_vectors(data.snap)

    def total(column: str) -> int:
        return int(pc.sum(dvs.column(column)).as_py() or 0) if dvs.num_rows else 0

    return {
        "files_to_rewrite": dvs.num_rows,
        "bytes_to_rewrite": total("size"),
        "deleted_rows_dropped": total("cardinality"),
        "rows_kept": total("live_rows"),
        "files_past_purge_threshold": int(pc.sum(dvs.column("past_threshold")).as_py() or 0) if dvs.num_rows else 0,
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
    try:
        result = runner(table, progress=progress, **params)
    except DeltaExploreError:
        raise
    except Exception as exc:  # a backend's failure must reach the UI as a message
        raise DeltaExploreError(f"{OPERATIONS[op].label} failed in the {backend} backend: {type(exc).__name__}: {exc}") from exc
    table.listing(refresh=True)
    after = table.latest_version()
    progress(1.0, "done")
    out: dict[str, Any] = {"backend": backend, "version_before": before, "version_after": after}
    if isinstance(result, pa.Table):  # an operation's metrics row (Spark's as the core's)
        result = _rows(result)
    if isinstance(result, dict):
        out["result"] = {k: v for k, v in result.items() if isinstance(v, (int, float, str, bool)) or v is None}
    return out
