"""Row sources: the tables behind the explorer's grids, sorted, filtered and windowed in the kernel.

A grid in the browser never holds a million rows: it asks its source for the rows it is about
to show (`window(start, end, sort, filter)`), and AG Grid's infinite row model asks again as
the user scrolls. The source keeps the whole inspection table (Arrow columns, mostly the
snapshot's own buffers), computes one order per (sort, filter) with polars and caches a few;
a window is then a `take` of at most a few hundred rows, normalised for the browser. Exports
(CSV or Arrow) write the whole sorted, filtered table.
"""

from __future__ import annotations

import io
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from deltaexplore.core.arrow import take_rows
from deltaexplore.errors import InvalidArgumentError
from deltaexplore.inspect.formatting import partition_names, partition_value_columns, unit_of
from deltaexplore.widgets.arrow_ipc import normalize

__all__ = ["PARTITION_VALUE_PREFIX", "RowSource", "parse_filter", "parse_sort", "with_partition_values"]

#: most rows one window request may ask for
MAX_WINDOW = 5000
#: name prefix of the columns `with_partition_values` adds (`partition:date`)
PARTITION_VALUE_PREFIX = "partition:"
#: field metadata key naming the partition column a column holds the values of
PARTITION_COLUMN_KEY = b"partition_column"


def with_partition_values(table: pa.Table, names: list[str] | None = None) -> pa.Table:
    """`table` with one string column per partition column (`partition:<name>`, its values)
    split from its `partition` keys (``date=2024-01-01/region=emea``): a grid shows the values
    under the column's name, not the ``date=`` every row shares. `names` are the table's
    partition columns; None: read from the keys (`formatting.partition_names`). A table
    without a `partition` column, or unpartitioned, is returned as it is."""
    if "partition" not in table.column_names:
        return table
    keys = table.column("partition")
    if names is None:
        names = partition_names(pc.unique(keys).to_pylist())
    if not names:
        return table
    for name, values in zip(names, partition_value_columns(keys, names)):
        meta = {b"unit": b"text", b"doc": f"value of the partition column {name}".encode(), PARTITION_COLUMN_KEY: name.encode()}
        table = table.append_column(pa.field(f"{PARTITION_VALUE_PREFIX}{name}", pa.string(), metadata=meta), values)
    return table


def parse_sort(sort: Any, columns: list[str]) -> tuple[tuple[str, bool], ...]:
    """`[[column, "asc"|"desc"], ...]` from the browser, checked against the table's columns."""
    out: list[tuple[str, bool]] = []
    for item in sort or []:
        if not isinstance(item, (list, tuple)) or len(item) != 2:
            raise InvalidArgumentError(f"a sort is [column, 'asc'|'desc'], got {item!r}")
        col, direction = item
        if col not in columns:
            raise InvalidArgumentError(f"cannot sort by {col!r}: expected one of {', '.join(columns)}")
        if direction not in ("asc", "desc"):
            raise InvalidArgumentError(f"sort direction must be 'asc' or 'desc', got {direction!r}")
        out.append((str(col), direction == "desc"))
    return tuple(out)


def parse_filter(spec: Any, columns: list[str]) -> tuple[str, tuple[tuple[str, float, float], ...]]:
    """(text, ranges) from `{"text": str, "ranges": {column: [lo, hi]}}`."""
    if spec is None:
        return "", ()
    if not isinstance(spec, dict):
        raise InvalidArgumentError(f"a filter is a dict with 'text' and 'ranges', got {spec!r}")
    text = spec.get("text") or ""
    if not isinstance(text, str):
        raise InvalidArgumentError(f"filter text must be a string, got {text!r}")
    ranges = []
    for col, bounds in sorted((spec.get("ranges") or {}).items()):
        if col not in columns:
            raise InvalidArgumentError(f"cannot filter on {col!r}: expected one of {', '.join(columns)}")
        if not isinstance(bounds, (list, tuple)) or len(bounds) != 2:
            raise InvalidArgumentError(f"a range filter is [lo, hi], got {bounds!r}")
        ranges.append((str(col), float(bounds[0]), float(bounds[1])))
    return text.strip(), tuple(ranges)


def _as_text(values: pa.ChunkedArray) -> pa.ChunkedArray:
    """A column as text for the filter box: strings as they are, other scalars cast."""
    if pa.types.is_string(values.type) or pa.types.is_large_string(values.type):
        return values
    return pc.cast(values, pa.string())


@dataclass
class RowSource:
    """One table behind a grid.

    Args:
        table: the rows (an inspection table, or a selection of its columns).
        search_columns: columns the filter text is matched against (case-insensitive; a column
            of numbers, dates or times as its text).
        default_sort: the order when the grid asks for none.
        code: the Python expression that returns this table (shown by "copy code").
        name: the export's file name stem.
    """

    table: pa.Table
    search_columns: tuple[str, ...] = ()
    default_sort: tuple[tuple[str, bool], ...] = ()
    code: str = ""
    name: str = "table"
    _orders: OrderedDict[Any, pa.Array | None] = field(default_factory=OrderedDict, repr=False)

    @property
    def total(self) -> int:
        return self.table.num_rows

    def describe(self) -> dict[str, Any]:
        """What the browser needs before asking for rows: the size, the columns (name, display
        unit, doc, and for a column of partition values its partition column) and the code."""
        fields = [
            {
                "name": f.name,
                "unit": unit_of(f),
                "doc": (f.metadata or {}).get(b"doc", b"").decode(),
                "type": str(f.type),
                **({"partition_column": md.decode()} if (md := (f.metadata or {}).get(PARTITION_COLUMN_KEY)) else {}),
            }
            for f in self.table.schema
        ]
        return {"total": self.total, "code": self.code, "name": self.name, "fields": fields}

    def _order(
        self, sort: tuple[tuple[str, bool], ...], text: str, ranges: tuple[tuple[str, float, float], ...]
    ) -> pa.Array | None:
        """Row indices in display order (None: every row in table order)."""
        key = (sort or self.default_sort, text.lower(), ranges)
        if key in self._orders:
            self._orders.move_to_end(key)
            return self._orders[key]
        sort = sort or self.default_sort
        mask = None
        if text and self.search_columns:
            needle = text.lower()
            for c in self.search_columns:
                hit = pc.fill_null(pc.match_substring(_as_text(self.table.column(c)), needle, ignore_case=True), False)
                mask = hit if mask is None else pc.or_(mask, hit)
        for col, lo, hi in ranges:
            values = self.table.column(col)
            inside = pc.fill_null(pc.and_(pc.greater_equal(values, lo), pc.less_equal(values, hi)), False)
            mask = inside if mask is None else pc.and_(mask, inside)
        rows = None if mask is None else np.flatnonzero(mask.to_numpy(zero_copy_only=False))
        if sort:
            names = [c for c, _ in sort]
            frame = pl.from_arrow(self.table.select(names))
            assert isinstance(frame, pl.DataFrame)
            frame = frame.with_row_index("__row")
            if rows is not None:
                frame = frame[rows]
            order = frame.sort(names, descending=[d for _, d in sort], nulls_last=True, maintain_order=True).get_column("__row")
            result: pa.Array | None = pa.array(order.to_numpy().astype(np.int64))
        else:
            result = None if rows is None else pa.array(rows.astype(np.int64))
        self._orders[key] = result
        while len(self._orders) > 6:
            self._orders.popitem(last=False)
        return result

    def warm(self) -> RowSource:
        """Compute the default order now (a background job does, so that the grid's first
        window, asked for on the kernel's main thread, is only a `take`)."""
        self._order((), "", ())
        return self

    def rows(self, sort: Any = None, filter: Any = None) -> pa.Table:
        """Every row, sorted and filtered as the grid shows them."""
        cols = self.table.column_names
        order = self._order(parse_sort(sort, cols), *parse_filter(filter, cols))
        return self.table if order is None else take_rows(self.table, order)

    def window(self, start: int, end: int, sort: Any = None, filter: Any = None) -> tuple[int, pa.Table]:
        """(rows matching the filter, rows start..end of them in display order, normalised)."""
        cols = self.table.column_names
        order = self._order(parse_sort(sort, cols), *parse_filter(filter, cols))
        total = self.total if order is None else len(order)
        start = max(0, int(start))
        end = min(total, max(start, int(end)), start + MAX_WINDOW)
        if order is None:
            rows = self.table.slice(start, end - start)
        else:
            rows = take_rows(self.table, order.slice(start, end - start))  # no concatenation of chunks
        return total, normalize(rows)

    def export(self, fmt: str, sort: Any = None, filter: Any = None) -> tuple[bytes, str, str]:
        """(bytes, file name, MIME type) of the sorted, filtered table as CSV or an Arrow IPC file."""
        rows = self.rows(sort, filter)
        if fmt == "csv":
            buf = io.BytesIO()
            pacsv.write_csv(normalize(rows), buf)
            return buf.getvalue(), f"{self.name}.csv", "text/csv"
        if fmt == "arrow":
            sink = pa.BufferOutputStream()
            with pa.ipc.new_file(sink, rows.schema) as writer:
                writer.write_table(rows)
            return sink.getvalue().to_pybytes(), f"{self.name}.arrow", "application/vnd.apache.arrow.file"
        raise InvalidArgumentError(f"export format must be 'csv' or 'arrow', got {fmt!r}")
