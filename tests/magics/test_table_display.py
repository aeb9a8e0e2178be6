"""Inspection tables in a notebook: formatted HTML and a text summary, the value still Arrow."""

from __future__ import annotations

import re

import pyarrow as pa
import pytest

import deltaexplore as dx
from deltaexplore.inspect import formatting as fmt
from deltaexplore.widgets import tables


def delta(ip, line: str):
    return ip.run_line_magic("delta", line)


@pytest.fixture
def shown(ip):
    """`shown(obj)` -> (html or None, plain text) as IPython's display formatters give them."""
    html_formatter = ip.display_formatter.formatters["text/html"]
    enabled = html_formatter.enabled
    html_formatter.enabled = True  # the terminal testing shell disables HTML

    def show(obj):
        data, _ = ip.display_formatter.format(obj, include=("text/html", "text/plain"))
        return data.get("text/html"), data["text/plain"]

    yield show
    html_formatter.enabled = enabled


@pytest.mark.parametrize(
    ("line", "title"),
    [
        ("history {sales}", "History · sales"),
        ("versions {sales}", "Versions · sales"),
        ("overview {sales}", "Overview · sales @ v7"),
        ("commits {sales} 3", "Commits · sales v3"),
        ("files {sales}", "Files · sales @ v7"),
        ("files {sales} --partitions", "Partitions · sales @ v7"),
        ("layout {sales}", "Layout summary · sales @ v7"),
        ("layout {sales} -c amount", "Layout of amount · sales @ v7"),
        ("explain {sales} -w \"region = 'emea'\"", "Explain · sales @ v7: region = 'emea' reads 1 of 9 files"),
        ("dv {sales}", "Deletion vectors · sales @ v7"),
        ("dv {sales} --files", "Deletion vector files · sales @ v7"),
        ("diff {sales} 3 7", "Diff · sales v3 → v7"),
        ("diff {sales} 3 --files", "Changed files · sales v3 → v7"),
        ("health {sales}", "Log health · sales @ v7"),
        ("health {sales} --log-files", "Log files · sales @ v7"),
        ("features {sales}", "Features · sales @ v7"),
        ("features {sales} --compat", "Compatibility · sales @ v7"),
        ("read {sales} -n 5", "Rows · sales @ v7"),
        ("schema {sales}", "Schema · sales @ v7"),
        ("vacuum {sales} --retention-hours 0", "VACUUM (dry run) · sales: 5 files"),
    ],
)
def test_every_table_subcommand_displays_a_formatted_table_and_stays_arrow(ip, sales, shown, line, title):
    value = delta(ip, line.format(sales=sales))
    assert isinstance(value, (pa.Table, pa.Schema))
    html, plain = shown(value)
    assert html is not None and '<table class="dx-grid">' in html and title.replace("'", "&#x27;") in html
    assert plain.startswith(title) and "pyarrow.Table" not in plain
    assert "/tmp" not in html.split("</style>", 1)[1].split("dx-grid", 1)[0]  # the title names the table, not its location
    if isinstance(value, pa.Table):
        assert re.search(r"\d+ rows? × \d+ columns?", html) or "metrics" in html


def test_cells_are_humanised_by_unit(ip, sales, shown):
    html, _ = shown(delta(ip, f"history {sales} --all"))
    assert '<span class="dx-badge">OPTIMIZE</span>' in html
    assert re.search(r'<span title="UTC 2024-01-01T07:00:00\.000Z">[^<]+</span>', html)
    assert '<span class="dx-k">mode</span> Append' in html  # operationParameters as chips
    assert re.search(r'title="[\d,]+ bytes">[\d.]+ KiB<', html)
    files_html, _ = shown(delta(ip, f"files {sales}"))
    path = delta(ip, f"files {sales}").column("path")[0].as_py()
    short = fmt.short_path(path)  # region=amer/part-00004-d4541352…: what tells the file apart
    assert short != path and short.startswith("region=") and f'title="{path}">{short}<' in files_html
    # the partition key: one column of values named after the partition column
    assert ">region</th>" in files_html and ">partition</th>" not in files_html and "<td><span>amer</span></td>" in files_html
    health_html, _ = shown(delta(ip, f"overview {sales}"))
    assert '<span class="dx-pill warn">warn</span>' in health_html and "22.5%" in health_html


def test_rows_are_bounded_with_the_total(ip, sales, shown):
    rows = delta(ip, f"read {sales} -n 0")
    html = tables.table_html(rows, max_rows=7)
    assert html.count("<tr>") == 1 + 7
    assert f"showing the first 7 of {rows.num_rows} rows · {rows.num_rows - 7} more rows" in html
    assert ">1010<" in html  # user data: numbers as written, no thousands separators
    text = tables.table_text(rows, max_rows=3)
    assert text.splitlines()[0] == f"Rows · sales @ v7: {rows.num_rows} rows × 5 columns"
    assert text.endswith(f"… {rows.num_rows - 3} more rows")


def test_other_arrow_tables_keep_pyarrows_display_unless_asked(ip, shown):
    mine = pa.table({"size": [2048], "name": ["<b>x</b>"]})
    html, plain = shown(mine)
    assert html is None and plain.startswith("pyarrow.Table")
    tables.register_table_display(ip, every_arrow_table=True)
    try:
        html, plain = shown(mine)
        assert html is not None and "&lt;b&gt;x&lt;/b&gt;" in html and "<b>x</b>" not in html
        assert ">2,048<" in html  # an int64 without a declared unit counts
    finally:
        tables.register_table_display(ip, every_arrow_table=False)
    assert shown(mine)[0] is None


def test_hostile_values_are_escaped_everywhere(ip, hostile, shown):
    for line in ("files {t}", "history {t}", "files {t} --partitions", "overview {t}", "read {t}", "commits {t} 0"):
        html, _ = shown(delta(ip, line.format(t=hostile)))
        body = html.split("</style>", 1)[1]
        assert "<script" not in body and "<img" not in body and "onerror=alert" not in body.replace("onerror=alert(1)&gt;", "")
    report = delta(ip, f"optimize {hostile}")._repr_html_()
    assert "<script" not in report.split("</style>", 1)[1]


def test_maintenance_reports_share_the_style(ip, sales, monkeypatch):
    from deltaexplore.widgets import maintenance

    monkeypatch.setattr(maintenance, "_active_spark", lambda: False)  # a Spark test may share this worker
    r = delta(ip, f"optimize {sales}")
    html = r._repr_html_()
    assert 'class="dx-out"' in html and '<dl class="dx-kv">' in html and ">10.7 KiB<" in html
    assert "dry run · --run would use local: no active Spark session" in html
    assert "files_to_rewrite: 8" in repr(r) and "bytes_to_rewrite: 10.7 KiB" in repr(r)


def test_importing_deltaexplore_in_a_kernel_formats_its_tables_only(sales):
    """A fresh Jupyter kernel: `import deltaexplore` alone is enough; a user's own Arrow table
    keeps pyarrow's display."""
    jupyter_client = pytest.importorskip("jupyter_client")
    km, kc = jupyter_client.manager.start_new_kernel(kernel_name="python3")
    try:

        def result(code: str) -> dict:
            reply = {}

            def hook(msg):
                if msg["msg_type"] == "execute_result":
                    reply.update(msg["content"]["data"])
                elif msg["msg_type"] == "error":
                    raise AssertionError("\n".join(msg["content"]["traceback"]))

            kc.execute_interactive(code, timeout=120, output_hook=hook)
            return reply

        data = result(f"import deltaexplore as dx\ndx.open_table({sales!r}).inspect.history()")
        assert '<table class="dx-grid">' in data["text/html"] and data["text/plain"].startswith("History: 8 rows")
        other = result("import pyarrow as pa\npa.table({'a': [1]})")
        assert "text/html" not in other and other["text/plain"].startswith("pyarrow.Table")
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def test_inspection_value_is_the_table_itself(ip, sales):
    h = delta(ip, f"history {sales} -n 2")
    assert h.column("version").to_pylist() == [7, 6]
    assert h.equals(dx.open_table(sales).inspect.history(2))
    assert fmt.table_name(h.schema) == "history"


def test_variants_show_as_json_and_collations_in_the_schema(ip, shown, tmp_path):
    """`%delta read` gives variants as the JSON text Spark shows; an Arrow table holding the
    core's variant structs displays them as JSON too (the grid, the text and the explorer's
    IPC); `%delta schema` names a column's collation."""
    from helpers import variant_stats_table
    from test_collations import build as build_collated

    from deltaexplore.widgets.arrow_ipc import from_ipc, to_ipc

    table = variant_stats_table(tmp_path / "v")
    rows = delta(ip, f"read {table.uri}")
    assert rows.schema.field("v").type == pa.string()
    assert rows.column("v").to_pylist() == ['{"a":"min-string","b":{"c":1}}', '{"a":"variant","b":{"c":100}}', None]
    html, plain = shown(rows)
    assert "{&quot;a&quot;:&quot;min-string&quot;,&quot;b&quot;:{&quot;c&quot;:1}}" in html
    assert '{"a":"variant","b":{"c":100}}' in plain
    raw = table.snapshot().to_arrow()
    assert pa.types.is_struct(raw.schema.field("v").type)
    tables.register_table_display(ip, every_arrow_table=True)
    try:
        html, plain = shown(raw)
    finally:
        tables.register_table_display(ip, every_arrow_table=False)
    assert "min-string" in html and "metadata" not in html and '{"a":"variant","b":{"c":100}}' in plain
    assert from_ipc(to_ipc(raw)).column("v").to_pylist() == rows.column("v").to_pylist()

    schema = delta(ip, f"schema {build_collated(tmp_path / 'c').uri}")
    html, plain = shown(schema)
    assert "string collate spark.UTF8_LCASE" in html and "array&lt;string collate spark.UTF8_LCASE&gt;" in html
    assert "delta_type" not in html
    assert re.search(r"name\s+string collate spark\.UTF8_LCASE\n", plain + "\n")
