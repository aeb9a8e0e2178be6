"""In a real JupyterLab with headless chromium: the explorer renders and reacts, Altair renders offline."""

from __future__ import annotations

import json
import re

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("browser")]


def _notebook(cells: list[str]) -> str:
    return json.dumps(
        {
            "cells": [{"cell_type": "code", "metadata": {}, "source": c, "outputs": [], "execution_count": None} for c in cells],
            "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
            "nbformat": 4,
            "nbformat_minor": 5,
        }
    )


def _open_and_run(page, lab, name: str, cells: list[str]) -> None:
    (lab.root / name).write_text(_notebook(cells))
    page.goto(lab.url(f"/lab/workspaces/{name.replace('.', '-')}/tree/{name}?reset"))
    page.get_by_role("main").wait_for(timeout=60_000)
    page.locator(".jp-Notebook").wait_for(timeout=60_000)
    # the kernel starts by itself (autoStartDefaultKernel); wait until its connection is up and idle
    page.wait_for_function(
        """() => {
            const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
            const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
            return !!k && k.connectionStatus === 'connected' && k.status === 'idle' && w.sessionContext.isReady;
        }""",
        timeout=90_000,
    )
    page.wait_for_timeout(500)
    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.get_by_role("menuitem", name=re.compile(r"^Run All Cells")).click()


def test_explorer_renders_and_travels_in_jupyterlab(page, lab):
    cells = [
        "import deltaexplore as dx, demo_tables\npath = demo_tables.build_sales('sales')\nhostile = demo_tables.build_hostile('hostile')",
        "dx.explore(path)",
        "dx.open_table(hostile)",
    ]
    _open_and_run(page, lab, "explorer.ipynb", cells)
    explorers = page.locator(".dx-explorer")
    explorers.nth(1).wait_for(timeout=90_000)
    sales = explorers.nth(0)
    tabs = sales.get_by_role("tablist", name="explorer tabs")
    assert tabs.get_by_role("tab").count() == 8
    assert sales.get_by_role("tab", name="Overview").get_attribute("aria-selected") == "true"
    assert "sales" in sales.locator(".dx-title").inner_text()
    overview = sales.get_by_role("tabpanel")
    assert "deltaexplore tour: sales by region" in overview.inner_text()
    # files tab: rows decoded from the Arrow buffer in the browser
    sales.get_by_role("tab", name="Files").click()
    files = sales.get_by_role("table", name="files")
    files.wait_for(timeout=30_000)
    assert files.locator("tbody tr").count() == 9
    assert sales.get_by_role("table", name="partitions").locator("tbody tr").count() == 3
    # history tab: click the first commit -> the explorer travels to version 0
    sales.get_by_role("tab", name="History").click()
    history = sales.get_by_role("table", name="history")
    history.wait_for(timeout=30_000)
    history.locator("tbody tr").last.click()
    page.wait_for_function("() => document.querySelector('.dx-version output').textContent.startsWith('0 /')", timeout=30_000)
    sales.get_by_role("tab", name="Files").click()
    page.wait_for_function(
        "() => document.querySelectorAll('.dx-explorer')[0].querySelectorAll('table[aria-label=files] tbody tr').length === 3",
        timeout=30_000,
    )
    # the hostile table's explorer (the rich display of open_table) shows the text, runs nothing
    hostile = explorers.nth(1)
    hostile.get_by_role("tab", name="Files").click()
    hostile.get_by_role("table", name="files").wait_for(timeout=30_000)
    text = hostile.inner_text()
    assert "<script>alert('x')<_script>.parquet" in text
    assert "part=<img src=x onerror=alert(1)>" in text
    hostile.get_by_role("tab", name="History").click()
    hostile.get_by_role("table", name="history").wait_for(timeout=30_000)
    assert "<img src=x onerror=alert(1)>" in hostile.inner_text()
    assert page.locator(".dx-explorer script, .dx-explorer img, .dx-explorer b").count() == 0
    assert page.dialogs == []
    # maintenance: preview OPTIMIZE, run it, see the new version appear (local writer or Spark)
    sales.get_by_role("tab", name="Maintenance").click()
    sales.get_by_role("button", name="Preview OPTIMIZE (compact)").click()
    panel = sales.get_by_role("tabpanel")
    panel.get_by_text("files to rewrite").wait_for(timeout=30_000)
    sales.get_by_role("button", name="Run OPTIMIZE (compact)").click()
    sales.get_by_role("status").filter(has_text="version 7 -> 8").wait_for(timeout=180_000)
    assert sales.locator(".dx-version output").inner_text().startswith("8 / 8")


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
    blocked: list[str] = []
    page.route(re.compile(r"^https?://(?!127\.0\.0\.1).*"), lambda route: (blocked.append(route.request.url), route.abort()))
    _open_and_run(page, lab, "chart.ipynb", cells)
    marks = page.locator(".jp-OutputArea-output svg .mark-rect path, .jp-OutputArea-output canvas")
    marks.first.wait_for(timeout=90_000)
    outputs = page.locator(".jp-OutputArea-output:has(svg .mark-rect path), .jp-OutputArea-output:has(canvas)")
    outputs.nth(1).wait_for(timeout=90_000)
    assert outputs.count() >= 2
    assert not [u for u in blocked if "vega" in u or "jsdelivr" in u or "esm.sh" in u]
