"""Maintenance from the explorer and from cells: preview an operation, run it with progress.

Operations (optimize, vacuum, checkpoint, DV purge, restore) are previewed from the snapshot alone, with
the same planning code that runs them (`plan_optimize`, `inspect.vacuum_preview`). Running one
needs a backend that writes, chosen by `choose_backend` and always stated with its reason:

- `engine="auto"` (the default): the Spark pipeline (`deltaexplore.spark`) when this process
  already has an active Spark session, else the core's local operations
  (`deltaexplore.core.operations`); a JVM is never started behind the user's back;
- `engine="spark"`: Spark (started if needed: the user asked); `engine="local"`: the core;
- driver-only operations (checkpoint) run locally whatever the engine: there is no row work
  for Spark to do;
- `register_runner` puts any other backend first.

A runner is called as ``runner(table, progress=callback, storage_options=..., **params)`` and
returns the operation's one-row metrics table (both built-in backends do; the columns are the
operation's). ``callback(fraction, message)`` reports progress: `run` wraps it so the fraction
only moves forward over every stage, and Spark's own tracker (`spark.jobs`) reports into it
instead of drawing a second display. The table's storage options (credentials, endpoints)
reach every backend: Spark gets the `Table` itself and its options for its executors.
`progress_display()` is the one progress display of a cell: an HTML `<progress>` bar updated in
place in a notebook (it stays readable in a saved notebook), text lines in a terminal.
"""

from __future__ import annotations

import html
import importlib
import importlib.util
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

import deltaexplore.spark as dxs
from deltaexplore.core.operations import (
    checkpoint,
    optimize,
    plan_optimize,
    purge_deletion_vectors,
    restore,
    restore_actions,
    total_bytes,
    vacuum,
)
from deltaexplore.core.scan.data_file import resolve_data_path
from deltaexplore.core.scan.stats import num_records
from deltaexplore.errors import DeltaExploreError, InvalidArgumentError, MissingDependencyError

if TYPE_CHECKING:
    from deltaexplore.core.table import Table
    from deltaexplore.widgets.views import TableView

__all__ = [
    "DRIVER_ONLY",
    "ENGINES",
    "OPERATIONS",
    "MonotonicProgress",
    "Operation",
    "choose_backend",
    "find_runner",
    "preview",
    "progress_display",
    "register_runner",
    "run",
]

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
    "restore": Operation(
        "restore",
        "RESTORE",
        False,
        "make the latest version equal to the version shown: its files come back, later ones go (log only)",
    ),
}

_REGISTERED: dict[str, tuple[str, Runner]] = {}


def _local_optimize(
    table: Table, *, progress: Progress, target_bytes: int | None = None, zorder_by: list[str] | None = None, **_: Any
) -> pa.Table:
    progress(0.05, "Z-ordering (local pyarrow writer)" if zorder_by else "compacting small files (local pyarrow writer)")
    return optimize(table, target_size=target_bytes, zorder_by=zorder_by or None)


def _local_vacuum(table: Table, *, progress: Progress, retention_hours: float | None = None, **_: Any) -> pa.Table:
    progress(0.05, "deleting files no retained version needs")
    return vacuum(table, retention_hours=retention_hours, dry_run=False)


def _local_checkpoint(table: Table, *, progress: Progress, **_: Any) -> pa.Table:
    progress(0.05, "writing a checkpoint")
    return checkpoint(table)


def _local_purge(table: Table, *, progress: Progress, **_: Any) -> pa.Table:
    progress(0.05, "rewriting files with deletion vectors (local pyarrow writer)")
    return purge_deletion_vectors(table)


def _local_restore(table: Table, *, progress: Progress, version: int | None = None, **_: Any) -> pa.Table:
    progress(0.05, f"restoring version {version} (log only)")
    return restore(table, version=version)


#: explorer parameter -> `deltaexplore.spark` keyword, per operation
_SPARK_PARAMS = {
    "optimize": {"target_bytes": "target_size", "zorder_by": "zorder_by"},
    "vacuum": {"retention_hours": "retention_hours"},
    "checkpoint": {},
    "purge": {},
    "restore": {"version": "version"},
}


def _spark_runner(fn: Runner, op: str) -> Runner:
    """Adapt a `deltaexplore.spark` operation (``fn(spark, table, dry_run=False, ...)``) to a
    runner: the `Table` itself (its storage) and its storage options go to Spark, and Spark's
    job tracker reports into `progress` (one display)."""

    def run(table: Table, *, progress: Progress, storage_options: dict[str, Any] | None = None, **params: Any) -> Any:
        progress(0.02, "connecting to Spark" if dxs.active_session() is not None else "starting a local Spark session")
        spark = dxs.get_spark()
        kwargs = {_SPARK_PARAMS[op][k]: v for k, v in params.items() if k in _SPARK_PARAMS[op] and v is not None}
        with dxs.report_progress_to(lambda f, m: progress(0.05 + 0.9 * f, m)):
            return fn(spark, table, dry_run=False, storage_options=storage_options or None, **kwargs)

    return run


#: built-in backends, tried in order (Spark first when pyspark is installed and it provides the operation)
_BACKENDS: dict[str, dict[str, tuple[str, str] | Runner]] = {
    "spark": {
        "optimize": ("deltaexplore.spark", "optimize"),
        "vacuum": ("deltaexplore.spark", "vacuum"),
        "checkpoint": ("deltaexplore.spark", "checkpoint"),
        "purge": ("deltaexplore.spark", "purge_deletion_vectors"),
        "restore": ("deltaexplore.spark", "restore"),
    },
    "local": {
        "optimize": _local_optimize,
        "vacuum": _local_vacuum,
        "checkpoint": _local_checkpoint,
        "purge": _local_purge,
        "restore": _local_restore,
    },
}


def register_runner(op: str, backend: str, runner: Runner) -> None:
    """Use `runner` for `op` (called as ``runner(table, progress=cb, **params)``)."""
    if op not in OPERATIONS:
        raise DeltaExploreError(f"unknown maintenance operation {op!r}: expected one of {', '.join(OPERATIONS)}")
    _REGISTERED[op] = (backend, runner)


#: the engines a user may ask for
ENGINES = ("auto", "spark", "local")
#: operations with no row work: planned and committed on the driver, never worth starting Spark
DRIVER_ONLY = frozenset({"checkpoint"})


def _spark_installed() -> bool:
    return importlib.util.find_spec("pyspark") is not None


def _active_spark() -> bool:
    """An active Spark session exists in this process (pyspark is not imported to find out)."""
    if "pyspark" not in sys.modules:
        return False
    return dxs.active_session() is not None


def choose_backend(op: str, engine: str = "auto") -> tuple[str, str]:
    """(backend, why) for running `op`: see the module docstring.

    Raises:
        DeltaExploreError: unknown operation or engine.
        MissingDependencyError: `engine="spark"` without pyspark installed.
    """
    if op not in OPERATIONS:
        raise DeltaExploreError(f"unknown maintenance operation {op!r}: expected one of {', '.join(OPERATIONS)}")
    if engine not in ENGINES:
        raise DeltaExploreError(f"unknown engine {engine!r}: expected one of {', '.join(ENGINES)}")
    if op in _REGISTERED:
        return _REGISTERED[op][0], "registered with register_runner"
    if op in DRIVER_ONLY:
        return "local", f"{OPERATIONS[op].label} is driver-only work (no Spark needed)"
    if engine == "local":
        return "local", "asked for the local engine"
    if engine == "spark":
        if not _spark_installed():
            raise MissingDependencyError("the Spark engine needs pyspark: pip install 'deltaexplore[spark]'", extra="spark")
        return "spark", "asked for Spark"
    if _active_spark():
        return "spark", "an active Spark session"
    return "local", "no active Spark session (engine='spark' starts one)"


def find_runner(op: str, engine: str = "auto") -> tuple[str | None, Runner | None, str]:
    """(backend name, runner, reason): the runner is None when no backend provides `op`
    (the reason then says why; else it says why this backend was chosen)."""
    try:
        backend, why = choose_backend(op, engine)
    except DeltaExploreError as exc:
        return None, None, str(exc)
    if op in _REGISTERED:
        return backend, _REGISTERED[op][1], why
    entry = _BACKENDS[backend][op]
    if callable(entry):
        return backend, entry, why
    module, attr = entry
    try:
        fn = getattr(importlib.import_module(module), attr, None)
    except (ImportError, AttributeError):
        fn = None
    if callable(fn):
        return backend, _spark_runner(fn, op), why
    return None, None, f"no backend provides {OPERATIONS[op].label} in this installation"


def describe(op: str, engine: str = "auto") -> dict[str, Any]:
    """What the UI shows of an operation: label, description, the backend that would run it and why."""
    o = OPERATIONS[op]
    backend, runner, reason = find_runner(op, engine)
    return {
        "name": o.name,
        "label": o.label,
        "destructive": o.destructive,
        "description": o.description,
        "available": runner is not None,
        "backend": backend,
        "backend_reason": reason if runner is not None else "",
        "reason": "" if runner is not None else reason,
    }


def preview(op: str, data: TableView, **params: Any) -> dict[str, Any]:
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
    if op == "restore":
        return _preview_restore(data, params.get("version"))
    return _preview_checkpoint(data)


#: above this many files the OPTIMIZE preview is a vectorized estimate (the exact plan is per-file Python)
EXACT_PLAN_MAX_FILES = 200_000


def _preview_optimize(data: TableView, target: int | None) -> dict[str, Any]:
    if data.snap.num_files > EXACT_PLAN_MAX_FILES:
        return _estimate_optimize(data, target)
    from deltaexplore.inspect.advise import predict_bins

    plan = plan_optimize(data.snap, target_size=target)
    files = plan.files
    size = int(pc.sum(files.column("size")).as_py() or 0) if files.num_rows else 0
    out_files = predict_bins(plan).files_added
    return {
        "target_file_bytes": plan.target_size,
        "files_considered": plan.considered_files,
        "bins": len(plan.bins),
        "files_to_rewrite": files.num_rows,
        "bytes_to_rewrite": size,
        "files_after": out_files,
    }


def _estimate_optimize(data: TableView, target: int | None) -> dict[str, Any]:
    """Small files per partition (two or more), grouped by columns: what OPTIMIZE would roughly rewrite."""
    if target is None:
        value = data.snap.properties.get("delta.targetFileSize") if data.snap.has_metadata else None
        target = int(value) if value and value.isdigit() else 128 * 1024 * 1024
    from deltaexplore.inspect import files

    f = files(data.snap)
    sizes = f.column("size")
    t = pa.table({"partition": f.column("partition"), "size": sizes}).filter(pc.less(sizes, target))
    g = t.group_by("partition").aggregate([("size", "count"), ("size", "sum")])
    g = g.filter(pc.greater_equal(g.column("size_count"), 2))
    totals = g.column("size_sum").to_numpy(zero_copy_only=False) if g.num_rows else []
    return {
        "target_file_bytes": target,
        "files_considered": f.num_rows,
        "estimate": "over 200,000 files: counted per partition, bins not planned",
        "partitions_to_compact": g.num_rows,
        "files_to_rewrite": int(pc.sum(g.column("size_count")).as_py() or 0),
        "bytes_to_rewrite": int(pc.sum(g.column("size_sum")).as_py() or 0),
        "files_after": int(sum(max(1, math.ceil(x / target)) for x in totals)),
    }


def _preview_vacuum(data: TableView, retention_hours: float | None) -> dict[str, Any]:
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


def _preview_purge(data: TableView) -> dict[str, Any]:
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


def _preview_restore(data: TableView, version: Any) -> dict[str, Any]:
    """What RESTORE to `version` changes: files that come back and go away, their rows and
    bytes, and whether the files to bring back still exist (VACUUM may have deleted them)."""
    from deltaexplore.inspect.file_columns import dv_cardinality

    table = data.table
    latest = table.latest_version()
    if isinstance(version, bool) or not isinstance(version, int):
        raise InvalidArgumentError(f"restore needs a version (an integer), got {version!r}")
    current, target = data.snapshot(latest), data.snapshot(version)
    plan = restore_actions(current, target, check_files=False)
    storage = table.storage
    missing = [p for p in plan.to_add.column("path").to_pylist() if not storage.exists(resolve_data_path(storage, p))]

    def rows(adds: pa.Table) -> int | None:
        if adds.num_rows == 0:
            return 0
        counts = num_records(adds)
        if counts.null_count:
            return None
        return int(pc.sum(counts).as_py() or 0) - int(pc.sum(pc.fill_null(dv_cardinality(adds), 0)).as_py() or 0)

    return {
        "restore_to_version": version,
        "latest_version": latest,
        "files_back": plan.to_add.num_rows,
        "bytes_back": total_bytes(plan.to_add),
        "rows_back": rows(plan.to_add),
        "files_away": plan.to_remove.num_rows,
        "bytes_away": total_bytes(plan.to_remove),
        "rows_away": rows(plan.to_remove),
        "files_missing": len(missing),
        "restorable": not missing,
        "missing_examples": missing[:5],
    }


def _preview_checkpoint(data: TableView) -> dict[str, Any]:
    listing = data.listing
    latest = data.table.latest_version()
    cps = [v for v in listing.checkpoints if v <= latest]
    return {
        "at_version": latest,
        "last_checkpoint_version": max(cps) if cps else None,
        "commits_since_checkpoint": latest - max(cps) if cps else latest + 1,
        "files_in_state": data.snapshot(latest).num_files,
    }


class MonotonicProgress:
    """A progress callback whose fraction never moves backwards (clamped to 0..1)."""

    def __init__(self, callback: Progress) -> None:
        self.callback = callback
        self.fraction = 0.0

    def __call__(self, fraction: float, message: str) -> None:
        value = 0.0 if math.isnan(float(fraction)) else float(fraction)
        self.fraction = max(self.fraction, min(1.0, max(0.0, value)))
        self.callback(self.fraction, message)


def _storage_options(table: Table, given: dict[str, Any] | None) -> dict[str, Any] | None:
    """The options the table was opened with (credentials), unless given explicitly."""
    if given:
        return dict(given)
    found = getattr(table.storage, "storage_options", None)
    return dict(found) if found else None


def run(
    op: str,
    table: Table,
    progress: Progress,
    *,
    engine: str = "auto",
    storage_options: dict[str, Any] | None = None,
    **params: Any,
) -> dict[str, Any]:
    """Run `op` with the backend `choose_backend` picks; returns backend, why, versions before and
    after, seconds, `metrics` (the operation's one-row Arrow table) and `result` (that row as
    JSON-safe scalars)."""
    backend, runner, reason = find_runner(op, engine)
    if runner is None:
        raise DeltaExploreError(reason)
    report = MonotonicProgress(progress)
    report(0.0, f"starting {OPERATIONS[op].label} with {backend} ({reason})")
    before = table.latest_version()
    start = time.monotonic()
    try:
        result = runner(table, progress=report, storage_options=_storage_options(table, storage_options), **params)
    except DeltaExploreError:
        raise
    except Exception as exc:  # a backend's failure must reach the UI as a message
        raise DeltaExploreError(f"{OPERATIONS[op].label} failed in the {backend} backend: {type(exc).__name__}: {exc}") from exc
    table.listing(refresh=True)
    after = table.latest_version()
    seconds = time.monotonic() - start
    report(1.0, f"done in {seconds:.1f} s with {backend}")
    out: dict[str, Any] = {
        "backend": backend,
        "backend_reason": reason,
        "version_before": before,
        "version_after": after,
        "seconds": round(seconds, 3),
    }
    metrics = result if isinstance(result, pa.Table) else None
    row = metrics.slice(0, 1).to_pylist()[0] if metrics is not None and metrics.num_rows else result
    if isinstance(row, dict):
        out["result"] = {k: v for k, v in row.items() if isinstance(v, (int, float, str, bool)) or v is None}
    if metrics is not None:
        scalar = [f.name for f in metrics.schema if not (pa.types.is_list(f.type) or pa.types.is_large_list(f.type))]
        out["metrics"] = metrics.select(scalar)
    return out


# -- the progress display of a cell ---------------------------------------------------------------
def _in_kernel() -> bool:
    module = sys.modules.get("IPython")
    if module is None:
        return False
    shell = module.get_ipython()
    return shell is not None and hasattr(shell, "kernel")


class _ProgressDisplay:
    """One progress display: an HTML `<progress>` updated in place in a notebook, text lines
    (on `stream`, stderr by default) elsewhere. Updates are throttled (a changed percent or
    message, at most every 0.2 s; the final state always shows)."""

    def __init__(self, title: str, *, html_output: bool | None = None, stream: Any = None) -> None:
        self.title = title
        self.html_output = _in_kernel() if html_output is None else html_output
        self.stream = stream if stream is not None else sys.stderr
        self._shown: tuple[int, str] | None = None
        self._last = 0.0
        self._handle: Any = None
        if self.html_output:
            from IPython.display import HTML, display

            self._handle = display(HTML(self.html(0.0, "starting")), display_id=True)

    def html(self, fraction: float, message: str) -> str:
        e = html.escape
        return (
            "<div class='dx-progress' style='font-size:12px;display:flex;gap:8px;align-items:center'>"
            f"<b>{e(self.title)}</b><progress value='{fraction:.3f}' max='1' style='width:18em'></progress>"
            f"<span>{fraction * 100:.0f}%</span><span style='opacity:.75'>{e(message)}</span></div>"
        )

    def __call__(self, fraction: float, message: str) -> None:
        state = (int(fraction * 100), message)
        now = time.monotonic()
        final = fraction >= 1.0
        if state == self._shown or (not final and now - self._last < 0.2 and state[0] == (self._shown or (-1,))[0]):
            return
        self._shown, self._last = state, now
        if self.html_output and self._handle is not None:
            from IPython.display import HTML

            self._handle.update(HTML(self.html(fraction, message)))
            return
        bar = "#" * int(20 * fraction)
        print(f"[deltaexplore] {self.title} [{bar:.<20}] {fraction * 100:3.0f}% {message}", file=self.stream, flush=True)


def progress_display(title: str, *, html_output: bool | None = None, stream: Any = None) -> Progress:
    """The progress callback of a cell running `title`: a bar in a notebook, text in a terminal."""
    return _ProgressDisplay(title, html_output=html_output, stream=stream)
