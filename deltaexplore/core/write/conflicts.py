"""Conflict detection for optimistic commits: can a transaction that lost the race for a version
still commit after the winners, or must it fail?

The rules follow the Delta spec and the reference implementation's `ConflictChecker`, in order:

1. a winner changed the protocol → conflict;
2. a winner changed the metadata → conflict (and our own metadata/protocol change conflicts
   with any winner that changed files);
3. a winner added data files that this transaction's reads (predicates or the whole table)
   would have seen → conflict (Serializable: every data-changing add; WriteSerializable:
   blind appends are ignored; a transaction that changes no data uses snapshot isolation);
4. a winner removed a file this transaction read or removes (read set, predicates, whole
   table) → conflict;
5. a winner recorded a `txn` for an application id this transaction depends on → conflict;
6. a winner wrote domain metadata for a domain this transaction writes → conflict (the
   `delta.rowTracking` domain is not a conflict: row ids are re-assigned on rebase).

Winning commits are read once per retry, as Arrow tables of their file actions.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.log.json_log import read_log_files
from deltaexplore.core.log.segment import LogListing
from deltaexplore.core.protocol.predicates import Expr
from deltaexplore.core.scan.plan import partition_table, prune_by_partitions, prune_by_stats
from deltaexplore.core.snapshot import Snapshot
from deltaexplore.errors import CommitConflictError, DeltaExploreError
from deltaexplore.storage import Storage

__all__ = ["ReadSet", "WinningCommit", "check_conflicts", "read_winning_commits"]

ROW_TRACKING_DOMAIN = "delta.rowTracking"


@dataclass
class WinningCommit:
    """What one concurrent (winning) commit did."""

    version: int
    commit_info: dict[str, Any] | None
    protocol: dict[str, Any] | None
    metadata: dict[str, Any] | None
    adds: pa.Table
    removes: pa.Table
    app_ids: set[str] = field(default_factory=set)
    domains: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def in_commit_timestamp(self) -> int | None:
        value = (self.commit_info or {}).get("inCommitTimestamp")
        try:
            return int(value) if value is not None else None
        except (TypeError, ValueError):
            return None

    @property
    def is_blind_append(self) -> bool:
        return bool((self.commit_info or {}).get("isBlindAppend", False))

    @property
    def operation(self) -> str:
        return str((self.commit_info or {}).get("operation", "unknown operation"))

    @property
    def row_id_high_water_mark(self) -> int | None:
        dom = self.domains.get(ROW_TRACKING_DOMAIN)
        if not dom:
            return None
        raw = dom.get("configuration")
        try:
            conf: Any = json.loads(raw) if isinstance(raw, str) else raw
            return int(conf["rowIdHighWaterMark"])
        except (ValueError, KeyError, TypeError, RecursionError):
            return None


def read_winning_commits(storage: Storage, listing: LogListing, start: int, end: int) -> list[WinningCommit]:
    """The commits `start..end` (inclusive) as `WinningCommit`s.

    Raises:
        CommitConflictError: a winning commit is missing from the listing (log cleaned up).
    """
    files = []
    for v in range(start, end + 1):
        f = listing.commit(v)
        if f is None:
            raise CommitConflictError(f"commit {v} won the race but is not in the log of {storage.root}; cannot check conflicts")
        files.append(f)
    if not files:
        return []
    lines = read_log_files(storage, files, list(range(start, end + 1)))
    out = {v: WinningCommit(v, None, None, None, _empty(), _empty()) for v in range(start, end + 1)}
    for _, v, body in lines.objects("commitInfo"):
        out[v].commit_info = body
    for _, v, body in lines.objects("protocol"):
        out[v].protocol = body
    for _, v, body in lines.objects("metaData"):
        out[v].metadata = body
    for _, v, body in lines.objects("txn"):
        out[v].app_ids.add(str(body.get("appId")))
    for _, v, body in lines.objects("domainMetadata"):
        out[v].domains[str(body.get("domain"))] = body
    adds = lines.file_actions("add")
    removes = lines.file_actions("remove")
    for v, commit in out.items():
        commit.adds = adds.filter(pc.equal(adds.column("version"), v))
        commit.removes = removes.filter(pc.equal(removes.column("version"), v))
    return [out[v] for v in sorted(out)]


def _empty() -> pa.Table:
    return pa.table({"path": pa.array([], pa.string())})


@dataclass
class ReadSet:
    """What a transaction read and depends on (for conflict detection)."""

    predicates: list[Expr] = field(default_factory=list)
    paths: set[str] = field(default_factory=set)
    whole_table: bool = False
    app_ids: set[str] = field(default_factory=set)
    domains: set[str] = field(default_factory=set)
    removed_paths: set[str] = field(default_factory=set)
    changes_metadata: bool = False
    changes_protocol: bool = False
    isolation: str = "Serializable"
    changes_data: bool = True


def _paths(t: pa.Table) -> list[str]:
    return t.column("path").to_pylist() if t.num_rows else []


def _matching(snapshot: Snapshot | None, files: pa.Table, predicates: list[Expr]) -> tuple[str, str] | None:
    """(file, predicate text) of the first file a predicate may match, else None."""
    if not files.num_rows or not predicates:
        return None
    if snapshot is None:
        return _paths(files)[0], str(predicates[0])
    for expr in predicates:
        try:
            parts = partition_table(snapshot, files)
            keep = prune_by_partitions(snapshot, expr, parts)
            if keep.any():
                keep_stats = prune_by_stats(snapshot, expr, files.filter(pa.array(keep)))
                idx = np.flatnonzero(keep)[np.asarray(keep_stats, dtype=bool)]
            else:
                idx = np.zeros(0, dtype=np.int64)
        except DeltaExploreError:
            idx = np.arange(files.num_rows)  # cannot prove the file irrelevant: assume it matches
        if len(idx):
            return files.column("path")[int(idx[0])].as_py(), repr(expr)
    return None


def check_conflicts(snapshot: Snapshot | None, mine: ReadSet, winner: WinningCommit, *, read_version: int, root: str) -> None:
    """Raise `CommitConflictError` when `winner` conflicts with a transaction that read
    `read_version` (see the module docstring for the rules).
    """

    def conflict(reason: str) -> CommitConflictError:
        return CommitConflictError(
            f"concurrent commit {winner.version} ({winner.operation}) conflicts with this transaction "
            f"(read version {read_version}) on {root}: {reason}; this transaction was not committed",
            path=root,
        )

    if winner.protocol is not None:
        raise conflict(f"it changed the protocol to {json.dumps(winner.protocol, sort_keys=True)}")
    if winner.metadata is not None:
        raise conflict("it changed the table metadata (schema, partitioning or properties)")
    winner_changes_files = winner.adds.num_rows > 0 or winner.removes.num_rows > 0
    if (mine.changes_metadata or mine.changes_protocol) and winner_changes_files:
        raise conflict("this transaction changes the table metadata or protocol and the winner changed files")
    if mine.changes_data and winner.adds.num_rows:
        added = winner.adds.filter(pc.fill_null(winner.adds.column("dataChange"), True))
        if mine.isolation == "WriteSerializable" and winner.is_blind_append:
            added = added.slice(0, 0)
        if added.num_rows:
            if mine.whole_table:
                raise conflict(
                    f"it added {added.num_rows} data files (e.g. {_paths(added)[0]}) to the table this transaction read"
                )
            hit = _matching(snapshot, added, mine.predicates)
            if hit is not None:
                raise conflict(f"it added file {hit[0]}, which matches this transaction's read predicate {hit[1]}")
    if winner.removes.num_rows:
        removed = set(_paths(winner.removes))
        both = sorted(removed & mine.removed_paths)
        if both:
            raise conflict(f"both transactions remove {both[0]}" + (f" and {len(both) - 1} more files" if len(both) > 1 else ""))
        read = sorted(removed & mine.paths)
        if read:
            raise conflict(f"it removed {read[0]}, which this transaction read")
        if mine.whole_table:
            raise conflict(f"it removed {len(removed)} files (e.g. {sorted(removed)[0]}) from the table this transaction read")
        if mine.changes_data or mine.removed_paths:
            hit = _matching(snapshot, winner.removes, mine.predicates)
            if hit is not None:
                raise conflict(f"it removed file {hit[0]}, which matches this transaction's read predicate {hit[1]}")
    apps = sorted(winner.app_ids & mine.app_ids)
    if apps:
        raise conflict(f"it recorded a transaction for application id {apps[0]!r}, which this transaction also depends on")
    domains = sorted((set(winner.domains) & mine.domains) - {ROW_TRACKING_DOMAIN})
    if domains:
        raise conflict(f"both transactions write metadata domain {domains[0]!r}")
