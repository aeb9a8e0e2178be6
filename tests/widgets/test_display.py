"""Rich display of tables, escaping of hostile text, the stand-in without UI libraries, the JS reader."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa

import deltaexplore as dx
from deltaexplore.widgets import display
from deltaexplore.widgets.arrow_ipc import from_ipc

ROOT = Path(__file__).resolve().parents[2]
HOSTILE = ("<script>", "<img src=x onerror=alert(1)>", "<b>bold</b>")


def test_table_mimebundle_outside_a_kernel_is_static_and_escaped(hostile):
    table = dx.open_table(hostile)
    bundle = table._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" not in bundle  # no kernel: no widget
    html = bundle["text/html"]
    for bad in HOSTILE:
        assert bad not in html
    assert "&lt;b&gt;bold&lt;/b&gt;" in html and "&lt;script&gt;" in html
    summary = bundle[display.MIME_TYPE]
    assert summary["num_files"] == 2 and summary["columns"][1]["name"] == "<b>bold</b>"
    assert json.loads(json.dumps(summary)) == summary
    assert bundle["text/plain"].startswith("Delta table ")


def test_table_mimebundle_in_a_kernel_carries_the_explorer_view(sales, monkeypatch):
    monkeypatch.setattr(display, "_widgets_available", lambda: True)
    bundle = dx.open_table(sales)._repr_mimebundle_()
    view = bundle["application/vnd.jupyter.widget-view+json"]
    assert view["version_major"] == 2 and view["model_id"]
    assert display.MIME_TYPE in bundle and "text/html" in bundle


def test_hostile_text_reaches_the_browser_as_data_only(hostile):
    """Paths, users, columns and properties go out as Arrow/JSON data; the view builds text nodes."""
    from deltaexplore.widgets import explore

    w = explore(hostile, tab="history")
    hist = from_ipc(w.history_data["commits"]).to_pylist()
    assert hist[-1]["user_name"] == "<img src=x onerror=alert(1)>"
    w.tab = "files"
    assert w.error == ""
    schema = from_ipc(w.overview_data["schema"]).to_pylist()
    assert schema[1]["column"] == "<b>bold</b>"


def test_missing_ui_libraries_give_an_informative_error():
    code = (
        "import sys; sys.modules['anywidget'] = None\n"
        "import deltaexplore as dx\n"
        "from deltaexplore.widgets import Explorer\n"
        "try:\n"
        "    dx.explore('examples/demo_table')\n"
        "except dx.MissingDependencyError as e:\n"
        "    print('MDE', e.extra, e)\n"
        "try:\n"
        "    Explorer(None)\n"
        "except ImportError as e:\n"
        "    print('IMPORT', type(e).__name__)\n"
        "print('BUNDLE', sorted(dx.open_table('examples/demo_table')._repr_mimebundle_()))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    assert "MDE widgets the explorer widget needs anywidget, which are not installed: pip install 'deltaexplore[widgets]'" in out
    assert "IMPORT MissingDependencyError" in out
    assert "BUNDLE ['application/vnd.deltaexplore.table+json', 'text/html', 'text/plain']" in out


def test_importing_deltaexplore_imports_no_ui_library():
    code = "import sys, deltaexplore; print([m for m in ('ipywidgets', 'anywidget', 'IPython', 'altair') if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_a_float_column_keeps_its_decimals_when_a_value_is_whole():
    """`skew` of 1.0 next to 0.4 reads "1.00" and "0.40" (not "1") in HTML and text, as in the
    explorer's grids; whole values of an integer column stay whole."""
    from deltaexplore.inspect.schemas import PARTITIONS_SCHEMA
    from deltaexplore.widgets.tables import table_html, table_text

    skew = PARTITIONS_SCHEMA.field("skew")
    assert skew.type == pa.float64()
    t = pa.table({"partition": ["a", "b"], "files": [4, 1], "skew": [1.0, 0.4]}).cast(
        pa.schema([pa.field("partition", pa.string()), PARTITIONS_SCHEMA.field("files"), skew])
    )
    html = table_html(t)
    assert ">1.00<" in html and ">0.40<" in html and ">4<" in html
    text = table_text(t)
    assert "1.00" in text and "0.40" in text and " 4" in text and "4.00" not in text


def test_partitions_and_paths_read_as_in_the_explorer():
    """The `%delta` tables follow the explorer's rules: a partition key column becomes one column
    of values per partition column (named after it), a path shows what tells the file apart
    (its partition directories and id; the whole path in the title), in HTML and in text."""
    from deltaexplore.inspect import formatting as fmt
    from deltaexplore.inspect.schemas import FILES_SCHEMA
    from deltaexplore.widgets.tables import split_partitions, table_html, table_text

    path = "region=emea/day=2024-01-01/part-00003-3f2a8c1e-7b4d-4c3a-9f2e-1a2b3c4d5e6f-c000.snappy.parquet"
    t = pa.table(
        {
            "path": [path, "region=amer/day=2024-01-02/x.parquet"],
            "partition": ["region=emea/day=2024-01-01", "region=amer/day=2024-01-02"],
            "size": [10, 20],
        }
    ).cast(pa.schema([FILES_SCHEMA.field("path"), FILES_SCHEMA.field("partition"), FILES_SCHEMA.field("size")]))
    split = split_partitions(t)
    assert split.column_names == ["path", "region", "day", "size"]
    assert split.column("day").to_pylist() == ["2024-01-01", "2024-01-02"]
    html = table_html(t)
    assert ">region</th>" in html and ">day</th>" in html and ">partition</th>" not in html
    assert f'title="{path}">{fmt.short_path(path)}<' in html and "region=emea/day=2024-01-01/part-00003-3f2a8c1e…" in html
    text = table_text(t)
    assert "region" in text.splitlines()[1] and "part-00003-3f2a8c1e…" in text and path not in text
    # keys naming other columns row by row are left as they are
    odd = pa.table({"partition": ["a=1", "b=2"]})
    assert split_partitions(odd) is odd
