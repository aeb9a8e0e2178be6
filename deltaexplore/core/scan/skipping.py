"""Data skipping: which files a predicate can rule out, by partition values and by statistics.

Pruning is conservative: a file is skipped only when its partition values, or the min / max /
null counts of its statistics (`scan.stats.column_bounds`), prove that no row can match.

Some columns are never pruned on (`unprunable`): interval columns (protocol_rfcs/
interval-types.md forbids it) and strings under a collation other than UTF8_BINARY. A filter on
a collated column compares under that collation (as Spark does), and only statistics of that
very collation and version may skip files (protocol_rfcs/collated-string-type.md): the
top-level bounds are UTF-8 binary ones, and `statsWithCollation` bounds carry a collation
version, while the comparisons here implement collations without one.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.log.state import TableState
from deltaexplore.core.protocol.predicates import Expr, FileEnv
from deltaexplore.core.protocol.schema import PrimitiveType, collations, is_binary_collation
from deltaexplore.core.scan.stats import column_bounds
from deltaexplore.errors import UnsupportedFeatureError

__all__ = ["filter_collations", "is_case_insensitive", "prune_by_partitions", "prune_by_stats", "unprunable"]


def is_case_insensitive(collation: str) -> bool:
    """spark.UTF8_LCASE: strings compared lower-cased."""
    provider, _, rest = collation.partition(".")
    return provider.lower() == "spark" and rest.split(".")[0].upper() == "UTF8_LCASE"


def filter_collations(snapshot: TableState, expr: Expr | None) -> dict[str, str]:
    """The collation (other than UTF8_BINARY) of each column `expr` filters, by the column's
    name as the filter writes it.

    Raises:
        UnsupportedFeatureError: a filter on a column whose collation is neither UTF8_BINARY nor
            spark.UTF8_LCASE (top-level), which this library cannot compare.
    """
    if expr is None or not snapshot.has_metadata:
        return {}
    declared = {k.lower(): v for k, v in collations(snapshot.schema).items() if not is_binary_collation(v)}
    out = {c: declared[c.lower()] for c in sorted(expr.columns()) if c.lower() in declared}
    for column, collation in out.items():
        if not is_case_insensitive(collation) or "." in column:
            raise UnsupportedFeatureError(
                f"the filter on {column!r} compares under the column's collation {collation}, which deltaexplore "
                "cannot evaluate (it compares strings by their UTF-8 bytes, or lower-cased for a top-level "
                "spark.UTF8_LCASE column)",
                feature="collations",
                needed_by="readers",
                path=snapshot.uri,
            )
    return out


def unprunable(snapshot: TableState, expr: Expr) -> dict[str, str]:
    """Columns of `expr` that no file is skipped on, and why."""
    out = {
        c: f"collated {coll}: no statistics of that collation with a version this reader implements"
        for c, coll in filter_collations(snapshot, expr).items()
    }
    if snapshot.has_metadata:
        for c in expr.columns():
            f = snapshot.schema.get(c.split(".")[0])
            if f is not None and "." not in c and isinstance(f.type, PrimitiveType) and f.type.name.startswith("interval"):
                out[c] = "interval column: never skipped on (protocol_rfcs/interval-types.md)"
    return out


def prune_by_partitions(snapshot: TableState, expr: Expr, parts: pa.Table, *, skip: Any = ()) -> np.ndarray:
    """Mask of files whose partition values may satisfy `expr` (columns in `skip` prune nothing)."""
    n = parts.num_rows
    names = {c.lower(): c for c in parts.column_names}
    ones = pa.array(np.ones(n, dtype=np.int64))
    skipped = {c.lower() for c in skip}

    def lookup(column: str) -> Any:
        c = names.get(column.lower())
        if c is None or column.lower() in skipped:
            return None
        values = parts.column(c).combine_chunks()
        return values, values, pc.cast(pc.is_null(values), pa.int64()), ones

    return expr.may_match(FileEnv(n, lookup, exact=True))


def prune_by_stats(snapshot: TableState, expr: Expr, adds: pa.Table, *, skip: Any = ()) -> np.ndarray:
    """Mask of files whose min/max/null-count statistics may satisfy `expr` (columns in `skip`
    prune nothing)."""
    parts = {p.lower() for p in snapshot.partition_columns}
    skipped = {c.lower() for c in skip}
    wanted = sorted(c for c in expr.columns() if c.lower() not in parts and c.lower() not in skipped)
    if not wanted:
        return np.ones(adds.num_rows, dtype=bool)
    return expr.may_match(FileEnv(adds.num_rows, column_bounds(snapshot, adds, wanted).get))
