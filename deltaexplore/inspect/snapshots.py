"""Which snapshot an inspection reads, and the caches kept on tables and snapshots.

`snapshot_of` resolves a table or snapshot (and a version) to a snapshot, replaying the log
once per table version: the latest snapshot and the last `RECENT_SNAPSHOTS` others are kept on
the table object. Results computed from one snapshot alone go into `snapshot_cache`.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from deltaexplore.core.snapshot import Snapshot
from deltaexplore.core.table import Table
from deltaexplore.inspect.errors import InspectError

__all__ = ["RECENT_SNAPSHOTS", "remember", "snapshot_cache", "snapshot_of", "table_cache", "table_of"]

_CACHE_ATTR = "_deltaexplore_inspect_cache"

#: snapshots of other versions than the latest kept per table (the explorer's current and
#: previous versions: moving back and forth, or diffing them, replays nothing)
RECENT_SNAPSHOTS = 2


def table_cache(table: Table) -> dict[str, Any]:
    """A per-table dict for inspection caches, stored on the table object itself so that it is
    freed with the table (a module-level weak mapping would be kept alive by its values, which
    reference the table)."""
    cache = table.__dict__.get(_CACHE_ATTR)
    if cache is None:
        cache = {}
        table.__dict__[_CACHE_ATTR] = cache
    return cache


def snapshot_cache(snapshot: Snapshot) -> dict[Any, Any]:
    """A per-snapshot dict for results computed from it alone (snapshots are immutable: such a
    result never goes stale); freed with the snapshot."""
    cache = snapshot.__dict__.get(_CACHE_ATTR)
    if cache is None:
        cache = {}
        snapshot.__dict__[_CACHE_ATTR] = cache
    return cache


def table_of(obj: Table | Snapshot) -> Table:
    """The `Table` of a table or snapshot."""
    if isinstance(obj, Snapshot) and isinstance(obj.table, Table):
        return obj.table
    if isinstance(obj, Table):
        return obj
    raise InspectError(f"expected a deltaexplore Table or Snapshot, got {type(obj).__name__}")


def remember(snapshot: Snapshot) -> Snapshot:
    """Keep `snapshot` among its table's recent snapshots (`snapshot_of` returns it for its version)."""
    recent = table_cache(table_of(snapshot)).setdefault("recent", OrderedDict())
    recent[snapshot.version] = snapshot
    recent.move_to_end(snapshot.version)
    while len(recent) > RECENT_SNAPSHOTS:
        recent.popitem(last=False)
    return snapshot


def snapshot_of(obj: Table | Snapshot, version: int | None = None) -> Snapshot:
    """A snapshot: `obj` itself, the table at `version`, or the table's latest version.

    The latest snapshot of a table is cached (per table object) while the table does not move,
    so `table.inspect.files()` then `table.inspect.layout(...)` replay the log once; so are the
    last `RECENT_SNAPSHOTS` other versions asked for (see `remember`).
    """
    if isinstance(obj, Snapshot):
        if version is None or version == obj.version:
            return obj
        return snapshot_of(table_of(obj), version)
    table = table_of(obj)
    if version is not None:
        cached = table_cache(table).get("latest")
        if cached is not None and cached.version == version:
            return cached
        recent = table_cache(table).get("recent")
        if recent is not None and version in recent:
            recent.move_to_end(version)
            return recent[version]
        return remember(table.snapshot(version))
    cached = table_cache(table).get("latest")
    if cached is not None and cached.version == table.latest_version():
        return cached
    snap = table.snapshot()
    table_cache(table)["latest"] = snap
    return snap
