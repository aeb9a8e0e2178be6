"""Arrow helpers: a column's chunks combined, rows of chunked tables picked and replaced, the bytes of string arrays.

`take_rows`: `pa.Table.take` on a chunked string column concatenates its chunks first: three
rows of a 1M-file snapshot (16 chunks of stats JSON) cost a 500 MB copy and over a second.
Snapshot file tables are chunked (checkpoints are read in batches, commits appended), so
callers that pick rows from them go through `take_rows`.

`put_rows`: an array with some rows replaced (the rows a fast path could not read, read again).

`text_buffers`: a string array's offsets and bytes as numpy, for vectorized code that reads
text in place (stats JSON, log lines) instead of copying the strings out.

`warm_conversions`: pyarrow's first NumPy conversion made at a chosen moment (it imports
pandas, when installed, on the first one).

"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["combined", "put_rows", "take_rows", "text_buffers", "warm_conversions"]


def combined(col: pa.Array | pa.ChunkedArray) -> pa.Array:
    """One array of a column (its chunks concatenated; an array as it is)."""
    return col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col


def take_rows(table: pa.Table, rows: np.ndarray | pa.Array | pa.ChunkedArray | Sequence[int]) -> pa.Table:
    """`table.take(rows)`, taken batch by batch (each batch only the rows inside it); rows in
    any order, repeats allowed, no nulls."""
    if isinstance(rows, pa.ChunkedArray):
        rows = rows.combine_chunks()
    index = (rows.to_numpy(zero_copy_only=False) if isinstance(rows, pa.Array) else np.asarray(rows)).astype(np.int64)
    if len(index) and (index.min() < 0 or index.max() >= table.num_rows):
        raise IndexError(f"row index out of bounds for a table of {table.num_rows} rows")
    if all(col.num_chunks <= 1 for col in table.columns):
        return table.take(pa.array(index, pa.int64()))
    increasing = bool(np.all(index[1:] >= index[:-1]))
    order = None if increasing else np.argsort(index, kind="stable")
    ordered = index if order is None else index[order]
    pieces, start = [], 0
    for batch in table.to_batches():
        lo, hi = np.searchsorted(ordered, [start, start + batch.num_rows])
        if hi > lo:
            pieces.append(batch.take(pa.array(ordered[lo:hi] - start, pa.int64())))
        start += batch.num_rows
    out = pa.Table.from_batches(pieces, schema=table.schema)
    if order is None:
        return out
    back = np.empty_like(order)
    back[order] = np.arange(len(order))
    return out.combine_chunks().take(pa.array(back, pa.int64()))  # only the picked rows


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
    return pc.if_else(pa.array(mask), replacement.take(pa.array(index, mask=index < 0)), values)


def warm_conversions() -> None:
    """Make pyarrow's first conversion of a NumPy value now. pyarrow sets up its pandas
    integration on the first one (importing pandas when it is installed: 0.3-0.7 s of a fresh
    process on the development machine), and every open makes one: an open that waits for an
    object store makes it while its requests are in flight, on the thread that would make it
    moments later anyway."""
    pa.array(np.zeros(1, np.int64))
