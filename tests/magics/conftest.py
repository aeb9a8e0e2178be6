"""Fixtures for the magics tests: demo tables and a testing IPython shell with the extension loaded."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
sys.path.insert(0, str(NOTEBOOKS))

import demo_tables  # noqa: E402

pytest.importorskip("IPython", reason="IPython is not installed: pip install -e '.[dev]'")


@pytest.fixture(scope="session")
def sales(tmp_path_factory: pytest.TempPathFactory) -> str:
    return demo_tables.build_sales(tmp_path_factory.mktemp("m") / "sales")


@pytest.fixture(scope="session")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> str:
    return demo_tables.build_hostile(tmp_path_factory.mktemp("m") / "hostile")


@pytest.fixture(scope="session")
def ip():
    """IPython's testing shell (errors re-raised), with `%load_ext deltaexplore`."""
    from IPython.testing.globalipapp import get_ipython

    shell = get_ipython()
    shell.run_line_magic("load_ext", "deltaexplore")
    return shell
