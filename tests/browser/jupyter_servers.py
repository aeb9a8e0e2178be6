"""Jupyter servers for the browser tests: `jupyter lab` or `jupyter notebook` of an environment
(the development one, or a fresh venv a wheel was installed into) started as a user starts it,
with no extension flag, on a free loopback port, with a home of its own."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import IO

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "deltaexplore-browser-tests"


class Lab:
    """A running Jupyter server (JupyterLab or Notebook 7) rooted at `root`."""

    def __init__(self, root: Path, port: int, proc: subprocess.Popen, log: IO[str]) -> None:
        self.root = root
        self.port = port
        self.proc = proc
        self.log = log
        self.base = f"http://127.0.0.1:{port}"

    def url(self, path: str) -> str:
        sep = "&" if "?" in path else "?"
        return f"{self.base}{path}{sep}token={TOKEN}"

    def api(self, path: str) -> dict:
        req = urllib.request.Request(f"{self.base}{path}", headers={"Authorization": f"token {TOKEN}"})
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.loads(r.read())

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


def _server_port(runtime: Path, proc: subprocess.Popen) -> int | None:
    """The port the server bound, from the info file it writes once listening (None: not yet)."""
    info = runtime / f"jpserver-{proc.pid}.json"
    try:
        return int(json.loads(info.read_text())["port"])
    except (OSError, ValueError, KeyError):
        return None


def _home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh home for one server: config, runtime, settings and workspaces of its own (nothing
    of the user's), no news or update pop-ups, the notebook's kernel started without asking."""
    home = tmp_path_factory.mktemp("home")
    settings = home / "settings"
    (settings / "@jupyterlab" / "apputils-extension").mkdir(parents=True)
    (settings / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )
    (settings / "@jupyterlab" / "notebook-extension").mkdir(parents=True)
    (settings / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings").write_text(
        json.dumps({"autoStartDefaultKernel": True})
    )
    return home


def start_server(
    tmp_path_factory: pytest.TempPathFactory,
    *,
    app: str = "lab",
    jupyter: Path | None = None,
    args: tuple[str, ...] = (),
) -> Lab:
    """`jupyter APP` (JupyterLab or Notebook 7) of an environment (default: this one) on a free
    loopback port, rooted at a fresh folder holding `demo_tables.py`, with no extension flag:
    what the environment has installed is what it loads. `args` adds server options."""
    root = tmp_path_factory.mktemp(app)
    shutil.copy(ROOT / "notebooks" / "demo_tables.py", root / "demo_tables.py")
    home = _home(tmp_path_factory)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "VIRTUAL_ENV"))}
    env.update(
        HOME=str(home),
        JUPYTER_CONFIG_DIR=str(home / "config"),
        JUPYTER_RUNTIME_DIR=str(home / "runtime"),
        JUPYTERLAB_SETTINGS_DIR=str(home / "settings"),
        JUPYTERLAB_WORKSPACES_DIR=str(home / "workspaces"),
        PYTHONPATH=str(root),
    )
    command = [str(jupyter)] if jupyter else [sys.executable, "-m", "jupyter"]
    # JupyterLab's news feed off (Notebook 7 has none: it refuses the option)
    app_options = ["--LabApp.news_url=", "--LabApp.expose_app_in_browser=True"] if app == "lab" else ["--expose-app-in-browser"]
    log = open(home / f"{app}.log", "w")
    proc = subprocess.Popen(
        [
            *command,
            app,
            "--no-browser",
            "--port=0",  # the server binds a free port itself and says which in its info file
            "--ip=127.0.0.1",
            f"--IdentityProvider.token={TOKEN}",
            f"--ServerApp.root_dir={root}",
            "--ServerApp.disable_check_xsrf=True",
            "--allow-root",
            *app_options,
            *args,
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
            server = Lab(root, port, proc, log)
            try:
                server.api("/api/status")
                return server
            except OSError:
                pass
        if proc.poll() is not None or time.time() > deadline:
            log.close()
            proc.kill()
            raise RuntimeError(f"jupyter {app} did not start: {(home / f'{app}.log').read_text()[-3000:]}")
        time.sleep(0.5)
