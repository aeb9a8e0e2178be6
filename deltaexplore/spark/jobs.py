"""Progress of long Spark work: a bar per job stage while it runs and a summary at the end.

`progress(spark, "OPTIMIZE ...")` tags the Spark jobs started inside the block with a job group
and polls `SparkContext.statusTracker()` from a background thread. In a Jupyter kernel with
ipywidgets installed each stage gets an `IntProgress` bar; elsewhere progress is printed as
text lines (only when it changes). ipywidgets and IPython are imported only if already
present. The summary (jobs, stages, tasks, failures, seconds) is kept on the object.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

from deltaexplore.errors import DeltaExploreError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["SparkProgress", "StageProgress", "progress"]


@dataclass
class StageProgress:
    stage_id: int
    name: str
    num_tasks: int
    completed: int = 0
    active: int = 0
    failed: int = 0


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


def _has_widgets() -> bool:
    return "ipywidgets" in sys.modules or importlib.util.find_spec("ipywidgets") is not None


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
        if display not in ("auto", "widget", "text", "none"):
            raise DeltaExploreError(f"display must be auto, widget, text or none, got {display!r}")
        self.spark = spark
        self.sc = spark.sparkContext
        self.description = description
        self.interval = interval
        self.stream = stream if stream is not None else sys.stderr
        if display == "auto":
            display = "widget" if _in_notebook() and _has_widgets() else "text"
        self.display = display
        self.group = f"deltaexplore-{uuid.uuid4().hex[:12]}"
        self.summary = Summary(description)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._previous_group: str | None = None
        self._previous_description: str | None = None
        self._start = 0.0
        self._printed: dict[int, tuple[int, int]] = {}
        self._bars: dict[int, Any] = {}
        self._box: Any = None
        self._lock = threading.Lock()

    # -- lifecycle ------------------------------------------------------------------------
    def __enter__(self) -> SparkProgress:
        self._previous_group = self.sc.getLocalProperty("spark.jobGroup.id")
        self._previous_description = self.sc.getLocalProperty("spark.job.description")
        self.sc.setJobGroup(self.group, self.description, interruptOnCancel=True)
        self._start = time.monotonic()
        if self.display == "widget":
            self._open_widget()
        self._thread = threading.Thread(target=self._run, name="deltaexplore-progress", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.poll()
        self.summary.seconds = time.monotonic() - self._start
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
    def poll(self) -> Summary:
        """Read the status tracker once and update the display."""
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
            s.stages = len(s.stage_progress)
            s.tasks = sum(p.completed for p in s.stage_progress.values())
            s.failed_tasks = sum(p.failed for p in s.stage_progress.values())
            self._render()
        return self.summary

    # -- display --------------------------------------------------------------------------
    def _open_widget(self) -> None:
        import ipywidgets
        from IPython.display import display

        self._box = ipywidgets.VBox([ipywidgets.HTML(value=f"<b>{_escape(self.description)}</b>")])
        display(self._box)

    def _render(self) -> None:
        if self.display == "none":
            return
        if self.display == "widget":
            import ipywidgets

            for sid, sp in sorted(self.summary.stage_progress.items()):
                bar = self._bars.get(sid)
                if bar is None:
                    bar = self._bars[sid] = ipywidgets.IntProgress(
                        min=0, max=max(sp.num_tasks, 1), description=f"stage {sid}", layout={"width": "60%"}
                    )
                    bar.tooltip = sp.name
                    self._box.children = (*self._box.children, bar)
                bar.max = max(sp.num_tasks, 1)
                bar.value = sp.completed
                bar.bar_style = "danger" if sp.failed else ("success" if sp.completed >= sp.num_tasks else "info")
            return
        for sid, sp in sorted(self.summary.stage_progress.items()):
            state = (sp.completed, sp.failed)
            if self._printed.get(sid) == state:
                continue
            self._printed[sid] = state
            done = int(20 * sp.completed / sp.num_tasks) if sp.num_tasks else 20
            failed = f", {sp.failed} failed" if sp.failed else ""
            print(
                f"[deltaexplore] stage {sid} [{'#' * done}{'.' * (20 - done)}] {sp.completed}/{sp.num_tasks} tasks{failed}",
                file=self.stream,
                flush=True,
            )

    def _finish(self) -> None:
        if self.display == "none":
            return
        if self.display == "widget":
            import ipywidgets

            self._box.children = (*self._box.children, ipywidgets.HTML(value=_escape(self.summary.text())))
            return
        print(f"[deltaexplore] {self.summary.text()}", file=self.stream, flush=True)


def _escape(text: str) -> str:
    import html

    return html.escape(text)


def progress(spark: SparkSession, description: str, *, display: str = "auto", stream: TextIO | None = None) -> SparkProgress:
    """Track the Spark jobs run inside a ``with`` block.

    Args:
        spark: the session.
        description: what the work is (shown as the title and in the Spark UI).
        display: ``auto`` (widgets in a notebook with ipywidgets, else text), ``widget``,
            ``text`` or ``none``.
        stream: where text progress goes (default stderr).

    Example:
        >>> with progress(spark, "count") as p:
        ...     df.count()
        >>> p.summary.text()
    """
    return SparkProgress(spark, description, display=display, stream=stream)
