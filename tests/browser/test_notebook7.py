"""Jupyter Notebook 7 (`jupyter notebook` of the development environment, no extension flag) and
Debian chromium, every request that is not to 127.0.0.1 a failure, every console error too:
the tree's file browser marks Delta tables and opens the explorer in a tab beside Files and
Running; the tour runs (explorer, `%delta` tables, charts offline); an explorer and a `%delta`
chart in a notebook, saved, reopened without the kernel that drew them: the saved summary
stays. And a server without the deltaexplore server extension: the feature is off, quietly.
Screenshots go to $DELTAEXPLORE_SCREENSHOTS (default tests/browser/screenshots/, not committed).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "notebooks"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import demo_tables
from jupyter_servers import start_server
from lab_helpers import NOTEBOOK7_OWN, Watch, drawn_chart, notebook_json, open_tab, settled, wait_kernel_idle

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("browser")]

HERE = Path(__file__).resolve().parent
TOUR = HERE.parents[1] / "notebooks" / "00_tour.ipynb"
ERROR_OUTPUTS = (
    ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.error'],"
    " .jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']"
)


def _errors(watch: Watch) -> list[str]:
    return [e for e in watch.errors if not NOTEBOOK7_OWN.match(e)]


@pytest.fixture(scope="module")
def shots() -> Path:
    out = Path(os.environ.get("DELTAEXPLORE_SCREENSHOTS") or HERE / "screenshots")
    out.mkdir(parents=True, exist_ok=True)
    return out


def _open_notebook(page, server, name: str) -> None:
    """Notebook 7's notebook page for `name`, its kernel started and idle."""
    page.goto(server.url(f"/notebooks/{name}"))
    page.locator(".jp-Notebook").wait_for(timeout=60_000)
    wait_kernel_idle(page)


def _run_all(page, cells: int) -> None:
    """Run every cell; wait until each code cell has its execution count and the kernel is idle."""
    page.wait_for_timeout(300)
    page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
    page.wait_for_function(
        f"""() => {{ const w = window.jupyterapp.shell.currentWidget;
                    const done = [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')]
                        .filter(p => /\\[\\d+\\]/.test(p.textContent)).length;
                    return done >= {cells} && w.sessionContext.session.kernel.status === 'idle'; }}""",
        timeout=300_000,
    )


def test_the_tree_marks_delta_tables_and_opens_the_explorer_in_a_tab(page, notebook7, shots):
    demo_tables.build_sales(notebook7.root / "sales")
    (notebook7.root / "plain_folder").mkdir()
    watch = Watch(page)
    page.goto(notebook7.url("/tree"))
    tables = page.locator(".jp-DirListing-item[data-delta-table='true']")
    tables.first.wait_for(timeout=60_000)
    names = tables.locator(".jp-DirListing-itemText").all_inner_texts()
    assert names == ["sales"]  # the plain folder is no table
    assert "Delta table" in (tables.first.get_attribute("title") or "")

    page.locator(".jp-DirListing-item", has_text="plain_folder").click(button="right")
    menu = page.get_by_role("menu").first
    menu.wait_for()
    assert menu.get_by_role("menuitem", name="Open in Delta Explorer").count() == 0
    page.keyboard.press("Escape")

    tables.first.click(button="right")
    menu = page.get_by_role("menu").first
    for item in ("Open in Delta Explorer", "Copy Delta Table Path", "Copy PySpark Read Snippet"):
        assert menu.get_by_role("menuitem", name=item).count() == 1, item
    page.screenshot(path=str(shots / "notebook7-tree-menu.png"))
    menu.get_by_role("menuitem", name="Open in Delta Explorer").click()

    # a tab of the tree's tab panel, beside Files and Running, holding the table's explorer
    tree = page.locator(".jp-TreePanel")
    tab = tree.get_by_role("tab", name="sales")
    tab.wait_for(timeout=30_000)
    assert tab.get_attribute("aria-selected") == "true"
    explorer = tree.locator(".dxe-explorer")
    explorer.wait_for(timeout=120_000)
    settled(page, explorer)
    assert explorer.locator(".dxe-title").inner_text() == "sales"
    assert explorer.locator(".dxe-version-out").inner_text().startswith("7 of 7")
    box = explorer.bounding_box()
    assert box["width"] > 800 and box["height"] > 300, box
    panel = open_tab(page, explorer, "History")
    drawn_chart(panel)
    page.screenshot(path=str(shots / "notebook7-tree-explorer.png"))
    assert len(notebook7.api("/api/kernels")) == 1  # the table's own kernel

    # closing the tab ends its kernel
    tab.locator(".lm-TabBar-tabCloseIcon").click()
    page.wait_for_function(
        "() => !document.querySelector('.jp-TreePanel .dxe-explorer')",
        timeout=30_000,
    )
    for _ in range(60):
        if not notebook7.api("/api/kernels"):
            break
        page.wait_for_timeout(500)
    assert notebook7.api("/api/kernels") == []
    assert tree.get_by_role("tab", name="Files").get_attribute("aria-selected") == "true"
    assert watch.outside == [], watch.outside
    assert _errors(watch) == [], watch.errors


def test_the_tour_runs_in_notebook7(page, notebook7, shots):
    """The shipped tour top to bottom in Notebook 7: no error output; the table shows as the
    explorer, `%delta` results as formatted tables, the history chart renders."""
    nb = json.loads(TOUR.read_text())
    cells = [(c["cell_type"], "".join(c["source"])) for c in nb["cells"]]
    (notebook7.root / "tour_nb7.ipynb").write_text(notebook_json(cells))
    watch = Watch(page)
    _open_notebook(page, notebook7, "tour_nb7.ipynb")
    _run_all(page, sum(kind == "code" for kind, _ in cells))
    errors = page.locator(ERROR_OUTPUTS)
    assert errors.count() == 0, errors.all_inner_texts()[:3]
    explorer = page.locator(".jp-Notebook .dxe-explorer").first
    explorer.wait_for(timeout=60_000)
    settled(page, explorer)
    assert explorer.locator(".dxe-title").inner_text() == "sales"  # the table's name, at tables/tour_sales
    assert explorer.locator(".dxe-uri").inner_text().endswith("tour_sales")
    drawn_chart(open_tab(page, explorer, "History"))
    history = page.locator(".jp-Notebook table.dx-grid")  # `%delta history -n 5`, a formatted table
    assert history.count() == 1 and history.locator("tbody tr").count() == 5
    printed = "\n".join(
        page.locator(".jp-Notebook .jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stdout']").all_text_contents()
    )
    assert "OPTIMIZE" in printed and "region=" in printed  # the tables the tour prints
    svg = page.locator(".jp-Notebook .jp-OutputArea-output[data-mime-type='image/svg+xml'] img")
    assert svg.count() == 1 and svg.evaluate("img => img.naturalWidth") > 100  # the static chart
    page.screenshot(path=str(shots / "notebook7-tour.png"))
    explorer.screenshot(path=str(shots / "notebook7-tour-explorer.png"))
    assert watch.outside == [], watch.outside
    assert _errors(watch) == [], watch.errors


def test_an_explorer_and_a_delta_cell_in_notebook7_saved_and_reopened(page, notebook7, shots):
    """`%delta` and the explorer in Notebook 7: a `%delta … --chart` chart renders offline (the
    kernel's first chart), the explorer's tabs draw; saved, the kernel shut down, reopened with a
    new kernel: the explorer's saved summary shows in its place, no widget error."""
    cells = [
        "%load_ext deltaexplore\nimport deltaexplore as dx, demo_tables\nsales = demo_tables.build_sales('sales-nb7')",
        "%delta history sales-nb7 --all --chart",
        "%delta files sales-nb7",
        "dx.explore(sales)",
    ]
    name = "explorer_nb7.ipynb"
    (notebook7.root / name).write_text(notebook_json(cells))
    watch = Watch(page)
    _open_notebook(page, notebook7, name)
    _run_all(page, len(cells))
    assert page.locator(ERROR_OUTPUTS).count() == 0, page.locator(ERROR_OUTPUTS).all_inner_texts()[:3]
    outputs = page.locator(".jp-Notebook .jp-Cell .jp-OutputArea")
    chart = outputs.nth(1)
    chart.locator("svg .role-axis").first.wait_for(timeout=120_000)
    assert chart.locator("svg .mark-rect path").count() > 0
    assert outputs.nth(2).locator("table.dx-grid tbody tr").count() == 9
    explorer = outputs.nth(3).locator(".dxe-explorer")
    explorer.wait_for(timeout=120_000)
    settled(page, explorer)
    panel = open_tab(page, explorer, "Files")
    drawn_chart(panel, 0)
    assert page.locator(".dx-explorer-static").first.is_hidden()  # live: the summary made way
    page.screenshot(path=str(shots / "notebook7-explorer-live.png"), full_page=True)

    page.evaluate("window.jupyterapp.commands.execute('docmanager:save')")
    page.wait_for_function("() => !window.jupyterapp.shell.currentWidget.context.model.dirty", timeout=30_000)
    for kernel in notebook7.api("/api/kernels"):
        page.request.delete(notebook7.url(f"/api/kernels/{kernel['id']}"))
    saved = json.loads((notebook7.root / name).read_text())
    bundle = saved["cells"][3]["outputs"][0]["data"]
    assert {"application/vnd.deltaexplore.explorer+json", "application/vnd.jupyter.widget-view+json"} <= set(bundle)

    # reopened: a new kernel starts, which never had the explorer's model
    _open_notebook(page, notebook7, name)
    static = page.locator(".dx-explorer-static").first
    static.wait_for(timeout=60_000)
    for _ in range(60):  # until the widget manager gave up on the model (it logs so)
        if any("model not found" in e for e in watch.errors):
            break
        page.wait_for_timeout(500)
    page.wait_for_timeout(500)
    assert static.is_visible()
    assert "sales-nb7" in static.inner_text() and "version 7" in static.inner_text()
    # (the chart, a widget with no static form, says "Error displaying widget" here, as in JupyterLab)
    explorer_output = page.locator(".jp-Notebook .jp-Cell .jp-OutputArea").nth(3)
    assert explorer_output.get_by_text("Error displaying widget").count() == 0
    assert page.locator(".jp-Notebook .dxe-explorer").count() == 0
    static.screenshot(path=str(shots / "notebook7-saved-summary.png"))
    assert watch.outside == [], watch.outside
    assert [e for e in _errors(watch) if "model not found" not in e] == [], watch.errors


def test_without_the_server_extension_the_feature_is_off_quietly(page, tmp_path_factory, shots):
    """A server where deltaexplore.labserver is disabled: JupyterLab and Notebook 7 load the lab
    extension, which asks nothing (no request to /deltaexplore/tables, so no 404), logs nothing
    and marks nothing; the rest of the page works."""
    server = start_server(tmp_path_factory, args=('--ServerApp.jpserver_extensions={"deltaexplore.labserver": False}',))
    try:
        demo_tables.build_sales(server.root / "sales")
        watch = Watch(page)
        messages: list[str] = []
        page.on("console", lambda m: messages.append(f"{m.type}: {m.text}"))
        asked: list[str] = []
        page.on("request", lambda r: asked.append(r.url) if "/deltaexplore/" in r.url else None)
        failed: list[str] = []
        page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)
        for path, listing in (("/lab", ".jp-DirListing-item"), ("/tree", ".jp-DirListing-item")):
            page.goto(server.url(path))
            page.locator(listing, has_text="sales").first.wait_for(timeout=60_000)
            page.wait_for_timeout(3000)
            assert page.locator("[data-delta-table]").count() == 0
        page.screenshot(path=str(shots / "no-server-extension-tree.png"))
        assert asked == [], asked
        assert [f for f in failed if "deltaexplore" in f] == [], failed
        assert [m for m in messages if re.search(r"delta", m, re.IGNORECASE)] == [], messages
        assert _errors(watch) == [], watch.errors
        assert watch.outside == [], watch.outside
    finally:
        server.stop()
        shutil.rmtree(server.root, ignore_errors=True)
