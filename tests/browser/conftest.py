"""A real JupyterLab server and Debian's chromium (driven by Playwright) for the browser tests.

Nothing is downloaded: chromium comes from the Debian package (`make setup-ui` installs it),
Playwright only drives it (`executable_path`). When chromium is missing the tests skip and say
how to install it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
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
TOKEN = "deltaexplore-browser-tests"


@pytest.fixture(scope="session")
def chromium_path() -> str:
    if not os.path.exists(CHROMIUM):
        pytest.skip(
            f"Debian chromium not found at {CHROMIUM}: install it with `apt-get install -y chromium` (make setup-ui does)"
        )
    pytest.importorskip("playwright", reason="python playwright is not installed: pip install -e '.[dev]'")
    return CHROMIUM


class Lab:
    """A running JupyterLab server rooted at `root`."""

    def __init__(self, root: Path, port: int, proc: subprocess.Popen) -> None:
        self.root = root
        self.port = port
        self.proc = proc
        self.base = f"http://127.0.0.1:{port}"

    def url(self, path: str) -> str:
        sep = "&" if "?" in path else "?"
        return f"{self.base}{path}{sep}token={TOKEN}"

    def api(self, path: str) -> dict:
        req = urllib.request.Request(f"{self.base}{path}", headers={"Authorization": f"token {TOKEN}"})
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.loads(r.read())


def _server_port(runtime: Path, proc: subprocess.Popen) -> int | None:
    """The port the server bound, from the info file it writes once listening (None: not yet)."""
    info = runtime / f"jpserver-{proc.pid}.json"
    try:
        return int(json.loads(info.read_text())["port"])
    except (OSError, ValueError, KeyError):
        return None


@pytest.fixture(scope="session")
def lab(tmp_path_factory: pytest.TempPathFactory, chromium_path: str) -> Iterator[Lab]:
    root = tmp_path_factory.mktemp("lab")
    shutil.copy(ROOT / "notebooks" / "demo_tables.py", root / "demo_tables.py")
    home = tmp_path_factory.mktemp("home")
    settings = home / "settings"
    # no news/update pop-ups, no announcement notifications on top of the notebook
    (settings / "@jupyterlab" / "apputils-extension").mkdir(parents=True)
    (settings / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )
    # start the notebook's kernel without asking
    (settings / "@jupyterlab" / "notebook-extension").mkdir(parents=True)
    (settings / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings").write_text(
        json.dumps({"autoStartDefaultKernel": True})
    )
    env = {
        **os.environ,
        "HOME": str(home),
        "JUPYTER_CONFIG_DIR": str(home / "config"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "JUPYTERLAB_SETTINGS_DIR": str(settings),
        "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"),
        "PYTHONPATH": str(root),
    }
    built = ROOT / "extension" / "build"  # the JupyterLab extension (MIME renderer), when built
    extra = [f"--LabApp.extra_labextensions_path={built}"] if (built / "deltaexplore-jupyterlab").exists() else []
    log = open(home / "lab.log", "w")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyter",
            "lab",
            "--no-browser",
            "--port=0",  # the server binds a free port itself and says which in its info file
            "--ip=127.0.0.1",
            f"--IdentityProvider.token={TOKEN}",
            f"--ServerApp.root_dir={root}",
            "--ServerApp.disable_check_xsrf=True",
            "--allow-root",
            "--LabApp.news_url=",
            "--LabApp.expose_app_in_browser=True",
            '--ServerApp.jpserver_extensions={"deltaexplore.labserver": True}',  # Delta folders marked
            *extra,
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=root,
    )
    deadline = time.time() + 90
    while True:
        port = _server_port(home / "runtime", proc)
        if port is not None:
            server = Lab(root, port, proc)
            try:
                server.api("/api/status")
                break
            except OSError:
                pass
        if proc.poll() is not None or time.time() > deadline:
            log.close()
            raise RuntimeError(f"JupyterLab did not start: {(home / 'lab.log').read_text()[-3000:]}")
        time.sleep(0.5)
    yield server
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


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
