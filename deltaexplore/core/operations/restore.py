"""RESTORE a table to an earlier version (or timestamp), and CHECKPOINT / log cleanup on demand.

`restore_actions` (shared with Spark) compares the current state with the target version by
logical file key `(path, DV id)`: files only in the target are re-added (keeping their row
tracking fields, so restored rows get their stable ids back), files only in the current version
are removed. Re-added files (and their DV files) must still exist: a version whose files were
vacuumed cannot be restored. The target's metadata comes back; the protocol never goes down.
"""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.log.catalog import CatalogClient
from deltaexplore.core.log.replay import dv_unique_id
from deltaexplore.core.operations.engine import (
    CHECKPOINT_METRICS,
    RESTORE_METRICS,
    OperationRun,
    metrics_table,
    open_for_write,
    total_bytes,
)
from deltaexplore.core.protocol.deletion_vectors import DeletionVectorDescriptor
from deltaexplore.core.scan.data_file import resolve_data_path
from deltaexplore.core.snapshot import Snapshot
from deltaexplore.core.table import Table
from deltaexplore.core.write.action_rules import protocol_for
from deltaexplore.core.write.checkpoint_writer import checkpoint_tables, write_checkpoint
from deltaexplore.core.write.log_cleanup import cleanup_log
from deltaexplore.errors import WriteRefusedError

__all__ = ["RestorePlan", "checkpoint", "cleanup_metadata", "restore", "restore_actions"]


@dataclass
class RestorePlan:
    current: Snapshot
    target: Snapshot
    to_add: pa.Table
    to_remove: pa.Table


def _keys(adds: pa.Table) -> pa.Array:
    path = adds.column("path").combine_chunks().cast(pa.string())
    dv = pc.fill_null(dv_unique_id(adds.column("deletionVector").combine_chunks()).cast(pa.string()), "")
    return pc.binary_join_element_wise(path, dv, "\x00")


def restore_actions(current: Snapshot, target: Snapshot, *, check_files: bool = True) -> RestorePlan:
    """Which files a restore of `target` re-adds and removes (see the module docstring).

    Raises:
        WriteRefusedError: a file to re-add (or its DV) no longer exists.
    """
    cur, tgt = current.add_actions(), target.add_actions()
    cur_keys, tgt_keys = _keys(cur), _keys(tgt)
    to_add = tgt.filter(pc.invert(pc.is_in(tgt_keys, value_set=cur_keys))) if tgt.num_rows else tgt
    to_remove = cur.filter(pc.invert(pc.is_in(cur_keys, value_set=tgt_keys))) if cur.num_rows else cur
    if check_files and to_add.num_rows:
        storage = current.storage
        missing = []
        for path, dv in zip(to_add.column("path").to_pylist(), to_add.column("deletionVector").to_pylist()):
            if not storage.exists(resolve_data_path(storage, path)):
                missing.append(path)
            elif dv:
                dv_path = DeletionVectorDescriptor.from_dict(dv).file_path()
                if dv_path and not storage.exists(dv_path):
                    missing.append(dv_path)
            if len(missing) >= 5:
                break
        if missing:
            raise WriteRefusedError(
                f"cannot restore {current.table.uri} to version {target.version}: files it needs are gone "
                f"(vacuumed?): {', '.join(missing)}",
                path=current.table.uri,
            )
    if "stats_parsed" in to_add.column_names:
        to_add = to_add.drop_columns(["stats_parsed"])
    return RestorePlan(current, target, to_add, to_remove)


def restore(
    table: Table | str | os.PathLike[str],
    *,
    version: int | None = None,
    timestamp: str | dt.datetime | int | None = None,
    dry_run: bool = False,
    storage_options: dict[str, Any] | None = None,
    catalog: CatalogClient | None = None,
    max_retries: int = 10,
) -> pa.Table:
    """Make the latest version equal to `version` (or the version at `timestamp`).

    Returns:
        One row of metrics: operation, version (null for a dry run / no-op), restored_version,
        dry_run, num_restored_files, num_removed_files, restored_files_size, removed_files_size,
        table_size_after_restore, num_files_after_restore.
    """
    if (version is None) == (timestamp is None):
        raise WriteRefusedError("restore needs exactly one of version or timestamp")
    t = open_for_write(table, storage_options, catalog)
    current = t.snapshot()
    target = t.snapshot(version) if version is not None else t.snapshot(timestamp=timestamp)
    plan = restore_actions(current, target)
    after = target.add_actions()
    metrics: dict[str, Any] = {
        "restored_version": target.version,
        "num_restored_files": plan.to_add.num_rows,
        "num_removed_files": plan.to_remove.num_rows,
        "restored_files_size": total_bytes(plan.to_add),
        "removed_files_size": total_bytes(plan.to_remove),
        "table_size_after_restore": total_bytes(after),
        "num_files_after_restore": after.num_rows,
    }
    params = {"version": str(target.version)} if version is not None else {"timestamp": str(timestamp)}
    with OperationRun.start(
        t, "RESTORE", RESTORE_METRICS, read_snapshot=current, parameters=params, dry_run=dry_run, metrics=metrics
    ) as op:
        same_md = target.metadata == current.metadata
        if dry_run or (not plan.to_add.num_rows and not plan.to_remove.num_rows and same_md):
            return op.result()
        txn = op.txn
        txn.read_whole_table()
        if not same_md:
            txn.update_metadata(target.metadata)
            protocol = protocol_for(target.metadata, current.protocol)
            if protocol != current.protocol:
                txn.update_protocol(protocol)
        if plan.to_remove.num_rows:
            txn.remove_files(plan.to_remove)
        if plan.to_add.num_rows:
            adds = plan.to_add.set_column(
                plan.to_add.column_names.index("dataChange"), "dataChange", pa.array(np.ones(plan.to_add.num_rows, dtype=bool))
            )
            txn.add_files(adds)
        txn.metrics.update(
            {
                "numRestoredFiles": plan.to_add.num_rows,
                "numRemovedFiles": plan.to_remove.num_rows,
                "restoredFilesSize": metrics["restored_files_size"],
                "removedFilesSize": metrics["removed_files_size"],
                "tableSizeAfterRestore": metrics["table_size_after_restore"],
                "numOfFilesAfterRestore": metrics["num_files_after_restore"],
            }
        )
        return op.commit(max_retries=max_retries)


def checkpoint(
    table: Table | str | os.PathLike[str],
    *,
    version: int | None = None,
    kind: str = "auto",
    dry_run: bool = False,
    storage_options: dict[str, Any] | None = None,
    catalog: CatalogClient | None = None,
) -> pa.Table:
    """Write a checkpoint of `version` (default latest) now.

    Returns:
        One row: operation, version, dry_run, kind, path, num_actions, num_add_files,
        size_in_bytes, written (False when that checkpoint already existed).
    """
    t = open_for_write(table, storage_options, catalog)
    snap = t.snapshot(version)
    if dry_run:
        actions = checkpoint_tables(snap)
        n = 2 + len(actions.txns) + len(actions.domains) + len(actions.adds) + len(actions.removes)
        values = {"version": snap.version, "kind": kind, "path": None, "num_actions": n, "num_add_files": len(actions.adds)}
        values |= {"size_in_bytes": None, "written": False}
    else:
        r = write_checkpoint(snap, kind=kind)
        values = {"version": r.version, "kind": r.kind, "path": r.path, "num_actions": r.num_actions}
        values |= {"num_add_files": r.num_add_files, "size_in_bytes": r.size_in_bytes, "written": r.written}
    return metrics_table({"operation": "CHECKPOINT", "dry_run": dry_run, **values}, CHECKPOINT_METRICS)


def cleanup_metadata(
    table: Table | str | os.PathLike[str],
    *,
    dry_run: bool = False,
    storage_options: dict[str, Any] | None = None,
    catalog: CatalogClient | None = None,
) -> pa.Table:
    """Delete expired log files now (see `core.log_cleanup`)."""
    return cleanup_log(open_for_write(table, storage_options, catalog), dry_run=dry_run)
