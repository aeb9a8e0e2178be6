"""Charts of many marks are drawn on a canvas (`chart.ts`: a spec of more than `CANVAS_ROWS`
rows), and work as the SVG ones do: a history of 700 commits shows its timeline on a canvas
whose tooltips are text (a user name holding markup stays text) and whose ticks travel to
their version on a click. Charts of few marks stay SVG (the other browser tests)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "notebooks"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from lab_helpers import Watch, notebook_json, open_tab, settled, wait_kernel_idle
from xss_table import PAYLOADS

HERE = Path(__file__).resolve().parent

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("browser")]

COMMITS = 700  # over chart.ts's CANVAS_ROWS (600): one tick per commit


def build_long_history(root: Path) -> None:
    """A table of `COMMITS` commits (an append, then commits of properties), by a user whose
    name is markup."""
    import pyarrow as pa
    from demo_tables import DemoWriter

    w = DemoWriter(root, "long_history", user=PAYLOADS["img"])
    cols = [("id", "long")]
    md = w.metadata(cols)
    first = w.add(pa.table({"id": pa.array([1, 2, 3], pa.int64())}))
    w.commit([{"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}, md, first], "WRITE", {"mode": "Append"})
    for i in range(1, COMMITS):
        w.commit([w.metadata(cols, configuration={"n": str(i)})], "SET TBLPROPERTIES", {"properties": str(i)})


def _version(explorer) -> str:
    return explorer.locator(".dxe-version-out").inner_text()


def test_a_long_history_is_drawn_on_a_canvas(page, lab):
    shots = Path(os.environ.get("DELTAEXPLORE_SCREENSHOTS") or HERE / "screenshots")
    shots.mkdir(parents=True, exist_ok=True)
    build_long_history(lab.root / "long_history")
    watch = Watch(page)
    cells = [("code", "import deltaexplore as dx\ndx.explore('long_history')")]
    (lab.root / "long_history.ipynb").write_text(notebook_json(cells))
    page.goto(lab.url("/lab/workspaces/long/tree/long_history.ipynb?reset"))
    page.locator(".jp-Notebook").wait_for(timeout=60_000)
    wait_kernel_idle(page)
    page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
    explorer = page.locator(".dxe-explorer").first
    explorer.wait_for(timeout=120_000)
    settled(page, explorer)
    assert _version(explorer).startswith(f"{COMMITS - 1} of {COMMITS - 1}")
    panel = open_tab(page, explorer, "History")
    chart = panel.locator(".dxe-chart").first
    panel.locator(".dxe-chart[data-drawn=canvas]").first.wait_for(timeout=60_000)
    assert chart.get_attribute("data-drawn") == "canvas"
    assert chart.locator("canvas").count() == 1 and chart.locator("svg").count() == 0
    canvas = chart.locator("canvas")
    canvas.scroll_into_view_if_needed()
    settled(page, explorer)
    box = canvas.bounding_box()
    assert box and box["width"] > 300 and box["height"] > 100
    # the canvas holds pixels drawn (ticks, axes), not an empty surface
    inked = canvas.evaluate(
        "c => { const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data; let n = 0;"
        " for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++; return n; }"
    )
    assert inked > 1000, inked
    # a tooltip under the pointer: Vega picks the tick on the canvas, our handler writes text
    tip = page.locator(".dxe-tooltip.dxe-tooltip-visible")
    found = None
    for fy in (0.45, 0.35, 0.55, 0.25, 0.65):
        y = box["y"] + box["height"] * fy
        for i in range(0, 120):
            x = box["x"] + box["width"] * (0.2 + 0.75 * i / 120)
            page.mouse.move(x, y)
            if i % 6 == 0:
                page.wait_for_timeout(60)
                if tip.count() and "version" in tip.inner_text():
                    found = (x, y)
                    break
        if found:
            break
    assert found, "no tooltip over the canvas's ticks"
    text = tip.inner_text()
    assert PAYLOADS["img"] in text and "SET TBLPROPERTIES" in text  # the user's name as text
    assert tip.locator("img, script, svg, a, b, i").count() == 0
    shown = int(tip.locator("td").first.inner_text().replace(",", ""))
    # a click on the tick travels to its version
    page.mouse.click(*found)
    settled(page, explorer)
    explorer.screenshot(path=str(shots / "canvas-history.png"))
    page.wait_for_function(
        "v => document.querySelector('.dxe-explorer .dxe-version-out').textContent.startsWith(v + ' of')",
        arg=str(shown),
        timeout=60_000,
    )
    assert page.evaluate("() => window.__dx_pwned") is None
    assert watch.outside == [], watch.outside
    assert [e for e in watch.errors if "model not found" not in e] == []
