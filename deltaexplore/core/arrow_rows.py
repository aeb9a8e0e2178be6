"""Rows of large chunked Arrow tables picked without concatenating them.

`pa.Table.take` on a chunked string column concatenates its chunks first: three rows of a
1M-file snapshot (16 chunks of stats JSON) cost a 500 MB copy and over a second. Snapshot file
tables are chunked (checkpoints are read in batches, commits appended), so callers that pick
rows from them go through `take_rows`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

__all__ = ["take_rows"]


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
