"""Core filter expressions (`core.protocol.predicates.Expr`) as Spark columns, with the core's semantics.

The result keeps exactly the rows `ScanPlan.to_arrow()` keeps: comparisons with null drop the
row (as in Spark); ``x IN (...)`` is never null (a null ``x`` matches only a null in the list,
so ``NOT IN`` keeps nulls, as Arrow's ``is_in`` does); NaN compares unequal to everything and
is neither smaller nor larger (Arrow), not "larger than any number" (Spark); ``IN`` matches
NaN to NaN in both.
Literals are typed by the column's Delta type exactly as the core types them.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

from deltaexplore.core.protocol.predicates import And, Cmp, Expr, In, IsNull, Literal, Or, typed_literal
from deltaexplore.core.protocol.schema import DataType, StructType, to_arrow_type
from deltaexplore.errors import ColumnNotFoundError
from deltaexplore.spark.types import spark_type

if TYPE_CHECKING:
    from pyspark.sql import Column

__all__ = ["to_spark_filter"]


def _resolve(schema: StructType, column: str) -> tuple[list[str], DataType]:
    parts = column.split(".")
    current: Any = schema
    names: list[str] = []
    for part in parts:
        if not isinstance(current, StructType):
            raise ColumnNotFoundError(f"filter column {column!r}: {'.'.join(names)} is not a struct")
        f = current.get(part)
        if f is None:
            raise ColumnNotFoundError(f"filter column {column!r} is not in the table")
        names.append(f.name)
        current = f.type
    return names, current


def _spark_literal(value: Any, dtype: DataType) -> Column:
    from pyspark.sql import functions as F

    arrow_type = to_arrow_type(dtype)
    scalar = typed_literal(value, arrow_type)
    py = scalar.as_py()
    target = spark_type(dtype)
    if isinstance(py, dt.datetime):
        if py.tzinfo is not None:
            text = py.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f") + "+00:00"
            return F.lit(text).cast("timestamp").cast(target)
        return F.lit(py.strftime("%Y-%m-%dT%H:%M:%S.%f")).cast(target)
    if scalar.type != arrow_type:  # e.g. a float compared with an integer column: compare numerically
        return F.lit(py)
    return F.lit(py).cast(target)


def to_spark_filter(expr: Expr, schema: StructType, *, lowered: frozenset[str] = frozenset()) -> Column:
    """A boolean Spark column equivalent to `expr.to_arrow(...)` on a table with `schema`;
    columns in `lowered` (collation spark.UTF8_LCASE) are compared lower-cased, with the
    literals of `expr` lower-cased already (`predicates.lower_literals`), as `ScanPlan` does."""
    from pyspark.sql import functions as F

    def column(name: str) -> tuple[Column, DataType]:
        names, dtype = _resolve(schema, name)
        col = F.col(f"`{names[0].replace('`', '``')}`")
        for n in names[1:]:
            col = col.getField(n)
        return (F.lower(col) if name in lowered else col), dtype

    def floating(dtype: DataType) -> bool:
        return getattr(dtype, "name", "") in ("float", "double")

    def build(e: Expr) -> Column:
        if isinstance(e, Literal):
            return F.lit(bool(e.value))
        if isinstance(e, And):
            out = build(e.children[0])
            for c in e.children[1:]:
                out = out & build(c)
            return out
        if isinstance(e, Or):
            out = build(e.children[0])
            for c in e.children[1:]:
                out = out | build(c)
            return out
        if isinstance(e, IsNull):
            col, _ = column(e.column)
            return col.isNotNull() if e.negated else col.isNull()
        if isinstance(e, Cmp):
            col, dtype = column(e.column)
            lit = _spark_literal(e.value, dtype)
            cmp = {
                "=": col == lit,
                "!=": col != lit,
                "<": col < lit,
                "<=": col <= lit,
                ">": col > lit,
                ">=": col >= lit,
            }[e.op]
            if floating(dtype):
                cmp = (F.isnan(col) | cmp) if e.op == "!=" else (~F.isnan(col) & cmp)
            return cmp
        if isinstance(e, In):
            col, dtype = column(e.column)
            has_null = any(v is None for v in e.values)
            values = [_spark_literal(v, dtype) for v in e.values if v is not None]
            member = F.coalesce(col.isin(*values), F.lit(False)) if values else F.lit(False)
            matched = F.when(col.isNull(), F.lit(has_null)).otherwise(member)
            return ~matched if e.negated else matched
        raise TypeError(f"unsupported filter node {type(e).__name__}")

    return build(expr)
