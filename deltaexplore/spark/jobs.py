"""Progress of long Spark work: one fraction over all stages while it runs, a summary at the end.

`progress(spark, "OPTIMIZE ...")` tags the Spark jobs started inside the block with a job group
and polls `SparkContext.statusTracker()` from a background thread; on a Spark Connect session
(no SparkContext in this process) it tags the operations (`addTag`) and listens to Connect's
progress handler, which reports each query's stages as they run. Its `fraction` is completed
tasks over the tasks of every stage seen so far, and never moves backwards (a new stage with
more tasks holds it until the work catches up). In a Jupyter kernel it is one HTML `<progress>`
bar (updated in place, kept as plain HTML in a saved notebook); elsewhere text lines (only when
it changes). When a caller already shows progress (maintenance from a cell or the explorer), it
wraps the work in `report_progress_to(callback)`: the tracker then calls
`callback(fraction, message)` and draws nothing itself, so there is one display. IPython is
imported only if already present. The summary (jobs, stages, tasks, failures, seconds) is kept
on the object.
"""

from __future__ import annotations

import contextlib
import contextvars
import html
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

from deltaexplore.errors import DeltaExploreError
from deltaexplore.spark.session import is_connect

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["SparkProgress", "StageProgress", "progress", "report_progress_to"]

ProgressCallback = Callable[[float, str], None]

#: where trackers created in this context report (set by `report_progress_to`)
_SINK: contextvars.ContextVar[ProgressCallback | None] = contextvars.ContextVar("deltaexplore_progress_sink", default=None)


@contextlib.contextmanager
def report_progress_to(callback: ProgressCallback) -> Iterator[None]:
    """Inside the block, every `progress(...)` tracker reports ``callback(fraction, message)``
    (fraction in 0..1, never decreasing) instead of drawing its own bars or text."""
    token = _SINK.set(callback)
    try:
        yield
    finally:
        _SINK.reset(token)


@dataclass
class StageProgress:
    stage_id: int
    name: str
    num_tasks: int
    completed: int = 0
    active: int = 0
    failed: int = 0
    skipped: bool = False  # its job finished without running it (a reused shuffle)


@dataclass
class Summary:
    description: str
    jobs: int = 0
    stages: int = 0
    tasks: int = 0  # completed tasks (stages skipped by Spark count none)
    failed_tasks: int = 0
    seconds: float = 0.0
    stage_progress: dict[int, StageProgress] = field(default_factory=dict)

    def text(self) -> str:
        return (
            f"{self.description}: {self.jobs} Spark job(s), {self.stages} stage(s), {self.tasks} task(s)"
            f"{f', {self.failed_tasks} failed' if self.failed_tasks else ''} in {self.seconds:.1f} s"
        )


def _in_notebook() -> bool:
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    shell = ipython.get_ipython()
    return shell is not None and hasattr(shell, "kernel")


class SparkProgress:
    """Context manager tracking the Spark jobs of one operation (see the module docstring)."""

    def __init__(
        self,
        spark: SparkSession,
        description: str,
        *,
        display: str = "auto",
        interval: float = 0.5,
        stream: TextIO | None = None,
    ) -> None:
        if display not in ("auto", "widget", "html", "text", "none"):
            raise DeltaExploreError(f"display must be auto, html, text or none, got {display!r}")
        self.spark = spark
        self.connect = is_connect(spark)
        self.sc = None if self.connect else spark.sparkContext
        self.description = description
        self.interval = interval
        self.stream = stream if stream is not None else sys.stderr
        self.sink = _SINK.get()
        if display == "auto":
            display = "none" if self.sink is not None else ("html" if _in_notebook() else "text")
        self.display = "html" if display == "widget" else display  # "widget": the old name of html
        self.fraction = 0.0
        self.group = f"deltaexplore-{uuid.uuid4().hex[:12]}"
        self.summary = Summary(description)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._previous_group: str | None = None
        self._previous_description: str | None = None
        self._start = 0.0
        self._printed: tuple[int, int] | None = None
        self._handle: Any = None
        self._lock = threading.Lock()

    # -- lifecycle ------------------------------------------------------------------------
    def __enter__(self) -> SparkProgress:
        self._start = time.monotonic()
        if self.display == "html":
            self._open_html()
        if self.connect:
            self.spark.addTag(self.group)  # type: ignore[attr-defined]
            self.spark.registerProgressHandler(self._on_connect_progress)  # type: ignore[attr-defined,arg-type]
            return self
        assert self.sc is not None
        self._previous_group = self.sc.getLocalProperty("spark.jobGroup.id")
        self._previous_description = self.sc.getLocalProperty("spark.job.description")
        self.sc.setJobGroup(self.group, self.description, interruptOnCancel=True)
        self._thread = threading.Thread(target=self._run, name="deltaexplore-progress", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self.connect:
            with contextlib.suppress(Exception):  # the session may be gone: progress never fails the work
                self.spark.removeProgressHandler(self._on_connect_progress)  # type: ignore[attr-defined,arg-type]
                self.spark.removeTag(self.group)  # type: ignore[attr-defined]
        else:
            self.poll()
        self.summary.seconds = time.monotonic() - self._start
        if exc_type is None:
            self.fraction = 1.0  # stages Spark skipped (reused shuffles) never count their tasks
            if self.sink is not None:
                self.sink(1.0, self.summary.text())
        if self.sc is not None:
            self.sc.setLocalProperty("spark.jobGroup.id", self._previous_group)  # type: ignore[arg-type]
            self.sc.setLocalProperty("spark.job.description", self._previous_description)  # type: ignore[arg-type]
        self._finish()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.poll()
            except Exception:  # noqa: BLE001 - progress must never break the work it watches
                return

    # -- polling --------------------------------------------------------------------------
    def _on_connect_progress(self, stages: Any, inflight_tasks: int, operation_id: str, done: bool, **_: Any) -> None:
        """Connect's progress handler: the stages of query `operation_id` so far."""
        with self._lock:
            s = self.summary
            for info in stages:
                key = hash((operation_id, info.stage_id))
                sp = s.stage_progress.get(key)
                if sp is None:
                    sp = s.stage_progress[key] = StageProgress(info.stage_id, operation_id, info.num_tasks)
                sp.num_tasks = info.num_tasks
                sp.completed = info.num_completed_tasks
                sp.skipped = done and info.num_completed_tasks == 0  # its query ended without running it
            s.jobs = len({p.name for p in s.stage_progress.values()})
            self._tally()
        try:
            self._render()
        except Exception:  # noqa: BLE001 - progress must never break the work it watches
            pass

    def _tally(self) -> None:
        s = self.summary
        ran = [p for p in s.stage_progress.values() if not p.skipped]
        s.stages = len(ran)
        s.tasks = sum(p.completed for p in ran)
        s.failed_tasks = sum(p.failed for p in ran)
        total = _total_tasks(s)
        if total:
            self.fraction = max(self.fraction, min(1.0, s.tasks / total))

    def poll(self) -> Summary:
        """Read the status tracker once and update the display (Connect reports by itself)."""
        if self.sc is None:
            return self.summary
        tracker = self.sc.statusTracker()
        job_ids = tracker.getJobIdsForGroup(self.group)
        with self._lock:
            s = self.summary
            s.jobs = len(job_ids)
            for jid in job_ids:
                info = tracker.getJobInfo(jid)
                if info is None:
                    continue
                for sid in info.stageIds:
                    stage = tracker.getStageInfo(sid)
                    if stage is None:
                        continue
                    sp = s.stage_progress.get(sid)
                    if sp is None:
                        sp = s.stage_progress[sid] = StageProgress(sid, stage.name, stage.numTasks)
                    sp.num_tasks = stage.numTasks
                    sp.completed = stage.numCompletedTasks
                    sp.active = stage.numActiveTasks
                    sp.failed = stage.numFailedTasks
                    sp.skipped = str(info.status) == "SUCCEEDED" and sp.completed == 0 and sp.active == 0
            self._tally()
            self._render()
        return self.summary

    def message(self) -> str:
        s = self.summary
        total = _total_tasks(s)
        failed = f", {s.failed_tasks} failed" if s.failed_tasks else ""
        return f"{self.description}: {s.tasks}/{total} tasks in {s.stages} stage(s){failed}"

    # -- display --------------------------------------------------------------------------
    def _bar_html(self, *, done: bool = False) -> str:
        text = self.summary.text() if done else self.message()
        return (
            f"<div style='font-size:12px'><progress value='{self.fraction:.3f}' max='1' style='width:22em;"
            f"vertical-align:middle'></progress> <span>{_escape(text)}</span></div>"
        )

    def _open_html(self) -> None:
        from IPython.display import HTML, display

        self._handle = display(HTML(self._bar_html()), display_id=True)

    def _render(self) -> None:
        if self.sink is not None:
            if self.summary.stages:
                self.sink(self.fraction, self.message())
            return
        if self.display == "none":
            return
        state = (int(self.fraction * 100), self.summary.failed_tasks)
        if state == self._printed:
            return
        self._printed = state
        if self.display == "html":
            if self._handle is not None:
                from IPython.display import HTML

                self._handle.update(HTML(self._bar_html()))
            return
        done = int(20 * self.fraction)
        print(f"[deltaexplore] [{'#' * done}{'.' * (20 - done)}] {self.message()}", file=self.stream, flush=True)

    def _finish(self) -> None:
        if self.sink is not None or self.display == "none":
            return
        if self.display == "html":
            if self._handle is not None:
                from IPython.display import HTML

                self._handle.update(HTML(self._bar_html(done=True)))
            return
        print(f"[deltaexplore] {self.summary.text()}", file=self.stream, flush=True)


def _total_tasks(s: Summary) -> int:
    """Tasks of every stage seen that Spark ran or may still run (skipped stages count none)."""
    return sum(p.num_tasks for p in s.stage_progress.values() if not p.skipped)


def _escape(text: str) -> str:
    return html.escape(text)


def progress(spark: SparkSession, description: str, *, display: str = "auto", stream: TextIO | None = None) -> SparkProgress:
    """Track the Spark jobs run inside a ``with`` block.

    Args:
        spark: the session.
        description: what the work is (shown as the title and in the Spark UI).
        display: ``auto`` (nothing when `report_progress_to` is active, else one HTML progress
            bar in a notebook and text elsewhere), ``html``, ``text`` or ``none``.
        stream: where text progress goes (default stderr).

    Example:
        >>> with progress(spark, "count") as p:
        ...     df.count()
        >>> p.summary.text()
    """
    return SparkProgress(spark, description, display=display, stream=stream)
