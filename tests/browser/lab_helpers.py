"""What the browser tests share: a notebook file from cells, keeping requests on the machine
(and watching the console), waiting for a notebook's kernel, an explorer's tabs and charts,
screenshots for docs/images."""

from __future__ import annotations

import json
import re

#: requests the tests let through: this machine only (and inline data)
LOOPBACK = re.compile(r"^(https?|wss?)://(127\.0\.0\.1|localhost|\[::1\])[:/]")

#: the page error Notebook 7 (7.6) raises on loading its tree page with or without deltaexplore's
#: extension (from its settings registry: a plugin without a schema); any other error fails a test
NOTEBOOK7_OWN = re.compile(r"^page error: Cannot read properties of undefined \(reading 'schema'\)$")


def notebook_json(cells: list[str] | list[tuple[str, str]]) -> str:
    """An nbformat 4 notebook (Python 3 kernel): each cell a code source, or (cell_type, source)."""
    pairs = [c if isinstance(c, tuple) else ("code", c) for c in cells]
    return json.dumps(
        {
            "cells": [
                {
                    "cell_type": kind,
                    "metadata": {},
                    "source": src,
                    **({"outputs": [], "execution_count": None} if kind == "code" else {}),
                }
                for kind, src in pairs
            ],
            "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
            "nbformat": 4,
            "nbformat_minor": 5,
        }
    )


def block_outside(page) -> list[str]:
    """Abort every request that leaves the machine; the returned list collects them (each a failure)."""
    escaped: list[str] = []

    def handle(route) -> None:
        url = route.request.url
        if LOOPBACK.match(url) or url.startswith(("data:", "blob:")):
            route.continue_()
        else:
            escaped.append(url)
            route.abort()

    page.route("**/*", handle)
    return escaped


def docs_shot(explorer, path) -> None:
    """A screenshot for docs/images: the table's location (a temporary path of the test run)
    shown as a neutral one, everything else as it is."""
    explorer.evaluate(
        """el => el.querySelectorAll('.dxe-uri, .dxe-kv code.dxe-path').forEach(n => {
            n.dataset.real = n.textContent; n.textContent = n.textContent.replace(/^.*\\/(?=[^/]+$)/, '/data/lake/'); })"""
    )
    explorer.screenshot(path=str(path))
    explorer.evaluate(
        "el => el.querySelectorAll('[data-real]').forEach(n => { n.textContent = n.dataset.real; delete n.dataset.real; })"
    )


def wait_kernel_idle(page) -> None:
    """Until the current notebook's kernel is connected, idle and its session ready."""
    page.wait_for_function(
        """() => {
            const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
            const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
            return !!k && k.connectionStatus === 'connected' && k.status === 'idle' && w.sessionContext.isReady;
        }""",
        timeout=90_000,
    )


class Watch:
    """Console errors, page errors and every request that tried to leave the machine."""

    def __init__(self, page) -> None:
        self.errors: list[str] = []
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(f"page error: {e}"))

        self.outside = block_outside(page)


def settled(page, explorer) -> None:
    """Wait until the kernel answered (no busy explorer) and grids/charts had a frame to draw."""
    page.wait_for_timeout(150)
    page.wait_for_function("() => !document.querySelector('.dxe-explorer.dxe-busy')", timeout=120_000)
    explorer.evaluate("el => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
    page.wait_for_timeout(400)


def open_tab(page, explorer, name: str):
    explorer.get_by_role("tab", name=name, exact=True).click()
    settled(page, explorer)
    panel = explorer.locator(".dxe-panel:not([hidden])")
    assert explorer.get_by_role("tab", name=name, exact=True).get_attribute("aria-selected") == "true"
    return panel


def drawn_chart(panel, index: int = 0):
    """The index-th chart of a panel, once Vega drew marks and axes into it."""
    chart = panel.locator(".dxe-chart").nth(index)
    chart.locator("svg g.role-mark > [aria-roledescription]").first.wait_for(state="attached", timeout=30_000)
    assert chart.locator("svg g.role-axis").count() >= 2, "a chart without axes"
    return chart
