"""The explorer in a real JupyterLab and Debian chromium: every tab renders (charts with marks and
axes, grids with rows), the version slider moves by keyboard (JupyterLab's shortcuts never see
the keys) and by mouse, a pair of history rows opens the diff, a filter applies on Enter, a
table full of script payloads shows them as text everywhere (cells, tooltips, pickers), no
console error, no request leaves the machine. Screenshots of every tab, light and dark, go to
$DELTAEXPLORE_SCREENSHOTS (default tests/browser/screenshots/, not committed); the README's
images are taken of a table the size of a real one (test_explorer_readable.py).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path

import pytest
from pyarrow import ipc

import deltaexplore as dx

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "notebooks"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from lab_helpers import Watch, drawn_chart, notebook_json, open_tab, settled, wait_kernel_idle
from xss_table import COLUMN, PART, PAYLOADS

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("browser")]

HERE = Path(__file__).resolve().parent
TABS = ["Overview", "History", "Files", "Layout", "Deletion vectors", "Diff", "Log health", "Maintenance"]


@pytest.fixture(scope="module")
def shots() -> Path:
    out = Path(os.environ.get("DELTAEXPLORE_SCREENSHOTS") or HERE / "screenshots")
    out.mkdir(parents=True, exist_ok=True)
    return out


def _open_and_run(page, lab, name: str, cells: list[tuple[str, str]]) -> None:
    for helper in ("xss_table.py", "big_table.py"):
        shutil.copy(HERE / helper, lab.root / helper)
    (lab.root / name).write_text(notebook_json(cells))
    page.goto(lab.url(f"/lab/workspaces/{name.replace('.', '-')}/tree/{name}?reset"))
    page.locator(".jp-Notebook").wait_for(timeout=60_000)
    wait_kernel_idle(page)
    page.evaluate("window.jupyterapp.commands.execute('application:toggle-left-area')")  # the notebook gets the width
    page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")


def _sales_and_xss(page, lab, name: str, sales_dir: str, xss_dir: str, *, extra: str = "") -> tuple:
    """Run a notebook that explores the demo sales table and the XSS table (in that order),
    with an optional markdown cell between; both explorers drawn, the sales one settled."""
    cells = [
        (
            "code",
            "import deltaexplore as dx, demo_tables, xss_table\n"
            f"sales = demo_tables.build_sales({sales_dir!r})\nxss = xss_table.build_xss({xss_dir!r})",
        ),
        *([("markdown", extra)] if extra else []),
        ("code", "dx.explore(sales)"),
        ("code", "dx.explore(xss)"),
    ]
    _open_and_run(page, lab, name, cells)
    explorers = page.locator(".dxe-explorer")
    explorers.nth(1).wait_for(timeout=120_000)
    sales, xss = explorers.nth(0), explorers.nth(1)
    settled(page, sales)
    return sales, xss


def _grid_rows(panel, label: str) -> int:
    """Rows the grid drew (a row with pinned columns is drawn in two containers: counted once)."""
    grid = panel.get_by_role("region", name=label, exact=True)
    grid.locator(".ag-row").first.wait_for(timeout=30_000)
    return grid.evaluate("g => new Set([...g.querySelectorAll('.ag-row[row-index]')].map(r => r.getAttribute('row-index'))).size")


def _cut_grids(panel) -> list[str]:
    """Grids of a panel whose columns do not fit their width (something to scroll sideways, or
    the last header cell's right edge past the grid's), with the widths that show it."""
    return panel.evaluate(
        """p => [...p.querySelectorAll('.dxe-grid-wrap')].filter(w => w.querySelector('.ag-root-wrapper')).map(w => {
            const grid = w.querySelector('.ag-root-wrapper').getBoundingClientRect();
            const right = Math.max(...[...w.querySelectorAll('.ag-header-cell')].map(c => c.getBoundingClientRect().right));
            const wide = [...w.querySelectorAll('.ag-body-horizontal-scroll-viewport, .ag-grid-viewport')]
                .filter(v => v.scrollWidth > v.clientWidth + 1).map(v => `${v.scrollWidth} px to scroll in ${v.clientWidth} px`);
            const cut = wide.length || right > grid.right + 1;
            const widths = [...w.querySelectorAll('.ag-header-cell')].map(c => `${c.getAttribute('col-id')} ${Math.round(c.getBoundingClientRect().width)}`);
            return cut ? `${w.getAttribute('aria-label')}: ${wide.join(', ')}; last header to ${Math.round(right)} of ${Math.round(grid.right)}; columns ${widths.join(', ')}` : null;
        }).filter(x => x)"""
    )


def _version(explorer) -> str:
    return explorer.locator(".dxe-version-out").inner_text()


def _unnamed_controls(explorer) -> list[str]:
    """Controls without an accessible name (screen readers would announce nothing)."""
    return explorer.evaluate(
        """root => [...root.querySelectorAll('button, input, select, [role=tab]')].filter(el => {
            if (el.closest('.ag-root-wrapper')) return false;  // AG Grid labels its own controls
            const label = el.getAttribute('aria-label') || el.getAttribute('title') || (el.labels && el.labels.length && el.labels[0].textContent) || el.textContent;
            return !(label && label.trim());
        }).map(el => el.outerHTML.slice(0, 120))"""
    )


def test_explorer_in_jupyterlab(page, lab, shots):
    page.set_viewport_size({"width": 1500, "height": 1650})  # room for a whole tab in the screenshots
    watch = Watch(page)
    sales, xss = _sales_and_xss(
        page,
        lab,
        "explorer_tour.ipynb",
        "sales",
        "xss",
        extra="# Sales\nThe heading above the explorer: ArrowLeft must not collapse it.",
    )
    # the explorer as wide as a notebook on a laptop-sized screen: every grid fits it (below)
    assert 1250 <= sales.bounding_box()["width"] <= 1330
    assert sales.get_attribute("data-lm-suppress-shortcuts") == "true"
    assert sales.locator(".dxe-title").inner_text() == "sales"
    assert _version(sales).startswith("7 of 7")

    # -- every tab renders ------------------------------------------------------------------
    panel = open_tab(page, sales, "Overview")
    assert panel.locator(".dxe-card").count() >= 6 and "deltaexplore tour: sales by region" in panel.inner_text()
    assert _grid_rows(panel, "schema") == 5
    sales.screenshot(path=str(shots / "light-overview.png"))
    assert _cut_grids(panel) == []
    panel = open_tab(page, sales, "History")
    assert _grid_rows(panel, "history") == 8
    drawn_chart(panel)
    sales.screenshot(path=str(shots / "light-history.png"))
    assert _cut_grids(panel) == []
    panel = open_tab(page, sales, "Files")
    assert _grid_rows(panel, "files") == 9 and _grid_rows(panel, "partitions") == 3
    # a float column keeps its decimals when a value is whole (skew 1.00 next to 0.40, not 1)
    skews = panel.get_by_role("region", name="partitions", exact=True).locator('.ag-cell[col-id="skew"]').all_inner_texts()
    assert sorted(skews) == ["0.40", "1.00", "1.00"]
    drawn_chart(panel, 0), drawn_chart(panel, 1)
    sales.screenshot(path=str(shots / "light-files.png"))
    assert _cut_grids(panel) == []
    panel = open_tab(page, sales, "Layout")
    drawn_chart(panel, 0), drawn_chart(panel, 1)
    assert _grid_rows(panel, "files by overlap depth") == 9
    sales.screenshot(path=str(shots / "light-layout.png"))
    assert _cut_grids(panel) == []
    panel = open_tab(page, sales, "Deletion vectors")
    drawn_chart(panel)
    assert _grid_rows(panel, "deletion vectors") == 2
    sales.screenshot(path=str(shots / "light-deletion-vectors.png"))
    assert _cut_grids(panel) == []
    panel = open_tab(page, sales, "Diff")
    panel.get_by_text("Version 6 → 7").wait_for(timeout=30_000)
    assert _grid_rows(panel, "changes") >= 4 and _grid_rows(panel, "changed files") == 1
    sales.screenshot(path=str(shots / "light-diff.png"))
    assert _cut_grids(panel) == []
    panel = open_tab(page, sales, "Log health")
    drawn_chart(panel)
    assert _grid_rows(panel, "log health") >= 10
    sales.screenshot(path=str(shots / "light-log-health.png"))
    assert _cut_grids(panel) == []
    panel = open_tab(page, sales, "Maintenance")
    panel.get_by_role("button", name="Preview OPTIMIZE (compact)").click()
    panel.get_by_text("files to rewrite").wait_for(timeout=30_000)
    sales.screenshot(path=str(shots / "light-maintenance.png"))
    assert _cut_grids(panel) == []
    # the advice: ranked cards from inspect.advise, each previewed through its operation
    panel.get_by_role("button", name="What should I run?").click()
    advice = panel.get_by_role("list", name="advice")
    advice.get_by_role("listitem").first.wait_for(timeout=60_000)
    kinds = [
        x.split(":")[0] for x in advice.get_by_role("listitem").evaluate_all("els => els.map(e => e.getAttribute('aria-label'))")
    ]
    assert (
        kinds == dx.open_table(str(Path(lab.root) / "sales")).inspect.advise().column("kind").to_pylist()
        and "compaction" in kinds
    )
    advice.get_by_role("button", name=re.compile(r"Preview advice \d+: compaction")).click()
    panel.get_by_text("OPTIMIZE (compact): preview").wait_for(timeout=30_000)
    sales.screenshot(path=str(shots / "light-maintenance-advice.png"))
    # RESTORE restores the version shown: one version back, the DELETE's file comes back
    version_slider = sales.get_by_role("slider", name="version")
    version_slider.focus()
    version_slider.press("ArrowLeft")
    page.wait_for_function(
        "el => el.textContent.startsWith('6 of 7')", arg=sales.locator(".dxe-version-out").element_handle(), timeout=30_000
    )
    settled(page, sales)
    panel.get_by_role("button", name="Preview RESTORE").click()
    panel.get_by_text("files back").wait_for(timeout=30_000)
    shown = panel.inner_text()
    assert re.search(r"restore to version\s+6", shown) and re.search(r"files back\s+1", shown), shown
    sales.screenshot(path=str(shots / "light-maintenance-restore.png"))
    version_slider.focus()
    version_slider.press("ArrowRight")
    page.wait_for_function(
        "el => el.textContent.startsWith('7 of 7')", arg=sales.locator(".dxe-version-out").element_handle(), timeout=30_000
    )
    settled(page, sales)
    assert _unnamed_controls(sales) == []

    # -- a filter applies on Enter, not on every key --------------------------------------------
    panel = open_tab(page, sales, "Files")
    box = panel.get_by_role("searchbox", name=re.compile("^files: filter paths"))
    box.fill("region=apac")
    page.wait_for_timeout(600)
    count = panel.get_by_role("region", name="files", exact=True).locator(".dxe-grid-count")
    assert count.inner_text() == "9 files"
    box.press("Enter")
    page.wait_for_function("el => el.textContent === '4 of 9 files'", arg=count.element_handle(), timeout=30_000)
    assert box.evaluate("el => el === document.activeElement")  # focus stays in the box
    box.press("Escape")
    page.wait_for_function("el => el.textContent === '9 files'", arg=count.element_handle(), timeout=30_000)

    # -- the slider by keyboard: JupyterLab's shortcuts never see the key ---------------------
    heading = page.locator(".jp-MarkdownCell").filter(has_text="Sales").first
    slider = sales.get_by_role("slider", name="version")
    slider.focus()
    slider.press("ArrowLeft")
    page.wait_for_function(
        "el => el.textContent.startsWith('6 of 7')", arg=sales.locator(".dxe-version-out").element_handle(), timeout=30_000
    )
    settled(page, sales)
    assert sales.is_visible() and heading.is_visible()  # the heading above did not collapse
    assert "OPTIMIZE" in sales.locator(".dxe-commit-line").inner_text()
    assert slider.evaluate("el => el === document.activeElement")  # the DOM was updated in place
    # ... and by mouse: a click near the left end of the track goes to version 0
    box_ = slider.bounding_box()
    page.mouse.click(box_["x"] + 3, box_["y"] + box_["height"] / 2)
    page.wait_for_function(
        "el => el.textContent.startsWith('0 of 7')", arg=sales.locator(".dxe-version-out").element_handle(), timeout=30_000
    )
    settled(page, sales)
    assert "CREATE TABLE AS SELECT" in sales.locator(".dxe-commit-line").inner_text()
    assert _grid_rows(sales.locator(".dxe-panel:not([hidden])"), "files") == 3  # the open tab shows version 0
    sales.get_by_role("button", name="next version").click()
    page.wait_for_function(
        "el => el.textContent.startsWith('1 of 7')", arg=sales.locator(".dxe-version-out").element_handle(), timeout=30_000
    )

    # -- two history rows open the diff --------------------------------------------------------
    panel = open_tab(page, sales, "History")
    grid = panel.get_by_role("region", name="history", exact=True)
    # the version shown (1, moved to while the tab was hidden) is the one row marked current
    marked = grid.evaluate(
        """g => [...new Set([...g.querySelectorAll('.ag-row.dxe-row-current')].map(r => r.getAttribute('row-index')))]
            .map(i => g.querySelector(`.ag-row[row-index='${i}'] .ag-cell[col-id=version]`).textContent.trim())"""
    )
    assert marked == ["1"]
    for v in ("3", "5"):
        index = grid.evaluate(
            "(g, v) => [...g.querySelectorAll('.ag-cell[col-id=version]')].find(c => c.textContent.trim() === v).closest('.ag-row').getAttribute('row-index')",
            v,
        )
        grid.locator(f".ag-row[row-index='{index}'] input[type=checkbox]").first.check()
    panel.get_by_role("button", name="Compare 3 → 5").click()
    settled(page, sales)
    assert sales.get_by_role("tab", name="Diff", exact=True).get_attribute("aria-selected") == "true"
    panel = sales.locator(".dxe-panel:not([hidden])")
    panel.get_by_text("Version 3 → 5").wait_for(timeout=30_000)
    assert "channel" in panel.inner_text()  # the ADD COLUMNS of version 4
    # clicking a commit on the timeline travels to it
    panel = open_tab(page, sales, "History")
    tick = drawn_chart(panel).locator("svg g.role-mark > [aria-roledescription]").first  # version 7 (the newest is drawn first)
    tick.scroll_into_view_if_needed()
    settled(page, sales)
    where = tick.bounding_box()
    page.mouse.click(where["x"] + where["width"] / 2, where["y"] + where["height"] / 2)
    settled(page, sales)
    assert not _version(sales).startswith("1 of 7")

    # -- dark theme ------------------------------------------------------------------------------
    page.evaluate("window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Dark'})")
    page.wait_for_function("() => document.body.dataset.jpThemeLight === 'false'", timeout=30_000)
    sales.get_by_role("button", name="⟳ Refresh").click()  # also: back to the latest version
    settled(page, sales)
    for name in TABS:
        panel = open_tab(page, sales, name)
        if name in ("History", "Files", "Layout", "Log health"):
            drawn_chart(panel)
        sales.screenshot(path=str(shots / f"dark-{name.lower().replace(' ', '-')}.png"))
    axis_text = sales.locator(".dxe-panel:not([hidden])")
    page.evaluate("window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Light'})")
    page.wait_for_function("() => document.body.dataset.jpThemeLight === 'true'", timeout=30_000)
    assert axis_text is not None

    # -- script payloads stay text everywhere ----------------------------------------------------
    xss.scroll_into_view_if_needed()
    seen = ""
    for name in TABS:
        panel = open_tab(page, xss, name)
        if name == "History":
            panel.get_by_role("region", name="history", exact=True).locator(".ag-row").first.click()
            panel.locator(".dxe-detail details summary").click()
            panel.locator(".dxe-json").filter(has_text="userMetadata").wait_for(timeout=30_000)
        if name == "Layout":
            picker = panel.get_by_role("combobox", name="layout column")
            picker.select_option(COLUMN)
            settled(page, xss)
            panel = xss.locator(".dxe-panel:not([hidden])")
            assert COLUMN in picker.inner_text()
        seen += panel.inner_text() + "\n"
        # a chart's tooltip: Vega's marks under the pointer, our text-only handler
        charts = panel.locator(".dxe-chart svg")
        if charts.count():
            mark = charts.first.locator("g.role-mark > [aria-roledescription]").first
            if mark.count():
                mark.hover(force=True)
                page.wait_for_timeout(200)
        xss.screenshot(path=str(shots / f"xss-{name.lower().replace(' ', '-')}.png"))
    seen += xss.locator(".dxe-header").inner_text()
    for payload in (*PAYLOADS.values(), COLUMN, PART):
        assert payload in seen, payload
    tooltip = page.locator(".dxe-tooltip")
    if tooltip.count():
        assert tooltip.first.locator("img, script, svg, a, b, i").count() == 0
    injected = page.evaluate(
        """() => [...document.querySelectorAll('.dxe-explorer img, .dxe-explorer script, .dxe-explorer a[href], .dxe-explorer b, .dxe-explorer i, .dxe-tooltip img, .dxe-tooltip svg')]
                 .map(e => e.outerHTML.slice(0, 80))"""
    )
    assert injected == []
    assert page.evaluate("() => window.__dx_pwned") is None
    assert page.dialogs == []

    # -- maintenance: preview, run, and the new version appears ---------------------------------
    panel = open_tab(page, sales, "Maintenance")
    panel.get_by_role("button", name="Preview OPTIMIZE (compact)").click()
    panel.get_by_text("files to rewrite").wait_for(timeout=30_000)
    panel.get_by_role("button", name="Run OPTIMIZE (compact)").click()
    sales.get_by_role("status").filter(has_text="version 7 -> 8").wait_for(timeout=180_000)
    assert _version(sales).startswith("8 of 8")

    assert watch.outside == [], f"requests left the machine: {watch.outside}"
    assert watch.errors == [], watch.errors


def test_a_saved_explorer_reopened_without_its_kernel_shows_its_summary(page, lab, shots):
    """Saved, the kernel shut down, reopened: the output shows what the explorer showed (the
    deltaexplore extension renders the summary ahead of the widget view, whose model is gone)."""
    if not (HERE.parents[1] / "extension" / "build" / "deltaexplore-jupyterlab" / "package.json").exists():
        pytest.fail("the JupyterLab extension is not built: run `make setup-ui`")
    watch = Watch(page)
    name = "saved_explorer.ipynb"
    _open_and_run(
        page,
        lab,
        name,
        [("code", "import deltaexplore as dx, xss_table\nxss = xss_table.build_xss('xss-saved')"), ("code", "dx.explore(xss)")],
    )
    live = page.locator(".dxe-explorer").first
    live.wait_for(timeout=120_000)
    settled(page, live)
    assert page.locator(".dx-explorer-static").first.is_hidden()  # live: the summary made way for the explorer
    page.evaluate("window.jupyterapp.commands.execute('docmanager:save')")
    page.wait_for_function("() => !window.jupyterapp.shell.currentWidget.context.model.dirty", timeout=30_000)
    page.evaluate("window.jupyterapp.commands.execute('kernelmenu:shutdown')")
    page.wait_for_function(
        "() => { const w = window.jupyterapp.shell.currentWidget; return !w.sessionContext.session || !w.sessionContext.session.kernel; }",
        timeout=60_000,
    )
    page.evaluate("window.jupyterapp.commands.execute('application:close-all')")
    page.wait_for_timeout(1000)
    saved = json.loads((lab.root / name).read_text())
    bundle = saved["cells"][1]["outputs"][0]["data"]
    assert {"text/html", "application/vnd.deltaexplore.explorer+json", "application/vnd.jupyter.widget-view+json"} <= set(bundle)
    # reopened: a new kernel starts, which never had the explorer's model
    page.goto(lab.url(f"/lab/workspaces/reopen/tree/{name}?reset"))
    static = page.locator(".dx-explorer-static").first
    static.wait_for(timeout=60_000)
    page.wait_for_timeout(3000)  # time for the widget manager to give up on the model
    assert static.is_visible()
    text = static.inner_text()
    assert PAYLOADS["script"] in text and "version 2" in text and "files" in text and "SET TBLPROPERTIES" in text
    assert page.locator("text=Error displaying widget").count() == 0 and page.locator(".dxe-explorer").count() == 0
    assert page.evaluate("() => window.__dx_pwned") is None
    static.screenshot(path=str(shots / "saved-notebook-summary.png"))
    assert watch.outside == [], watch.outside
    assert [e for e in watch.errors if "model not found" not in e] == []


def _marks(chart) -> list:
    return chart.locator("svg g.role-mark > [aria-roledescription]").all()


def _hover_until(page, chart, needle: str) -> str:
    """Hover the chart's marks one after another until the tooltip shows `needle`; its text."""
    tip = page.locator(".dxe-tooltip.dxe-tooltip-visible")
    seen = []
    for mark in _marks(chart)[:60]:
        box = mark.bounding_box()
        if not box:
            continue
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        page.wait_for_timeout(120)
        if tip.count():
            text = tip.inner_text()
            seen.append(text)
            if needle in text:
                return text
    raise AssertionError(f"no tooltip of the chart showed {needle!r}: {seen[:5]}")


def _drag(page, chart, x0: float, x1: float) -> None:
    """Drag across a chart's plot from x0 to x1 (fractions of its width) at mid height."""
    # the plot: the view's background (a unit spec's root group is its plot rectangle)
    box = chart.locator("svg g.role-frame > g > path.background").first.bounding_box()
    y = box["y"] + box["height"] * 0.5
    # paced like a hand (a loaded machine's Vega handles each event in turn)
    page.mouse.move(box["x"] + box["width"] * x0, y)
    page.wait_for_timeout(100)
    page.mouse.down()
    page.wait_for_timeout(100)
    for i in range(1, 11):
        page.mouse.move(box["x"] + box["width"] * (x0 + (x1 - x0) * i / 10), y)
        page.wait_for_timeout(30)
    page.mouse.up()


def test_selections_filters_exports_and_keys(page, lab, shots, tmp_path):
    """Selections flow back (a timeline brush picks the diff pair, a file range lists its file,
    a density brush filters the files), history filters by operation, user and time, grids
    export CSV and Arrow (rows in the browser and rows in the kernel), count axes read in whole
    numbers, single-key JupyterLab shortcuts pressed inside the widget do nothing to the
    notebook, and a chart tooltip holding script payloads shows them as text."""
    page.set_viewport_size({"width": 1500, "height": 1400})
    watch = Watch(page)
    sales, xss = _sales_and_xss(page, lab, "explorer_selections.ipynb", "sales2", "xss2")

    # -- keys inside the widget never reach JupyterLab's command-mode shortcuts -------------------
    cells_before = page.locator(".jp-Notebook .jp-Cell").count()
    tab = sales.get_by_role("tab", name="Overview", exact=True)
    tab.focus()
    for key in ("b", "a", "m", "Shift+ArrowUp", "ArrowUp"):
        tab.press(key)
    page.wait_for_timeout(300)
    assert page.locator(".jp-Notebook .jp-Cell").count() == cells_before  # no cell inserted (b, a)
    assert page.locator(".jp-Notebook .jp-MarkdownCell").count() == 0  # no cell turned to markdown (m)
    assert tab.evaluate("el => el === document.activeElement")

    # -- history: filters by operation, user and time ----------------------------------------------
    panel = open_tab(page, sales, "History")
    grid = panel.get_by_role("region", name="history", exact=True)
    count = grid.locator(".dxe-grid-count")
    page.wait_for_function("el => el.textContent === '8 commits'", arg=count.element_handle(), timeout=30_000)
    op = panel.get_by_role("combobox", name="filter by operation")
    writes = int(re.search(r"WRITE \((\d+)\)", op.inner_text()).group(1))  # type: ignore[union-attr]
    assert 1 < writes < 8
    op.select_option("WRITE")
    page.wait_for_function(
        "([el, t]) => el.textContent === t", arg=[count.element_handle(), f"{writes} of 8 commits"], timeout=10_000
    )
    ops = grid.evaluate("g => [...new Set([...g.querySelectorAll('.ag-cell[col-id=operation]')].map(c => c.textContent.trim()))]")
    assert ops == ["WRITE"]
    panel.get_by_role("combobox", name="filter by user").select_option("ana")  # every commit's
    page.wait_for_function(
        "([el, t]) => el.textContent === t", arg=[count.element_handle(), f"{writes} of 8 commits"], timeout=10_000
    )
    panel.get_by_role("button", name="Clear filters").click()
    page.wait_for_function("el => el.textContent === '8 commits'", arg=count.element_handle(), timeout=10_000)
    # commits are an hour apart from 2024-01-01 00:00 UTC (versions 0..7): a local time range
    # around versions 2..4
    from_ms, to_ms = page.evaluate(
        """() => { const local = ms => { const d = new Date(ms - new Date(ms).getTimezoneOffset() * 60000); return d.toISOString().slice(0, 16); };
                   const t0 = Date.UTC(2024, 0, 1); return [local(t0 + 2 * 3600e3), local(t0 + 4 * 3600e3)]; }"""
    )
    for name, value in (("from time (local)", from_ms), ("to time (local)", to_ms)):
        box = panel.get_by_label(name, exact=True)
        box.fill(value)
        box.dispatch_event("change")
    page.wait_for_function("el => el.textContent === '3 of 8 commits'", arg=count.element_handle(), timeout=10_000)
    versions = grid.evaluate(
        "g => [...new Set([...g.querySelectorAll('.ag-cell[col-id=version]')].map(c => c.textContent.trim()))].sort()"
    )
    assert versions == ["2", "3", "4"]
    panel.get_by_role("button", name="Clear filters").click()
    page.wait_for_function("el => el.textContent === '8 commits'", arg=count.element_handle(), timeout=10_000)

    # -- export from a grid whose rows are in the browser (history) ----------------------------------
    with page.expect_download() as dl:
        grid.get_by_role("button", name="CSV").click()
    dl.value.save_as(tmp_path / "history.csv")
    csv = (tmp_path / "history.csv").read_text()
    lines = [ln for ln in csv.splitlines() if ln.strip()]
    assert len(lines) == 9 and "operation" in lines[0] and "CREATE TABLE AS SELECT" in csv
    with page.expect_download() as dl:
        grid.get_by_role("button", name="Arrow").click()
    dl.value.save_as(tmp_path / "history.arrow")
    history = ipc.open_file(str(tmp_path / "history.arrow")).read_all()
    assert history.num_rows == 8 and sorted(history.column("version").to_pylist()) == list(range(8))

    # -- a brush across the whole timeline picks the first and last version: the diff opens --------
    chart = drawn_chart(panel)
    chart.scroll_into_view_if_needed()
    _drag(page, chart, 0.02, 0.98)
    bar = panel.locator(".dxe-action-bar")
    bar.get_by_text("commits in the brushed range").wait_for(timeout=10_000)
    button = bar.get_by_role("button", name=re.compile(r"^Compare \d+ → \d+$"))
    lo, hi = re.match(r"Compare (\d+) → (\d+)", button.inner_text()).groups()  # type: ignore[union-attr]
    assert int(lo) < int(hi)
    button.click()
    settled(page, sales)
    assert sales.get_by_role("tab", name="Diff", exact=True).get_attribute("aria-selected") == "true"
    sales.locator(".dxe-panel:not([hidden])").get_by_text(f"Version {lo} → {hi}").wait_for(timeout=30_000)

    # -- export from a grid whose rows stay in the kernel (files) ------------------------------------
    panel = open_tab(page, sales, "Files")
    files = panel.get_by_role("region", name="files", exact=True)
    with page.expect_download() as dl:
        files.get_by_role("button", name="CSV").click()
    dl.value.save_as(tmp_path / "files.csv")
    lines = [ln for ln in (tmp_path / "files.csv").read_text().splitlines() if ln.strip()]
    assert len(lines) == 10 and lines[0].startswith('"path"')
    with page.expect_download() as dl:
        files.get_by_role("button", name="Arrow").click()
    dl.value.save_as(tmp_path / "files.arrow")
    exported = ipc.open_file(str(tmp_path / "files.arrow")).read_all()
    assert exported.num_rows == 9 and "path" in exported.column_names

    # -- layout: whole-number count axes; a file range clicked lists that file; a brush filters ----
    panel = open_tab(page, sales, "Layout")
    density, ranges = drawn_chart(panel, 0), drawn_chart(panel, 1)
    ticks = density.evaluate("c => [...c.querySelectorAll('g.role-axis-label text')].map(t => t.textContent)")
    assert ticks and all(re.fullmatch(r"-?[\d,]+", t) for t in ticks), ticks  # no 0.5 files
    legend = panel.evaluate("p => [...p.querySelectorAll('.dxe-chart g.role-legend text')].map(t => t.textContent)")
    assert not [t for t in legend if re.search(r"\.\d", t)], legend  # overlap depth: whole files
    layout_grid = panel.get_by_role("region", name="files by overlap depth", exact=True)
    lcount = layout_grid.locator(".dxe-grid-count")
    page.wait_for_function("el => el.textContent === '9 files'", arg=lcount.element_handle(), timeout=30_000)
    mark = _marks(ranges)[0]
    box = mark.bounding_box()
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.wait_for_function("el => el.textContent === '1 of 9 files'", arg=lcount.element_handle(), timeout=30_000)
    tag = layout_grid.locator(".dxe-filter-tag")
    assert re.fullmatch(r"file ranked \d+", tag.locator("span").first.inner_text())
    ranked = int(tag.locator("span").first.inner_text().rsplit(" ", 1)[1])
    layout_grid.locator(".ag-row").first.wait_for(timeout=30_000)
    assert layout_grid.locator(".ag-cell[col-id=rank]").first.inner_text().strip() == str(ranked)
    layout_grid.get_by_role("button", name=re.compile("^clear filter")).click()
    page.wait_for_function("el => el.textContent === '9 files'", arg=lcount.element_handle(), timeout=30_000)
    density.scroll_into_view_if_needed()
    settled(page, sales)
    _drag(page, density, 0.05, 0.5)
    page.wait_for_function("el => /^\\d+ of 9 files$/.test(el.textContent)", arg=lcount.element_handle(), timeout=30_000)
    assert "brushed values" in tag.inner_text()
    sales.screenshot(path=str(shots / "light-layout-selected.png"))

    # -- a chart tooltip with script payloads: text only -----------------------------------------------
    xss.scroll_into_view_if_needed()
    panel = open_tab(page, xss, "History")
    text = _hover_until(page, drawn_chart(panel), PAYLOADS["img"])  # the operation and user of version 0
    assert PAYLOADS["img"] in text
    tooltip = page.locator(".dxe-tooltip.dxe-tooltip-visible")
    tags = tooltip.evaluate("t => [...new Set([...t.querySelectorAll('*')].map(e => e.tagName.toLowerCase()))].sort()")
    assert set(tags) <= {"table", "tbody", "tr", "th", "td"}, tags
    xss.screenshot(path=str(shots / "xss-history-tooltip.png"))
    panel = open_tab(page, xss, "Files")
    text = _hover_until(page, drawn_chart(panel, 1), PART)  # the partition skew chart: partition values
    assert PAYLOADS["a"] in text or "plain" in text
    tags = tooltip.evaluate("t => [...new Set([...t.querySelectorAll('*')].map(e => e.tagName.toLowerCase()))].sort()")
    assert set(tags) <= {"table", "tbody", "tr", "th", "td"}, tags
    assert page.evaluate("() => window.__dx_pwned") is None

    assert watch.outside == [], f"requests left the machine: {watch.outside}"
    assert watch.errors == [], watch.errors


def test_the_tour_runs_in_jupyterlab(page, lab, shots):
    """The shipped tour, run top to bottom in JupyterLab: no error output, its explorer and charts
    render, nothing leaves the machine, no console error."""
    watch = Watch(page)
    nb = json.loads((HERE.parents[1] / "notebooks" / "00_tour.ipynb").read_text())
    cells = [(c["cell_type"], "".join(c["source"])) for c in nb["cells"]]
    _open_and_run(page, lab, "tour_run.ipynb", cells)
    page.wait_for_function(
        """() => { const w = window.jupyterapp.shell.currentWidget;
                   const cells = [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')];
                   return w.sessionContext.session.kernel.status === 'idle' && cells.length && cells.every(p => /\\[\\d+\\]/.test(p.textContent)); }""",
        timeout=300_000,
    )
    errors = page.locator(
        ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.error'], .jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']"
    )
    assert errors.count() == 0, errors.all_inner_texts()[:3]
    explorer = page.locator(".dxe-explorer").first
    explorer.wait_for(timeout=60_000)
    settled(page, explorer)
    assert "tour_sales" in explorer.locator(".dxe-title").inner_text() or explorer.locator(".dxe-title").inner_text() == "sales"
    panel = open_tab(page, explorer, "History")
    drawn_chart(panel)
    page.screenshot(path=str(shots / "tour.png"))
    assert watch.outside == [], watch.outside
    assert watch.errors == [], watch.errors


def test_prepared_tabs_are_drawn_before_they_are_opened(page, lab, shots):
    """A big table (here: the thresholds of one): once the overview is complete the kernel
    prepares History, Files, Log health, the default column's Layout and the Diff of the
    previous version to this one in the background and sends them; the browser builds those tabs in idle time, hidden (no focus, out of the
    accessibility tree), and a click only shows them: no request for their data or rows reaches
    the kernel, and they look as a tab drawn on the click does (charts as wide as their panel)."""
    page.set_viewport_size({"width": 1500, "height": 1650})  # as the tour's screenshots
    watch = Watch(page)
    frames: list[tuple[str, bytes]] = []

    def on_ws(ws) -> None:
        def raw(payload) -> bytes:
            return payload if isinstance(payload, bytes) else payload.encode()

        ws.on("framesent", lambda p: frames.append(("sent", raw(p))))
        ws.on("framereceived", lambda p: frames.append(("received", raw(p))))

    page.on("websocket", on_ws)
    cells = [
        (
            "code",
            "import deltaexplore as dx, demo_tables\nfrom deltaexplore.widgets import views\n"
            "views.EAGER_SEGMENT_BYTES = 0  # as a big table: the next tabs are prepared in the background\n"
            "sales = demo_tables.build_sales('sales_prepared')",
        ),
        ("code", "dx.explore(sales)"),
    ]
    _open_and_run(page, lab, "explorer_prepared.ipynb", cells)
    explorer = page.locator(".dxe-explorer").first
    explorer.wait_for(timeout=120_000)
    settled(page, explorer)
    tabs = {"History": "history", "Files": "files", "Layout": "layout", "Diff": "diff", "Log health": "health"}
    # built while hidden: charts drawn (the diff has none: its cards), grid rows there, the panel
    # kept out of focus and the accessibility tree
    page.wait_for_function(
        """ids => { const root = document.querySelector('.dxe-explorer');
            return ids.every(id => { const p = root.querySelector(`.dxe-panel[data-tab=${id}]`);
                return p.hidden && p.classList.contains('dxe-prerender') && p.querySelector('.ag-row')
                    && (id === 'diff' ? p.querySelector('[aria-label="changed files"] .ag-row') && p.querySelectorAll('.dxe-diff-result:not([hidden]) .dxe-card').length >= 6
                        : p.querySelector('.dxe-chart svg g.role-mark > [aria-roledescription]')); }); }""",
        arg=list(tabs.values()),
        timeout=120_000,
    )
    for tab_id in tabs.values():
        hidden = explorer.locator(f".dxe-panel[data-tab={tab_id}]")
        assert hidden.evaluate("p => p.inert && p.getAttribute('aria-hidden') === 'true' && !p.contains(document.activeElement)")
        assert hidden.get_by_role("region").count() == 0  # no grid in the accessibility tree while hidden
    assert explorer.locator(".dxe-panel:not([hidden])").get_attribute("data-tab") == "overview"
    explorer.evaluate(
        "root => { window.__dxeBuilt = [...root.querySelectorAll('.dxe-panel .ag-root-wrapper, .dxe-panel .dxe-chart svg')]; }"
    )
    for name, tab_id in tabs.items():
        frames.clear()
        panel = open_tab(page, explorer, name)
        assert panel.get_attribute("data-tab") == tab_id
        assert panel.evaluate("p => !p.inert && !p.hasAttribute('aria-hidden') && !p.classList.contains('dxe-prerender')")
        # nothing asked of the kernel but the tab's name; no data, rows or busy line came back
        sent = [p for d, p in frames if d == "sent" and b"comm_msg" in p]
        assert sent and all(b'"tab"' in p and b'"rows"' not in p and b'"prefetch"' not in p for p in sent), sent
        received = b"".join(p for d, p in frames if d == "received")
        assert f'"{tab_id}_data"'.encode() not in received and b"loading " not in received
        # what the click shows is what was built while hidden
        assert panel.evaluate(
            "p => [...p.querySelectorAll('.ag-root-wrapper, .dxe-chart svg')].every(n => window.__dxeBuilt.includes(n))"
        )
        if tab_id != "diff":
            widths = panel.evaluate(
                "p => [...p.querySelectorAll('.dxe-chart')].filter(c => c.offsetParent).map(c => [Math.round(c.getBoundingClientRect().width), Math.round(c.querySelector('svg').getBoundingClientRect().width)])"
            )
            assert widths and all(chart > 200 and svg >= chart - 40 for chart, svg in widths), widths  # laid out at full width
        assert _cut_grids(panel) == []
        explorer.screenshot(path=str(shots / f"prepared-{tab_id}.png"))
        if tab_id == "diff":  # the default pair's, as computed on a click (`inspect.diff_files`)
            assert panel.get_by_label("compare from version", exact=True).input_value() == "6"
            assert panel.get_by_label("compare to version", exact=True).input_value() == "7"
            assert panel.get_by_label("compare to version", exact=True).locator("option").count() == 8
            changed = dx.open_table(str(lab.root / "sales_prepared")).inspect.diff_files(6, 7).num_rows
            assert changed and _grid_rows(panel, "changed files") == changed
    assert _grid_rows(explorer.locator(".dxe-panel:not([hidden])"), "log health") >= 10

    # back to version 0, from the overview: the hidden tabs follow the version (sent again once
    # prepared for it), and opening Files then asks the kernel for nothing either
    files_at_0 = dx.open_table(str(lab.root / "sales_prepared")).snapshot(0).num_files
    assert files_at_0 != 9
    open_tab(page, explorer, "Overview")
    slider = explorer.get_by_role("slider", name="version")
    slider.focus()
    slider.press("Home")
    page.wait_for_function(
        "([el, n]) => [...el.querySelectorAll('.dxe-panel[data-tab=files] .dxe-grid-count')].some(c => c.textContent === `${n} files`)",
        arg=[explorer.element_handle(), files_at_0],
        timeout=120_000,
    )
    assert _version(explorer).startswith("0 of 7")
    frames.clear()
    panel = open_tab(page, explorer, "Files")
    received = b"".join(p for d, p in frames if d == "received")
    assert b'"files_data"' not in received and b"loading " not in received
    assert _grid_rows(panel, "files") == files_at_0
    explorer.screenshot(path=str(shots / "prepared-files-v0.png"))
    assert watch.outside == [], watch.outside
    assert watch.errors == [], watch.errors


def test_diff_pickers_of_a_long_history_list_their_versions_when_reached(page, lab, shots):
    """Over 100 versions (the big test table), a Diff picker holds the version chosen alone
    until it is reached (a thousand options were half the elements styled when the tab is
    shown); focused, it lists every version newest first with its time and operation, and a
    version picked there is compared. The Diff and Log health tabs of that table, as shown."""
    page.set_viewport_size({"width": 1500, "height": 1650})
    watch = Watch(page)
    cells = [
        ("code", "import deltaexplore as dx, big_table\nbig = big_table.build_big('events_pickers')"),
        ("code", "dx.explore(big)"),
    ]
    _open_and_run(page, lab, "explorer_pickers.ipynb", cells)
    explorer = page.locator(".dxe-explorer").first
    explorer.wait_for(timeout=120_000)
    settled(page, explorer)
    table = dx.open_table(str(lab.root / "events_pickers"))
    hi = table.snapshot().version
    lo = int(explorer.locator("input[type=range]").get_attribute("min") or 0)
    assert hi - lo + 1 > 100
    open_tab(page, explorer, "History").locator(".ag-row").first.wait_for(timeout=60_000)  # the pickers' labels
    panel = open_tab(page, explorer, "Diff")
    frm = panel.get_by_label("compare from version", exact=True)
    to = panel.get_by_label("compare to version", exact=True)
    panel.locator(".dxe-diff-result:not([hidden]) .dxe-card").first.wait_for(timeout=60_000)
    assert frm.locator("option").count() == 1 and to.locator("option").count() == 1
    assert (frm.input_value(), to.input_value()) == (str(hi - 1), str(hi))
    operation = table.inspect.history().to_pylist()[0]["operation"]
    assert to.locator("option").inner_text().startswith(f"{hi} · ") and operation in to.locator("option").inner_text()
    explorer.screenshot(path=str(shots / "big-diff.png"))
    assert _cut_grids(panel) == []
    frm.focus()  # reached: every version listed, the one chosen still chosen
    values = frm.locator("option").evaluate_all("os => os.map(o => o.value)")
    assert values == [str(v) for v in range(hi, lo - 1, -1)]
    assert frm.input_value() == str(hi - 1)
    frm.select_option(str(hi - 10))
    panel.get_by_text(f"Version {hi - 10} → {hi}", exact=True).wait_for(timeout=60_000)
    changed = table.inspect.diff_files(hi - 10, hi).num_rows
    count = panel.get_by_role("region", name="changed files", exact=True).locator(".dxe-grid-count")
    page.wait_for_function(
        "([el, n]) => el.textContent === `${n.toLocaleString('en-US')} files`",
        arg=[count.element_handle(), changed],
        timeout=60_000,
    )
    assert to.locator("option").count() == 1  # the other picker not reached yet
    explorer.screenshot(path=str(shots / "big-diff-picked.png"))
    panel = open_tab(page, explorer, "Log health")
    panel.locator(".dxe-chart[data-drawn]").first.wait_for(timeout=60_000)  # (a canvas past 600 rows)
    assert _grid_rows(panel, "log health") >= 10
    explorer.screenshot(path=str(shots / "big-log-health.png"))
    assert watch.outside == [], watch.outside
    assert watch.errors == [], watch.errors


def test_follow_shows_new_versions_as_they_land(page, lab, shots):
    """The Follow toggle in a real kernel: a commit written while the explorer follows appears
    (the slider's newest version, the commit's summary in the header, whose click travels
    there); the toggle off stops it; the kernel stays free meanwhile (the poll is on its thread)."""
    import deltaexplore as dx
    from deltaexplore.core import operations as ops

    watch = Watch(page)
    cells = [
        ("code", "import deltaexplore as dx, demo_tables\nsales = demo_tables.build_sales('sales_follow')"),
        ("code", "w = dx.explore(sales, follow_interval=0.2)\nw"),
    ]
    _open_and_run(page, lab, "explorer_follow.ipynb", cells)
    explorer = page.locator(".dxe-explorer").first
    explorer.wait_for(timeout=120_000)
    settled(page, explorer)
    toggle = explorer.get_by_role("button", name="◉ Follow")
    assert toggle.get_attribute("aria-pressed") == "false"
    toggle.click()
    page.wait_for_function("() => document.querySelector('.dxe-follow')?.getAttribute('aria-pressed') === 'true'", timeout=30_000)
    explorer.locator(".dxe-follow-on").wait_for(timeout=30_000)  # the kernel's follower runs
    root = str(lab.root / "sales_follow")
    rows = dx.open_table(root).snapshot().to_arrow().slice(0, 3)
    ops.write_table(root, rows)  # another writer commits version 8
    commit = explorer.locator(".dxe-follow-commit").first
    commit.wait_for(timeout=60_000)
    text = commit.inner_text()
    assert text.startswith("v8 · WRITE") and "+3 rows" in text and "+1 files" in text, text
    page.wait_for_function("() => document.querySelector('.dxe-version-out')?.textContent.startsWith('8 of 8')", timeout=60_000)
    explorer.screenshot(path=str(shots / "follow.png"))
    # travel back, then the summary's click returns to the version it names
    slider = explorer.get_by_role("slider", name="version")
    slider.focus()
    slider.press("Home")
    page.wait_for_function("() => document.querySelector('.dxe-version-out')?.textContent.startsWith('0 of 8')", timeout=60_000)
    commit.click()
    page.wait_for_function("() => document.querySelector('.dxe-version-out')?.textContent.startsWith('8 of 8')", timeout=60_000)
    toggle.click()  # off
    page.wait_for_function(
        "() => document.querySelector('.dxe-follow')?.getAttribute('aria-pressed') === 'false'", timeout=30_000
    )
    # the kernel confirmed: no 'following', no 'stopping…'
    page.wait_for_function("() => !document.querySelector('.dxe-follow-on, .dxe-follow-pending')", timeout=30_000)
    settled(page, explorer)
    ops.write_table(root, rows)  # version 9: nobody follows
    page.wait_for_timeout(1500)  # several polls' worth at 0.2 s: none runs any more
    assert _version(explorer).startswith("8 of 8")
    assert watch.outside == [], watch.outside
    assert watch.errors == [], watch.errors


BIG_TABLE = HERE.parent.parent / "benchmarks" / "tables" / "f100k"


def _through_time(page, explorer, shots, name: str, *, click: bool) -> tuple[int, int]:
    """Open History, get the table through time (asked with the button for a big log), brush
    across it and compare: the Diff tab opens on the brushed range's first and last version."""
    panel = open_tab(page, explorer, "History")
    section = panel.locator(".dxe-section", has=page.get_by_role("heading", name="Through time"))
    if click:
        section.get_by_role("button", name="Replay every version").click()
    chart = section.locator(".dxe-chart")
    chart.locator("svg g.role-mark > [aria-roledescription]").first.wait_for(state="attached", timeout=600_000)
    metric = section.get_by_role("combobox", name="metric through time")
    assert "tombstones" in metric.inner_text()
    chart.scroll_into_view_if_needed()
    _drag(page, chart, 0.05, 0.95)
    button = section.get_by_role("button", name=re.compile(r"^Compare \d+ → \d+$"))
    button.wait_for(timeout=30_000)
    explorer.screenshot(path=str(shots / f"{name}-through-time.png"))
    lo, hi = (int(x) for x in re.match(r"Compare (\d+) → (\d+)", button.inner_text()).groups())  # type: ignore[union-attr]
    assert lo < hi
    button.click()
    settled(page, explorer)
    assert explorer.get_by_role("tab", name="Diff", exact=True).get_attribute("aria-selected") == "true"
    explorer.locator(".dxe-panel:not([hidden])").get_by_text(f"Version {lo} → {hi}").wait_for(timeout=120_000)
    explorer.screenshot(path=str(shots / f"{name}-through-time-diff.png"))
    return lo, hi


def test_the_table_through_time_brushes_into_the_diff(page, lab, shots):
    """History's table through time (`inspect.timeline` drawn with a version brush) on the demo
    table (drawn at once): a brush across it offers its first and last version, and Compare
    opens the Diff on them."""
    page.set_viewport_size({"width": 1500, "height": 1650})
    cells = [
        (
            "code",
            "import deltaexplore as dx, demo_tables\nsales = demo_tables.build_sales('sales_through_time')\ndx.explore(sales)",
        )
    ]
    _open_and_run(page, lab, "explorer_through_time.ipynb", cells)
    explorer = page.locator(".dxe-explorer").first
    explorer.wait_for(timeout=120_000)
    settled(page, explorer)
    lo, hi = _through_time(page, explorer, shots, "small", click=False)
    assert 0 <= lo < hi <= 7


def test_the_table_through_time_of_a_big_log_is_drawn_on_a_click(page, lab, shots):
    """The same on a 100k-file table of 200 commits (155 MB of log: replayed on a click)."""
    page.set_viewport_size({"width": 1500, "height": 1650})
    if not (BIG_TABLE / "_delta_log").is_dir():
        pytest.skip(f"no big table: python benchmarks/gen_many_files.py writes {BIG_TABLE.name}")
    cells = [("code", f"import deltaexplore as dx\ndx.explore({str(BIG_TABLE)!r})")]
    _open_and_run(page, lab, "explorer_through_time_big.ipynb", cells)
    explorer = page.locator(".dxe-explorer").first
    explorer.wait_for(timeout=300_000)
    settled(page, explorer)
    _through_time(page, explorer, shots, "large", click=True)
