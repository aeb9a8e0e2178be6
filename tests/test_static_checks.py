"""The code stays clean: ruff (lint and format) and mypy, as `make lint` / `make typecheck` run them."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def _tool(name: str) -> str:
    path = BIN / name
    if path.exists():
        return str(path)
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed (pip install -e '.[dev]')")
    return found


@pytest.mark.parametrize(
    "args",
    [
        ["ruff", "check", "deltaexplore", "tests", "benchmarks", "notebooks", "examples"],
        ["ruff", "format", "--check", "deltaexplore"],
        ["mypy", "deltaexplore"],
    ],
    ids=["ruff-check", "ruff-format", "mypy"],
)
def test_static_check_passes(args):
    out = subprocess.run([_tool(args[0]), *args[1:]], check=False, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
