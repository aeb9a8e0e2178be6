"""Shaping inspection results: a table conformed to its declared schema, rows sorted stably,
epoch milliseconds as timestamps."""

from __future__ import annotations

from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["conform", "sorted_rows", "to_ts"]


def conform(columns: dict[str, Any], schema: pa.Schema) -> pa.Table:
    """A table with exactly `schema` from arrays/lists (missing columns are null). Chunked
    columns stay chunked (a snapshot's paths or stats are hundreds of MB at 1M files: no copy)."""
    n = None
    for v in columns.values():
        if v is not None:
            n = len(v)
            break
    n = n or 0
    arrays = []
    for f in schema:
        value = columns.get(f.name)
        if value is None:
            arrays.append(pa.nulls(n, f.type))
            continue
        if not isinstance(value, (pa.Array, pa.ChunkedArray)):
            value = pa.array(value, f.type)
        if value.type != f.type:
            value = value.cast(f.type)
        arrays.append(value)
    return pa.Table.from_arrays(arrays, schema=schema)


def sorted_rows(table: pa.Table, keys: list[tuple[str, str]]) -> pa.Table:
    """`table.sort_by(keys)` (stable, nulls last), ordered by polars' multithreaded sort: for a
    few hundred thousand rows with a string key, a quarter of Arrow's time."""
    names = [k for k, _ in keys]
    frame = pl.from_arrow(table.select(names))
    assert isinstance(frame, pl.DataFrame)
    order = (
        frame.with_row_index("__row")
        .sort(names, descending=[d == "descending" for _, d in keys], nulls_last=True, maintain_order=True)
        .get_column("__row")
    )
    return table.take(order.to_arrow())


def to_ts(values: Any) -> pa.Array:
    """int64 milliseconds -> timestamp[ms, UTC]."""
    arr = values if isinstance(values, pa.Array) else pa.array(values, pa.int64())
    return pc.cast(arr.cast(pa.int64()), pa.timestamp("ms", tz="UTC"))
