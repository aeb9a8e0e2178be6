"""File statistics, the one way in: numRecords, per-column bounds and the typed stats table.

Each add action's `stats` is a JSON text (or, in checkpoints, a `stats_parsed` struct). Two
readers sit behind this module and give the same values:

- `stats_parse`: every document parsed (`pyarrow.json`, only the requested columns);
- `stats_search`: a column's values found in the text without parsing it (the compiled kernel
  `_stats_kernel.c` where it was built, else polars and numpy), for a few columns at a time.

`column_bounds` decides which one serves a request (`column_limit`); `num_records` is the one
numRecords reader (what the search cannot read on its way goes through it); `file_stats` is
`Snapshot.file_stats`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.arrow import empty, from_numpy, put_rows, scalar, text_buffers, to_numpy
from deltaexplore.core.log.state import TableState
from deltaexplore.core.protocol.schema import leaf_paths
from deltaexplore.core.scan import stats_search
from deltaexplore.core.scan.stats_columns import stats_columns
from deltaexplore.core.scan.stats_parse import stats_for_adds, variant_stats
from deltaexplore.errors import ColumnNotFoundError

__all__ = ["Bounds", "column_bounds", "column_limit", "file_stats", "num_records"]

#: a stats text that starts with numRecords (writers put it first): its digits, not one more
_LEADING_RE = r'^\{"numRecords":(?P<n>[0-9]{1,19})(?:[^0-9]|$)'
_INT64_MAX = "9223372036854775807"  # compared as text with 19 digits
_INT64_DIGITS = 18  # this many digits always fit


def num_records(adds: pa.Table, rows: np.ndarray | None = None) -> pa.Array:
    """numRecords of each add (or of the adds at `rows`, increasing indices).

    Writers almost always put numRecords first: those are read by an anchored match at the
    start of the stats text; other documents through a regex;
    adds without JSON stats from `stats_parsed`. Null where no count is known (or it does not
    fit an int64).
    """
    pieces, base = [], 0
    for chunk in adds.column("stats").chunks:
        n = len(chunk)
        local = None if rows is None else rows[(rows >= base) & (rows < base + n)] - base
        base += n
        if local is None or len(local):
            pieces.append(_chunk_records(chunk, local))
    out = pa.concat_arrays(pieces) if pieces else empty(pa.int64())
    if out.null_count and "stats_parsed" in adds.column_names:
        parsed = adds.column("stats_parsed")
        if pa.types.is_struct(parsed.type) and parsed.type.get_field_index("numRecords") >= 0:
            counts = pc.struct_field(parsed, "numRecords")
            if rows is not None:
                counts = counts.take(from_numpy(rows, pa.int64()))
            out = pc.coalesce(out, pc.cast(counts, pa.int64()).combine_chunks())
    return out


def _chunk_records(stats: pa.Array, rows: np.ndarray | None) -> pa.Array:
    """numRecords of one chunk of stats texts (of its `rows`, when given) from the text."""
    values, found = _leading_records(stats, rows)
    index = np.arange(len(stats)) if rows is None else rows
    valid = to_numpy(pc.is_valid(stats)) if stats.null_count else np.ones(len(stats), bool)
    missed = np.flatnonzero(~found & valid[index])
    out = from_numpy(values, mask=~found)
    if len(missed):
        text = stats.take(from_numpy(index[missed], pa.int64()))
        digits = pc.struct_field(pc.extract_regex(text, r'"numRecords"\s*:\s*(?P<n>-?\d+)'), "n")
        fits = pc.less_equal(pc.utf8_length(digits), scalar(_INT64_DIGITS, pa.int32()))  # beyond int64: not a usable count
        counts = pc.cast(pc.if_else(fits, digits, scalar(None, digits.type)), pa.int64())
        out = put_rows(out, missed, counts)
    return out


def _leading_records(stats: pa.Array, rows: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """numRecords of the stats texts that start with `{"numRecords":<digits>` (values, found):
    at most 19 digits that fit an int64 (more digits are left to the regex reader, which
    refuses them). The compiled kernel reads the texts in place (~0.1 s at 1M files); without
    it, one anchored RE2 match per text (it stops at the first byte that differs; ~0.25 s)."""
    m = len(stats) if rows is None else len(rows)
    values = np.zeros(m, dtype=np.int64)
    found = np.zeros(m, dtype=bool)
    if m == 0 or stats.null_count == len(stats):
        return values, found
    texts = stats if rows is None else stats.take(from_numpy(rows, pa.int64()))
    read = getattr(stats_search.KERNEL, "leading_records", None)  # None: no kernel, or one built before it
    if read is not None:
        offsets, data = text_buffers(texts)
        has = to_numpy(texts.is_valid()).view(np.uint8) if texts.null_count else np.ones(m, dtype=np.uint8)
        hits = np.zeros(m, dtype=np.uint8)
        read(data, np.ascontiguousarray(offsets[:-1]), np.ascontiguousarray(offsets[1:]), has, values, hits)
        return values, hits.view(bool)
    digits = pc.struct_field(pc.extract_regex(texts, _LEADING_RE), "n")
    short = pc.less_equal(pc.utf8_length(digits), scalar(_INT64_DIGITS, pa.int32()))
    fits = pc.or_(short, pc.less_equal(digits, scalar(_INT64_MAX, digits.type)))
    counts = pc.cast(pc.if_else(fits, digits, scalar(None, digits.type)), pa.int64())
    found = to_numpy(pc.is_valid(counts))
    values = to_numpy(counts, null=0)
    return values, found


def column_limit() -> int:
    """Up to how many columns one search per column beats parsing every stats document
    (measured at 1M files, 10 columns: 2.4 s of kernel scans against 5-7 s of parsing; the numpy
    search costs about five times the kernel)."""
    return 16 if stats_search.KERNEL is not None else 2


class Bounds(NamedTuple):
    """One column's statistics per add: min, max (the column's type), null count, and the add's
    numRecords (what data skipping's `FileEnv` takes)."""

    min: pa.Array
    max: pa.Array
    null_count: pa.Array
    num_records: pa.Array


def column_bounds(snapshot: TableState, adds: pa.Table, columns: list[str]) -> dict[str, Bounds]:
    """The bounds of each of `columns` (logical names) that has statistics, per add of `adds`.

    Up to `column_limit()` leaf columns are searched in the stats text, one scan each; more
    columns, a struct, or a column the search cannot find (a leaf name used twice in the schema,
    a name that needs JSON escapes) send all of them to one parse. The two give the same values.
    """
    if len(columns) <= column_limit():
        cols = {
            c.name: c for c in stats_columns(snapshot.schema, snapshot.column_mapping_mode, snapshot.partition_columns, columns)
        }
        # decided before any scan: a struct or an unsearchable column sends every column to the parse
        found = [cols[name] for name in columns if name in cols]
        nested = any(name not in cols and any(c.startswith(name + ".") for c in cols) for name in columns)
        if not nested and all(stats_search.searchable(snapshot, col) for col in found):
            out: dict[str, Bounds] = {}
            records = None
            for col in found:
                got = stats_search.search_bounds(snapshot, adds, col)
                assert got is not None
                if records is None:
                    records = _records_of(adds, got)
                out[col.name] = Bounds(got.min, got.max, got.null_count, records)
            return out
    stats = stats_for_adds(snapshot, adds, columns)
    parsed_records = stats.column("num_records").combine_chunks()
    return {
        name: Bounds(
            stats.column(f"min.{name}").combine_chunks(),
            stats.column(f"max.{name}").combine_chunks(),
            stats.column(f"null_count.{name}").combine_chunks(),
            parsed_records,
        )
        for name in columns
        if f"min.{name}" in stats.column_names
    }


def _records_of(adds: pa.Table, got: stats_search.Found) -> pa.Array:
    """numRecords per add: what the search read on its way, the rest by `num_records`."""
    if got.num_records is None or got.records_unsure is None:
        return num_records(adds)
    rows = np.flatnonzero(got.records_unsure)
    if not len(rows):
        return got.num_records
    return put_rows(got.num_records, rows, num_records(adds, rows))


def file_stats(snapshot: TableState, columns: list[str] | str | None = None) -> pa.Table:
    """Typed per-file statistics of a snapshot: `path`, `num_records`, `tight_bounds`, then
    `min.<col>`, `max.<col>`, `null_count.<col>` per leaf column (logical, dotted names); a
    variant column has `variant_min.<col>` / `variant_max.<col>` instead, JSON objects of the
    bounds of its paths (`stats_parse.variant_stats`: no bounds of the column itself).

    Raises:
        ColumnNotFoundError: a column that is not in the table, or a partition column (its
            value is in `partition_values`: files carry no stats for it).
    """
    if isinstance(columns, str):
        columns = [columns]
    variants = {".".join(p) for p, f in leaf_paths(snapshot.schema) if f.type.name == "variant"}
    if columns is not None:
        known = {c.name for c in stats_columns(snapshot.schema, snapshot.column_mapping_mode, [], None)} | variants
        tops = {c.split(".", 1)[0] for c in known}
        parts = {p.lower() for p in snapshot.partition_columns}
        for name in columns:
            if not isinstance(name, str):
                raise ColumnNotFoundError(f"column names are strings, got {name!r}")
            if name.lower() in parts:
                raise ColumnNotFoundError(f"{name!r} is a partition column: files carry no stats for it (see partition_values)")
            if name not in known and name not in tops:
                raise ColumnNotFoundError(f"no column {name!r} with per-file stats (columns: {', '.join(sorted(tops))})")
    adds = snapshot.add_actions()
    plain = [c for c in columns if c not in variants] if columns is not None else None
    out = stats_for_adds(snapshot, adds, plain)
    for name, values in variant_stats(snapshot, adds, columns).items():
        out = out.append_column(name, values)
    return out
