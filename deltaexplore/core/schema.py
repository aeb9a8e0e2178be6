"""The old path of `deltaexplore.core.protocol.schema`, kept for existing imports."""

from deltaexplore.core.protocol.schema import (
    ArrayType,
    DataType,
    DecimalType,
    MapType,
    PrimitiveType,
    StructField,
    StructType,
    any_leaf,
    column_mapping_mode,
    parse_schema,
    to_arrow_type,
)

__all__ = [
    "ArrayType",
    "DataType",
    "DecimalType",
    "MapType",
    "PrimitiveType",
    "StructField",
    "StructType",
    "any_leaf",
    "column_mapping_mode",
    "parse_schema",
    "to_arrow_type",
]
