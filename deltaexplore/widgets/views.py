"""What each explorer tab shows, for one table at one version: inspection tables and viz charts.

`TableView` holds a table and its current snapshot and answers each tab with a small dict:
Arrow tables (sent as IPC buffers), chart specs (`deltaexplore.viz` charts as Vega-Lite
dicts: the same charts a notebook shows) and `RowSource`s for grids whose rows stay in the
kernel. Every number comes from `deltaexplore.inspect` (one definition of every metric): this
module only selects, orders and packages. Nothing here imports ipywidgets.
"""

from __future__ import annotations

import json
import math
import os
import threading
from collections.abc import Callable, Hashable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore import inspect, viz
from deltaexplore.errors import DeltaExploreError, DeltaProtocolError, InvalidArgumentError, UnsupportedFeatureError
from deltaexplore.inspect.advise import check_advice
from deltaexplore.inspect.deletion_vectors import storage_names
from deltaexplore.inspect.diff import file_changes
from deltaexplore.inspect.files import files_ready, small_file_threshold
from deltaexplore.inspect.layout import clustering_columns, resolved_column
from deltaexplore.inspect.layout_density import file_positions
from deltaexplore.inspect.row_diff import read_summary
from deltaexplore.inspect.snapshots import remember, snapshot_of
from deltaexplore.inspect.stepped_totals import MAX_STEP_BYTES, stepped_totals
from deltaexplore.inspect.streaming import (
    FILE_LIST_COLUMNS,
    KERNEL_BYTES_PER_FILE,
    STREAMING_FILES,
    ColumnLayouts,
    FilePass,
    available_memory,
    estimated_files,
    file_pass,
    spark_threshold,
)
from deltaexplore.spark.inspect import spark_file_pass
from deltaexplore.widgets.arrow_ipc import to_ipc
from deltaexplore.widgets.background import THREAD_PREFIX, Background
from deltaexplore.widgets.sources import RowSource, with_partition_values

if TYPE_CHECKING:
    from deltaexplore.core.snapshot import Snapshot
    from deltaexplore.core.table import Table

__all__ = ["TableView"]

#: a log segment (checkpoint + JSON to replay) under this many bytes is cheap enough to replay,
#: and its statistics to read, before the first view: small tables show everything at once
EAGER_SEGMENT_BYTES = 16 * 1024 * 1024

#: the previous version is prepared in the background (one step back on the slider, and the
#: diff tab's default pair, need it) unless the snapshot has more files than this
PREFETCH_MAX_FILES = 4_000_000


def diff_key(v1: int, v2: int) -> str:
    """What a background job preparing the diff of `v1` -> `v2` is called (`TableView.prepare`)."""
    return f"diff:{v1}-{v2}"


def _segment_bytes(snap: Snapshot) -> int:
    """Bytes a replay of `snap` reads: its checkpoint and JSON commits."""
    seg = snap.segment
    return (seg.checkpoint.size if seg.checkpoint is not None else 0) + sum(f.size for f in seg.json_files)


def _py(value: Any) -> str:
    return repr(value)


def _open(table: Table, version: int | None) -> Snapshot:
    """The snapshot the explorer shows: inspect's, or, for a version this reader cannot read
    (a damaged log, a reader feature it lacks), the table read with `strict=False`, whose
    `problem` the overview shows (history, files and the log are still there to see)."""
    try:
        return snapshot_of(table, version)
    except DeltaProtocolError:
        return table.snapshot(version, strict=False)


#: the protocol timeline (every commit read) is shown in History when the commits weigh less
PROTOCOL_TIMELINE_BYTES = 64 * 1024 * 1024


def problem_of(snap: Snapshot) -> dict[str, str] | None:
    """Why the rows of `snap` cannot be read, for the overview: kind ("damaged": the log breaks
    the protocol; "unsupported": it needs what deltaexplore does not read) and the error text."""
    problem = snap.problem
    if problem is None:
        return None
    kind = "unsupported" if isinstance(problem, UnsupportedFeatureError) else "damaged"
    return {"kind": kind, "message": str(problem)}


class TableView:
    """The explorer's questions, answered for one table at one version.

    Args:
        table: the table.
        version: the version to show (latest when None).
        streaming_files: past this many active files (as the log says before a replay:
            `inspect.streaming.estimated_files`) the overview, files, DV and health tabs are
            counted by one streaming pass (`inspect.streaming`) instead of a replay of the
            state; 0 always streams. Default `STREAMING_FILES`.
        spark: a Spark session (classic or Connect): past `spark_files` the overview, files and
            DV tabs are computed as Spark jobs on it (`deltaexplore.spark.inspect`).
        spark_files: the file count past which `spark` computes them; by default estimated
            from the free memory (`inspect.streaming.spark_threshold`: half of it at
            `KERNEL_BYTES_PER_FILE` a file), else `streaming_files` when that is unknown.

    `spark_progress`, when set, is called ``(fraction, message)`` as those Spark jobs run.
    """

    def __init__(
        self,
        table: Table,
        version: int | None = None,
        *,
        streaming_files: int | None = None,
        spark: Any = None,
        spark_files: int | None = None,
    ) -> None:
        self.table = table
        self.streaming_files = STREAMING_FILES if streaming_files is None else int(streaming_files)
        self.spark = spark
        #: why `spark_files` is what it is (said in the engine's reason)
        self.spark_files_reason = "the threshold given to the explorer"
        if spark_files is not None:
            self.spark_files = int(spark_files)
        else:
            free = available_memory() if spark is not None else None
            estimated = spark_threshold(free)
            if estimated is None or free is None:
                self.spark_files = self.streaming_files
                self.spark_files_reason = "the streaming threshold (the free memory is unknown)"
            else:
                self.spark_files = estimated
                self.spark_files_reason = (
                    f"estimated from the free memory: half of {free / 2**30:.1f} GiB at "
                    f"{KERNEL_BYTES_PER_FILE} bytes a file kept in the kernel"
                )
        self.spark_progress: Callable[[float, str], None] | None = None
        self._passes: dict[int, FilePass] = {}
        self._estimates: dict[int, int | None] = {}
        self._pass_lock = threading.Lock()
        self._timeline: tuple[int | None, pa.Table] | None = None
        self._timeline_lock = threading.Lock()
        self.listing = table.listing()
        self.snap: Snapshot = _open(table, version)
        self._pending: tuple[int, Future[Snapshot]] | None = None
        self._prepared: dict[tuple[Any, str], Future[Any]] = {}
        #: keys whose prepared result a tab took: not prepared again
        self._taken: set[tuple[Any, str]] = set()
        #: `prepare` may be called from the kernel's main thread and a subshell's
        self._preparing = threading.Lock()
        #: work ahead of the user, which gives way to the user's requests (`user()`)
        self.background = Background()
        #: long work a user started (a row diff): off the kernel's message thread, cancellable
        self.jobs = Background(name="deltaexplore-job")

    # -- time ------------------------------------------------------------------------------
    @property
    def version(self) -> int:
        return self.snap.version

    def set_version(self, version: int) -> None:
        """Move to `version` (a new immutable snapshot)."""
        if version != self.snap.version:
            new = self.snapshot(version)
            if self.snap.version != self.listing.latest_version:
                remember(self.snap)  # the version just left: moving back is free
            self.snap = new
            for key in [k for k in self._prepared if k[1] != "history" and k[0] != new.version]:
                self._prepared.pop(key).cancel()  # the version left: its tabs are not asked for
            self._taken = {k for k in self._taken if k[1] == "history"}  # a version's tabs: prepared again on a return
            # queued or running jobs of versions the user left stop (at their next pause)
            self.background.cancel(lambda key: not isinstance(key, tuple) or key[1] == "history" or key[0] == new.version)
            if self._pending is not None and self._pending[0] != new.version:
                self._pending = None  # its job was dropped with the other versions'

    def user(self) -> Any:
        """A context in which a user's request is served: background work waits meanwhile."""
        return self.background.user()

    def snapshot(self, version: int) -> Snapshot:
        """The snapshot at `version`: the one prepared in the background when it is that one,
        else inspect's (which keeps the latest and the two last other versions)."""
        pending = self._pending
        if pending is not None and pending[0] == version:
            self._pending = None
            try:
                return remember(self.background.result(pending[1]))
            except Exception:  # noqa: BLE001 - built again below, where the error reaches the caller
                pass
        if version == self.snap.version:
            return self.snap
        return _open(self.table, version)

    # -- background work, while the user reads the first view ---------------------------------
    def _background(self, job: Any, key: Hashable | None = None) -> Future[Any]:
        """Run `job` on this view's one background thread (jobs run one after the other; most
        of their time is in Arrow, polars and the stats kernel, which release the GIL). `key`
        (version, what) lets a move to another version drop it; a job pauses between its
        stages while the user is served (`pause`)."""
        return self.background.submit(key if key is not None else object(), job)

    def pause(self) -> None:
        """Between two stages of a background job: wait while a user's request is served, stop
        when the job was dropped (a no-op on any other thread)."""
        self.background.pause()

    def prefetch(self, version: int) -> None:
        """Prepare in the background the snapshot at `version` (replay included), so moving
        there, or diffing with it, is instant."""
        if os.environ.get("DELTAEXPLORE_PREFETCH") == "0":
            return
        lo, _ = self.version_range()
        recent = getattr(self.table, "_deltaexplore_inspect_cache", {}).get("recent") or {}
        small_enough = self.snap.num_files <= PREFETCH_MAX_FILES
        if self._pending is None and version >= lo and version not in recent and small_enough:

            def build() -> Snapshot:
                self.pause()
                snap = self.table.snapshot(version)
                self.pause()
                snap.add_actions()
                return snap

            self._pending = (version, self._background(build, (version, "snapshot")))

    def _preparing_allowed(self, snap: Snapshot) -> str | None:
        """The engine of `snap` when work may be prepared ahead for it, else None (turned off, a
        small table answers every tab at once, Spark, or a replay too big to make ahead)."""
        if os.environ.get("DELTAEXPLORE_PREFETCH") == "0" or _segment_bytes(snap) < EAGER_SEGMENT_BYTES:
            return None
        engine = self.engine(snap)["name"]
        if engine == "spark" or (engine == "local" and snap.num_files > PREFETCH_MAX_FILES):
            return None
        return engine

    def _history_job(self) -> tuple[dict[str, Any], RowSource]:
        self.pause()
        return self.history()

    def prepare_history(self) -> None:
        """Prepare the history in the background as soon as the first view is shown, before its
        counts are done (it needs none of them; under half a second for 1,101 commits): History
        is the tab opened first, and a click on it then finds it ready."""
        if self._preparing_allowed(self.snap) is None:
            return
        key = (self.listing.latest_version, "history")
        with self._preparing:
            if key not in self._prepared and key not in self._taken:
                self._prepared[key] = self._background(self._history_job, key)

    def prepare(self) -> None:
        """Once the first view is complete: prepare in the background what the user is likely to
        ask next: the previous version (the slider's step back, the diff's default pair), the
        files tab, the layout of the default column, the history and the log health of this
        version, and the diff of the previous version to this one (the Diff tab's default pair).
        Each tab takes its result when it opens (`_take_prepared`), or computes it.

        A table past the streaming threshold is not replayed ahead of the user: its default
        column's layout, history and files are prepared (from the overview's pass, which kept
        that column's bounds: `_pass_columns`), the diff (the paths the commits between touch
        alone) and the log health (one pass over the log's batches); on Spark nothing is."""
        snap = self.snap
        engine = self._preparing_allowed(snap)
        if engine is None:
            return

        # with the grids' default orders: their first window, asked for on the kernel's main
        # thread when the tab is built, is then only a take
        def files() -> tuple[dict[str, Any], RowSource, RowSource]:
            self.pause()
            out, files, parts = self.files(snap)
            self.pause()
            files.warm()
            self.pause()
            return out, files, parts.warm()

        def layout(column: str) -> tuple[dict[str, Any], RowSource]:
            self.pause()
            out, source = self.layout(column, snap)
            self.pause()
            return out, source.warm()

        def health() -> dict[str, Any]:
            self.pause()
            return self.health(snap)

        older = max(self.version_range()[0], snap.version - 1)

        def diff() -> tuple[dict[str, Any], RowSource]:
            self.pause()
            out, source = self.diff(older, snap.version)
            self.pause()
            return out, source.warm()

        # in the order of their cost (a tab opened while its job still waits computes it at
        # once): the history (usually prepared already: `prepare_history`), the files (a
        # fraction of a second at 1M files, sorts included: a click on Files behind the
        # layout's job paid both and sorted its million rows for the first window), then
        # replayed: the log health (under a second), the diff's default pair (the paths the
        # commits between touch alone), this version's layout tab and the previous version
        # (seconds each); streamed: the layout (about a second from the overview pass's
        # bounds), the diff, then the log health (one pass over the log's batches, no replay)
        jobs: dict[tuple[Any, str], Callable[[], Any]] = {}
        jobs[(self.listing.latest_version, "history")] = self._history_job
        jobs[(snap.version, "files")] = files
        column = self.default_layout_column()
        if engine == "local":
            jobs[(snap.version, "health")] = health
            jobs[(snap.version, diff_key(older, snap.version))] = diff
        if column:
            jobs[(snap.version, f"layout:{column}")] = lambda: layout(column)
        if engine != "local":
            jobs[(snap.version, diff_key(older, snap.version))] = diff
            jobs[(snap.version, "health")] = health
        with self._preparing:
            for key, job in jobs.items():
                if key not in self._prepared and key not in self._taken:
                    self._prepared[key] = self._background(job, key)
            if engine == "local":
                self.prefetch(snap.version - 1)

    def prepared_state(self, key: tuple[Any, str]) -> str:
        """Where the background job for `key` is: "done", "pending" (queued or running) or "none"."""
        future = self._prepared.get(key)
        if future is None or future.cancelled():
            return "none"
        return "done" if future.done() else "pending"

    def _take_prepared(self, key: tuple[Any, str]) -> Any:
        """The result prepared in the background for `key` (waiting for it while it runs), else
        None: nothing prepared, or its job still queued behind others (cancelled: the caller
        computes it at once rather than wait for the whole queue). Called on the background
        thread itself (by the job), it never waits for itself."""
        if threading.current_thread().name.startswith(THREAD_PREFIX):
            return None
        future = self._prepared.pop(key, None)
        if future is None or future.cancel():
            return None
        self._taken.add(key)
        try:
            return self.background.result(future)
        except Exception:  # noqa: BLE001 - computed again by the caller, where the error reaches the user
            return None

    def refresh(self) -> None:
        self.listing = self.table.listing(refresh=True)

    def version_range(self) -> tuple[int, int]:
        """(earliest version that can be reconstructed, latest version)."""
        listing = self.listing
        latest = listing.latest_version
        if latest is None:
            return (0, 0)
        commits = sorted(set(listing.commits) | set(listing.ratified))
        if commits and commits[0] == 0:
            return (0, latest)
        cps = [v for v in listing.checkpoints if v <= latest]
        return (min(cps) if cps else (commits[0] if commits else latest), latest)

    def _code(self, expr: str, version: int | None = None) -> str:
        """Python that rebuilds a table shown here (at `version`, default the one shown), for "copy code"."""
        version = self.version if version is None else version
        return f"dx.open_table({self.table.uri!r}).snapshot({version}).inspect.{expr}"

    # -- which engine counts the file tabs ---------------------------------------------------
    def engine(self, snap: Snapshot | None = None) -> dict[str, str]:
        """How the file tabs of `snap` are computed, and why: `local` (the replayed state) or
        `streaming` (one pass over the log's batches, `inspect.streaming`)."""
        snap = snap or self.snap
        if snap.files_loaded:
            return {"name": "local", "reason": "the files are replayed already"}
        if snap.version not in self._estimates:  # footers may be read: once per version
            self._estimates[snap.version] = estimated_files(snap)
        estimate = self._estimates[snap.version]
        if self.spark is not None and estimate is not None and estimate >= self.spark_files:
            return {
                "name": "spark",
                "reason": f"about {estimate:,} files (as the log states before a replay), at least "
                f"{self.spark_files:,} ({self.spark_files_reason}): computed as Spark jobs on the session "
                "given to the explorer",
            }
        if estimate is not None and estimate >= self.streaming_files:
            return {
                "name": "streaming",
                "reason": f"about {estimate:,} files (as the log states before a replay), at least "
                f"{self.streaming_files:,}: counted in one pass over the checkpoint's batches and the commits",
            }
        said = "an unknown number of" if estimate is None else f"about {estimate:,}"
        return {"name": "local", "reason": f"{said} files, under {self.streaming_files:,}: the state is replayed"}

    def file_pass(self, snap: Snapshot | None = None) -> FilePass:
        """The streaming pass over `snap`'s files (made once per version, with the file list),
        or its Spark counterpart when the engine is `spark` (the same tables)."""
        snap = snap or self.snap
        with self._pass_lock:
            if snap.version not in self._passes:
                if self.engine(snap)["name"] == "spark":
                    made: Any = spark_file_pass(self.spark, snap, progress=self._report_spark)
                else:  # with the default layout column's bounds: its Layout tab needs no second pass
                    made = file_pass(snap, keep_file_list=True, layout_columns=self._pass_columns(snap))
                self._passes = {snap.version: made}  # one version kept
            return self._passes[snap.version]

    def _pass_columns(self, snap: Snapshot) -> list[str]:
        """The columns whose bounds a streaming pass over `snap` keeps: for the first pass (the
        version the explorer opened at, whose Layout is prepared ahead) the default layout
        column (about a second more at 1M files, against a second pass of 4-8 s for the Layout
        tab); none for later versions (a slider step's counts stay one plain pass)."""
        if snap is not self.snap or self._passes:
            return []
        try:
            column = self.default_layout_column()
        except DeltaExploreError:
            return []
        return [column] if column else []

    def layout_pass(self, snap: Snapshot, column: str) -> ColumnLayouts:
        """The pass the layout tab of `column` reads: on Spark the version's `SparkFilePass`
        (it collects the column's statistics when asked); streaming, the version's pass when it
        kept the column's bounds, else a new pass keeping them and the file list, which then
        serves the other tabs too (one pass kept: each other column is one more pass). Made
        in the background (`prepare`), the new pass gives way to the user after each batch."""
        fp = self.file_pass(snap)
        if isinstance(fp, FilePass) and resolved_column(snap, column) not in fp.kept_columns:

            def between_batches(_batches: int, _files: int) -> None:
                self.pause()  # a no-op unless on the background thread

            made = file_pass(snap, keep_file_list=True, layout_columns=[column], progress=between_batches)
            with self._pass_lock:
                self._passes = {snap.version: made}
            return made
        return fp

    def _streamed_overview(self, snap: Snapshot) -> pa.Table:
        """The overview of a streamed version: from a pass kept when it tells it
        (`_kept_overview`), else from the version's own pass (which counts rows too)."""
        kept = self._kept_overview(snap)
        return kept if kept is not None else self.file_pass(snap).overview()

    def _kept_overview(self, snap: Snapshot, max_bytes: int = MAX_STEP_BYTES) -> pa.Table | None:
        """The overview of a streamed version from the pass kept: the version's own, else one of
        another version changed by the commits in between (`inspect.stepped_totals`: a slider
        step costs those commits, not a pass over the log); None when there is no pass kept or
        the step cannot be made (or would read more than `max_bytes` of JSON)."""
        with self._pass_lock:
            own = self._passes.get(snap.version)
            kept = next(iter(self._passes.values()), None)
        if isinstance(own, FilePass):
            return own.overview()
        if own is not None or not isinstance(kept, FilePass) or self.engine(snap)["name"] != "streaming":
            return None
        totals = stepped_totals(kept, snap, max_bytes=max_bytes)
        if totals is None:
            return None
        return inspect.overview(snap, small_file_bytes=kept.small_file_bytes, totals=totals)

    def _report_spark(self, fraction: float, message: str) -> None:
        if self.spark_progress is not None:
            self.spark_progress(fraction, message)

    def _streaming(self, snap: Snapshot) -> bool:
        """Whether the file tabs of `snap` avoid replaying its state (streaming or Spark)."""
        return self.engine(snap)["name"] != "local"

    # -- overview --------------------------------------------------------------------------
    def overview(self, stage: int | None = None) -> dict[str, Any]:
        """`inspect.overview` metrics, the schema (`inspect.column_mapping`), properties, the
        protocol's features and the current version's commit, in three stages: 0 the log's
        metadata alone (`overview(files=False)`: no file action replayed), 1 the file actions
        (`rows=False`: no statistics parsed), 2 everything. By default the furthest stage that
        costs nothing more than what is done already."""
        snap = self.snap
        streaming = self._streaming(snap)
        metrics = None
        if stage is None:
            stage = 2 if files_ready(snap) or _segment_bytes(snap) < EAGER_SEGMENT_BYTES else 1 if snap.files_loaded else 0
            if streaming and stage < 2:  # a slider step: counted at once when a few commits tell it
                metrics = self._kept_overview(snap, max_bytes=EAGER_SEGMENT_BYTES)
                stage = 2 if metrics is not None else stage
        if metrics is None:
            if streaming and stage >= 1:
                stage, metrics = 2, self._streamed_overview(snap)
            else:
                metrics = inspect.overview(snap, files=stage >= 1, rows=stage >= 2)
        out: dict[str, Any] = {"version": snap.version, "stage": stage, "complete": stage >= 2, "metrics": to_ipc(metrics)}
        out["engine"] = self.engine(snap)
        try:
            cols = inspect.column_mapping(snap)
            keep = ["column", "type", "nullable", "is_partition", "depth", "collation", "metadata"]
            if snap.column_mapping_mode != "none":
                keep += ["physical_path", "field_id"]
            out["schema"] = to_ipc(cols.select(keep))
        except DeltaExploreError as exc:
            out["schema_error"] = str(exc)
        props = snap.properties if snap.has_metadata else {}
        out["properties"] = to_ipc(pa.table({"property": list(props), "value": list(props.values())}))
        feats = inspect.features(snap)
        feats = feats.filter(feats.column("supported"))
        out["features"] = to_ipc(feats.select(["feature", "kind", "active", "activation", "description"]))
        out["commit"] = self.commit(snap.version)
        out["small_file_bytes"] = small_file_threshold(snap)
        out["published_only"] = bool(snap.published_only)
        out["checkpoint_version"] = snap.checkpoint_version
        problem = problem_of(snap)
        if problem is not None:
            out["problem"] = problem
        return out

    def commit(self, version: int) -> dict[str, Any]:
        """The commitInfo of one version (operation, user, engine, time) as a JSON-safe dict."""
        snap = self.snap if version <= self.snap.version else self.table
        rows = inspect.commit_infos(snap, version, version).to_pylist()
        if not rows:
            return {"version": version}
        row = rows[0]
        row["timestamp"] = int(row["timestamp"].timestamp() * 1000)
        row["parameters"] = dict(row["parameters"] or [])
        row["metrics"] = dict(row["metrics"] or [])
        return row

    def snapshot_for_history(self) -> Table | Snapshot:
        """What the history reads from: the table at its latest version (the current snapshot
        when it is the latest, so no second replay)."""
        latest = self.listing.latest_version
        return self.snap if self.snap.version == latest else self.table

    # -- history ---------------------------------------------------------------------------
    def history(self) -> tuple[dict[str, Any], RowSource]:
        """Every commit from its commitInfo (`inspect.commit_infos`), and the timeline chart
        (`viz.operations_spec` of the source's table)."""
        ready = self._take_prepared((self.listing.latest_version, "history"))
        if ready is not None:
            return ready  # type: ignore[no-any-return]
        commits = inspect.commit_infos(self.snapshot_for_history())
        out = {
            "latest": commits.column("version")[0].as_py() if commits.num_rows else None,
            "commits": to_ipc(commits.drop_columns(["commit_info"])),
            "timeline": viz.operations_spec(commits, interactive=True),
        }
        out.update(self.protocol_timeline())
        out["health_auto"] = self.log_is_small()
        source = RowSource(
            commits,
            search_columns=("operation", "user_name", "user_id", "engine", "user_metadata"),
            code=f"dx.open_table({self.table.uri!r}).inspect.commit_infos()",
            name="commit_infos",
        )
        return out, source

    def health_timeline(self, metric: str = "files") -> dict[str, Any]:
        """The table through time (`inspect.timeline` of every version, computed once per latest
        version; with the default layout column's overlap depth when the log is small enough to
        read whole at once) as `viz.timeline_spec(metric, interactive=True)`: brushing versions
        picks a range the diff compares. Offers the metrics that have values."""

        latest = self.listing.latest_version
        with self._timeline_lock:
            if self._timeline is None or self._timeline[0] != latest:
                column = None
                if self.log_is_small():
                    try:
                        column = self.default_layout_column() or None
                    except DeltaExploreError:
                        column = None
                self._timeline = (latest, inspect.timeline(self.snapshot_for_history(), column=column))
            tl = self._timeline[1]
        offered = [(m, title) for m, (title, _) in viz.TIMELINE_METRICS.items() if tl.column(m).null_count < tl.num_rows]
        return {
            "metric": metric,
            "metrics": offered,
            "column": (tl.schema.metadata or {}).get(b"deltaexplore.timeline.column", b"").decode() or None,
            "latest": latest,
            "chart": viz.timeline_spec(tl, metric=metric, interactive=True),
        }

    def log_is_small(self) -> bool:
        """Whether the commits weigh little enough to be read whole for a view (History's
        protocol timeline and table through time)."""
        return sum(f.size for f in self.listing.commits.values()) <= PROTOCOL_TIMELINE_BYTES

    def protocol_timeline(self) -> dict[str, Any]:
        """The versions whose commit changed the protocol (`inspect.features(all_versions=True)`,
        rows with a change), or a note when the log is too big to read whole for it here."""
        if not self.log_is_small():
            return {"protocol_note": "the log is large: inspect.features(all_versions=True) lists the protocol of every version"}
        try:
            rows = inspect.features(self.table, all_versions=True)
        except DeltaExploreError as exc:
            return {"protocol_note": f"protocol by version unavailable: {exc}"}
        changed = rows.filter(pc.is_valid(rows.column("change")))
        keep = ["version", "change", "min_reader_version", "min_writer_version", "added", "removed", "readable", "blockers"]
        return {"protocol": to_ipc(changed.select(keep))}

    def commit_detail(self, version: int) -> dict[str, Any]:
        """One commit in full: its commitInfo and the counts derived from its actions (`history`)."""
        h = self.table.history(start_version=version, end_version=version)
        if h.num_rows == 0:
            raise InvalidArgumentError(f"version {version} has no commit file in {self.table.uri}")
        row = h.to_pylist()[0]
        keep = (
            "files_added",
            "files_removed",
            "bytes_added",
            "bytes_removed",
            "rows_added",
            "rows_removed",
            "dv_files_added",
            "cdc_files",
            "metadata_changed",
            "protocol_changed",
        )
        return {"version": version, "counts": {k: row[k] for k in keep}, "commit_info": row["commit_info"]}

    # -- files -----------------------------------------------------------------------------
    def files(self, snap: Snapshot | None = None) -> tuple[dict[str, Any], RowSource, RowSource]:
        """File-size histogram, partition skew, and the partitions and files grids."""

        snap = snap or self.snap
        ready = self._take_prepared((snap.version, "files"))
        if ready is not None:
            return ready  # type: ignore[no-any-return]

        engine = self.engine(snap)
        if engine["name"] != "local":
            fp = self.file_pass(snap)
            files, parts, sizes = fp.file_list(), fp.partitions(), fp.file_sizes()
        else:
            files = inspect.files(snap)
            files = files.append_column(
                pa.field(
                    "dv_storage",
                    pa.string(),
                    metadata={"doc": "where the deletion vector is: file, inline or absolute", "unit": "text"},
                ),
                storage_names(files.column("storage_type")),
            )
            parts, sizes = inspect.partitions(snap), inspect.file_sizes(snap)
        shown = list(FILE_LIST_COLUMNS)  # the file grid's columns, whichever engine listed them
        names = list(snap.partition_columns)
        files_source = RowSource(
            with_partition_values(files.select([c for c in shown if c in files.column_names]), names),
            search_columns=("path",),
            default_sort=(("size", True),),  # one numeric key: 1M rows sort in milliseconds
            code=self._code("files()", snap.version),
            name=f"files_v{snap.version}",
        )
        parts_source = RowSource(
            with_partition_values(parts.drop_columns(["partition_values"]), names),
            search_columns=("partition",),
            code=self._code("partitions()", snap.version),
            name=f"partitions_v{snap.version}",
        )
        out = {
            "version": snap.version,
            "partitioned": bool(snap.partition_columns),
            "engine": engine,
            "size_chart": viz.file_size_spec(sizes),
            "skew_chart": viz.partition_skew_spec(parts) if snap.partition_columns else None,
        }
        return out, files_source, parts_source

    # -- layout ----------------------------------------------------------------------------
    def stats_columns(self, snap: Snapshot | None = None) -> list[str]:
        """Columns that can have per-file bounds (`inspect.layout_summary`'s eligible columns)."""
        snap = snap or self.snap
        if not snap.has_metadata:
            return []
        try:
            fields = snap.schema.fields
        except DeltaExploreError:
            return []
        out = []
        for f in fields:
            t = str(f.type)
            if t.startswith(("struct", "array", "map")) or t in ("binary", "variant", "void"):
                continue
            out.append(f.name)
        return out

    def default_layout_column(self) -> str:
        """The first clustering column, else the first column with bounds ('' when none)."""
        candidates = self.stats_columns()
        if not candidates:
            return ""
        mode = self.snap.column_mapping_mode
        by_physical = {
            (f.physical_name if mode != "none" else f.name).lower(): f.name
            for f in self.snap.schema.fields
            if f.name in candidates
        }
        for path in clustering_columns(self.snap):
            if len(path) == 1 and path[0].lower() in by_physical:
                return by_physical[path[0].lower()]
        parts = set(self.snap.partition_columns)
        data_cols = [c for c in candidates if c not in parts]
        return (data_cols or candidates)[0]

    def layout(self, column: str, snap: Snapshot | None = None) -> tuple[dict[str, Any], RowSource]:
        """`inspect.layout_summary` of one column, the density and range charts, and the files
        ordered by overlap depth (worst first)."""

        snap = snap or self.snap
        if column not in self.stats_columns(snap):
            expected = ", ".join(self.stats_columns(snap)) or "(none)"
            raise InvalidArgumentError(f"no min/max statistics can exist for column {column!r}: expected one of {expected}")
        ready = self._take_prepared((snap.version, f"layout:{column}"))
        if ready is not None:
            return ready  # type: ignore[no-any-return]

        engine = self.engine(snap)
        if engine["name"] != "local":  # the pass's bounds of the column, never the replayed state
            fp = self.layout_pass(snap, column)
            per_file, summary = fp.layout(column), fp.layout_summary([column])
            positions, integral = fp.file_positions(column)
            density = fp.layout_density(column)
        else:
            per_file = inspect.layout(snap, column)
            summary = inspect.layout_summary(snap, [column])
            positions, integral = file_positions(snap, column)  # shared with layout_density
            density = inspect.layout_density(snap, column)
        self.pause()  # prepared in the background: the charts wait while the user is served
        with_stats = int(pc.sum(per_file.column("has_stats").cast(pa.int64())).as_py() or 0) if per_file.num_rows else 0
        out = {
            "version": snap.version,
            "column": column,
            "engine": engine,
            "integral_positions": integral,
            "summary": to_ipc(summary),
            "density_chart": viz.layout_density_spec(density, column, interactive=True),
            "ranges_chart": viz.layout_spec(per_file, column, max_files=300, height=260) if with_stats else None,
        }
        shown = per_file.select(
            ["path", "partition", "min", "max", "overlap_depth", "overlapping_files", "rank", "size", "num_records", "truncated"]
        )
        for name in positions.column_names:  # hidden: what a brush over the density chart filters on
            shown = shown.append_column(name, positions.column(name))
        source = RowSource(
            with_partition_values(shown, list(snap.partition_columns)),
            search_columns=("path", "partition"),
            default_sort=(("overlap_depth", True),),  # one numeric key: 1M rows sort in milliseconds
            code=self._code(f"layout({column!r})", snap.version),
            name=f"layout_{column}_v{snap.version}",
        )
        return out, source

    # -- deletion vectors ------------------------------------------------------------------
    def deletion_vectors(self) -> tuple[dict[str, Any], RowSource]:
        """`inspect.deletion_vectors` (worst files first), `dv_files`, and the density chart."""

        snap = self.snap
        engine = self.engine(snap)
        if engine["name"] != "local":
            fp = self.file_pass(snap)
            dv, dv_files, n_files = fp.deletion_vectors(), fp.dv_files(), fp.files
        else:
            dv, dv_files, n_files = inspect.deletion_vectors(snap), inspect.dv_files(snap), snap.num_files

        def total(column: str) -> int:
            return int(pc.sum(dv.column(column)).as_py() or 0) if dv.num_rows else 0

        out = {
            "version": snap.version,
            "engine": engine,
            "files_with_dv": dv.num_rows,
            "summary": {
                "files": n_files,
                "deleted_rows": total("cardinality"),
                "rows_in_dv_files": total("num_records"),
                "past_threshold": int(pc.sum(dv.column("past_threshold").cast(pa.int64())).as_py() or 0) if dv.num_rows else 0,
            },
            "dv_files": to_ipc(dv_files),
            "chart": viz.dv_density_spec(dv) if dv.num_rows else None,
        }
        source = RowSource(
            with_partition_values(
                dv.select(
                    [
                        "path",
                        "partition",
                        "num_records",
                        "cardinality",
                        "live_rows",
                        "deleted_ratio",
                        "past_threshold",
                        "storage",
                        "dv_path",
                        "dv_bytes",
                        "shared_by",
                        "size",
                    ]
                ),
                list(snap.partition_columns),
            ),
            search_columns=("path", "partition"),
            default_sort=(("deleted_ratio", True), ("path", False)),
            code=self._code("deletion_vectors()"),
            name=f"deletion_vectors_v{snap.version}",
        )
        return out, source

    # -- diff ------------------------------------------------------------------------------
    def diff(self, v1: int, v2: int) -> tuple[dict[str, Any], RowSource]:
        """`inspect.diff` (every change, by section) and `inspect.diff_files` of v1 -> v2."""
        ready = self._take_prepared((self.snap.version, diff_key(v1, v2)))
        if ready is not None:
            return ready  # type: ignore[no-any-return]
        pending = self._pending
        if pending is not None and pending[0] in (v1, v2) and pending[1].done():
            self.snapshot(pending[0])  # prepared in the background: inspect keeps it (not waited for:
            # the diff replays the older version for the paths the commits between touched alone)
        changes = inspect.diff(self.table, v1, v2)
        files = inspect.diff_files(self.table, v1, v2)
        newer = file_changes(self.table, min(v1, v2), max(v1, v2))[2]
        columns = newer.schema.names if newer.has_metadata else []  # the Rows view's key choices
        out = {"from": v1, "to": v2, "changes": to_ipc(changes), "columns": columns}
        source = RowSource(
            with_partition_values(
                files.select(
                    [
                        "change",
                        "path",
                        "partition",
                        "size",
                        "num_records",
                        "rows_delta",
                        "deleted_before",
                        "deleted_after",
                        "modification_time",
                    ]
                ),
            ),  # partition columns read from the keys: the two versions may be partitioned differently
            search_columns=("path", "partition"),
            default_sort=(("change", False), ("path", False)),
            code=f"dx.open_table({self.table.uri!r}).inspect.diff_files({v1}, {v2})",
            name=f"diff_files_v{v1}_v{v2}",
        )
        return out, source

    def diff_rows(
        self, v1: int, v2: int, key: list[str] | None = None, progress: Callable[[float, str], None] | None = None
    ) -> tuple[dict[str, Any], RowSource]:
        """`inspect.diff_rows` of v1 -> v2 (keyed by `key` when given): what it read, the count
        of each change, and the rows (filtered on the key columns, or on every scalar column
        without a key). `progress` follows the read; an exception it raises stops it."""
        result = inspect.diff_rows(self.table, v1, v2, key=key or None, progress=progress)
        read = read_summary(result)
        counts = {str(c["values"]): int(c["counts"]) for c in pc.value_counts(result.column("_change")).to_pylist()}
        if key:
            search = tuple(key)
        else:
            search = tuple(
                f.name
                for f in result.schema
                if not f.name.startswith("_") and not pa.types.is_nested(f.type) and not pa.types.is_binary(f.type)
            )
        keyword = f", key={key[0]!r}" if key and len(key) == 1 else f", key={key!r}" if key else ""
        source = RowSource(
            result,
            search_columns=search,
            code=f"dx.open_table({self.table.uri!r}).inspect.diff_rows({v1}, {v2}{keyword})",
            name=f"diff_rows_v{v1}_v{v2}",
        )
        out = {
            "from": v1,
            "to": v2,
            "key": list(key or []),
            "files_read": read.get("files_read"),
            "bytes_read": read.get("bytes_read"),
            "engine": read.get("engine"),
            "counts": counts,
            "total": result.num_rows,
        }
        return out, source

    # -- log health ------------------------------------------------------------------------
    def health(self, snap: Snapshot | None = None) -> dict[str, Any]:
        """`inspect.log_health` and the log size per version (`viz.log_health_spec`)."""

        snap = snap or self.snap
        ready = self._take_prepared((snap.version, "health"))
        if ready is not None:
            return ready  # type: ignore[no-any-return]
        engine = self.engine(snap)
        if engine["name"] == "spark":  # the log's own files, and counts of one streaming pass
            engine = {"name": "streaming", "reason": "log health is counted in the kernel, in one pass over the log"}
        metrics = inspect.log_health(snap, streaming=engine["name"] == "streaming")
        counts = {
            s: int(pc.sum(pc.equal(metrics.column("status"), s).cast(pa.int64())).as_py() or 0)
            for s in ("ok", "info", "warn", "error")
        }
        return {
            "version": snap.version,
            "engine": engine,
            "metrics": to_ipc(metrics),
            "status_counts": counts,
            "chart": viz.log_health_spec(inspect.log_files(snap)),
        }

    def advice_check(self, version: int) -> dict[str, Any]:
        """What `inspect.advise(check=True)` says at `version` (the newest OPTIMIZE / REORG up to
        it: the prediction made before it against what it measures), when `version` is that
        commit; else why there is nothing to check."""
        try:
            rows = check_advice(self.table, version=version)
        except DeltaExploreError as exc:
            return {"version": version, "rows": [], "note": str(exc)}
        if rows.num_rows == 0 or rows.column("version_after")[0].as_py() != version:
            return {"version": version, "rows": [], "note": f"version {version} is no OPTIMIZE or REORG: nothing to check"}
        out = rows.to_pylist()
        for row in out:
            for k, v in row.items():
                if isinstance(v, float) and not math.isfinite(v):
                    row[k] = None
        return {"version": version, "rows": out}

    def advice(self) -> tuple[int, list[dict[str, Any]]]:
        """`inspect.advise` of the latest version as JSON-safe cards (NaN as null, parameters
        parsed): what the Maintenance tab lists, each runnable through its `operation`; and
        that version."""
        latest = self.snapshot(self.table.latest_version())
        cards = []
        for row in inspect.advise(latest).to_pylist():
            for k, v in row.items():
                if isinstance(v, float) and not math.isfinite(v):
                    row[k] = None
            row["parameters"] = json.loads(row["parameters"]) if row["parameters"] else {}
            cards.append(row)
        return latest.version, cards
