"""Explain a filter: which files a scan reads, and which part of the predicate skips the others.

The same two stages as `Snapshot.scan(where=...)` (the core's `plan_scan`): partition pruning on
typed partition values, then min/max/null-count pruning on the statistics of the survivors. To
say *why* a file is skipped, each top-level conjunct of the predicate is also evaluated alone on
the same (already parsed) values: the first conjunct that rules a file out is its reason.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.arrow import combined, take_rows
from deltaexplore.core.protocol.predicates import And, Cmp, Expr, FileEnv, In, IsNull, Literal, Or, parse_predicate
from deltaexplore.core.scan.partition_values import partition_keys
from deltaexplore.core.scan.plan import partition_table
from deltaexplore.core.scan.skipping import prune_by_partitions, unprunable
from deltaexplore.core.scan.stats import column_bounds, num_records
from deltaexplore.errors import ColumnNotFoundError
from deltaexplore.inspect.errors import InspectError
from deltaexplore.inspect.results import conform
from deltaexplore.inspect.schemas import EXPLAIN_SCHEMA
from deltaexplore.inspect.snapshots import snapshot_of

if TYPE_CHECKING:
    from deltaexplore.core.snapshot import Snapshot
    from deltaexplore.core.table import Table

__all__ = ["explain", "expr_text"]


def expr_text(e: Expr) -> str:
    """A readable SQL-like rendering of a predicate."""
    if isinstance(e, Cmp):
        return f"{e.column} {e.op} {_lit(e.value)}"
    if isinstance(e, In):
        values = ", ".join(_lit(v) for v in e.values)
        return f"{e.column} {'NOT IN' if e.negated else 'IN'} ({values})"
    if isinstance(e, IsNull):
        return f"{e.column} IS {'NOT ' if e.negated else ''}NULL"
    if isinstance(e, And):
        return " AND ".join(_paren(c) for c in e.children)
    if isinstance(e, Or):
        return " OR ".join(_paren(c) for c in e.children)
    if isinstance(e, Literal):
        return "TRUE" if e.value else "FALSE"
    return repr(e)


def _paren(e: Expr) -> str:
    text = expr_text(e)
    return f"({text})" if isinstance(e, (And, Or)) else text


def _lit(v: Any) -> str:
    if isinstance(v, str):
        return "'" + v.replace("'", "''") + "'"
    return str(v)


def _check_columns(snap: Snapshot, expr: Expr) -> None:
    schema = snap.schema
    for name in sorted(expr.columns()):
        if schema.get(name.split(".")[0]) is None:
            raise ColumnNotFoundError(f"filter column {name!r} is not in the table (columns: {', '.join(schema.names)})")


def explain(obj: Table | Snapshot, predicate: Any, *, version: int | None = None) -> pa.Table:
    """Which files a query with `predicate` reads, and why the others are skipped (`EXPLAIN_SCHEMA`).

    `predicate` is SQL-like text (``"date >= '2024-01-01' AND id = 5"``), DNF tuples or a core
    `Expr`. One row per active file: path, partition, size, num_records, stage
    (`partition_pruned` | `stats_pruned` | `read`), selected, reason (the conjunct that excluded
    the file, or why it must be read), missing_stats (the file has no min/max for a predicate
    column, so statistics cannot skip it) and ignored_stats (predicate columns skipped on by no
    file, and why: a collated string column, whose statistics are only used under the very
    collation and version they were collected with; an interval column). Counts agree with
    `snap.scan(where=predicate)`.

    Raises:
        InspectError: an empty predicate.
        PredicateError / ColumnNotFoundError: the predicate cannot be parsed or names an unknown column.
    """
    snap = snapshot_of(obj, version)
    expr = parse_predicate(predicate)
    if expr is None:
        raise InspectError("explain() needs a predicate, e.g. \"id > 100 AND date = '2024-01-01'\"")
    _check_columns(snap, expr)
    skip = unprunable(snap, expr)
    ignored = "; ".join(f"{c}: {why}" for c, why in sorted(skip.items())) or None
    adds = snap.add_actions()
    n = adds.num_rows
    conjuncts = list(expr.children) if isinstance(expr, And) else [expr]
    texts = [expr_text(c) for c in conjuncts]
    stage = np.full(n, "read", dtype=object)
    reason = np.full(n, None, dtype=object)
    missing = np.zeros(n, dtype=bool)
    if n:
        parts = partition_table(snap, adds)
        keep_part = prune_by_partitions(snap, expr, parts, skip=skip)
        _assign(
            ~keep_part,
            conjuncts,
            texts,
            lambda c: prune_by_partitions(snap, c, parts, skip=skip),
            stage,
            reason,
            "partition_pruned",
            None,
        )
        survivors = np.flatnonzero(keep_part)
        if len(survivors):
            sub = adds if len(survivors) == n else take_rows(adds, survivors)  # a take copies the stats text
            env, no_stats = _stats_env(snap, expr, sub, skip)
            keep_stats = expr.may_match(env)
            missing[survivors] = no_stats
            _assign(
                ~keep_stats,
                conjuncts,
                texts,
                lambda c: c.may_match(env),
                stage,
                reason,
                "stats_pruned",
                survivors,
            )
        read = stage == "read"
        reason[read & missing] = "no statistics for a predicate column: cannot be skipped"
        reason[read & ~missing] = "partition values and min/max statistics may match"
        stage_arr = pa.array(stage.tolist(), pa.string())
    else:
        stage_arr = pa.array([], pa.string())
    cols = {
        "path": combined(adds.column("path")).cast(pa.string()),
        "partition": partition_keys(snap, adds),
        "size": adds.column("size"),
        "num_records": num_records(adds),
        "stage": stage_arr,
        "selected": pc.equal(stage_arr, "read"),
        "reason": pa.array(reason.tolist(), pa.string()),
        "missing_stats": pa.array(missing),
        "ignored_stats": pa.array([ignored] * n, pa.string()),
    }
    return conform(cols, EXPLAIN_SCHEMA)


def _assign(
    pruned: np.ndarray,
    conjuncts: list[Expr],
    texts: list[str],
    mask_of: Any,
    stage: np.ndarray,
    reason: np.ndarray,
    label: str,
    positions: np.ndarray | None,
) -> None:
    """Mark pruned files with `label` and the first conjunct that excludes each."""
    if not pruned.any():
        return
    rows = np.flatnonzero(pruned)
    target = rows if positions is None else positions[rows]
    stage[target] = label
    unexplained = np.ones(len(rows), dtype=bool)
    kind = "partition values" if label == "partition_pruned" else "min/max statistics"
    if len(conjuncts) > 1:
        for c, text in zip(conjuncts, texts):
            if not unexplained.any():
                break
            excluded = ~np.asarray(mask_of(c))[rows] & unexplained
            reason[target[excluded]] = f"{text}: ruled out by {kind}"
            unexplained &= ~excluded
    if unexplained.any():
        reason[target[unexplained]] = f"{' AND '.join(texts)}: ruled out by {kind}"


def _stats_env(snap: Snapshot, expr: Expr, adds: pa.Table, skip: dict[str, str]) -> tuple[FileEnv, np.ndarray]:
    """A FileEnv over the statistics of `adds` (partition columns and `skip` excluded) and, per
    file, whether a predicate column lacks min/max."""
    parts = {p.lower() for p in snap.partition_columns}
    skipped = {c.lower() for c in skip}
    wanted = sorted(c for c in expr.columns() if c.lower() not in parts and c.lower() not in skipped)
    n = adds.num_rows
    if not wanted:
        return FileEnv(n, lambda column: None), np.zeros(n, dtype=bool)
    bounds = column_bounds(snap, adds, wanted)

    def lookup(column: str) -> Any:
        return bounds.get(column)

    no_stats = np.zeros(n, dtype=bool)
    for column in wanted:
        if column in bounds:
            mn, mx = bounds[column][0], bounds[column][1]
            no_stats |= pc.or_(pc.is_null(mn), pc.is_null(mx)).to_numpy(zero_copy_only=False).astype(bool)
    return FileEnv(n, lookup), no_stats
