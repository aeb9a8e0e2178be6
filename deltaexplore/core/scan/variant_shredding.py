"""Variant columns of a data file rebuilt as `struct<metadata, value>` (Parquet's
VariantShredding.md): unshredded parts taken as they are, shredded ones (`typed_value`)
rebuilt column by column.

A shredded primitive is encoded for the whole column at once (numpy: header byte, then its
little-endian bytes); objects and arrays are assembled row by row from their rebuilt fields and
elements. Field names are looked up in each row's metadata dictionary, which is parsed once per
distinct metadata value. Conflicts the specification forbids (`value` and `typed_value` both set
for a primitive or an array, shredded fields under a value that is not an object) and shredded
types it does not allow (unsigned integers, fixed-length binaries other than UUIDs, timestamps
in milliseconds) are `InvalidVariantError`s naming the column path.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.protocol.schema import VARIANT_ARROW
from deltaexplore.core.protocol.variant import (
    OBJECT,
    VARIANT_NULL,
    VariantMetadata,
    encode_array,
    encode_object,
    object_entries,
    parse_metadata,
    value_size,
)
from deltaexplore.errors import InvalidVariantError, StorageError

__all__ = ["check_shredded_type", "is_shredded", "rebuild_variant"]

#: primitive type ids (header byte = id << 2) of the fixed-width shredded types
_INT_IDS = {8: 3, 16: 4, 32: 5, 64: 6}
_EMPTY_METADATA = b"\x01\x00\x00"


def is_shredded(arr_type: pa.DataType) -> bool:
    """Does a variant column of a file carry shredded values (`typed_value`)?"""
    return pa.types.is_struct(arr_type) and arr_type.get_field_index("typed_value") >= 0


def check_shredded_type(t: pa.DataType, where: str) -> None:
    """Refuse a `typed_value` type the shredding specification does not allow.

    Raises:
        InvalidVariantError: the type and the column path.
    """
    if pa.types.is_struct(t):  # a shredded object: each field a group of value / typed_value
        for f in t:
            if not pa.types.is_struct(f.type) or {c.name for c in f.type} - {"value", "typed_value"}:
                raise InvalidVariantError(
                    f"{where}.{f.name}: a shredded object field must be a group of value and typed_value, found {f.type}"
                )
            if f.type.get_field_index("typed_value") >= 0:
                check_shredded_type(f.type.field("typed_value").type, f"{where}.{f.name}")
        return
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        element = t.value_type
        if not pa.types.is_struct(element) or {c.name for c in element} - {"value", "typed_value"}:
            raise InvalidVariantError(
                f"{where}: a shredded array element must be a group of value and typed_value, found {element}"
            )
        if element.get_field_index("typed_value") >= 0:
            check_shredded_type(element.field("typed_value").type, f"{where}[]")
        return
    if _primitive_header(t) is None:
        raise InvalidVariantError(f"{where}: unsupported shredded value type {t} (not a type of Parquet's variant shredding)")


def _primitive_header(t: pa.DataType) -> int | None:
    """The variant primitive type id of a shredded Arrow type, None when shredding forbids it."""
    if pa.types.is_boolean(t):
        return 1
    if pa.types.is_signed_integer(t):
        return _INT_IDS[t.bit_width]
    if pa.types.is_float32(t):
        return 14
    if pa.types.is_float64(t):
        return 7
    if pa.types.is_decimal(t):
        return None if t.precision > 38 else 8 if t.precision <= 9 else 9 if t.precision <= 18 else 10
    if pa.types.is_date32(t):
        return 11
    if pa.types.is_timestamp(t) and t.unit in ("us", "ns"):
        return {("us", True): 12, ("us", False): 13, ("ns", True): 18, ("ns", False): 19}[(t.unit, t.tz is not None)]
    if pa.types.is_time64(t) and t.unit == "us":
        return 17
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return 15
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return 16
    if getattr(t, "extension_name", None) == "arrow.uuid":
        return 20
    return None


# -- primitives, a whole column at once ----------------------------------------------------------


def _fixed(body: np.ndarray, header: int, valid: pa.Array) -> pa.Array:
    """Values of one header byte followed by `body`'s row of bytes, null where not `valid`."""
    n = body.shape[0]
    out = np.empty((n, body.shape[1] + 1), dtype=np.uint8)
    out[:, 0] = header
    out[:, 1:] = body
    mask = pc.invert(valid)
    arr = pa.FixedSizeBinaryArray.from_buffers(pa.binary(out.shape[1]), n, [None, pa.py_buffer(out.tobytes())])
    return pc.if_else(mask, pa.scalar(None, pa.binary()), arr.cast(pa.binary()))


def _le_bytes(arr: pa.Array, dtype: str) -> np.ndarray:
    values = np.asarray(arr.fill_null(0).to_numpy(zero_copy_only=False)).astype(dtype)
    return values.view(np.uint8).reshape(len(arr), np.dtype(dtype).itemsize)


def _var_width(arr: pa.Array, *, string: bool) -> pa.Array:
    """Binary or string values as variant binaries / strings (short strings under 64 bytes)."""
    arr = arr.cast(pa.large_string() if string else pa.large_binary())
    n = len(arr)
    valid = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False))
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64)[arr.offset : arr.offset + n + 1]
    data = np.frombuffer(arr.buffers()[2], dtype=np.uint8) if arr.buffers()[2] is not None else np.zeros(0, np.uint8)
    lengths = np.where(valid, offsets[1:] - offsets[:-1], 0)
    short = (lengths < 64) if string else np.zeros(n, dtype=bool)
    prefix = np.where(short, 1, 5)
    sizes = np.where(valid, prefix + lengths, 0)
    out_off = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(sizes, out=out_off[1:])
    out = np.zeros(int(out_off[-1]), dtype=np.uint8)
    starts = out_off[:-1]
    head = np.where(short, 1 | (lengths << 2), (16 if string else 15) << 2).astype(np.uint8)
    out[starts[valid]] = head[valid]
    long_rows = valid & ~short
    if long_rows.any():
        size_bytes = lengths[long_rows].astype("<u4").view(np.uint8).reshape(-1, 4)
        out[starts[long_rows][:, None] + 1 + np.arange(4)] = size_bytes
    total = int(lengths.sum())
    if total:
        within = np.arange(total) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        out[np.repeat(starts + prefix, lengths) + within] = data[np.repeat(offsets[:-1], lengths) + within]
    validity = pa.array(valid).buffers()[1] if not valid.all() else None
    built = pa.Array.from_buffers(pa.large_binary(), n, [validity, pa.py_buffer(out_off.tobytes()), pa.py_buffer(out.tobytes())])
    return built.cast(pa.binary())


def encode_primitives(arr: pa.Array) -> pa.Array:
    """Every value of a shredded primitive column as variant value bytes (null stays null)."""
    t = arr.type
    kind = _primitive_header(t)
    valid = arr.is_valid()
    if pa.types.is_dictionary(t):
        return encode_primitives(arr.dictionary_decode())
    if kind == 1:
        return pc.if_else(arr, pa.scalar(bytes([1 << 2]), pa.binary()), pa.scalar(bytes([2 << 2]), pa.binary()))
    if kind in (3, 4, 5, 6):
        return _fixed(_le_bytes(arr, f"<i{t.bit_width // 8}"), kind << 2, valid)
    if kind in (7, 14):
        return _fixed(_le_bytes(arr, "<f8" if kind == 7 else "<f4"), kind << 2, valid)
    if kind in (8, 9, 10):
        wide = arr.cast(pa.decimal128(t.precision, t.scale)) if not isinstance(t, pa.Decimal128Type) else arr
        raw = np.frombuffer(wide.buffers()[1], dtype=np.uint8).reshape(-1, 16)[wide.offset : wide.offset + len(wide)]
        width = {8: 4, 9: 8, 10: 16}[kind]
        body = np.empty((len(arr), width + 1), dtype=np.uint8)
        body[:, 0] = t.scale
        body[:, 1:] = raw[:, :width]
        return _fixed(body, kind << 2, valid)
    if kind in (11,):
        return _fixed(_le_bytes(arr.cast(pa.int32()), "<i4"), kind << 2, valid)
    if kind in (12, 13, 17, 18, 19):
        return _fixed(_le_bytes(arr.cast(pa.int64()), "<i8"), kind << 2, valid)
    if kind == 20:
        storage = arr.storage if isinstance(arr, pa.ExtensionArray) else arr
        raw = np.frombuffer(storage.buffers()[1], dtype=np.uint8).reshape(-1, 16)[storage.offset : storage.offset + len(arr)]
        return _fixed(raw, kind << 2, valid)
    if kind in (15, 16):
        return _var_width(arr, string=kind == 16)
    raise InvalidVariantError(f"unsupported shredded value type {t}")


# -- rebuilding, recursively -----------------------------------------------------------------------


def _child(arr: pa.StructArray, name: str) -> pa.Array | None:
    i = arr.type.get_field_index(name)
    if i < 0:
        return None
    child = arr.field(i)
    return child.cast(pa.binary()) if name == "value" else child


def _rows_both(value: pa.Array | None, typed: pa.Array) -> np.ndarray:
    if value is None:
        return np.zeros(0, dtype=np.int64)
    both = pc.and_(value.is_valid(), typed.is_valid())
    return np.flatnonzero(np.asarray(both.to_numpy(zero_copy_only=False)))


def _rebuild(
    value: pa.Array | None, typed: pa.Array | None, rows: np.ndarray, metas: list[VariantMetadata], where: str
) -> pa.Array:
    """Value bytes of every row from a `value` / `typed_value` pair (null = missing)."""
    n = len(rows)
    if typed is None:
        return value if value is not None else pa.nulls(n, pa.binary())
    t = typed.type
    if pa.types.is_struct(t):
        return _rebuild_object(value, typed, rows, metas, where)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _rebuild_array(value, typed, rows, metas, where)
    conflicts = _rows_both(value, typed)
    if len(conflicts):
        raise InvalidVariantError(
            f"{where}: conflicting value and typed_value (row {int(conflicts[0])}): only an object may have both"
        )
    encoded = encode_primitives(typed)
    return encoded if value is None else pc.coalesce(encoded, value)


def _rebuild_object(
    value: pa.Array | None, typed: pa.StructArray, rows: np.ndarray, metas: list[VariantMetadata], where: str
) -> pa.Array:
    names = [f.name for f in typed.type]
    shredded = set(names)
    fields = [
        _rebuild(
            _child(typed.field(i), "value"), _child(typed.field(i), "typed_value"), rows, metas, f"{where}.{name}"
        ).to_pylist()
        for i, name in enumerate(names)
    ]
    values = value.to_pylist() if value is not None else [None] * len(typed)
    valid = np.asarray(typed.is_valid().to_numpy(zero_copy_only=False))
    out: list[bytes | None] = []
    for i, v in enumerate(values):
        if not valid[i]:
            out.append(v)
            continue
        meta = metas[rows[i]]
        entries = []
        for name, column in zip(names, fields):
            if column[i] is not None:
                fid = meta.id_of(name)
                if fid is None:
                    raise InvalidVariantError(f"{where}: the shredded field {name!r} is not in the variant's metadata (row {i})")
                entries.append((name, fid, column[i]))
        if v is not None:
            if not v or v[0] & 0x03 != OBJECT:
                raise InvalidVariantError(f"{where}: non-object value with shredded fields (row {i})")
            for key, fid, pos in object_entries(meta, v):
                if key not in shredded:  # a shredded field's column is the one to believe
                    entries.append((key, fid, v[pos : pos + value_size(v, pos)]))
        out.append(encode_object(entries))
    return pa.array(out, pa.binary())


def _rebuild_array(
    value: pa.Array | None, typed: pa.Array, rows: np.ndarray, metas: list[VariantMetadata], where: str
) -> pa.Array:
    conflicts = _rows_both(value, typed)
    if len(conflicts):
        raise InvalidVariantError(
            f"{where}: conflicting value and typed_value (row {int(conflicts[0])}): a shredded array has no value"
        )
    offsets = np.asarray(typed.offsets.to_numpy(zero_copy_only=False), dtype=np.int64)
    start = int(offsets[0])
    offsets = offsets - start
    elements = typed.values.slice(start, int(offsets[-1]))
    lengths = np.diff(offsets)
    element_rows = np.repeat(rows, lengths)
    if not pa.types.is_struct(elements.type):
        raise InvalidVariantError(f"{where}: a shredded array element must be a group of value and typed_value")
    rebuilt = _rebuild(_child(elements, "value"), _child(elements, "typed_value"), element_rows, metas, f"{where}[]").to_pylist()
    values = value.to_pylist() if value is not None else [None] * len(typed)
    valid = np.asarray(typed.is_valid().to_numpy(zero_copy_only=False))
    out: list[bytes | None] = []
    for i, v in enumerate(values):
        if valid[i]:
            out.append(encode_array([e if e is not None else VARIANT_NULL for e in rebuilt[offsets[i] : offsets[i + 1]]]))
        else:
            out.append(v)
    return pa.array(out, pa.binary())


def rebuild_variant(arr: pa.Array, *, where: str = "") -> pa.StructArray:
    """A variant column read from a file (unshredded or shredded) as `struct<metadata, value>`.

    Raises:
        InvalidVariantError: a shredded type or combination the specification forbids.
        StorageError: the column is not a variant group (no metadata, or not a struct).
    """
    at = f"{where}: " if where else ""
    if not pa.types.is_struct(arr.type):
        raise StorageError(f"{at}expected a variant group (metadata, value), the file has {arr.type}")
    names = [f.name for f in arr.type]
    if "metadata" not in names:
        raise StorageError(f"{at}a variant group lacks its metadata column")
    mask = arr.is_null() if arr.null_count else None
    metadata = arr.field(names.index("metadata")).cast(pa.binary())
    value = _child(arr, "value")
    typed = _child(arr, "typed_value")
    if typed is None:
        value = value if value is not None else pa.nulls(len(arr), pa.binary())
    else:
        check_shredded_type(typed.type, where or "typed_value")
        filled = metadata.fill_null(_EMPTY_METADATA)
        if mask is not None:  # a null variant's metadata may be empty bytes: not parsed
            filled = pc.if_else(mask, pa.scalar(_EMPTY_METADATA, pa.binary()), filled)
        encoded = pc.dictionary_encode(filled)
        metas = [parse_metadata(m) for m in encoded.dictionary.to_pylist()]
        rows = np.asarray(encoded.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
        value = _rebuild(value, typed, rows, metas, where or "typed_value").fill_null(VARIANT_NULL)  # missing = variant null
    children = [metadata, value]
    if mask is not None:  # a null variant's parts may be null too: empty under the null
        children = [pc.if_else(mask, pa.scalar(b"", pa.binary()), c) if c.null_count else c for c in children]
    if any(c.null_count for c in children):
        raise StorageError(f"{at}malformed variant column: a non-null variant lacks its metadata or value bytes")
    return pa.StructArray.from_arrays(children, fields=list(VARIANT_ARROW), mask=mask)
