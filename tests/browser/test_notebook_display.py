"""Notebook integration in a real JupyterLab (Debian chromium, every non-loopback request aborted
and counted as a failure): the first chart of a fresh kernel renders offline, again after a
restart; `%delta` tables render as formatted tables (light and dark themes, screenshots kept
under the test's tmp dir); a shipped notebook reopened without a kernel stays readable."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from lab_helpers import block_outside, notebook_json, wait_kernel_idle

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("browser")]

ROOT = Path(__file__).resolve().parents[2]


def _open(page, lab, name: str) -> None:
    page.goto(lab.url(f"/lab/workspaces/{name.replace('.', '-')}/tree/{name}?reset"))
    page.locator(".jp-Notebook").wait_for(timeout=60_000)


def _run_all(page) -> None:
    wait_kernel_idle(page)
    page.wait_for_timeout(300)
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")  # not awaited


def _wait_done(page, cells: int) -> None:
    page.wait_for_function(
        f"""() => [...document.querySelectorAll('.jp-Notebook .jp-InputPrompt')]
              .filter(p => /\\[\\d+\\]/.test(p.textContent)).length >= {cells}""",
        timeout=180_000,
    )


def _output(page, index: int):
    return page.locator(".jp-Notebook .jp-Cell").nth(index).locator(".jp-OutputArea")


def _charts_with_axes(page, index: int):
    area = _output(page, index)
    area.locator("svg .role-axis").first.wait_for(timeout=120_000)
    return area


def test_first_chart_of_a_fresh_kernel_renders_offline_and_after_a_restart(page, lab, tmp_path):
    cells = [
        "%load_ext deltaexplore\nimport demo_tables\npath = demo_tables.build_sales('sales-fresh')",
        "%delta history sales-fresh --all --chart",  # the kernel's FIRST chart comes from a magic
        "import deltaexplore as dx, deltaexplore.viz as viz\nviz.show(viz.file_size_histogram(dx.open_table(path)))",
    ]
    escaped = block_outside(page)
    (lab.root / "fresh.ipynb").write_text(notebook_json(cells))
    _open(page, lab, "fresh.ipynb")
    _run_all(page)
    for index in (1, 2):
        area = _charts_with_axes(page, index)
        assert area.locator("svg .role-axis").count() >= 2  # x and y axes
        assert area.locator("svg .mark-rect path").count() > 0
        assert "Error" not in area.inner_text()
    page.screenshot(path=str(tmp_path / "fresh-kernel-charts.png"), full_page=True)

    # a restarted kernel: fresh state in Python, the page is the same
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:clear-all-cell-outputs'); }")
    page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.restartKernel()")
    page.wait_for_timeout(1000)
    _run_all(page)
    for index in (1, 2):
        area = _charts_with_axes(page, index)
        assert area.locator("svg .mark-rect path").count() > 0
    assert escaped == [], f"requests left the machine: {escaped}"


def test_delta_tables_render_as_formatted_tables_in_light_and_dark(page, lab, tmp_path):
    cells = [
        "%load_ext deltaexplore\nimport demo_tables\n_ = demo_tables.build_sales('sales-tables')",
        "%delta history sales-tables",
        "%delta files sales-tables",
        "%delta overview sales-tables",
        "%delta optimize sales-tables",
        "h = %delta history sales-tables -n 2\nprint(type(h).__name__, h.num_rows)",
    ]
    escaped = block_outside(page)
    (lab.root / "tables.ipynb").write_text(notebook_json(cells))
    _open(page, lab, "tables.ipynb")
    _run_all(page)
    _wait_done(page, len(cells))
    history, files, overview, optimize = (_output(page, i) for i in (1, 2, 3, 4))
    history.locator("table.dx-grid").wait_for(timeout=60_000)
    assert history.locator(".dx-title").inner_text() == "History · sales-tables"
    assert history.locator("table.dx-grid tbody tr").count() == 8
    assert history.locator(".dx-badge", has_text="OPTIMIZE").count() == 1
    assert files.locator("table.dx-grid tbody tr").count() == 9
    assert re.search(r"\d+\.\d KiB", files.locator("table.dx-grid").inner_text())
    assert overview.locator(".dx-pill.warn").count() >= 1
    assert optimize.locator("dl.dx-kv").count() == 1
    assert _output(page, 5).inner_text().strip() == "Table 2"  # the value is still the Arrow table
    # real table layout: header cells on one line, numbers right-aligned
    th = history.locator("table.dx-grid th", has_text="timestamp").first
    assert th.evaluate("e => getComputedStyle(e).whiteSpace") == "nowrap"
    num = history.locator("table.dx-grid td.dx-num").first
    assert num.evaluate("e => getComputedStyle(e).textAlign") == "right"
    page.screenshot(path=str(tmp_path / "tables-light.png"), full_page=True)
    page.evaluate("() => { window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Dark'}); }")
    page.wait_for_function("() => document.body.dataset.jpThemeLight === 'false'", timeout=30_000)
    page.wait_for_timeout(800)
    color = history.locator("table.dx-grid td").first.evaluate("e => getComputedStyle(e).color")
    channels = [int(c) for c in re.findall(r"\d+", color)[:3]]
    assert sum(channels) > 3 * 150, f"text stays dark on the dark theme: {color}"
    page.screenshot(path=str(tmp_path / "tables-dark.png"), full_page=True)
    overview.scroll_into_view_if_needed()
    page.screenshot(path=str(tmp_path / "overview-dark.png"))
    page.evaluate("() => window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Light'})")
    page.wait_for_function("() => document.body.dataset.jpThemeLight === 'true'", timeout=30_000)
    optimize.scroll_into_view_if_needed()
    page.screenshot(path=str(tmp_path / "report-light.png"))
    assert escaped == [], f"requests left the machine: {escaped}"


def test_a_shipped_notebook_reopened_without_a_kernel_stays_readable(page, lab, tmp_path):
    """The tour as committed (no widget state): with its kernel shut down, the explorer cell
    shows the table summary and the `%delta` outputs their tables, no widget error."""
    shutil.copy(ROOT / "notebooks" / "00_tour.ipynb", lab.root / "tour-saved.ipynb")
    escaped = block_outside(page)
    _open(page, lab, "tour-saved.ipynb")
    wait_kernel_idle(page)
    for kernel in page.request.get(lab.url("/api/kernels")).json():
        page.request.delete(lab.url(f"/api/kernels/{kernel['id']}"))
    page.wait_for_timeout(1000)
    # the table's summary card, or the explorer's saved summary (the tour's `table` cell is an explorer)
    summary = page.get_by_role("region", name=re.compile(r"^Delta table (summary|explorer \(saved summary\))$")).first
    summary.wait_for(timeout=30_000)
    assert "tour_sales" in summary.inner_text()
    assert page.locator(".jp-Notebook table.dx-grid").count() >= 1
    assert page.get_by_text("Error displaying widget").count() == 0
    assert page.get_by_text("model not found").count() == 0
    page.screenshot(path=str(tmp_path / "tour-saved.png"), full_page=True)
    assert escaped == [], f"requests left the machine: {escaped}"
