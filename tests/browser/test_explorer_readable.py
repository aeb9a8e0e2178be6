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

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "notebooks"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from conftest import CHROMIUM_ARGS
from lab_helpers import block_outside, notebook_json, wait_kernel_idle

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
        const path = el.closest('.dxe-path');
        if (/…$/.test(text) && !(path && path.title)) { out.push(`ends in an ellipsis: "${text}"`); continue; }
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

#: pairs of visible text boxes of one chart that overlap, and legend labels over the plot
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
        for (let i = 0; i < texts.length; i++) {
            for (let j = i + 1; j < texts.length; j++) {
                const a = texts[i].r, b = texts[j].r;
                // side by side closer than 2 px reads as one label ("100,0001,000,000")
                const w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
                const h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
                if (w > -2 && h > 1) out.push(`${label}: "${texts[i].t}" over "${texts[j].t}"`);
            }
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
def page(lab, chromium_path):
    """One browser and page for the module: the notebook with the three explorers, run once."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS, headless=True)
        context = browser.new_context(viewport={"width": 1400, "height": 2400})
        pg = context.new_page()
        pg.errors = []  # type: ignore[attr-defined]
        pg.on("console", lambda m: pg.errors.append(m.text) if m.type == "error" else None)  # type: ignore[attr-defined]
        pg.on("pageerror", lambda e: pg.errors.append(f"page error: {e}"))  # type: ignore[attr-defined]
        pg.outside = block_outside(pg)  # type: ignore[attr-defined]
        shutil.copy(HERE / "big_table.py", lab.root / "big_table.py")
        name = "readable.ipynb"
        cells = [
            "import deltaexplore as dx, demo_tables, big_table\n"
            "big = big_table.build_big('big')\nsales = demo_tables.build_sales('sales_readable')\n"
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
            _settled(pg, pg.locator(".dxe-explorer").nth(i))
        yield pg
        context.close()
        browser.close()


def _settled(page, explorer) -> None:
    page.wait_for_timeout(150)
    page.wait_for_function("() => !document.querySelector('.dxe-explorer.dxe-busy')", timeout=120_000)
    explorer.evaluate("el => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
    page.wait_for_timeout(400)


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
    _settled(page, explorer)
    panel = explorer.locator(".dxe-panel:not([hidden])")
    if name == "Diff":
        panel.locator(".dxe-diff-result:not([hidden]) .dxe-card").first.wait_for(timeout=60_000)
    if name == "Maintenance":
        panel.get_by_role("button", name="Preview OPTIMIZE (compact)").click()
        panel.get_by_text("files to rewrite").wait_for(timeout=60_000)
    for chart in panel.locator(".dxe-chart").all():
        if chart.is_visible():
            chart.locator("svg g.role-mark").first.wait_for(state="attached", timeout=60_000)
    for grid in panel.locator(".dxe-grid-wrap").all():
        if grid.is_visible() and not grid.get_by_text(re.compile(r"^0 ")).count():
            grid.locator(".ag-row, .ag-overlay-no-rows-center").first.wait_for(state="attached", timeout=60_000)
    _settled(page, explorer)
    return panel


def _problems(explorer, panel) -> dict[str, list[str]]:
    return {
        "numbers cut": explorer.evaluate(CUT_NUMBERS),
        "chart labels overlapping": panel.evaluate(CHART_OVERLAPS),
        "grids scrolling sideways": panel.evaluate(SIDEWAYS),
        "card text cut for good": panel.evaluate(CLOSED_CARDS),
        "chart definitions shared between charts": explorer.page.evaluate(SHARED_DEFS),
    }


def _survey(page, explorer, table: str, shots: Path) -> dict[str, list[str]]:
    """Every tab of `explorer` at every width, light and dark: the problems found, by kind."""
    found: dict[str, list[str]] = {}
    for dark in (False, True):
        _theme(page, dark)
        for width in WIDTHS:
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


def test_the_big_table_is_readable_at_every_width(page, shots):
    explorer = page.locator(".dxe-explorer").nth(0)
    found = _survey(page, explorer, "big", shots)

    assert {k: v for k, v in found.items() if v} == {}
