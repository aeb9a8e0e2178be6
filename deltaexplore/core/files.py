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

from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.actions import STRING_MAP

if TYPE_CHECKING:
    from deltaexplore.core.snapshot import Snapshot

__all__ = ["FILES_SCHEMA", "format_files", "num_records_of", "translate_map_keys"]

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


def num_records_of(adds: pa.Table) -> pa.Array:
    """numRecords of each add: from the stats JSON, else from `stats_parsed`."""
    stats = adds.column("stats").combine_chunks().cast(pa.string())
    if len(stats) == 0:
        return pa.array([], pa.int64())
    found = pc.extract_regex(stats, r'"numRecords"\s*:\s*(?P<n>-?\d+)').flatten()[0]
    out = pc.cast(found, pa.int64())
    if "stats_parsed" in adds.column_names and out.null_count:
        parsed = adds.column("stats_parsed").combine_chunks()
        if pa.types.is_struct(parsed.type) and parsed.type.get_field_index("numRecords") >= 0:
            nr = parsed.field("numRecords").cast(pa.int64())
            nr = pc.if_else(pc.is_valid(parsed), nr, pa.scalar(None, pa.int64()))
            out = pc.coalesce(out, nr)
    return out


def translate_map_keys(maps: pa.Array, mapping: dict[str, str]) -> pa.Array:
    """Rename the keys of a map<string,string> column (physical -> logical names)."""
    if isinstance(maps, pa.ChunkedArray):
        maps = maps.combine_chunks()
    if not mapping or len(maps) == 0:
        return maps
    keys = maps.keys.cast(pa.string())
    src = pa.array(list(mapping.keys()), pa.string())
    dst = pa.array(list(mapping.values()), pa.string())
    idx = pc.index_in(keys, value_set=src)
    renamed = pc.coalesce(dst.take(idx), keys)
    mask = maps.is_null() if maps.null_count else None
    return pa.MapArray.from_arrays(maps.offsets, renamed, maps.items.cast(pa.string()), type=STRING_MAP, mask=mask)


def partition_key_mapping(snapshot: Snapshot) -> dict[str, str]:
    """physical name -> logical name of the partition columns (empty without column mapping)."""
    if not snapshot.has_metadata or snapshot.column_mapping_mode == "none":
        return {}
    try:
        schema = snapshot.schema
    except Exception:  # noqa: BLE001 - a schemaless table still lists its files
        return {}
    out = {}
    for name in snapshot.partition_columns:
        f = schema.get(name)
        if f is not None and f.physical_name != name:
            out[f.physical_name] = f.name
    return out


def format_files(snapshot: Snapshot) -> pa.Table:
    adds = snapshot.add_actions()
    dv = adds.column("deletionVector").combine_chunks()
    n = adds.num_rows

    def dv_field(name: str, typ: pa.DataType) -> pa.Array:
        if n == 0:
            return pa.array([], typ)
        child = dv.field(name).cast(typ)
        return pc.if_else(pc.is_valid(dv), child, pa.scalar(None, typ)) if dv.null_count else child

    columns = {
        "path": adds.column("path").combine_chunks().cast(pa.string()),
        "size": adds.column("size"),
        "modification_time": pc.cast(adds.column("modificationTime"), pa.timestamp("ms", tz="UTC")),
        "data_change": adds.column("dataChange"),
        "partition_values": translate_map_keys(adds.column("partitionValues"), partition_key_mapping(snapshot)),
        "num_records": num_records_of(adds),
        "stats": adds.column("stats"),
        "storage_type": dv_field("storageType", pa.string()),
        "path_or_inline": dv_field("pathOrInlineDv", pa.string()),
        "offset": dv_field("offset", pa.int32()),
        "size_in_bytes": dv_field("sizeInBytes", pa.int32()),
        "cardinality": dv_field("cardinality", pa.int64()),
        "base_row_id": adds.column("baseRowId"),
        "default_row_commit_version": adds.column("defaultRowCommitVersion"),
        "tags": adds.column("tags"),
    }
    return pa.table(columns, schema=FILES_SCHEMA)
