"""Rich display of tables, escaping of hostile text, the stand-in without UI libraries, the JS reader."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

import deltaexplore as dx
from deltaexplore.widgets import display
from deltaexplore.widgets.arrow_ipc import from_ipc, to_ipc

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
    """Paths, users, columns and properties go out as Arrow/JSON data, and the view uses textContent only."""
    from deltaexplore.widgets import explore

    w = explore(hostile, tab="history")
    hist = from_ipc(w.history_ipc).to_pylist()
    assert hist[-1]["user_name"] == "<img src=x onerror=alert(1)>"
    w.tab = "files"
    paths = [r["path"] for r in from_ipc(w.files_ipc).to_pylist()]
    assert any("<script>" in p for p in paths)
    assert w.overview["schema"][1]["name"] == "<b>bold</b>"
    js = (ROOT / "deltaexplore/widgets/static/explorer.js").read_text()
    assert "innerHTML" not in js and "insertAdjacentHTML" not in js and "outerHTML" not in js


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


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed (needed to run the browser-side Arrow reader)")
def test_the_browser_side_reader_decodes_what_python_sends(tmp_path):
    t = pa.table(
        {
            "i": pa.array([1, None, -3, 2**40], pa.int64()),
            "s": pa.array(["<script>alert(1)</script>", None, "é✓", ""]),
            "b": pa.array([True, False, None, True]),
            "f": pa.array([1.5, None, 3.25, float("inf")]),
            "ts": pa.array([0, 1, 2, None], pa.timestamp("ms", tz="UTC")),
            "m": pa.array([[("k", "v")], None, [], [("a", "<b>")]], pa.map_(pa.string(), pa.string())),
            "u": pa.array([1, 2, 3, 4], pa.uint16()),
        }
    )
    (tmp_path / "t.arrow").write_bytes(to_ipc(t))
    script = tmp_path / "read.mjs"
    script.write_text(
        f"import {{ readArrowIPC, toRows }} from {json.dumps(str(ROOT / 'deltaexplore/widgets/static/arrow_lite.js'))};\n"
        "import fs from 'fs';\n"
        f"const b = fs.readFileSync({json.dumps(str(tmp_path / 't.arrow'))});\n"
        "const shifted = new Uint8Array(b.length + 5); shifted.set(b, 5);\n"  # unaligned, like a widget buffer
        "console.log(JSON.stringify(toRows(readArrowIPC(new DataView(shifted.buffer, 5, b.length))), (k, v) => v === Infinity ? 'inf' : v));\n"
    )
    out = subprocess.run(["node", str(script)], capture_output=True, text=True, check=True).stdout
    got = json.loads(out)
    expected = from_ipc(to_ipc(t)).to_pylist()
    for row in expected:
        row["f"] = "inf" if row["f"] == float("inf") else row["f"]
    assert got == expected
    assert got[0]["s"] == "<script>alert(1)</script>" and got[3]["m"] == '[["a", "<b>"]]'
