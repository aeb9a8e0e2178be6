"""`Report`: what a `%delta` subcommand returns when the answer is a summary plus rows.

A plain object (no UI library): `summary` is a dict, `table` an Arrow table (or None). It shows
as escaped HTML in notebooks (so saved outputs persist) and as stable text elsewhere.
"""

from __future__ import annotations

import html
import json
from typing import Any

import pyarrow as pa

__all__ = ["Report", "table_html"]


def _cell(v: Any) -> str:
    if v is None:
        return "–"
    if isinstance(v, (dict, list, tuple)):
        return json.dumps(v, default=str, ensure_ascii=False)
    return str(v)


def table_html(table: pa.Table, max_rows: int = 50) -> str:
    """An escaped HTML table of the first `max_rows` rows."""
    e = html.escape
    head = "".join(f"<th>{e(c)}</th>" for c in table.column_names)
    rows = []
    for r in table.slice(0, max_rows).to_pylist():
        rows.append("<tr>" + "".join(f"<td>{e(_cell(v))}</td>" for v in r.values()) + "</tr>")
    more = f"<p>… {table.num_rows - max_rows} more rows</p>" if table.num_rows > max_rows else ""
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>{more}"


class Report:
    """A titled summary (dict) with optional rows (Arrow table)."""

    def __init__(self, title: str, summary: dict[str, Any], table: pa.Table | None = None) -> None:
        self.title = title
        self.summary = summary
        self.table = table

    def __getitem__(self, key: str) -> Any:
        return self.summary[key]

    def __repr__(self) -> str:
        lines = [self.title]
        lines += [f"  {k}: {_cell(v)}" for k, v in self.summary.items()]
        if self.table is not None:
            lines.append(f"  ({self.table.num_rows} rows: {', '.join(self.table.column_names)})")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        e = html.escape
        items = "".join(
            f"<tr><th style='text-align:left'>{e(k)}</th><td>{e(_cell(v))}</td></tr>" for k, v in self.summary.items()
        )
        rows = table_html(self.table) if self.table is not None and self.table.num_rows else ""
        return f"<div class='deltaexplore-report'><strong>{e(self.title)}</strong><table>{items}</table>{rows}</div>"
