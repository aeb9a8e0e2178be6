"""File actions for writers: normalise them to Arrow tables and serialise them as log lines.

Writers hand file actions around as Arrow tables with the log's field names (the schemas in
`core.actions`), exactly as `Snapshot.add_actions()` returns them, or as lists of dicts in log
JSON form. `file_actions_table` turns either into the canonical table; `action_lines` turns a
table back into newline-free JSON objects (null fields left out, maps as objects).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.arrow import empty_table
from deltaexplore.core.protocol.actions import FILE_ACTION_FIELDS
from deltaexplore.errors import WriteRefusedError

__all__ = ["action_line", "action_lines", "file_actions_table", "json_text"]


def json_text(obj: Any) -> str:
    """Compact JSON (one line, no spaces), as log files hold it."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _coerce(value: Any, typ: pa.DataType) -> Any:
    if value is None:
        return None
    if pa.types.is_map(typ):
        if isinstance(value, dict):
            return [(str(k), None if v is None else str(v)) for k, v in value.items()]
        return value
    if pa.types.is_struct(typ) and isinstance(value, dict):
        return {f.name: _coerce(value.get(f.name), f.type) for f in typ}
    if pa.types.is_string(typ) and isinstance(value, (dict, list)):
        return json_text(value)
    return value


def file_actions_table(kind: str, actions: pa.Table | list[dict[str, Any]] | None) -> pa.Table:
    """`actions` as a table with exactly the `kind` ('add', 'remove', 'cdc') log fields.

    Tables keep their rows (extra columns such as `stats_parsed`, `version` or `line` are
    dropped, missing ones become null); dicts use log JSON names, maps as objects.

    Raises:
        WriteRefusedError: an action has no path or a field has the wrong type.
    """
    fields = FILE_ACTION_FIELDS[kind]
    schema = pa.schema(fields)
    if actions is None:
        return empty_table(schema)
    if isinstance(actions, pa.Table):
        n = actions.num_rows
        cols = []
        for f in fields:
            if f.name in actions.column_names:
                col = actions.column(f.name).combine_chunks()
                if col.type != f.type:
                    try:
                        col = col.cast(f.type)
                    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
                        raise WriteRefusedError(f"{kind} actions: field {f.name} has type {col.type}, expected {f.type}") from exc
                cols.append(col)
            else:
                cols.append(pa.nulls(n, f.type))
        table = pa.table(cols, schema=schema)
    else:
        rows = list(actions)
        for r in rows:
            if not isinstance(r, dict):
                raise WriteRefusedError(f"{kind} actions: expected dicts with log field names, got {type(r).__name__}")
        try:
            table = pa.table({f.name: pa.array([_coerce(r.get(f.name), f.type) for r in rows], f.type) for f in fields})
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError) as exc:
            raise WriteRefusedError(f"{kind} actions: a field has the wrong type: {exc}") from exc
    if table.num_rows and table.column("path").null_count:
        raise WriteRefusedError(f"{kind} actions: every action needs a path ({table.column('path').null_count} have none)")
    return table


def _clean(value: Any, typ: pa.DataType) -> Any:
    if value is None:
        return None
    if pa.types.is_map(typ):
        return {k: v for k, v in value}
    if pa.types.is_struct(typ):
        out = {}
        for f in typ:
            v = _clean(value.get(f.name), f.type)
            if v is not None:
                out[f.name] = v
        return out
    return value


def action_lines(kind: str, table: pa.Table) -> list[str]:
    """One JSON line (without newline) per action of a `file_actions_table`.

    Built column by column with Arrow string kernels (no Python object per action); rows with
    control characters other than newline/tab/carriage return go through `json`.
    """
    if table.num_rows == 0:
        return []
    fields = FILE_ACTION_FIELDS[kind]
    table = table.select([f.name for f in fields])
    try:
        body = _object(
            [
                (f.name, table.column(f.name).combine_chunks(), f.name == "partitionValues" and kind in ("add", "cdc"))
                for f in fields
            ]
        )
    except _Fallback:
        return _action_lines_slow(kind, table)
    lines = pc.binary_join_element_wise(f'{{"{kind}":', body, "}", "")
    return lines.to_pylist()


class _Fallback(Exception):
    """A value the vectorized encoder does not handle."""


_RARE_CONTROL = "[\\x00-\\x08\\x0b\\x0c\\x0e-\\x1f]"


def _quoted(strings: pa.Array) -> pa.Array:
    """JSON string literals of a string column (nulls stay null)."""
    strings = strings.cast(pa.string())
    if len(strings) and pc.any(pc.fill_null(pc.match_substring_regex(strings, _RARE_CONTROL), False)).as_py():
        raise _Fallback
    out = pc.replace_substring(strings, "\\", "\\\\")
    out = pc.replace_substring(out, '"', '\\"')
    out = pc.replace_substring(out, "\n", "\\n")
    out = pc.replace_substring(out, "\r", "\\r")
    out = pc.replace_substring(out, "\t", "\\t")
    return pc.binary_join_element_wise('"', out, '"', "")


def _value(arr: pa.Array) -> pa.Array:
    """JSON text of each value (null where the value is null)."""
    t = arr.type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return _quoted(arr)
    if pa.types.is_integer(t):
        return arr.cast(pa.string())
    if pa.types.is_boolean(t):
        return pc.if_else(arr, "true", "false")
    if pa.types.is_map(t):
        return _map(arr)
    if pa.types.is_struct(t):
        return _object([(f.name, pc.struct_field(arr, [i]), False) for i, f in enumerate(t)], mask=arr.is_null())
    raise _Fallback


def _object(members: list[tuple[str, pa.Array, bool]], mask: pa.Array | None = None) -> pa.Array:
    """`{...}` per row from (name, column, required) members; null members are left out (a
    required map becomes `{}`)."""
    parts = []
    for name, col, required in members:
        text = _value(col)
        if required:
            text = pc.fill_null(text, "{}")
        parts.append(pc.binary_join_element_wise(f'"{name}":', text, ""))
    joined = _join_skipping_nulls(parts, ",")
    out = pc.binary_join_element_wise("{", joined, "}", "")
    if mask is not None and mask.null_count == 0 and pc.any(mask).as_py():
        out = pc.if_else(mask, pa.scalar(None, pa.string()), out)
    return out


def _join_skipping_nulls(parts: list[pa.Array], sep: str) -> pa.Array:
    """Row-wise join of the non-null values of `parts` (pyarrow's `null_handling="skip"` drops
    rows whose every value is null, so the lists are built here)."""
    n = len(parts[0])
    valid = np.stack([p.is_valid().to_numpy(zero_copy_only=False) for p in parts], axis=1)
    rows, cols = np.nonzero(valid)  # row-major: the members of a row stay in order
    values = pa.concat_arrays([p.cast(pa.string()) for p in parts]).take(pa.array(cols * n + rows, pa.int64()))
    offsets = np.concatenate([[0], np.cumsum(valid.sum(axis=1))]).astype(np.int32)
    return pc.binary_join(pa.ListArray.from_arrays(pa.array(offsets), values), sep)


def _map(arr: pa.Array) -> pa.Array:
    """`{"k":"v",...}` per row of a map<string,string> (null maps stay null)."""
    keys = _quoted(arr.keys)
    values = pc.fill_null(_quoted(arr.items), "null")
    pairs = pc.binary_join_element_wise(keys, values, ":")
    lists = pa.ListArray.from_arrays(arr.offsets, pairs)
    inner = pc.fill_null(pc.binary_join(lists, ","), "")
    out = pc.binary_join_element_wise("{", inner, "}", "")
    if arr.null_count:
        out = pc.if_else(arr.is_null(), pa.scalar(None, pa.string()), out)
    return out


def _action_lines_slow(kind: str, table: pa.Table) -> list[str]:
    fields = FILE_ACTION_FIELDS[kind]
    types = {f.name: f.type for f in fields}
    required_maps = {"partitionValues"} if kind in ("add", "cdc") else set()
    out = []
    for row in table.select([f.name for f in fields]).to_pylist():
        body: dict[str, Any] = {}
        for name, value in row.items():
            cleaned = _clean(value, types[name])
            if cleaned is None:
                if name in required_maps:
                    body[name] = {}
                continue
            body[name] = cleaned
        out.append(json_text({kind: body}))
    return out


def action_line(kind: str, body: dict[str, Any]) -> str:
    """One JSON line for a non-file action."""
    return json_text({kind: body})
