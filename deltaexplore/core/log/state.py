"""The state of a table at one version, as its log gives it: `TableState`.

Reading a version picks the log segment (newest complete checkpoint, then the commits after it),
reads its JSON files once and finds the protocol and metadata (newest first, then the
checkpoint). The active files are replayed only when first asked for, and cached. Everything
that reads a table's files (scan planning, statistics, the files table) takes a `TableState`;
`core.snapshot.Snapshot` is this state together with its `Table` and the ways to read its rows.

`move_log` reads a version from another version's state instead: the commits in between are
read (going forward) or already held (going back), the lines and checkpoint reader are what a
cold read of that version has, and replayed files are moved (`core.log.travel`) rather than
replayed. `move_cost` and `read_cost` are what a caller compares to choose.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.log.checkpoint_reader import FILE_BATCH_ROWS, Checkpoint, CheckpointReader
from deltaexplore.core.log.crc_reader import StateTotals, compare_crc, read_crc
from deltaexplore.core.log.file_names import LogKind
from deltaexplore.core.log.json_log import LogLines, read_log_files
from deltaexplore.core.log.replay import reconcile, superseded_by
from deltaexplore.core.log.segment import LogListing, LogSegment, build_segment
from deltaexplore.core.log.timestamps import CommitClock, ict_config, to_datetime
from deltaexplore.core.log.travel import ReplayedFiles, backward, forward, rebase, replay_files, split_at
from deltaexplore.core.protocol.actions import DomainMetadata, Metadata, Protocol, Txn
from deltaexplore.core.protocol.config import TableConfig
from deltaexplore.core.protocol.features import check_readable
from deltaexplore.core.protocol.schema import StructType, to_arrow_schema
from deltaexplore.errors import DeltaProtocolError, InvalidLogError, UnsupportedFeatureError
from deltaexplore.storage import Storage

__all__ = ["CHECKPOINT_BYTE_COST", "NO_PROTOCOL", "LogRead", "TableState", "move_cost", "move_log", "read_cost", "read_log"]


@dataclass(frozen=True)
class LogRead:
    """What reading the log of one version gives: its listing and segment, the segment's JSON
    lines, the checkpoint reader, and the newest protocol and metadata (metadata may be missing
    in legacy tables)."""

    listing: LogListing
    segment: LogSegment
    lines: LogLines
    reader: CheckpointReader | None
    protocol: Protocol
    metadata: Metadata | None
    #: why this version cannot be read (read with `strict=False` only): a damaged log or a
    #: reader feature we do not support; data reads raise it
    problem: DeltaProtocolError | None = None


#: the stand-in protocol of a version whose log has none (`strict=False` only)
NO_PROTOCOL = Protocol(0, 0)


def read_log(storage: Storage, listing: LogListing, version: int, *, strict: bool = True) -> LogRead:
    """Read the log of `version` from a listing (see the module docstring).

    A reader that starts from a checkpoint never goes back to the commits before it: a
    checkpoint without a protocol or metaData row, and no commit after it supplying one, is a
    damaged log. With `strict=False` the problems below are recorded in `LogRead.problem`
    instead of raised (a missing protocol reads as `NO_PROTOCOL`), so that the log, history and
    files of such a version can still be shown.

    Raises:
        VersionNotFoundError: no such version in the listing, or its commits are gone.
        InvalidLogError: no protocol, or no metadata where the protocol needs one (naming the
            checkpoint that lacks it).
        UnsupportedFeatureError: the table needs a reader feature we do not support.
    """
    segment = build_segment(listing, version, root=storage.root)
    reader = None if segment.checkpoint is None else _reader(storage, listing, segment.checkpoint)
    lines = read_log_files(storage, segment.json_files)
    protocol, metadata, problem = _protocol_and_metadata(storage.root, version, lines, reader, strict=strict)
    return LogRead(listing, segment, lines, reader, protocol, metadata, problem)


def _reader(storage: Storage, listing: LogListing, checkpoint: Checkpoint) -> CheckpointReader:
    hint = None
    lc = listing.last_checkpoint
    if lc.usable and lc.version == checkpoint.version and lc.v2_checkpoint:
        hint = lc.v2_checkpoint
    return CheckpointReader(storage, checkpoint, hint)


def _protocol_and_metadata(
    root: str,
    version: int,
    lines: LogLines,
    reader: CheckpointReader | None,
    known: tuple[Protocol, Metadata | None] | None = None,
    *,
    strict: bool = True,
) -> tuple[Protocol, Metadata | None, DeltaProtocolError | None]:
    """The newest protocol and metadata: in the lines, else `known` (those of the state the
    lines follow), else the checkpoint's; and why the version cannot be read (raised when
    `strict`, see `read_log`)."""
    protocol = metadata = None
    for _, _, body in lines.objects("protocol"):
        protocol = Protocol.from_json(body)
    for i, _, body in lines.objects("metaData"):
        metadata = Metadata.from_json(body, source=lines.files[int(lines.file_index[i])].path)
    if known is not None:
        protocol = protocol or known[0]
        metadata = metadata or known[1]
    elif (protocol is None or metadata is None) and reader is not None:
        nf = reader.non_file_actions()
        if protocol is None and nf.protocol is not None:
            protocol = Protocol.from_json(nf.protocol)
        if metadata is None and nf.metadata is not None:
            metadata = Metadata.from_json(nf.metadata, source=reader.checkpoint.parts[0].path)
    log_dir = f"{root}/_delta_log"
    problems: list[DeltaProtocolError] = []
    checkpoint = reader.checkpoint if reader is not None else None
    for action, missing in (("protocol", protocol is None), ("metaData", metadata is None)):
        if missing and checkpoint is not None:
            problems.append(
                InvalidLogError(
                    f"checkpoint {checkpoint.parts[0].path} (version {checkpoint.version}) has no {action} action and "
                    f"no commit after it supplies one: the state of version {version} cannot be reconstructed",
                    path=checkpoint.parts[0].path,
                )
            )
    if protocol is None and checkpoint is None:
        problems.append(InvalidLogError(f"no protocol action found in the log of {root} at version {version}", path=log_dir))
    if protocol is not None:
        try:
            check_readable(protocol, path=root)
        except UnsupportedFeatureError as exc:
            problems.append(exc)
        if metadata is None and checkpoint is None and (protocol.min_reader_version >= 2 or protocol.min_writer_version >= 7):
            # Table features and column mapping give metadata a say in how file actions and commit
            # times are read: without it the state cannot be built faithfully.
            problems.append(InvalidLogError(f"no metaData action found in the log of {root} at version {version}", path=log_dir))
    if problems and strict:
        raise problems[0]
    return protocol or NO_PROTOCOL, metadata, problems[0] if problems else None


#: bytes of JSON a checkpoint's byte costs to read. Measured on the 1M-file benchmark table:
#: its 662 MB checkpoint reads in 8 s, a forward move over the 946 MB of JSON commits before it
#: took 60 s (parquet is columnar and its stats strings are copied, not parsed): one is a
#: conservative weight that keeps such a move a cold read
CHECKPOINT_BYTE_COST = 1


def read_cost(listing: LogListing, version: int, *, root: str) -> int:
    """What reading `version` from scratch costs, in bytes of JSON: its checkpoint and commits."""
    segment = build_segment(listing, version, root=root)
    checkpoint = segment.checkpoint.size if segment.checkpoint is not None else 0
    return CHECKPOINT_BYTE_COST * checkpoint + sum(f.size for f in segment.json_files)


def move_cost(listing: LogListing, version: int, base: TableState) -> int | None:
    """What reading `version` by moving `base` costs (`read_cost`'s unit), or None when it cannot:
    the commits in between are gone, `version` is before `base`'s checkpoint, or the listing
    is not the log `base` was read from (the table was replaced).

    Going forward reads the commits in between; going back reads nothing (a quarter of their
    bytes: the actions are parsed already). A base whose files were never replayed still
    needs its checkpoint read."""
    if not _same_log(listing, base):
        return None
    checkpoint = base.segment.checkpoint
    if version > base.version:
        commits = [listing.commit(v) for v in listing.commit_versions(base.version + 1, version)]
        if len(commits) != version - base.version:
            return None
        cost = sum(c.size for c in commits if c is not None)
    elif version < base.version:
        if checkpoint is not None and version < checkpoint.version:
            return None
        cost = sum(f.size for f in base._lines.files if f.version > version) // 4
    else:
        cost = 0
    if not base.files_loaded and checkpoint is not None:
        cost += CHECKPOINT_BYTE_COST * checkpoint.size
    return cost


def _same_log(listing: LogListing, base: TableState) -> bool:
    """Whether `listing` continues the log `base` was read from: its newest commit is still
    there as it was (a table deleted and written again at the same place is another log)."""
    latest = listing.latest_version
    if latest is None:
        return False
    files = base._lines.files
    newest = files[-1] if files else None
    if newest is not None and newest.kind is LogKind.COMMIT:
        now = listing.commit(newest.version)
        if now is not None:
            return now.size == newest.size and now.modification_time == newest.modification_time
    return latest >= base.version


def move_log(
    storage: Storage, listing: LogListing, version: int, base: TableState
) -> tuple[LogRead, ReplayedFiles | None] | None:
    """The log of `version` read by moving `base` there (see the module docstring), with its
    replayed files when `base`'s were; None when it cannot be moved (`move_cost`) or a log
    compaction file straddles a version on the way (a cold read then).

    The result is what `read_log` gives: the segment of `version` (its newest checkpoint, the
    commits after it), their lines, the checkpoint reader, protocol and metadata.
    """
    if move_cost(listing, version, base) is None:
        return None
    root = storage.root
    target = build_segment(listing, version, root=root)
    lines, reader, files = base._lines, base._reader, base._files
    known = (base.protocol, base.metadata_or_none)
    if version > base.version:
        commits = [listing.commit(v) for v in listing.commit_versions(base.version + 1, version)]
        newer = read_log_files(storage, [c for c in commits if c is not None])
        moved = lines.then(newer)
        protocol, metadata, _ = _protocol_and_metadata(root, version, newer, reader, known)
        if files is not None:
            new_adds = split_at(moved.file_actions("add"), base.version)[1]
            files = forward(files, new_adds, split_at(moved.file_actions("remove"), base.version)[1])
    elif version < base.version:
        upto = lines.upto(version)
        if upto is None:
            return None
        moved = upto
        protocol, metadata, _ = _protocol_and_metadata(root, version, moved, reader)
        if files is not None:
            files = backward(files, lines.file_actions("add"), lines.file_actions("remove"), version)
    else:
        moved, protocol, metadata = lines, base.protocol, base.metadata_or_none
    checkpoint = reader.checkpoint if reader is not None else None
    if target.checkpoint is not None and (checkpoint is None or target.checkpoint.version > checkpoint.version):
        after = moved.after(target.checkpoint.version)
        if after is None:
            return None
        reader = _reader(storage, listing, target.checkpoint)
        if files is not None:
            # the checkpoint's rows are the commits' but for `dataChange` (writers set it), when
            # its footers say so; otherwise only reading it gives what a cold read gives
            data_change = reader.uniform_data_change()
            if data_change is None or "stats_parsed" in files.adds.column_names:
                return None
            adds, removes = moved.file_actions("add"), moved.file_actions("remove")
            files = rebase(files, adds, removes, target.checkpoint.version, data_change=data_change)
        moved, checkpoint = after, target.checkpoint
    if target.checkpoint != checkpoint or target.json_files != tuple(moved.files):
        # the base's checkpoint is gone or was replaced, or the listing now reads these versions
        # from other files (a compaction, a published staged commit): a cold read is exact
        return None
    return LogRead(listing, target, moved, reader, protocol, metadata), files


class TableState:
    """The state of a table at one version (see the module docstring). Immutable."""

    def __init__(
        self, storage: Storage, log: LogRead, *, published_only: bool = False, files: ReplayedFiles | None = None
    ) -> None:
        self.storage = storage
        self._listing = log.listing
        self.segment = log.segment
        self._lines = log.lines
        self._reader = log.reader
        self._protocol = log.protocol
        self._metadata = log.metadata
        #: why the rows of this version cannot be read (None for a state read strictly)
        self.problem = log.problem
        #: True when the table is catalog-managed but was read without its catalog.
        self.published_only = published_only
        self._files = files

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.uri!r}, version={self.version})"

    # -- identity ----------------------------------------------------------------------------
    @property
    def uri(self) -> str:
        """Where the table is (its storage root)."""
        return self.storage.root

    @property
    def version(self) -> int:
        return self.segment.version

    @property
    def listing(self) -> LogListing:
        """The listing of `_delta_log/` this state was read from."""
        return self._listing

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
        return CommitClock(self.storage, self._listing, ict_config(self._protocol, self._metadata), known_ict=known)

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
        return self._protocol

    @property
    def has_metadata(self) -> bool:
        return self._metadata is not None

    @property
    def metadata(self) -> Metadata:
        """The table's metadata.

        Raises:
            InvalidLogError: the log has no metaData action (legacy tables only get this far).
        """
        if self._metadata is None:
            raise InvalidLogError(f"no metaData action found in the log of {self.uri} at version {self.version}")
        return self._metadata

    @property
    def metadata_or_none(self) -> Metadata | None:
        """The table's metadata, None when the log has none (legacy tables)."""
        return self._metadata

    @property
    def schema(self) -> StructType:
        """The table schema."""
        return self.metadata.schema

    @property
    def arrow_schema(self) -> pa.Schema:
        """The logical Arrow schema of the table's rows."""
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
        """Every domain in the state (removed domains excluded), by name."""
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
        return self.replayed_files().adds

    def replayed_files(self) -> ReplayedFiles:
        """The active files with what moving them to another version needs (`core.log.travel`)."""
        if self._files is None:
            self._files = replay_files(self._lines, self._reader)
        return self._files

    @property
    def files_loaded(self) -> bool:
        """Whether the active files were replayed already (`add_actions()` is then free)."""
        return self._files is not None

    def add_actions_for(self, paths: pa.Array) -> pa.Table:
        """The active add actions of the files at `paths` (strings, as the log writes them):
        taken from the replayed state when there is one, else replayed for those paths alone
        (the checkpoint streamed, its other rows never held), with the same columns."""
        paths = pc.unique(paths.cast(pa.string()))
        if self._files is not None:
            return self._files.adds.filter(_path_in(self._files.adds, paths))
        lines = self._lines.naming([p for p in paths.to_pylist() if p is not None])  # only lines that may name them
        adds = lines.file_actions("add")
        removes = lines.file_actions("remove")
        adds, removes = adds.filter(_path_in(adds, paths)), removes.filter(_path_in(removes, paths))
        ck = None
        if self._reader is not None:
            ck = self._reader.file_actions("add", extra=("stats_parsed",), exclude=superseded_by(adds, removes), paths=paths)
        return reconcile(ck, adds, removes, want="add")

    def iter_file_actions(
        self, kind: str = "add", *, fields: tuple[str, ...] | None = None, superseded: list[pa.Table] | None = None
    ) -> Iterator[pa.Table]:
        """The replayed `kind` ('add': active files, 'remove': tombstones) actions in batches,
        in `add_actions()`'s order, never all at once: the checkpoint's batches (only `fields`
        of the action, and path and deletionVector, when given; `stats_parsed` where the
        checkpoint has it) less what the JSON commits supersede, then the JSON survivors. What
        a streaming pass over a huge table reads: it holds one checkpoint batch and the JSON
        commits after the checkpoint. Slices of the replayed table when it is cached.

        `superseded` (adds only) gets the checkpoint's rows that the commits replaced (removed,
        or re-added with another deletion vector), with the same columns: what going back from
        this version needs of the checkpoint (`inspect.stepped_totals`)."""
        cached = self._files.adds if kind == "add" and self._files is not None else None
        if cached is not None:
            names = [c for c in cached.column_names if fields is None or c in {"path", "deletionVector", "stats_parsed", *fields}]
            if superseded is not None and self._files is not None and self._files.before.num_rows:
                before = self._files.before
                superseded.append(before.select([c for c in names if c in before.column_names]))
            for start in range(0, cached.num_rows, FILE_BATCH_ROWS):
                yield cached.select(names).slice(start, FILE_BATCH_ROWS)
            return
        adds = self._lines.file_actions("add")
        removes = self._lines.file_actions("remove")
        if self._reader is not None:
            extra = ("stats_parsed",) if kind == "add" else ()
            yield from self._reader.iter_file_actions(
                kind,
                fields=fields,
                extra=extra,
                exclude=superseded_by(adds, removes),
                superseded=superseded if kind == "add" else None,
            )
        json_part = reconcile(None, adds, removes, want=kind)
        if fields is not None:
            json_part = json_part.select([c for c in json_part.column_names if c in {"path", "deletionVector", *fields}])
        for start in range(0, json_part.num_rows, FILE_BATCH_ROWS):
            yield json_part.slice(start, FILE_BATCH_ROWS)

    def tombstones(self) -> pa.Table:
        """Remove actions still in the state (for VACUUM and log health)."""
        adds = self._lines.file_actions("add")
        removes = self._lines.file_actions("remove")
        ck = None
        if self._reader is not None:
            ck = self._reader.file_actions("remove", exclude=superseded_by(adds, removes))
        return reconcile(ck, adds, removes, want="remove")

    @property
    def num_files(self) -> int:
        return self.add_actions().num_rows

    @property
    def size_in_bytes(self) -> int:
        adds = self.add_actions()
        return int(pc.sum(adds.column("size")).as_py() or 0) if adds.num_rows else 0

    # -- checksum file ---------------------------------------------------------------------------
    @cached_property
    def crc(self) -> dict[str, Any] | None:
        """The `<version>.crc` content, or None when absent or unreadable."""
        return read_crc(self.storage, self.segment.crc) if self.segment.crc else None

    def validate_crc(self, totals: StateTotals | None = None) -> pa.Table:
        """Compare the `.crc` file with the replayed state: one row per checked field (the
        active files' `totals` when a streaming pass counted them, else the replayed adds)."""
        crc = self.crc
        return compare_crc(
            crc,
            present=self.segment.crc is not None,
            protocol=self.protocol,
            metadata=self._metadata,
            adds=(totals if totals is not None else self.add_actions()) if crc is not None else None,
            clock=self.clock,
            version=self.version,
        )

    # -- the log it was read from ----------------------------------------------------------------
    @property
    def json_lines(self) -> LogLines:
        """The JSON log lines this state was read from (for inspection)."""
        return self._lines

    @property
    def checkpoint_reader(self) -> CheckpointReader | None:
        return self._reader


def _path_in(actions: pa.Table, paths: pa.Array) -> pa.Array:
    """Rows of `actions` whose path is one of `paths`."""
    column = actions.column("path")
    return pc.fill_null(pc.is_in(column, value_set=paths.cast(column.type)), False)
