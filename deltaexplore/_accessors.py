"""Accessors the higher layers add to core classes, registered without importing those layers.

`table.inspect` / `snap.inspect` import `deltaexplore.inspect` (polars, ...) on first use, so
`import deltaexplore` stays as light as the protocol core.
"""

from __future__ import annotations

from typing import Any

from deltaexplore.core.snapshot import Snapshot
from deltaexplore.core.table import Table


def _inspect(self: Table | Snapshot) -> Any:
    """The inspection namespace (`deltaexplore.inspect.InspectNamespace`) of this table/version."""
    from deltaexplore.inspect import InspectNamespace

    return InspectNamespace(self)


for _cls in (Snapshot, Table):
    if not isinstance(getattr(_cls, "inspect", None), property):
        _cls.inspect = property(_inspect)  # type: ignore[attr-defined,union-attr]
