"""What an explorer output shows without a live kernel: a static summary of what was displayed.

A widget output is a reference to a model that lives in the kernel. Saved and reopened without
that kernel, JupyterLab's widget renderer answers "Error displaying widget: model not found";
nbconvert (nbviewer) and GitHub skip the widget view when the notebook carries no widget state
and show the next MIME type they know. So the explorer's display bundle carries, beside the
widget view:

* `text/html`: the overview as an escaped HTML card (what nbviewer, GitHub, VS Code and an
  untrusted JupyterLab notebook show);
* `application/vnd.deltaexplore.explorer+json`: the same summary as JSON, for the deltaexplore
  JupyterLab extension, which renders it ahead of the widget view and swaps in the live
  explorer when the kernel still has the model (else the summary stays).

Every string taken from the table is escaped with `html.escape`.
"""

from __future__ import annotations

import html
from typing import Any

from deltaexplore.inspect.formatting import format_value, metric_unit, timestamp_title
from deltaexplore.widgets.arrow_ipc import from_ipc

__all__ = ["EXPLORER_MIME", "summary", "summary_html"]

EXPLORER_MIME = "application/vnd.deltaexplore.explorer+json"

#: overview metrics shown in the static summary, in order: (section, metric, label)
_SHOWN = (
    ("size", "files", "files"),
    ("size", "bytes", "size"),
    ("size", "live_rows", "live rows"),
    ("size", "deleted_rows", "deleted rows"),
    ("layout", "partitions", "partitions"),
    ("layout", "small_files", "small files"),
    ("layout", "dv_files", "files with deletion vectors"),
)


def summary(explorer: Any) -> dict[str, Any]:
    """A JSON-safe summary of what `explorer` shows: table, version, commit, key numbers, schema."""
    data = explorer.overview_data or {}
    metrics: dict[tuple[str, str], dict[str, Any]] = {}
    if data.get("metrics"):
        for r in from_ipc(data["metrics"]).to_pylist():
            metrics[(r["section"], r["metric"])] = r
    facts = []
    for section, metric, label in _SHOWN:
        r = metrics.get((section, metric))
        if r is None or (r["number"] is None and r["value"] is None):
            continue  # not counted (the first view leaves out row counts)
        shown = format_value(metric_unit(r["unit"]), r["number"]) if r["number"] is not None else (r["value"] or "")
        facts.append({"label": label, "value": shown, "status": r["status"]})
    columns: list[dict[str, str]] = []
    if data.get("schema"):
        columns = [
            {"name": c["column"], "type": c["type"] + (f" collate {c['collation']}" if c.get("collation") else "")}
            for c in from_ipc(data["schema"]).to_pylist()
            if c.get("depth", 0) == 0
        ]
    commit = data.get("commit") or {}
    return {
        "uri": explorer.uri,
        "title": explorer.title or explorer.uri,
        "version": explorer.version,
        "latest_version": explorer.max_version,
        "tab": explorer.tab,
        "operation": commit.get("operation"),
        "user": commit.get("user_name") or commit.get("user_id"),
        "timestamp": format_value("timestamp", commit.get("timestamp")) if commit.get("timestamp") is not None else None,
        "timestamp_utc": timestamp_title(commit.get("timestamp")) if commit.get("timestamp") is not None else None,
        "description": (metrics.get(("table", "description")) or {}).get("value"),
        "partition_columns": (metrics.get(("layout", "partition_columns")) or {}).get("value"),
        "facts": facts,
        "columns": columns[:60],
        "more_columns": max(0, len(columns) - 60),
    }


def summary_html(s: dict[str, Any]) -> str:
    """`summary(...)` as a self-contained HTML card (inline styles: no stylesheet is loaded)."""
    e = html.escape
    muted = "color:var(--jp-ui-font-color2,#666)"
    when = ""
    if s.get("timestamp"):
        when = f" · <span title='{e(s['timestamp_utc'] or '')} UTC'>{e(s['timestamp'])}</span>"
    who = f" · by {e(str(s['user']))}" if s.get("user") else ""
    op = f" · <code>{e(str(s['operation']))}</code>" if s.get("operation") else ""
    behind = (
        "" if s["version"] == s["latest_version"] else f" <span style='{muted}'>(latest: {e(str(s['latest_version']))})</span>"
    )
    facts = "".join(
        f"<tr><th style='text-align:left;font-weight:normal;padding:1px 14px 1px 0;{muted}'>{e(f['label'])}</th>"
        f"<td style='padding:1px 0;font-variant-numeric:tabular-nums'>{e(f['value'])}</td></tr>"
        for f in s["facts"]
    )
    cols = ", ".join(f"{e(c['name'])} <span style='{muted}'>{e(c['type'])}</span>" for c in s["columns"])
    if s.get("more_columns"):
        cols += f", … ({s['more_columns']} more)"
    desc = f"<div style='margin:2px 0'>{e(s['description'])}</div>" if s.get("description") else ""
    parts = (
        f"<div style='margin-top:4px'><span style='{muted}'>partitioned by</span> {e(s['partition_columns'])}</div>"
        if s.get("partition_columns") not in (None, "", "none")
        else ""
    )
    return (
        "<div class='deltaexplore-explorer-static' style='font-family:var(--jp-ui-font-family,sans-serif);"
        "font-size:13px;border:1px solid var(--jp-border-color2,#ddd);border-radius:6px;padding:10px 12px;max-width:900px'>"
        f"<div style='font-size:15px;font-weight:600'>Delta table {e(s['title'])}</div>"
        f"<div style='{muted};font-family:var(--jp-code-font-family,monospace);font-size:12px;overflow-wrap:anywhere'>"
        f"{e(s['uri'])}</div>"
        f"{desc}<div style='margin:6px 0'>version <b>{e(str(s['version']))}</b>{behind}{op}{when}{who}</div>"
        f"<table style='border-collapse:collapse;margin:4px 0'>{facts}</table>{parts}"
        f"<div style='margin-top:4px'><span style='{muted}'>columns</span> {cols or '–'}</div>"
        f"<div style='margin-top:8px;{muted};font-size:12px'>A static summary saved with the notebook: "
        "run the cell for the interactive explorer.</div></div>"
    )
