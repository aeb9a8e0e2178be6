"""File actions for writers: normalise them to Arrow tables and serialise them as log lines.

Writers hand file actions around as Arrow tables with the log's field names (the schemas in
`core.actions`), exactly as `Snapshot.add_actions()` returns them, or as lists of dicts in log
JSON form. `file_actions_table` turns either into the canonical table; `action_lines` turns a
table back into newline-free JSON objects (null fields left out, maps as objects).
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.actions import FILE_ACTION_FIELDS
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
        return schema.empty_table()
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
    """One JSON line (without newline) per action of a `file_actions_table`."""
    if table.num_rows == 0:
        return []
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


def has_nulls(table: pa.Table, column: str) -> bool:
    return table.num_rows > 0 and table.column(column).null_count > 0


def sum_column(table: pa.Table, column: str) -> int:
    if table.num_rows == 0:
        return 0
    return int(pc.sum(table.column(column)).as_py() or 0)
