"""Snapshots: a table at one version, as a user holds it.

A `Snapshot` is the `TableState` of one version (`core.log.state`: protocol, metadata, active
files, commit times) together with the table it belongs to and the ways to read its files and
rows: `files()`, `file_stats()`, `scan()`, `to_arrow()`. Immutable: time travel builds another
snapshot (`Table.snapshot(version)`), moved from a snapshot the table holds when that is cheaper
than reading the version from scratch (`move_snapshot`), with the same content.
"""

from __future__ import annotations

import datetime as dt
import warnings
from typing import Any, Protocol

import pyarrow as pa

from deltaexplore.core.files import format_files
from deltaexplore.core.log.segment import LogListing
from deltaexplore.core.log.state import LogRead, TableState, move_cost, move_log, read_cost, read_log
from deltaexplore.core.log.travel import ReplayedFiles
from deltaexplore.core.protocol.features import CATALOG_FEATURES
from deltaexplore.core.scan.plan import ScanPlan, plan_scan
from deltaexplore.core.scan.stats import file_stats
from deltaexplore.storage import Storage

__all__ = ["CatalogManagedWarning", "Snapshot", "TableHandle", "build_snapshot", "move_snapshot"]


class CatalogManagedWarning(UserWarning):
    """A catalog-managed table was opened by path: only published commits are visible."""


class TableHandle(Protocol):
    """The table a snapshot belongs to, as the snapshot sees it (`core.table.Table` is the one
    there is: the table builds snapshots, so it is named here by what it offers)."""

    storage: Storage

    @property
    def uri(self) -> str: ...

    @property
    def catalog_managed_by_client(self) -> bool: ...

    def listing(self, *, refresh: bool = True) -> LogListing: ...

    def versions(self) -> list[int]: ...

    def latest_version(self) -> int: ...

    def snapshot(self, version: int | None = None, *, timestamp: str | dt.datetime | dt.date | int | None = None) -> Snapshot: ...

    def snapshot_from(self, base: Snapshot, version: int | None = None) -> Snapshot: ...

    def history(
        self, limit: int | None = None, *, start_version: int | None = None, end_version: int | None = None
    ) -> pa.Table: ...

    def changes(self, start_version: int, end_version: int | None = None, *, columns: list[str] | None = None) -> pa.Table: ...


def build_snapshot(
    table: TableHandle, listing: LogListing, version: int, *, published_only: bool = False, strict: bool = True
) -> Snapshot:
    """The snapshot of `version` from a listing of the table's log (`strict`: see `read_log`).

    A catalog-managed table read without its catalog client shows its published commits only
    (`Snapshot.published_only`, with a `CatalogManagedWarning`).
    """
    log = read_log(table.storage, listing, version, strict=strict)
    if log.protocol.has(*CATALOG_FEATURES) and not table.catalog_managed_by_client:
        published_only = True
        warnings.warn(
            f"{table.uri} is a catalog-managed table opened by path: only published commits are read "
            f"(version {version}); pass a catalog client to open_table() to see ratified commits",
            CatalogManagedWarning,
            stacklevel=4,
        )
    return Snapshot(table, log, published_only=published_only)


def move_snapshot(table: TableHandle, listing: LogListing, version: int, bases: list[Snapshot]) -> Snapshot | None:
    """The snapshot of `version` moved from the cheapest of `bases` (`core.log.state.move_log`),
    `bases`' own snapshot when one is that version read from the same segment; None when no
    move is cheaper than reading the version from scratch."""
    best: tuple[int, Snapshot] | None = None
    for base in bases:
        if base.table is not table or base.problem is not None:  # a lenient state is never moved
            continue
        cost = move_cost(listing, version, base)
        if cost is not None and (best is None or cost < best[0]):
            best = (cost, base)
    if best is None or best[0] > read_cost(listing, version, root=table.uri):
        return None
    base = best[1]
    moved = move_log(table.storage, listing, version, base)
    if moved is None:
        return None
    log, files = moved
    if base.version == version and log.segment == base.segment:
        return base
    return Snapshot(table, log, published_only=base.published_only, files=files)


class Snapshot(TableState):
    """The state of a table at one version, with its table and its reads. Immutable."""

    def __init__(
        self, table: TableHandle, log: LogRead, *, published_only: bool = False, files: ReplayedFiles | None = None
    ) -> None:
        super().__init__(table.storage, log, published_only=published_only, files=files)
        self.table = table

    def refresh(self) -> Snapshot:
        """The table's latest snapshot, moved from this one: only the commits since are read
        (or this snapshot itself, when there are none)."""
        return self.table.snapshot_from(self)

    # -- files -------------------------------------------------------------------------------
    def files(self) -> pa.Table:
        """One row per active logical file (see `deltaexplore.core.files.FILES_SCHEMA`)."""
        return format_files(self)

    def file_stats(self, columns: list[str] | None = None) -> pa.Table:
        """Per-file typed statistics: `path`, `num_records`, `tight_bounds` and, per column,
        `min.<col>`, `max.<col>`, `null_count.<col>` (logical, dotted names for nested fields)."""
        return file_stats(self, columns)

    # -- data --------------------------------------------------------------------------------
    def scan(self, columns: list[str] | None = None, *, where: Any = None) -> ScanPlan:
        """Plan a read: which files (partition and stats pruning), which columns."""
        return plan_scan(self, columns=columns, where=where)

    def to_arrow(
        self, columns: list[str] | None = None, *, where: Any = None, row_tracking: bool = False, variant: str = "binary"
    ) -> pa.Table:
        """The table's rows with deletion vectors applied and logical column names.

        Args:
            columns: logical columns to return (default all, in schema order).
            where: optional filter (SQL-like text or DNF tuples); files are pruned first.
            row_tracking: add `_row_id` and `_row_commit_version` (needs row tracking).
            variant: "binary" (default) gives variant columns as `struct<metadata: binary, value:
                binary>` (shredded values rebuilt), "json" as JSON text as Spark's `to_json`
                writes it (dates, timestamps, decimals and binaries included).
        """
        return self.scan(columns, where=where).to_arrow(row_tracking=row_tracking, variant=variant)

    def to_polars(self, columns: list[str] | None = None, *, where: Any = None) -> Any:
        import polars as pl  # polars is loaded only by those who ask for a polars frame

        return pl.from_arrow(self.to_arrow(columns, where=where))
