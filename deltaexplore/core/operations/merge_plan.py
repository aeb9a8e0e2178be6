"""MERGE planning, shared by the engines: resolve the clauses, split the ON condition, pick the
target files a source can touch, and assemble the metrics and parameters Delta records.

`plan_merge(snapshot, source_schema, on, clauses)` resolves every condition and value against
the source and target columns (`merge_clauses.resolve_sql`: one text both engines evaluate) and
returns a `MergePlan`:

- `condition`: the ON condition split into equality keys (`source expr = target expr`), terms
  on the target only, on the source only, and the rest;
- `clauses`: each clause with its condition and, for updates and inserts, one value per column
  of the (evolved) target schema (`None`: null, or computed for generated and identity columns);
- `candidate_files(key_stats)`: the target files that can hold a matching row (every file when
  there are NOT MATCHED BY SOURCE clauses; else pruned by partitions and statistics on the
  target-only ON terms and on the range — or, for partition columns, the values — of the source
  keys), and the predicate a transaction registers as read for conflict detection;
- `case_sql(kind)`: which clause of a kind applies to a row (first whose condition holds);
- `parameters()`, `complete_metrics(row)` and `commit_metrics(row)`: the metrics row's totals and
  `commitInfo` as delta-spark writes them for MERGE.

Multiple matches follow Delta: a target row matched by several source rows is an error
(`MultipleMatchError`) when the MERGE has WHEN MATCHED clauses, unless its only one is an
unconditional DELETE. delta-spark raises it for any MERGE that is not insert-only; here a MERGE
without WHEN MATCHED clauses (inserts and NOT MATCHED BY SOURCE clauses only) leaves the rows
such a target row matched unambiguous and goes on, as delta-rs does.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.operations.delete import DeletionVectorUpdate
from deltaexplore.core.operations.merge_clauses import (
    MATCHED,
    NOT_MATCHED,
    NOT_MATCHED_BY_SOURCE,
    SOURCE,
    TARGET,
    MergeClause,
    ResolvedSql,
    Sides,
    clause_list,
    equality_sides,
    resolve_sql,
    split_conjuncts,
)
from deltaexplore.core.operations.update import resolve_assignments
from deltaexplore.core.operations.write import write_metadata
from deltaexplore.core.protocol.actions import Metadata
from deltaexplore.core.protocol.predicates import And, Cmp, Expr, In, Literal, PredicateError, parse_predicate
from deltaexplore.core.protocol.schema import StructType, to_arrow_type
from deltaexplore.core.snapshot import Snapshot
from deltaexplore.core.write.row_rules import generated_columns, identity_columns
from deltaexplore.errors import InvalidArgumentError, MultipleMatchError, WriteRefusedError

__all__ = [
    "COMMIT_METRICS",
    "KeyStats",
    "MergeCondition",
    "MergeKey",
    "MergePlan",
    "MergeScan",
    "ResolvedClause",
    "complete_metrics",
    "deletion_vector_metrics",
    "plan_merge",
]

#: MERGE metrics (the columns of `MERGE_METRICS`) -> their names in commitInfo.operationMetrics
COMMIT_METRICS = {
    "num_source_rows": "numSourceRows",
    "num_target_rows_inserted": "numTargetRowsInserted",
    "num_target_rows_updated": "numTargetRowsUpdated",
    "num_target_rows_matched_updated": "numTargetRowsMatchedUpdated",
    "num_target_rows_not_matched_by_source_updated": "numTargetRowsNotMatchedBySourceUpdated",
    "num_target_rows_deleted": "numTargetRowsDeleted",
    "num_target_rows_matched_deleted": "numTargetRowsMatchedDeleted",
    "num_target_rows_not_matched_by_source_deleted": "numTargetRowsNotMatchedBySourceDeleted",
    "num_target_rows_copied": "numTargetRowsCopied",
    "num_output_rows": "numOutputRows",
    "num_target_files_added": "numTargetFilesAdded",
    "num_target_files_removed": "numTargetFilesRemoved",
    "num_target_change_files_added": "numTargetChangeFilesAdded",
    "num_target_bytes_added": "numTargetBytesAdded",
    "num_target_bytes_removed": "numTargetBytesRemoved",
    "num_target_deletion_vectors_added": "numTargetDeletionVectorsAdded",
    "num_target_deletion_vectors_removed": "numTargetDeletionVectorsRemoved",
    "num_target_deletion_vectors_updated": "numTargetDeletionVectorsUpdated",
}
#: partition columns are pruned by the source's values up to this many distinct values (else by range)
MAX_PARTITION_VALUES = 256


@dataclass(frozen=True)
class MergeKey:
    """One equality of the ON condition: an expression of the source = one of the target."""

    source: ResolvedSql
    target: ResolvedSql

    @property
    def target_column(self) -> str | None:
        """The target column when the target side is a plain column (usable for pruning)."""
        return self.target.column[1] if self.target.column is not None else None


@dataclass(frozen=True)
class MergeCondition:
    """The ON condition, whole (`on`) and split into its top-level AND terms by the sides they use."""

    on: ResolvedSql
    keys: tuple[MergeKey, ...]
    target_filter: ResolvedSql | None  # terms on target columns only
    source_filter: ResolvedSql | None  # terms on source columns only
    residual: ResolvedSql | None  # terms on both sides that are not keys, and constant terms
    target_predicate: Expr | None  # the target-only terms file pruning understands


@dataclass(frozen=True)
class ResolvedClause:
    """A clause with its SQL resolved (see the module docstring); `index` is its position among
    the clauses of its kind (the value `case_sql` gives the rows it applies to)."""

    clause: MergeClause
    index: int
    condition: ResolvedSql | None
    #: update/insert: every column of the written schema -> its value (None: null, or computed
    #: for generated and identity columns); delete: None
    values: dict[str, ResolvedSql | None] | None

    @property
    def kind(self) -> str:
        return self.clause.kind

    @property
    def action(self) -> str:
        return self.clause.action


@dataclass(frozen=True)
class KeyStats:
    """What an engine found about the source values of one key (its source expression):
    `non_null` values, their `min`/`max` (scalars) and, when few, the distinct `values`."""

    non_null: int
    min: pa.Scalar | None = None
    max: pa.Scalar | None = None
    values: pa.Array | None = None


@dataclass(frozen=True)
class MergeScan:
    """The target files a MERGE reads: add actions, their typed partition values, the predicate
    that chose them (None: the whole table), and the file count before pruning."""

    files: pa.Table
    partition_values: pa.Table
    predicate: Expr | None
    total_files: int


@dataclass(frozen=True)
class MergePlan:
    """A resolved MERGE (see the module docstring)."""

    snapshot: Snapshot
    condition: MergeCondition
    clauses: tuple[ResolvedClause, ...]
    source_columns: tuple[str, ...]
    #: the metadata to commit when schema evolution added columns (else None)
    metadata: Metadata | None
    use_deletion_vectors: bool
    change_data_feed: bool

    @property
    def schema(self) -> StructType:
        """The schema rows are written with (evolved when `metadata` is set)."""
        return self.metadata.schema if self.metadata is not None else self.snapshot.schema

    def of_kind(self, kind: str) -> tuple[ResolvedClause, ...]:
        return tuple(c for c in self.clauses if c.kind == kind)

    @property
    def reads_whole_table(self) -> bool:
        """NOT MATCHED BY SOURCE clauses make every target row a candidate."""
        return bool(self.of_kind(NOT_MATCHED_BY_SOURCE))

    @property
    def modifies_target(self) -> bool:
        """Whether any clause updates or deletes target rows (else it only inserts)."""
        return any(c.action != "insert" for c in self.clauses)

    @property
    def multiple_matches_allowed(self) -> bool:
        """Whether a target row may match several source rows (see the module docstring)."""
        matched = self.of_kind(MATCHED)
        return not matched or (len(matched) == 1 and matched[0].action == "delete" and matched[0].condition is None)

    def refuse_multiple_matches(self, target_rows: int, example: str = "") -> None:
        """Raises MultipleMatchError when `target_rows` target rows matched several source rows
        and the clauses make that ambiguous."""
        if target_rows and not self.multiple_matches_allowed:
            raise MultipleMatchError(
                f"cannot MERGE into {self.snapshot.table.uri}: {target_rows} target row(s) matched more than one source row"
                f"{example}, and a WHEN MATCHED clause would update or delete them in possibly conflicting ways "
                "(Delta: DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE); remove the duplicates from the source",
                path=self.snapshot.table.uri,
            )

    def case_sql(self, kind: str, *, engine: str = "spark") -> str | None:
        """`CASE WHEN <condition> THEN <index> ... ELSE -1 END`: the clause of `kind` that applies
        to a row (the first whose condition holds; -1: none), as Spark SQL or polars SQL."""
        clauses = self.of_kind(kind)
        if not clauses:
            return None
        whens = []
        for c in clauses:
            cond = "TRUE" if c.condition is None else f"({c.condition.sql if engine == 'spark' else c.condition.polars})"
            whens.append(f"WHEN {cond} THEN {c.index}")
        return f"CASE {' '.join(whens)} ELSE -1 END"

    def candidate_files(self, key_stats: Mapping[int, KeyStats] | None = None) -> MergeScan:
        """The target files that can hold a matching row (see the module docstring).

        Args:
            key_stats: per index of `condition.keys`, the source values of that key; keys
                without stats do not prune.
        """
        snapshot = self.snapshot
        expr = None if self.reads_whole_table else self.pruning_predicate(key_stats or {})
        plan = snapshot.scan(where=expr)
        return MergeScan(plan.files, plan.partition_values, expr, plan.total_files)

    def pruning_predicate(self, key_stats: Mapping[int, KeyStats]) -> Expr | None:
        """The target-only ON terms and, per key on a target column, the source's range (or
        values, for partition columns); None when nothing prunes."""
        terms: list[Expr] = [self.condition.target_predicate] if self.condition.target_predicate is not None else []
        types = {f.name: to_arrow_type(f.type) for f in self.snapshot.schema.fields}
        parts = {p.lower() for p in self.snapshot.partition_columns}
        for i, key in enumerate(self.condition.keys):
            stats = key_stats.get(i)
            column = key.target_column
            if stats is None or column is None:
                continue
            if stats.non_null == 0:
                return Literal(False)  # no source row has a key: nothing can match
            typ = types[column]
            if column.lower() in parts and stats.values is not None and len(stats.values) <= MAX_PARTITION_VALUES:
                values = _cast_values(stats.values, typ)
                if values is not None:
                    terms.append(In(column, tuple(values.to_pylist())))
                    continue
            if _prunable(typ) and stats.min is not None and stats.max is not None:
                lo, hi = _cast_scalar(stats.min, typ), _cast_scalar(stats.max, typ)
                if lo is not None and hi is not None:
                    terms.append(And((Cmp(column, ">=", lo), Cmp(column, "<=", hi))))
        if not terms:
            return None
        return terms[0] if len(terms) == 1 else And(tuple(terms))

    def parameters(self) -> dict[str, str]:
        """`commitInfo.operationParameters` as delta-spark writes them for MERGE."""

        def predicates(kind: str) -> str:
            out = [
                ({"predicate": c.clause.condition} if c.clause.condition is not None else {}) | {"actionType": c.action}
                for c in self.of_kind(kind)
            ]
            return json.dumps(out, separators=(",", ":"))

        return {
            "predicate": json.dumps([self.condition.on.text]),
            "matchedPredicates": predicates(MATCHED),
            "notMatchedPredicates": predicates(NOT_MATCHED),
            "notMatchedBySourcePredicates": predicates(NOT_MATCHED_BY_SOURCE),
        }

    @staticmethod
    def commit_metrics(row: Mapping[str, Any]) -> dict[str, int]:
        """`commitInfo.operationMetrics` (Delta's names) from a MERGE metrics row (`complete_metrics`)."""
        return {COMMIT_METRICS[k]: int(row.get(k) or 0) for k in COMMIT_METRICS}


def complete_metrics(metrics: dict[str, Any]) -> dict[str, Any]:
    """Fill the totals Delta derives from the per-clause counts (in place; returned): rows
    updated / deleted = by WHEN MATCHED + by WHEN NOT MATCHED BY SOURCE clauses; output rows =
    inserted + updated + copied (change data not counted)."""
    for what in ("updated", "deleted"):
        parts = (f"num_target_rows_matched_{what}", f"num_target_rows_not_matched_by_source_{what}")
        metrics[f"num_target_rows_{what}"] = sum(int(metrics.get(p) or 0) for p in parts)
    metrics["num_output_rows"] = sum(
        int(metrics.get(f"num_target_rows_{what}") or 0) for what in ("inserted", "updated", "copied")
    )
    return metrics


def _prunable(typ: pa.DataType) -> bool:
    t = pa.types
    checks = (t.is_integer, t.is_decimal, t.is_string, t.is_large_string, t.is_date, t.is_timestamp)
    return any(check(typ) for check in checks)


def _cast_scalar(value: pa.Scalar, typ: pa.DataType) -> pa.Scalar | None:
    """`value` as a `typ` scalar, or None when it is not exactly one (no pruning then)."""
    try:
        if pa.types.is_timestamp(typ) and pa.types.is_timestamp(value.type) and (value.type.tz is None) != (typ.tz is None):
            value = pa.scalar(value.value, pa.timestamp(value.type.unit, tz=typ.tz))
        return value.cast(typ, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, TypeError):
        return None


def _cast_values(values: pa.Array, typ: pa.DataType) -> pa.Array | None:
    try:
        return values.drop_null().cast(typ, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None


def deletion_vector_metrics(update: DeletionVectorUpdate) -> dict[str, int]:
    """Delta's MERGE deletion vector metrics of a `deletion_vector_update`: files fully removed,
    DVs added (on files without one, plus those replaced, as commitInfo counts them), removed
    (files with a DV that go, plus those replaced) and updated (replaced)."""
    if update.removes.num_rows == 0:
        return {
            "num_target_files_removed": 0,
            "num_target_bytes_removed": 0,
            "num_target_deletion_vectors_added": 0,
            "num_target_deletion_vectors_removed": 0,
            "num_target_deletion_vectors_updated": 0,
        }
    kept = pc.is_in(update.removes.column("path"), value_set=update.adds.column("path").combine_chunks())
    kept_np = kept.to_numpy(zero_copy_only=False).astype(bool)
    had = pc.is_valid(update.removes.column("deletionVector")).to_numpy(zero_copy_only=False).astype(bool)
    sizes = pc.fill_null(update.removes.column("size"), 0).to_numpy(zero_copy_only=False)
    updated = int(np.count_nonzero(kept_np & had))
    return {
        "num_target_files_removed": int(np.count_nonzero(~kept_np)),
        "num_target_bytes_removed": int(sizes[~kept_np].sum()),
        "num_target_deletion_vectors_added": int(np.count_nonzero(kept_np & ~had)) + updated,
        "num_target_deletion_vectors_removed": int(np.count_nonzero(~kept_np & had)) + updated,
        "num_target_deletion_vectors_updated": updated,
    }


# -- planning ----------------------------------------------------------------------------------


def plan_merge(
    snapshot: Snapshot,
    source_schema: pa.Schema,
    on: str | Sequence[str],
    clauses: Sequence[MergeClause] | MergeClause,
    *,
    source_alias: str = SOURCE,
    target_alias: str = TARGET,
    schema_mode: str | None = None,
    use_deletion_vectors: bool | None = None,
) -> MergePlan:
    """Resolve a MERGE of a source with `source_schema` into `snapshot` (see the module docstring).

    Args:
        on: the ON condition (SQL over `source_alias.x` / `target_alias.x`), or a list of column
            names both sides have (equal values match).
        clauses: the WHEN clauses, in order.
        schema_mode: None, or 'merge': source columns the target lacks are added to it when an
            `UPDATE SET *` / `INSERT *` clause writes them.
        use_deletion_vectors: default: as the table says (`delta.enableDeletionVectors`).

    Raises:
        InvalidArgumentError: arguments of the wrong type, equal aliases.
        WriteRefusedError: unknown or ambiguous columns, SQL that cannot be read, clauses Delta
            refuses, an append-only table asked to update or delete, DVs asked for but off.
    """
    clauses = clause_list(clauses)
    for name, alias in (("source_alias", source_alias), ("target_alias", target_alias)):
        if not isinstance(alias, str) or not alias.strip() or not alias.replace("_", "a").isalnum():
            raise InvalidArgumentError(f"{name} must be a plain name (letters, digits, _), got {alias!r}")
    if source_alias.lower() == target_alias.lower():
        raise InvalidArgumentError(f"source_alias and target_alias must differ, both are {source_alias!r}")
    if schema_mode not in (None, "merge"):
        raise InvalidArgumentError(f"schema_mode must be None or 'merge', got {schema_mode!r}")
    source_columns = tuple(source_schema.names)
    lowered = [c.lower() for c in source_columns]
    dupes = sorted({c for c in source_columns if lowered.count(c.lower()) > 1})
    if dupes:
        raise WriteRefusedError(f"the MERGE source has columns that differ only in case: {dupes}")
    config = snapshot.config
    if config.append_only and "appendOnly" in snapshot.protocol.writer_feature_set and any(c.action != "insert" for c in clauses):
        raise WriteRefusedError(
            f"table {snapshot.table.uri} is append-only (delta.appendOnly=true): MERGE may only insert "
            "(WHEN NOT MATCHED ... INSERT clauses)"
        )
    dv_on = config.deletion_vectors_enabled
    if use_deletion_vectors and not dv_on:
        raise WriteRefusedError(
            f"deletion vectors are not enabled on {snapshot.table.uri} (set delta.enableDeletionVectors = true)"
        )
    metadata = None
    if schema_mode == "merge" and any(c.all_columns for c in clauses):
        _, old, md, _, _ = write_metadata(
            snapshot.table,  # type: ignore[arg-type]  # a snapshot's table is a Table
            snapshot,
            source_schema.empty_table(),
            partition_by=None,
            configuration=None,
            schema_mode="merge",
        )
        metadata = md if md.schema_string != (old.schema_string if old else None) else None
    sides = Sides({SOURCE: source_columns, TARGET: tuple(snapshot.schema.names)}, {SOURCE: source_alias, TARGET: target_alias})
    condition = _resolve_on(on, sides)
    written = metadata.schema if metadata is not None else snapshot.schema
    resolved: list[ResolvedClause] = []
    for kind in (MATCHED, NOT_MATCHED, NOT_MATCHED_BY_SOURCE):
        for i, c in enumerate(c for c in clauses if c.kind == kind):
            resolved.append(_resolve_clause(snapshot, c, i, sides, written))
    order = {id(c): k for k, c in enumerate(clauses)}
    resolved.sort(key=lambda r: order[id(r.clause)])
    return MergePlan(
        snapshot,
        condition,
        tuple(resolved),
        source_columns,
        metadata,
        dv_on if use_deletion_vectors is None else bool(use_deletion_vectors),
        config.change_data_feed_enabled,
    )


def _allowed(kind: str) -> tuple[str, ...]:
    return {MATCHED: (SOURCE, TARGET), NOT_MATCHED: (SOURCE,), NOT_MATCHED_BY_SOURCE: (TARGET,)}[kind]


def _conjunction(parts: list[ResolvedSql]) -> ResolvedSql | None:
    if not parts:
        return None
    if len(parts) == 1:
        return parts[0]
    return ResolvedSql(
        " AND ".join(f"({p.text})" for p in parts),
        " AND ".join(f"({p.sql})" for p in parts),
        " AND ".join(f"({p.polars})" for p in parts),
        " AND ".join(f"({p.bare})" for p in parts),
        frozenset().union(*(p.references for p in parts)),
    )


def _resolve_on(on: str | Sequence[str], sides: Sides) -> MergeCondition:
    a = sides.aliases
    if isinstance(on, (list, tuple)) and on and all(isinstance(c, str) for c in on):
        on = " AND ".join(f"{a[SOURCE]}.`{c}` = {a[TARGET]}.`{c}`" for c in on)
    if not isinstance(on, str) or not on.strip():
        raise InvalidArgumentError(f"the MERGE ON condition must be SQL text or a list of column names, got {on!r}")
    what = "the ON condition"
    whole = resolve_sql(on, sides, (SOURCE, TARGET), what=what)
    keys: list[MergeKey] = []
    target_terms: list[ResolvedSql] = []
    source_terms: list[ResolvedSql] = []
    residual: list[ResolvedSql] = []
    predicates: list[Expr] = []
    for term in split_conjuncts(on, what=what):
        resolved = resolve_sql(term, sides, (SOURCE, TARGET), what=what)
        used = resolved.sides
        if used == {TARGET}:
            target_terms.append(resolved)
            expr = _target_predicate(resolved, sides)
            if expr is not None:
                predicates.append(expr)
            continue
        if used == {SOURCE}:
            source_terms.append(resolved)
            continue
        eq = equality_sides(term, what=what)
        if eq is not None and used == {SOURCE, TARGET}:
            left, right = (resolve_sql(t, sides, (SOURCE, TARGET), what=what) for t in eq)
            if left.sides == {SOURCE} and right.sides == {TARGET}:
                keys.append(MergeKey(left, right))
                continue
            if left.sides == {TARGET} and right.sides == {SOURCE}:
                keys.append(MergeKey(right, left))
                continue
        residual.append(resolved)
    target_predicate = None if not predicates else predicates[0] if len(predicates) == 1 else And(tuple(predicates))
    return MergeCondition(
        whole, tuple(keys), _conjunction(target_terms), _conjunction(source_terms), _conjunction(residual), target_predicate
    )


def _target_predicate(term: ResolvedSql, sides: Sides) -> Expr | None:
    """A target-only ON term as a pruning `Expr`, when the predicate parser reads it."""
    try:
        expr = parse_predicate(term.bare)
    except PredicateError:
        return None
    names = {c.lower() for c in sides.columns[TARGET]}
    if expr is None or not {c.lower() for c in expr.columns()} <= names:
        return None
    return expr


def _resolve_clause(snapshot: Snapshot, clause: MergeClause, index: int, sides: Sides, written: StructType) -> ResolvedClause:
    allowed = _allowed(clause.kind)
    condition = (
        resolve_sql(clause.condition, sides, allowed, what=f"the condition of {clause.label}")
        if clause.condition is not None
        else None
    )
    if clause.action == "delete":
        return ResolvedClause(clause, index, condition, None)
    md = snapshot.metadata
    generated = set(generated_columns(md))
    identity = identity_columns(md)
    existing = {n.lower() for n in snapshot.schema.names}
    values: dict[str, ResolvedSql | None] = {}
    if clause.assignments is None:  # UPDATE SET * / INSERT *
        for f in written.fields:
            src = sides.find(SOURCE, f.name)
            ident = identity.get(f.name)
            if ident is not None and not ident.allow_explicit_insert:
                src = None  # GENERATED ALWAYS: generated on insert, kept on update
            if src is not None:
                values[f.name] = resolve_sql(f"`{SOURCE}`.`{src}`", _canonical(sides), (SOURCE,), what=clause.label)
            elif clause.action == "update" and f.name.lower() in existing and f.name not in generated:
                values[f.name] = _keep(f.name, sides)
            else:
                if clause.action == "insert" and not f.nullable and f.name not in generated and f.name not in identity:
                    raise WriteRefusedError(
                        f"{clause.label}: column {f.name!r} is NOT NULL but the source has no column of that name "
                        f"(source columns: {', '.join(sides.columns[SOURCE])})"
                    )
                values[f.name] = None
        return ResolvedClause(clause, index, condition, values)
    target_alias = sides.aliases[TARGET].lower()
    named: dict[str, str] = {}
    for name, expr in clause.assignments.items():
        column = name.split(".", 1)[1] if "." in name and name.split(".", 1)[0].lower() == target_alias else name
        column = column.strip("`")
        if column in named:
            raise WriteRefusedError(f"{clause.label} sets column {column!r} twice")
        named[column] = expr
    if clause.action == "update":
        assigned = resolve_assignments(snapshot, named)  # unknown, identity ALWAYS, generated: refused as UPDATE does
    else:
        assigned = {}
        for column, expr in named.items():
            target = snapshot.schema.get(column)
            if target is None:
                raise WriteRefusedError(
                    f"{clause.label} inserts column {column!r}, which is not in the table ({', '.join(snapshot.schema.names)})"
                )
            ident = identity.get(target.name)
            if ident is not None and not ident.allow_explicit_insert:
                raise WriteRefusedError(f"identity column {target.name!r} is GENERATED ALWAYS: {clause.label} cannot insert it")
            assigned[target.name] = expr
    for f in written.fields:
        if f.name in assigned:
            what = f"{clause.label}, column {f.name!r}"
            values[f.name] = resolve_sql(assigned[f.name], sides, _allowed(clause.kind), what=what)
        elif clause.action == "update" and f.name.lower() in existing and f.name not in generated:
            values[f.name] = _keep(f.name, sides)
        else:
            if clause.action == "insert" and not f.nullable and f.name not in generated and f.name not in identity:
                raise WriteRefusedError(f"{clause.label}: column {f.name!r} is NOT NULL and the clause gives it no value")
            values[f.name] = None
    return ResolvedClause(clause, index, condition, values)


def _canonical(sides: Sides) -> Sides:
    """`sides` addressed by the canonical aliases (for references this module writes)."""
    return Sides(sides.columns)


def _keep(column: str, sides: Sides) -> ResolvedSql:
    """The target row's own value of `column` (an update leaves it as it is)."""
    return resolve_sql(f"`{TARGET}`.`{column}`", _canonical(sides), (TARGET,), what=f"column {column!r}")
