"""What the browser tests share: a notebook file from cells, keeping requests on the machine,
waiting for a notebook's kernel, screenshots for docs/images."""

from __future__ import annotations

import json
import re

#: requests the tests let through: this machine only (and inline data)
LOOPBACK = re.compile(r"^(https?|wss?)://(127\.0\.0\.1|localhost|\[::1\])[:/]")


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
