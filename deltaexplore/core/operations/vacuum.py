"""VACUUM: delete data files no retained version of the table needs.

`plan_vacuum` (shared with Spark) lists every file under the table root and keeps:

- the files of the latest version and their deletion vector files;
- the files of remove tombstones younger than the retention (versions inside the retention
  window may still be time-travelled to), with their DV files;
- every file a commit inside the retention window mentions (adds, removes, change data);
- anything modified after the cut-off (a concurrent writer may be about to commit it);
- `_delta_log/` and hidden files and directories (`.`/`_` prefixes, except partition
  directories and `_change_data`).

The rest is eligible. The retention defaults to `delta.deletedFileRetentionDuration` (7 days);
a shorter one is refused unless `enforce_retention_duration=False`. The whole protocol (reader
and writer features: `vacuumProtocolCheck`) must be supported, catalog-managed tables are
refused, and `vacuum` defaults to a dry run. Only files under the root are ever deleted.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.arguments import number
from deltaexplore.core.log.json_log import read_log_files
from deltaexplore.core.operations.engine import VACUUM_METRICS, metrics_table, open_for_write
from deltaexplore.core.protocol.deletion_vectors import DeletionVectorDescriptor
from deltaexplore.core.protocol.features import check_writable
from deltaexplore.core.snapshot import CATALOG_FEATURES
from deltaexplore.errors import DeltaExploreError, InvalidCheckpointError, InvalidLogError, WriteRefusedError

if TYPE_CHECKING:
    from deltaexplore.core.log.catalog import CatalogClient
    from deltaexplore.core.snapshot import Snapshot
    from deltaexplore.core.table import Table
    from deltaexplore.storage import Storage

__all__ = [
    "VacuumPlan",
    "check_state_as_written",
    "list_vacuumable",
    "plan_vacuum",
    "relative_paths",
    "vacuum",
    "vacuum_partition_names",
    "vacuumable",
]

_TMP = re.compile(r"^\..+\.[0-9a-f]{32}\.tmp$")
#: the longest retention: what a long holds in milliseconds (some 290 million years)
MAX_RETENTION_HOURS = float(((1 << 63) - 1) // 3_600_000)


@dataclass
class VacuumPlan:
    """Files VACUUM would delete: `files` has path (table-relative), size, modification_time (ms)."""

    snapshot: Snapshot
    retention_ms: int
    cutoff_ms: int
    files: pa.Table
    num_kept: int

    def metrics(self, *, dry_run: bool) -> pa.Table:
        """The metrics row of this VACUUM (`VACUUM_METRICS`)."""
        paths = self.files.column("path").to_pylist()
        return metrics_table(
            {
                "operation": "VACUUM",
                "version": self.snapshot.version,
                "dry_run": dry_run,
                "retention_hours": self.retention_ms / 3_600_000,
                "num_files": len(paths),
                "num_bytes": int(pc.sum(self.files.column("size")).as_py() or 0) if paths else 0,
                "files": paths,
            },
            VACUUM_METRICS,
        )


def _relative(storage: Storage, raw: str | None) -> str | None:
    """The table-relative path of a log path (None when it points outside the table)."""
    if not raw:
        return None
    decoded = unquote(raw)
    if "://" not in decoded and not decoded.startswith("/"):
        return os.path.normpath(decoded).replace(os.sep, "/")
    try:
        location = storage.location(decoded)
        root = storage.location("").rstrip("/")
    except DeltaExploreError:
        return None
    if location.startswith(root + "/"):
        return location[len(root) + 1 :]
    return None


#: paths `_relative` would change: a scheme, absolute, percent-escaped, `.` / `..` / empty parts
_NOT_PLAIN = r"://|^/|%|(^|/)\.\.?(/|$)|//|/$|^$"


def relative_paths(storage: Storage, raw: pa.Array | pa.ChunkedArray) -> pa.Array:
    """`_relative` of every log path: the plain table-relative ones (most) as they are,
    vectorised; the others one by one (null where a path points outside the table)."""
    arr = raw.combine_chunks() if isinstance(raw, pa.ChunkedArray) else raw
    arr = arr.cast(pa.string())
    if len(arr) == 0:
        return arr
    odd = pc.fill_null(pc.match_substring_regex(arr, _NOT_PLAIN), True).to_numpy(zero_copy_only=False)
    if not odd.any():
        return arr
    fixed = pa.array([_relative(storage, x) for x in arr.filter(pa.array(odd)).to_pylist()], pa.string())
    return pc.replace_with_mask(arr, pa.array(odd), fixed)


def _dv_paths(storage: Storage, dvs: list[dict[str, Any] | None]) -> set[str]:
    out = set()
    for d in dvs:
        if not d:
            continue
        try:
            path = DeletionVectorDescriptor.from_dict(d).file_path()
        except DeltaExploreError:
            continue
        rel = _relative(storage, path) if path else None
        if rel:
            out.add(rel)
    return out


def vacuumable(paths: pa.Array | pa.ChunkedArray | list[str], partition_columns: Iterable[str] = ()) -> np.ndarray:
    """VACUUM's one rule of which table-relative paths it may delete (a bool per path).

    As Delta's `isHiddenDirectory`, applied to every part of the path: a part that starts with
    `.` or `_` hides the path (so nothing in `_delta_log/` or in hidden directories is ever
    touched), except `_change_data*`, `_delta_index*` and partition directories
    (`<partition column>=...`, see `vacuum_partition_names`); a part named `metadata` (the
    Iceberg metadata of UniForm tables) hides it too. Our own temporary files
    (`.<name>.<32 hex>.tmp`, left behind by a killed write) are not hidden: VACUUM removes them.
    """
    arr = pa.array(paths, pa.string()) if isinstance(paths, list) else paths
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    n = len(arr)
    if n == 0:
        return np.zeros(0, dtype=bool)
    parts = pc.split_pattern(arr.cast(pa.string()), "/")
    names = pc.list_flatten(parts)
    owner = pc.list_parent_indices(parts).to_numpy(zero_copy_only=False)
    exempt = "|".join(["_change_data", "_delta_index", *(re.escape(f"{c}=") for c in partition_columns if c)])
    hidden = pc.and_(
        pc.match_substring_regex(names, r"^[._]"),
        pc.invert(pc.match_substring_regex(names, f"^(?:{exempt})")),
    )
    hidden = pc.and_(hidden, pc.invert(pc.match_substring_regex(names, _TMP.pattern)))
    hidden = pc.or_(hidden, pc.equal(names, "metadata"))
    mask = pc.fill_null(hidden, True).to_numpy(zero_copy_only=False)
    if not mask.any():
        return np.ones(n, dtype=bool)
    return np.bincount(owner[mask], minlength=n) == 0


def plan_vacuum(
    table: Table,
    *,
    retention_hours: float | None = None,
    enforce_retention_duration: bool = True,
    now_ms: int | None = None,
) -> VacuumPlan:
    """Which files VACUUM deletes (see the module docstring). Nothing is deleted here.

    Raises:
        UnsupportedFeatureError: the table needs a reader or writer feature we do not support.
        WriteRefusedError: retention shorter than the table's, or a catalog-managed table.
    """
    snapshot = table.snapshot()
    root = table.uri
    check_writable(snapshot.protocol, path=root)  # the whole protocol, as vacuumProtocolCheck asks
    if snapshot.protocol.has(*CATALOG_FEATURES):
        raise WriteRefusedError(f"VACUUM of catalog-managed table {root} is not permitted by its catalog", path=root)
    config = snapshot.config
    default_ms = config.deleted_file_retention_ms
    # at most what a long holds in milliseconds (some 290 million years)
    retention_hours = number(retention_hours, "retention_hours", maximum=MAX_RETENTION_HOURS)
    retention = default_ms if retention_hours is None else int(retention_hours * 3_600_000)
    if retention < 0:
        raise WriteRefusedError(f"retention must not be negative, got {retention_hours} hours")
    if retention < default_ms and enforce_retention_duration:
        raise WriteRefusedError(
            f"VACUUM retention {retention / 3_600_000:g} hours is shorter than the table's "
            f"delta.deletedFileRetentionDuration ({default_ms / 3_600_000:g} hours): files a reader still needs could be "
            "deleted; pass enforce_retention_duration=False to force it",
            path=root,
        )
    now = now_ms if now_ms is not None else int(time.time() * 1000)
    cutoff = now - retention
    storage = table.storage
    keep: set[str] = set()
    adds = snapshot.add_actions()
    check_state_as_written(table, snapshot)
    kept = [relative_paths(storage, adds.column("path"))]  # a million paths: Arrow, not a set
    keep |= _dv_paths(storage, adds.column("deletionVector").to_pylist())
    tombs = snapshot.tombstones()
    if tombs.num_rows:
        young = tombs.filter(pc.fill_null(pc.greater_equal(tombs.column("deletionTimestamp"), cutoff), True))
        kept.append(relative_paths(storage, young.column("path")))
        keep |= _dv_paths(storage, young.column("deletionVector").to_pylist())
    keep |= _recent_commit_files(table, snapshot, cutoff)
    kept.append(pa.array(sorted(keep), pa.string()))
    every = pc.unique(pc.drop_null(pa.concat_arrays(kept)))
    every = every.filter(pc.not_equal(every, ""))
    listed = list_vacuumable(storage, vacuum_partition_names(snapshot))
    old = pc.fill_null(pc.less(listed.column("modification_time"), pa.scalar(cutoff, pa.int64())), False)
    unkept = pc.invert(pc.is_in(listed.column("path"), value_set=every))
    files = listed.filter(pc.and_(old, unkept))
    files = files.set_column(2, "modification_time", files.column("modification_time").cast(pa.timestamp("ms", tz="UTC")))
    return VacuumPlan(snapshot, retention, cutoff, files, len(every))


def check_state_as_written(table: Table, snapshot: Snapshot) -> None:
    """Before anything is deleted for it: the replayed state agrees with what the log recorded
    of it when it was written, where the log recorded it — the version's `.crc` (`numFiles`,
    `tableSizeBytes`) and `_last_checkpoint`'s `numOfAddFiles` for the checkpoint it names.
    A checkpoint that reads as fewer files than it was written with (a damaged or substituted
    file with the right shape) would otherwise make VACUUM delete live data. A `.crc` or
    `_last_checkpoint` that is itself unreadable checks nothing (neither is required).

    Raises:
        InvalidCheckpointError: the state rests on a checkpoint and disagrees (names it).
        InvalidLogError: the state (commits only) disagrees with its `.crc` (names it).
    """
    checkpoint = snapshot.segment.checkpoint
    problems: list[str] = []
    files: list[str] = []
    if snapshot.segment.crc is not None:
        bad = [r for r in snapshot.validate_crc().to_pylist() if r["field"] in ("numFiles", "tableSizeBytes") and not r["ok"]]
        if bad:
            problems += [f"{r['field']} {r['actual']} where {snapshot.segment.crc.path} says {r['expected']}" for r in bad]
            files.append(snapshot.segment.crc.path)
    hint = table.listing(refresh=False).last_checkpoint
    if checkpoint is not None and hint.usable and hint.version == checkpoint.version and hint.num_of_add_files is not None:
        at_checkpoint = snapshot if snapshot.version == checkpoint.version else table.snapshot(checkpoint.version)
        count = at_checkpoint.add_actions().num_rows
        if count != hint.num_of_add_files:
            recorded = hint.num_of_add_files
            problems.append(f"{count} files at version {checkpoint.version} where _delta_log/_last_checkpoint says {recorded}")
            files.append("_delta_log/_last_checkpoint")
    if not problems:
        return
    read_from = checkpoint.parts[0].path if checkpoint is not None else files[0]
    error = InvalidCheckpointError if checkpoint is not None else InvalidLogError
    raise error(
        f"VACUUM of {table.uri} refused: version {snapshot.version} as read"
        + (f" from checkpoint {read_from}" if checkpoint is not None else "")
        + f" does not match what the log recorded when it was written ({'; '.join(problems)}): "
        "a damaged or substituted log file would make live data look unreferenced; nothing was deleted",
        path=read_from,
    )


def vacuum_partition_names(snapshot: Snapshot) -> set[str]:
    """The names a partition directory of the table starts with (`<name>=`): the partition
    columns, and their physical names with column mapping."""
    names = set(snapshot.partition_columns)
    if snapshot.column_mapping_mode != "none":
        fields = [snapshot.schema.get(p) for p in snapshot.partition_columns]
        names |= {f.physical_name for f in fields if f is not None}
    return names


def list_vacuumable(storage: Storage, partition_columns: Iterable[str]) -> pa.Table:
    """The files VACUUM may consider (`Storage.list_tree` columns): the table listed without
    following directory symlinks or descending into hidden directories, filtered by
    `vacuumable`."""
    names = sorted(partition_columns)
    listed = storage.list_tree(skip_dir=lambda d: not bool(vacuumable([d], names)[0]))
    return listed.filter(pa.array(vacuumable(listed.column("path"), names))) if listed.num_rows else listed


def _recent_commit_files(table: Table, snapshot: Snapshot, cutoff: int) -> set[str]:
    """Every file path mentioned by commits at or after the cut-off (and the one before it)."""
    listing = table.listing(refresh=False)
    clock = snapshot.clock
    versions = sorted(v for v in listing.commits if v <= snapshot.version)
    recent = [v for v in versions if clock.timestamp(v) >= cutoff]
    if not recent:
        return set()
    first = versions.index(recent[0])
    if first > 0:
        recent.insert(0, versions[first - 1])
    files = [listing.commit(v) for v in recent]
    lines = read_log_files(table.storage, [f for f in files if f is not None], recent)
    storage = table.storage
    out: set[str] = set()
    for kind in ("add", "remove", "cdc"):
        t = lines.file_actions(kind)
        out |= {p for p in (_relative(storage, x) for x in t.column("path").to_pylist()) if p}
        if "deletionVector" in t.column_names:
            out |= _dv_paths(storage, t.column("deletionVector").to_pylist())
    return out


def vacuum(
    table: Table | str | os.PathLike[str],
    *,
    retention_hours: float | None = None,
    dry_run: bool = True,
    enforce_retention_duration: bool = True,
    storage_options: dict[str, Any] | None = None,
    catalog: CatalogClient | None = None,
) -> pa.Table:
    """Delete files no retained version needs (dry run by default).

    Returns:
        One row: operation, version (the snapshot vacuumed), dry_run, retention_hours,
        num_files and num_bytes (deleted, or that would be), files (their paths).
    """
    t = open_for_write(table, storage_options, catalog)
    plan = plan_vacuum(t, retention_hours=retention_hours, enforce_retention_duration=enforce_retention_duration)
    paths = plan.files.column("path").to_pylist()
    if not dry_run:
        for path in paths:
            t.storage.delete(path)
    return plan.metrics(dry_run=dry_run)
