"""Columns derived per active file from a snapshot's add actions: partition keys, rows deleted
by a deletion vector, deletion vector ids."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.arrow import combined
from deltaexplore.core.log.replay import dv_unique_id
from deltaexplore.core.scan.partition_values import partition_keys
from deltaexplore.core.snapshot import Snapshot
from deltaexplore.inspect.snapshots import snapshot_cache

__all__ = ["dv_cardinality", "dv_ids", "file_partitions"]


def file_partitions(snapshot: Snapshot) -> pa.Array:
    """`col=value/...` of every active file of `snapshot`, in add-action order (kept per
    snapshot: files, overview and layout share it)."""
    cache = snapshot_cache(snapshot)
    if "partition_keys" not in cache:
        cache["partition_keys"] = partition_keys(snapshot, snapshot.add_actions())
    keys: pa.Array = cache["partition_keys"]
    return keys


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
