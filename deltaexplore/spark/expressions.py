"""A user's aggregate at chosen versions on Spark: the local `inspect.expressions.at_versions`
with Spark SQL over each version's scan (the same parser, skipping and result schema).

    >>> dxs.at_versions(spark, "path/to/table", "count(*) where amount > 10", [3, 7])
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from deltaexplore.inspect.expressions import ExpressionError, aggregate_columns, parse_expression, result_row, versions_of
from deltaexplore.inspect.schemas import AT_VERSIONS_SCHEMA
from deltaexplore.spark.reader import read_plan, snapshot_of
from deltaexplore.spark.session import spark_errors

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["at_versions"]


def at_versions(
    spark: SparkSession,
    uri: Any,
    expression: str,
    versions: Iterable[int] | None = None,
    *,
    storage_options: dict[str, Any] | None = None,
) -> pa.Table:
    """The aggregate `expression` (`"<aggregate> [where <filter>]"`) at each of `versions`
    (default: every version), evaluated by Spark SQL; `AT_VERSIONS_SCHEMA`, as the local one.

    Raises:
        ExpressionError: the aggregate is not one numeric aggregate Spark SQL can evaluate.
        ColumnNotFoundError, VersionNotFoundError: as the local one.
        SparkError: Spark failed otherwise.
    """
    parsed = parse_expression(expression)
    latest = snapshot_of(uri, storage_options=storage_options)
    table = latest.table
    rows = []
    for v in versions_of(latest, versions):
        snap = table.snapshot(version=v)
        names = [f.name for f in snap.schema.fields]
        try:
            columns = aggregate_columns(parsed, names) or names[:1]
        except ExpressionError:  # SQL polars does not read: Spark may; it gets every column
            columns = names
        plan = snap.scan(columns, where=parsed.where)
        df = read_plan(spark, plan, storage_options=storage_options)
        try:
            out = df.selectExpr(f"{parsed.aggregate} AS value", "count(1) AS rows").collect()
        except Exception as exc:
            if type(exc).__name__ in ("AnalysisException", "ParseException"):
                message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                raise ExpressionError(f"Spark SQL cannot evaluate {parsed.aggregate!r}: {message}") from None
            with spark_errors("at_versions", path=snap.uri):
                raise
        value = out[0]["value"]
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            try:
                value = float(value)  # a decimal
            except (TypeError, ValueError):
                raise ExpressionError(f"{parsed.aggregate!r} gives {type(value).__name__} values, not numbers") from None
        rows.append(result_row(snap, parsed, None if value is None else float(value), int(out[0]["rows"]), plan.files.num_rows))
    return pa.Table.from_pylist(rows, schema=AT_VERSIONS_SCHEMA)
