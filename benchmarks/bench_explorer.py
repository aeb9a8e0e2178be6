"""The explorer on a 1M-file table, timed in the browser against one warm open. Reported, never asserted.

    .venv/bin/python benchmarks/bench_explorer.py [TABLE] [--runs N]   # writes benchmarks/results/explorer.md

TABLE defaults to benchmarks/tables/f1m, generated when missing with
`python ../shared/tools/gen_big_log.py benchmarks/tables/f1m --files 1000000 --commits 100
--post-commits 100` (1,000,200 active files, checkpoint at 100, 100 JSON commits after it).

Each run starts JupyterLab and Debian chromium as the browser tests do (fresh profile, every
request that is not to 127.0.0.1 aborted) and a fresh kernel, which first opens the table once
(imports, OS cache) and then times `dx.open_table(path).snapshot().add_actions()` three times:
the median is "one warm open", the unit of the targets. Then, in the browser (page clock,
`performance.now()`, waiting on animation frames for the DOM to show the result):

* first render: running the `dx.explore(path)` cell -> the overview drawn with the table's
  numbers (then: -> the row counts, read from every file's statistics, drawn); the benchmark
  then "reads" the overview for `READING_MS` (8 s) while the kernel finishes its background
  work (importing the chart layer, preparing the previous version);
* each tab's first switch: click -> its grids have rows, its charts marks, nothing is busy;
* one version back: ArrowLeft on the focused slider -> the overview of the previous version
  drawn (the previous version is prepared in the background once the first view is complete;
  `DELTAEXPLORE_PREFETCH=0` turns that off, `--no-prefetch` runs so);
* main-thread long tasks (`PerformanceObserver`, type longtask: tasks over 50 ms) while
  switching tabs (until `AFTER_MS` after the tab is shown), scrolling the file grid and
  dragging the slider; the longest is reported,
  and the long animation frames (what ran in them: scripts, style and layout) go to the JSON
  beside the report (over 50 ms for tab switches, 100 ms for the rest). `--shots DIR` saves a
  screenshot of each tab once shown.

`--early` (issue 23) measures instead what a user does at once: History, Files and Layout clicked
one after the other from the moment the overview appears (while the background preparation
runs), each timed from the click until the shown tab's visible text stopped changing for 1 s
(`_quiet`: nothing busy either; the end is its last change), with the longest main-thread task meanwhile; then one
slider step back from the overview, timed the same way (targets: a tab <= 0.5 s, no task over
200 ms, a step <= 10% of a warm open); written to `benchmarks/results/explorer-early.md`, with
the explorer's own measures (`dxe:*`: `data:<trait>` from the click until the tab's data came,
`grid:`, `grid-fit:`, `grid-refit:`, `chart-*:`) and the long animation frames in the JSON.

A chart counts as drawn with its marks in SVG or, for a spec of many rows, its canvas once Vega
ran (`DRAWN`).

Targets (issue 13): first render <= 1.2x an open; tab switches <= 0.5 s (layout and diff <= 1x
an open); one version back <= 1x an open; no long task over 200 ms in those interactions.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CHROMIUM = os.environ.get("DELTAEXPLORE_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
TOKEN = "deltaexplore-bench"
#: how long the benchmark "reads" the overview before switching tabs (the background work after
#: the first view: the chart layer's import, the previous version)
READING_MS = 8000
#: a tab switch's tasks are counted until this long after the tab is shown
AFTER_MS = 300
TABS = ["History", "Files", "Layout", "Deletion vectors", "Diff", "Log health", "Maintenance", "Overview"]

# a chart drawn: its marks in SVG, or its canvas once Vega ran (specs of many rows, chart.ts)
DRAWN = ".dxe-chart svg g.role-mark > [aria-roledescription], .dxe-chart[data-drawn=canvas]"
# what "drawn" means per tab (page-side check, run on animation frames)
READY = {
    "Overview": "p => p.querySelectorAll('.dxe-card').length >= 6",
    "History": "p => p.querySelector('.ag-row') && p.querySelector('" + DRAWN + "')",
    "Files": "p => p.querySelectorAll('"
    + DRAWN
    + "').length && [...p.querySelectorAll('.dxe-grid-count')].some(c => / files$/.test(c.textContent)) && p.querySelector('[aria-label=files] .ag-row')",
    "Layout": "p => p.querySelectorAll('" + DRAWN + "').length && p.querySelector('.ag-row')",
    "Deletion vectors": "p => p.querySelectorAll('.dxe-card').length >= 5",
    "Diff": "p => p.querySelector('.dxe-diff-result:not([hidden]) .dxe-card') && p.querySelector('[aria-label=changes] .ag-row')",
    "Log health": "p => p.querySelector('" + DRAWN + "') && p.querySelector('.ag-row')",
    "Maintenance": "p => p.querySelectorAll('.dxe-op-card').length >= 4",
}


def table_path(arg: str | None) -> Path:
    if arg:
        return Path(arg).resolve()
    local = HERE / "tables" / "f1m"
    if not (local / "_delta_log").exists():
        gen = ROOT.parent / "shared" / "tools" / "gen_big_log.py"
        subprocess.run(
            [sys.executable, str(gen), str(local), "--files", "1000000", "--commits", "100", "--post-commits", "100"], check=True
        )
    return local


class Lab:
    """JupyterLab on a scratch directory (as tests/browser/conftest.py starts it)."""

    def __init__(self, root: Path, env_extra: dict[str, str]) -> None:
        self.root = root
        home = Path(tempfile.mkdtemp(prefix="dx-bench-home-"))
        settings = home / "settings"
        (settings / "@jupyterlab" / "apputils-extension").mkdir(parents=True)
        (settings / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings").write_text(
            json.dumps({"fetchNews": "false", "checkForUpdates": False})
        )
        (settings / "@jupyterlab" / "notebook-extension").mkdir(parents=True)
        (settings / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings").write_text(
            json.dumps({"autoStartDefaultKernel": True})
        )
        env = {
            **os.environ,
            **env_extra,
            "HOME": str(home),
            "JUPYTER_CONFIG_DIR": str(home / "config"),
            "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
            "JUPYTERLAB_SETTINGS_DIR": str(settings),
            "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"),
        }
        built = ROOT / "extension" / "build"
        extra = [f"--LabApp.extra_labextensions_path={built}"] if (built / "deltaexplore-jupyterlab").exists() else []
        self.log = open(home / "lab.log", "w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--port=0", "--ip=127.0.0.1", f"--IdentityProvider.token={TOKEN}",
             f"--ServerApp.root_dir={root}", "--allow-root", "--LabApp.news_url=", "--LabApp.expose_app_in_browser=True", *extra],
            env=env, stdout=self.log, stderr=subprocess.STDOUT, cwd=root,
        )  # fmt: skip
        deadline = time.time() + 120
        while True:
            info = home / "runtime" / f"jpserver-{self.proc.pid}.json"
            try:
                self.port = int(json.loads(info.read_text())["port"])
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/api/status?token={TOKEN}", timeout=5)
                break
            except (OSError, ValueError, KeyError):
                if self.proc.poll() is not None or time.time() > deadline:
                    raise RuntimeError(f"JupyterLab did not start: {(home / 'lab.log').read_text()[-2000:]}") from None
                time.sleep(0.5)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}{'&' if '?' in path else '?'}token={TOKEN}"

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


def _wait(page, check: str, root: str = "document", timeout_ms: int = 600_000) -> float:
    """performance.now() at the first animation frame where `check(root)` holds."""
    return page.evaluate(
        """([check, root, timeout]) => new Promise((resolve, reject) => {
            const fn = eval(check); const start = performance.now();
            const tick = () => {
                const r = root === 'document' ? document : document.querySelector(root);
                let ok = false; try { ok = !!(r && fn(r)); } catch (e) { ok = false; }
                if (ok) resolve(performance.now());
                else if (performance.now() - start > timeout) reject(new Error('timed out: ' + check));
                else requestAnimationFrame(tick);
            };
            tick();
        })""",
        [check, root, timeout_ms],
    )


def _longest_task(page, start: float, end: float) -> float:
    return page.evaluate(
        "([a, b]) => Math.max(0, ...(window.__longtasks || []).filter(t => t[0] + t[1] >= a && t[0] <= b).map(t => t[1]))",
        [start, end],
    )


def _measures(page, start: float, end: float) -> list:
    """The explorer's own timed pieces of work (`performance.measure` "dxe:*") in a window, longest first."""
    return page.evaluate(
        "([a, b]) => performance.getEntriesByType('measure').filter(m => m.name.startsWith('dxe:') && m.startTime >= a && m.startTime <= b)"
        ".map(m => [m.name, Math.round(m.duration)]).sort((x, y) => y[1] - x[1]).slice(0, 6)",
        [start, end],
    )


def _frames(page, start: float, end: float, over: int = 100) -> list:
    """Long animation frames over `over` ms in a window: duration, rendering (style and layout) and
    the longest scripts in them (where they came from and what invoked them), for the JSON output."""
    return page.evaluate(
        """([a, b, over]) => (window.__loaf || []).filter(f => f.startTime + f.duration >= a && f.startTime <= b && f.duration > over).map(f => ({
            ms: Math.round(f.duration), blocking: Math.round(f.blockingDuration),
            render: f.renderStart ? Math.round(f.startTime + f.duration - f.renderStart) : 0,
            style_layout: f.styleAndLayoutStart ? Math.round(f.startTime + f.duration - f.styleAndLayoutStart) : 0,
            scripts: [...(f.scripts || [])].sort((x, y) => y.duration - x.duration).slice(0, 3).map(s => ({
                ms: Math.round(s.duration), layout: Math.round(s.forcedStyleAndLayoutDuration), invoker: s.invoker,
                fn: s.sourceFunctionName, src: (s.sourceURL || '').split('/').pop() + ':' + s.sourceCharPosition })) }))""",
        [start, end, over],
    )


def _quiet(page, timeout_ms: int = 600_000) -> float:
    """performance.now() of the last change of the shown tab's and the header's visible text
    once nothing changed for 1 s and nothing was busy (the explorer's busy mark, a loading note,
    a grid loading its rows, an overview card still counting)."""
    return page.evaluate(
        """(timeout) => new Promise((resolve, reject) => {
            const start = performance.now(); let last = start; let seen = null;
            const tick = () => {
                const x = document.querySelector('.dxe-explorer');
                const p = x && x.querySelector('.dxe-panel:not([hidden])');
                const head = x && x.querySelector('.dxe-commit-line');
                // the overview's cards say "counting…" while its counts run off the kernel's message thread
                const counting = !!p && [...p.querySelectorAll('.dxe-card')].some(c => /counting/.test(c.textContent));
                const busy = !x || x.classList.contains('dxe-busy') || !p || counting || !!p.querySelector('.dxe-note-loading, .ag-overlay-loading-wrapper, .ag-skeleton-container');
                const now = (p ? p.innerText : '') + '|' + (head ? head.innerText : '');
                if (now !== seen || busy) { seen = now; last = performance.now(); }
                if (performance.now() - last >= 1000) resolve(last);
                else if (performance.now() - start > timeout) reject(new Error('never quiet'));
                else setTimeout(tick, 20);
            };
            tick();
        })""",
        timeout_ms,
    )


def _early(page, out: dict) -> None:
    """`--early`: History, Files, Layout clicked from the moment the overview appears, then one
    slider step (module docstring)."""
    clicks = {}
    for name in ("History", "Files", "Layout"):
        start = page.evaluate(
            "name => { const b = [...document.querySelectorAll('.dxe-explorer [role=tab]')].find(t => t.textContent === name); const t = performance.now(); b.click(); return t; }",
            name,
        )
        shown = _wait(page, READY[name], root=".dxe-explorer .dxe-panel:not([hidden])")
        end = max(_quiet(page), shown)
        clicks[name] = {
            "shown_seconds": (shown - start) / 1000,
            "seconds": (end - start) / 1000,
            "longest_task_ms": _longest_task(page, start, end + AFTER_MS),  # (`_quiet` waited 1 s after `end`)
            "measures": _measures(page, start, end),
            "frames": _frames(page, start, end),
        }
    out["early_tabs"] = clicks
    page.evaluate(
        "() => [...document.querySelectorAll('.dxe-explorer [role=tab]')].find(t => t.textContent === 'Overview').click()"
    )
    _quiet(page)
    slider = page.locator(".dxe-explorer input[type=range]")
    slider.focus()
    start = page.evaluate("() => performance.now()")
    slider.press("ArrowLeft")
    end = _quiet(page)
    out["slider_step"] = {
        "seconds": (end - start) / 1000,
        "longest_task_ms": _longest_task(page, start, end),
        "measures": _measures(page, start, end),
        "frames": _frames(page, start, end),
    }


def _not_busy() -> str:
    return "d => !d.querySelector('.dxe-explorer.dxe-busy')"


def one_run(path: Path, *, prefetch: bool, early: bool = False, shots: Path | None = None) -> dict:
    from playwright.sync_api import sync_playwright

    root = Path(tempfile.mkdtemp(prefix="dx-bench-lab-"))
    code_open = (
        "import json, statistics, time, deltaexplore as dx\n"
        f"path = {str(path)!r}\n"
        "dx.open_table(path).snapshot().add_actions()  # warm-up: imports, OS cache\n"
        "opens = []\n"
        "for _ in range(3):\n"
        "    t0 = time.perf_counter(); dx.open_table(path).snapshot().add_actions(); opens.append(time.perf_counter() - t0)\n"
        "print('OPENS=' + json.dumps(opens))"
    )
    nb = {
        "cells": [
            {"cell_type": "code", "metadata": {}, "source": code_open, "outputs": [], "execution_count": None},
            {"cell_type": "code", "metadata": {}, "source": "dx.explore(path)", "outputs": [], "execution_count": None},
        ],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (root / "bench.ipynb").write_text(json.dumps(nb))
    lab = Lab(root, {} if prefetch else {"DELTAEXPLORE_PREFETCH": "0"})
    outside: list[str] = []
    out: dict = {}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path=CHROMIUM,
                args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"],
            )  # fmt: skip
            page = browser.new_context(viewport={"width": 1500, "height": 1100}).new_page()
            page.route(re.compile(r"^https?://(?!127\.0\.0\.1).*"), lambda r: (outside.append(r.request.url), r.abort()))
            page.add_init_script(
                "window.__longtasks = []; new PerformanceObserver(l => l.getEntries().forEach(e => window.__longtasks.push([e.startTime, e.duration]))).observe({type: 'longtask', buffered: true});"
                # long animation frames, with what ran in them (scripts by entry point, style and layout)
                "window.__loaf = []; try { new PerformanceObserver(l => l.getEntries().forEach(e => window.__loaf.push(e.toJSON()))).observe({type: 'long-animation-frame', buffered: true}); } catch (e) {}"
            )
            page.goto(lab.url("/lab/tree/bench.ipynb?reset"))
            page.wait_for_function(
                "() => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget; const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel; return !!k && k.status === 'idle' && w.sessionContext.isReady; }",
                timeout=120_000,
            )  # fmt: skip
            page.evaluate("window.jupyterapp.commands.execute('application:toggle-left-area')")
            page.evaluate("window.jupyterapp.commands.execute('notebook:run-cell-and-select-next')")  # the first cell: opens
            printed = page.locator(".jp-OutputArea-output pre").filter(has_text="OPENS=")
            printed.wait_for(timeout=900_000)
            opens = json.loads(printed.inner_text().split("OPENS=")[1])
            out["opens"] = opens
            page.wait_for_function("() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.status === 'idle'")
            # first render: run the explorer cell (the notebook moved to it after the first one)
            t0 = page.evaluate(
                "() => { const t = performance.now(); window.jupyterapp.commands.execute('notebook:run-cell'); return t; }"
            )
            # the overview drawn: the table, its version and commit, the cards (numbers may still be coming)
            t1 = _wait(
                page,
                "d => d.querySelectorAll('.dxe-explorer .dxe-card').length >= 6 && d.querySelector('.dxe-explorer .dxe-kv dd') && d.querySelector('.dxe-explorer .dxe-commit-line .dxe-badge')",
            )
            tf = _wait(
                page,
                "d => { const c = d.querySelector('.dxe-explorer .dxe-card[aria-label=Files] .dxe-card-value'); return c && /\\d/.test(c.textContent); }",
            )
            t2 = _wait(
                page,
                "d => { const c = d.querySelector('.dxe-explorer .dxe-card[aria-label=Rows] .dxe-card-value'); return c && !/counting/.test(c.textContent); }",
            )
            if early:
                out["first_render"] = (t1 - t0) / 1000
                _early(page, out)
                browser.close()
                return out
            out["first_render"] = (t1 - t0) / 1000
            out["file_counts"] = (tf - t0) / 1000
            out["row_counts"] = (t2 - t0) / 1000
            out["first_render_work"] = _measures(page, t0, t2)
            _wait(page, _not_busy())
            # a user reads the overview: meanwhile the kernel imports the chart layer and prepares the previous version
            t3 = page.evaluate("() => performance.now()")
            page.wait_for_timeout(READING_MS)
            # what the page prepared in idle time meanwhile (chart and grid warm-ups)
            out["idle_work"] = _measures(page, t3, page.evaluate("() => performance.now()"))
            tabs: dict[str, dict] = {}
            for name in TABS:
                page.wait_for_function("() => !document.querySelector('.dxe-explorer.dxe-busy')", timeout=600_000)
                start = page.evaluate(
                    "name => { const b = [...document.querySelectorAll('.dxe-explorer [role=tab]')].find(t => t.textContent === name); const t = performance.now(); b.click(); return t; }",
                    name,
                )
                end = _wait(
                    page,
                    f"d => {{ const p = d.querySelector('.dxe-explorer .dxe-panel:not([hidden])'); return !d.querySelector('.dxe-explorer.dxe-busy') && ({READY[name]})(p); }}",
                )
                # the tasks right after the tab is shown count too (the page around the explorer
                # re-measuring it, app.ts `holdHeight`)
                page.wait_for_timeout(AFTER_MS)
                after = end + AFTER_MS
                tabs[name] = {
                    "seconds": (end - start) / 1000,
                    "longest_task_ms": _longest_task(page, start, after),
                    "work": _measures(page, start, after),
                    "frames": _frames(page, start, after, over=50),
                }
                if shots is not None:  # after the timed window: what the tab showed
                    shots.mkdir(parents=True, exist_ok=True)
                    stem = name.lower().replace(" ", "-")
                    page.locator(".dxe-explorer").screenshot(path=str(shots / f"{path.name}-{stem}.png"))
            out["tabs"] = tabs
            # scrolling the file grid (rows fetched from the kernel as it scrolls)
            page.evaluate(
                "() => [...document.querySelectorAll('.dxe-explorer [role=tab]')].find(t => t.textContent === 'Files').click()"
            )
            _wait(
                page,
                f"d => {{ const p = d.querySelector('.dxe-explorer .dxe-panel:not([hidden])'); return ({READY['Files']})(p); }}",
            )
            start = page.evaluate("() => performance.now()")
            page.evaluate(
                """() => new Promise(resolve => {
                    const g = document.querySelector('.dxe-explorer [aria-label=files]');
                    const v = [...g.querySelectorAll('.ag-grid-viewport, .ag-body-vertical-scroll-viewport, .ag-body-viewport')].find(e => e.scrollHeight > e.clientHeight + 10);
                    let i = 0; const step = () => { v.scrollTop += 900; if (++i < 60) setTimeout(step, 30); else resolve(); }; step();
                })"""
            )
            end = _wait(
                page,
                "d => { const g = d.querySelector('.dxe-explorer [aria-label=files]'); return g && g.querySelectorAll('.ag-row:not(.ag-row-loading)').length > 5 && !g.querySelector('.ag-skeleton-container, .ag-loading'); }",
            )
            out["scroll_files"] = {
                "seconds": (end - start) / 1000,
                "longest_task_ms": _longest_task(page, start, end),
                "frames": _frames(page, start, end),
            }
            # one version back: ArrowLeft on the slider, from the overview
            page.evaluate(
                "() => [...document.querySelectorAll('.dxe-explorer [role=tab]')].find(t => t.textContent === 'Overview').click()"
            )
            _wait(page, _not_busy())
            version = int(page.locator(".dxe-explorer .dxe-version-out").inner_text().split(" of ")[0])
            slider = page.locator(".dxe-explorer input[type=range]")
            slider.focus()
            start = page.evaluate("() => performance.now()")
            slider.press("ArrowLeft")
            end = _wait(
                page,
                f"d => d.querySelector('.dxe-explorer .dxe-version-out').textContent.startsWith('{version - 1} of') && !d.querySelector('.dxe-explorer.dxe-busy') && /OPTIMIZE|WRITE|DELETE|MERGE|\\w/.test(d.querySelector('.dxe-explorer .dxe-commit-line .dxe-badge')?.textContent || '') && d.querySelector('.dxe-explorer .dxe-card .dxe-card-value')",
            )
            out["version_back"] = {
                "seconds": (end - start) / 1000,
                "longest_task_ms": _longest_task(page, start, end),
                "frames": _frames(page, start, end),
            }
            # dragging the slider over a few versions (the kernel hears where it rests)
            _wait(page, _not_busy())
            box = slider.bounding_box()
            start = page.evaluate("() => performance.now()")
            page.mouse.move(box["x"] + box["width"] - 8, box["y"] + box["height"] / 2)
            page.mouse.down()
            for i in range(1, 16):
                page.mouse.move(box["x"] + box["width"] - 8 - i * 3, box["y"] + box["height"] / 2)
                page.wait_for_timeout(30)
            page.mouse.up()
            end = _wait(
                page,
                "d => !d.querySelector('.dxe-explorer.dxe-busy') && d.querySelector('.dxe-explorer .dxe-card .dxe-card-value')",
            )
            page.wait_for_timeout(500)
            end = _wait(page, _not_busy())
            out["drag_slider"] = {
                "seconds": (end - start) / 1000,
                "longest_task_ms": _longest_task(page, start, end),
                "frames": _frames(page, start, end),
            }
            out["outside_requests"] = outside
            browser.close()
    finally:
        lab.stop()
        shutil.rmtree(root, ignore_errors=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("table", nargs="?")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--no-prefetch", action="store_true", help="DELTAEXPLORE_PREFETCH=0 in the kernel")
    ap.add_argument("--out", default=None)
    ap.add_argument("--early", action="store_true", help="tabs clicked at once, and one slider step, until nothing changes")
    ap.add_argument("--shots", default=None, help="a directory: a screenshot of each tab once shown (not with --early)")
    args = ap.parse_args()
    path = table_path(args.table)
    runs = []
    for _ in range(args.runs):
        r = one_run(path, prefetch=not args.no_prefetch, early=args.early, shots=Path(args.shots) if args.shots else None)
        runs.append(r)
        print(json.dumps(r, indent=1), flush=True)
    if args.early:
        write_early_report(path, runs, Path(args.out or HERE / "results" / "explorer-early.md"))
        return
    args.out = args.out or str(HERE / "results" / "explorer.md")
    write_report(path, runs, Path(args.out), prefetch=not args.no_prefetch)


def write_early_report(path: Path, runs: list[dict], out: Path) -> None:
    warm = statistics.median(x for r in runs for x in r["opens"])
    lines = [
        "# Early clicks in the explorer (`benchmarks/bench_explorer.py --early`, issue 23)",
        "",
        f"Table: `{path.name}`; {len(runs)} runs; one warm open (median) {warm:.2f} s; load average at the end: {_load()} "
        f"on {os.cpu_count()} cores (other work on the machine: ratios within a run only). History, Files and Layout clicked "
        "one after the other from the moment the overview appeared (the kernel's background preparation running), each "
        "timed from the click until its grid rows and charts are drawn (shown) and until the shown tab's visible text "
        "stopped changing (settled: nothing changed for 1 s; the time is its last change); then one slider step back on "
        "the overview, timed the same way.",
        "",
        "| action | shown s (runs) | settled s (runs) | longest main-thread task ms (runs) | target |",
        "|---|---|---|---|---|",
        "| first render (overview drawn) | " + ", ".join(f"{r['first_render']:.2f}" for r in runs) + " | | | |",
    ]
    for name in ("History", "Files", "Layout"):
        shown = ", ".join(f"{r['early_tabs'][name].get('shown_seconds', float('nan')):.2f}" for r in runs)
        secs = ", ".join(f"{r['early_tabs'][name]['seconds']:.2f}" for r in runs)
        tasks = ", ".join(f"{r['early_tabs'][name]['longest_task_ms']:.0f}" for r in runs)
        lines.append(f"| {name} clicked at once | {shown} | {secs} | {tasks} | ≤ 0.5 s, no task > 200 ms |")
    secs = ", ".join(
        f"{r['slider_step']['seconds']:.2f} ({r['slider_step']['seconds'] / statistics.median(r['opens']):.2f}x)" for r in runs
    )
    tasks = ", ".join(f"{r['slider_step']['longest_task_ms']:.0f}" for r in runs)
    lines.append(f"| one slider step (x warm open) | | {secs} | {tasks} | ≤ 0.10x a warm open |")
    lines.append("")
    out.write_text("\n".join(lines))
    out.with_suffix(".json").write_text(json.dumps(runs, indent=1))
    print("\n".join(lines))


def _load() -> str:
    try:
        return " ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "?"


def write_report(path: Path, runs: list[dict], out: Path, *, prefetch: bool) -> None:
    import deltaexplore as dx

    snap = dx.open_table(str(path)).snapshot()
    rows = []

    def add(label: str, key: tuple, target: str, *, ratio: bool) -> None:
        vals = []
        tasks = []
        for r in runs:
            v = r
            for k in key:
                v = v[k]
            seconds = v["seconds"] if isinstance(v, dict) else v
            vals.append((seconds, statistics.median(r["opens"])))
            if isinstance(v, dict):
                tasks.append(v["longest_task_ms"])
        secs = " / ".join(f"{s:.2f}" for s, _ in vals)
        ratios = " / ".join(f"{s / o:.2f}x" for s, o in vals)
        longest = " / ".join(f"{t:.0f}" for t in tasks) if tasks else "–"
        rows.append(f"| {label} | {secs} | {ratios if ratio else '–'} | {longest} | {target} |")

    add("first render (overview drawn: table, version, commit, schema)", ("first_render",), "≤ 1.2x open", ratio=True)
    add("… file counts and bytes drawn (the replay)", ("file_counts",), "–", ratio=True)
    add("… row counts drawn (every file's statistics)", ("row_counts",), "–", ratio=True)
    for name in TABS:
        target = "≤ 1x open" if name in ("Layout", "Diff") else "≤ 0.5 s"
        add(f"tab {name} (first switch)", ("tabs", name), target, ratio=True)
    add("scroll the file grid (60 × 900 px)", ("scroll_files",), "no task > 200 ms", ratio=False)
    add("one version back (ArrowLeft on the slider)", ("version_back",), "≤ 1x open", ratio=True)
    add("drag the slider over 15 px", ("drag_slider",), "no task > 200 ms", ratio=False)
    opens = " / ".join(f"{statistics.median(r['opens']):.2f}" for r in runs)
    lines = [
        "# Explorer in the browser on a 1M-file table",
        "",
        f"Table: `{path.name}` (`benchmarks/bench_explorer.py` generates it): version {snap.version}, "
        f"{snap.num_files:,} active files, checkpoint at {snap.checkpoint_version}, {snap.version - (snap.checkpoint_version or 0)} JSON commits after it.",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, load average at the end {_load()}; "
        f"{len(runs)} runs (values per run, separated by /), each in a fresh JupyterLab, kernel and chromium; "
        f"previous version prepared in the background: {'yes' if prefetch else 'no (DELTAEXPLORE_PREFETCH=0)'}.",
        "",
        f"**One warm open** (`dx.open_table(path).snapshot().add_actions()`, median of 3 in the explorer's kernel): {opens} s.",
        "",
        "Times are the page's clock from the user's action to the first animation frame showing the result "
        "(grid rows, chart marks, nothing busy). Longest task: the longest main-thread task (PerformanceObserver "
        "`longtask`) between the action and the result.",
        "",
        "| step | seconds | / open | longest task ms | target |",
        "|---|---:|---:|---:|---|",
        *rows,
        "",
        f"Requests that tried to leave the machine: {sum(len(r['outside_requests']) for r in runs)}.",
    ]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    out.with_suffix(".json").write_text(json.dumps(runs, indent=1))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
