"""Schemas for writers: Arrow → Delta types, schema merging, column mapping ids and names.

A new table's schema comes from an Arrow schema (`schema_from_arrow`); a write with schema
evolution merges new columns into the table's schema (`merge_schemas`); under column mapping
every new (nested) column gets a fresh id above `delta.columnMapping.maxColumnId` and a
`col-<uuid>` physical name (`assign_column_mapping`).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import replace
from typing import Any

import pyarrow as pa

from deltaexplore.core.protocol.schema import (
    CM_ID,
    CM_PHYSICAL,
    ArrayType,
    DataType,
    DecimalType,
    MapType,
    PrimitiveType,
    StructField,
    StructType,
)
from deltaexplore.errors import WriteRefusedError

__all__ = [
    "assign_column_mapping",
    "delta_type_of",
    "max_column_id",
    "merge_schemas",
    "schema_from_arrow",
    "schema_json",
]

_SIMPLE: list[tuple[Any, str]] = [
    (pa.types.is_boolean, "boolean"),
    (pa.types.is_int8, "byte"),
    (pa.types.is_int16, "short"),
    (pa.types.is_int32, "integer"),
    (pa.types.is_int64, "long"),
    (pa.types.is_uint8, "short"),
    (pa.types.is_uint16, "integer"),
    (pa.types.is_uint32, "long"),
    (pa.types.is_float16, "float"),
    (pa.types.is_float32, "float"),
    (pa.types.is_float64, "double"),
    (pa.types.is_string, "string"),
    (pa.types.is_large_string, "string"),
    (pa.types.is_binary, "binary"),
    (pa.types.is_large_binary, "binary"),
    (pa.types.is_fixed_size_binary, "binary"),
    (pa.types.is_date, "date"),
]


def delta_type_of(t: pa.DataType, *, column: str = "") -> DataType:
    """The Delta type for an Arrow type (timestamps with a zone → `timestamp`, without → `timestamp_ntz`).

    Raises:
        WriteRefusedError: the Arrow type has no Delta equivalent (uint64, time, duration, ...).
    """
    if pa.types.is_dictionary(t):
        return delta_type_of(t.value_type, column=column)
    if hasattr(pa.types, "is_string_view") and (pa.types.is_string_view(t) or pa.types.is_binary_view(t)):
        return PrimitiveType("string" if pa.types.is_string_view(t) else "binary")
    for test, name in _SIMPLE:
        if test(t):
            return PrimitiveType(name)
    if pa.types.is_timestamp(t):
        return PrimitiveType("timestamp" if t.tz is not None else "timestamp_ntz")
    if pa.types.is_decimal(t):
        if t.precision > 38:
            raise WriteRefusedError(f"column {column!r}: decimal precision {t.precision} exceeds Delta's maximum of 38")
        return DecimalType(t.precision, t.scale)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return ArrayType(delta_type_of(t.value_type, column=f"{column}[]"), t.value_field.nullable)
    if pa.types.is_map(t):
        return MapType(
            delta_type_of(t.key_type, column=f"{column}{{key}}"),
            delta_type_of(t.item_type, column=f"{column}{{value}}"),
            t.item_field.nullable,
        )
    if pa.types.is_struct(t):
        return StructType(tuple(_field_of(f, prefix=f"{column}.") for f in t))
    raise WriteRefusedError(f"column {column!r}: Arrow type {t} has no Delta equivalent (expected numbers, strings, ...)")


def _field_of(f: pa.Field, *, prefix: str = "") -> StructField:
    return StructField(f.name, delta_type_of(f.type, column=prefix + f.name), f.nullable, {})


def schema_from_arrow(schema: pa.Schema) -> StructType:
    """A Delta schema for an Arrow schema (all columns nullable as Arrow says; no metadata)."""
    _check_unique([f.name for f in schema], "")
    return StructType(tuple(_field_of(f) for f in schema))


def _check_unique(names: list[str], where: str) -> None:
    seen: dict[str, str] = {}
    for n in names:
        key = n.lower()
        if key in seen:
            scope = f" in {where}" if where else ""
            raise WriteRefusedError(
                f"duplicate column names {seen[key]!r} and {n!r}{scope}: Delta column names are case-insensitive"
            )
        seen[key] = n


def schema_json(schema: StructType) -> str:
    """The compact `schemaString` of a schema."""
    return json.dumps(schema.to_json(), separators=(",", ":"))


def merge_schemas(table: StructType, incoming: StructType, *, where: str = "") -> StructType:
    """`table` with the columns of `incoming` it lacks appended (recursively in structs).

    Existing columns keep their type and metadata; new columns are nullable.

    Raises:
        WriteRefusedError: a column exists in both with incompatible types.
    """
    fields = list(table.fields)
    index = {f.name.lower(): i for i, f in enumerate(fields)}
    for f in incoming.fields:
        i = index.get(f.name.lower())
        name = f"{where}{f.name}"
        if i is None:
            fields.append(replace(f, nullable=True, metadata={}))
            index[f.name.lower()] = len(fields) - 1
            continue
        old = fields[i]
        fields[i] = replace(old, type=_merge_type(old.type, f.type, name))
    return StructType(tuple(fields))


def _merge_type(old: DataType, new: DataType, name: str) -> DataType:
    if isinstance(old, StructType) and isinstance(new, StructType):
        return merge_schemas(old, new, where=f"{name}.")
    if isinstance(old, ArrayType) and isinstance(new, ArrayType):
        return replace(old, element_type=_merge_type(old.element_type, new.element_type, f"{name}[]"))
    if isinstance(old, MapType) and isinstance(new, MapType):
        return replace(
            old,
            key_type=_merge_type(old.key_type, new.key_type, f"{name}{{key}}"),
            value_type=_merge_type(old.value_type, new.value_type, f"{name}{{value}}"),
        )
    if type(old) is not type(new) and not (isinstance(old, PrimitiveType) and isinstance(new, PrimitiveType)):
        raise WriteRefusedError(f"column {name!r} is {old} in the table but {new} in the data: cannot merge the schemas")
    return old


def max_column_id(schema: StructType) -> int:
    """The largest `delta.columnMapping.id` in the schema (0 when there is none)."""
    best = 0
    for f in _all_fields(schema):
        if f.field_id is not None:
            best = max(best, f.field_id)
    return best


def _all_fields(t: DataType) -> list[StructField]:
    out: list[StructField] = []
    if isinstance(t, StructType):
        for f in t.fields:
            out.append(f)
            out.extend(_all_fields(f.type))
    elif isinstance(t, ArrayType):
        out.extend(_all_fields(t.element_type))
    elif isinstance(t, MapType):
        out.extend(_all_fields(t.key_type))
        out.extend(_all_fields(t.value_type))
    return out


def assign_column_mapping(schema: StructType, max_id: int, *, keep_names: bool = False) -> tuple[StructType, int]:
    """Give every field without one a column id (above `max_id`) and a physical name.

    Physical names are `col-<uuid>`, or the logical name with `keep_names` (used when column
    mapping is turned on for a table whose files already use the logical names).

    Returns:
        The schema and the new maximum column id.
    """
    counter = [max(max_id, max_column_id(schema))]

    def visit_type(t: DataType) -> DataType:
        if isinstance(t, StructType):
            return StructType(tuple(visit_field(f) for f in t.fields))
        if isinstance(t, ArrayType):
            return replace(t, element_type=visit_type(t.element_type))
        if isinstance(t, MapType):
            return replace(t, key_type=visit_type(t.key_type), value_type=visit_type(t.value_type))
        return t

    def visit_field(f: StructField) -> StructField:
        meta = dict(f.metadata)
        if meta.get(CM_ID) is None:
            counter[0] += 1
            meta[CM_ID] = counter[0]
        if not meta.get(CM_PHYSICAL):
            meta[CM_PHYSICAL] = f.name if keep_names else f"col-{uuid.uuid4()}"
        return StructField(f.name, visit_type(f.type), f.nullable, meta)

    out = StructType(tuple(visit_field(f) for f in schema.fields))
    return out, counter[0]


def check_column_mapping(schema: StructType, max_id: int | None, *, path: str = "") -> None:
    """Under column mapping every field needs a unique id and a physical name; ids ≤ maxColumnId.

    Raises:
        WriteRefusedError: naming the field.
    """
    ids: dict[int, str] = {}
    for f in _all_fields(schema):
        if f.field_id is None or not f.metadata.get(CM_PHYSICAL):
            raise WriteRefusedError(
                f"column mapping: field {f.name!r} needs {CM_ID} and {CM_PHYSICAL} in its metadata (found {f.metadata})",
                path=path or None,
            )
        if f.field_id in ids:
            raise WriteRefusedError(
                f"column mapping: fields {ids[f.field_id]!r} and {f.name!r} share column id {f.field_id}", path=path or None
            )
        ids[f.field_id] = f.name
    if ids and max_id is not None and max(ids) > max_id:
        raise WriteRefusedError(
            f"column mapping: delta.columnMapping.maxColumnId is {max_id} but column id {max(ids)} is in use", path=path or None
        )
