"""Which columns carry file statistics, where they sit in the stats JSON, and their values' types.

A stats column is a leaf (through structs) that is not a partition column, an array, a map or
a binary/variant/void/interval/nanosecond-timestamp value. Its values sit under its physical names in `minValues`,
`maxValues` and `nullCount`; temporal values are written as JSON strings. Both ways of reading
stats (`stats_parse`, `stats_search`) start from these definitions.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.protocol.partitions import parse_timestamp
from deltaexplore.core.protocol.schema import ArrayType, MapType, StructField, StructType, leaf_paths, to_arrow_type

__all__ = ["StatsColumn", "physical_path", "stats_columns", "typed_values"]

#: no min/max to read: binaries and voids; variants (their bounds are variant objects keyed by
#: JSON path, read by `stats_parse.variant_stats`); intervals (the RFC forbids skipping on them);
#: nanosecond timestamps (their stats' truncation is not specified yet)
_SKIP_TYPES = (
    "binary",
    "variant",
    "void",
    "interval year to month",
    "interval day to second",
    "timestamp_nanos",
    "timestamp_ntz_nanos",
)


class StatsColumn:
    """A leaf column that can carry stats: logical dotted name, physical path, type."""

    def __init__(self, logical: tuple[str, ...], physical: tuple[str, ...], field: StructField) -> None:
        self.logical = logical
        self.physical = physical
        self.field = field
        self.name = ".".join(logical)
        self.arrow_type = to_arrow_type(field.type)

    @property
    def json_type(self) -> pa.DataType:
        """How the value appears in the stats JSON (strings for temporal types)."""
        name = self.field.type.name
        if name in ("timestamp", "timestamp_ntz", "date") or pa.types.is_timestamp(self.arrow_type):
            return pa.string()
        return self.arrow_type


def stats_columns(
    schema: StructType, mode: str, partition_columns: list[str], names: list[str] | None = None
) -> list[StatsColumn]:
    """Leaf columns (through structs) that may have stats, optionally only `names`."""
    out = []
    parts = {p.lower() for p in partition_columns}
    for logical, f in leaf_paths(schema):
        if len(logical) == 1 and logical[0].lower() in parts:
            continue
        if isinstance(f.type, (ArrayType, MapType)) or f.type.name in _SKIP_TYPES:
            continue
        physical = physical_path(schema, logical, mode)
        col = StatsColumn(logical, physical, f)
        if names is None or col.name in names or logical[0] in names:
            out.append(col)
    return out


def physical_path(schema: StructType, logical: tuple[str, ...], mode: str) -> tuple[str, ...]:
    """The physical names along a logical column path (unchanged without column mapping)."""
    if mode == "none":
        return logical
    out = []
    current: Any = schema
    for part in logical:
        f = current.field(part)
        out.append(f.physical_name)
        current = f.type
    return tuple(out)


def typed_values(arr: pa.Array | None, col: StatsColumn, n: int) -> pa.Array:
    """`arr` (as read from the stats, or None: all null) cast to the column's type; values that
    do not convert become null (a bound that cannot be read is no bound)."""
    target = col.arrow_type
    if arr is None:
        return pa.nulls(n, target)
    if arr.type == target:
        return arr
    try:
        if pa.types.is_string(arr.type) and pa.types.is_timestamp(target):
            return parse_timestamp(arr, target.tz is not None)
        if pa.types.is_string(arr.type) and pa.types.is_date(target):
            return pc.cast(pc.utf8_slice_codeunits(arr, 0, 10), target)
        return arr.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError):
        return pa.nulls(n, target)
