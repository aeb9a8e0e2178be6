"""Delta types as Spark types: the logical schema users see and the physical one files use.

Under column mapping the physical schema uses physical names (mode ``name``) or carries parquet
field ids (mode ``id``, Spark's ``parquet.field.id`` field metadata); variant columns are given
as ``struct<metadata: binary, value: binary>`` (what the core gives; `native_variant` asks for
Spark's VARIANT, which a scan of shredded files reads), geo types as WKB binary, interval types
(protocol_rfcs/interval-types.md) as Spark's ANSI intervals. PySpark 4 cannot hand a
YearMonthIntervalType column to Python (`toArrow()`, `collect()`): cast it in Spark first
(`CAST(CAST(c AS INTERVAL MONTH) AS INT)` for months).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from deltaexplore.core.protocol.features import FEATURES
from deltaexplore.core.protocol.schema import (
    ArrayType,
    DataType,
    DecimalType,
    MapType,
    PrimitiveType,
    StructField,
    StructType,
)
from deltaexplore.errors import DeltaProtocolError, UnsupportedFeatureError

if TYPE_CHECKING:
    from pyspark.sql import types as T

__all__ = ["delta_type_from_spark", "spark_field", "spark_schema", "spark_type", "sql_type"]

SPARK_FIELD_ID = "parquet.field.id"


def spark_type(t: DataType, *, mode: str | None = None, native_variant: bool = False) -> T.DataType:
    """The Spark type of a Delta type; with `mode` ("name"/"id") nested fields are physical;
    with `native_variant` a variant is Spark's VARIANT (which rebuilds shredded values when it
    reads a file), else ``struct<metadata, value>``."""
    from pyspark.sql import types as T

    if isinstance(t, PrimitiveType):
        name = t.name
        simple = {
            "string": T.StringType(),
            "long": T.LongType(),
            "integer": T.IntegerType(),
            "short": T.ShortType(),
            "byte": T.ByteType(),
            "float": T.FloatType(),
            "double": T.DoubleType(),
            "boolean": T.BooleanType(),
            "binary": T.BinaryType(),
            "date": T.DateType(),
            "timestamp": T.TimestampType(),
            "timestamp_ntz": T.TimestampNTZType(),
            "void": T.NullType(),
        }
        if name in simple:
            return simple[name]
        if name == "variant":
            if native_variant:
                return T.VariantType()
            return T.StructType([T.StructField("metadata", T.BinaryType(), True), T.StructField("value", T.BinaryType(), True)])
        if name.startswith(("geometry", "geography")):
            return T.BinaryType()
        if name.startswith(("char", "varchar")):
            return T.StringType()
        if name in ("timestamp_nanos", "timestamp_ntz_nanos"):
            raise UnsupportedFeatureError(
                f"column type {name!r} (table feature 'timestampNanos', {FEATURES['timestampNanos'].rfc}) cannot be read "
                "with Spark, which has no nanosecond timestamps: read it with the local reader (snapshot.to_arrow())",
                feature="timestampNanos",
                needed_by="readers",
            )
        # protocol_rfcs/interval-types.md: stored as Spark stores its ANSI intervals (INT32
        # months, INT64 microseconds), so Spark's parquet reader reads them as these types
        if name == "interval year to month":
            return T.YearMonthIntervalType(T.YearMonthIntervalType.YEAR, T.YearMonthIntervalType.MONTH)
        if name == "interval day to second":
            return T.DayTimeIntervalType(T.DayTimeIntervalType.DAY, T.DayTimeIntervalType.SECOND)
        raise DeltaProtocolError(f"data type {name!r} cannot be read with Spark by deltaexplore")
    if isinstance(t, DecimalType):
        if t.precision > 38:
            raise DeltaProtocolError(f"{t.name} exceeds Spark's maximum decimal precision (38)")
        return T.DecimalType(t.precision, t.scale)
    nv = native_variant
    if isinstance(t, ArrayType):
        return T.ArrayType(spark_type(t.element_type, mode=mode, native_variant=nv), t.contains_null)
    if isinstance(t, MapType):
        key, value = spark_type(t.key_type, mode=mode, native_variant=nv), spark_type(t.value_type, mode=mode, native_variant=nv)
        return T.MapType(key, value, t.value_contains_null)
    return T.StructType([spark_field(f, mode=mode, native_variant=nv) for f in t.fields])


_SQL_NAMES = {
    "string": "STRING",
    "long": "BIGINT",
    "integer": "INT",
    "short": "SMALLINT",
    "byte": "TINYINT",
    "float": "FLOAT",
    "double": "DOUBLE",
    "boolean": "BOOLEAN",
    "binary": "BINARY",
    "date": "DATE",
    "timestamp": "TIMESTAMP_LTZ",  # not TIMESTAMP: spark.sql.timestampType may make that NTZ
    "timestamp_ntz": "TIMESTAMP_NTZ",
    "void": "VOID",
    "variant": "STRUCT<`metadata`: BINARY, `value`: BINARY>",
    "interval year to month": "INTERVAL YEAR TO MONTH",
    "interval day to second": "INTERVAL DAY TO SECOND",
}


def sql_type(t: DataType, *, native_variant: bool = False) -> str | None:
    """Spark SQL text of `spark_type(t)` (logical names), or None where text cannot say it
    exactly (a nested field, element or value that is not nullable)."""
    if isinstance(t, PrimitiveType):
        if t.name == "variant" and native_variant:
            return "VARIANT"
        if t.name in _SQL_NAMES:
            return _SQL_NAMES[t.name]
        if t.name.startswith(("geometry", "geography")):
            return "BINARY"
        if t.name.startswith(("char", "varchar")):
            return "STRING"
        return None
    if isinstance(t, DecimalType):
        return f"DECIMAL({t.precision},{t.scale})" if t.precision <= 38 else None
    if isinstance(t, ArrayType):
        element = sql_type(t.element_type, native_variant=native_variant)
        return f"ARRAY<{element}>" if element is not None and t.contains_null else None
    if isinstance(t, MapType):
        key, value = sql_type(t.key_type, native_variant=native_variant), sql_type(t.value_type, native_variant=native_variant)
        return f"MAP<{key}, {value}>" if key is not None and value is not None and t.value_contains_null else None
    fields = []
    for f in t.fields:
        inner = sql_type(f.type, native_variant=native_variant)
        if inner is None:
            return None
        fields.append(f"{quoted(f.name)}: {inner}")
    return f"STRUCT<{', '.join(fields)}>"


def quoted(name: str) -> str:
    """`name` as a Spark SQL identifier."""
    return f"`{name.replace('`', '``')}`"


def spark_field(f: StructField, *, mode: str | None = None, native_variant: bool = False) -> T.StructField:
    """A Spark field: logical (mode None/"none") or physical (name/id mode, with field ids)."""
    from pyspark.sql import types as T

    physical = mode in ("name", "id")
    name = f.physical_name if physical else f.name
    metadata: dict[str, Any] = {}
    if mode == "id" and f.field_id is not None:
        metadata[SPARK_FIELD_ID] = f.field_id
    return T.StructField(name, spark_type(f.type, mode=mode, native_variant=native_variant), True, metadata)


def spark_schema(fields: list[StructField], *, mode: str | None = None) -> T.StructType:
    from pyspark.sql import types as T

    return T.StructType([spark_field(f, mode=mode) for f in fields])


def delta_type_from_spark(t: T.DataType) -> DataType:
    """The Delta type of a Spark type (for writes).

    Raises:
        DeltaProtocolError: a Spark type Delta cannot store (intervals, ...).
    """
    from pyspark.sql import types as T

    simple: list[tuple[type, str]] = [
        (T.StringType, "string"),
        (T.LongType, "long"),
        (T.IntegerType, "integer"),
        (T.ShortType, "short"),
        (T.ByteType, "byte"),
        (T.FloatType, "float"),
        (T.DoubleType, "double"),
        (T.BooleanType, "boolean"),
        (T.BinaryType, "binary"),
        (T.DateType, "date"),
        (T.TimestampNTZType, "timestamp_ntz"),
        (T.TimestampType, "timestamp"),
        (T.NullType, "void"),
    ]
    for cls, name in simple:
        if type(t) is cls:
            return PrimitiveType(name)
    if isinstance(t, (T.CharType, T.VarcharType)):
        return PrimitiveType("string")
    if isinstance(t, T.DecimalType):
        return DecimalType(t.precision, t.scale)
    if isinstance(t, T.ArrayType):
        return ArrayType(delta_type_from_spark(t.elementType), t.containsNull)
    if isinstance(t, T.MapType):
        return MapType(delta_type_from_spark(t.keyType), delta_type_from_spark(t.valueType), t.valueContainsNull)
    if isinstance(t, T.StructType):
        return StructType(tuple(StructField(f.name, delta_type_from_spark(f.dataType), f.nullable, {}) for f in t.fields))
    raise DeltaProtocolError(f"Spark type {t.simpleString()} cannot be stored in a Delta table")
