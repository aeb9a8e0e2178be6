"""The JupyterLab extension's galata suite (extension/ui-tests), run against Debian chromium.

`make setup-ui` builds the extension and installs the suite's node modules; here we only run it.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
UI_TESTS = ROOT / "extension" / "ui-tests"

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("browser")]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_galata_suite(chromium_path: str):
    if shutil.which("npx") is None:
        pytest.skip("node/npx is not installed: the galata suite needs Node.js (make setup-ui)")
    if not (ROOT / "extension" / "build" / "deltaexplore-jupyterlab" / "package.json").exists():
        pytest.fail("the JupyterLab extension is not built: run `make setup-ui` (npm ci + npm run build in extension/)")
    if not (UI_TESTS / "node_modules" / "@jupyterlab" / "galata").exists():
        pytest.fail("galata is not installed: run `make setup-ui` (npm ci in extension/ui-tests)")
    bindir = str(Path(sys.executable).parent)
    env = {
        **os.environ,
        "PATH": bindir + os.pathsep + os.environ.get("PATH", ""),
        "JUPYTER": str(Path(bindir) / "jupyter"),
        "DELTAEXPLORE_CHROMIUM": chromium_path,
        "DELTAEXPLORE_UI_PORT": str(_free_port()),
        "CI": "1",
    }
    proc = subprocess.run(
        ["npx", "playwright", "test", "--reporter=line"],
        cwd=UI_TESTS,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-8000:]
    assert " passed" in out and " failed" not in out
