"""File statistics parsed: typed min/max/null counts per column, in batches.

The stats JSON of many files is parsed in one `pyarrow.json` pass per batch with an explicit
schema holding only the requested columns (by physical name). Values written as JSON strings
(timestamps, dates) are parsed afterwards; `stats_parsed` from checkpoints fills files without
JSON stats. Output columns: `path`, `num_records`, `tight_bounds`, then `min.<col>`,
`max.<col>`, `null_count.<col>` for each requested leaf column (logical, dotted names).
"""

from __future__ import annotations

import json
from decimal import Decimal, InvalidOperation
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pajson

from deltaexplore.core.log.state import TableState
from deltaexplore.core.protocol.dv_format import DVFormatError, z85_decode
from deltaexplore.core.protocol.schema import leaf_paths
from deltaexplore.core.protocol.variant import split_variant, to_json
from deltaexplore.core.scan.stats_columns import StatsColumn, physical_path, stats_columns, typed_values
from deltaexplore.errors import DeltaExploreError

__all__ = ["from_parsed", "parse_stats", "stats_for_adds", "variant_stats"]

BATCH = 200_000


def _nest(cols: list[StatsColumn], leaf_type: Any) -> pa.StructType:
    """A struct type following physical paths, leaves typed by `leaf_type(col)`."""
    tree: dict[str, Any] = {}
    for c in cols:
        node = tree
        for part in c.physical[:-1]:
            node = node.setdefault(part, {})
        node[c.physical[-1]] = c

    def build(node: dict[str, Any]) -> pa.StructType:
        fields = []
        for key, value in node.items():
            fields.append(pa.field(key, build(value) if isinstance(value, dict) else leaf_type(value)))
        return pa.struct(fields)

    return build(tree)


def _dig(arr: pa.Array, path: tuple[str, ...]) -> pa.Array:
    for part in path:
        if arr is None or not pa.types.is_struct(arr.type) or arr.type.get_field_index(part) < 0:
            return None  # type: ignore[return-value]
        parent_valid = pc.is_valid(arr) if arr.null_count else None
        arr = arr.field(part)
        if parent_valid is not None:
            arr = pc.if_else(parent_valid, arr, pa.scalar(None, arr.type))
    return arr


def parse_stats(stats: pa.Array, cols: list[StatsColumn]) -> dict[str, pa.Array]:
    """Parse a stats JSON column into num_records, tight_bounds and typed per-column stats."""
    n = len(stats)
    values_type = _nest(cols, lambda c: c.json_type)
    counts_type = _nest(cols, lambda c: pa.int64())
    schema = pa.schema(
        [
            pa.field("numRecords", pa.int64()),
            pa.field("tightBounds", pa.bool_()),
            pa.field("minValues", values_type),
            pa.field("maxValues", values_type),
            pa.field("nullCount", counts_type),
        ]
    )
    texts = pc.fill_null(stats.cast(pa.large_string()), "{}")
    texts = pc.if_else(pc.equal(texts, ""), "{}", texts)
    try:
        parsed = _json_batch(texts, schema)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError):
        parsed = _json_rows(texts.to_pylist(), schema)
    out: dict[str, pa.Array] = {"num_records": parsed.field("numRecords"), "tight_bounds": parsed.field("tightBounds")}
    mins, maxs, nulls = parsed.field("minValues"), parsed.field("maxValues"), parsed.field("nullCount")
    for c in cols:
        out[f"min.{c.name}"] = typed_values(_dig(mins, c.physical), c, n)
        out[f"max.{c.name}"] = typed_values(_dig(maxs, c.physical), c, n)
        nc = _dig(nulls, c.physical)
        out[f"null_count.{c.name}"] = nc if nc is not None else pa.nulls(n, pa.int64())
    return out


def _json_batch(texts: pa.Array, schema: pa.Schema) -> pa.StructArray:
    """Parse many JSON texts at once: join them into NDJSON and run `pyarrow.json`."""
    if pc.any(pc.match_substring(texts, "\n")).as_py():
        raise ValueError("newline inside stats")
    one_list = pa.LargeListArray.from_arrays(pa.array([0, len(texts)], pa.int64()), texts)
    joined = pc.binary_join(one_list, pa.scalar("\n", pa.large_string()))[0]
    buf = joined.as_buffer()
    longest = int(pc.max(pc.binary_length(texts)).as_py() or 0)
    table = pajson.read_json(
        pa.BufferReader(buf if buf is not None else b""),  # zero-copy (io.BytesIO copies)
        read_options=pajson.ReadOptions(block_size=max(1 << 22, 2 * longest + 16)),
        parse_options=pajson.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore"),
    )
    if table.num_rows != len(texts):
        raise ValueError("row count mismatch")
    return pa.StructArray.from_arrays(
        [table.column(i).combine_chunks() for i in range(table.num_columns)], names=table.column_names
    )


def _coerce_json(value: Any, typ: pa.DataType) -> Any:
    if value is None:
        return None
    if pa.types.is_struct(typ):
        if not isinstance(value, dict):
            return None
        return {f.name: _coerce_json(value.get(f.name), f.type) for f in typ}
    if pa.types.is_string(typ):
        return value if isinstance(value, str) else None
    if pa.types.is_boolean(typ):
        return value if isinstance(value, bool) else None
    if pa.types.is_floating(typ):
        if isinstance(value, str):
            try:
                return float(value)
            except ValueError:
                return None
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    if pa.types.is_integer(typ):
        return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    if pa.types.is_decimal(typ):
        try:
            return Decimal(str(value))
        except InvalidOperation:
            return None
    return value


def _json_rows(texts: list[str], schema: pa.Schema) -> pa.StructArray:
    """Slow path: one row at a time, dropping values of the wrong type instead of failing."""
    typ = pa.struct(list(schema))
    rows = []
    for text in texts:
        try:
            obj = json.loads(text)
        except (ValueError, RecursionError):
            obj = {}
        rows.append(_coerce_json(obj if isinstance(obj, dict) else {}, typ))
    try:
        return pa.array(rows, typ)
    except (pa.ArrowInvalid, OverflowError):
        cleaned = []
        for row in rows:
            try:
                pa.array([row], typ)
                cleaned.append(row)
            except (pa.ArrowInvalid, OverflowError):
                cleaned.append({})
        return pa.array(cleaned, typ)


def from_parsed(parsed: pa.Array, cols: list[StatsColumn]) -> dict[str, pa.Array]:
    """What `parse_stats` gives, read from checkpoint `stats_parsed` structs instead of text."""
    n = len(parsed)
    valid = pc.is_valid(parsed)

    def top(name: str) -> pa.Array | None:
        if parsed.type.get_field_index(name) < 0:
            return None
        child = parsed.field(name)
        return pc.if_else(valid, child, pa.scalar(None, child.type))

    nr = top("numRecords")
    tb = top("tightBounds")
    out: dict[str, pa.Array] = {
        "num_records": nr.cast(pa.int64()) if nr is not None else pa.nulls(n, pa.int64()),
        "tight_bounds": tb if tb is not None else pa.nulls(n, pa.bool_()),
    }
    mins, maxs = top("minValues"), top("maxValues")
    nulls = top("nullCount")
    if nulls is None:
        nulls = top("nullCounts")
    for c in cols:
        out[f"min.{c.name}"] = typed_values(_dig(mins, c.physical) if mins is not None else None, c, n)
        out[f"max.{c.name}"] = typed_values(_dig(maxs, c.physical) if maxs is not None else None, c, n)
        nc = _dig(nulls, c.physical) if nulls is not None else None
        out[f"null_count.{c.name}"] = nc.cast(pa.int64()) if nc is not None else pa.nulls(n, pa.int64())
    return out


def stats_for_adds(snapshot: TableState, adds: pa.Table, columns: list[str] | None = None) -> pa.Table:
    """Typed statistics of some add actions of `snapshot` (only `columns`, default all)."""
    cols = stats_columns(snapshot.schema, snapshot.column_mapping_mode, snapshot.partition_columns, columns)
    n = adds.num_rows
    stats = adds.column("stats").combine_chunks()
    pieces: list[dict[str, pa.Array]] = []
    for start in range(0, max(n, 1), BATCH):
        chunk = stats.slice(start, BATCH)
        pieces.append(parse_stats(chunk, cols))
        if len(chunk) == 0:
            break
    out = {k: pa.concat_arrays([p[k] for p in pieces]) for k in pieces[0]}
    if "stats_parsed" in adds.column_names and stats.null_count:
        parsed = adds.column("stats_parsed").combine_chunks()
        if pa.types.is_struct(parsed.type):
            fallback = from_parsed(parsed, cols)
            has_json = pc.is_valid(stats)
            for k, v in out.items():
                out[k] = pc.if_else(has_json, v, fallback[k].cast(v.type))
    table = {"path": adds.column("path").combine_chunks().cast(pa.string())}
    table.update(out)
    return pa.table(table)


def variant_stats(snapshot: TableState, adds: pa.Table, columns: list[str] | None = None) -> dict[str, pa.Array]:
    """The statistics of variant columns (Delta's "Statistics for Variant Columns"): per column,
    `variant_min.<col>` / `variant_max.<col>`, JSON text of objects whose keys are normalized
    JSON paths and whose values are the bounds of those paths (each path's own min and max,
    from different rows; decoded from the z85 text of the stats JSON), and
    `null_count.<col>`. They are no plain bounds of the column: nothing here skips on them."""
    mode = snapshot.column_mapping_mode
    wanted = []
    for logical, f in leaf_paths(snapshot.schema):
        name = ".".join(logical)
        if f.type.name == "variant" and (columns is None or name in columns or logical[0] in columns):
            wanted.append(StatsColumn(logical, physical_path(snapshot.schema, logical, mode), f))
    if not wanted:
        return {}
    n = adds.num_rows
    strings = _nest(wanted, lambda c: pa.string())
    schema = pa.schema(
        [
            pa.field("minValues", strings),
            pa.field("maxValues", strings),
            pa.field("nullCount", _nest(wanted, lambda c: pa.int64())),
        ]
    )
    texts = pc.fill_null(adds.column("stats").combine_chunks().cast(pa.large_string()), "{}")
    texts = pc.if_else(pc.equal(texts, ""), "{}", texts)
    try:
        parsed = _json_batch(texts, schema)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError):
        parsed = _json_rows(texts.to_pylist(), schema)
    out: dict[str, pa.Array] = {}
    for c in wanted:
        for key, side in (("variant_min", "minValues"), ("variant_max", "maxValues")):
            encoded = _dig(parsed.field(side), c.physical)
            out[f"{key}.{c.name}"] = _variant_bounds_json(encoded) if encoded is not None else pa.nulls(n, pa.string())
        nulls = _dig(parsed.field("nullCount"), c.physical)
        out[f"null_count.{c.name}"] = nulls if nulls is not None else pa.nulls(n, pa.int64())
    return out


def _variant_bounds_json(encoded: pa.Array) -> pa.Array:
    """z85 text of variant values (metadata bytes then value bytes) as JSON text; a value that
    does not decode stays null (a malformed bound bounds nothing)."""
    out: list[str | None] = []
    for text in encoded.to_pylist():
        try:
            out.append(None if text is None else to_json(*split_variant(z85_decode(text))))
        except (DVFormatError, DeltaExploreError):
            out.append(None)
    return pa.array(out, pa.string())
