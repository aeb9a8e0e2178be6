"""The explorer past its streaming threshold says so in the browser: the Files, Layout, Deletion
vectors and Log health tabs of a table opened with `streaming_files=0` carry a line naming the
engine (one streaming pass over the log) and why; a table under the threshold carries none. A
table of a million files (`benchmarks/gen_many_files.py`) shows its Files and Layout tabs from
the streaming pass: the grid pages its files, the layout's density chart and summary drawn."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "notebooks"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from lab_helpers import drawn_chart, notebook_json, open_tab, settled, wait_kernel_idle

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("browser")]


def test_tabs_say_which_engine_computed_them(page, lab):
    cells = [
        ("code", "import deltaexplore as dx, demo_tables\nsales = demo_tables.build_sales('sales_engine')"),
        ("code", "dx.explore(sales, streaming_files=0)"),
        ("code", "dx.explore(sales)"),
    ]
    (lab.root / "engine.ipynb").write_text(notebook_json(cells))
    page.goto(lab.url("/lab/workspaces/engine/tree/engine.ipynb?reset"))
    page.locator(".jp-Notebook").wait_for(timeout=60_000)
    wait_kernel_idle(page)
    page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
    explorers = page.locator(".dxe-explorer")
    explorers.nth(1).wait_for(timeout=120_000)
    streamed, replayed = explorers.nth(0), explorers.nth(1)
    settled(page, streamed)
    settled(page, replayed)
    for tab in ("Files", "Layout", "Deletion vectors", "Log health"):
        panel = open_tab(page, streamed, tab)
        line = panel.locator(".dxe-engine[data-engine=streaming]")
        line.wait_for(timeout=30_000)
        assert line.inner_text().startswith("Computed in one streaming pass: about ")
        assert "at least 0" in line.inner_text()
        panel = open_tab(page, replayed, tab)
        assert panel.locator(".dxe-engine").count() == 0


GENERATOR = Path(__file__).resolve().parents[2] / "benchmarks" / "gen_many_files.py"


def test_files_and_layout_of_a_million_files(page, lab, tmp_path):
    root = lab.root / "million"
    if not (root / "_delta_log").exists():
        subprocess.run(
            [sys.executable, str(GENERATOR), str(root), "--files", "1000000", "--parts", "4", "--commits", "3"], check=True
        )
    cells = [("code", "import deltaexplore as dx\ndx.explore('million')")]
    (lab.root / "million.ipynb").write_text(notebook_json(cells))
    page.goto(lab.url("/lab/workspaces/million/tree/million.ipynb?reset"))
    page.locator(".jp-Notebook").wait_for(timeout=60_000)
    wait_kernel_idle(page)
    page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
    explorer = page.locator(".dxe-explorer").first
    explorer.wait_for(timeout=300_000)
    settled(page, explorer)
    shots = Path(tmp_path)
    panel = open_tab(page, explorer, "Files")
    panel.locator(".dxe-engine[data-engine=streaming]").wait_for(timeout=300_000)
    settled(page, explorer)
    cell = panel.locator(".ag-cell[col-id=path]").first
    cell.wait_for(timeout=120_000)
    assert ".parquet" in cell.inner_text()
    assert "1,000," in panel.inner_text() or "1.0M" in panel.inner_text() or "1M" in panel.inner_text()
    explorer.screenshot(path=str(shots / "million-files.png"))
    panel = open_tab(page, explorer, "Layout")
    line = panel.locator(".dxe-engine[data-engine=streaming]")
    line.wait_for(timeout=300_000)
    settled(page, explorer)
    assert line.inner_text().startswith("Computed in one streaming pass: about 1,000,")
    drawn_chart(panel)
    panel.locator(".ag-cell[col-id=path]").first.wait_for(timeout=120_000)
    explorer.screenshot(path=str(shots / "million-layout.png"))
