"""Transactions: stage actions, check the protocol's rules, commit with optimistic concurrency.

A `Transaction` reads one snapshot, collects file actions (Arrow tables with log field names),
metadata/protocol changes, application transactions and domain metadata, and commits them as
the next version. The commit file is created with put-if-absent (local: an atomic hard link;
object stores: a conditional PUT; catalog-managed tables: the catalog's commit), so a log entry
is never overwritten. When another writer took the version first, the winning commits are
checked for conflicts (`core.conflicts`); without a conflict the transaction is rebased (row ids,
commit versions and in-commit timestamps re-assigned) and retried at the next version.

After a commit: a `.crc` checksum file (when it can be computed cheaply), a checkpoint every
`delta.checkpointInterval` versions and, after a checkpoint, expired log cleanup. Failures there
never undo the commit; they are reported in `CommitResult.post_commit_errors`.

    >>> txn = Transaction(table, operation="WRITE", parameters={"mode": "Append"})
    >>> txn.add_files(adds)                   # e.g. from core.data_writer.write_data_files
    >>> result = txn.commit()                 # CommitResult(version=..., attempts=...)
"""

from __future__ import annotations

import importlib.metadata
import json
import random
import time
import uuid
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.log.file_names import commit_name
from deltaexplore.core.protocol.action_codec import action_line, action_lines, file_actions_table
from deltaexplore.core.protocol.actions import DomainMetadata, Metadata, Protocol
from deltaexplore.core.protocol.features import CATALOG_FEATURES, check_writable
from deltaexplore.core.protocol.predicates import Expr, parse_predicate
from deltaexplore.core.scan.stats import num_records
from deltaexplore.core.snapshot import Snapshot
from deltaexplore.core.table import Table, open_table
from deltaexplore.core.write.action_rules import (
    check_domain,
    check_file_actions,
    check_metadata,
    check_protocol_change,
    feature_enabled,
    protocol_for,
)
from deltaexplore.core.write.conflicts import ReadSet, WinningCommit, check_conflicts, read_winning_commits
from deltaexplore.core.write.post_commit import CommittedVersion, run_post_commit
from deltaexplore.core.write.row_rules import constraint_rules, evaluate_sql
from deltaexplore.errors import (
    CommitConflictError,
    DeltaExploreError,
    StorageError,
    TableNotFoundError,
    WriteRefusedError,
)

__all__ = ["ISOLATION_LEVELS", "CommitResult", "Transaction", "engine_info"]

ISOLATION_LEVELS = ("Serializable", "WriteSerializable")
#: lost races a commit tolerates by default, and for blind appends (which never conflict)
DEFAULT_RETRIES = 10
BLIND_APPEND_RETRIES = 100
#: back-off after a lost race: full jitter over an exponentially growing window
BACKOFF_BASE_S = 0.02
BACKOFF_MAX_S = 1.0
ROW_TRACKING_DOMAIN = "delta.rowTracking"


def engine_info() -> str:
    """`deltaexplore/<version>`, recorded as `commitInfo.engineInfo`."""
    try:
        version = importlib.metadata.version("deltaexplore")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - source checkout
        version = "0.1.0"
    return f"deltaexplore/{version}"


def _now_ms() -> int:
    return int(time.time() * 1000)


def _bool(conf: dict[str, str], key: str) -> bool:
    return str(conf.get(key, "false")).strip().lower() == "true"


@dataclass(frozen=True)
class CommitResult:
    """What a commit did.

    Attributes:
        version: the version committed.
        attempts: 1 plus the number of lost races (each followed by a conflict check).
        actions_count: actions in the commit file (commitInfo included).
        read_version: the snapshot version the transaction read (-1 for a new table).
        timestamp: the commit timestamp in ms (the in-commit timestamp when enabled).
        path: the log file written (`_delta_log/<v>.json`, or the staged commit for
            catalog-managed tables).
        rebased_over: versions committed by others between the read and this commit.
        checkpoint: the checkpoint written after the commit, if any.
        checksum_written: whether `<v>.crc` was written.
        post_commit_errors: failures of the post-commit hooks (the commit itself succeeded).
    """

    version: int
    attempts: int
    actions_count: int
    read_version: int
    timestamp: int
    operation: str
    path: str
    txn_id: str
    rebased_over: tuple[int, ...] = ()
    checkpoint: str | None = None
    checksum_written: bool = False
    post_commit_errors: tuple[str, ...] = ()


@dataclass
class _Rebase:
    """What changes between attempts: the version read and what the winners set."""

    read_version: int
    last_ict: int | None
    row_id_high_water_mark: int | None
    winners: list[WinningCommit]


class Transaction:
    """One atomic change to a Delta table (see the module docstring).

    Args:
        table: the `Table` (or anything `open_table` accepts).
        operation: the operation name recorded in `commitInfo` (WRITE, DELETE, OPTIMIZE, ...).
        parameters: operation parameters recorded in `commitInfo.operationParameters`.
        read_snapshot: the snapshot the transaction is based on (default: the latest; none
            when the table does not exist yet).
        isolation: 'Serializable' (default) or 'WriteSerializable' (blind appends of others
            do not conflict with this transaction's reads).
        user_metadata: free text recorded as `commitInfo.userMetadata`.
    """

    def __init__(
        self,
        table: Table | Any,
        *,
        operation: str,
        parameters: dict[str, Any] | None = None,
        read_snapshot: Snapshot | None = None,
        isolation: str = "Serializable",
        user_metadata: str | None = None,
    ) -> None:
        self.table: Table = table if isinstance(table, Table) else open_table(table)
        if self.table.catalog is None:
            self.table.storage.check_commit_safety()  # before any data file is written
        if isolation not in ISOLATION_LEVELS:
            raise WriteRefusedError(f"isolation must be one of {ISOLATION_LEVELS}, got {isolation!r}")
        if not operation:
            raise WriteRefusedError("a transaction needs an operation name")
        self.operation = operation
        self.parameters = dict(parameters or {})
        self.isolation = isolation
        self.user_metadata = user_metadata
        if read_snapshot is None:
            try:
                read_snapshot = self.table.snapshot()
            except TableNotFoundError:
                read_snapshot = None
        self.read_snapshot = read_snapshot
        self.read_version = read_snapshot.version if read_snapshot is not None else -1
        self.txn_id = str(uuid.uuid4())
        #: operation metrics recorded in commitInfo (values become strings); counts of files,
        #: bytes and rows are filled in when absent
        self.metrics: dict[str, Any] = {}
        self._adds: list[pa.Table] = []
        self._removes: list[pa.Table] = []
        self._cdc: list[pa.Table] = []
        self._metadata: Metadata | None = None
        self._protocol: Protocol | None = None
        self._app_txns: dict[str, int] = {}
        self._domains: dict[str, DomainMetadata] = {}
        self._system_domains: set[str] = set()
        self._reads = ReadSet(isolation=isolation)
        self._committed = False
        self._last_domains: dict[str, DomainMetadata] = {}

    def __repr__(self) -> str:
        return f"Transaction({self.table.uri!r}, operation={self.operation!r}, read_version={self.read_version})"

    # -- what the transaction reads and changes ---------------------------------------------------
    @property
    def protocol(self) -> Protocol | None:
        """The protocol the commit will have (the new one if updated)."""
        if self._protocol is not None:
            return self._protocol
        return self.read_snapshot.protocol if self.read_snapshot is not None else None

    @property
    def metadata(self) -> Metadata | None:
        """The metadata the commit will have (the new one if updated)."""
        if self._metadata is not None:
            return self._metadata
        if self.read_snapshot is not None and self.read_snapshot.has_metadata:
            return self.read_snapshot.metadata
        return None

    def add_files(self, adds: pa.Table | list[dict[str, Any]]) -> None:
        """Stage add actions (log field names, as `Snapshot.add_actions()` has them).

        Files without `baseRowId`/`defaultRowCommitVersion` get fresh ones at commit when the
        table tracks rows; files that have them (re-added files) keep them.
        """
        self._check_open()
        table = file_actions_table("add", adds)
        if table.num_rows:
            if table.column("dataChange").null_count:
                table = table.set_column(
                    table.column_names.index("dataChange"), "dataChange", pc.fill_null(table.column("dataChange"), True)
                )
            self._adds.append(table)

    def remove_files(
        self,
        files: pa.Table | list[dict[str, Any]] | list[str],
        *,
        data_change: bool = True,
        deletion_timestamp: int | None = None,
    ) -> pa.Table:
        """Stage remove actions for active files (rows of `add_actions()`, dicts, or paths).

        Removes carry the file's partition values, size, stats, tags, DV and row tracking
        fields (extendedFileMetadata). The removed files count as read by this transaction.

        Returns:
            The remove actions staged.

        Raises:
            WriteRefusedError: a path is not an active file of the read snapshot.
        """
        self._check_open()
        if isinstance(files, list) and files and all(isinstance(f, str) for f in files):
            rows = self._active_files([str(f) for f in files])
        else:
            rows = file_actions_table("add", files)  # type: ignore[arg-type]
        n = rows.num_rows
        if n == 0:
            return file_actions_table("remove", None)
        ts = deletion_timestamp if deletion_timestamp is not None else _now_ms()
        removes = pa.table(
            {
                "path": rows.column("path"),
                "deletionTimestamp": pa.array(np.full(n, ts, dtype=np.int64)),
                "dataChange": pa.array(np.full(n, data_change, dtype=bool)),
                "extendedFileMetadata": pa.array(np.ones(n, dtype=bool)),
                "partitionValues": rows.column("partitionValues"),
                "size": rows.column("size"),
                "stats": rows.column("stats"),
                "tags": rows.column("tags"),
                "deletionVector": rows.column("deletionVector"),
                "baseRowId": rows.column("baseRowId"),
                "defaultRowCommitVersion": rows.column("defaultRowCommitVersion"),
            }
        )
        removes = file_actions_table("remove", removes)
        self._removes.append(removes)
        paths = set(rows.column("path").to_pylist())
        self._reads.removed_paths |= paths
        self._reads.paths |= paths
        return removes

    def _active_files(self, paths: list[str]) -> pa.Table:
        if self.read_snapshot is None:
            raise WriteRefusedError(f"cannot remove {paths[0]}: the table {self.table.uri} does not exist yet")
        adds = self.read_snapshot.add_actions()
        mask = pc.is_in(adds.column("path"), value_set=pa.array(paths, pa.string()))
        rows = adds.filter(mask)
        if rows.num_rows != len(set(paths)):
            found = set(rows.column("path").to_pylist())
            missing = sorted(set(paths) - found)
            raise WriteRefusedError(
                f"cannot remove {missing[0]}: it is not an active file of {self.table.uri} at version {self.read_version}"
            )
        return rows

    def add_cdc_files(self, cdc: pa.Table | list[dict[str, Any]]) -> None:
        """Stage change data files (`_change_data/...`, with a `_change_type` column)."""
        self._check_open()
        table = file_actions_table("cdc", cdc)
        if table.num_rows:
            table = table.set_column(
                table.column_names.index("dataChange"), "dataChange", pa.array(np.zeros(table.num_rows, bool))
            )
            self._cdc.append(table)

    def update_metadata(self, metadata: Metadata) -> None:
        """Replace the table's metadata in this commit (at most once per commit)."""
        self._check_open()
        self._metadata = metadata

    def update_protocol(self, protocol: Protocol) -> None:
        """Replace the protocol (it may only add features or raise versions)."""
        self._check_open()
        self._protocol = protocol

    def upgrade_protocol_for(self, metadata: Metadata, *, extra: tuple[str, ...] = ()) -> Protocol:
        """Upgrade the protocol (if needed) so that it supports `metadata` and `extra` features."""
        base = self.protocol
        new = protocol_for(metadata, base, extra=extra)
        if base is None or new != base:
            self.update_protocol(new)
        return new

    def set_app_transaction(self, app_id: str, version: int) -> None:
        """Record `txn(appId, version)` (idempotent writes); a concurrent commit recording the
        same application id conflicts."""
        self._check_open()
        if not app_id:
            raise WriteRefusedError("an application transaction needs an app id")
        self._app_txns[str(app_id)] = int(version)
        self._reads.app_ids.add(str(app_id))

    def app_transaction_version(self, app_id: str) -> int | None:
        """The version last recorded by `app_id` in the read snapshot (now a dependency)."""
        self._reads.app_ids.add(str(app_id))
        return self.read_snapshot.transaction_version(app_id) if self.read_snapshot is not None else None

    def set_domain_metadata(self, domain: str, configuration: str | dict[str, Any], *, removed: bool = False) -> None:
        """Set (or with `removed`, delete) a user metadata domain.

        Raises:
            WriteRefusedError: system domains (`delta.*`) are not for users.
        """
        self._check_open()
        if domain.startswith("delta."):
            raise WriteRefusedError(f"domain {domain!r} is system-controlled (delta.*): users may not modify it")
        self._set_domain(domain, configuration, removed=removed)

    def _set_domain(
        self, domain: str, configuration: str | dict[str, Any], *, removed: bool = False, system: bool = False
    ) -> None:
        conf = configuration if isinstance(configuration, str) else json.dumps(configuration, separators=(",", ":"))
        self._domains[domain] = DomainMetadata(domain, conf, removed)
        if system:
            self._system_domains.add(domain)
        else:
            self._reads.domains.add(domain)

    def read_files(
        self,
        target: pa.Table | list[str] | str | Expr | list[tuple[Any, ...]] | None = None,
        *,
        paths: list[str] | pa.Table | None = None,
        predicate: Any = None,
    ) -> None:
        """Register what this transaction read, for conflict detection: files (a table with a
        `path` column or a list of paths) and/or a predicate (SQL-like text, DNF tuples or an
        `Expr`) whose matching files a concurrent commit must not add or remove."""
        if isinstance(target, pa.Table) or (isinstance(target, list) and all(isinstance(t, str) for t in target)):
            paths = target if paths is None else paths
        elif target is not None:
            predicate = target if predicate is None else predicate
        if isinstance(paths, pa.Table):
            self._reads.paths |= set(paths.column("path").to_pylist())
        elif paths:
            self._reads.paths |= {str(p) for p in paths}
        expr = parse_predicate(predicate)
        if expr is not None:
            self._reads.predicates.append(expr)

    def read_whole_table(self) -> None:
        """This transaction depends on every file of the table (any concurrent data change
        conflicts)."""
        self._reads.whole_table = True

    # -- commit ----------------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._committed:
            raise WriteRefusedError("this transaction has already been committed; start a new one")

    def staged(self) -> dict[str, pa.Table]:
        """The staged file actions (add, remove, cdc) as tables."""
        return {
            "add": _concat("add", self._adds),
            "remove": _concat("remove", self._removes),
            "cdc": _concat("cdc", self._cdc),
        }

    def commit(self, *, max_retries: int | None = None, post_commit: bool = True) -> CommitResult:
        """Validate and commit; retry at the next version after a lost race without conflict.

        After each lost race the transaction waits a random time (exponential back-off with
        full jitter, `BACKOFF_BASE_S` doubling up to `BACKOFF_MAX_S`) so that racing writers
        spread out instead of colliding again.

        Args:
            max_retries: lost races tolerated before giving up with `CommitConflictError`
                (default `DEFAULT_RETRIES`; `BLIND_APPEND_RETRIES` for a blind append, which
                can never conflict: it only has to find a free version).
            post_commit: run the hooks (checksum, checkpoint, log cleanup).

        Raises:
            WriteRefusedError / UnsupportedFeatureError: a protocol rule refuses the commit.
            CommitConflictError: a concurrent commit conflicts (the table is unchanged by this
                transaction), or `max_retries` was exhausted.
        """
        self._check_open()
        root = self.table.uri
        staged = self.staged()
        protocol, metadata = self._validate(staged)
        self._reads.changes_metadata = self._metadata is not None
        self._reads.changes_protocol = self._protocol is not None
        self._reads.changes_data = bool(
            (staged["add"].num_rows and pc.any(staged["add"].column("dataChange")).as_py())
            or (staged["remove"].num_rows and pc.any(staged["remove"].column("dataChange")).as_py())
        )
        if max_retries is None:
            max_retries = BLIND_APPEND_RETRIES if self._blind_append(staged["add"], staged["remove"]) else DEFAULT_RETRIES
        rebase = _Rebase(self.read_version, self._read_ict(), self._read_row_id_mark(), [])
        attempts = 0
        rebased_over: list[int] = []
        while True:
            attempts += 1
            version = rebase.read_version + 1
            now = _now_ms()
            lines, info, commit_md, adds, ict = self._prepare(version, now, rebase, staged, protocol, metadata)
            content = ("\n".join(lines) + "\n").encode("utf-8")
            written = self._put(version, content)
            if written is not None:
                break
            if attempts > max_retries:
                raise CommitConflictError(
                    f"gave up committing {self.operation} to {root} after {attempts} attempts: other writers keep winning "
                    f"(last tried version {version})",
                    path=root,
                )
            time.sleep(_backoff(attempts))
            listing = self.table.listing(refresh=True)
            latest = listing.latest_version
            if latest is None or latest < version:
                raise StorageError(
                    f"could not create {commit_name(version)} in {root}, but no commit {version} is visible: expected the "
                    "version to be taken by another writer",
                    path=root,
                )
            winners = read_winning_commits(self.table.storage, listing, rebase.read_version + 1, latest)
            for w in winners:
                check_conflicts(self.read_snapshot, self._reads, w, read_version=self.read_version, root=root)
            rebased_over.extend(w.version for w in winners)
            rebase = _Rebase(
                latest, _last_ict(winners, rebase.last_ict), _max_mark(winners, rebase.row_id_high_water_mark), winners
            )
        self._committed = True
        result = CommitResult(
            version=version,
            attempts=attempts,
            actions_count=len(lines),
            read_version=self.read_version,
            timestamp=ict if ict is not None else int(info["timestamp"]),
            operation=self.operation,
            path=written,
            txn_id=self.txn_id,
            rebased_over=tuple(rebased_over),
        )
        if post_commit:
            report = run_post_commit(
                CommittedVersion(
                    table=self.table,
                    read_snapshot=self.read_snapshot,
                    version=version,
                    protocol=protocol,
                    metadata=commit_md,
                    adds=adds,
                    removes=staged["remove"],
                    ict=ict,
                    rebased=bool(rebased_over),
                    txn_id=self.txn_id,
                    app_txns=dict(self._app_txns),
                    domains=dict(self._last_domains),
                )
            )
            result = replace(
                result,
                checkpoint=report.checkpoint,
                checksum_written=report.checksum_written,
                post_commit_errors=report.errors,
            )
        return result

    # -- validation ----------------------------------------------------------------------------------
    def _validate(self, staged: dict[str, pa.Table]) -> tuple[Protocol, Metadata]:
        root = self.table.uri
        snap = self.read_snapshot
        if snap is not None and snap.published_only:
            raise WriteRefusedError(
                f"{root} is catalog-managed: commits must go through its catalog; open it with open_table(..., catalog=...)",
                path=root,
            )
        old_protocol = snap.protocol if snap is not None else None
        old_metadata = snap.metadata if snap is not None and snap.has_metadata else None
        if old_protocol is not None:
            check_writable(old_protocol, path=root)
        metadata = self.metadata
        if metadata is None:
            raise WriteRefusedError(
                f"{root} does not exist (or has no metadata): creating a table needs update_metadata(...)", path=root
            )
        protocol = self._protocol or old_protocol or protocol_for(metadata)
        if self._protocol is None and old_protocol is None:
            self._protocol = protocol
        check_protocol_change(old_protocol, protocol, path=root)
        if self._metadata is not None or old_metadata is None or self._protocol is not None:
            check_metadata(protocol, metadata, old_metadata, path=root)
        if protocol.has(*CATALOG_FEATURES):
            if self.table.catalog is None:
                raise WriteRefusedError(
                    f"{root} is catalog-managed: filesystem commits are refused; open it with open_table(..., catalog=...)",
                    path=root,
                )
            if not (
                feature_enabled(protocol, "inCommitTimestamp") and _bool(metadata.configuration, "delta.enableInCommitTimestamps")
            ):
                raise WriteRefusedError(
                    "catalog-managed tables need in-commit timestamps (delta.enableInCommitTimestamps)", path=root
                )
        append_only = _append_only(old_protocol, old_metadata) if old_metadata is not None else False
        check_file_actions(
            protocol,
            metadata,
            staged["add"],
            staged["remove"],
            staged["cdc"],
            operation=self.operation,
            append_only=append_only,
            path=root,
        )
        for domain in self._domains:
            check_domain(protocol, domain, internal=domain in self._system_domains, path=root)
        if snap is not None and old_metadata is not None:
            self._check_enablements(protocol, metadata, old_metadata, staged)
        return protocol, metadata

    def _check_enablements(self, protocol: Protocol, metadata: Metadata, old: Metadata, staged: dict[str, pa.Table]) -> None:
        """Turning on row tracking or adding constraints must hold for the existing data."""
        root = self.table.uri
        snap = self.read_snapshot
        assert snap is not None
        conf, old_conf = metadata.configuration, old.configuration
        removed = set(staged["remove"].column("path").to_pylist()) if staged["remove"].num_rows else set()
        if _bool(conf, "delta.enableRowTracking") and not _bool(old_conf, "delta.enableRowTracking"):
            adds = snap.add_actions()
            readded = set(staged["add"].column("path").to_pylist()) if staged["add"].num_rows else set()
            gone = pa.array(sorted(removed | readded), pa.string())
            kept = adds.filter(pc.invert(pc.is_in(adds.column("path"), value_set=gone)))
            if kept.num_rows and kept.column("baseRowId").null_count:
                raise WriteRefusedError(
                    f"cannot enable row tracking on {root}: {kept.column('baseRowId').null_count} active files have no baseRowId "
                    "(re-commit them with row ids first)",
                    path=root,
                )
        new_rules = [r for r in constraint_rules(metadata) if r not in constraint_rules(old)]
        if not new_rules or snap.num_files == 0:
            return
        plan = snap.scan()
        if removed:
            keep = pc.invert(pc.is_in(plan.files.column("path"), value_set=pa.array(sorted(removed), pa.string())))
            plan = replace(plan, files=plan.files.filter(keep), partition_values=plan.partition_values.filter(keep))
        data = plan.to_arrow()
        for rule in new_rules:
            label = f"CHECK constraint {rule.name!r}" if rule.kind == "check" else f"invariant on {rule.name!r}"
            result = evaluate_sql(data, rule.expression, what=label)
            bad = pc.invert(pc.fill_null(result, False)) if len(result) else result
            n = int(pc.sum(bad.cast(pa.int64())).as_py() or 0) if len(result) else 0
            if n:
                raise WriteRefusedError(
                    f"cannot add {label} ({rule.expression}) to {root}: {n} existing rows violate it", path=root
                )

    # -- one attempt -----------------------------------------------------------------------------------
    def _read_ict(self) -> int | None:
        """The commit time of the read version: in-commit timestamps must exceed it (also when
        they are being turned on, so time keeps increasing across the enablement)."""
        snap = self.read_snapshot
        if snap is None or not snap.has_metadata:
            return None
        try:
            return snap.timestamp_ms
        except DeltaExploreError:
            return None

    def _read_row_id_mark(self) -> int | None:
        snap = self.read_snapshot
        return snap.row_id_high_water_mark if snap is not None and snap.has_metadata else None

    def _prepare(
        self, version: int, now: int, rebase: _Rebase, staged: dict[str, pa.Table], protocol: Protocol, metadata: Metadata
    ) -> tuple[list[str], dict[str, Any], Metadata, pa.Table, int | None]:
        conf = metadata.configuration
        ict = None
        ict_on = feature_enabled(protocol, "inCommitTimestamp") and _bool(conf, "delta.enableInCommitTimestamps")
        if ict_on:
            ict = now if rebase.last_ict is None else max(now, rebase.last_ict + 1)
        write_md = self._metadata
        old_md = self.read_snapshot.metadata if self.read_snapshot is not None and self.read_snapshot.has_metadata else None
        if ict_on and old_md is not None and not _bool(old_md.configuration, "delta.enableInCommitTimestamps"):
            # Turned on after creation: record where in-commit timestamps start.
            extra = {
                "delta.inCommitTimestampEnablementVersion": str(version),
                "delta.inCommitTimestampEnablementTimestamp": str(ict),
            }
            write_md = replace(metadata, configuration={**conf, **extra})
        adds = staged["add"]
        domains = dict(self._domains)
        tags: dict[str, str] = {}
        if feature_enabled(protocol, "rowTracking"):
            adds, mark = _assign_row_ids(adds, version, rebase.row_id_high_water_mark)
            if mark is not None and mark != rebase.row_id_high_water_mark:
                domains[ROW_TRACKING_DOMAIN] = DomainMetadata(
                    ROW_TRACKING_DOMAIN, json.dumps({"rowIdHighWaterMark": mark}, separators=(",", ":"))
                )
                self._system_domains.add(ROW_TRACKING_DOMAIN)
            if _bool(conf, "delta.enableRowTracking"):
                tags["delta.rowTracking.preserved"] = "false" if staged["remove"].num_rows else "true"
        info = self._commit_info(now, ict, adds, staged["remove"], tags)
        lines = [action_line("commitInfo", info)]
        if self._protocol is not None and (self.read_snapshot is None or self._protocol != self.read_snapshot.protocol):
            lines.append(action_line("protocol", self._protocol.to_json()))
        if write_md is not None:
            lines.append(action_line("metaData", write_md.to_json()))
        for app_id, app_version in sorted(self._app_txns.items()):
            lines.append(action_line("txn", {"appId": app_id, "version": app_version, "lastUpdated": now}))
        for domain, dm in sorted(domains.items()):
            lines.append(
                action_line("domainMetadata", {"domain": domain, "configuration": dm.configuration, "removed": dm.removed})
            )
        lines += action_lines("remove", staged["remove"])
        lines += action_lines("add", adds)
        lines += action_lines("cdc", staged["cdc"])
        self._last_domains = domains
        return lines, info, write_md or metadata, adds, ict

    def _blind_append(self, adds: pa.Table, removes: pa.Table) -> bool:
        """Adds data without reading the table or changing its metadata (`isBlindAppend`)."""
        return (
            removes.num_rows == 0
            and not self._reads.predicates
            and not self._reads.paths
            and not self._reads.whole_table
            and self._metadata is None
            and (adds.num_rows == 0 or bool(pc.all(adds.column("dataChange")).as_py()))
        )

    def _commit_info(self, now: int, ict: int | None, adds: pa.Table, removes: pa.Table, tags: dict[str, str]) -> dict[str, Any]:
        blind = self._blind_append(adds, removes)
        metrics = dict(self.metrics)
        if adds.num_rows or removes.num_rows:
            metrics.setdefault("numAddedFiles", adds.num_rows)
            metrics.setdefault("numRemovedFiles", removes.num_rows)
            metrics.setdefault("numAddedBytes", int(pc.sum(adds.column("size")).as_py() or 0) if adds.num_rows else 0)
            metrics.setdefault("numRemovedBytes", int(pc.sum(removes.column("size")).as_py() or 0) if removes.num_rows else 0)
            if adds.num_rows:
                rows = num_records(adds)
                if rows.null_count == 0:
                    metrics.setdefault("numOutputRows", int(pc.sum(rows).as_py() or 0))
        info: dict[str, Any] = {"timestamp": ict if ict is not None else now}
        if ict is not None:
            info = {"inCommitTimestamp": ict, **info}
        info.update(
            {
                "operation": self.operation,
                "operationParameters": {k: v if isinstance(v, str) else json.dumps(v) for k, v in self.parameters.items()},
                "isolationLevel": self.isolation,
                "isBlindAppend": blind,
                "operationMetrics": {k: str(v) for k, v in metrics.items()},
                "engineInfo": engine_info(),
                "txnId": self.txn_id,
            }
        )
        if self.read_version >= 0:
            info["readVersion"] = self.read_version
        if self.user_metadata is not None:
            info["userMetadata"] = self.user_metadata
        if tags:
            info["tags"] = tags
        return info

    def _put(self, version: int, content: bytes) -> str | None:
        """Create the commit; the path written, or None when the version is taken."""
        storage = self.table.storage
        protocol = self.protocol
        if protocol is not None and protocol.has(*CATALOG_FEATURES):
            catalog = self.table.catalog
            assert catalog is not None
            try:
                catalog.commit(self.table.uri, version, content, storage)
            except CommitConflictError:
                return None
            return f"<catalog {type(catalog).__name__} version {version}>"
        name = commit_name(version)
        try:
            created = storage.put_if_absent(name, content)
        except OSError as exc:
            raise StorageError(f"cannot create {name} under {storage.root}: {exc}", path=name) from exc
        return name if created else None


def _backoff(attempt: int) -> float:
    """Seconds to wait after the `attempt`-th lost race: uniform in [0, min(max, base * 2^n))."""
    return random.uniform(0.0, min(BACKOFF_MAX_S, BACKOFF_BASE_S * 2.0 ** min(attempt - 1, 30)))


def _concat(kind: str, tables: list[pa.Table]) -> pa.Table:
    if not tables:
        return file_actions_table(kind, None)
    return pa.concat_tables(tables) if len(tables) > 1 else tables[0]


def _append_only(protocol: Protocol | None, metadata: Metadata) -> bool:
    return protocol is not None and feature_enabled(protocol, "appendOnly") and _bool(metadata.configuration, "delta.appendOnly")


def _last_ict(winners: list[WinningCommit], previous: int | None) -> int | None:
    for w in reversed(winners):
        if w.in_commit_timestamp is not None:
            return w.in_commit_timestamp
    return previous


def _max_mark(winners: list[WinningCommit], previous: int | None) -> int | None:
    marks = [m for m in (w.row_id_high_water_mark for w in winners) if m is not None]
    if previous is not None:
        marks.append(previous)
    return max(marks) if marks else None


def _assign_row_ids(adds: pa.Table, version: int, mark: int | None) -> tuple[pa.Table, int | None]:
    """Fresh `baseRowId`s above the high-water mark and `defaultRowCommitVersion = version` for
    adds without them; returns the adds and the new high-water mark."""
    if adds.num_rows == 0:
        return adds, mark
    base = adds.column("baseRowId").combine_chunks()
    fresh = pc.is_null(base)
    if pc.any(fresh).as_py():
        counts = num_records(adds.filter(fresh))
        if counts.null_count:
            raise WriteRefusedError("row tracking: every new file needs stats.numRecords to get row ids")
        n = counts.to_numpy(zero_copy_only=False).astype(np.int64)
        start = (mark if mark is not None else -1) + 1
        starts = start + np.concatenate([[0], np.cumsum(n)[:-1]]) if len(n) else np.zeros(0, np.int64)
        new_base = pc.replace_with_mask(base, fresh, pa.array(starts, pa.int64()))
        adds = adds.set_column(adds.column_names.index("baseRowId"), "baseRowId", new_base)
        mark = int(start + n.sum() - 1) if n.sum() else mark
    cv = adds.column("defaultRowCommitVersion").combine_chunks()
    if cv.null_count:
        cv = pc.fill_null(cv, pa.scalar(version, pa.int64()))
        adds = adds.set_column(adds.column_names.index("defaultRowCommitVersion"), "defaultRowCommitVersion", cv)
    return adds, mark
