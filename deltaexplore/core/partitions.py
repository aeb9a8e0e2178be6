"""The old path of `deltaexplore.core.protocol.partitions`, kept for existing imports."""

from deltaexplore.core.protocol.partitions import (
    HIVE_NULL,
    map_column_values,
    parse_partition_column,
    parse_timestamp,
    serialize_partition_value,
    uniform_map_values,
)

__all__ = [
    "HIVE_NULL",
    "map_column_values",
    "parse_partition_column",
    "parse_timestamp",
    "serialize_partition_value",
    "uniform_map_values",
]
