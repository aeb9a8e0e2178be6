"""An explorer output outlives its kernel: its bundle carries a static summary (escaped HTML and
JSON) that nbconvert (what nbviewer runs) shows when the notebook holds no widget state."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import deltaexplore as dx
from deltaexplore.widgets import explore, fallback

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "browser"))

from xss_table import COLUMN, PAYLOADS, build_xss

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


@pytest.fixture(scope="module")
def xss(tmp_path_factory: pytest.TempPathFactory) -> str:
    return build_xss(tmp_path_factory.mktemp("xss") / "t")


def test_the_bundle_carries_a_static_summary(sales):
    w = explore(sales, version=5, tab="files")
    data, _ = w._repr_mimebundle_()
    assert data[WIDGET_VIEW]["model_id"] == w.model_id
    s = data[fallback.EXPLORER_MIME]
    assert (s["title"], s["version"], s["latest_version"], s["operation"], s["user"], s["tab"]) == (
        "sales",
        5,
        7,
        "WRITE",
        "ana",
        "files",
    )
    assert s["view"] == data[WIDGET_VIEW]
    facts = {f["label"]: f["value"] for f in s["facts"]}
    files = dx.open_table(sales).snapshot(5).inspect.overview().to_pylist()
    number = {r["metric"]: r["number"] for r in files}
    assert facts["files"] == f"{int(number['files']):,}" and facts["partitions"] == "3"
    assert [c["name"] for c in s["columns"]] == ["id", "region", "amount", "customer", "channel"]
    html = data["text/html"]
    assert "Delta table sales" in html and "version <b>5</b>" in html and "latest: 7" in html and "WRITE" in html


def test_the_summary_escapes_every_string(xss):
    data, _ = explore(xss)._repr_mimebundle_()
    html = data["text/html"]
    for payload in (*PAYLOADS.values(), COLUMN):
        assert payload not in html
    assert "&lt;script&gt;window.__dx_pwned=1&lt;/script&gt;" in html and "&lt;b onmouseover=" in html


def test_nbconvert_shows_the_summary_of_a_saved_explorer(xss):
    """nbviewer renders notebooks with nbconvert: without widget state it skips the widget view
    and shows the next MIME type it knows, the summary."""
    nbformat = pytest.importorskip("nbformat")
    nbconvert = pytest.importorskip("nbconvert")
    data, metadata = explore(xss)._repr_mimebundle_()
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("dx.explore(xss)")
    cell.outputs = [nbformat.v4.new_output("display_data", data=data, metadata=metadata)]
    nb.cells = [cell]
    body, _ = nbconvert.HTMLExporter().from_notebook_node(nb)
    assert "deltaexplore-explorer-static" in body and "A static summary saved with the notebook" in body
    assert "&lt;script&gt;window.__dx_pwned=1&lt;/script&gt;" in body
    assert "<script>window.__dx_pwned" not in body and "application/vnd.jupyter.widget-view+json" not in body
