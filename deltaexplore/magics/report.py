"""`Report`: what a `%delta` maintenance subcommand returns: a summary plus the operation's rows.

A plain object (no UI library): `summary` is a dict, `table` an Arrow table (the operation's
metrics, or the files it would touch) or None. It shows as escaped HTML in the visual language
of the inspection tables (`widgets.tables`), so saved outputs persist, and as text elsewhere.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from deltaexplore.widgets.tables import report_html, report_text

__all__ = ["Report"]


class Report:
    """A titled summary (dict) with optional rows (Arrow table) and a one-line note."""

    def __init__(self, title: str, summary: dict[str, Any], table: pa.Table | None = None, *, note: str = "") -> None:
        self.title = title
        self.summary = summary
        self.table = table
        self.note = note

    def __getitem__(self, key: str) -> Any:
        return self.summary[key]

    def __repr__(self) -> str:
        return report_text(self.title if not self.note else f"{self.title} ({self.note})", self.summary, self.table)

    def _repr_html_(self) -> str:
        return report_html(self.title, self.summary, self.table, note=self.note)
