"""What a snapshot holds, in a comparable form: two snapshots of a version are the same when these are.

Row order is not part of a table's state (a snapshot moved from another lists the rows it kept
first, then the rows it added): file lists are compared as sorted rows.
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

import deltaexplore as dx
from deltaexplore.core.protocol.actions import FILE_ACTION_FIELDS
from deltaexplore.errors import DeltaExploreError


def rows(table: pa.Table, columns: list[str] | None = None) -> list[dict[str, Any]]:
    """The rows of `table` (only `columns` when given), sorted."""
    if columns is not None:
        table = table.select([c for c in columns if c in table.column_names])
    return sorted(table.to_pylist(), key=lambda r: json.dumps(r, sort_keys=True, default=str))


def state(snapshot: dx.Snapshot) -> dict[str, Any]:
    """Everything a reader gets from a snapshot, comparable with `==`."""
    add_fields = [f.name for f in FILE_ACTION_FIELDS["add"]]
    return {
        "version": snapshot.version,
        "protocol": snapshot.protocol,
        "metadata": snapshot.metadata_or_none,
        "files": rows(snapshot.files()),
        "add_actions": rows(snapshot.add_actions(), add_fields),
        "tombstones": rows(snapshot.tombstones()),
        "txns": snapshot.txns(),
        "domains": snapshot.domain_metadata(),
        "row_id_high_water_mark": snapshot.row_id_high_water_mark,
        "timestamp_ms": snapshot.timestamp_ms,
        "checkpoint": snapshot.checkpoint_version,
        "json_files": [f.path for f in snapshot.segment.json_files],
        "crc": snapshot.segment.crc.path if snapshot.segment.crc else None,
    }


def cold_state(root: str, version: int, storage_options: dict[str, Any] | None = None) -> dict[str, Any] | str:
    """`state` of `version` read by a fresh `Table` (no snapshot to move from), or the name of
    the error reading it raises."""
    try:
        return state(dx.open_table(root, storage_options).snapshot(version=version))
    except DeltaExploreError as exc:
        return type(exc).__name__


def moved_state(table: dx.Table, version: int) -> tuple[dict[str, Any] | str, bool]:
    """`state` of `version` read through `table` (moved from what it keeps when cheaper), and
    whether it was moved (its files came replayed: a cold read replays them when first asked)."""
    try:
        snapshot = table.snapshot(version=version)
        moved = snapshot.files_loaded
        return state(snapshot), moved
    except DeltaExploreError as exc:
        return type(exc).__name__, False


def differences(a: dict[str, Any] | str, b: dict[str, Any] | str) -> list[str]:
    """The keys where two `state`s differ (or both errors / an error and a state)."""
    if isinstance(a, str) or isinstance(b, str):
        return [] if a == b else [f"{a if isinstance(a, str) else 'a state'} != {b if isinstance(b, str) else 'a state'}"]
    return [k for k in a if a[k] != b[k]]
