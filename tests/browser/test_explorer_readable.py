"""The explorer readable at real sizes and widths (issue 21), in a real JupyterLab and chromium.

A generated table the size of a real one (`big_table.build_big`: 365 date partitions, billions
of rows, TiB of bytes, a year of commits and five within one second), the tutorial's sales table
and a table partitioned by two columns are explored in one notebook; at notebook widths of 1320,
870 and 700 px, light and dark, every tab of each is checked:

- no number is cut: no text holding a digit ends in an ellipsis or runs past a box that clips it
  (every grid cell, card, key/value, chart label; a shortened path says so by its title);
- the partitions grid shows each partition value in full, in a column named after its partition
  column;
- no two labels of one chart (axis labels and titles, legends, titles) overlap, and no legend
  lies over the plot;
- no grid scrolls sideways with its default columns;
- card text that is cut can be expanded.

Screenshots of every tab at every width and theme go to $DELTAEXPLORE_SCREENSHOTS (default
tests/browser/screenshots/, not committed): `readable-<table>-<width>-<theme>-<tab>.png`.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

import pytest

import deltaexplore as dx
from deltaexplore.inspect.formatting import format_value, metric_unit

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "notebooks"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from lab_helpers import Watch, docs_shot, notebook_json, settled, wait_kernel_idle

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("browser")]

HERE = Path(__file__).resolve().parent
TABS = ["Overview", "History", "Files", "Layout", "Deletion vectors", "Diff", "Log health", "Maintenance"]
WIDTHS = (1320, 870, 700)

#: every text node holding a digit whose box runs past a box that clips it, or that ends in an
#: ellipsis (a shortened path is not a number: it carries its whole text in a title)
CUT_NUMBERS = """
root => {
    const out = [];
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    const clipping = el => { const s = getComputedStyle(el); return s.overflowX !== 'visible' || s.textOverflow === 'ellipsis'; };
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
        const text = n.textContent.trim();
        if (!/\\d/.test(text)) continue;
        const el = n.parentElement;
        if (!el || el.closest('[hidden], .dxe-offscreen, .ag-hidden, details:not([open]) > :not(summary)')) continue;
        if (el.closest('svg')) continue;  // chart text: checked with the chart's labels
        const range = document.createRange();
        range.selectNodeContents(n);
        const box = range.getBoundingClientRect();
        if (!box.width || !box.height) continue;
        // a path or location is not a number: shortened (or cut at its start in the header), it
        // keeps its whole text in a title and a copy button
        const path = el.closest('.dxe-path, .dxe-uri');
        if (path && path.title) continue;
        if (/…$/.test(text)) { out.push(`ends in an ellipsis: "${text}"`); continue; }
        // a grid's vertical scrollbar strip covers the end of its rows (also when it is invisible)
        const strip = el.closest('.ag-root-wrapper')?.querySelector('.ag-body-vertical-scroll:not(.ag-hidden)');
        const s = strip && strip.getBoundingClientRect();
        if (s && s.width > 0 && box.right > s.left + 1 && box.left < s.right && box.top < s.bottom && box.bottom > s.top) {
            out.push(`under the scrollbar: "${text}"`);
            continue;
        }
        for (let a = el; a && a !== root.parentElement; a = a.parentElement) {
            if (!clipping(a)) continue;
            const clip = a.getBoundingClientRect();
            // rows scrolled out of a grid's view are clipped vertically: only what is in view counts
            if (box.bottom <= clip.top || box.top >= clip.bottom) break;
            if (box.right > clip.right + 1 || box.left < clip.left - 1) {
                out.push(`cut: "${text}" (${Math.round(box.left)}..${Math.round(box.right)} in ${a.className || a.tagName} ${Math.round(clip.left)}..${Math.round(clip.right)})`);
                break;
            }
        }
    }
    return out;
}
"""

#: labels of a chart cut short, pairs of visible text boxes of one chart that overlap, one axis
#: labelling two ticks alike, and legend labels over the plot
CHART_OVERLAPS = """
root => {
    const out = [];
    for (const svg of root.querySelectorAll('.dxe-chart svg')) {
        const label = svg.closest('.dxe-chart').getAttribute('aria-label');
        const visible = t => {
            for (let e = t; e && e !== svg; e = e.parentElement) {
                const s = getComputedStyle(e);
                if (s.display === 'none' || s.visibility === 'hidden' || Number(s.opacity) === 0) return false;
                if (e.getAttribute && (e.getAttribute('opacity') === '0' || e.getAttribute('fill-opacity') === '0')) return false;
            }
            return t.textContent.trim() !== '';
        };
        const texts = [...svg.querySelectorAll('text')].filter(visible).map(t => ({ t: t.textContent, r: t.getBoundingClientRect(), legend: !!t.closest('.role-legend') }));
        // a label Vega shortened to its label limit ("2,125,406,…", "region=em…")
        for (const x of texts) if (/…$/.test(x.t.trim())) out.push(`${label}: label cut "${x.t}"`);
        for (let i = 0; i < texts.length; i++) {
            for (let j = i + 1; j < texts.length; j++) {
                const a = texts[i].r, b = texts[j].r;
                // side by side closer than 2 px reads as one label ("100,0001,000,000")
                const w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
                const h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
                if (w > -2 && h > 1) out.push(`${label}: "${texts[i].t}" over "${texts[j].t}"`);
            }
        }
        // one axis labelling two ticks alike ("10:33" seven times) says nothing
        for (const axis of svg.querySelectorAll('g.role-axis')) {
            const labels = [...axis.querySelectorAll('g.role-axis-label text')].filter(visible).map(t => t.textContent);
            const twice = labels.filter((t, i) => labels.indexOf(t) !== i);
            if (twice.length) out.push(`${label}: axis labels repeated: ${[...new Set(twice)].join(', ')}`);
        }
        const plot = svg.querySelector('g.role-frame > g > path.background, g.mark-group.role-scope > g > path.background');
        if (plot) {
            const p = plot.getBoundingClientRect();
            for (const x of texts.filter(x => x.legend)) {
                const w = Math.min(x.r.right, p.right) - Math.max(x.r.left, p.left);
                const h = Math.min(x.r.bottom, p.bottom) - Math.max(x.r.top, p.top);
                if (w > 1 && h > 1) out.push(`${label}: legend "${x.t}" over the plot`);
            }
        }
    }
    return out;
}
"""

#: SVG definitions (gradients, clip paths) of the page's charts whose id another one has too: a
#: chart drawing `url(#gradient_0)` then paints another chart's definition (or none, hidden)
SHARED_DEFS = """
() => {
    const ids = [...document.querySelectorAll('.dxe-chart svg defs [id]')].map(e => e.id);
    return [...new Set(ids.filter((id, i) => ids.indexOf(id) !== i))];
}
"""

#: grids whose default columns need a sideways scroll
SIDEWAYS = """
root => [...root.querySelectorAll('.dxe-grid-wrap')].filter(w => w.querySelector('.ag-root-wrapper') && w.offsetParent).map(w => {
    const grid = w.querySelector('.ag-root-wrapper').getBoundingClientRect();
    const right = Math.max(...[...w.querySelectorAll('.ag-header-cell')].map(c => c.getBoundingClientRect().right));
    const wide = [...w.querySelectorAll('.ag-body-horizontal-scroll-viewport, .ag-center-cols-viewport')]
        .filter(v => v.scrollWidth > v.clientWidth + 1).map(v => `${v.scrollWidth} px to scroll in ${v.clientWidth} px`);
    return wide.length || right > grid.right + 1 ? `${w.getAttribute('aria-label')}: ${wide.join(', ')} (last header to ${Math.round(right)} of ${Math.round(grid.right)})` : null;
}).filter(x => x)
"""

#: card text cut (clamped) without a way to open it
CLOSED_CARDS = """
root => [...root.querySelectorAll('.dxe-card')].filter(c => c.offsetParent).flatMap(c =>
    [...c.querySelectorAll('.dxe-card-value, .dxe-card-sub')].filter(e => (e.scrollHeight > e.clientHeight + 1 || e.scrollWidth > e.clientWidth + 1)
        && !e.closest('[aria-expanded]')).map(e => `${c.getAttribute('aria-label')}: "${e.textContent.slice(0, 60)}"`))
"""


@pytest.fixture(scope="module")
def shots() -> Path:
    out = Path(os.environ.get("DELTAEXPLORE_SCREENSHOTS") or HERE / "screenshots")
    out.mkdir(parents=True, exist_ok=True)
    return out


@pytest.fixture(scope="module")
def page(lab, browser):
    """One page for the module (on the session's browser: one Playwright per process): the
    notebook with the three explorers, run once."""
    context = browser.new_context(viewport={"width": 1400, "height": 2400})
    pg = context.new_page()
    pg.watch = Watch(pg)  # type: ignore[attr-defined]
    shutil.copy(HERE / "big_table.py", lab.root / "big_table.py")
    name = "readable.ipynb"
    cells = [
        "import deltaexplore as dx, demo_tables, big_table\n"
        "big = big_table.build_big('events')\nsales = demo_tables.build_sales('sales_readable')\n"
        "regions = big_table.build_regions('regions')",
        "dx.explore(big)",
        "dx.explore(sales)",
        "dx.explore(regions)",
    ]
    (lab.root / name).write_text(notebook_json(cells))
    pg.goto(lab.url(f"/lab/workspaces/readable/tree/{name}?reset"))
    pg.locator(".jp-Notebook").wait_for(timeout=60_000)
    wait_kernel_idle(pg)
    pg.evaluate("window.jupyterapp.commands.execute('application:toggle-left-area')")
    pg.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
    pg.locator(".dxe-explorer").nth(2).wait_for(timeout=180_000)
    for i in range(3):
        settled(pg, pg.locator(".dxe-explorer").nth(i))
    yield pg
    context.close()


def _notebook_width(page, width: int) -> None:
    """The notebook panel `width` px wide (the viewport sized around it)."""
    for _ in range(3):
        now = page.evaluate("() => document.querySelector('.jp-NotebookPanel').getBoundingClientRect().width")
        viewport = page.viewport_size["width"]
        if abs(now - width) <= 1:
            return
        page.set_viewport_size({"width": int(viewport + width - now), "height": page.viewport_size["height"]})
        page.wait_for_timeout(400)
    raise AssertionError(f"the notebook is {now} px wide, not {width}")


def _theme(page, dark: bool) -> None:
    theme = "JupyterLab Dark" if dark else "JupyterLab Light"
    page.evaluate(f"window.jupyterapp.commands.execute('apputils:change-theme', {{theme: '{theme}'}})")
    page.wait_for_function(f"() => document.body.dataset.jpThemeLight === '{'false' if dark else 'true'}'", timeout=30_000)
    page.wait_for_timeout(500)


def _tab(page, explorer, name: str):
    explorer.get_by_role("tab", name=name, exact=True).click()
    settled(page, explorer)
    panel = explorer.locator(".dxe-panel:not([hidden])")
    if name == "Diff":
        panel.locator(".dxe-diff-result:not([hidden]) .dxe-card").first.wait_for(timeout=60_000)
    if name == "Maintenance":
        panel.get_by_role("button", name="Preview OPTIMIZE (compact)").click()
        panel.get_by_text("files to rewrite").wait_for(timeout=60_000)
    for chart in panel.locator(".dxe-chart").all():
        if chart.is_visible():
            # drawn: in SVG (its text checked below), or on a canvas (a spec of more than 600
            # rows, chart.ts: the big table's log sizes, a point per version and series)
            chart.and_(panel.locator(".dxe-chart[data-drawn]")).wait_for(state="attached", timeout=60_000)
            chart.locator("svg g.role-mark, canvas").first.wait_for(state="attached", timeout=60_000)
    for grid in panel.locator(".dxe-grid-wrap").all():
        if grid.is_visible() and not grid.get_by_text(re.compile(r"^0 ")).count():
            grid.locator(".ag-row, .ag-overlay-no-rows-center").first.wait_for(state="attached", timeout=60_000)
    settled(page, explorer)
    return panel


def _problems(explorer, panel) -> dict[str, list[str]]:
    return {
        "numbers cut": explorer.evaluate(CUT_NUMBERS),
        "chart labels overlapping": panel.evaluate(CHART_OVERLAPS),
        "grids scrolling sideways": panel.evaluate(SIDEWAYS),
        "card text cut for good": panel.evaluate(CLOSED_CARDS),
        "chart definitions shared between charts": explorer.page.evaluate(SHARED_DEFS),
    }


def _survey(page, explorer, table: str, shots: Path, dark_widths: tuple[int, ...] = WIDTHS) -> dict[str, list[str]]:
    """Every tab of `explorer` at every width, light, and at `dark_widths` dark: the problems
    found, by kind."""
    found: dict[str, list[str]] = {}
    for dark in (False, True):
        _theme(page, dark)
        for width in dark_widths if dark else WIDTHS:
            _notebook_width(page, width)
            for name in TABS:
                panel = _tab(page, explorer, name)
                where = f"{table} {width} px {'dark' if dark else 'light'} {name}"
                for kind, items in _problems(explorer, panel).items():
                    found.setdefault(kind, []).extend(f"{where}: {x}" for x in items)
                slug = name.lower().replace(" ", "-")
                explorer.screenshot(path=str(shots / f"readable-{table}-{width}-{'dark' if dark else 'light'}-{slug}.png"))
    _theme(page, False)
    return found


def _cells(grid, column: str) -> list[dict]:
    """The drawn cells of one column of a grid: text, title, and whether the text fits its cell."""
    return grid.evaluate(
        """(g, col) => [...g.querySelectorAll(`.ag-row .ag-cell[col-id="${col}"]`)].map(c => {
            const inner = c.querySelector('.ag-cell-value') || c;
            const title = c.querySelector('[title]');
            return { text: c.textContent.trim(), title: title ? title.getAttribute('title') : null,
                     fits: inner.scrollWidth <= inner.clientWidth + 1 && c.scrollWidth <= c.clientWidth + 1 };
        })""",
        column,
    )


def _headers(grid) -> list[str]:
    return grid.evaluate(
        "g => [...g.querySelectorAll('.ag-header-cell')].filter(c => c.offsetWidth).map(c => c.getAttribute('col-id'))"
    )


def test_the_big_table_is_readable_at_every_width(page, shots):
    """365 date partitions, 1,086 files of GiBs, 2.1 billion rows, a year of commits and five
    within a second: every tab at 1320, 870 and 700 px, light and dark, with no number cut, no
    chart label over another, no grid scrolling sideways, no card text cut for good."""
    explorer = page.locator(".dxe-explorer").nth(0)
    found = _survey(page, explorer, "big", shots)
    assert {k: v for k, v in found.items() if v} == {}


def test_partition_values_counts_and_columns_at_700_px(page, shots, tmp_path):
    """At the narrowest width: the partitions grid shows each date in full under a "date" header;
    less important columns wait in the column chooser, which shows them again; asked for every
    column, the grid gives the counts their compact form ("43.8 M", the exact count in the
    title and in the export)."""
    explorer = page.locator(".dxe-explorer").nth(0)
    _notebook_width(page, 700)
    panel = _tab(page, explorer, "Files")
    parts = panel.get_by_role("region", name="partitions", exact=True)
    assert _headers(parts)[0] == "partition:date"
    assert parts.locator(".ag-header-cell").first.inner_text().strip() == "date"
    dates = _cells(parts, "partition:date")
    assert len(dates) >= 5 and all(re.fullmatch(r"20\d\d-\d\d-\d\d", c["text"]) and c["fits"] for c in dates), dates
    chooser = parts.locator("details.dxe-chooser")
    hidden = re.search(r"\((\d+) hidden\)", chooser.locator("summary").inner_text())
    assert hidden and int(hidden.group(1)) >= 1 and "skew" not in _headers(parts)
    chooser.locator("summary").click()
    unchecked = chooser.locator("input[type=checkbox]:not(:checked)")
    for _ in range(30):  # a column shown hides another one (not asked for) while the rest fit
        if not unchecked.count():
            break
        unchecked.first.check()
    assert chooser.locator("summary").inner_text().strip() == "Columns"  # none hidden now
    settled(page, explorer)
    explorer.screenshot(path=str(shots / "readable-big-700-light-partitions-every-column.png"))
    rows = _cells(parts, "rows")
    assert rows and all(re.fullmatch(r"\d+(\.\d+)? [KMB]", c["text"]) for c in rows), rows  # 43.8 M
    for c in rows:
        exact = int(c["title"].split(" ")[0].replace(",", ""))
        number, unit = c["text"].split()
        assert abs(float(number) * 1000 ** ("KMB".index(unit) + 1) - exact) <= 0.005 * exact, c
    # the export holds the exact values, and the partition values in their own column
    with page.expect_download() as dl:
        parts.get_by_role("button", name="CSV").click()
    dl.value.save_as(tmp_path / "partitions.csv")
    header, first = (tmp_path / "partitions.csv").read_text().splitlines()[:2]
    assert '"partition:date"' in header and re.search(r",\d{7,},", first)
    # "Fit to width" forgets the choice: the grid fits again
    chooser.get_by_role("button", name="Fit to width").click()
    chooser.locator("summary").click()
    settled(page, explorer)
    assert re.search(r"\(\d+ hidden\)", chooser.locator("summary").inner_text())
    assert parts.locator("xpath=..").evaluate(SIDEWAYS) == []


def test_cut_card_lines_open_on_a_click(page):
    """A card's line longer than three lines is cut, and opens (and closes) on a click."""
    explorer = page.locator(".dxe-explorer").nth(0)
    _notebook_width(page, 700)
    panel = _tab(page, explorer, "Diff")
    line = panel.get_by_role("group", name="Change data feed").locator(".dxe-card-sub")
    assert line.get_attribute("aria-expanded") is None  # it fits: nothing to open
    line.evaluate("e => { e.textContent = Array(6).fill(e.textContent).join(' '); }")  # advice six times as long
    page.wait_for_function("e => e.getAttribute('aria-expanded') === 'false'", arg=line.element_handle(), timeout=10_000)
    assert line.evaluate("e => e.scrollHeight > e.clientHeight + 1")
    line.click()
    assert line.get_attribute("aria-expanded") == "true"
    assert line.evaluate("e => e.scrollHeight <= e.clientHeight + 1")
    line.press("Enter")
    assert line.get_attribute("aria-expanded") == "false"


def test_the_tutorial_table_is_readable_at_every_width(page, shots):
    """The tour's sales table passes the same checks (dark at one width: test_explorer_browser
    goes through its tabs dark at 1320 px)."""
    explorer = page.locator(".dxe-explorer").nth(1)
    explorer.scroll_into_view_if_needed()
    found = _survey(page, explorer, "sales", shots, dark_widths=(870,))
    assert {k: v for k, v in found.items() if v} == {}


def test_two_partition_columns_get_a_column_each(page, shots):
    """A table partitioned by region and day: both grids show a region and a day column; the
    skew chart labels its bars "emea / 2025-11-20" under "region / day"; one file per value
    range reads "1 file"."""
    explorer = page.locator(".dxe-explorer").nth(2)
    explorer.scroll_into_view_if_needed()
    _notebook_width(page, 870)
    panel = _tab(page, explorer, "Files")
    for label in ("partitions", "files"):
        grid = panel.get_by_role("region", name=label, exact=True)
        assert {"partition:region", "partition:day"} <= set(_headers(grid)), _headers(grid)
        assert all(c["text"] in ("emea", "amer", "apac") and c["fits"] for c in _cells(grid, "partition:region"))
    axis = (
        panel.locator(".dxe-chart")
        .nth(1)
        .evaluate("c => [...c.querySelectorAll('g.role-axis-title text')].map(t => t.textContent)")
    )
    assert "region / day" in axis
    explorer.screenshot(path=str(shots / "readable-regions-870-light-files.png"))
    panel = _tab(page, explorer, "Layout")
    worst = panel.get_by_role("group", name="Worst point query")
    assert worst.locator(".dxe-card-value").inner_text() == "1 file"
    for kind, items in _problems(explorer, panel).items():
        assert items == [], kind


def test_paths_keep_what_tells_files_apart_whole_on_hover_and_copy(page, lab):
    """The Files grid at 870 px: each path reads as its file's id (no two rows alike), its title
    is the whole path as the inspection gives it, and its copy button copies the whole path."""
    explorer = page.locator(".dxe-explorer").nth(0)
    explorer.scroll_into_view_if_needed()
    _notebook_width(page, 870)
    panel = _tab(page, explorer, "Files")
    grid = panel.get_by_role("region", name="files", exact=True)
    paths = set(dx.open_table(str(lab.root / "events")).inspect.files().column("path").to_pylist())
    cells = _cells(grid, "path")
    assert len(cells) >= 10 and len({c["text"] for c in cells}) == len(cells), cells
    for c in cells:
        assert c["title"] in paths and c["fits"], c
        file_id = re.search(r"part-\d{5}-[0-9a-f]{8}", c["title"])
        assert file_id and file_id.group(0) in c["text"] and len(c["text"]) < len(c["title"]), c
    page.evaluate("() => { window.copied = []; navigator.clipboard.writeText = async t => { window.copied.push(t); }; }")
    cell = grid.locator('.ag-row .ag-cell[col-id="path"]').first
    cell.hover()
    cell.get_by_role("button", name="copy path").click()
    assert page.evaluate("() => window.copied") == [cell.locator(".dxe-path").get_attribute("title")]


def test_the_other_partitions_bar_tells_its_totals_on_hover(page, lab):
    """The grey bar of the partitions beyond the 15 largest is drawn at their mean; hovered, it
    gives their count and their exact totals (files, small files) as the inspection counts them."""
    explorer = page.locator(".dxe-explorer").nth(0)
    explorer.scroll_into_view_if_needed()
    _notebook_width(page, 870)
    panel = _tab(page, explorer, "Files")
    chart = panel.locator(".dxe-chart").nth(1)
    parts = dx.open_table(str(lab.root / "events")).inspect.partitions().sort_by([("bytes", "descending")]).to_pylist()
    rest = parts[15:]
    assert len(rest) >= 300
    bar = chart.locator("svg g.role-mark > [aria-roledescription]").last
    box = bar.bounding_box()
    assert box and box["width"] >= 3  # drawn, not a sliver
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    tip = page.locator(".dxe-tooltip.dxe-tooltip-visible")
    tip.wait_for(timeout=10_000)
    rows = dict(tuple(cell.strip() for cell in row.split("\t", 1)) for row in tip.inner_text().splitlines() if "\t" in row)
    assert rows["date"] == f"{len(rest):,} others (mean)", rows
    assert rows["partitions"] == f"{len(rest):,}"
    assert rows["files"] == f"{sum(p['files'] for p in rest):,}"
    assert rows["small files"] == f"{sum(p['small_files'] for p in rest):,}"
    page.mouse.move(0, 0)


def test_docs_images_of_the_big_table(page, shots):
    """The README's images (copied from the screenshots to docs/images): the big table's History,
    Files and, dark, Layout tabs in a notebook 1320 px wide."""
    explorer = page.locator(".dxe-explorer").nth(0)
    explorer.scroll_into_view_if_needed()
    _notebook_width(page, 1320)
    for name, file in (("History", "history"), ("Files", "files")):
        _tab(page, explorer, name)
        docs_shot(explorer, shots / f"docs-explorer-{file}.png")
    _theme(page, True)
    _tab(page, explorer, "Layout")
    docs_shot(explorer, shots / "docs-explorer-layout-dark.png")
    _theme(page, False)


def test_no_console_error_and_nothing_left_the_machine(page):
    assert page.watch.outside == []  # type: ignore[attr-defined]
    assert page.watch.errors == []  # type: ignore[attr-defined]


def test_the_saved_summary_of_the_big_table(page, lab, shots):
    """Saved, its kernel shut down and reopened: the summary the notebook keeps shows the big
    table's numbers in full (and becomes the README's image). Last: it leaves the notebook."""
    if not (HERE.parents[1] / "extension" / "build" / "deltaexplore-jupyterlab" / "package.json").exists():
        pytest.fail("the JupyterLab extension is not built: run `make setup-ui`")
    page.evaluate("window.jupyterapp.commands.execute('docmanager:save')")
    page.wait_for_function("() => !window.jupyterapp.shell.currentWidget.context.model.dirty", timeout=30_000)
    page.evaluate("window.jupyterapp.commands.execute('kernelmenu:shutdown')")
    page.wait_for_function(
        "() => { const w = window.jupyterapp.shell.currentWidget; return !w.sessionContext.session || !w.sessionContext.session.kernel; }",
        timeout=60_000,
    )
    page.evaluate("window.jupyterapp.commands.execute('application:close-all')")
    page.wait_for_timeout(1000)
    page.goto(lab.url("/lab/workspaces/readable-saved/tree/readable.ipynb?reset"))
    static = page.locator(".dx-explorer-static").first
    static.wait_for(timeout=60_000)
    page.wait_for_timeout(3000)  # time for the widget manager to give up on the model
    text = static.inner_text()
    overview = {(r["section"], r["metric"]): r for r in dx.open_table(str(lab.root / "events")).inspect.overview().to_pylist()}
    facts = [
        format_value(metric_unit(overview[k]["unit"]), overview[k]["number"])
        for k in (("size", "files"), ("size", "bytes"), ("size", "live_rows"), ("size", "deleted_rows"), ("layout", "partitions"))
    ]
    assert len(facts[2]) >= len("1,000,000,000") and facts[1].endswith("TiB")  # billions of rows, TiB
    for fact in (*facts, "date", "version 372"):
        assert fact in text, (fact, text)
    assert static.evaluate(CUT_NUMBERS) == []
    static.evaluate("el => el.querySelectorAll('.dx-summary-uri').forEach(n => { n.textContent = '/data/lake/events'; })")
    static.screenshot(path=str(shots / "docs-explorer-saved-summary.png"))
