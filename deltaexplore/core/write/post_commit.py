"""What happens after a commit succeeded: publishing (catalog-managed tables), the version
checksum file, a checkpoint every `delta.checkpointInterval` versions and expired log cleanup.

None of this may undo or fail the commit: errors are collected into
`CommitResult.post_commit_errors`.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.log.file_names import commit_name
from deltaexplore.core.log.replay import reconcile, superseded_by
from deltaexplore.core.protocol.actions import DomainMetadata, Metadata, Protocol, Txn
from deltaexplore.core.protocol.config import TableConfig
from deltaexplore.core.protocol.features import CATALOG_FEATURES
from deltaexplore.core.snapshot import Snapshot
from deltaexplore.core.table import Table
from deltaexplore.core.write.checkpoint_writer import write_checkpoint
from deltaexplore.core.write.crc_writer import checksum_after_commit, checksum_from_state, checksum_path, write_checksum
from deltaexplore.core.write.log_cleanup import cleanup_log, stale_temp_files
from deltaexplore.errors import DeltaExploreError

__all__ = ["CommittedVersion", "PostCommitReport", "publish_commits", "run_post_commit"]


@dataclass(frozen=True)
class CommittedVersion:
    """What the post-commit work needs to know of a commit that succeeded.

    Attributes:
        table: the table committed to.
        read_snapshot: the snapshot the transaction read (None for a new table).
        version: the version committed.
        protocol, metadata: the table's protocol and metadata after the commit.
        adds, removes: the commit's file actions (Arrow, log field names).
        ict: the in-commit timestamp, if any.
        rebased: whether other commits landed between the read and this one.
        txn_id: the transaction's id.
        app_txns: application id -> version set by the commit.
        domains: the domain metadata the commit set (removed domains included).
    """

    table: Table
    read_snapshot: Snapshot | None
    version: int
    protocol: Protocol
    metadata: Metadata
    adds: pa.Table
    removes: pa.Table
    ict: int | None
    rebased: bool
    txn_id: str
    app_txns: dict[str, int]
    domains: dict[str, DomainMetadata]


@dataclass(frozen=True)
class PostCommitReport:
    """What the post-commit work did: the checkpoint written, whether `<v>.crc` was, and the
    failures (the commit itself stands)."""

    checkpoint: str | None
    checksum_written: bool
    errors: tuple[str, ...]


def publish_commits(table: Table, up_to: int) -> list[int]:
    """Copy the catalog's ratified commits up to `up_to` into `_delta_log/<v>.json`, in order,
    then tell the catalog they are published. Returns the versions published by this call."""
    catalog = table.catalog
    if catalog is None:
        return []
    ratified = catalog.get_ratified_commits(table.uri, None, up_to)
    done = []
    for c in sorted(ratified.commits, key=lambda c: c.version):
        if c.version > up_to:
            break
        data = c.content if c.content is not None else table.storage.read_bytes(str(c.path))
        if table.storage.put_if_absent(commit_name(c.version), data):
            done.append(c.version)
    catalog.mark_published(table.uri, up_to)
    return done


def _with_line(t: pa.Table, start: int) -> pa.Table:
    return t.append_column("line", pa.array(np.arange(start, start + t.num_rows, dtype=np.int64)))


def _checksum(commit: CommittedVersion) -> dict[str, Any] | None:
    """The checksum of the committed version: from the state when the read snapshot's files are
    loaded (or the table is new), else incrementally from the previous version's checksum
    (after a rebase: the last winner's), else None."""
    snap = commit.read_snapshot
    protocol, metadata, adds, removes, ict = commit.protocol, commit.metadata, commit.adds, commit.removes, commit.ict
    if snap is None:
        txns, domains = _with_own(commit, {}, {})
        return checksum_from_state(protocol, metadata, adds, txns=txns, domains=domains, ict=ict, txn_id=commit.txn_id)
    previous = snap.crc if not commit.rebased else read_crc_file(commit.table.storage, commit.version - 1)
    if not commit.rebased and (snap.files_loaded or previous is None):
        # files already loaded (or no checksum to start from): the exact state
        txns, domains = _with_own(commit, dict(snap.txns()), dict(snap.domain_metadata()))
        state = state_after(snap.add_actions(), adds, removes)
        return checksum_from_state(protocol, metadata, state, txns=txns, domains=domains, ict=ict, txn_id=commit.txn_id)
    if previous is None:
        return None
    # A blind append, or a rebase: the conflict check guarantees our removes still exist.
    txns, domains = _with_own(commit, *_non_file_state(previous))
    return checksum_after_commit(
        previous, protocol, metadata, adds, removes, txns=txns, domains=domains, ict=ict, txn_id=commit.txn_id
    )


def read_crc_file(storage: Any, version: int) -> dict[str, Any] | None:
    try:
        obj = json.loads(storage.read_bytes(checksum_path(version)))
    except (FileNotFoundError, ValueError, RecursionError, DeltaExploreError):
        return None
    return obj if isinstance(obj, dict) else None


def _non_file_state(crc: dict[str, Any]) -> tuple[dict[str, Txn], dict[str, DomainMetadata]]:
    txns = {}
    for t in crc.get("setTransactions") or []:
        try:
            txn = Txn.from_json(t)
        except DeltaExploreError:
            continue
        txns[txn.app_id] = txn
    domains = {}
    for d in crc.get("domainMetadata") or []:
        try:
            dm = DomainMetadata.from_json(d)
        except DeltaExploreError:
            continue
        if not dm.removed:
            domains[dm.domain] = dm
    return txns, domains


def _with_own(
    commit: CommittedVersion, txns: dict[str, Txn], domains: dict[str, DomainMetadata]
) -> tuple[dict[str, Txn], dict[str, DomainMetadata]]:
    now = int(time.time() * 1000)
    for app_id, app_version in commit.app_txns.items():
        txns[app_id] = Txn(app_id, app_version, now)
    for name, dm in commit.domains.items():
        if dm.removed:
            domains.pop(name, None)
        else:
            domains[name] = dm
    return txns, domains


def state_after(active: pa.Table, adds: pa.Table, removes: pa.Table) -> pa.Table:
    """The active add actions after applying one commit's adds and removes to `active`."""
    json_adds, json_removes = _with_line(adds, removes.num_rows), _with_line(removes, 0)
    exclude = superseded_by(json_adds, json_removes)
    if exclude is not None:
        mask = exclude(active)
        if mask is not None:
            active = active.filter(pc.invert(mask))
    return reconcile(active, json_adds, json_removes, want="add")


def run_post_commit(commit: CommittedVersion) -> PostCommitReport:
    """Run the post-commit work for `commit` (see the module docstring)."""
    table, version, protocol, metadata = commit.table, commit.version, commit.protocol, commit.metadata
    errors: list[str] = []
    published = True
    if protocol.has(*CATALOG_FEATURES):
        try:
            publish_commits(table, version)
        except (DeltaExploreError, OSError) as exc:
            published = False
            errors.append(f"publishing commit {version}: {exc}")
    checksum_written = False
    try:
        obj = _checksum(commit)
        if obj is not None:
            checksum_written = write_checksum(table.storage, version, obj)
    except (DeltaExploreError, OSError) as exc:
        errors.append(f"checksum file for version {version}: {exc}")
    try:  # temporary files a killed writer left in the log (from the listing the commit read)
        listing = table.listing(refresh=False)
        for f in stale_temp_files(table, int(time.time() * 1000), listing=listing):
            table.storage.delete(f.path)
    except (DeltaExploreError, OSError) as exc:
        errors.append(f"removing temporary log files: {exc}")
    checkpoint = None
    config = TableConfig(protocol, metadata)
    if published and version > 0 and version % config.checkpoint_interval == 0:
        try:
            cp = write_checkpoint(table, version=version)
            checkpoint = cp.path
            if str(metadata.configuration.get("delta.enableExpiredLogCleanup", "true")).lower() != "false":
                cleanup_log(table, dry_run=False)
        except (DeltaExploreError, OSError) as exc:
            errors.append(f"checkpoint of version {version}: {exc}")
    return PostCommitReport(checkpoint, checksum_written, tuple(errors))
