"""A user's aggregate at chosen versions: `at_versions("count(*) where amount > 10", [3, 7])`.

The expression is SQL text: an aggregate (`count(*)`, `sum(amount)`, `avg(x) - min(x)`, …)
and, after a top-level `where`, a row filter in the reader's predicate language (the one
`Snapshot.to_arrow(where=…)` and `scan(where=…)` take, so files are skipped by partition values
and statistics before any row is read). `parse_expression` is the one parser: the local engine
evaluates the aggregate with polars SQL over the version's rows (only the columns it names), the
Spark engine (`deltaexplore.spark.at_versions`) with Spark SQL over the same scan; both return
`AT_VERSIONS_SCHEMA`. Each version is a snapshot of the same `Table`, so consecutive versions
move one cached state (`Table.snapshot`) instead of replaying the log each time.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

import polars as pl
import pyarrow as pa

from deltaexplore.core.snapshot import Snapshot
from deltaexplore.core.table import Table
from deltaexplore.errors import ColumnNotFoundError
from deltaexplore.inspect.errors import InspectError
from deltaexplore.inspect.schemas import AT_VERSIONS_SCHEMA
from deltaexplore.inspect.snapshots import table_of

__all__ = ["Expression", "ExpressionError", "aggregate_columns", "at_versions", "parse_expression", "result_row", "versions_of"]


class ExpressionError(InspectError):
    """An expression that is not one aggregate over the table's columns (with a filter)."""


@dataclass(frozen=True)
class Expression:
    """An aggregate and its row filter, as the user wrote them."""

    text: str
    aggregate: str
    where: str | None


_TOKENS = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|`[^`]*`|\(|\)|\bwhere\b", re.IGNORECASE)


def parse_expression(text: str) -> Expression:
    """Split `text` at its top-level `where` (outside quotes and parentheses).

    Raises:
        ExpressionError: not a string, empty, an empty aggregate or filter, unbalanced
            parentheses or quotes.
    """
    if not isinstance(text, str) or not text.strip():
        raise ExpressionError(f"an expression is SQL text such as 'count(*) where amount > 10', got {text!r}")
    depth, cut = 0, None
    for m in _TOKENS.finditer(text):
        token = m.group(0)
        if token == "(":
            depth += 1
        elif token == ")":
            depth -= 1
            if depth < 0:
                raise ExpressionError(f"unbalanced parentheses in {text!r}")
        elif token.lower() == "where" and depth == 0 and cut is None:
            cut = m.start()
    if depth:
        raise ExpressionError(f"unbalanced parentheses in {text!r}")
    if text.count("'") % 2:
        raise ExpressionError(f"an unclosed quote in {text!r}")
    aggregate = (text if cut is None else text[:cut]).strip()
    where = None if cut is None else text[cut + len("where") :].strip()
    if not aggregate:
        raise ExpressionError(f"no aggregate before 'where' in {text!r} (e.g. 'count(*) where …')")
    if where == "":
        raise ExpressionError(f"an empty filter after 'where' in {text!r}")
    return Expression(text, aggregate, where)


def aggregate_columns(expression: Expression, names: list[str]) -> list[str]:
    """The table columns the aggregate names (in the table's order), checked against `names`.

    Raises:
        ExpressionError: the aggregate is not SQL polars can read.
        ColumnNotFoundError: it names a column the table does not have.
    """
    try:
        roots = set(pl.sql_expr(expression.aggregate).meta.root_names())
    except pl.exceptions.PolarsError as exc:
        raise ExpressionError(f"cannot read the aggregate {expression.aggregate!r}: {_first_line(exc)}") from None
    by_lower = {n.lower(): n for n in names}
    missing = sorted(r for r in roots if r not in names and r.lower() not in by_lower)
    if missing:
        raise ColumnNotFoundError(
            f"{', '.join(map(repr, missing))} in {expression.text!r}: the table's columns are {', '.join(names)}"
        )
    wanted = {r if r in names else by_lower[r.lower()] for r in roots}
    return [n for n in names if n in wanted]


def versions_of(obj: Table | Snapshot, versions: Iterable[int] | None) -> list[int]:
    """The versions asked (default: every version of the table's history), checked."""
    if versions is None:
        return list(table_of(obj).versions())
    if isinstance(versions, (str, bytes)) or not isinstance(versions, Iterable):
        raise InspectError(f"versions is a list of version numbers, got {versions!r}")
    out = []
    for v in versions:
        if isinstance(v, bool) or not isinstance(v, int):
            raise InspectError(f"a version is an int, got {v!r}")
        out.append(int(v))
    return out


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _value(frame: pl.DataFrame, expression: Expression) -> float | None:
    """The aggregate over `frame` (one value), as a float (null when SQL gives null)."""
    try:
        out = pl.SQLContext(frames={"t": frame}).execute(f"SELECT {expression.aggregate} AS value FROM t", eager=True)
    except pl.exceptions.PolarsError as exc:
        raise ExpressionError(f"cannot evaluate {expression.aggregate!r}: {_first_line(exc)}") from None
    if out.shape != (1, 1):
        raise ExpressionError(
            f"{expression.aggregate!r} is not one aggregate (it gave {out.height} rows): use count, sum, avg, min, max, …"
        )
    value = out.item()
    if value is not None and not isinstance(value, (int, float)):
        raise ExpressionError(f"{expression.aggregate!r} gives {type(value).__name__} values, not numbers")
    return None if value is None else float(value)


def at_versions(
    obj: Table | Snapshot, expression: str, versions: Iterable[int] | None = None, *, engine: str = "local"
) -> pa.Table:
    """The aggregate `expression` evaluated at each of `versions` (`AT_VERSIONS_SCHEMA`: version,
    timestamp, value, rows the filter kept, files read), with the local reader and polars SQL.

    Args:
        obj: a table or a snapshot (its table).
        expression: `"<aggregate> [where <filter>]"` (module docstring).
        versions: the versions (default: every version in the history).
        engine: "local" (Spark: `deltaexplore.spark.at_versions(spark, table, expression, versions)`).

    Raises:
        ExpressionError: the expression is not one numeric aggregate polars SQL can evaluate.
        ColumnNotFoundError: it names a column the table does not have.
        VersionNotFoundError: a version the log cannot rebuild.
        InspectError: bad `versions` or `engine`.
    """
    if engine != "local":
        raise InspectError(
            f"engine must be 'local' here, got {engine!r}: "
            "on Spark, deltaexplore.spark.at_versions(spark, table, expression, versions)"
        )
    parsed = parse_expression(expression)
    table = table_of(obj)
    chosen = versions_of(obj, versions)
    rows: list[dict[str, object]] = []
    for v in chosen:
        snap = table.snapshot(version=v)
        names = [f.name for f in snap.schema.fields]
        columns = aggregate_columns(parsed, names) or names[:1]  # count(*): the rows of one column
        plan = snap.scan(columns, where=parsed.where)
        data = plan.to_arrow()
        frame = pl.from_arrow(data)
        assert isinstance(frame, pl.DataFrame)
        rows.append(result_row(snap, parsed, _value(frame, parsed), data.num_rows, plan.files.num_rows))
    return pa.Table.from_pylist(rows, schema=AT_VERSIONS_SCHEMA)


def result_row(snap: Snapshot, expression: Expression, value: float | None, rows: int, files_read: int) -> dict[str, object]:
    """One `AT_VERSIONS_SCHEMA` row (what both engines return)."""
    return {
        "version": snap.version,
        "timestamp": snap.timestamp,
        "expression": expression.text,
        "value": value,
        "rows": rows,
        "files_read": files_read,
    }
