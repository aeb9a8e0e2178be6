"""In a real JupyterLab with headless chromium: Altair renders offline (the explorer: test_explorer_browser.py)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from lab_helpers import block_outside, notebook_json, wait_kernel_idle

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("browser")]


def _open_and_run(page, lab, name: str, cells: list[str]) -> None:
    (lab.root / name).write_text(notebook_json(cells))
    page.goto(lab.url(f"/lab/workspaces/{name.replace('.', '-')}/tree/{name}?reset"))
    page.get_by_role("main").wait_for(timeout=60_000)
    page.locator(".jp-Notebook").wait_for(timeout=60_000)
    # the kernel starts by itself (autoStartDefaultKernel); wait until its connection is up and idle
    wait_kernel_idle(page)
    page.wait_for_timeout(500)
    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.get_by_role("menuitem", name=re.compile(r"^Run All Cells")).click()


def test_altair_chart_renders_offline_in_jupyterlab(page, lab):
    cells = [
        "import altair as alt, pyarrow as pa\n"
        "alt.JupyterChart.enable_offline()\n"
        "data = pa.table({'version': [0, 1, 2], 'files': [3, 6, 9]})\n"
        "chart = alt.Chart(data).mark_bar().encode(x='version:O', y='files:Q')\n"
        "alt.JupyterChart(chart)",
        # a deltaexplore chart left bare as the cell's result: offline too (no show() needed)
        "import deltaexplore as dx, deltaexplore.viz as viz, demo_tables\n"
        "viz.history_chart(dx.open_table(demo_tables.build_sales('sales-chart')))",
    ]
    blocked = block_outside(page)
    _open_and_run(page, lab, "chart.ipynb", cells)
    marks = page.locator(".jp-OutputArea-output svg .mark-rect path, .jp-OutputArea-output canvas")
    marks.first.wait_for(timeout=90_000)
    outputs = page.locator(".jp-OutputArea-output:has(svg .mark-rect path), .jp-OutputArea-output:has(canvas)")
    outputs.nth(1).wait_for(timeout=90_000)
    assert outputs.count() >= 2
    assert blocked == [], f"requests left the machine: {blocked}"  # every one is a failure, not only CDNs
