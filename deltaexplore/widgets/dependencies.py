"""The UI libraries the explorer needs (ipywidgets, anywidget): which of them are missing."""

from __future__ import annotations

import importlib.util
import sys

__all__ = ["INSTALL", "missing"]

INSTALL = "pip install 'deltaexplore[widgets]'"


def missing() -> list[str]:
    """The UI libraries the explorer needs that cannot be imported."""
    sentinel = object()
    return [
        m
        for m in ("ipywidgets", "anywidget")
        if sys.modules.get(m, sentinel) is None or (m not in sys.modules and importlib.util.find_spec(m) is None)
    ]
