"""Inspection tables as a person reads them in a notebook: a static HTML table and a text summary.

A `pyarrow.Table` whose schema is tagged as a deltaexplore table (`formatting.TABLE_KEY`, set by
`deltaexplore.inspect.schemas` and by `%delta`) is shown formatted by its columns' display
units (`inspect.formatting`): bytes, counts, local times (UTC in the title), status pills,
operation badges, JSON as key/value chips, paths shortened to what tells files apart
(`formatting.short_path`: partition directories and the file's id; the whole path in the
title), a partition key column as one column of values per partition column (as the explorer
shows them). At most `max_rows` rows are shown, with the total; columns empty in every shown row
are left out and named in the footer. Metrics tables (overview, log health) are shown as a
report: one line per metric, grouped by section, the value in its row's unit.

The cell's value stays the Arrow table: `register_table_display()` adds IPython formatters
for `pyarrow.Table` (and tagged `pyarrow.Schema`) that return None for any table not tagged,
so other Arrow tables keep pyarrow's own display unless asked (`every_arrow_table=True`).
No JavaScript: the output is plain HTML with one scoped `<style>` using JupyterLab's theme
variables (light and dark), readable without them (saved notebooks, nbviewer). Everything
taken from a table is escaped.
"""

from __future__ import annotations

import html
import math
import sys
from datetime import tzinfo
from typing import Any

import pyarrow as pa

from deltaexplore.core.protocol.variant import variant_structs_as_json
from deltaexplore.errors import DeltaExploreError
from deltaexplore.inspect import formatting as fmt

__all__ = [
    "STYLE",
    "register_table_display",
    "report_html",
    "report_text",
    "schema_html",
    "split_partitions",
    "table_html",
    "table_text",
    "titled",
]

#: schema metadata key of a table's title (set by `%delta`, optional)
TITLE_KEY = b"deltaexplore.title"

#: shown names of the inspection tables
_LABELS = {
    "history": "History",
    "commits": "Commits",
    "diff": "Diff",
    "diff_files": "Changed files",
    "files": "Files",
    "partitions": "Partitions",
    "layout": "Layout",
    "layout_summary": "Layout summary",
    "explain": "Explain",
    "deletion_vectors": "Deletion vectors",
    "dv_files": "Deletion vector files",
    "deleted_rows": "Deleted rows",
    "metrics": "Metrics",
    "overview": "Overview",
    "log_health": "Log health",
    "log_files": "Log files",
    "reconstructable_versions": "Versions",
    "vacuum_preview": "VACUUM preview",
    "features": "Features",
    "clients": "Clients",
    "client_features": "Client features",
    "compatibility": "Compatibility",
    "column_mapping": "Column mapping",
    "row_tracking": "Row tracking",
    "domain_metadata": "Domain metadata",
    "clustering": "Clustering",
    "transactions": "Transactions",
    "catalog_status": "Catalog status",
    "rows": "Rows",
    "schema": "Schema",
}

_NUMERIC_UNITS = {"bytes", "count", "version", "duration_ms", "ratio", "number"}
#: raw JSON columns that repeat what other columns say: shown last
_LAST_COLUMNS = ("stats", "raw", "commit_info")
#: tables of user data (rows, schemas): every column is shown, numbers as they are
_USER_DATA = ("rows", "schema")
_TEXT_CHARS = 96
_WRAP_CHARS = 60
_JSON_CHIPS = 4

STYLE = """
.dx-out{font-family:var(--jp-ui-font-family,system-ui,-apple-system,'Segoe UI',sans-serif);font-size:12px;
 color:var(--jp-ui-font-color1,#1f2328);margin:2px 0 8px;max-width:100%;line-height:1.45}
.dx-out .dx-cap{display:flex;flex-wrap:wrap;gap:4px 12px;align-items:baseline;margin:0 0 6px}
.dx-out .dx-title{font-weight:600;font-size:13px}
.dx-out .dx-sub,.dx-out .dx-foot{color:var(--jp-ui-font-color2,#59636e);font-size:11.5px}
.dx-out .dx-foot{margin-top:5px}
.dx-out .dx-scroll{overflow:auto;max-height:640px;width:fit-content;max-width:100%;box-sizing:border-box;
 border:1px solid var(--jp-border-color2,#d1d9e0);border-radius:6px;background:var(--jp-layout-color1,#fff)}
.dx-out .dx-scroll.dx-report{max-height:none}
.dx-out table.dx-grid{border-collapse:separate;border-spacing:0;table-layout:auto;margin:0;width:auto;
 font-size:12px;color:inherit;border:none}
.dx-out table.dx-grid th{position:sticky;top:0;z-index:1;background:var(--jp-layout-color2,#f6f8fa);
 color:var(--jp-ui-font-color1,#1f2328);font-weight:600;text-align:left;white-space:nowrap;padding:6px 10px;
 border:none;border-bottom:1px solid var(--jp-border-color2,#d1d9e0);vertical-align:bottom}
.dx-out table.dx-grid td{padding:4px 10px;white-space:nowrap;text-align:left;vertical-align:top;border:none;
 border-bottom:1px solid var(--jp-border-color3,#eaeef2);max-width:none;line-height:18px}
.dx-out table.dx-grid tbody tr:nth-child(odd),.dx-out table.dx-grid tbody tr:nth-child(even){background:transparent}
.dx-out table.dx-grid tbody tr:hover{background:var(--jp-rendermime-table-row-hover-background,rgba(66,165,245,.12))}
.dx-out table.dx-grid tbody tr:last-child td{border-bottom:none}
.dx-out table.dx-grid .dx-num{text-align:right;font-variant-numeric:tabular-nums}
.dx-out table.dx-grid tr.dx-section td{background:var(--jp-layout-color2,#f6f8fa);font-weight:600;
 text-transform:uppercase;letter-spacing:.04em;font-size:10.5px;color:var(--jp-ui-font-color2,#59636e);padding:3px 10px}
.dx-out .dx-null{color:var(--jp-ui-font-color3,#818b98)}
.dx-out .dx-mono{font-family:var(--jp-code-font-family,'SFMono-Regular',Menlo,Consolas,monospace);font-size:11.5px}
.dx-out .dx-wrap{white-space:normal;min-width:16em;max-width:38em}
.dx-out .dx-pill{display:inline-block;padding:0 8px;border-radius:9px;font-size:11px;font-weight:600;line-height:17px}
.dx-out .dx-pill.ok{background:rgba(31,136,61,.15);color:var(--jp-success-color1,#1a7f37)}
.dx-out .dx-pill.info{background:rgba(9,105,218,.13);color:var(--jp-info-color1,#0969da)}
.dx-out .dx-pill.warn{background:rgba(191,135,0,.18);color:var(--jp-warn-color1,#9a6700)}
.dx-out .dx-pill.error{background:rgba(207,34,46,.15);color:var(--jp-error-color1,#cf222e)}
.dx-out .dx-pill.other{background:rgba(128,128,128,.16)}
.dx-out .dx-badge{display:inline-block;padding:0 6px;border-radius:4px;background:rgba(128,128,128,.16);
 font-family:var(--jp-code-font-family,monospace);font-size:11px;line-height:17px}
.dx-out .dx-chip{display:inline-block;margin:0 4px 1px 0;padding:0 6px;border-radius:4px;line-height:16px;
 border:1px solid var(--jp-border-color2,#d1d9e0);font-size:11px;max-width:22em;overflow:hidden;
 text-overflow:ellipsis;vertical-align:top;white-space:nowrap}
.dx-out .dx-chip .dx-k{color:var(--jp-ui-font-color2,#59636e)}
.dx-out .dx-more{color:var(--jp-ui-font-color2,#59636e);font-size:11px}
.dx-out .dx-yes{color:var(--jp-success-color1,#1a7f37);font-weight:600}
.dx-out .dx-no{color:var(--jp-ui-font-color3,#818b98)}
.dx-out .dx-bar{display:inline-block;width:36px;height:5px;margin-left:6px;border-radius:3px;vertical-align:middle;
 background:rgba(128,128,128,.2);overflow:hidden}
.dx-out .dx-bar i{display:block;height:100%;background:var(--jp-brand-color1,#1f6feb)}
.dx-out dl.dx-kv{display:grid;grid-template-columns:max-content max-content;gap:3px 16px;margin:0 0 8px;padding:8px 12px;
 width:fit-content;max-width:100%;box-sizing:border-box;
 border:1px solid var(--jp-border-color2,#d1d9e0);border-radius:6px;background:var(--jp-layout-color1,#fff)}
.dx-out dl.dx-kv dt{color:var(--jp-ui-font-color2,#59636e);margin:0;padding:0;white-space:nowrap;font-weight:normal}
.dx-out dl.dx-kv dd{margin:0;padding:0;white-space:nowrap;font-variant-numeric:tabular-nums}
"""


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _label(name: str | None) -> str:
    return _LABELS.get(name or "", (name or "table").replace("_", " ").capitalize())


def titled(table: pa.Table, title: str, *, name: str | None = None) -> pa.Table:
    """`table` (no copy) with a display title, tagged as the deltaexplore table `name` if given."""
    md = dict(table.schema.metadata or {})
    md[TITLE_KEY] = title.encode()
    if name is not None:
        md[fmt.TABLE_KEY] = name.encode()
    return table.replace_schema_metadata(md)


def _is_metrics(schema: pa.Schema) -> bool:
    """A `METRICS_SCHEMA` table (overview, log health): shown as a report."""
    return fmt.table_name(schema) in ("metrics", "overview", "log_health") and {"metric", "value", "status"} <= set(schema.names)


def _title_of(schema: pa.Schema) -> str:
    raw = (schema.metadata or {}).get(TITLE_KEY)
    return raw.decode() if raw is not None else _label(fmt.table_name(schema))


# -- cells --------------------------------------------------------------------------------------
def _null() -> str:
    return '<span class="dx-null" title="null">—</span>'


def _truncated(text: str, limit: int, *, middle: bool = False, cls: str = "") -> str:
    short = fmt.truncate_middle(text, limit) if middle else (text if len(text) <= limit else text[: limit - 1] + "…")
    klass = f' class="{cls}"' if cls else ""
    title = f' title="{_e(text)}"' if short != text else ""
    return f"<span{klass}{title}>{_e(short)}</span>"


def _chips(items: list[tuple[str, str]] | list[str], raw: str) -> str:
    shown = items[:_JSON_CHIPS]
    parts = []
    for item in shown:
        if isinstance(item, tuple):
            k, v = item
            parts.append(f'<span class="dx-chip" title="{_e(k)}: {_e(v)}"><span class="dx-k">{_e(k)}</span> {_e(v)}</span>')
        else:
            parts.append(f'<span class="dx-chip" title="{_e(item)}">{_e(item)}</span>')
    if len(items) > len(shown):
        parts.append(f'<span class="dx-more" title="{_e(raw)}">+{len(items) - len(shown)} more</span>')
    return "".join(parts) if parts else '<span class="dx-null">{}</span>'


def _cell(unit: str, value: Any, tz: tzinfo | None, *, raw_numbers: bool = False, floating: bool = False) -> tuple[str, str]:
    """(td class, inner HTML) of one value; `raw_numbers`: numbers as written (user data);
    `floating`: the value's column is floating-point."""
    if raw_numbers and isinstance(value, (int, float)) and not isinstance(value, bool):
        return "dx-num", _e(repr(value) if isinstance(value, float) else str(value))
    if floating and _float_number(unit, value):
        return "dx-num", _e(fmt.human_float(value))
    if value is None:
        return ("dx-num" if unit in _NUMERIC_UNITS else ""), _null()
    if isinstance(value, float) and math.isnan(value) and unit in _NUMERIC_UNITS:
        return "dx-num", '<span class="dx-null">NaN</span>'
    if unit == "timestamp":
        text = fmt.format_value("timestamp", value, tz=tz)
        return "dx-num", f'<span title="UTC {_e(fmt.timestamp_title(value))}">{_e(text)}</span>'
    if unit == "bytes" and isinstance(value, (int, float)) and not isinstance(value, bool):
        exact = f"{value:,.0f} bytes"
        return "dx-num", f'<span title="{_e(exact)}">{_e(fmt.human_bytes(value))}</span>'
    if unit == "ratio" and isinstance(value, (int, float)) and not isinstance(value, bool):
        width = max(0.0, min(1.0, float(value))) * 100
        bar = f'<span class="dx-bar"><i style="width:{width:.0f}%"></i></span>'
        return "dx-num", f'<span title="{_e(repr(value))}">{_e(fmt.human_ratio(value))}</span>{bar}'
    if unit in _NUMERIC_UNITS and isinstance(value, (int, float)) and not isinstance(value, bool):
        return "dx-num", _e(fmt.format_value(unit, value, tz=tz))
    if unit == "bool" or isinstance(value, bool):
        return "", ('<span class="dx-yes" title="yes">✓</span>' if value else '<span class="dx-no" title="no">✗</span>')
    if unit == "status":
        level = fmt.status_level(value) or "other"
        return "", f'<span class="dx-pill {level}">{_e(value)}</span>'
    if unit == "operation":
        return "", f'<span class="dx-badge">{_e(value)}</span>'
    if unit == "path":
        text = str(value)
        short = fmt.short_path(text)
        title = f' title="{_e(text)}"' if short != text else ""
        return "", f'<span class="dx-mono"{title}>{_e(short)}</span>'
    if unit == "json" or isinstance(value, (dict, list)):
        items = fmt.json_items(value)
        raw = value if isinstance(value, str) else fmt.format_value("json", value)
        if items is not None:
            return "", _chips(items, raw)
        if isinstance(value, list):
            return "", _chips([fmt.format_value(None, v, tz=tz) for v in value], raw)
        return "", _truncated(str(value), _TEXT_CHARS, cls="dx-mono")
    text = fmt.format_value(unit, value, tz=tz)
    return "", _truncated(text, _TEXT_CHARS)


# -- tables -------------------------------------------------------------------------------------
def _readable(table: pa.Table) -> pa.Table:
    """Variant values as the JSON text Spark shows (the shown rows only); bytes that are not a
    valid variant stay as they are."""
    try:
        return variant_structs_as_json(table)
    except DeltaExploreError:
        return table


def split_partitions(table: pa.Table) -> pa.Table:
    """`table` with its `partition` key column (``date=2024-01-01/region=emea``) replaced by one
    column of values per partition column, named after it (as the explorer's grids show them),
    when the keys of its rows name the same columns; else `table` itself."""
    if "partition" not in table.column_names or table.num_rows == 0:
        return table
    keys = table.column("partition")
    names = fmt.partition_names(keys.to_pylist())
    if not names:
        return table
    at = table.column_names.index("partition")
    out = table.remove_column(at)
    for k, (name, values) in enumerate(zip(names, fmt.partition_value_columns(keys, names))):
        label = name if name not in table.column_names else f"{name} (partition)"
        meta = {fmt.UNIT_KEY: b"text", b"doc": f"value of the partition column {name}".encode()}
        out = out.add_column(at + k, pa.field(label, pa.string(), metadata=meta), values)
    return out.replace_schema_metadata(table.schema.metadata)


def _caption(title: str, sub: str) -> str:
    return f'<div class="dx-cap"><span class="dx-title">{_e(title)}</span><span class="dx-sub">{_e(sub)}</span></div>'


def _shape(n_rows: int, n_cols: int) -> str:
    return f"{fmt.count_noun(n_rows, 'row')} × {fmt.count_noun(n_cols, 'column')}"


def _wrap(body: str) -> str:
    return f'<div class="dx-out"><style>{STYLE}</style>{body}</div>'


def table_html(
    table: pa.Table, *, title: str | None = None, max_rows: int = 30, tz: tzinfo | None = None, style: bool = True
) -> str:
    """The table as escaped, formatted HTML (see the module docstring)."""
    schema = table.schema
    if _is_metrics(schema):
        body = _metrics_body(table, title or _title_of(schema), max_rows, tz)
        return _wrap(body) if style else f'<div class="dx-out">{body}</div>'
    title = title or _title_of(schema)
    shown = split_partitions(_readable(table.slice(0, max_rows)))
    schema = shown.schema
    rows = shown.to_pylist()
    user_data = fmt.table_name(schema) in _USER_DATA
    fields = [f for f in shown.schema if f.name not in _LAST_COLUMNS] + [f for f in shown.schema if f.name in _LAST_COLUMNS]
    keep = [f for f in fields if user_data or table.num_rows == 0 or any(r[f.name] is not None for r in rows)]
    empty = [f.name for f in fields if f not in keep]
    units = {f.name: fmt.unit_of(f) for f in keep}
    raw = {f.name: user_data and fmt.UNIT_KEY not in (f.metadata or {}) for f in keep}
    head = []
    for f in keep:
        doc = (f.metadata or {}).get(b"doc", b"").decode()
        tip = f"{f.name}: {doc}" if doc else f"{f.name} ({f.type})"
        cls = ' class="dx-num"' if units[f.name] in _NUMERIC_UNITS or units[f.name] == "timestamp" else ""
        head.append(f'<th{cls} title="{_e(tip)}">{_e(f.name)}</th>')
    body_rows = []
    for r in rows:
        tds = []
        for f in keep:
            value = r[f.name]
            cls, inner = _cell(units[f.name], value, tz, raw_numbers=raw[f.name], floating=pa.types.is_floating(f.type))
            if units[f.name] == "text" and isinstance(value, str) and len(value) > _WRAP_CHARS:
                inner = f'<div class="dx-wrap">{_e(value) if len(value) <= 600 else _truncated(value, 600)}</div>'
            tds.append(f'<td class="{cls}">{inner}</td>' if cls else f"<td>{inner}</td>")
        body_rows.append("<tr>" + "".join(tds) + "</tr>")
    if not rows:
        body_rows.append(f'<tr><td class="dx-null" colspan="{max(len(keep), 1)}">no rows</td></tr>')
    foot = []
    if table.num_rows > len(rows):
        foot.append(
            f"showing the first {fmt.human_count(len(rows))} of {fmt.human_count(table.num_rows)} rows · "
            f"{fmt.human_count(table.num_rows - len(rows))} more rows"
        )
    if empty:
        names = ", ".join(empty[:12]) + (f", … ({len(empty) - 12} more)" if len(empty) > 12 else "")
        foot.append(f"{fmt.human_count(len(empty))} empty {fmt.plural('column', len(empty))} not shown: {names}")
    footer = f'<div class="dx-foot">{_e(" · ".join(foot))}</div>' if foot else ""
    body = (
        _caption(title, _shape(table.num_rows, table.num_columns))
        + f'<div class="dx-scroll"><table class="dx-grid"><thead><tr>{"".join(head)}</tr></thead>'
        + f"<tbody>{''.join(body_rows)}</tbody></table></div>{footer}"
    )
    return _wrap(body) if style else f'<div class="dx-out">{body}</div>'


def _metric_value(row: dict[str, Any], tz: tzinfo | None) -> tuple[str, str]:
    number, word = row.get("number"), row.get("unit")
    unit = fmt.metric_unit(word)
    if number is None:
        value = row.get("value")
        if value is None:
            return "", _null()
        if value in ("True", "False"):
            return _cell("bool", value == "True", tz)
        return "", _truncated(str(value), _TEXT_CHARS)
    if unit == "timestamp":
        return "", _cell("timestamp", int(number), tz)[1]
    _, inner = _cell(unit, int(number) if unit in ("count", "version") and float(number).is_integer() else number, tz)
    if unit == "count" and word:
        inner += f' <span class="dx-null">{_e(word)}</span>'
    return "", inner


def _metrics_body(table: pa.Table, title: str, max_rows: int, tz: tzinfo | None) -> str:
    rows = table.slice(0, max(max_rows, 60)).to_pylist()
    body, section = [], None
    for r in rows:
        if r.get("section") != section:
            section = r.get("section")
            body.append(f'<tr class="dx-section"><td colspan="4">{_e(section or "")}</td></tr>')
        cls, value = _metric_value(r, tz)
        level = fmt.status_level(r.get("status"))
        # "info" is every plain fact: only ok / warn / error (or an unknown word) get a pill
        status = (
            f'<span class="dx-pill {level or "other"}">{_e(r.get("status"))}</span>'
            if r.get("status") and level != "info"
            else ""
        )
        detail = r.get("detail") or ""
        if r.get("number") is not None and detail in (
            fmt.format_value(fmt.metric_unit(r.get("unit")), r.get("number")),
            r.get("value"),
        ):
            detail = ""  # the detail only repeats the value
        detail_html = f'<div class="dx-wrap">{_e(detail)}</div>' if detail else ""
        body.append(
            f'<tr><td title="{_e(r.get("metric"))}">{_e(str(r.get("metric") or "").replace("_", " "))}</td>'
            f'<td class="{cls}">{value}</td><td>{status}</td><td>{detail_html}</td></tr>'
        )
    more = table.num_rows - len(rows)
    foot = f'<div class="dx-foot">{fmt.human_count(more)} more rows</div>' if more > 0 else ""
    problems = [r for r in table.select(["status"]).to_pylist() if fmt.status_level(r["status"]) in ("warn", "error")]
    sub = fmt.count_noun(table.num_rows, "metric") + (f" · {len(problems)} to look at" if problems else " · no warnings")
    head = "<th>metric</th><th>value</th><th>status</th><th>detail</th>"
    return (
        _caption(title, sub)
        + f'<div class="dx-scroll dx-report"><table class="dx-grid"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody>'
        + f"</table></div>{foot}"
    )


#: field metadata of `%delta schema`: the Delta type as text where the Arrow type says less
#: (a collated string: `string collate spark.UTF8_LCASE`)
_DELTA_TYPE = b"delta_type"


def _type_of(f: pa.Field) -> str:
    declared = (f.metadata or {}).get(_DELTA_TYPE)
    return declared.decode(errors="replace") if declared else str(f.type)


def schema_html(schema: pa.Schema, *, title: str | None = None) -> str:
    """An Arrow schema as a table of columns (name, type, nullable, metadata keys)."""
    rows = pa.table(
        {
            "column": [f.name for f in schema],
            "type": [_type_of(f) for f in schema],
            "nullable": [f.nullable for f in schema],
            "metadata": [
                [
                    (k.decode(errors="replace"), v.decode(errors="replace"))
                    for k, v in (f.metadata or {}).items()
                    if k != _DELTA_TYPE
                ]
                or None
                for f in schema
            ],
        },
        schema=pa.schema(
            [
                pa.field("column", pa.string(), metadata={"unit": "text"}),
                pa.field("type", pa.string(), metadata={"unit": "text"}),
                pa.field("nullable", pa.bool_(), metadata={"unit": "bool"}),
                pa.field("metadata", pa.map_(pa.string(), pa.string()), metadata={"unit": "json"}),
            ]
        ),
    )
    return table_html(rows, title=title or _title_of(schema), max_rows=500)


# -- text ---------------------------------------------------------------------------------------
def table_text(table: pa.Table, *, title: str | None = None, max_rows: int = 10, width: int = 110) -> str:
    """A readable fixed-width summary: title and shape, then the first rows of the columns
    that fit in `width` characters (empty columns left out)."""
    schema = table.schema
    title = title or _title_of(schema)
    lines = [f"{title}: {_shape(table.num_rows, table.num_columns)}"]
    if not _is_metrics(schema):
        shown = split_partitions(_readable(table.slice(0, max_rows)))
        schema = shown.schema
    else:
        shown = table.slice(0, max_rows)
    rows = shown.to_pylist()
    if _is_metrics(schema):
        for r in rows:
            number, word = r.get("number"), r.get("unit")
            unit = fmt.metric_unit(word)
            if number is None:
                value = r.get("value") or ""
            elif unit == "timestamp":
                value = fmt.human_timestamp(int(number))
            else:
                value = fmt.format_value(unit, number) + (f" {word}" if unit == "count" and word else "")
            status = f"[{r['status']}] " if r.get("status") in ("warn", "error") else ""
            lines.append(f"  {r.get('metric')!s:<28} {status}{value}")
    else:
        cols = [f for f in shown.schema if any(r[f.name] is not None for r in rows)]
        cells = {
            f.name: [_text_cell(fmt.unit_of(f), r[f.name], floating=pa.types.is_floating(f.type)) for r in rows] for f in cols
        }
        widths: dict[str, int] = {}
        used = 0
        chosen: list[pa.Field] = []
        for f in cols:
            w = min(max([len(f.name)] + [len(c) for c in cells[f.name]]), 40)
            if used + w + 2 > width and chosen:
                break
            widths[f.name], used = w, used + w + 2
            chosen.append(f)
        right = {f.name for f in chosen if fmt.unit_of(f) in _NUMERIC_UNITS}

        def fit(text: str, name: str) -> str:
            w = widths[name]
            text = text if len(text) <= w else text[: w - 1] + "…"
            return text.rjust(w) if name in right else text.ljust(w)

        lines.append("  " + "  ".join(fit(f.name, f.name) for f in chosen).rstrip())
        for i in range(len(rows)):
            lines.append("  " + "  ".join(fit(cells[f.name][i], f.name) for f in chosen).rstrip())
        hidden = len(cols) - len(chosen)
        if hidden:
            lines.append(f"  (+{hidden} more columns: {', '.join(f.name for f in cols[len(chosen) :][:8])})")
    if table.num_rows > len(rows):
        lines.append(f"  … {fmt.human_count(table.num_rows - len(rows))} more rows")
    return "\n".join(lines)


def _float_number(unit: str, value: Any) -> bool:
    """A "number" of a floating-point column: shown with its decimals also when whole
    (`human_float`: a column reads 1.00 next to 0.40)."""
    return unit == "number" and isinstance(value, float) and math.isfinite(value)


def _text_cell(unit: str, value: Any, *, floating: bool = False) -> str:
    if value is None:
        return ""
    if floating and _float_number(unit, value):
        return fmt.human_float(value)
    if unit == "path" and isinstance(value, str):
        short = fmt.short_path(value)  # too long for a text column: the name (partitions have a column)
        return short if len(short) <= 40 or "/" not in short else "…/" + short.rsplit("/", 1)[1]
    return fmt.format_value(unit, value).replace("\n", " ")


# -- reports (maintenance) ------------------------------------------------------------------------
def _summary_unit(key: str, value: Any) -> str:
    """The display unit of a report's summary value, from its key (the summary dicts of
    maintenance previews and runs are not schema-typed)."""
    if isinstance(value, bool):
        return "bool"
    if not isinstance(value, (int, float)):
        return "json" if isinstance(value, dict) else "text"
    if "bytes" in key or key.endswith("_size"):
        return "bytes"
    if key.startswith("version") or key.endswith("version") or "_version_" in key:
        return "version"
    if key.endswith("_ms") or "duration" in key:
        return "duration_ms"
    if "ratio" in key or "share" in key:
        return "ratio"
    if isinstance(value, float) and not value.is_integer():
        return "number"
    return "count"


def report_html(title: str, summary: dict[str, Any], table: pa.Table | None = None, *, note: str = "") -> str:
    """A maintenance report: a key/value card of `summary` and, below, `table` (the operation's
    metrics or the files it would touch), in the style of the inspection tables."""
    items = []
    for key, value in summary.items():
        if value is None:
            inner = _null()
        else:
            unit = _summary_unit(key, value)
            if isinstance(value, list):
                inner = _chips([fmt.format_value(None, v) for v in value], fmt.format_value(None, value)) if value else _null()
            else:
                inner = _cell(unit, value, None)[1]
        items.append(f"<dt>{_e(key.replace('_', ' '))}</dt><dd>{inner}</dd>")
    sub = f'<span class="dx-sub">{_e(note)}</span>' if note else ""
    card = f'<div class="dx-cap"><span class="dx-title">{_e(title)}</span>{sub}</div><dl class="dx-kv">{"".join(items)}</dl>'
    rows = table_html(table, style=False) if table is not None and table.num_rows else ""
    return _wrap(card + rows)


def report_text(title: str, summary: dict[str, Any], table: pa.Table | None = None) -> str:
    """The text form of `report_html`."""
    lines = [title]
    for key, value in summary.items():
        unit = _summary_unit(key, value)
        lines.append(f"  {key}: {fmt.format_value(unit, value) if value is not None else '—'}")
    if table is not None and table.num_rows:
        lines.append(table_text(table))
    return "\n".join(lines)


# -- IPython display ------------------------------------------------------------------------------
_STATE = {"every_arrow_table": False}


def _tagged(obj: Any) -> bool:
    return _STATE["every_arrow_table"] or fmt.table_name(obj.schema) is not None


def _html_formatter(obj: pa.Table) -> str | None:
    return table_html(obj) if _tagged(obj) else None


def _schema_html_formatter(obj: pa.Schema) -> str | None:
    return schema_html(obj) if fmt.table_name(obj) is not None else None


def _plain_formatter(obj: pa.Table, p: Any, cycle: bool) -> None:
    p.text(table_text(obj) if _tagged(obj) else repr(obj))


def _schema_plain_formatter(obj: pa.Schema, p: Any, cycle: bool) -> None:
    if fmt.table_name(obj) is None:
        p.text(repr(obj))
        return
    width = max((len(f.name) for f in obj), default=0)
    lines = [f"{_title_of(obj)}: {len(obj)} column{'' if len(obj) == 1 else 's'}"]
    lines += [f"  {f.name.ljust(width)}  {_type_of(f)}{'' if f.nullable else ' not null'}" for f in obj]
    p.text("\n".join(lines))


def register_table_display(ipython: Any = None, *, every_arrow_table: bool | None = None) -> bool:
    """Show deltaexplore's Arrow tables as formatted HTML (and a text summary) in IPython.

    Idempotent. `every_arrow_table=True` formats any `pyarrow.Table` the same way (units from
    the Arrow types); by default only tables tagged as deltaexplore tables are. Returns True
    when formatters were registered (False outside IPython).
    """
    if every_arrow_table is not None:
        _STATE["every_arrow_table"] = every_arrow_table
    if ipython is None:
        module = sys.modules.get("IPython")
        if module is None:
            return False
        ipython = module.get_ipython()
        if ipython is None:
            return False
    formatters = ipython.display_formatter.formatters
    formatters["text/html"].for_type(pa.Table, _html_formatter)
    formatters["text/html"].for_type(pa.Schema, _schema_html_formatter)
    formatters["text/plain"].for_type(pa.Table, _plain_formatter)
    formatters["text/plain"].for_type(pa.Schema, _schema_plain_formatter)
    return True
