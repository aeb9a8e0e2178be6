"""`Explorer`: the anywidget that shows one Delta table through time.

State lives in synced traitlets. Small summaries travel as JSON dicts; every table of rows
(history, partitions, a page of files, layout ranges, DVs, diff) travels as an Arrow IPC stream
in a binary buffer (`*_ipc` traits). Tabs are computed when first shown, per version, so the
first render of a million-file table costs one snapshot and one aggregate.

Browser -> Python: trait changes (`version`, `tab`, `files_query`, `layout_column`,
`diff_from`/`diff_to`) and custom messages ``{"type": "preview"|"run"|"refresh", "op": ...}``.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import anywidget
import traitlets as t

from deltaexplore.errors import DeltaExploreError, InvalidArgumentError
from deltaexplore.widgets import maintenance
from deltaexplore.widgets.arrow_ipc import to_ipc
from deltaexplore.widgets.explorer_data import ExplorerData

_log = logging.getLogger(__name__)

__all__ = ["TABS", "Explorer"]

_STATIC = Path(__file__).parent / "static"
TABS = ("overview", "history", "files", "layout", "dv", "diff", "health", "maintenance")


def _esm() -> str:
    # one module: the Arrow reader first, then the view (anywidget loads a single ES module)
    return (_STATIC / "arrow_lite.js").read_text() + "\n" + (_STATIC / "explorer.js").read_text()


class Explorer(anywidget.AnyWidget):
    """Explore a Delta table: version slider, history, files, layout, DVs, diff, log health, maintenance.

    Args:
        table: a `Table` (or anything `open_table` accepts, via `deltaexplore.explore`).
        version: the version to open at (latest when None).
        page_size: rows per page of the file list.
        history_limit: newest commits listed at first in the history tab ("older commits" doubles it).
    """

    _esm = _esm()
    _css = (_STATIC / "explorer.css").read_text()

    uri = t.Unicode("").tag(sync=True)
    version = t.Int(0).tag(sync=True)
    min_version = t.Int(0).tag(sync=True)
    max_version = t.Int(0).tag(sync=True)
    tab = t.Unicode("overview").tag(sync=True)
    busy = t.Unicode("").tag(sync=True)
    error = t.Unicode("").tag(sync=True)

    overview = t.Dict().tag(sync=True)
    history_ipc = t.Bytes(b"").tag(sync=True)
    history_more = t.Bool(False).tag(sync=True)
    partitions_summary = t.Dict().tag(sync=True)
    partitions_ipc = t.Bytes(b"").tag(sync=True)
    sizes_ipc = t.Bytes(b"").tag(sync=True)
    files_query = t.Dict().tag(sync=True)
    files_total = t.Int(0).tag(sync=True)
    files_ipc = t.Bytes(b"").tag(sync=True)
    layout_columns = t.List(t.Unicode()).tag(sync=True)
    layout_column = t.Unicode("").tag(sync=True)
    layout_summary = t.Dict().tag(sync=True)
    layout_ipc = t.Bytes(b"").tag(sync=True)
    dv_summary = t.Dict().tag(sync=True)
    dv_ipc = t.Bytes(b"").tag(sync=True)
    diff_from = t.Int(-1).tag(sync=True)
    diff_to = t.Int(-1).tag(sync=True)
    diff_summary = t.Dict().tag(sync=True)
    diff_changes_ipc = t.Bytes(b"").tag(sync=True)
    diff_ipc = t.Bytes(b"").tag(sync=True)
    health_ipc = t.Bytes(b"").tag(sync=True)
    maintenance = t.Dict().tag(sync=True)

    def __init__(
        self,
        table: Any,
        version: int | None = None,
        *,
        page_size: int = 200,
        history_limit: int = 100,
        tab: str = "overview",
        **kwargs: Any,
    ) -> None:
        started = time.perf_counter()
        if tab not in TABS:
            raise InvalidArgumentError(f"tab must be one of {', '.join(TABS)}, got {tab!r}")
        self.data = ExplorerData(table, version)
        self.history_limit = history_limit
        self._loaded: set[str] = set()
        self._choosing_layout_column = False
        lo, hi = self.data.version_range()
        super().__init__(
            uri=table.uri,
            version=self.data.version,
            min_version=lo,
            max_version=hi,
            files_query={"offset": 0, "limit": page_size, "sort": "size", "descending": True, "search": ""},
            diff_from=max(lo, self.data.version - 1),
            diff_to=self.data.version,
            maintenance={"operations": [maintenance.describe(op) for op in maintenance.OPERATIONS], "selected": None},
            **kwargs,
        )
        self.on_msg(self._on_custom_msg)
        self._load("overview")
        if tab != "overview":
            self.tab = tab
        #: seconds the constructor took (the benchmark reads it)
        self.first_render_seconds = time.perf_counter() - started

    def __repr__(self) -> str:
        return f"Explorer({self.uri!r}, version={self.version}, tab={self.tab!r})"

    # -- loading ---------------------------------------------------------------------------
    def _guard(self, what: str, fn: Any) -> None:
        self.busy = f"loading {what}…"
        try:
            fn()
            self.error = ""
        except DeltaExploreError as exc:
            self.error = f"{what}: {exc}"
        except Exception as exc:  # noqa: BLE001 - a bug must show in the widget, not vanish into a log
            _log.exception("deltaexplore explorer: loading %s failed", what)
            self.error = f"{what}: unexpected {type(exc).__name__}: {exc} (a deltaexplore bug: please report it)"
        finally:
            self.busy = ""

    def _load(self, tab: str, *, force: bool = False) -> None:
        if tab in self._loaded and not force:
            return
        loader = getattr(self, f"_load_{tab}")
        self._guard(tab, loader)
        self._loaded.add(tab)

    def _load_overview(self) -> None:
        self.overview = self.data.overview()

    def _load_history(self) -> None:
        # newest first, `history_limit` at a time: older commits (before a checkpoint) are the costly ones
        h = self.data.history(self.history_limit)
        with self.hold_sync():
            self.history_more = h.num_rows >= self.history_limit
            self.history_ipc = to_ipc(h)

    def _load_files(self) -> None:
        summary, parts = self.data.partitions()
        with self.hold_sync():
            self.partitions_summary = summary
            self.partitions_ipc = to_ipc(parts)
            self.sizes_ipc = to_ipc(self.data.size_histogram())
            self._load_files_page()

    def _load_files_page(self) -> None:
        q = self.files_query
        total, page = self.data.files_page(
            int(q.get("offset", 0)),
            int(q.get("limit", 200)),
            sort=str(q.get("sort", "size")),
            descending=bool(q.get("descending", True)),
            search=str(q.get("search", "")),
        )
        with self.hold_sync():
            self.files_total = total
            self.files_ipc = to_ipc(page)

    def _load_layout(self) -> None:
        self.layout_columns = self.data.stats_columns()
        # the tab opens on a column (clustering column, else the first with stats), not empty
        column = self.layout_column or self.data.default_layout_column()
        if not column:
            return
        summary, ranges = self.data.layout(column)
        with self.hold_sync():
            self.layout_summary = summary
            self.layout_ipc = to_ipc(ranges)
            if column != self.layout_column:
                self._choosing_layout_column = True  # shown in the picker, already loaded
                try:
                    self.layout_column = column
                finally:
                    self._choosing_layout_column = False

    def _load_dv(self) -> None:
        summary, rows = self.data.deletion_vectors()
        with self.hold_sync():
            self.dv_summary = summary
            self.dv_ipc = to_ipc(rows)

    def _load_diff(self) -> None:
        if self.diff_from < 0 or self.diff_to < 0:
            return
        changes, files = self.data.diff(self.diff_from, self.diff_to)
        with self.hold_sync():
            self.diff_summary = {"from_version": self.diff_from, "to_version": self.diff_to, "files_shown": files.num_rows}
            self.diff_changes_ipc = to_ipc(changes)
            self.diff_ipc = to_ipc(files)

    def _load_health(self) -> None:
        self.health_ipc = to_ipc(self.data.log_health())

    def _load_maintenance(self) -> None:
        self.maintenance = {**self.maintenance, "operations": [maintenance.describe(op) for op in maintenance.OPERATIONS]}

    # -- reactions to the browser (or to Python code setting traits) -----------------------
    @t.observe("tab")
    def _tab_changed(self, change: dict[str, Any]) -> None:
        if change["new"] not in TABS:
            self.error = f"unknown tab {change['new']!r}: expected one of {', '.join(TABS)}"
            return
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
            self.data.set_version(change["new"])
            self._loaded = {"diff"} if "diff" in self._loaded else set()
            self._load_overview()
            self._loaded.add("overview")
            if self.tab != "overview":
                self._load(self.tab, force=True)
            self.files_query = {**self.files_query, "offset": 0}

        self._guard(f"version {change['new']}", move)

    @t.observe("files_query")
    def _files_query_changed(self, change: dict[str, Any]) -> None:
        if "files" in self._loaded:
            self._guard("files", self._load_files_page)

    @t.observe("layout_column")
    def _layout_column_changed(self, change: dict[str, Any]) -> None:
        if self._choosing_layout_column:
            return
        self._guard("layout", self._load_layout)
        self._loaded.add("layout")

    @t.observe("diff_from", "diff_to")
    def _diff_changed(self, change: dict[str, Any]) -> None:
        if self.tab == "diff" or "diff" in self._loaded:
            self._guard("diff", self._load_diff)
            self._loaded.add("diff")

    def _on_custom_msg(self, _widget: Any, content: dict[str, Any], buffers: list[bytes]) -> None:
        kind = content.get("type")
        if kind == "refresh":
            self.refresh()
        elif kind == "more_history":
            self.history_limit *= 2
            self._load("history", force=True)
        elif kind == "preview":
            self.preview(str(content.get("op")), **content.get("params", {}))
        elif kind == "run":
            self.run(str(content.get("op")), **content.get("params", {}))

    # -- Python API ------------------------------------------------------------------------
    def refresh(self) -> None:
        """Re-list the log; when new versions appeared, move to the newest."""

        def reread() -> None:
            self.data.listing = self.data.table.listing(refresh=True)
            lo, hi = self.data.version_range()
            with self.hold_sync():
                self.min_version, self.max_version = lo, hi
                if self.version != hi:
                    self.version = hi

        self._guard("refresh", reread)

    def preview(self, op: str, **params: Any) -> dict[str, Any]:
        """Preview a maintenance operation (shown in the maintenance tab, and returned)."""
        result: dict[str, Any] = {}

        def do() -> None:
            result.update(maintenance.preview(op, self.data, **params))
            self.maintenance = {**self.maintenance, "selected": op, "preview": result, "result": None, "progress": 0}

        self._guard(f"preview {op}", do)
        return result

    def run(self, op: str, **params: Any) -> dict[str, Any]:
        """Run a maintenance operation with a progress bar; the explorer then shows the new version."""
        outcome: dict[str, Any] = {}

        def progress(fraction: float, message: str) -> None:
            self.maintenance = {**self.maintenance, "progress": max(0.0, min(1.0, float(fraction))), "message": message}

        def do() -> None:
            self.maintenance = {**self.maintenance, "selected": op, "running": True, "result": None}
            try:
                outcome.update(maintenance.run(op, self.data.table, progress, **params))
            finally:
                self.maintenance = {**self.maintenance, "running": False}
            self.refresh()
            self.maintenance = {
                **self.maintenance,
                "result": f"{maintenance.OPERATIONS[op].label} done with {outcome['backend']}: "
                f"version {outcome['version_before']} -> {outcome['version_after']}",
            }

        self._guard(f"run {op}", do)
        return outcome
