"""`Follower`: a table followed as it changes (`dx.follow(uri)`, `%delta follow`, the explorer's Follow).

A background thread polls the log at a bounded interval: one existence check of the next
commit file (`_delta_log/<v+1>.json`: one HEAD request on an object store, never a listing of a
long log), or a listing for catalog-managed tables whose commits the catalog ratifies. Nothing
new: the interval doubles, up to `max_interval`; a new commit: the latest snapshot is moved to
it (`Snapshot.refresh`: only the new commits are read) and the interval starts again. Each new
version yields one summary row (`SUMMARY_SCHEMA`: operation, user, files, rows, bytes; from
`Table.history`), handed to `on_change` and kept for `commits()`. A storage error backs off
too and is kept in `error`; the poll goes on.

The thread never holds the caller: `follow` returns at once. It stops on `stop()`, on leaving a
`with` block, at interpreter exit (a daemon thread), and when the caller iterating over the
follower (`for commit in follower`) interrupts the kernel.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from deltaexplore.core.log.file_names import LOG_DIR
from deltaexplore.core.snapshot import Snapshot
from deltaexplore.core.table import Table, open_table
from deltaexplore.errors import DeltaExploreError, InvalidArgumentError

__all__ = ["SUMMARY_SCHEMA", "FollowUpdate", "Follower", "follow", "summaries"]

_log = logging.getLogger(__name__)

#: one row per new version
SUMMARY_SCHEMA = pa.schema(
    [
        ("version", pa.int64()),
        ("timestamp", pa.timestamp("ms", tz="UTC")),
        ("operation", pa.string()),
        ("user", pa.string()),
        ("files_added", pa.int64()),
        ("files_removed", pa.int64()),
        ("rows_added", pa.int64()),
        ("rows_removed", pa.int64()),
        ("bytes_added", pa.int64()),
        ("bytes_removed", pa.int64()),
    ]
)

#: the shortest poll interval accepted, in seconds (a tighter loop only loads the store)
MIN_INTERVAL = 0.05


@dataclass(frozen=True)
class FollowUpdate:
    """New versions seen by one poll: the latest snapshot and one summary row per new version."""

    snapshot: Snapshot
    commits: pa.Table


def summaries(table: Table, first: int, last: int) -> pa.Table:
    """`SUMMARY_SCHEMA` rows of versions `first..last` (the commits still in the log)."""
    history = table.history(start_version=first, end_version=last)
    user = history.column("user_name").to_pylist()
    fallback = history.column("user").to_pylist()
    columns: dict[str, Any] = {name: history.column(name) for name in SUMMARY_SCHEMA.names if name != "user"}
    columns["user"] = pa.array([u if u is not None else f for u, f in zip(user, fallback, strict=True)], pa.string())
    out = pa.table({name: columns[name] for name in SUMMARY_SCHEMA.names})
    return out.cast(SUMMARY_SCHEMA).sort_by("version")


class Follower:
    """Follow `table` from its latest version (see the module docstring).

    Args:
        table: the table.
        interval: seconds between polls while commits keep coming.
        max_interval: the longest wait between polls (the back-off's bound).
        on_change: called on the follower's thread with each `FollowUpdate`.
        start: start polling now.

    Raises:
        InvalidArgumentError: an interval that is not a positive number, or a bound below it.
    """

    def __init__(
        self,
        table: Table,
        *,
        interval: float = 1.0,
        max_interval: float = 30.0,
        on_change: Callable[[FollowUpdate], Any] | None = None,
        start: bool = True,
    ) -> None:
        for name, value in (("interval", interval), ("max_interval", max_interval)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= MIN_INTERVAL:
                raise InvalidArgumentError(f"{name} must be a number of seconds >= {MIN_INTERVAL}, got {value!r}")
        if max_interval < interval:
            raise InvalidArgumentError(f"max_interval ({max_interval}) must be at least interval ({interval})")
        self.table = table
        self.interval = float(interval)
        self.max_interval = float(max_interval)
        self.on_change = on_change
        self.snapshot: Snapshot = table.snapshot()
        #: the last poll's error (None once a poll worked again)
        self.error: DeltaExploreError | None = None
        #: polls made, and the wait before the next one (seconds)
        self.polls = 0
        self.delay = self.interval
        self._commits: list[pa.Table] = []
        self._updates: queue.Queue[FollowUpdate | None] = queue.Queue()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        if start:
            self.start()

    def __repr__(self) -> str:
        state = "following" if self.running else "stopped"
        return f"Follower({self.table.uri!r}, version={self.version}, {state})"

    @property
    def version(self) -> int:
        """The latest version seen."""
        return self.snapshot.version

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and not self._stop.is_set()

    def start(self) -> Follower:
        """Start polling (again, after `stop`)."""
        if self.running:
            return self
        self._stop = threading.Event()
        self._updates = queue.Queue()
        self.delay = self.interval
        self._thread = threading.Thread(target=self._run, name="deltaexplore-follow", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float | None = 5.0) -> None:
        """Stop polling; waits up to `timeout` seconds for a poll under way to end."""
        self._stop.set()
        self._updates.put(None)  # wakes an iterating caller
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def __enter__(self) -> Follower:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def commits(self) -> pa.Table:
        """One `SUMMARY_SCHEMA` row per version seen since following began."""
        with self._lock:
            parts = list(self._commits)
        return pa.concat_tables(parts) if parts else SUMMARY_SCHEMA.empty_table()

    def poll(self) -> FollowUpdate | None:
        """One poll now (the thread calls it): the update when new versions landed, else None."""
        self.polls += 1
        if not self._may_have_moved():
            return None
        newer = self.snapshot.refresh()
        if newer.version <= self.snapshot.version:
            return None
        first = self.snapshot.version + 1
        self.snapshot = newer
        update = FollowUpdate(newer, summaries(self.table, first, newer.version))
        with self._lock:
            self._commits.append(update.commits)
        return update

    def _may_have_moved(self) -> bool:
        """Whether the next commit exists (one HEAD), or the log lists a newer version."""
        if self.table.catalog is not None:
            return (self.table.latest_version() or 0) > self.snapshot.version
        return self.table.storage.head(f"{LOG_DIR}/{self.snapshot.version + 1:020d}.json") is not None

    def _run(self) -> None:
        stop = self._stop
        while not stop.wait(self.delay):
            try:
                update = self.poll()
                self.error = None
            except DeltaExploreError as exc:  # a store that fails for a while: try again later
                self.error, update = exc, None
            if update is None:
                self.delay = min(self.max_interval, self.delay * 2)
                continue
            self.delay = self.interval
            self._updates.put(update)
            if self.on_change is not None:  # a poll's update is delivered: stop() waits for it
                try:
                    self.on_change(update)
                except Exception:  # noqa: BLE001 - a failing callback must not end the follow
                    _log.exception("deltaexplore follow: on_change failed")

    def __iter__(self) -> Iterator[FollowUpdate]:
        """Each update as it lands, until `stop()`; interrupting the kernel (Ctrl-C) while
        waiting stops the follower and ends the loop."""
        try:
            while True:
                try:
                    update = self._updates.get(timeout=0.2)  # short waits: an interrupt gets through
                except queue.Empty:
                    if not self.running:
                        return
                    continue
                if update is None:
                    return
                yield update
        except KeyboardInterrupt:
            self.stop()

    def wait(self, timeout: float | None = None) -> FollowUpdate | None:
        """The next update (None after `timeout` seconds or once stopped); Ctrl-C stops."""
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            while True:
                left = 0.2 if deadline is None else min(0.2, deadline - time.monotonic())
                if left <= 0:
                    return None
                try:
                    return self._updates.get(timeout=left)  # short waits: an interrupt gets through
                except queue.Empty:
                    if not self.running:
                        return None
        except KeyboardInterrupt:
            self.stop()
        return None


def follow(
    uri: str | Table,
    storage_options: dict[str, Any] | None = None,
    *,
    interval: float = 1.0,
    max_interval: float = 30.0,
    on_change: Callable[[FollowUpdate], Any] | None = None,
) -> Follower:
    """Follow a table as it changes: returns a running `Follower` at once (see the module docstring).

    >>> f = dx.follow("path/to/table", on_change=lambda u: print(u.commits.to_pylist()))
    >>> f.stop()
    """
    table = uri if isinstance(uri, Table) else open_table(uri, storage_options)
    return Follower(table, interval=interval, max_interval=max_interval, on_change=on_change)
