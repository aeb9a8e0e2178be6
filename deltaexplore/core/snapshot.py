"""Snapshots: the immutable state of a table at one version.

Building a snapshot lists the log, picks the segment, reads its JSON files once and finds the
protocol and metadata (newest first, then the checkpoint). The file set is replayed only when
first asked for, and cached; time travel builds a new snapshot.
"""

from __future__ import annotations

import datetime as dt
import time
import warnings
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.actions import DomainMetadata, Metadata, Protocol, Txn
from deltaexplore.core.checkpoint import CheckpointReader
from deltaexplore.core.config import TableConfig
from deltaexplore.core.features import check_readable
from deltaexplore.core.json_log import LogLines, read_log_files
from deltaexplore.core.log_segment import LogListing, LogSegment, build_segment
from deltaexplore.core.replay import reconcile, superseded_by
from deltaexplore.core.timestamps import CommitClock, ict_config, to_datetime
from deltaexplore.errors import InvalidLogError

if TYPE_CHECKING:
    from deltaexplore.core.scan import ScanPlan
    from deltaexplore.core.table import Table

__all__ = ["CatalogManagedWarning", "Snapshot", "build_snapshot"]

CATALOG_FEATURES = ("catalogManaged", "catalogOwned-preview")


class CatalogManagedWarning(UserWarning):
    """A catalog-managed table was opened by path: only published commits are visible."""


@dataclass
class _State:
    protocol: Protocol | None
    protocol_version: int | None
    metadata: Metadata | None
    metadata_version: int | None


def _find_state(lines: LogLines, reader: CheckpointReader | None) -> _State:
    protocol = metadata = None
    pv = mv = None
    for _, version, body in lines.objects("protocol"):
        protocol, pv = Protocol.from_json(body), version
    for _, version, body in lines.objects("metaData"):
        metadata, mv = Metadata.from_json(body), version
    if (protocol is None or metadata is None) and reader is not None:
        nf = reader.non_file_actions()
        if protocol is None and nf.protocol is not None:
            protocol, pv = Protocol.from_json(nf.protocol), reader.checkpoint.version
        if metadata is None and nf.metadata is not None:
            metadata, mv = Metadata.from_json(nf.metadata), reader.checkpoint.version
    return _State(protocol, pv, metadata, mv)


def build_snapshot(table: Table, listing: LogListing, version: int, *, published_only: bool = False) -> Snapshot:
    """Build the snapshot of `version` from a listing (see the module docstring)."""
    root = table.storage.root
    segment = build_segment(listing, version, root=root)
    reader = None
    if segment.checkpoint is not None:
        hint = None
        lc = listing.last_checkpoint
        if lc.usable and lc.version == segment.checkpoint.version and lc.v2_checkpoint:
            hint = lc.v2_checkpoint
        reader = CheckpointReader(table.storage, segment.checkpoint, hint)
    lines = read_log_files(table.storage, segment.json_files)
    state = _find_state(lines, reader)
    log_dir = f"{root}/_delta_log"
    if state.protocol is None:
        raise InvalidLogError(f"no protocol action found in the log of {root} at version {version}", path=log_dir)
    check_readable(state.protocol, path=root)
    if state.metadata is None and (state.protocol.min_reader_version >= 2 or state.protocol.min_writer_version >= 7):
        # Table features and column mapping give metadata a say in how file actions and commit
        # times are read: without it the snapshot cannot be built faithfully.
        raise InvalidLogError(f"no metaData action found in the log of {root} at version {version}", path=log_dir)
    if state.protocol.has(*CATALOG_FEATURES) and not table.catalog_managed_by_client:
        published_only = True
        warnings.warn(
            f"{root} is a catalog-managed table opened by path: only published commits are read "
            f"(version {version}); pass a catalog client to open_table() to see ratified commits",
            CatalogManagedWarning,
            stacklevel=4,
        )
    return Snapshot(table, listing, segment, lines, reader, state, published_only=published_only)


class Snapshot:
    """The state of a table at one version. Immutable: time travel builds another snapshot."""

    def __init__(
        self,
        table: Table,
        listing: LogListing,
        segment: LogSegment,
        lines: LogLines,
        reader: CheckpointReader | None,
        state: _State,
        *,
        published_only: bool = False,
    ) -> None:
        self.table = table
        self._listing = listing
        self.segment = segment
        self._lines = lines
        self._reader = reader
        self._state = state
        #: True when the table is catalog-managed but was opened without its catalog.
        self.published_only = published_only
        self._adds: pa.Table | None = None

    def __repr__(self) -> str:
        return f"Snapshot({self.table.uri!r}, version={self.version})"

    # -- identity ----------------------------------------------------------------------------
    @property
    def version(self) -> int:
        return self.segment.version

    @property
    def storage(self) -> Any:
        return self.table.storage

    @cached_property
    def clock(self) -> CommitClock:
        known: dict[int, int] = {}
        for _, version, body in self._lines.objects("commitInfo"):
            value = body.get("inCommitTimestamp")
            if value is not None:
                try:
                    known[version] = int(value)
                except (TypeError, ValueError):
                    pass
        return CommitClock(self.storage, self._listing, ict_config(self._state.protocol, self._state.metadata), known_ict=known)

    @cached_property
    def timestamp_ms(self) -> int:
        """Commit time of this version in ms (in-commit timestamp aware)."""
        return self.clock.timestamp(self.version)

    @property
    def timestamp(self) -> dt.datetime:
        """Commit time of this version (UTC)."""
        return to_datetime(self.timestamp_ms)

    # -- protocol and metadata ------------------------------------------------------------------
    @property
    def protocol(self) -> Protocol:
        assert self._state.protocol is not None
        return self._state.protocol

    @property
    def has_metadata(self) -> bool:
        return self._state.metadata is not None

    @property
    def metadata(self) -> Metadata:
        """The table's metadata.

        Raises:
            InvalidLogError: the log has no metaData action (legacy tables only get this far).
        """
        if self._state.metadata is None:
            raise InvalidLogError(f"no metaData action found in the log of {self.table.uri} at version {self.version}")
        return self._state.metadata

    @property
    def schema(self) -> Any:
        """The table schema (`StructType`)."""
        return self.metadata.schema

    @property
    def arrow_schema(self) -> pa.Schema:
        """The logical Arrow schema `to_arrow()` returns."""
        from deltaexplore.core.schema import to_arrow_schema

        return to_arrow_schema(self.schema)

    @cached_property
    def config(self) -> TableConfig:
        return TableConfig(self.protocol, self.metadata)

    @property
    def partition_columns(self) -> list[str]:
        return list(self.metadata.partition_columns) if self.has_metadata else []

    @property
    def column_mapping_mode(self) -> str:
        return self.metadata.column_mapping_mode(self.protocol) if self.has_metadata else "none"

    @property
    def properties(self) -> dict[str, str]:
        return dict(self.metadata.configuration) if self.has_metadata else {}

    @property
    def checkpoint_version(self) -> int | None:
        return self.segment.checkpoint.version if self.segment.checkpoint else None

    # -- non-file state -----------------------------------------------------------------------
    @cached_property
    def _all_txns(self) -> dict[str, Txn]:
        out: dict[str, Txn] = {}
        if self._reader is not None:
            for body in self._reader.non_file_actions().txns:
                txn = Txn.from_json(body)
                out[txn.app_id] = txn
        for _, _, body in self._lines.objects("txn"):
            txn = Txn.from_json(body)
            out[txn.app_id] = txn
        return out

    def txns(self) -> dict[str, Txn]:
        """Latest `txn` per application id (expired ones dropped per
        `delta.setTransactionRetentionDuration`)."""
        txns = self._all_txns
        retention = self.config.set_transaction_retention_ms if self.has_metadata else None
        if retention is None:
            return dict(txns)
        cutoff = int(time.time() * 1000) - retention
        return {k: t for k, t in txns.items() if t.last_updated is None or t.last_updated >= cutoff}

    def transaction_version(self, app_id: str) -> int | None:
        """The latest version recorded by application `app_id` (idempotent writes)."""
        txn = self.txns().get(app_id)
        return txn.version if txn else None

    @cached_property
    def _domains(self) -> dict[str, DomainMetadata]:
        out: dict[str, DomainMetadata] = {}
        if self._reader is not None:
            for body in self._reader.non_file_actions().domains:
                d = DomainMetadata.from_json(body)
                out[d.domain] = d
        for _, _, body in self._lines.objects("domainMetadata"):
            d = DomainMetadata.from_json(body)
            out[d.domain] = d
        return out

    def domain_metadata(self) -> dict[str, DomainMetadata]:
        """Every domain in the snapshot (removed domains excluded), by name."""
        return {k: d for k, d in self._domains.items() if not d.removed}

    @cached_property
    def row_id_high_water_mark(self) -> int | None:
        """The row tracking high-water mark (from the `delta.rowTracking` domain or the legacy action)."""
        dom = self.domain_metadata().get("delta.rowTracking")
        if dom is not None:
            conf = dom.config
            if isinstance(conf, dict) and conf.get("rowIdHighWaterMark") is not None:
                return int(conf["rowIdHighWaterMark"])
        mark = None
        for _, _, body in self._lines.objects("rowIdHighWaterMark"):
            if body.get("highWaterMark") is not None:
                mark = int(body["highWaterMark"])
        return mark

    # -- files -------------------------------------------------------------------------------
    def add_actions(self) -> pa.Table:
        """The active add actions, with the log's field names (replayed once, then cached)."""
        if self._adds is None:
            self._adds = self._replay("add")
        return self._adds

    def tombstones(self) -> pa.Table:
        """Remove actions still in the state (for VACUUM and log health)."""
        return self._replay("remove")

    def _replay(self, want: str) -> pa.Table:
        adds = self._lines.file_actions("add")
        removes = self._lines.file_actions("remove")
        ck = None
        if self._reader is not None:
            extra = ("stats_parsed",) if want == "add" else ()
            ck = self._reader.file_actions(want, extra=extra, exclude=superseded_by(adds, removes))
        return reconcile(ck, adds, removes, want=want)

    def files(self) -> pa.Table:
        """One row per active logical file (see `deltaexplore.core.files.FILES_SCHEMA`)."""
        from deltaexplore.core.files import format_files

        return format_files(self)

    def file_stats(self, columns: list[str] | None = None) -> pa.Table:
        """Per-file typed statistics: `path`, `num_records`, `tight_bounds` and, per column,
        `min.<col>`, `max.<col>`, `null_count.<col>` (logical, dotted names for nested fields)."""
        from deltaexplore.core.stats import file_stats

        return file_stats(self, columns)

    @property
    def num_files(self) -> int:
        return self.add_actions().num_rows

    @property
    def size_in_bytes(self) -> int:
        adds = self.add_actions()
        return int(pc.sum(adds.column("size")).as_py() or 0) if adds.num_rows else 0

    # -- data --------------------------------------------------------------------------------
    def scan(self, columns: list[str] | None = None, *, where: Any = None) -> ScanPlan:
        """Plan a read: which files (partition and stats pruning), which columns."""
        from deltaexplore.core.scan import plan_scan

        return plan_scan(self, columns=columns, where=where)

    def to_arrow(self, columns: list[str] | None = None, *, where: Any = None, row_tracking: bool = False) -> pa.Table:
        """The table's rows with deletion vectors applied and logical column names.

        Args:
            columns: logical columns to return (default all, in schema order).
            where: optional filter (SQL-like text or DNF tuples); files are pruned first.
            row_tracking: add `_row_id` and `_row_commit_version` (needs row tracking).
        """
        return self.scan(columns, where=where).to_arrow(row_tracking=row_tracking)

    def to_polars(self, columns: list[str] | None = None, *, where: Any = None) -> Any:
        import polars as pl

        return pl.from_arrow(self.to_arrow(columns, where=where))

    # -- checksum file ---------------------------------------------------------------------------
    @cached_property
    def crc(self) -> dict[str, Any] | None:
        """The `<version>.crc` content, or None when absent or unreadable."""
        from deltaexplore.core.crc import read_crc

        return read_crc(self.storage, self.segment.crc) if self.segment.crc else None

    def validate_crc(self) -> pa.Table:
        """Compare the `.crc` file with the replayed state: one row per checked field."""
        from deltaexplore.core.crc import validate_crc

        return validate_crc(self)

    # -- misc ----------------------------------------------------------------------------------
    @property
    def json_lines(self) -> LogLines:
        """The JSON log lines this snapshot was built from (for inspection)."""
        return self._lines

    @property
    def checkpoint_reader(self) -> CheckpointReader | None:
        return self._reader
