"""`make demo` starts JupyterLab as root and as a user (JupyterLab refuses root without --allow-root)
and with no extension flags: the development environment make sets up loads the deltaexplore lab
and server extensions by itself, as an installed wheel does; set up again, nothing is redone."""

from __future__ import annotations

import os
import pwd
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PRINT = ["--eval=print-lab-flags: ; @echo $(LAB_FLAGS)", "print-lab-flags"]


def _lab_flags(prefix: list[str]) -> tuple[int, str]:
    out = subprocess.run([*prefix, "make", "-s", "-C", str(ROOT), *PRINT], capture_output=True, text=True, check=False)
    return out.returncode, out.stdout.strip() + out.stderr


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_demo_passes_allow_root_only_to_root():
    rc, flags = _lab_flags([])
    assert rc == 0, flags
    assert "labextensions_path" not in flags and "jpserver_extensions" not in flags
    assert ("--allow-root" in flags) == (os.geteuid() == 0)
    if os.geteuid() != 0 or shutil.which("runuser") is None:
        return
    try:
        pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("no user 'nobody' to run make as")
    rc, as_user = _lab_flags(["runuser", "-u", "nobody", "--"])
    if rc != 0 and ("Permission denied" in as_user or "No such file" in as_user):
        pytest.skip(f"user 'nobody' cannot read this checkout: {as_user[-200:]}")
    assert rc == 0, as_user
    assert "--allow-root" not in as_user and "jpserver_extensions" not in as_user


def _jupyter(*args: str, home: Path) -> str:
    """`jupyter ARGS` of this environment with a fresh home and config dir (nothing of the user's)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JUPYTER")}
    env.update(HOME=str(home), JUPYTER_CONFIG_DIR=str(home / "config"), NO_COLOR="1")
    out = subprocess.run(
        [str(Path(sys.executable).parent / "jupyter"), *args], env=env, capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stdout + out.stderr
    return re.sub(r"\x1b\[[0-9;]*m", "", out.stdout + out.stderr)


@pytest.mark.skipif(
    not (ROOT / ".venv").exists() or Path(sys.prefix).resolve() != (ROOT / ".venv").resolve(), reason="not the checkout's .venv"
)
def test_the_development_environment_loads_both_extensions_without_flags(tmp_path):
    """`make setup` links the built lab extension into .venv (share/jupyter/labextensions) and
    enables the server extension there (etc/jupyter/jupyter_server_config.d), as the wheel does."""
    link = ROOT / ".venv" / "share" / "jupyter" / "labextensions" / "deltaexplore-jupyterlab"
    assert link.is_symlink() and link.resolve() == (ROOT / "extension" / "build" / "deltaexplore-jupyterlab").resolve()
    labextensions = _jupyter("labextension", "list", home=tmp_path)
    assert re.search(r"deltaexplore-jupyterlab v\S+ enabled OK", labextensions), labextensions
    server = _jupyter("server", "extension", "list", home=tmp_path)
    assert re.search(r"deltaexplore\.labserver enabled", server) and re.search(r"deltaexplore\.labserver\s+OK", server), server


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_setting_up_again_redoes_nothing():
    """Once set up, `make setup` plans no install, no npm and no new link (dry run)."""
    out = subprocess.run(["make", "-n", "-C", str(ROOT), "setup"], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    planned = [line for line in out.stdout.splitlines() if line.strip() and not line.startswith("make")]
    assert not [line for line in planned if "pip install" in line or "npm " in line or "install -D" in line], planned
