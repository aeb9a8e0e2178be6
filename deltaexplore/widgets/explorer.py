"""`Explorer`: the anywidget that shows one Delta table through time.

State lives in synced traitlets: the version and tab, and one dict per tab (`*_data`) holding
Arrow IPC buffers (tables), Vega-Lite specs (the `deltaexplore.viz` charts) and descriptions of
row sources. Tabs are computed when first shown, per version, or sent before (`prefetch`) once the
background preparation of a big table has them; the first view of a version is the log's
metadata alone (no file action replayed): the browser asks for the file counts, then the row
counts, once it has drawn it. Grids whose rows stay in the
kernel (files, layout, diff files, ...) ask for windows of rows with custom messages:

    browser -> kernel  {"type": "rows", "req", "source", "start", "end", "sort", "filter"}
    kernel -> browser  {"type": "rows", "req", "total"} + [Arrow IPC stream]
    browser -> kernel  {"type": "export", "req", "source", "format": "csv"|"arrow", "sort", "filter"}
    kernel -> browser  {"type": "export", "req", "filename", "mime"} + [file bytes]
    browser -> kernel  {"type": "commit", "req", "version"} -> {"type": "commit", "req", "detail"}
    browser -> kernel  {"type": "complete_overview", "version"}  (file and row counts, once the first view is drawn;
                       counted on `TableView.jobs`' thread: a tab clicked meanwhile is answered at once)
    browser -> kernel  {"type": "prefetch", "req", "version", "tabs"}  (send the tabs the background prepared)
    kernel -> browser  {"type": "prefetch", "req", "version", "states": {tab: "sent"|"pending"|"none"|"stale"}}
    browser -> kernel  {"type": "preview"|"run", "op", "params"}, {"type": "advise"} and {"type": "refresh"}
    browser -> kernel  {"type": "diff_rows", "from", "to", "key"} and {"type": "diff_rows_cancel"}

The Diff tab's Rows view (`diff_rows_data`) runs `inspect.diff_rows` as a job on its own thread
(`TableView.jobs`): the kernel keeps answering while it reads, its progress (bytes read) is in
`diff_rows_data`, and a cancel, or a newer request, stops it between two pieces of files.

Follow (`follow` trait, the header's toggle): a `core.follow.Follower` polls the log on its own
thread; each new version extends the slider (and moves to it when the latest was shown), reloads
an open History tab and adds its commit summary to `follow_state`.

A reply carrying "error" says why a request failed (a bad sort, a version that vanished).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from concurrent.futures import CancelledError, Future
from typing import Any

import anywidget
import traitlets as t

from deltaexplore.core.follow import Follower, FollowUpdate
from deltaexplore.errors import DeltaExploreError, InvalidArgumentError
from deltaexplore.widgets import fallback, maintenance
from deltaexplore.widgets.arrow_ipc import to_ipc
from deltaexplore.widgets.frontend import bundle
from deltaexplore.widgets.sources import RowSource
from deltaexplore.widgets.views import TableView, diff_key

_log = logging.getLogger(__name__)

__all__ = ["TABS", "Explorer"]

TABS = ("overview", "history", "files", "layout", "dv", "diff", "health", "maintenance")
#: tabs whose content depends on the shown version
_PER_VERSION = ("overview", "files", "layout", "dv", "health")
#: tabs whose data is sent before they are opened once the background preparation has it
PREFETCHED = ("history", "files", "health", "layout", "diff")
#: row sources kept (older ones are dropped; a grid asking for one then reloads its tab)
_SOURCES_KEPT = 16
#: commit summaries `follow_state` keeps (the newest)
FOLLOW_KEPT = 20


class Explorer(anywidget.AnyWidget):
    """Explore a Delta table: version slider, history, files, layout, DVs, diff, log health, maintenance.

    Args:
        table: a `Table` (or anything `open_table` accepts, via `deltaexplore.explore`).
        version: the version to open at (latest when None).
        tab: the tab shown first.
        page_size: rows a grid asks the kernel for at a time as it scrolls.
        follow: follow the table as it changes (the Follow toggle; `core.follow.Follower`).
        follow_interval: seconds between polls while commits keep coming (backs off to 30 s).
        streaming_files: past this many files (as the log says before a replay) the overview,
            files, DV and health tabs are counted by one streaming pass over the log, not a
            replay of the state (`TableView`); each tab's data says which engine and why.
        spark, spark_files: a Spark session (classic or Connect) that computes the overview, files
            and DV tabs past `spark_files` files (default: estimated from the free memory, see
            `TableView`).

    Raises:
        FrontendNotBuiltError: the front end bundle is missing (a source checkout never built).
    """

    uri = t.Unicode("").tag(sync=True)
    title = t.Unicode("").tag(sync=True)
    version = t.Int(0).tag(sync=True)
    min_version = t.Int(0).tag(sync=True)
    max_version = t.Int(0).tag(sync=True)
    tab = t.Unicode("overview").tag(sync=True)
    page_size = t.Int(200).tag(sync=True)
    busy = t.Unicode("").tag(sync=True)
    error = t.Unicode("").tag(sync=True)

    overview_data = t.Dict().tag(sync=True)
    history_data = t.Dict().tag(sync=True)
    files_data = t.Dict().tag(sync=True)
    layout_data = t.Dict().tag(sync=True)
    dv_data = t.Dict().tag(sync=True)
    diff_data = t.Dict().tag(sync=True)
    #: the Diff tab's Rows view: {"from", "to", "key", "state": loading|ready|error|cancelled,
    #: "progress", "message", "files_read", "bytes_read", "counts", "rows" (a row source)}
    diff_rows_data = t.Dict().tag(sync=True)
    health_data = t.Dict().tag(sync=True)
    maintenance = t.Dict().tag(sync=True)

    layout_column = t.Unicode("").tag(sync=True)
    diff_from = t.Int(-1).tag(sync=True)
    diff_to = t.Int(-1).tag(sync=True)

    follow = t.Bool(False).tag(sync=True)
    #: {"running", "error", "commits": [summaries of the versions seen, newest last]}
    follow_state = t.Dict().tag(sync=True)

    def __init__(
        self,
        table: Any,
        version: int | None = None,
        *,
        tab: str = "overview",
        page_size: int = 200,
        follow: bool = False,
        follow_interval: float = 2.0,
        streaming_files: int | None = None,
        spark: Any = None,
        spark_files: int | None = None,
        **kwargs: Any,
    ) -> None:
        started = time.perf_counter()
        if tab not in TABS:
            raise InvalidArgumentError(f"tab must be one of {', '.join(TABS)}, got {tab!r}")
        front = bundle()
        cls = type(self)
        cls._esm, cls._css = front.esm, front.css  # anywidget syncs these class attributes
        self.view = TableView(table, version, streaming_files=streaming_files, spark=spark, spark_files=spark_files)
        self.view.spark_progress = self._spark_progress
        self._loading = ""
        self._loaded: set[str] = set()
        self._sources: OrderedDict[str, RowSource] = OrderedDict()
        self._choosing = False
        self._rows_job = 0
        #: the overview's later stages being counted (`complete_overview`), None before
        self._counting: Future[Any] | None = None
        self._follower: Follower | None = None
        self._follow_interval = follow_interval
        self._follow_lock = threading.Lock()
        lo, hi = self.view.version_range()
        super().__init__(
            uri=table.uri,
            version=self.view.version,
            min_version=lo,
            max_version=hi,
            diff_from=max(lo, self.view.version - 1),
            diff_to=self.view.version,
            page_size=max(20, int(page_size)),
            maintenance={"operations": [maintenance.describe(op) for op in maintenance.OPERATIONS], "selected": None},
            **kwargs,
        )
        # versioned: anywidget names the page's <style> after this id, so an old saved state's
        # CSS (another build) lands in its own element and never replaces this build's
        self._anywidget_id = f"deltaexplore.Explorer@{front.build_id}"
        self.on_msg(self._on_custom_msg)
        self._load("overview")
        if tab != "overview":
            self.tab = tab
        if follow:
            self.follow = True
        #: seconds the constructor took (the benchmark reads it)
        self.first_render_seconds = time.perf_counter() - started

    def __repr__(self) -> str:
        return f"Explorer({self.uri!r}, version={self.version}, tab={self.tab!r})"

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """The widget view plus a static summary (`fallback`): what a saved notebook shows once
        the kernel that held the model is gone (nbviewer and GitHub: `text/html`; JupyterLab
        with the deltaexplore extension: the summary until the live explorer is there)."""
        bundle = super()._repr_mimebundle_(**kwargs)
        if bundle is None:
            return None
        data, metadata = bundle
        try:
            s = fallback.summary(self)
        except DeltaExploreError:
            return data, metadata
        view = data.get("application/vnd.jupyter.widget-view+json")
        data = {**data, "text/html": fallback.summary_html(s), fallback.EXPLORER_MIME: {**s, "view": view}}
        return data, metadata

    # -- loading ---------------------------------------------------------------------------
    def _guard(self, what: str, fn: Any, *, busy: bool = True) -> bool:
        """Run `fn`; a library error becomes the `error` trait (shown in the widget). True: it
        worked. `busy`: the explorer says it is loading `what` meanwhile."""
        if busy:
            self._loading = self.busy = f"loading {what}…"
        try:
            fn()
            self.error = ""
            return True
        except DeltaExploreError as exc:
            self.error = f"{what}: {exc}"
        except Exception as exc:  # noqa: BLE001 - a bug must show in the widget, not vanish into a log
            _log.exception("deltaexplore explorer: loading %s failed", what)
            self.error = f"{what}: unexpected {type(exc).__name__}: {exc} (a deltaexplore bug: please report it)"
        finally:
            if busy:
                self.busy = ""
        return False

    def _spark_progress(self, fraction: float, message: str) -> None:
        """The status line while a tab's Spark jobs run: what loads, how far, the job's words."""
        if self.busy:
            self.busy = f"{self._loading} on Spark {fraction:.0%}: {message}"

    def _load(self, tab: str, *, force: bool = False) -> None:
        if tab in self._loaded and not force:
            return
        if self._guard(tab, getattr(self, f"_load_{tab}")):
            self._loaded.add(tab)

    def _register(self, key: str, source: RowSource) -> dict[str, Any]:
        self._sources[key] = source
        self._sources.move_to_end(key)
        while len(self._sources) > _SOURCES_KEPT:
            self._sources.popitem(last=False)
        return {"id": key, **source.describe()}

    def _load_overview(self) -> None:
        data = self.view.overview()
        with self.hold_sync():
            self.title = self._title()
            self._show_overview(data)

    def _show_overview(self, data: dict[str, Any]) -> None:
        """Set the overview; a complete one starts first the background work it allows
        (`TableView.prepare`), a first one the history's (`prepare_history`), so that a
        `prefetch` the browser sends on seeing it finds the jobs (comm messages may be handled
        on another thread than the one that sets this: ipykernel's subshells)."""
        if data.get("version") == self.view.version:
            if data.get("complete"):
                self.view.prepare()
            else:
                self.view.prepare_history()  # needs no counts: ready before they are
        self.overview_data = data

    def _complete_overview(self, version: Any = None) -> None:
        """The overview's later stages (the file actions, then every file's statistics), asked
        for by the browser once it drew the first; with the last, the next tabs and the previous
        version are prepared in the background (`_show_overview`). Runs on `TableView.jobs`'
        thread (seconds at 1M files: a streaming pass), never on the kernel's message thread: a
        tab clicked meanwhile is answered at once (History waited 2-12 s behind the counts).
        The overview's cards say "counting" meanwhile; nothing else is marked busy. Counts of a
        version the user has left are not shown."""
        if version is not None and version != self.view.version:
            return
        for stage in (1, 2):
            data = self.overview_data or {}
            if data.get("version") != self.view.version or data.get("stage", 0) >= stage:
                continue

            def load(stage: int = stage) -> None:
                counted = self.view.overview(stage)
                if counted.get("version") == self.view.version:
                    self._show_overview(counted)

            if not self._guard("file counts" if stage == 1 else "row counts", load, busy=False):
                return

    def _title(self) -> str:
        snap = self.view.snap
        name = snap.metadata.name if snap.has_metadata else None
        return name or self.uri.rstrip("/").rsplit("/", 1)[-1] or self.uri

    def _load_history(self) -> None:
        """The commits and their timeline chart."""
        data, source = self.view.history()
        data["source"] = self._register(f"history@{data['latest']}", source)
        self.history_data = data

    def _prepared_key(self, tab: str) -> tuple[Any, str] | None:
        """The key of the background job (`TableView.prepare`) whose result `tab` loads, None
        when nothing prepares it: a tab `prepare` leaves out, no column to lay out, or a layout
        column the user chose (it wins over the default one prepared)."""
        view = self.view
        if tab == "history":
            return (view.listing.latest_version, "history")
        if tab in ("files", "health"):
            return (view.version, tab)
        if tab == "diff":  # the pair shown, prepared when it is the default one
            return (view.version, diff_key(self.diff_from, self.diff_to))
        if tab == "layout":
            column = view.default_layout_column()
            if not column or (self.layout_column and self.layout_column != column):
                return None
            return (view.version, f"layout:{column}")
        return None

    def _prefetch(self, tab: str) -> str:
        """Send `tab`'s data before the tab is opened, once the background preparation has it;
        never computed here: "pending" while it is being prepared, "none" when nothing prepares
        it (the tab computes it when opened), "sent" once sent. What is sent is what opening
        the tab loads (`_load_<tab>`, which takes the prepared result), and it counts as loaded."""
        if tab in self._loaded:
            return "sent"
        key = self._prepared_key(tab)
        if key is None:
            return "none"
        state = self.view.prepared_state(key)
        if state != "done":
            return state
        try:
            getattr(self, f"_load_{tab}")()
        except Exception:  # noqa: BLE001 - the tab computes it when opened, where an error reaches the user
            return "none"
        self._loaded.add(tab)
        return "sent"

    def _answer_prefetch(self, content: dict[str, Any]) -> None:
        """Reply to `{"type": "prefetch", "req", "version", "tabs"}` with each tab's state
        (`_prefetch`); asked for another version than the one shown (the user moved meanwhile),
        every tab is "stale" and nothing is sent."""
        asked = content.get("tabs")
        tabs = [str(x) for x in asked] if isinstance(asked, list) else [str(content.get("tab"))]
        version = content.get("version")
        states: dict[str, str] = {}
        for tab in tabs:
            if version is not None and version != self.view.version:
                states[tab] = "stale"
            else:
                states[tab] = self._prefetch(tab) if tab in PREFETCHED else "none"
        self.send({"type": "prefetch", "req": content.get("req"), "version": self.view.version, "states": states})

    def _load_files(self) -> None:
        data, files, parts = self.view.files()
        v = self.view.version
        data["files"] = self._register(f"files@{v}", files)
        data["partitions"] = self._register(f"partitions@{v}", parts)
        self.files_data = data

    def _load_layout(self) -> None:
        column = self.layout_column or self.view.default_layout_column()
        if not column:
            self.layout_data = {"version": self.view.version, "columns": [], "column": ""}
            return
        data, source = self.view.layout(column)
        data["columns"] = self.view.stats_columns()
        data["files"] = self._register(f"layout@{self.view.version}:{column}", source)
        with self.hold_sync():
            self.layout_data = data
            if column != self.layout_column:
                self._choosing = True  # shown in the picker, already loaded
                try:
                    self.layout_column = column
                finally:
                    self._choosing = False

    def _load_dv(self) -> None:
        data, source = self.view.deletion_vectors()
        data["files"] = self._register(f"dv@{self.view.version}", source)
        self.dv_data = data

    def _load_diff(self) -> None:
        a, b = self.diff_from, self.diff_to
        if a < 0 or b < 0:
            return
        # stale results go at once: the browser shows the pair being computed, not the old one
        if self.view.prepared_state((self.view.version, diff_key(a, b))) != "done":
            self.diff_data = {"from": a, "to": b, "state": "loading"}
        try:
            data, source = self.view.diff(a, b)
        except DeltaExploreError as exc:
            self.diff_data = {"from": a, "to": b, "state": "error", "error": str(exc)}
            raise
        data["state"] = "ready"
        data["files"] = self._register(f"diff@{a}-{b}", source)
        self.diff_data = data

    def _load_health(self) -> None:
        self.health_data = self.view.health()

    def _load_maintenance(self) -> None:
        self.maintenance = {**self.maintenance, "operations": [maintenance.describe(op) for op in maintenance.OPERATIONS]}

    # -- reactions to the browser (or to Python code setting traits) -----------------------
    # The user first: while one of these runs, the view's background work waits (`TableView.user`).
    @t.observe("tab")
    def _tab_changed(self, change: dict[str, Any]) -> None:
        if change["new"] not in TABS:
            self.error = f"unknown tab {change['new']!r}: expected one of {', '.join(TABS)}"
            return
        with self.view.user():
            self._load(change["new"])

    @t.validate("version")
    def _valid_version(self, proposal: dict[str, Any]) -> int:
        v = int(proposal["value"])
        if self.max_version and not (self.min_version <= v <= self.max_version):
            raise t.TraitError(f"version {v} is outside the table's versions {self.min_version}..{self.max_version}")
        return v

    @t.observe("version")
    def _version_changed(self, change: dict[str, Any]) -> None:
        def move() -> None:
            self.view.set_version(change["new"])
            self._loaded -= set(_PER_VERSION)
            self._load_overview()
            self._loaded.add("overview")
            if self.tab in _PER_VERSION and self.tab != "overview":
                self._load(self.tab)

        with self.view.user():
            self._guard(f"version {change['new']}", move)

    @t.observe("layout_column")
    def _layout_column_changed(self, change: dict[str, Any]) -> None:
        if not self._choosing:
            with self.view.user():
                self._load("layout", force=True)

    @t.observe("diff_from", "diff_to")
    def _diff_changed(self, change: dict[str, Any]) -> None:
        rows = self.diff_rows_data
        if rows.get("state") == "loading" and (rows.get("from"), rows.get("to")) != (self.diff_from, self.diff_to):
            self.cancel_diff_rows()  # a row diff of the pair left is no longer wanted
        if self.tab == "diff" or "diff" in self._loaded:
            with self.view.user():
                self._load("diff", force=True)

    def _on_custom_msg(self, _widget: Any, content: dict[str, Any], buffers: list[bytes]) -> None:
        if content.get("type") == "prefetch":  # asks for background results only: never waits for them
            self._answer_prefetch(content)
            return
        with self.view.user():
            self._on_user_msg(content)

    def _on_user_msg(self, content: dict[str, Any]) -> None:
        kind = content.get("type")
        if kind in ("rows", "export", "commit"):
            self._answer(kind, content)
        elif kind == "timeline":
            threading.Thread(target=self._answer_timeline, args=(content,), name="deltaexplore-timeline", daemon=True).start()
        elif kind == "complete_overview":
            version = content.get("version")
            self._counting = self.view.jobs.submit(("overview", version), lambda: self._complete_overview(version))
        elif kind == "refresh":
            self.refresh()
        elif kind == "advise":
            self.advise()
        elif kind == "diff_rows":
            key = content.get("key")
            self.diff_rows(content.get("from"), content.get("to"), key=key if key else None)
        elif kind == "diff_rows_cancel":
            self.cancel_diff_rows()
        elif kind == "preview":
            self.preview(str(content.get("op")), advice=content.get("advice"), **(content.get("params") or {}))
        elif kind == "run":
            self.run(str(content.get("op")), **(content.get("params") or {}))

    def _answer(self, kind: str, content: dict[str, Any]) -> None:
        """Reply to a request of one view (`req` names it); a failure is a reply with `error`."""
        reply: dict[str, Any] = {"type": kind, "req": content.get("req")}
        buffers: list[bytes] = []
        try:
            if kind == "commit":
                reply["detail"] = self.view.commit_detail(int(content["version"]))
            else:
                source = self._sources.get(str(content.get("source")))
                if source is None:
                    raise InvalidArgumentError(f"the rows of {content.get('source')!r} are no longer loaded: reopen the tab")
                if kind == "rows":
                    total, rows = source.window(
                        int(content.get("start", 0)), int(content.get("end", 100)), content.get("sort"), content.get("filter")
                    )
                    reply["total"] = total
                    buffers = [to_ipc(rows)]
                else:
                    data, filename, mime = source.export(str(content.get("format")), content.get("sort"), content.get("filter"))
                    reply.update(filename=filename, mime=mime)
                    buffers = [data]
        except (DeltaExploreError, KeyError, ValueError, TypeError) as exc:
            reply["error"] = str(exc)
        except Exception as exc:  # noqa: BLE001 - a bug must reach the grid as a message
            _log.exception("deltaexplore explorer: answering %s failed", kind)
            reply["error"] = f"unexpected {type(exc).__name__}: {exc} (a deltaexplore bug: please report it)"
        self.send(reply, buffers)

    def _answer_timeline(self, content: dict[str, Any]) -> None:
        """The History tab's table through time (`TableView.health_timeline`), on its own thread:
        one replay of the whole log must not hold the kernel (the reply arrives when done)."""
        reply: dict[str, Any] = {"type": "timeline", "req": content.get("req")}
        try:
            reply.update(self.view.health_timeline(str(content.get("metric") or "files")))
        except DeltaExploreError as exc:
            reply["error"] = str(exc)
        except Exception as exc:  # noqa: BLE001 - a bug must reach the tab as a message
            _log.exception("deltaexplore explorer: the timeline failed")
            reply["error"] = f"unexpected {type(exc).__name__}: {exc} (a deltaexplore bug: please report it)"
        self.send(reply)

    # -- follow ----------------------------------------------------------------------------
    @t.observe("follow")
    def _follow_changed(self, change: dict[str, Any]) -> None:
        if change["new"]:
            self._guard("follow", self._start_following)
        else:
            self._stop_following()

    def _start_following(self) -> None:
        if self._follower is not None and self._follower.running:
            return
        self._follower = Follower(self.view.table, interval=self._follow_interval, on_change=self._followed)
        self._followed(None)  # versions that landed before following began
        self.follow_state = {**self.follow_state, "running": True, "error": ""}

    def _stop_following(self) -> None:
        follower, self._follower = self._follower, None
        if follower is not None:
            follower.stop()
        if self.follow:
            self.follow = False
        self.follow_state = {**self.follow_state, "running": False}

    def _followed(self, update: FollowUpdate | None) -> None:
        """New versions landed (on the follower's thread): extend the slider, move to the newest
        when the latest was shown, reload an open History tab, add the commits' summaries."""
        with self._follow_lock:
            was_latest = self.version == self.max_version
            self.view.refresh()
            lo, hi = self.view.version_range()
            self._loaded.discard("history")
            commits = list(self.follow_state.get("commits") or [])
            if update is not None:
                for row in update.commits.to_pylist():
                    stamp = row["timestamp"]
                    row["timestamp"] = int(stamp.timestamp() * 1000) if stamp is not None else None
                    commits.append(row)
            with self.hold_sync():
                self.min_version, self.max_version = lo, hi
                self.follow_state = {
                    **self.follow_state,
                    "commits": commits[-FOLLOW_KEPT:],
                    "latest": hi,
                    "error": str(self._follower.error) if self._follower is not None and self._follower.error else "",
                }
            if was_latest and self.version != hi:
                self.version = hi
            if self.tab == "history":
                self._load("history")

    # -- Python API ------------------------------------------------------------------------
    def close(self) -> None:
        """Close the widget: stop following and the background work."""
        if self.__dict__.get("_follower") is not None:
            self._stop_following()
        view = self.__dict__.get("view")  # None when the constructor failed (closed on collection)
        if view is not None:
            view.background.close()
            view.jobs.close()
        super().close()

    def refresh(self) -> None:
        """Re-list the log; when new versions appeared, move to the newest."""

        def reread() -> None:
            self.view.refresh()
            lo, hi = self.view.version_range()
            self._loaded.discard("history")
            with self.hold_sync():
                self.min_version, self.max_version = lo, hi
                if self.version != hi:
                    self.version = hi
            if self.tab == "history":
                self._load("history")

        self._guard("refresh", reread)

    def advise(self) -> list[dict[str, Any]]:
        """The maintenance advice of the latest version (`inspect.advise`), listed in the
        Maintenance tab; each card previews and runs through `preview` / `run`."""
        cards: list[dict[str, Any]] = []

        def do() -> None:
            version, advice = self.view.advice()
            cards.extend(advice)
            self.maintenance = {**self.maintenance, "advice": cards, "advice_version": version}

        self._guard("advise", do)
        return cards

    def diff_rows(self, v1: Any = None, v2: Any = None, *, key: str | list[str] | None = None) -> Future[Any]:
        """Start the net row diff of `v1` -> `v2` (default: the Diff tab's pair) in the Rows
        view; returns the job's future (its result: `diff_rows_data`). A running row diff is
        cancelled first: the newest request wins."""
        a = self.diff_from if v1 is None else v1
        b = self.diff_to if v2 is None else v2
        keys = [key] if isinstance(key, str) else list(key or [])
        base: dict[str, Any] = {"from": a, "to": b, "key": keys}
        bad = [x for x in (a, b) if isinstance(x, bool) or not isinstance(x, int)]
        if bad or not all(isinstance(k, str) and k for k in keys):
            why = f"a row diff needs two versions and column names, got {a!r}, {b!r}, key {key!r}"
            self.diff_rows_data = {**base, "state": "error", "error": why}
            failed: Future[Any] = Future()
            failed.set_exception(InvalidArgumentError(why))
            return failed
        self.cancel_diff_rows(state=None)
        self._rows_job += 1
        token = self._rows_job
        jobs = self.view.jobs
        shown = {"at": 0.0}

        def progress(fraction: float, message: str) -> None:
            jobs.pause()  # raises once cancelled: the read stops between two pieces
            now = time.monotonic()
            if fraction >= 1.0 or now - shown["at"] >= 0.2:
                shown["at"] = now
                self.diff_rows_data = {**base, "state": "loading", "progress": fraction, "message": message}

        def job() -> dict[str, Any]:
            data, source = self.view.diff_rows(a, b, keys, progress)
            jobs.pause()
            data["rows"] = self._register(f"diff_rows@{a}-{b}:{','.join(keys)}", source)
            data["state"] = "ready"
            return data

        def finished(future: Future[Any]) -> None:
            if token != self._rows_job:
                return  # cancelled, or a newer request owns the view
            try:
                self.diff_rows_data = future.result()
            except CancelledError:
                self.diff_rows_data = {**base, "state": "cancelled"}
            except DeltaExploreError as exc:
                self.diff_rows_data = {**base, "state": "error", "error": str(exc)}
            except Exception as exc:  # noqa: BLE001 - a bug must show in the widget
                _log.exception("deltaexplore explorer: the row diff failed")
                self.diff_rows_data = {
                    **base,
                    "state": "error",
                    "error": f"unexpected {type(exc).__name__}: {exc} (a deltaexplore bug: please report it)",
                }

        self.diff_rows_data = {**base, "state": "loading", "progress": 0.0, "message": "planning: which files differ"}
        future = jobs.submit(("diff_rows", token), job)
        future.add_done_callback(finished)
        return future

    def cancel_diff_rows(self, *, state: str | None = "cancelled") -> None:
        """Stop a running row diff (between two pieces of files); the Rows view says so."""
        self._rows_job += 1  # the job's own ending no longer writes the view
        dropped = self.view.jobs.cancel(lambda key: not (isinstance(key, tuple) and key[0] == "diff_rows"))
        if dropped and state is not None:
            self.diff_rows_data = {**self.diff_rows_data, "state": state}

    def _restore_default(self, op: str, params: dict[str, Any]) -> dict[str, Any]:
        """RESTORE without a version restores the version the explorer shows."""
        if op == "restore" and params.get("version") is None:
            return {**params, "version": int(self.version)}
        return params

    def preview(self, op: str, *, advice: Any = None, **params: Any) -> dict[str, Any]:
        """Preview a maintenance operation (shown in the maintenance tab, and returned).
        `advice`: the rank of the advice card it comes from (its run is then checked against
        the card's prediction)."""
        result: dict[str, Any] = {}
        params = self._restore_default(op, params)

        def do() -> None:
            result.update(maintenance.preview(op, self.view, **params))
            self.maintenance = {
                **self.maintenance,
                "selected": op,
                "preview": result,
                "params": params,
                "advice_rank": advice if isinstance(advice, int) and not isinstance(advice, bool) else None,
                "result": None,
                "progress": 0,
            }

        self._guard(f"preview {op}", do)
        return result

    def run(self, op: str, **params: Any) -> dict[str, Any]:
        """Run a maintenance operation with a progress bar; the explorer then shows the new version."""
        outcome: dict[str, Any] = {}
        params = self._restore_default(op, params)

        def progress(fraction: float, message: str) -> None:
            self.maintenance = {**self.maintenance, "progress": max(0.0, min(1.0, float(fraction))), "message": message}

        def do() -> None:
            self.maintenance = {**self.maintenance, "selected": op, "running": True, "result": None}
            try:
                outcome.update(maintenance.run(op, self.view.table, progress, **params))
            finally:
                self.maintenance = {**self.maintenance, "running": False}
            self.refresh()
            self.maintenance = {
                **self.maintenance,
                "result": f"{maintenance.OPERATIONS[op].label} done with {outcome['backend']}: "
                f"version {outcome['version_before']} -> {outcome['version_after']}",
                "metrics": outcome.get("result"),
            }
            self._check_advice(outcome)

        self._guard(f"run {op}", do)
        return outcome

    def _check_advice(self, outcome: dict[str, Any]) -> None:
        """After an advice card's operation ran: its prediction next to what the new version
        measures (`inspect.check_advice`, as `advise(check=True)`), on the card."""
        m = self.maintenance
        rank = m.get("advice_rank")
        if rank is None or outcome["version_after"] == outcome["version_before"]:
            return
        check = self.view.advice_check(outcome["version_after"])
        cards = [{**c, "check": check} if c.get("rank") == rank else c for c in m.get("advice") or []]
        self.maintenance = {**m, "advice": cards, "advice_rank": None}
