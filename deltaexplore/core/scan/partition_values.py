"""The partition values of add actions: typed columns (`partition_table`) and one key per file
(`partition_keys`: ``col=value/col2=value2``, what inspection shows and OPTIMIZE groups by).

The log's map holds the values as strings under the columns' physical names (under column
mapping; logical names otherwise, and some writers use logical names anyway: when a physical key
is absent everywhere the logical one is read). As the protocol says, an empty string and a
missing key are null; a null value is written `__HIVE_DEFAULT_PARTITION__` in a key.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.log.state import TableState
from deltaexplore.core.protocol.partitions import HIVE_NULL, map_column_values, parse_partition_column, uniform_map_values
from deltaexplore.errors import DeltaExploreError, InvalidLogError

__all__ = ["partition_groups", "partition_keys", "partition_table", "physical_partition_names"]


def physical_partition_names(snapshot: TableState) -> dict[str, str]:
    """logical -> physical name of each partition column (empty without column mapping)."""
    if snapshot.column_mapping_mode == "none":
        return {}
    try:
        schema = snapshot.schema
    except DeltaExploreError:  # a schemaless table still lists its files
        return {}
    out = {}
    for name in snapshot.partition_columns:
        f = schema.get(name)
        if f is not None:
            out[name] = f.physical_name
    return out


def _raw_values(maps: pa.Array, name: str, key: str) -> pa.Array:
    """The strings of one partition column (its physical `key`, else its logical `name`)."""
    raw = map_column_values(maps, key)
    if key != name and len(raw) and raw.null_count == len(raw):
        raw = map_column_values(maps, name)
    return raw


def partition_table(snapshot: TableState, adds: pa.Table) -> pa.Table:
    """Typed partition values of each add (logical column names)."""
    schema = snapshot.schema
    maps = adds.column("partitionValues").combine_chunks()
    physical = physical_partition_names(snapshot)
    cols = {}
    for name in snapshot.partition_columns:
        f = schema.get(name)
        if f is None:
            raise InvalidLogError(f"partition column {name!r} is not in the schema of {snapshot.uri}")
        cols[f.name] = parse_partition_column(_raw_values(maps, name, physical.get(name, name)), f.type, column=f.name)
    return pa.table(cols) if cols else pa.table({"__n": pa.nulls(adds.num_rows)}).drop_columns(["__n"])


def partition_keys(snapshot: TableState, adds: pa.Table) -> pa.Array:
    """`col=value/col2=value2` per add (logical names, partition order; '' when unpartitioned;
    null and empty values as `__HIVE_DEFAULT_PARTITION__`)."""
    n = adds.num_rows
    cols = snapshot.partition_columns
    if not cols:
        return pa.repeat(pa.scalar("", pa.string()), n)
    maps = adds.column("partitionValues")
    maps = maps.combine_chunks() if isinstance(maps, pa.ChunkedArray) else maps
    physical = physical_partition_names(snapshot)
    uniform = uniform_map_values(maps, [physical.get(c, c) for c in cols])
    pieces = []
    for i, name in enumerate(cols):
        if uniform is not None:
            values = uniform[i]
        else:
            values = _raw_values(maps, name, physical.get(name, name)) if n else pa.array([], pa.string())
        if len(cols) == 1:
            # one column: the text of each distinct value once, then gathered (a million
            # files share a few hundred partitions)
            values = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
            encoded = pc.dictionary_encode(values, null_encoding="encode")
            return _hive_pair(name, encoded.dictionary).take(encoded.indices)
        pieces.append(_hive_pair(name, values))
    return pc.binary_join_element_wise(*pieces, "/")


def _hive_pair(name: str, values: pa.Array) -> pa.Array:
    """`name=value` per value (null and empty values as Hive's default partition)."""
    values = pc.fill_null(values, HIVE_NULL)
    values = pc.if_else(pc.equal(values, ""), HIVE_NULL, values)
    return pc.binary_join_element_wise(pa.scalar(name), values, "=")


def partition_groups(snapshot: TableState, adds: pa.Table) -> np.ndarray:
    """A group id per add, equal for adds of the same partition (the ids of `partition_keys`)."""
    keys = partition_keys(snapshot, adds)
    return pc.dictionary_encode(keys).indices.to_numpy(zero_copy_only=False).astype(np.int64)
