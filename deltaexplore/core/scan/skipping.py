"""Data skipping: which files a predicate can rule out, by partition values and by statistics.

Pruning is conservative: a file is skipped only when its partition values, or the min / max /
null counts of its statistics (`scan.stats.column_bounds`), prove that no row can match.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.log.state import TableState
from deltaexplore.core.protocol.predicates import Expr, FileEnv
from deltaexplore.core.scan.stats import column_bounds

__all__ = ["prune_by_partitions", "prune_by_stats"]


def prune_by_partitions(snapshot: TableState, expr: Expr, parts: pa.Table) -> np.ndarray:
    """Mask of files whose partition values may satisfy `expr`."""
    n = parts.num_rows
    names = {c.lower(): c for c in parts.column_names}
    ones = pa.array(np.ones(n, dtype=np.int64))

    def lookup(column: str) -> Any:
        c = names.get(column.lower())
        if c is None:
            return None
        values = parts.column(c).combine_chunks()
        return values, values, pc.cast(pc.is_null(values), pa.int64()), ones

    return expr.may_match(FileEnv(n, lookup, exact=True))


def prune_by_stats(snapshot: TableState, expr: Expr, adds: pa.Table) -> np.ndarray:
    """Mask of files whose min/max/null-count statistics may satisfy `expr`."""
    parts = {p.lower() for p in snapshot.partition_columns}
    wanted = sorted(c for c in expr.columns() if c.lower() not in parts)
    if not wanted:
        return np.ones(adds.num_rows, dtype=bool)
    return expr.may_match(FileEnv(adds.num_rows, column_bounds(snapshot, adds, wanted).get))
