"""The explorer past its streaming threshold says so in the browser: the Files, Deletion vectors
and Log health tabs of a table opened with `streaming_files=0` carry a line naming the engine
(one streaming pass over the log) and why; a table under the threshold carries none."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "notebooks"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from lab_helpers import notebook_json, open_tab, settled, wait_kernel_idle

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
    for tab in ("Files", "Deletion vectors", "Log health"):
        panel = open_tab(page, streamed, tab)
        line = panel.locator(".dxe-engine[data-engine=streaming]")
        line.wait_for(timeout=30_000)
        assert line.inner_text().startswith("Computed in one streaming pass: about ")
        assert "at least 0" in line.inner_text()
        panel = open_tab(page, replayed, tab)
        assert panel.locator(".dxe-engine").count() == 0
