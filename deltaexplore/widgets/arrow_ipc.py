"""Arrow IPC buffers for the browser: tables the explorer sends, in the types `arrow_lite.js` reads.

The widget never sends table data as JSON: every tab's rows travel as one Arrow IPC stream in a
binary widget buffer. Types are normalised first to what the small JS reader decodes (int64,
float64, utf8, bool); times become ISO strings and nested values their JSON-like text, so the
browser never interprets bytes it cannot display.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["from_ipc", "normalize", "to_ipc"]


def _text(values: pa.ChunkedArray | pa.Array) -> pa.Array:
    """Nested or binary values as display text (only used on pages, never on a whole table)."""
    out: list[str | None] = []
    for v in values.to_pylist():
        if v is None:
            out.append(None)
        elif isinstance(v, bytes):
            out.append(v.hex())
        else:
            out.append(json.dumps(v, default=str, ensure_ascii=False))
    return pa.array(out, pa.string())


def _normalize_column(col: pa.ChunkedArray) -> pa.ChunkedArray | pa.Array:
    t = col.type
    if pa.types.is_null(t) or pa.types.is_boolean(t) or t == pa.string() or t == pa.float64() or t == pa.int64():
        return col
    if pa.types.is_integer(t):
        return pc.cast(col, pa.int64()) if t != pa.uint64() else pc.cast(col, pa.float64())
    if pa.types.is_floating(t) or pa.types.is_decimal(t):
        return pc.cast(col, pa.float64())
    if pa.types.is_timestamp(t):
        fmt = "%Y-%m-%dT%H:%M:%S"
        out = pc.strftime(col, format=fmt + ("Z" if t.tz else ""))
        return out
    if pa.types.is_date(t) or pa.types.is_time(t):
        return pc.cast(col, pa.string())
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return pc.cast(col, pa.string())
    if pa.types.is_dictionary(t):
        return _normalize_column(pc.cast(col, t.value_type))
    return _text(col)


def normalize(table: pa.Table) -> pa.Table:
    """`table` with every column in a type the browser-side reader understands."""
    cols = [_normalize_column(table.column(i)) for i in range(table.num_columns)]
    return pa.table(cols, names=table.column_names)


def to_ipc(table: pa.Table) -> bytes:
    """One Arrow IPC stream (uncompressed) holding `table`, normalised for the browser."""
    t = normalize(table)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, t.schema) as writer:
        writer.write_table(t)
    return sink.getvalue().to_pybytes()


def from_ipc(data: bytes | memoryview) -> pa.Table:
    """Read back what `to_ipc` wrote (tests and notebooks)."""
    return pa.ipc.open_stream(pa.py_buffer(bytes(data))).read_all()
