"""`make demo` starts JupyterLab as root and as a user (JupyterLab refuses root without --allow-root)."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
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
    assert "deltaexplore.labserver" in flags and "extra_labextensions_path=extension/build" in flags
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
    assert "--allow-root" not in as_user and "deltaexplore.labserver" in as_user
