"""Rich display of a `Table` in notebooks: the explorer widget, with static fallbacks.

`Table._repr_mimebundle_` (registered by `deltaexplore.widgets.register_display`) returns
  * the explorer's widget view when ipywidgets/anywidget are installed and a kernel is running,
  * `application/vnd.deltaexplore.table+json`: a JSON summary the JupyterLab extension renders
    (it survives saving the notebook, unlike widget views),
  * `text/html`: an escaped summary card, and `text/plain`.
Every string taken from the table is escaped with `html.escape`.
"""

from __future__ import annotations

import html
from typing import Any

from deltaexplore.core.protocol.schema import type_text
from deltaexplore.errors import DeltaExploreError
from deltaexplore.widgets.dependencies import missing

__all__ = ["MIME_TYPE", "summary_html", "summary_json", "table_mimebundle"]

MIME_TYPE = "application/vnd.deltaexplore.table+json"


def _human(n: int | None) -> str:
    from deltaexplore.inspect.formatting import human_bytes

    return human_bytes(n)


def _files(n: int) -> str:
    from deltaexplore.inspect.formatting import count_noun

    return count_noun(n, "file")


def summary_json(table: Any, version: int | None = None, *, snapshot: Any = None) -> dict[str, Any]:
    """A small JSON-safe summary: location, version, time, protocol, partitioning, schema, files, bytes."""
    snap = snapshot if snapshot is not None else table.snapshot(version)
    out: dict[str, Any] = {
        "uri": table.uri,
        "version": snap.version,
        "timestamp": snap.timestamp.isoformat(timespec="seconds"),
        "protocol": {"reader": snap.protocol.min_reader_version, "writer": snap.protocol.min_writer_version},
        "name": None,
        "partition_columns": [],
        "columns": [],
    }
    if snap.has_metadata:
        md = snap.metadata
        out["name"] = md.name
        out["partition_columns"] = list(md.partition_columns)
        try:
            out["columns"] = [{"name": f.name, "type": type_text(f)} for f in snap.schema.fields]
        except DeltaExploreError:
            out["columns"] = []
    out["num_files"] = snap.num_files
    out["size_bytes"] = snap.size_in_bytes
    return out


def summary_html(summary: dict[str, Any]) -> str:
    """An HTML card for `summary_json` output; all table text escaped."""
    e = html.escape
    cols = ", ".join(f"{e(c['name'])} <i>{e(c['type'])}</i>" for c in summary["columns"][:30])
    if len(summary["columns"]) > 30:
        cols += f", … ({len(summary['columns']) - 30} more)"
    rows = [
        ("version", f"{summary['version']} ({e(summary['timestamp'])})"),
        ("protocol", f"reader v{summary['protocol']['reader']}, writer v{summary['protocol']['writer']}"),
        ("partitioned by", e(", ".join(summary["partition_columns"])) or "not partitioned"),
        ("files", f"{summary['num_files']:,} ({e(_human(summary['size_bytes']))})"),
        ("columns", cols or "–"),
    ]
    body = "".join(f"<tr><th style='text-align:left;padding-right:1em'>{k}</th><td>{v}</td></tr>" for k, v in rows)
    title = e(summary["name"] or summary["uri"])
    return (
        f"<div class='deltaexplore-table'><strong>Delta table {title}</strong>"
        f"<div style='color:#666'>{e(summary['uri'])}</div><table>{body}</table></div>"
    )


def _widgets_available() -> bool:
    if missing():
        return False
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    ip = get_ipython()
    return ip is not None and getattr(ip, "kernel", None) is not None


def table_mimebundle(table: Any, include: Any = None, exclude: Any = None) -> dict[str, Any]:
    """The mime bundle of a `Table` (see module docstring)."""
    explorer = None
    try:
        if _widgets_available():
            from deltaexplore.widgets.explorer import Explorer

            explorer = Explorer(table)  # one snapshot serves the explorer and the static summary
        summary = summary_json(table, snapshot=explorer.view.snap if explorer is not None else None)
    except DeltaExploreError as exc:
        msg = f"Delta table {table.uri}: {exc}"
        return {"text/plain": msg, "text/html": f"<pre>{html.escape(msg)}</pre>"}
    bundle: dict[str, Any] = {
        "text/plain": f"Delta table {table.uri} at version {summary['version']} ({_files(summary['num_files'])})",
        "text/html": summary_html(summary),
        MIME_TYPE: summary,
    }
    if explorer is not None:
        view = explorer._repr_mimebundle_(include=include, exclude=exclude)
        data = view[0] if isinstance(view, tuple) else view
        bundle.update({k: v for k, v in (data or {}).items() if k != "text/plain"})
    return bundle
