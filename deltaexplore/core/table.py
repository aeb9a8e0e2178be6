"""`Table`: a Delta table location, from which snapshots, history and changes are read."""

from __future__ import annotations

import datetime as dt
import os
import threading
from collections import OrderedDict
from typing import Any

import pyarrow as pa

from deltaexplore.core.arguments import count
from deltaexplore.core.cdf import read_changes
from deltaexplore.core.history import read_history
from deltaexplore.core.log.catalog import CatalogClient
from deltaexplore.core.log.file_names import LogFile, LogKind
from deltaexplore.core.log.segment import LogListing, list_log
from deltaexplore.core.log.timestamps import to_millis
from deltaexplore.core.snapshot import Snapshot, build_snapshot, move_snapshot
from deltaexplore.errors import DeltaExploreError, InvalidArgumentError, TableNotFoundError, VersionNotFoundError
from deltaexplore.storage import Storage, storage_for

__all__ = ["Table", "open_table"]


class Table:
    """A Delta table at a location. Cheap to create; every read lists the log afresh.

    A table keeps the last `CACHED_STATES` snapshots it built (least recently used dropped
    first): `snapshot()` moves the cheapest of them to the version asked for (the commits since
    applied, or the commits after that version undone) when that costs less than reading the
    version from scratch (`core.snapshot.move_snapshot`). Snapshots moved from one another share
    most of their memory; each cold read of a distant version holds its own file list.
    """

    #: snapshots kept to move from: the latest, the version being looked at, its neighbours
    CACHED_STATES = 4

    def __init__(self, storage: Storage, *, catalog: CatalogClient | None = None) -> None:
        self.storage = storage
        self.catalog = catalog
        self._listing: LogListing | None = None
        self._states: OrderedDict[int, Snapshot] = OrderedDict()
        self._states_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Table({self.uri!r})"

    @property
    def uri(self) -> str:
        return self.storage.root

    @property
    def catalog_managed_by_client(self) -> bool:
        """True when a catalog client supplies ratified commits for this table."""
        return self.catalog is not None

    # -- log ---------------------------------------------------------------------------------
    def listing(self, *, refresh: bool = True) -> LogListing:
        """The current listing of `_delta_log/` (merged with the catalog's ratified commits)."""
        if self._listing is None or refresh:
            listing = list_log(self.storage) if self.catalog is None else self._list_with_catalog()
            self._listing = listing
        return self._listing

    def _list_with_catalog(self) -> LogListing:
        assert self.catalog is not None
        try:
            listing = list_log(self.storage)
            listing.complete()  # ratified commits are merged into the whole listing
        except DeltaExploreError:
            listing = LogListing()
        ratified = self.catalog.get_ratified_commits(self.uri)
        for c in ratified.commits:
            if c.content is not None:
                listing.ratified[c.version] = LogFile(
                    LogKind.STAGED_COMMIT,
                    f"<catalog inline commit {c.version}>",
                    c.version,
                    c.version,
                    len(c.content),
                    c.timestamp or 0,
                    inline=c.content,
                )
            elif c.path is not None:
                info = self.storage.head(c.path)
                if info is None:
                    raise DeltaExploreError(
                        f"the catalog ratified {c.path} as version {c.version}, but the file is missing", path=c.path
                    )
                listing.ratified[c.version] = LogFile(
                    LogKind.STAGED_COMMIT, c.path, c.version, c.version, info.size, info.modification_time
                )
        listing.catalog_latest = ratified.latest_version
        if listing.latest_version is None:
            raise TableNotFoundError(
                f"not a Delta table: {self.uri} has no commits (catalog says latest {ratified.latest_version})", path=self.uri
            )
        return listing

    def latest_version(self) -> int:
        """The newest version of the table."""
        latest = self.listing().latest_version
        assert latest is not None
        return latest

    def versions(self) -> list[int]:
        """Versions that have a commit file (published or ratified), oldest first."""
        return self.listing().versions()

    # -- snapshots ---------------------------------------------------------------------------
    def snapshot(
        self,
        version: int | None = None,
        *,
        timestamp: str | dt.datetime | dt.date | int | None = None,
        strict: bool = True,
    ) -> Snapshot:
        """The table at `version`, at the latest version committed at or before `timestamp`,
        or (neither given) at the latest version.

        Each version is checked against its own protocol (a feature dropped later still
        refuses the versions that had it). With `strict=False` a version whose log is damaged
        (a checkpoint without its protocol or metaData) or that needs a reader feature this
        library does not support still gives a snapshot, for its log, history and files:
        `snapshot.problem` holds the error, which reading its rows raises.

        Raises:
            VersionNotFoundError: no such version, or the timestamp precedes the retained log.
            TableNotFoundError: the location holds no Delta table.
            UnsupportedFeatureError: the table needs a reader feature we do not support.
            InvalidLogError / InvalidCheckpointError: the log is malformed.
        """
        if version is not None and timestamp is not None:
            raise VersionNotFoundError("give a version or a timestamp, not both")
        if version is not None:
            if isinstance(version, bool) or not isinstance(version, int):
                raise VersionNotFoundError(f"version must be an integer, got {version!r}")
            listing = self.listing(refresh=self._listing is None or (self._listing.latest_version or -1) < version)
            return self._build(listing, version, strict=strict)
        listing = self.listing()
        # the latest version gives the commit clock; a timestamp's own version is checked alone
        latest = self._build(listing, listing.latest_version or 0, strict=strict and timestamp is None)
        if timestamp is None:
            return latest
        try:
            ms = to_millis(timestamp)
        except TypeError as exc:
            raise VersionNotFoundError(f"cannot use {timestamp!r} as a timestamp") from exc
        target = latest.clock.version_at(ms, root=self.uri)
        if target == latest.version:
            if strict and latest.problem is not None:
                raise latest.problem
            return latest
        return self._build(listing, target, strict=strict)

    def snapshot_from(self, base: Snapshot, version: int | None = None) -> Snapshot:
        """The snapshot of `version` (default: the latest), moved from `base` (a snapshot of this
        table) or from a snapshot the table keeps, whichever is cheapest (see the class
        docstring); read from scratch when that is cheaper."""
        if version is None:
            listing = self.listing()
            return self._build(listing, listing.latest_version or 0, base)
        if isinstance(version, bool) or not isinstance(version, int):
            raise VersionNotFoundError(f"version must be an integer, got {version!r}")
        listing = self.listing(refresh=self._listing is None or (self._listing.latest_version or -1) < version)
        return self._build(listing, version, base)

    def _build(self, listing: LogListing, version: int, base: Snapshot | None = None, *, strict: bool = True) -> Snapshot:
        if not strict:  # read from scratch and never kept: a strict read must not get a lenient state
            return build_snapshot(self, listing, version, strict=False)
        with self._states_lock:
            bases = list(self._states.values())
        if base is not None and base not in bases:
            bases.append(base)
        snapshot = move_snapshot(self, listing, version, bases) or build_snapshot(self, listing, version)
        with self._states_lock:
            self._states.pop(snapshot.version, None)
            self._states[snapshot.version] = snapshot
            while len(self._states) > self.CACHED_STATES:
                self._states.popitem(last=False)
        return snapshot

    def forget_snapshots(self) -> None:
        """Drop the snapshots the table keeps (their memory is freed once nothing else holds them)."""
        with self._states_lock:
            self._states.clear()

    # -- history and changes ---------------------------------------------------------------------
    def history(self, limit: int | None = None, *, start_version: int | None = None, end_version: int | None = None) -> pa.Table:
        """One row per commit, newest first (see `deltaexplore.core.history.HISTORY_SCHEMA`)."""
        limit = count(limit, "limit")
        start_version, end_version = count(start_version, "start_version"), count(end_version, "end_version")
        return read_history(self.storage, self.listing(), limit=limit, start_version=start_version, end_version=end_version)

    def changes(self, start_version: int, end_version: int | None = None, *, columns: list[str] | None = None) -> pa.Table:
        """The change data feed of versions `start_version..end_version` (inclusive).

        Rows carry `_change_type` (insert, delete, update_preimage, update_postimage),
        `_commit_version` and `_commit_timestamp`.

        Raises:
            DeltaProtocolError: change data feed was not enabled for part of the range.
            VersionNotFoundError: the range is outside the retained log.
        """
        start = count(start_version, "start_version", allow_none=False)
        assert start is not None
        return read_changes(self.snapshot(count(end_version, "end_version")), start, columns=columns)


def open_table(
    uri: str | os.PathLike[str] | Storage,
    storage_options: dict[str, Any] | None = None,
    *,
    catalog: CatalogClient | None = None,
) -> Table:
    """Open a Delta table by local path, URI (file://, s3://, gs://, memory://, ...) or `Storage`.

    Nothing is read until a snapshot, history or changes are asked for.

    Args:
        uri: where the table is.
        storage_options: options for the fsspec filesystem (credentials, endpoint, ...).
        catalog: the catalog client of a catalog-managed table.
    """
    if not isinstance(uri, (str, os.PathLike, Storage)):
        raise InvalidArgumentError(f"a table location must be a path, a URI or a Storage, got {type(uri).__name__} {uri!r}")
    return Table(storage_for(uri, storage_options), catalog=catalog)
