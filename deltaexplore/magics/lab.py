"""What the JupyterLab extension runs in a table's kernel: the explorer, or a short message.

The extension's "Open in Delta Explorer" command opens a main-area tab backed by one kernel per
table and runs `open_explorer(location)` there. A location that is not a readable Delta table
gives a one-paragraph message card (what was opened, what went wrong), never a traceback.
"""

from __future__ import annotations

import html
from typing import Any

from deltaexplore.errors import DeltaExploreError
from deltaexplore.widgets import explore

__all__ = ["LabMessage", "open_explorer"]


class LabMessage:
    """A short message shown in the explorer tab instead of the explorer."""

    def __init__(self, title: str, detail: str) -> None:
        self.title = title
        self.detail = detail

    def __repr__(self) -> str:
        return f"{self.title}\n{self.detail}"

    def _repr_html_(self) -> str:
        e = html.escape
        return (
            "<div class='dx-lab-message' role='alert' style='font-family:var(--jp-ui-font-family);padding:12px 16px;"
            "border-left:3px solid var(--jp-error-color1,#cf222e);background:var(--jp-layout-color2,#f6f8fa);max-width:60em'>"
            f"<div style='font-weight:600;margin-bottom:4px'>{e(self.title)}</div>"
            f"<div style='color:var(--jp-ui-font-color1)'>{e(self.detail)}</div></div>"
        )


def open_explorer(location: str, *, storage_options: dict[str, Any] | None = None) -> Any:
    """The explorer of the table at `location`, or a `LabMessage` saying why it cannot open."""
    try:
        return explore(location, storage_options=storage_options)
    except DeltaExploreError as exc:
        return LabMessage(f"Cannot open {location} as a Delta table", str(exc))
