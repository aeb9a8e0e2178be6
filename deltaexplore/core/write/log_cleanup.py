"""Metadata cleanup: delete log files that no retained version needs.

The spec's rule, with `delta.logRetentionDuration` (default 30 days): the cut-off commit is the
newest commit at or before now - retention; the cut-off checkpoint is the newest complete
checkpoint not newer than it. Everything before the cut-off checkpoint is deleted: commits,
checkpoints (all parts), version checksum files, log compaction files starting at or before it,
staged commits up to it, sidecars no retained checkpoint references, and temporary files left by
crashed writers. Without such a checkpoint nothing is deleted. Files are deleted oldest first,
so an interrupted cleanup leaves a valid log.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import pyarrow as pa

from deltaexplore.core.log.checkpoint_reader import CheckpointReader
from deltaexplore.core.log.file_names import LOG_DIR, SIDECAR_DIR, STAGED_DIR, parse_log_file
from deltaexplore.core.log.segment import LogListing
from deltaexplore.core.table import Table
from deltaexplore.errors import DeltaExploreError
from deltaexplore.storage import FileInfo

__all__ = ["TEMP_FILE_GRACE_MS", "CleanupPlan", "cleanup_log", "plan_log_cleanup", "stale_temp_files"]

#: a temporary file older than this is a killed writer's (a commit or checkpoint writes its
#: temporary file and renames or links it within seconds)
TEMP_FILE_GRACE_MS = 3_600_000


@dataclass
class CleanupPlan:
    """What a cleanup deletes. `checkpoint_version` is the cut-off checkpoint (None: nothing)."""

    cutoff_ms: int
    cutoff_version: int | None
    checkpoint_version: int | None
    files: list[str] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)


def plan_log_cleanup(table: Table, *, now_ms: int | None = None, retention_ms: int | None = None) -> CleanupPlan:
    """Which log files the spec's cleanup rule deletes (nothing is deleted here)."""
    now = now_ms if now_ms is not None else int(time.time() * 1000)
    snapshot = table.snapshot()
    listing = table.listing(refresh=False)
    retention = retention_ms if retention_ms is not None else snapshot.config.log_retention_ms
    cutoff = now - retention
    clock = snapshot.clock
    published = sorted(listing.commits)
    cutoff_version = None
    for v in published:
        try:
            ts = clock.timestamp(v)
        except DeltaExploreError:
            ts = listing.commits[v].modification_time
        if ts <= cutoff:
            cutoff_version = v
        else:
            break
    plan = CleanupPlan(cutoff, cutoff_version, None)
    for tmp in stale_temp_files(table, now):  # whatever the cut-off: nothing reads them
        plan.files.append(tmp.path)
        plan.sizes.append(tmp.size)
    if cutoff_version is None:
        return plan
    candidates = sorted(v for v in listing.checkpoints if v <= cutoff_version)
    if not candidates:
        return plan
    cp = candidates[-1]
    try:  # the checkpoint we keep must be readable before anything older goes
        for c in listing.checkpoints[cp][:1]:
            reader = CheckpointReader(table.storage, c)
            reader.non_file_actions()
            for sc in reader.sidecar_files():
                if not table.storage.exists(sc.path):
                    return plan
    except DeltaExploreError:
        return plan
    plan.checkpoint_version = cp
    doomed: list[tuple[int, str, int]] = []
    for v, f in listing.commits.items():
        if v < cp:
            doomed.append((v, f.path, f.size))
    for v, cps in listing.checkpoints.items():
        if v < cp:
            for c in cps:
                doomed.extend((v, p.path, p.size) for p in c.parts)
    for v, f in listing.crcs.items():
        if v < cp:
            doomed.append((v, f.path, f.size))
    for f in listing.compactions:
        if f.version <= cp:
            doomed.append((f.version, f.path, f.size))
    storage = table.storage
    try:
        staged = storage.list_dir(STAGED_DIR)
    except FileNotFoundError:
        staged = []
    for info in staged:
        parsed = parse_log_file(info)
        if parsed is not None and parsed.version <= cp:
            doomed.append((parsed.version, info.path, info.size))
    doomed.extend(_orphan_sidecars(table, listing, cp, cutoff))
    doomed.sort(key=lambda d: (d[0], d[1]))
    seen = set(plan.files)
    for _, path, size in doomed:
        if path not in seen:
            seen.add(path)
            plan.files.append(path)
            plan.sizes.append(size)
    return plan


def stale_temp_files(table: Table, now_ms: int, *, listing: LogListing | None = None) -> list[FileInfo]:
    """Temporary files (`.<name>.tmp`) in `_delta_log/` and `_delta_log/_sidecars/` older
    than `TEMP_FILE_GRACE_MS`: what a killed writer left behind (a live one renames or deletes
    its own within seconds). With `listing`, `_delta_log/` is taken from it (no new listing)
    and `_sidecars/` is not looked at."""
    cutoff = now_ms - TEMP_FILE_GRACE_MS
    if listing is not None:
        infos = list(listing.temp_files)
    else:
        infos = []
        for sub in (LOG_DIR, SIDECAR_DIR):
            try:
                infos += [i for i in table.storage.list_dir(sub) if i.name.startswith(".") and i.name.endswith(".tmp")]
            except FileNotFoundError:
                continue
    return [i for i in infos if i.modification_time < cutoff]


def _orphan_sidecars(table: Table, listing: object, cp: int, cutoff: int) -> list[tuple[int, str, int]]:
    storage = table.storage
    try:
        infos = storage.list_dir(SIDECAR_DIR)
    except FileNotFoundError:
        return []
    if not infos:
        return []
    referenced: set[str] = set()
    for v, cps in listing.checkpoints.items():  # type: ignore[attr-defined]
        if v < cp:
            continue
        for c in cps:
            if c.kind.startswith("v2") or c.kind == "classic":
                try:
                    referenced |= {sc.path for sc in CheckpointReader(storage, c).sidecar_files()}
                except DeltaExploreError:
                    return []  # cannot tell which sidecars are in use: keep them all
    # a `_sidecars` directory that leads out of the table (a symlink) is not ours to clean
    return [
        (-1, i.path, i.size)
        for i in infos
        if i.path not in referenced and i.modification_time < cutoff and storage.contains(i.path)
    ]


def cleanup_log(table: Table, *, dry_run: bool = False, now_ms: int | None = None, retention_ms: int | None = None) -> pa.Table:
    """Delete expired log files (see the module docstring).

    Returns:
        One row: cutoff_ms, cutoff_version, checkpoint_version, num_files, num_bytes, dry_run,
        files (list of the log files deleted, or that would be with `dry_run`).
    """
    plan = plan_log_cleanup(table, now_ms=now_ms, retention_ms=retention_ms)
    if not dry_run:
        for path in plan.files:
            table.storage.delete(path)
    return pa.table(
        {
            "cutoff_ms": pa.array([plan.cutoff_ms], pa.int64()),
            "cutoff_version": pa.array([plan.cutoff_version], pa.int64()),
            "checkpoint_version": pa.array([plan.checkpoint_version], pa.int64()),
            "num_files": pa.array([len(plan.files)], pa.int64()),
            "num_bytes": pa.array([sum(plan.sizes)], pa.int64()),
            "dry_run": pa.array([dry_run]),
            "files": pa.array([plan.files], pa.list_(pa.string())),
        }
    )
