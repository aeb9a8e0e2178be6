"""Real Jupyter servers (JupyterLab, Notebook 7) and Debian's chromium (driven by Playwright) for
the browser tests. A server is started as a user starts it, with no extension flag: the
deltaexplore lab and server extensions load because the environment has them installed (the
development .venv by `make setup`, a wheel by pip).

Nothing is downloaded: chromium comes from the Debian package (`make setup-ui` installs it),
Playwright only drives it (`executable_path`). When chromium is missing the tests skip and say
how to install it.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from jupyter_servers import Lab, start_server

CHROMIUM = os.environ.get("DELTAEXPLORE_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-dev-shm-usage",
]


@pytest.fixture(scope="session")
def chromium_path() -> str:
    if not os.path.exists(CHROMIUM):
        pytest.skip(
            f"Debian chromium not found at {CHROMIUM}: install it with `apt-get install -y chromium` (make setup-ui does)"
        )
    pytest.importorskip("playwright", reason="python playwright is not installed: pip install -e '.[dev]'")
    return CHROMIUM


@pytest.fixture(scope="session")
def lab(tmp_path_factory: pytest.TempPathFactory, chromium_path: str) -> Iterator[Lab]:
    """JupyterLab of the development environment, as `make demo` starts it (no extension flag)."""
    server = start_server(tmp_path_factory)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def notebook7(tmp_path_factory: pytest.TempPathFactory, chromium_path: str) -> Iterator[Lab]:
    """Jupyter Notebook 7 of the development environment, as `jupyter notebook` starts it."""
    server = start_server(tmp_path_factory, app="notebook")
    yield server
    server.stop()


@pytest.fixture(scope="session")
def browser(chromium_path: str):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


@pytest.fixture
def page(browser, tmp_path):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    pg = context.new_page()
    pg.dialogs = []  # type: ignore[attr-defined]
    pg.on("dialog", lambda d: (pg.dialogs.append(d.message), d.dismiss()))  # type: ignore[attr-defined]
    yield pg
    context.close()
