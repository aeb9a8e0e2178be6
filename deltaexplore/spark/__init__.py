"""Delta tables on plain PySpark: reads, change data feed and maintenance from the core's plans.

Importing this package does not import pyspark; the functions below load it when called.

    >>> import deltaexplore.spark as dxs
    >>> spark = dxs.get_spark()
    >>> df = dxs.read(spark, "path/to/table", where="date >= '2024-01-01'")
    >>> dxs.changes(spark, "path/to/table", 3).show()
    >>> dxs.at_versions(spark, "path/to/table", "sum(amount) where day = '2024-05-01'", [3, 7])
    >>> dxs.write(spark, df, "path/to/table", mode="append")      # each operation returns metrics
    >>> dxs.delete(spark, "path/to/table", "id < 10"); dxs.optimize(spark, "path/to/table", zorder_by=["x"])
    >>> dxs.merge(spark, "path/to/table", updates, on=["id"],
    ...           clauses=[dxs.when_matched_update_all(), dxs.when_not_matched_insert_all()])
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "LAPTOP_DEFAULTS",
    "active_session",
    "at_versions",
    "changes",
    "checkpoint",
    "delete",
    "describe_session",
    "diff_rows",
    "get_spark",
    "merge",
    "optimize",
    "progress",
    "purge_deletion_vectors",
    "read",
    "read_plan",
    "report_progress_to",
    "restore",
    "update",
    "vacuum",
    "when_matched_delete",
    "when_matched_update",
    "when_matched_update_all",
    "when_not_matched_by_source_delete",
    "when_not_matched_by_source_update",
    "when_not_matched_insert",
    "when_not_matched_insert_all",
    "write",
]

_EXPORTS = {
    "LAPTOP_DEFAULTS": "deltaexplore.spark.session",
    "get_spark": "deltaexplore.spark.session",
    "active_session": "deltaexplore.spark.session",
    "describe_session": "deltaexplore.spark.session",
    "read": "deltaexplore.spark.reader",
    "read_plan": "deltaexplore.spark.reader",
    "changes": "deltaexplore.spark.cdf",
    "diff_rows": "deltaexplore.spark.row_diff",
    "at_versions": "deltaexplore.spark.expressions",
    "progress": "deltaexplore.spark.jobs",
    "report_progress_to": "deltaexplore.spark.jobs",
    "write": "deltaexplore.spark.writer",
    "delete": "deltaexplore.spark.dml",
    "update": "deltaexplore.spark.dml",
    "merge": "deltaexplore.spark.merge",
    **{
        name: "deltaexplore.core.operations.merge_clauses"
        for name in (
            "when_matched_delete",
            "when_matched_update",
            "when_matched_update_all",
            "when_not_matched_by_source_delete",
            "when_not_matched_by_source_update",
            "when_not_matched_insert",
            "when_not_matched_insert_all",
        )
    },
    "optimize": "deltaexplore.spark.maintenance",
    "purge_deletion_vectors": "deltaexplore.spark.maintenance",
    "vacuum": "deltaexplore.spark.maintenance",
    "restore": "deltaexplore.spark.maintenance",
    "checkpoint": "deltaexplore.spark.maintenance",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'deltaexplore.spark' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
