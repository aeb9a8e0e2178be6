"""Delta schemas: the `schemaString` type system, its Arrow form and column mapping.

Types are immutable dataclasses parsed once from the JSON schema. `to_arrow()` gives the
logical Arrow type (what users see); `physical_arrow_schema()` gives the names and parquet
field ids the data files use under column mapping.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Union

import pyarrow as pa

from deltaexplore.errors import DeltaProtocolError, InvalidLogError

__all__ = [
    "ArrayType",
    "DataType",
    "DecimalType",
    "MapType",
    "PrimitiveType",
    "StructField",
    "StructType",
    "any_leaf",
    "collations",
    "column_mapping_mode",
    "is_binary_collation",
    "parse_schema",
    "to_arrow_type",
    "type_text",
]

PRIMITIVES = {
    "string",
    "long",
    "integer",
    "short",
    "byte",
    "float",
    "double",
    "boolean",
    "binary",
    "date",
    "timestamp",
    "timestamp_ntz",
    "variant",
    "void",
    # nanosecond timestamps (protocol_rfcs/nanosecond-timestamps.md, feature timestampNanos): the
    # RFC settles their Parquet encoding (INT64 TIMESTAMP(NANOS)) but not yet their type names;
    # these are the names read here
    "timestamp_nanos",
    "timestamp_ntz_nanos",
    # interval types (protocol_rfcs/interval-types.md): the canonical names; narrowed spellings
    # are normalized to these by `_interval`
    "interval year to month",
    "interval day to second",
}
#: the interval fields of each family, longest unit first (protocol_rfcs/interval-types.md)
_INTERVAL_FAMILIES = (("year", "month"), ("day", "hour", "minute", "second"))
COLLATIONS_KEY = "__COLLATIONS"
#: the protocol's largest decimal precision
MAX_DECIMAL_PRECISION = 38
_DECIMAL = re.compile(r"^decimal\(\s*(\d+)\s*,\s*(-?\d+)\s*\)$")
_GEO = re.compile(r"^(geometry|geography)(\(.*\))?$")

CM_ID = "delta.columnMapping.id"
CM_PHYSICAL = "delta.columnMapping.physicalName"
PARQUET_FIELD_ID = b"PARQUET:field_id"


@dataclass(frozen=True, slots=True)
class PrimitiveType:
    """A primitive type by its Delta name (e.g. ``long``, ``timestamp_ntz``, ``geometry(...)``)."""

    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class DecimalType:
    precision: int
    scale: int

    @property
    def name(self) -> str:
        return f"decimal({self.precision},{self.scale})"

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class ArrayType:
    element_type: DataType
    contains_null: bool = True

    name = "array"

    def __str__(self) -> str:
        return f"array<{self.element_type}>"


@dataclass(frozen=True, slots=True)
class MapType:
    key_type: DataType
    value_type: DataType
    value_contains_null: bool = True

    name = "map"

    def __str__(self) -> str:
        return f"map<{self.key_type},{self.value_type}>"


@dataclass(frozen=True, slots=True)
class StructField:
    """A (possibly nested) column with its column metadata."""

    name: str
    type: DataType
    nullable: bool = True
    metadata: dict[str, Any] = field(default_factory=dict, hash=False, compare=True)

    @property
    def physical_name(self) -> str:
        return str(self.metadata.get(CM_PHYSICAL, self.name))

    @property
    def field_id(self) -> int | None:
        value = self.metadata.get(CM_ID)
        return int(value) if value is not None else None


@dataclass(frozen=True, slots=True)
class StructType:
    fields: tuple[StructField, ...] = ()

    name = "struct"

    def __str__(self) -> str:
        return "struct<" + ",".join(f"{f.name}:{f.type}" for f in self.fields) + ">"

    @property
    def names(self) -> list[str]:
        return [f.name for f in self.fields]

    def field(self, name: str) -> StructField:
        """The field called `name` (exact match first, then case-insensitive)."""
        for f in self.fields:
            if f.name == name:
                return f
        lowered = name.lower()
        for f in self.fields:
            if f.name.lower() == lowered:
                return f
        raise KeyError(name)

    def get(self, name: str) -> StructField | None:
        try:
            return self.field(name)
        except KeyError:
            return None

    def to_json(self) -> dict[str, Any]:
        return _type_to_json(self)  # type: ignore[return-value]


DataType = Union[PrimitiveType, DecimalType, ArrayType, MapType, StructType]  # noqa: UP007 - runtime alias


def any_leaf(t: DataType, test: Callable[[PrimitiveType], bool]) -> bool:
    """Whether `test` holds for a primitive anywhere in `t` (struct fields, array elements, map
    keys and values); decimals count as no primitive."""
    if isinstance(t, PrimitiveType):
        return test(t)
    if isinstance(t, ArrayType):
        return any_leaf(t.element_type, test)
    if isinstance(t, MapType):
        return any_leaf(t.key_type, test) or any_leaf(t.value_type, test)
    if isinstance(t, StructType):
        return any(any_leaf(f.type, test) for f in t.fields)
    return False


def _parse_type(obj: Any, where: str) -> DataType:
    if isinstance(obj, str):
        text = obj.strip()
        if text in PRIMITIVES:
            return PrimitiveType(text)
        m = _DECIMAL.match(text)
        if m:
            precision, scale = int(m.group(1)), int(m.group(2))
            if not (1 <= precision <= MAX_DECIMAL_PRECISION and 0 <= scale <= precision):
                raise DeltaProtocolError(
                    f"data type {text!r} at {where}: Delta decimals have a precision of 1 to {MAX_DECIMAL_PRECISION} "
                    "and a scale of 0 to the precision"
                )
            return DecimalType(precision, scale)
        if text == "decimal":
            return DecimalType(10, 0)
        if _GEO.match(text):
            return PrimitiveType(text)
        if text.lower().startswith("interval"):
            return PrimitiveType(_interval(text, where))
        if text.startswith(("char", "varchar")):
            return PrimitiveType(text)
        raise DeltaProtocolError(f"unknown data type {text!r} in the schema at {where}")
    if isinstance(obj, dict):
        kind = obj.get("type")
        if kind == "struct":
            fields = obj.get("fields")
            if not isinstance(fields, list):
                raise InvalidLogError(f"struct without a 'fields' list at {where}")
            return StructType(tuple(_parse_field(f, where) for f in fields))
        if kind == "array":
            return ArrayType(_parse_type(obj.get("elementType"), where + "[]"), bool(obj.get("containsNull", True)))
        if kind == "map":
            return MapType(
                _parse_type(obj.get("keyType"), where + "{key}"),
                _parse_type(obj.get("valueType"), where + "{value}"),
                bool(obj.get("valueContainsNull", True)),
            )
    raise InvalidLogError(f"malformed type {obj!r} in the schema at {where}")


def _interval(text: str, where: str) -> str:
    """The canonical name of an interval spelling (`interval day to minute` -> `interval day to
    second`), as protocol_rfcs/interval-types.md defines them: case-sensitive, one family,
    fields from the longer unit to the shorter.

    Raises:
        DeltaProtocolError: a spelling the RFC does not allow.
    """
    words = text.split(" ")
    fields = words[1:2] if len(words) == 2 else words[1::2] if len(words) == 4 and words[2] == "to" else []
    for family, canonical in zip(_INTERVAL_FAMILIES, ("interval year to month", "interval day to second")):
        if (
            fields
            and all(f in family for f in fields)
            and [family.index(f) for f in fields] == sorted({family.index(f) for f in fields})
        ):
            if len(fields) == 2 and fields[0] == fields[1]:
                break
            return canonical
    raise DeltaProtocolError(
        f"data type {text!r} at {where} is not an interval type of protocol_rfcs/interval-types.md "
        "(one family, year-month or day-second, from the longer unit to the shorter, lower case)"
    )


def is_binary_collation(collation: str | None) -> bool:
    """Whether strings under `collation` compare by their UTF-8 bytes (no collation, or UTF8_BINARY)."""
    if collation is None:
        return True
    provider, _, rest = collation.partition(".")
    return provider.lower() == "spark" and rest.split(".")[0].upper() == "UTF8_BINARY"


def collations(schema: StructType) -> dict[str, str]:
    """The collation of every string the schema collates, by dotted logical path (strings in
    arrays and maps as `col.element`, `col.key`, `col.value`), from the `__COLLATIONS`
    metadata of their nearest struct field (protocol_rfcs/collated-string-type.md)."""
    out: dict[str, str] = {}

    def walk(t: DataType, prefix: str) -> None:
        if isinstance(t, ArrayType):
            walk(t.element_type, prefix + "element.")
        elif isinstance(t, MapType):
            walk(t.key_type, prefix + "key.")
            walk(t.value_type, prefix + "value.")
        elif isinstance(t, StructType):
            for f in t.fields:
                declared = f.metadata.get(COLLATIONS_KEY)
                if isinstance(declared, dict):
                    for key, collation in declared.items():
                        out[prefix + str(key)] = str(collation)
                walk(f.type, f"{prefix}{f.name}.")

    walk(schema, "")
    return out


def type_text(f: StructField) -> str:
    """A field's type as text with the collation of its strings, as Spark writes it
    (`string collate spark.UTF8_LCASE`, `array<string collate icu.UNICODE>`)."""
    declared = f.metadata.get(COLLATIONS_KEY)
    declared = declared if isinstance(declared, dict) else {}

    def text(t: DataType, path: str) -> str:
        if isinstance(t, PrimitiveType) and t.name == "string" and path in declared:
            return f"string collate {declared[path]}"
        if isinstance(t, ArrayType):
            return f"array<{text(t.element_type, path + '.element')}>"
        if isinstance(t, MapType):
            return f"map<{text(t.key_type, path + '.key')},{text(t.value_type, path + '.value')}>"
        return str(t)

    return text(f.type, f.name)


def _parse_field(obj: Any, where: str) -> StructField:
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str) or "type" not in obj:
        raise InvalidLogError(f"malformed struct field {obj!r} in the schema at {where}")
    meta = obj.get("metadata") or {}
    if not isinstance(meta, dict):
        meta = {}
    name = obj["name"]
    return StructField(
        name, _parse_type(obj["type"], f"{where}.{name}" if where else name), bool(obj.get("nullable", True)), meta
    )


def parse_schema(schema_string: str) -> StructType:
    """Parse a metaData `schemaString`.

    Raises:
        InvalidLogError: malformed JSON or structure.
        DeltaProtocolError: an unknown data type.
    """
    try:
        obj = json.loads(schema_string)
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidLogError(f"schemaString is not valid JSON: {exc}") from exc
    try:
        parsed = _parse_type(obj, "")
    except RecursionError as exc:
        raise InvalidLogError("schemaString nests types too deeply") from exc
    if not isinstance(parsed, StructType):
        raise InvalidLogError("schemaString is not a struct type")
    return parsed


def _type_to_json(t: DataType) -> Any:
    if isinstance(t, StructType):
        return {
            "type": "struct",
            "fields": [
                {"name": f.name, "type": _type_to_json(f.type), "nullable": f.nullable, "metadata": f.metadata} for f in t.fields
            ],
        }
    if isinstance(t, ArrayType):
        return {"type": "array", "elementType": _type_to_json(t.element_type), "containsNull": t.contains_null}
    if isinstance(t, MapType):
        return {
            "type": "map",
            "keyType": _type_to_json(t.key_type),
            "valueType": _type_to_json(t.value_type),
            "valueContainsNull": t.value_contains_null,
        }
    return t.name


# -- Arrow ----------------------------------------------------------------------------------

VARIANT_ARROW = pa.struct([pa.field("metadata", pa.binary(), nullable=False), pa.field("value", pa.binary(), nullable=False)])

_ARROW_PRIMITIVES: dict[str, pa.DataType] = {
    "string": pa.string(),
    "long": pa.int64(),
    "integer": pa.int32(),
    "short": pa.int16(),
    "byte": pa.int8(),
    "float": pa.float32(),
    "double": pa.float64(),
    "boolean": pa.bool_(),
    "binary": pa.binary(),
    "date": pa.date32(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "timestamp_ntz": pa.timestamp("us"),
    "void": pa.null(),
    "variant": VARIANT_ARROW,
    "timestamp_nanos": pa.timestamp("ns", tz="UTC"),
    "timestamp_ntz_nanos": pa.timestamp("ns"),
    "interval year to month": pa.month_day_nano_interval(),  # months only
    "interval day to second": pa.duration("us"),
}


def to_arrow_type(t: DataType, *, physical: bool = False) -> pa.DataType:
    """The Arrow type of a Delta type (`physical`: nested names are physical names)."""
    if isinstance(t, PrimitiveType):
        if t.name in _ARROW_PRIMITIVES:
            return _ARROW_PRIMITIVES[t.name]
        if _GEO.match(t.name):
            return pa.binary()  # WKB
        if t.name.startswith(("char", "varchar")):
            return pa.string()
        raise DeltaProtocolError(f"data type {t.name!r} has no Arrow equivalent")
    if isinstance(t, DecimalType):
        return pa.decimal128(t.precision, t.scale)
    if isinstance(t, ArrayType):
        return pa.list_(pa.field("element", to_arrow_type(t.element_type, physical=physical), nullable=t.contains_null))
    if isinstance(t, MapType):
        return pa.map_(
            pa.field("key", to_arrow_type(t.key_type, physical=physical), nullable=False),
            pa.field("value", to_arrow_type(t.value_type, physical=physical), nullable=t.value_contains_null),
        )
    return pa.struct([arrow_field(f, physical=physical) for f in t.fields])


def arrow_field(f: StructField, *, physical: bool = False) -> pa.Field:
    """The Arrow field of a column; `physical` uses physical names and carries field ids."""
    name = f.physical_name if physical else f.name
    meta = None
    if physical and f.field_id is not None:
        meta = {PARQUET_FIELD_ID: str(f.field_id).encode()}
    return pa.field(name, to_arrow_type(f.type, physical=physical), nullable=f.nullable, metadata=meta)


def to_arrow_schema(schema: StructType, *, physical: bool = False, drop_void: bool = False) -> pa.Schema:
    fields = [f for f in schema.fields if not (drop_void and f.type == PrimitiveType("void"))]
    return pa.schema([arrow_field(f, physical=physical) for f in fields])


def column_mapping_mode(configuration: dict[str, str], reader_supports_mapping: bool = True) -> str:
    """`none`, `name` or `id` from `delta.columnMapping.mode` (honoured only if the protocol allows)."""
    if not reader_supports_mapping:
        return "none"
    mode = str(configuration.get("delta.columnMapping.mode", "none")).lower()
    return mode if mode in ("none", "name", "id") else "none"


def leaf_paths(t: StructType, prefix: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], StructField]]:
    """(logical path, field) of every leaf column reached through structs only."""
    out: list[tuple[tuple[str, ...], StructField]] = []
    for f in t.fields:
        path = (*prefix, f.name)
        if isinstance(f.type, StructType):
            out.extend(leaf_paths(f.type, path))
        else:
            out.append((path, f))
    return out


def physical_path(schema: StructType, logical: tuple[str, ...], mode: str) -> tuple[str, ...]:
    """Translate a logical column path through structs into physical names."""
    if mode == "none":
        return logical
    out = []
    current: DataType = schema
    for part in logical:
        if not isinstance(current, StructType):
            raise KeyError(".".join(logical))
        f = current.field(part)
        out.append(f.physical_name)
        current = f.type
    return tuple(out)
