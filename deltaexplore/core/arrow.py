"""Arrow helpers: a column's chunks combined, rows of chunked tables picked and replaced, the bytes of string arrays.

`take_rows`: `pa.Table.take` on a chunked string column concatenates its chunks first: three
rows of a 1M-file snapshot (16 chunks of stats JSON) cost a 500 MB copy and over a second.
Snapshot file tables are chunked (checkpoints are read in batches, commits appended), so
callers that pick rows from them go through `take_rows`.

`put_rows`: an array with some rows replaced (the rows a fast path could not read, read again).

`text_buffers`: a string array's offsets and bytes as numpy, for vectorized code that reads
text in place (stats JSON, log lines) instead of copying the strings out.

Conversions that do not import pandas (`from_numpy`, `from_pylist`, `scalar`, `to_numpy`,
`empty`, `empty_table`): pyarrow's own (`pa.array`, `pa.scalar`, `Array.to_numpy`, a compute function given a
Python value) ask its pandas shim first, which imports pandas when it is installed (0.2-0.5 s
of a fresh process on the development machine, delta-rs never pays it). These build arrays
from typed buffers and read them back the same way; the open path (local and object stores)
converts through them only (tests/core/test_open_imports.py).

"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = [
    "combined",
    "empty",
    "empty_table",
    "from_numpy",
    "from_pylist",
    "put_rows",
    "scalar",
    "take_rows",
    "text_buffers",
    "to_numpy",
]


def combined(col: pa.Array | pa.ChunkedArray) -> pa.Array:
    """One array of a column (its chunks concatenated; an array as it is)."""
    return col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col


def take_rows(table: pa.Table, rows: np.ndarray | pa.Array | pa.ChunkedArray | Sequence[int]) -> pa.Table:
    """`table.take(rows)`, taken batch by batch (each batch only the rows inside it); rows in
    any order, repeats allowed, no nulls."""
    if isinstance(rows, pa.ChunkedArray):
        rows = rows.combine_chunks()
    index = (to_numpy(rows) if isinstance(rows, pa.Array) else np.asarray(rows)).astype(np.int64)
    if len(index) and (index.min() < 0 or index.max() >= table.num_rows):
        raise IndexError(f"row index out of bounds for a table of {table.num_rows} rows")
    if all(col.num_chunks <= 1 for col in table.columns):
        return table.take(from_numpy(index, pa.int64()))
    increasing = bool(np.all(index[1:] >= index[:-1]))
    order = None if increasing else np.argsort(index, kind="stable")
    ordered = index if order is None else index[order]
    pieces, start = [], 0
    for batch in table.to_batches():
        lo, hi = np.searchsorted(ordered, [start, start + batch.num_rows])
        if hi > lo:
            pieces.append(batch.take(from_numpy(ordered[lo:hi] - start, pa.int64())))
        start += batch.num_rows
    out = pa.Table.from_batches(pieces, schema=table.schema)
    if order is None:
        return out
    back = np.empty_like(order)
    back[order] = np.arange(len(order))
    return out.combine_chunks().take(from_numpy(back, pa.int64()))  # only the picked rows


def text_buffers(strings: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(int64 offsets of the n strings: n + 1 of them, uint8 data buffer) of a string, binary
    or their large variant, without copying the data."""
    n = len(strings)
    wide = pa.types.is_large_string(strings.type) or pa.types.is_large_binary(strings.type)
    raw = np.frombuffer(strings.buffers()[1], dtype=np.int64 if wide else np.int32)
    offsets = raw[strings.offset : strings.offset + n + 1].astype(np.int64)
    buf = strings.buffers()[2]
    data = np.frombuffer(buf, dtype=np.uint8) if buf is not None else np.zeros(0, np.uint8)
    return offsets, data


def put_rows(values: pa.Array, rows: np.ndarray, replacement: pa.Array) -> pa.Array:
    """`values` with `values[rows[i]] = replacement[i]` (a new array)."""
    n = len(values)
    index = np.full(n, -1, dtype=np.int64)
    index[rows] = np.arange(len(rows))
    mask = np.zeros(n, dtype=bool)
    mask[rows] = True
    return pc.if_else(from_numpy(mask), replacement.take(from_numpy(index, mask=index < 0)), values)


def from_numpy(
    values: np.ndarray | Sequence[Any], type: pa.DataType | None = None, *, mask: np.ndarray | None = None
) -> pa.Array:
    """`pa.array(values, type, mask=mask)` of a 1-D numeric, boolean or datetime64 array (or a
    sequence numpy reads as one), built on its buffer; `mask` True marks a null."""
    arr = np.ascontiguousarray(values)
    if arr.ndim != 1:
        raise ValueError(f"from_numpy takes a 1-D array, got {arr.ndim} dimensions")
    n = len(arr)
    if arr.dtype == np.bool_:
        natural, data = pa.bool_(), _bits(arr)
    elif arr.dtype.kind in "iufmM" and pa.from_numpy_dtype(arr.dtype).bit_width == 8 * arr.dtype.itemsize:
        natural, data = pa.from_numpy_dtype(arr.dtype), pa.py_buffer(arr)  # datetime64[D] (a date32) is not
    else:
        raise TypeError(f"from_numpy takes numbers, booleans, datetime64 or timedelta64 of 64 bits, got {arr.dtype}")
    validity, nulls = None, 0
    if mask is not None:
        valid = ~np.asarray(mask, dtype=bool)
        nulls = n - int(np.count_nonzero(valid))
        validity = _bits(valid) if nulls else None
    out = pa.Array.from_buffers(natural, n, [validity, data], null_count=nulls)
    return out if type is None or type == natural else out.cast(type)


def _bits(flags: np.ndarray) -> pa.Buffer:
    return pa.py_buffer(np.packbits(flags.astype(bool, copy=False), bitorder="little"))


def empty(type: pa.DataType) -> pa.Array:
    """`pa.array([], type)`."""
    return pa.nulls(0, type)


def empty_table(schema: pa.Schema) -> pa.Table:
    """`schema.empty_table()`."""
    return pa.Table.from_arrays([empty(f.type) for f in schema], schema=schema)


def from_pylist(values: Sequence[Any], type: pa.DataType) -> pa.Array:
    """`pa.array(values, type)` of Python values (None a null) for the types of log actions:
    strings and binary, integers, floats, booleans, and structs, maps and lists of them. Other
    types go to `pa.array` (which may import pandas)."""
    n = len(values)
    mask = np.fromiter((v is None for v in values), dtype=bool, count=n)
    if pa.types.is_string(type) or pa.types.is_large_string(type) or pa.types.is_binary(type) or pa.types.is_large_binary(type):
        raw = [v.encode() if isinstance(v, str) else (b"" if v is None else bytes(v)) for v in values]
        wide = pa.types.is_large_string(type) or pa.types.is_large_binary(type)
        offsets = np.zeros(n + 1, dtype=np.int64 if wide else np.int32)
        np.cumsum(np.fromiter(map(len, raw), dtype=np.int64, count=n), out=offsets[1:], dtype=offsets.dtype)
        validity = _bits(~mask) if mask.any() else None
        return pa.Array.from_buffers(type, n, [validity, pa.py_buffer(offsets), pa.py_buffer(b"".join(raw))])
    if pa.types.is_integer(type) or pa.types.is_floating(type) or pa.types.is_boolean(type):
        dtype = np.dtype(np.bool_) if pa.types.is_boolean(type) else _number_dtype(type)
        filled = np.array([0 if v is None else v for v in values], dtype=dtype) if n else np.zeros(0, dtype)
        return from_numpy(filled, type, mask=mask if mask.any() else None)
    if pa.types.is_struct(type):
        fields = [type.field(i) for i in range(type.num_fields)]
        children = [from_pylist([None if v is None else v.get(f.name) for v in values], f.type) for f in fields]
        return pa.StructArray.from_arrays(children, fields=fields, mask=from_numpy(mask) if mask.any() else None)
    if pa.types.is_map(type) or pa.types.is_list(type):
        entries = [[] if v is None else (list(v.items()) if isinstance(v, dict) else list(v)) for v in values]
        offsets = np.zeros(n + 1, dtype=np.int32)
        np.cumsum(np.fromiter(map(len, entries), dtype=np.int64, count=n), out=offsets[1:], dtype=np.int32)
        flat = [item for entry in entries for item in entry]
        offset_array = from_numpy(offsets, mask=np.append(mask, False) if mask.any() else None)
        if pa.types.is_map(type):
            keys = from_pylist([k for k, _ in flat], type.key_type)
            items = from_pylist([v for _, v in flat], type.item_type)
            return pa.MapArray.from_arrays(offset_array, keys, items, type=type)
        return pa.ListArray.from_arrays(offset_array, from_pylist(flat, type.value_type), type=type)
    return pa.array(values, type)


def scalar(value: Any, type: pa.DataType) -> pa.Scalar:
    """`pa.scalar(value, type)` (see `from_pylist`)."""
    if value is None:
        return pa.nulls(1, type)[0]
    return from_pylist([value], type)[0]


def to_numpy(values: pa.Array | pa.ChunkedArray, *, null: Any = None) -> np.ndarray:
    """A numeric, boolean, timestamp or duration column as NumPy, read from its buffers (nulls become
    `null`, which must be given when there are any). Other types go to `to_numpy` (which may
    import pandas)."""
    if isinstance(values, pa.ChunkedArray):
        parts = [to_numpy(chunk, null=null) for chunk in values.chunks]
        if parts:
            return parts[0] if len(parts) == 1 else np.concatenate(parts)
        values = empty(values.type)
    typ = values.type
    n, offset = len(values), values.offset
    buffers = values.buffers()
    if pa.types.is_boolean(typ):
        out = _unbits(buffers[1], offset, n)
    elif pa.types.is_integer(typ) or pa.types.is_floating(typ) or pa.types.is_timestamp(typ) or pa.types.is_duration(typ):
        dtype = _number_dtype(typ)
        raw = np.frombuffer(buffers[1], dtype=dtype) if buffers[1] is not None else np.zeros(0, dtype)
        out = raw[offset : offset + n]
        if pa.types.is_timestamp(typ) or pa.types.is_duration(typ):
            out = out.view(f"{'M' if pa.types.is_timestamp(typ) else 'm'}8[{typ.unit}]")
    else:
        return values.to_numpy(zero_copy_only=False)
    if values.null_count:
        if null is None:
            raise ValueError("to_numpy: the column has nulls and no value for them")
        out = out.copy()
        out[~_unbits(buffers[0], offset, n)] = null
    return out


def _number_dtype(typ: pa.DataType) -> np.dtype:
    """The NumPy dtype of a fixed-width number (temporal types: their integer storage)."""
    kind = "f" if pa.types.is_floating(typ) else "u" if pa.types.is_unsigned_integer(typ) else "i"
    return np.dtype(f"{kind}{typ.bit_width // 8}")


def _unbits(buffer: pa.Buffer | None, offset: int, n: int) -> np.ndarray:
    if buffer is None:
        return np.ones(n, dtype=bool)
    return np.unpackbits(np.frombuffer(buffer, dtype=np.uint8), count=offset + n, bitorder="little")[offset:].astype(bool)
