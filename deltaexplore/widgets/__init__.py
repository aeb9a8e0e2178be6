"""Widgets: `explore()` and the rich notebook display of tables.

Importing this package is cheap and pulls in no UI library: ipywidgets and anywidget are
imported only when an explorer is built. Without them, `Explorer` is a stand-in whose
constructor raises `MissingDependencyError` naming the `widgets` extra.
"""

from __future__ import annotations

import sys
from typing import Any

import pyarrow as pa

from deltaexplore.core.table import Table, open_table
from deltaexplore.errors import MissingDependencyError
from deltaexplore.widgets.dependencies import INSTALL, missing
from deltaexplore.widgets.display import table_mimebundle

__all__ = ["Explorer", "explore", "register_display"]


class _MissingExplorer:
    """Stand-in for `Explorer` when ipywidgets/anywidget are not installed."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise MissingDependencyError(
            f"the explorer widget needs {' and '.join(missing())}, which are not installed: {INSTALL}",
            extra="widgets",
        )


def __getattr__(name: str) -> Any:
    if name == "Explorer":
        if missing():
            return _MissingExplorer
        from deltaexplore.widgets.explorer import Explorer

        return Explorer
    raise AttributeError(f"module 'deltaexplore.widgets' has no attribute {name!r}")


def explore(table: Any, version: int | None = None, *, storage_options: dict[str, Any] | None = None, **kwargs: Any) -> Any:
    """The explorer widget for a table (a `Table`, a path or a URI).

    Args:
        table: a `Table`, or a location `open_table` accepts.
        version: the version to open at (latest when None).
        storage_options: passed to `open_table` when `table` is a location.
        **kwargs: `Explorer` options (`page_size`, `history_limit`, `tab`, `streaming_files`,
            `spark`, `spark_files`).

    Raises:
        MissingDependencyError: ipywidgets or anywidget is not installed (the `widgets` extra).
    """
    explorer_cls = __getattr__("Explorer")
    if explorer_cls is _MissingExplorer:
        explorer_cls()
    if not isinstance(table, Table):
        table = open_table(str(table), storage_options)
    return explorer_cls(table, version, **kwargs)


def register_display() -> None:
    """Give `Table` its notebook display (idempotent; called when `deltaexplore` is imported)."""
    if getattr(Table, "_repr_mimebundle_", None) is not None:
        return

    def _repr_mimebundle_(self: Any, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return table_mimebundle(self, include, exclude)

    Table._repr_mimebundle_ = _repr_mimebundle_  # type: ignore[attr-defined]


register_display()


def _register_table_display() -> None:
    """In an IPython session, show deltaexplore's Arrow tables as formatted HTML tables
    (`widgets.tables`); outside one, nothing is imported. What is registered here imports
    `widgets.tables` (and with it inspection and polars) when the first Arrow table or schema is
    shown, not when `deltaexplore` is imported: a notebook's first open does not wait for it."""
    module = sys.modules.get("IPython")
    ipython = module.get_ipython() if module is not None else None
    if ipython is None:
        return
    formatters = ipython.display_formatter.formatters
    for mime in ("text/html", "text/plain"):
        for typ in (pa.Table, pa.Schema):
            current = formatters[mime].type_printers.get(typ)
            if getattr(current, "__module__", None) != "deltaexplore.widgets.tables":  # not registered already
                formatters[mime].for_type(typ, _deferred_formatter(ipython, mime, typ))


def _deferred_formatter(ipython: Any, mime: str, typ: type) -> Any:
    """A formatter that registers `widgets.tables`' formatters, then formats with the one of `mime` and `typ`."""

    def format_deferred(*args: Any) -> Any:
        from deltaexplore.widgets.tables import register_table_display

        register_table_display(ipython)
        return ipython.display_formatter.formatters[mime].lookup_by_type(typ)(*args)

    return format_deferred


_register_table_display()
