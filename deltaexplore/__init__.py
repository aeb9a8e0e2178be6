"""deltaexplore: understand a Delta Lake table from a notebook.

The protocol core reads (and, for maintenance, writes) the Delta transaction log; inspection,
charts, widgets, magics and the Spark pipeline build on it.

    >>> import deltaexplore as dx
    >>> table = dx.open_table("path/to/table")
    >>> snap = table.snapshot()            # or snapshot(version=3) / snapshot(timestamp="2024-05-01")
    >>> snap.files(), snap.to_arrow(), table.history()
"""

from __future__ import annotations

#: the package's one version: the wheel's metadata (pyproject.toml, dynamic) and `deltaexplore --version` read it
__version__ = "0.1.0"

import deltaexplore._accessors  # noqa: F401  # table.inspect / snap.inspect, imported on first use
from deltaexplore import spark  # noqa: F401  # dx.spark.read(...); imports pyspark only when called
from deltaexplore.core.follow import Follower, follow
from deltaexplore.core.log.catalog import CatalogClient, FileCatalog, RatifiedCommit, RatifiedCommits
from deltaexplore.core.snapshot import CatalogManagedWarning, Snapshot
from deltaexplore.core.table import Table, open_table
from deltaexplore.errors import (
    ColumnNotFoundError,
    CommitConflictError,
    DeletionVectorError,
    DeltaExploreError,
    DeltaProtocolError,
    InvalidArgumentError,
    InvalidCheckpointError,
    InvalidLogError,
    MissingDependencyError,
    MultipleMatchError,
    SparkError,
    StorageError,
    TableNotFoundError,
    UnsupportedFeatureError,
    VersionNotFoundError,
    WriteRefusedError,
)
from deltaexplore.widgets import explore  # registers Table's notebook display; imports no UI library


def load_ipython_extension(ipython):  # type: ignore[no-untyped-def]  # `%load_ext deltaexplore`
    from deltaexplore.magics import load_ipython_extension as load

    load(ipython)


__all__ = [
    "CatalogClient",
    "CatalogManagedWarning",
    "ColumnNotFoundError",
    "CommitConflictError",
    "DeletionVectorError",
    "DeltaExploreError",
    "DeltaProtocolError",
    "FileCatalog",
    "Follower",
    "InvalidArgumentError",
    "InvalidCheckpointError",
    "InvalidLogError",
    "MissingDependencyError",
    "MultipleMatchError",
    "RatifiedCommit",
    "RatifiedCommits",
    "Snapshot",
    "SparkError",
    "StorageError",
    "Table",
    "TableNotFoundError",
    "UnsupportedFeatureError",
    "VersionNotFoundError",
    "WriteRefusedError",
    "__version__",
    "explore",
    "follow",
    "open_table",
]
