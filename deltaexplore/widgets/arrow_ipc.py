"""Arrow IPC buffers for the browser: the explorer's tables, in types Arrow JS shows directly.

The widget never sends rows as JSON: every table travels as one Arrow IPC stream in a binary
widget buffer, decoded in the browser by Apache Arrow's JS library. Before sending, columns are
normalised to types the grid formats without guessing: integers as int64, other numbers as
float64, timestamps as `timestamp[ms]` (UTC when zoned), dates and times as ISO text, binary as
hex, variants as the JSON text Spark shows, and other nested values (maps, structs, lists) as
JSON text. Field metadata (the inspection
schemas' `doc` and display `unit`) travels with the schema.
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.protocol.variant import variant_structs_as_json
from deltaexplore.errors import DeltaExploreError

__all__ = ["from_ipc", "normalize", "to_ipc"]


def _default(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.hex()
    return str(value)


def _nested_text(values: pa.ChunkedArray | pa.Array) -> pa.Array:
    """Nested values as JSON text (maps as objects). A Python loop: only used on windows of rows
    and small tables, never on a whole million-row column."""
    out: list[str | None] = []
    is_map = pa.types.is_map(values.type)
    for v in values.to_pylist():
        if v is None:
            out.append(None)
        else:
            out.append(json.dumps(dict(v) if is_map else v, default=_default, ensure_ascii=False))
    return pa.array(out, pa.string())


def _normalize_column(col: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
    t = col.type
    if pa.types.is_null(t) or pa.types.is_boolean(t) or t == pa.string() or t == pa.float64() or t == pa.int64():
        return col
    if pa.types.is_dictionary(t):
        return _normalize_column(col.cast(t.value_type))
    if t == pa.uint64():
        return pc.cast(col, pa.float64())
    if pa.types.is_integer(t):
        return pc.cast(col, pa.int64())
    if pa.types.is_floating(t) or pa.types.is_decimal(t):
        return pc.cast(col, pa.float64())
    if pa.types.is_timestamp(t):
        return pc.cast(col, pa.timestamp("ms", tz="UTC" if t.tz else None), safe=False)
    if pa.types.is_date(t) or pa.types.is_time(t) or pa.types.is_duration(t):
        return pc.cast(col, pa.string())
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return pc.cast(col, pa.string())
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return pa.array([None if v is None else v.hex() for v in col.to_pylist()], pa.string())
    return _nested_text(col)


def normalize(table: pa.Table) -> pa.Table:
    """`table` with every column in a type the browser shows directly; field metadata kept."""
    try:
        table = variant_structs_as_json(table)
    except DeltaExploreError:
        pass  # bytes that are no valid variant: shown as the struct of hex they are
    arrays = [_normalize_column(table.column(i)) for i in range(table.num_columns)]
    fields = [pa.field(f.name, a.type, nullable=True, metadata=f.metadata) for f, a in zip(table.schema, arrays)]
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


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
