"""The Variant binary encoding (Parquet's VariantEncoding.md): metadata dictionaries, values read
as JSON text (the way Spark's `to_json` writes a variant) or as typed trees, and values built
from parts (objects, arrays, primitives), which rebuilding shredded variants needs.

A variant is two byte strings: `metadata` (a header byte, then a dictionary of the object keys)
and `value` (a header byte whose low two bits give the basic type: primitive, short string,
object, array). `json_column` and `variants_as_json` turn Arrow columns of variants (at any
depth) into JSON text. Every read is bounds-checked: malformed bytes are an `InvalidVariantError`,
never an `IndexError`.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import itertools
import json
import struct
import uuid
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.protocol.schema import (
    VARIANT_ARROW,
    ArrayType,
    DataType,
    MapType,
    PrimitiveType,
    StructType,
    to_arrow_type,
)
from deltaexplore.errors import InvalidVariantError

__all__ = [
    "VARIANT_NULL",
    "VariantMetadata",
    "encode_array",
    "encode_object",
    "encode_string",
    "has_variant",
    "java_double",
    "json_column",
    "json_type",
    "object_entries",
    "parse_metadata",
    "split_variant",
    "to_json",
    "typed_tree",
    "value_size",
    "variant_structs_as_json",
    "variants_as_json",
]

PRIMITIVE, SHORT_STRING, OBJECT, ARRAY = 0, 1, 2, 3
#: primitive type ids (the spec's "Variant primitive types" table) and their names
PRIMITIVE_TYPES: dict[int, str] = {
    0: "NULL",
    1: "BOOLEAN_TRUE",
    2: "BOOLEAN_FALSE",
    3: "INT8",
    4: "INT16",
    5: "INT32",
    6: "INT64",
    7: "DOUBLE",
    8: "DECIMAL4",
    9: "DECIMAL8",
    10: "DECIMAL16",
    11: "DATE",
    12: "TIMESTAMPTZ",
    13: "TIMESTAMPNTZ",
    14: "FLOAT",
    15: "BINARY",
    16: "STRING",
    17: "TIME",
    18: "TIMESTAMPTZ_NANOS",
    19: "TIMESTAMPNTZ_NANOS",
    20: "UUID",
}
#: bytes of value data after the header byte, for the fixed-width primitives
_FIXED_SIZE = {0: 0, 1: 0, 2: 0, 3: 1, 4: 2, 5: 4, 6: 8, 7: 8, 8: 5, 9: 9, 10: 17, 11: 4, 12: 8, 13: 8, 14: 4}
_FIXED_SIZE.update({17: 8, 18: 8, 19: 8, 20: 16})
VARIANT_NULL = b"\x00"
_EPOCH = dt.datetime(1970, 1, 1)


@dataclass(frozen=True)
class VariantMetadata:
    """A parsed metadata dictionary: its keys in order, and its size in bytes."""

    keys: tuple[str, ...]
    size: int
    _ids: dict[str, int] = field(default_factory=dict, compare=False, repr=False)

    def key(self, field_id: int) -> str:
        if not 0 <= field_id < len(self.keys):
            raise InvalidVariantError(f"variant object field id {field_id} is not in its metadata ({len(self.keys)} keys)")
        return self.keys[field_id]

    def id_of(self, name: str) -> int | None:
        """The dictionary id of a key (the first, when a writer repeated it), or None."""
        if not self._ids and self.keys:
            ids = self._ids
            for i, k in enumerate(self.keys):
                ids.setdefault(k, i)
        return self._ids.get(name)


def _uint(buf: bytes, pos: int, size: int) -> int:
    if pos < 0 or pos + size > len(buf):
        raise InvalidVariantError(f"variant bytes end at {len(buf)}, a field needs bytes {pos}..{pos + size}")
    return int.from_bytes(buf[pos : pos + size], "little")


def parse_metadata(buf: bytes) -> VariantMetadata:
    """Parse a metadata dictionary (its bytes may continue with a value: `size` says where it ends).

    Raises:
        InvalidVariantError: not version 1, or offsets outside the bytes.
    """
    if not buf:
        raise InvalidVariantError("variant metadata is empty")
    header = buf[0]
    if header & 0x0F != 1:
        raise InvalidVariantError(f"variant metadata version is {header & 0x0F}, expected 1")
    width = ((header >> 6) & 0x03) + 1
    count = _uint(buf, 1, width)
    offsets_at = 1 + width
    offsets = [_uint(buf, offsets_at + i * width, width) for i in range(count + 1)]
    start = offsets_at + (count + 1) * width
    end = start + offsets[-1]
    if end > len(buf) or any(b < a for a, b in itertools.pairwise(offsets)):
        raise InvalidVariantError("variant metadata offsets point outside its bytes")
    try:
        keys = tuple(buf[start + a : start + b].decode("utf-8") for a, b in itertools.pairwise(offsets))
    except UnicodeDecodeError as exc:
        raise InvalidVariantError(f"a variant metadata key is not UTF-8: {exc}") from exc
    return VariantMetadata(keys, end)


def split_variant(buf: bytes) -> tuple[bytes, bytes]:
    """Split metadata bytes followed by value bytes (how a variant is written to one file)."""
    meta = parse_metadata(buf)
    return bytes(buf[: meta.size]), bytes(buf[meta.size :])


def _container(value: bytes, pos: int) -> tuple[int, int, int, int, int]:
    """(number of elements, field id width, offset width, start of ids, start of offsets) of the
    object or array at `pos`."""
    header = value[pos] >> 2
    basic = value[pos] & 0x03
    if basic == OBJECT:
        large, id_width, off_width = (header >> 4) & 1, ((header >> 2) & 3) + 1, (header & 3) + 1
    else:
        large, id_width, off_width = (header >> 2) & 1, 0, (header & 3) + 1
    count_width = 4 if large else 1
    count = _uint(value, pos + 1, count_width)
    ids_at = pos + 1 + count_width
    return count, id_width, off_width, ids_at, ids_at + count * id_width


def value_size(value: bytes, pos: int = 0) -> int:
    """Bytes taken by the value starting at `pos`.

    Raises:
        InvalidVariantError: an unknown type or bytes that end too early.
    """
    if pos >= len(value):
        raise InvalidVariantError(f"variant value ends at byte {len(value)}, a value was expected at {pos}")
    basic, header = value[pos] & 0x03, value[pos] >> 2
    if basic == SHORT_STRING:
        size = 1 + header
    elif basic == PRIMITIVE:
        if header in _FIXED_SIZE:
            size = 1 + _FIXED_SIZE[header]
        elif header in (15, 16):
            size = 5 + _uint(value, pos + 1, 4)
        else:
            raise InvalidVariantError(f"unknown variant primitive type {header}")
    else:
        count, _, off_width, _, offsets_at = _container(value, pos)
        values_at = offsets_at + (count + 1) * off_width
        size = values_at - pos + _uint(value, offsets_at + count * off_width, off_width)
    if pos + size > len(value):
        raise InvalidVariantError(f"a variant value needs {size} bytes from {pos}, only {len(value) - pos} are there")
    return size


def object_entries(meta: VariantMetadata, value: bytes, pos: int = 0) -> list[tuple[str, int, int]]:
    """The fields of the object at `pos`: (key, field id, position of its value), in stored order."""
    count, id_width, off_width, ids_at, offsets_at = _container(value, pos)
    values_at = offsets_at + (count + 1) * off_width
    out = []
    for i in range(count):
        fid = _uint(value, ids_at + i * id_width, id_width)
        out.append((meta.key(fid), fid, values_at + _uint(value, offsets_at + i * off_width, off_width)))
    return out


def _array_positions(value: bytes, pos: int) -> list[int]:
    count, _, off_width, _, offsets_at = _container(value, pos)
    values_at = offsets_at + (count + 1) * off_width
    return [values_at + _uint(value, offsets_at + i * off_width, off_width) for i in range(count)]


def _primitive(value: bytes, pos: int, kind: int) -> Any:
    """The Python value of a primitive (type id `kind`) at `pos`."""
    at = pos + 1
    if kind == 0:
        return None
    if kind in (1, 2):
        return kind == 1
    if kind in (3, 4, 5, 6):
        width = _FIXED_SIZE[kind]
        return int.from_bytes(_slice(value, at, width), "little", signed=True)
    if kind == 7:
        return struct.unpack("<d", _slice(value, at, 8))[0]
    if kind == 14:
        return struct.unpack("<f", _slice(value, at, 4))[0]
    if kind in (8, 9, 10):
        scale = _slice(value, at, 1)[0]
        width = _FIXED_SIZE[kind] - 1
        unscaled = int.from_bytes(_slice(value, at + 1, width), "little", signed=True)
        if scale > 38:
            raise InvalidVariantError(f"variant decimal scale {scale} is above 38")
        return decimal.Decimal(unscaled).scaleb(-scale)
    if kind == 11:
        return dt.date(1970, 1, 1) + dt.timedelta(days=int.from_bytes(_slice(value, at, 4), "little", signed=True))
    if kind in (12, 13, 17, 18, 19):
        return int.from_bytes(_slice(value, at, 8), "little", signed=True)
    if kind in (15, 16):
        size = _uint(value, at, 4)
        raw = _slice(value, at + 4, size)
        if kind == 15:
            return raw
        return _utf8(raw)
    if kind == 20:
        return uuid.UUID(bytes=_slice(value, at, 16))
    raise InvalidVariantError(f"unknown variant primitive type {kind}")


def _slice(value: bytes, at: int, size: int) -> bytes:
    if at + size > len(value):
        raise InvalidVariantError(f"variant value ends at byte {len(value)}, {size} bytes were expected at {at}")
    return bytes(value[at : at + size])


def _utf8(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidVariantError(f"a variant string is not UTF-8: {exc}") from exc


# -- reading: typed trees ---------------------------------------------------------------------


def typed_tree(meta: VariantMetadata, value: bytes, pos: int = 0) -> Any:
    """The value as a tree that keeps physical types: ``(type name, Python value)`` for a
    primitive (a short string is ``("STRING", text)``), ``{key: tree}`` for an object and
    ``[tree, ...]`` for an array. Two encodings of one value give equal trees.
    """
    if pos >= len(value):
        raise InvalidVariantError(f"variant value ends at byte {len(value)}, a value was expected at {pos}")
    basic, header = value[pos] & 0x03, value[pos] >> 2
    if basic == SHORT_STRING:
        return ("STRING", _utf8(_slice(value, pos + 1, header)))
    if basic == PRIMITIVE:
        return (PRIMITIVE_TYPES.get(header, "?"), _primitive(value, pos, header))
    if basic == OBJECT:
        entries = object_entries(meta, value, pos)
        tree = {k: typed_tree(meta, value, p) for k, _, p in entries}
        if len(tree) != len(entries):
            raise InvalidVariantError("a variant object holds one key twice")
        return tree
    return [typed_tree(meta, value, p) for p in _array_positions(value, pos)]


# -- reading: JSON text as Spark writes it -----------------------------------------------------


def java_double(x: float, *, single: bool = False) -> str:
    """A finite float as Java's `Double.toString` (or `Float.toString`) writes it: the shortest
    digits that read back, plain between 10^-3 and 10^7, else `d.dddE<n>`."""
    if x == 0:
        return "-0.0" if np.signbit(x) else "0.0"
    sci = np.format_float_scientific(np.float32(x) if single else np.float64(x), unique=True, trim="-")
    mantissa, exp_text = sci.split("e")
    exp = int(exp_text)
    sign = "-" if mantissa.startswith("-") else ""
    digits = mantissa.lstrip("-").replace(".", "")
    if 1e-3 <= abs(x) < 1e7:
        point = exp + 1
        if point <= 0:
            return f"{sign}0.{'0' * -point}{digits}"
        whole, frac = digits[:point].ljust(point, "0"), digits[point:]
        return f"{sign}{whole}.{frac or '0'}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exp}"


def _ts_text(micros_or_nanos: int, *, nanos: bool, zone: bool) -> str:
    seconds, frac = divmod(micros_or_nanos, 1_000_000_000 if nanos else 1_000_000)
    stamp = (_EPOCH + dt.timedelta(seconds=seconds)).strftime("%Y-%m-%d %H:%M:%S")
    if frac:
        stamp += "." + f"{frac:0{9 if nanos else 6}d}".rstrip("0")
    return stamp + ("+00:00" if zone else "")


def _json_primitive(value: bytes, pos: int, kind: int) -> str:
    v = _primitive(value, pos, kind)
    if kind == 0:
        return "null"
    if kind in (1, 2):
        return "true" if v else "false"
    if kind in (3, 4, 5, 6):
        return str(v)
    if kind in (7, 14):
        if np.isfinite(v):
            return java_double(v, single=kind == 14)
        return json.dumps("NaN" if np.isnan(v) else ("Infinity" if v > 0 else "-Infinity"))
    if kind in (8, 9, 10):
        return format(v.normalize(), "f")  # as Java's stripTrailingZeros().toPlainString()
    if kind == 11:
        return f'"{v.isoformat()}"'
    if kind in (12, 13, 18, 19):
        return f'"{_ts_text(v, nanos=kind in (18, 19), zone=kind in (12, 18))}"'
    if kind == 17:
        seconds, frac = divmod(v, 1_000_000)
        text = (_EPOCH + dt.timedelta(seconds=seconds)).strftime("%H:%M:%S")
        if frac:
            text += "." + f"{frac:06d}".rstrip("0")
        return f'"{text}"'
    if kind == 15:
        return f'"{base64.b64encode(v).decode("ascii")}"'
    if kind == 16:
        return json.dumps(v, ensure_ascii=False)
    return f'"{v}"'  # uuid


def _json(meta: VariantMetadata, value: bytes, pos: int, out: list[str], depth: int) -> None:
    if depth > 1000:
        raise InvalidVariantError("a variant value nests deeper than 1000 levels")
    if pos >= len(value):
        raise InvalidVariantError(f"variant value ends at byte {len(value)}, a value was expected at {pos}")
    basic, header = value[pos] & 0x03, value[pos] >> 2
    if basic == SHORT_STRING:
        out.append(json.dumps(_utf8(_slice(value, pos + 1, header)), ensure_ascii=False))
    elif basic == PRIMITIVE:
        out.append(_json_primitive(value, pos, header))
    elif basic == OBJECT:
        out.append("{")
        for i, (key, _, p) in enumerate(object_entries(meta, value, pos)):
            if i:
                out.append(",")
            out.append(json.dumps(key, ensure_ascii=False))
            out.append(":")
            _json(meta, value, p, out, depth + 1)
        out.append("}")
    else:
        out.append("[")
        for i, p in enumerate(_array_positions(value, pos)):
            if i:
                out.append(",")
            _json(meta, value, p, out, depth + 1)
        out.append("]")


def to_json(metadata: bytes | VariantMetadata, value: bytes) -> str:
    """The variant as JSON text, as Spark's `to_json` writes it (session time zone UTC): object
    keys in their stored (sorted) order, no spaces; dates, timestamps, times, UUIDs quoted;
    binary as base64; decimals in plain notation without trailing zeros; floats as Java prints them; NaN and infinities
    as strings.

    Raises:
        InvalidVariantError: malformed bytes.
    """
    meta = metadata if isinstance(metadata, VariantMetadata) else parse_metadata(metadata)
    out: list[str] = []
    _json(meta, value, 0, out, 0)
    return "".join(out)


# -- building ----------------------------------------------------------------------------------


def _width(n: int) -> int:
    return 1 if n < 1 << 8 else 2 if n < 1 << 16 else 3 if n < 1 << 24 else 4


def encode_string(text: str) -> bytes:
    raw = text.encode("utf-8")
    if len(raw) < 64:
        return bytes([SHORT_STRING | (len(raw) << 2)]) + raw
    return bytes([PRIMITIVE | (16 << 2)]) + len(raw).to_bytes(4, "little") + raw


def encode_array(elements: list[bytes]) -> bytes:
    """An array value from encoded elements."""
    total = sum(len(e) for e in elements)
    off_width = _width(total)
    large = len(elements) > 255
    header = ARRAY | (((1 if large else 0) << 2 | (off_width - 1)) << 2)
    parts = [bytes([header]), len(elements).to_bytes(4 if large else 1, "little")]
    at = 0
    for e in elements:
        parts.append(at.to_bytes(off_width, "little"))
        at += len(e)
    parts.append(at.to_bytes(off_width, "little"))
    parts.extend(elements)
    return b"".join(parts)


def encode_object(entries: list[tuple[str, int, bytes]]) -> bytes:
    """An object value from (key, field id, encoded value) entries, ids and offsets in key order.

    Raises:
        InvalidVariantError: a key appears twice.
    """
    entries = sorted(entries, key=lambda e: e[0].encode("utf-8"))
    for a, b in itertools.pairwise(entries):
        if a[0] == b[0]:
            raise InvalidVariantError(f"a variant object would hold the key {a[0]!r} twice")
    total = sum(len(e[2]) for e in entries)
    id_width = _width(max((e[1] for e in entries), default=0))
    off_width = _width(total)
    large = len(entries) > 255
    header = OBJECT | (((1 if large else 0) << 4 | (id_width - 1) << 2 | (off_width - 1)) << 2)
    parts = [bytes([header]), len(entries).to_bytes(4 if large else 1, "little")]
    parts.extend(e[1].to_bytes(id_width, "little") for e in entries)
    at = 0
    for e in entries:
        parts.append(at.to_bytes(off_width, "little"))
        at += len(e[2])
    parts.append(at.to_bytes(off_width, "little"))
    parts.extend(e[2] for e in entries)
    return b"".join(parts)


# -- Arrow columns -------------------------------------------------------------------------------


def json_column(arr: pa.Array) -> pa.Array:
    """A `struct<metadata, value>` column as JSON text (`to_json`), null where the variant is
    null. Each distinct metadata dictionary is parsed once."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    n = len(arr)
    if n == 0:
        return pa.array([], pa.string())
    valid = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False))
    metadata = arr.field("metadata").cast(pa.binary())
    encoded = pc.dictionary_encode(pc.if_else(arr.is_valid(), metadata, pa.scalar(b"\x01\x00\x00", pa.binary())))
    metas = [parse_metadata(m) for m in encoded.dictionary.to_pylist()]
    rows = np.asarray(encoded.indices.to_numpy(zero_copy_only=False))
    values = arr.field("value").cast(pa.binary()).to_pylist()
    out = [to_json(metas[rows[i]], values[i]) if valid[i] else None for i in range(n)]
    return pa.array(out, pa.string())


def json_type(t: DataType) -> pa.DataType:
    """The Arrow type of a Delta type with every variant read as JSON text."""
    if isinstance(t, PrimitiveType) and t.name == "variant":
        return pa.string()
    if isinstance(t, StructType):
        return pa.struct([pa.field(f.name, json_type(f.type), nullable=f.nullable) for f in t.fields])
    if isinstance(t, ArrayType):
        return pa.list_(pa.field("element", json_type(t.element_type), nullable=t.contains_null))
    if isinstance(t, MapType):
        return pa.map_(
            pa.field("key", json_type(t.key_type), nullable=False),
            pa.field("value", json_type(t.value_type), nullable=t.value_contains_null),
        )
    return to_arrow_type(t)


def has_variant(t: DataType) -> bool:
    if isinstance(t, PrimitiveType):
        return t.name == "variant"
    if isinstance(t, StructType):
        return any(has_variant(f.type) for f in t.fields)
    if isinstance(t, ArrayType):
        return has_variant(t.element_type)
    if isinstance(t, MapType):
        return has_variant(t.key_type) or has_variant(t.value_type)
    return False


def variants_as_json(arr: pa.Array, t: DataType) -> pa.Array:
    """A column of Delta type `t` (read with variants as structs) with every variant, at any
    depth, as JSON text."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if not has_variant(t):
        return arr
    if isinstance(t, PrimitiveType):
        return json_column(arr)
    mask = arr.is_null() if arr.null_count else None
    if isinstance(t, StructType):
        children = [variants_as_json(arr.field(i), f.type) for i, f in enumerate(t.fields)]
        return pa.StructArray.from_arrays(children, fields=list(json_type(t)), mask=mask)
    if isinstance(t, ArrayType):
        values = variants_as_json(arr.values, t.element_type)
        return pa.ListArray.from_arrays(arr.offsets, values, type=json_type(t), mask=mask)
    assert isinstance(t, MapType)
    keys = variants_as_json(arr.keys, t.key_type)
    items = variants_as_json(arr.items, t.value_type)
    return pa.MapArray.from_arrays(arr.offsets, keys, items, type=json_type(t), mask=mask)


def variant_structs_as_json(table: pa.Table) -> pa.Table:
    """`table` with every column of the core's variant type (`struct<metadata: binary not null,
    value: binary not null>`, at any depth) as JSON text: for displays of tables whose Delta
    schema is not at hand (an Arrow table a user shows)."""

    def convert(arr: pa.Array) -> pa.Array:
        t = arr.type
        if t == VARIANT_ARROW:
            return json_column(arr)
        if not _holds_variant(t):
            return arr
        mask = arr.is_null() if arr.null_count else None
        if pa.types.is_struct(t):
            children = [convert(c) for c in arr.flatten()]
            fields = [pa.field(f.name, c.type, f.nullable) for f, c in zip(t, children)]
            return pa.StructArray.from_arrays(children, fields=fields, mask=mask)
        if pa.types.is_map(t):
            return pa.MapArray.from_arrays(arr.offsets, arr.keys, convert(arr.items), mask=mask)
        if pa.types.is_list(t):
            return pa.ListArray.from_arrays(arr.offsets, convert(arr.values), mask=mask)
        return arr

    if not any(_holds_variant(f.type) for f in table.schema):
        return table
    columns = [convert(c.combine_chunks()) if _holds_variant(c.type) else c for c in table.columns]
    fields = [pa.field(f.name, c.type, f.nullable, f.metadata) for f, c in zip(table.schema, columns)]
    return pa.table(columns, schema=pa.schema(fields, metadata=table.schema.metadata))


def _holds_variant(t: pa.DataType) -> bool:
    if t == VARIANT_ARROW:
        return True
    if pa.types.is_struct(t):
        return any(_holds_variant(f.type) for f in t)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _holds_variant(t.value_type)
    if pa.types.is_map(t):
        return _holds_variant(t.item_type)
    return False
