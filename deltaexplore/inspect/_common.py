"""Shared helpers of the inspection layer: resolving snapshots, vectorized column helpers."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.log.replay import dv_unique_id
from deltaexplore.core.snapshot import Snapshot
from deltaexplore.core.table import Table
from deltaexplore.errors import DeltaExploreError

__all__ = [
    "InspectError",
    "conform",
    "dv_cardinality",
    "file_partitions",
    "live_rows",
    "remember",
    "snapshot_cache",
    "snapshot_of",
    "table_of",
]


class InspectError(DeltaExploreError, ValueError):
    """An inspection was asked something it cannot answer (bad argument, unknown column, ...)."""


_CACHE_ATTR = "_deltaexplore_inspect_cache"


def table_cache(table: Table) -> dict[str, Any]:
    """A per-table dict for inspection caches, stored on the table object itself so that it is
    freed with the table (a module-level weak mapping would be kept alive by its values, which
    reference the table)."""
    cache = table.__dict__.get(_CACHE_ATTR)
    if cache is None:
        cache = {}
        table.__dict__[_CACHE_ATTR] = cache
    return cache


def table_of(obj: Table | Snapshot) -> Table:
    """The `Table` of a table or snapshot."""
    if isinstance(obj, Snapshot) and isinstance(obj.table, Table):
        return obj.table
    if isinstance(obj, Table):
        return obj
    raise InspectError(f"expected a deltaexplore Table or Snapshot, got {type(obj).__name__}")


#: snapshots of other versions than the latest kept per table (the explorer's current and
#: previous versions: moving back and forth, or diffing them, replays nothing)
RECENT_SNAPSHOTS = 2


def remember(snapshot: Snapshot) -> Snapshot:
    """Keep `snapshot` among its table's recent snapshots (`snapshot_of` returns it for its version)."""
    from collections import OrderedDict

    recent = table_cache(table_of(snapshot)).setdefault("recent", OrderedDict())
    recent[snapshot.version] = snapshot
    recent.move_to_end(snapshot.version)
    while len(recent) > RECENT_SNAPSHOTS:
        recent.popitem(last=False)
    return snapshot


def snapshot_cache(snapshot: Snapshot) -> dict[Any, Any]:
    """A per-snapshot dict for results computed from it alone (snapshots are immutable: such a
    result never goes stale); freed with the snapshot."""
    cache = snapshot.__dict__.get(_CACHE_ATTR)
    if cache is None:
        cache = {}
        snapshot.__dict__[_CACHE_ATTR] = cache
    return cache


def file_partitions(snapshot: Snapshot) -> pa.Array:
    """`col=value/...` of every active file of `snapshot`, in add-action order (kept per
    snapshot: files, overview and layout share it)."""
    from deltaexplore.core.scan.partition_values import partition_keys

    cache = snapshot_cache(snapshot)
    if "partition_keys" not in cache:
        cache["partition_keys"] = partition_keys(snapshot, snapshot.add_actions())
    keys: pa.Array = cache["partition_keys"]
    return keys


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


def conform(columns: dict[str, Any], schema: pa.Schema) -> pa.Table:
    """A table with exactly `schema` from arrays/lists (missing columns are null). Chunked
    columns stay chunked (a snapshot's paths or stats are hundreds of MB at 1M files: no copy)."""
    n = None
    for v in columns.values():
        if v is not None:
            n = len(v)
            break
    n = n or 0
    arrays = []
    for f in schema:
        value = columns.get(f.name)
        if value is None:
            arrays.append(pa.nulls(n, f.type))
            continue
        if not isinstance(value, (pa.Array, pa.ChunkedArray)):
            value = pa.array(value, f.type)
        if value.type != f.type:
            value = value.cast(f.type)
        arrays.append(value)
    return pa.Table.from_arrays(arrays, schema=schema)


def sorted_rows(table: pa.Table, keys: list[tuple[str, str]]) -> pa.Table:
    """`table.sort_by(keys)` (stable, nulls last), ordered by polars' multithreaded sort: for a
    few hundred thousand rows with a string key, a quarter of Arrow's time."""
    import polars as pl

    names = [k for k, _ in keys]
    frame = pl.from_arrow(table.select(names))
    assert isinstance(frame, pl.DataFrame)
    order = (
        frame.with_row_index("__row")
        .sort(names, descending=[d == "descending" for _, d in keys], nulls_last=True, maintain_order=True)
        .get_column("__row")
    )
    return table.take(order.to_arrow())


def combined(col: pa.Array | pa.ChunkedArray) -> pa.Array:
    return col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col


def dv_cardinality(adds: pa.Table) -> pa.Array:
    """Rows deleted per add (0 where there is no deletion vector)."""
    n = adds.num_rows
    if n == 0:
        return pa.array([], pa.int64())
    dv = combined(adds.column("deletionVector"))
    if dv.null_count == n:
        return pa.array(np.zeros(n, dtype=np.int64))
    card = pc.fill_null(dv.field("cardinality").cast(pa.int64()), 0)
    if dv.null_count:
        card = pc.if_else(pc.is_valid(dv), card, 0)
    return card


def dv_ids(adds: pa.Table) -> pa.Array:
    """Deletion vector unique id per add (null without DV)."""
    return dv_unique_id(combined(adds.column("deletionVector"))).cast(pa.string())


def live_rows(num_records: pa.Array, deleted: pa.Array) -> pa.Array:
    return pc.subtract(num_records, deleted)


def relative_to_root(paths: pa.Array, root: str) -> pa.Array:
    """Absolute paths (or `file:` URIs) under the table root made table-relative; others unchanged."""
    if len(paths) == 0:
        return paths
    out = paths
    if pc.any(pc.fill_null(pc.starts_with(out, "file:"), False)).as_py():
        out = _strip_file_scheme(out)
    prefix = root.rstrip("/") + "/"
    under = pc.fill_null(pc.starts_with(out, prefix), False)
    if pc.any(under).as_py():
        out = pc.if_else(under, pc.utf8_slice_codeunits(out, len(prefix)), out)
    return out


def _strip_file_scheme(paths: pa.Array) -> pa.Array:
    """`file:///a/b`, `file:/a/b`, `file://localhost/a/b` -> `/a/b`."""
    out = pc.replace_substring_regex(paths, "^file://localhost/", "/")
    out = pc.replace_substring_regex(out, "^file:///", "/")
    return pc.replace_substring_regex(out, "^file:/", "/")


def to_ts(values: Any) -> pa.Array:
    """int64 milliseconds -> timestamp[ms, UTC]."""
    arr = values if isinstance(values, pa.Array) else pa.array(values, pa.int64())
    return pc.cast(arr.cast(pa.int64()), pa.timestamp("ms", tz="UTC"))
