"""Fixtures for the widget tests: the notebooks' deterministic demo tables, built once per session."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
sys.path.insert(0, str(NOTEBOOKS))

import demo_tables  # noqa: E402

pytest.importorskip("anywidget", reason="the widgets extra (anywidget) is not installed: pip install -e '.[dev]'")


@pytest.fixture(scope="session")
def sales(tmp_path_factory: pytest.TempPathFactory) -> str:
    return demo_tables.build_sales(tmp_path_factory.mktemp("w") / "sales")


@pytest.fixture(scope="session")
def events(tmp_path_factory: pytest.TempPathFactory) -> str:
    return demo_tables.build_events(tmp_path_factory.mktemp("w") / "events")


@pytest.fixture(scope="session")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> str:
    return demo_tables.build_hostile(tmp_path_factory.mktemp("w") / "hostile")
