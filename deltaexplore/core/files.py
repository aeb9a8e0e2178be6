"""`Snapshot.files()`: the active logical files as a flat, typed Arrow table.

Schema (one row per logical file):

| column | type | meaning |
|---|---|---|
| path | string | the add action's path, as written in the log |
| size | int64 | bytes of the data file |
| modification_time | timestamp[ms, UTC] | when the file was written |
| data_change | bool | the add's dataChange flag |
| partition_values | map<string, string> | logical partition column -> serialized value |
| num_records | int64 | rows in the data file (from stats; null without stats) |
| stats | string | raw statistics JSON |
| storage_type, path_or_inline, offset, size_in_bytes, cardinality | | deletion vector descriptor (null: no DV) |
| base_row_id, default_row_commit_version | int64 | row tracking fields |
| tags | map<string, string> | the add's tags |
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.arrow import from_pylist
from deltaexplore.core.log.state import TableState
from deltaexplore.core.protocol.actions import STRING_MAP
from deltaexplore.core.scan.partition_values import physical_partition_names
from deltaexplore.core.scan.stats import num_records

__all__ = ["FILES_SCHEMA", "format_files", "translate_map_keys"]

FILES_SCHEMA = pa.schema(
    [
        pa.field("path", pa.string()),
        pa.field("size", pa.int64()),
        pa.field("modification_time", pa.timestamp("ms", tz="UTC")),
        pa.field("data_change", pa.bool_()),
        pa.field("partition_values", STRING_MAP),
        pa.field("num_records", pa.int64()),
        pa.field("stats", pa.string()),
        pa.field("storage_type", pa.string()),
        pa.field("path_or_inline", pa.string()),
        pa.field("offset", pa.int32()),
        pa.field("size_in_bytes", pa.int32()),
        pa.field("cardinality", pa.int64()),
        pa.field("base_row_id", pa.int64()),
        pa.field("default_row_commit_version", pa.int64()),
        pa.field("tags", STRING_MAP),
    ]
)


def translate_map_keys(maps: pa.Array | pa.ChunkedArray, mapping: dict[str, str]) -> pa.Array | pa.ChunkedArray:
    """Rename the keys of a map<string,string> column (physical -> logical names)."""
    if not mapping or len(maps) == 0:
        return maps
    if isinstance(maps, pa.ChunkedArray):
        maps = maps.combine_chunks()
    keys = maps.keys.cast(pa.string())
    src = from_pylist(list(mapping.keys()), pa.string())
    dst = from_pylist(list(mapping.values()), pa.string())
    idx = pc.index_in(keys, value_set=src)
    renamed = pc.coalesce(dst.take(idx), keys)
    mask = maps.is_null() if maps.null_count else None
    return pa.MapArray.from_arrays(maps.offsets, renamed, maps.items.cast(pa.string()), type=STRING_MAP, mask=mask)


def format_files(snapshot: TableState) -> pa.Table:
    """`Snapshot.files()`: the active add actions as a flat table (`FILES_SCHEMA`)."""
    adds = snapshot.add_actions()
    dv = adds.column("deletionVector")

    def dv_field(name: str, typ: pa.DataType) -> pa.ChunkedArray:
        return pc.cast(pc.struct_field(dv, name), typ) if len(dv) else pa.chunked_array([], typ)

    logical = {physical: name for name, physical in physical_partition_names(snapshot).items() if physical != name}
    pv = translate_map_keys(adds.column("partitionValues"), logical)
    columns = [
        adds.column("path"),
        adds.column("size"),
        pc.cast(adds.column("modificationTime"), pa.timestamp("ms", tz="UTC")),
        adds.column("dataChange"),
        pv,
        num_records(adds),
        adds.column("stats"),
        dv_field("storageType", pa.string()),
        dv_field("pathOrInlineDv", pa.string()),
        dv_field("offset", pa.int32()),
        dv_field("sizeInBytes", pa.int32()),
        dv_field("cardinality", pa.int64()),
        adds.column("baseRowId"),
        adds.column("defaultRowCommitVersion"),
        adds.column("tags"),
    ]
    columns = [c if c.type == f.type or pa.types.is_map(f.type) else pc.cast(c, f.type) for c, f in zip(columns, FILES_SCHEMA)]
    schema = pa.schema([f.with_type(c.type) if pa.types.is_map(f.type) else f for c, f in zip(columns, FILES_SCHEMA)])
    return pa.Table.from_arrays(columns, schema=schema)
