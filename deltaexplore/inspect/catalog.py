"""Catalog-managed tables: which commits are published, which are only ratified by the catalog,
and which staged commit files no catalog has ratified.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa

from deltaexplore.core.log.file_names import STAGED_DIR, LogKind, parse_log_file
from deltaexplore.inspect.results import conform
from deltaexplore.inspect.schemas import CATALOG_SCHEMA
from deltaexplore.inspect.snapshots import table_of

if TYPE_CHECKING:
    from deltaexplore.core.snapshot import Snapshot
    from deltaexplore.core.table import Table

__all__ = ["catalog_status"]


def catalog_status(obj: Table | Snapshot) -> pa.Table:
    """Published vs ratified commits, one row per version (`CATALOG_SCHEMA`).

    Columns: version, published (in `_delta_log/`), ratified (the table's catalog client
    ratified it; null when the table was opened without a catalog, which cannot be asked),
    staged_files (files for the version in `_delta_log/_staged_commits/`), status
    (published | ratified-unpublished | staged-unratified | staged (catalog unknown)) and path.
    Works for any table; a table that is not catalog-managed has only published rows.
    """
    table = table_of(obj)
    listing = table.listing()
    staged: dict[int, list[str]] = {}
    try:
        for info in table.storage.list_dir(STAGED_DIR):
            f = parse_log_file(info)
            if f is not None and f.kind is LogKind.STAGED_COMMIT:
                staged.setdefault(f.version, []).append(f.path)
    except FileNotFoundError:
        pass
    has_catalog = table.catalog is not None
    versions = sorted(set(listing.commits) | set(listing.ratified) | set(staged))
    rows: dict[str, list[Any]] = {f.name: [] for f in CATALOG_SCHEMA}
    for v in versions:
        published = v in listing.commits
        ratified = (
            (v in listing.ratified or (published and (listing.catalog_latest is None or v <= listing.catalog_latest)))
            if has_catalog
            else None
        )
        path: str | None
        if published:
            status, path = "published", listing.commits[v].path
        elif has_catalog and v in listing.ratified:
            status, path = "ratified-unpublished", listing.ratified[v].path
        elif has_catalog:
            status, path = "staged-unratified", staged[v][0] if staged.get(v) else None
        else:
            status, path = "staged (catalog unknown)", staged[v][0] if staged.get(v) else None
        rows["version"].append(v)
        rows["published"].append(published)
        rows["ratified"].append(ratified)
        rows["staged_files"].append(len(staged.get(v, [])))
        rows["status"].append(status)
        rows["path"].append(path)
    return conform(rows, CATALOG_SCHEMA)
