"""MERGE of Arrow data into a table, locally (pyarrow and polars).

    merge(uri, updates, on="source.id = target.id", clauses=[
        when_matched_update_all(condition="source.ts > target.ts"),
        when_not_matched_insert_all(),
        when_not_matched_by_source_delete(condition="target.expired"),
    ])

`merge_plan.plan_merge` resolves the clauses and picks the candidate target files (pruned by the
source keys' range when no NOT MATCHED BY SOURCE clause needs every row). Here the candidate rows
are read with their file and row position, joined with the source on the ON condition's
equalities (polars hash join; the other terms filter the pairs), and each row gets its clause:
the first matched / not-matched / not-matched-by-source clause whose condition holds. Updated and
inserted rows go through the rules of every write (types, NOT NULL, CHECK constraints, invariants,
generated and identity columns). With deletion vectors the updated and deleted target rows are
marked in DVs and the updated and inserted rows written to new files; without, only the files
holding an updated or deleted row are rewritten (the other rows copied, row ids kept). With
change data feed on, `update_preimage` / `update_postimage` / `delete` / `insert` rows go to
`_change_data/` (a MERGE that only inserts needs none: its new files are the inserts).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.log.catalog import CatalogClient
from deltaexplore.core.operations.delete import deletion_vector_update, write_deletion_vector_file
from deltaexplore.core.operations.engine import MERGE_METRICS, OperationRun, open_for_write, total_bytes
from deltaexplore.core.operations.merge_clauses import (
    MATCHED,
    NOT_MATCHED,
    NOT_MATCHED_BY_SOURCE,
    SOURCE,
    TARGET,
    MergeClause,
    ResolvedSql,
    flat_name,
)
from deltaexplore.core.operations.merge_plan import (
    MAX_PARTITION_VALUES,
    KeyStats,
    MergePlan,
    MergeScan,
    ResolvedClause,
    complete_metrics,
    deletion_vector_metrics,
    plan_merge,
)
from deltaexplore.core.operations.rewrite import refuse_copy_from_outside
from deltaexplore.core.protocol.deletion_vectors import DeletionVectorDescriptor, read_deletion_vector
from deltaexplore.core.protocol.schema import ArrayType, MapType, StructField, StructType, to_arrow_type
from deltaexplore.core.scan.data_file import constant_column, read_data_file, resolve_data_path
from deltaexplore.core.table import Table
from deltaexplore.core.write.data_writer import DEFAULT_TARGET_FILE_SIZE, write_data_files
from deltaexplore.core.write.row_rules import as_arrow_table, conform, enforce, evaluate_sql
from deltaexplore.errors import InvalidArgumentError, WriteRefusedError

__all__ = ["merge", "source_key_stats", "source_table"]

#: a MERGE whose ON condition has no source = target equality joins every pair: refused beyond this
MAX_CROSS_PAIRS = 50_000_000
_FILE, _POS, _ROW_ID, _ROW_CV = "__file", "__pos", "__row_id", "__row_commit_version"


def source_table(source: Any) -> pa.Table:
    """The MERGE source as an Arrow table: a pyarrow Table, RecordBatch(Reader), a polars or
    pandas DataFrame, anything with the Arrow C stream interface, or a dict of columns.

    Raises:
        InvalidArgumentError: anything else.
    """
    if isinstance(source, dict):
        try:
            return pa.table(source)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError) as exc:
            raise InvalidArgumentError(f"the MERGE source dict is not a table of columns: {exc}") from exc
    try:
        return as_arrow_table(source)
    except WriteRefusedError as exc:
        raise InvalidArgumentError(
            f"the MERGE source must be Arrow data (a pyarrow Table, RecordBatch(Reader), a polars or pandas DataFrame, "
            f"a dict of columns), got {type(source).__name__}"
        ) from exc


def merge(
    target: Table | str | os.PathLike[str],
    source: Any,
    on: str | list[str],
    clauses: list[MergeClause] | MergeClause,
    *,
    source_alias: str = SOURCE,
    target_alias: str = TARGET,
    schema_mode: str | None = None,
    dry_run: bool = False,
    use_deletion_vectors: bool | None = None,
    target_file_size: int = DEFAULT_TARGET_FILE_SIZE,
    storage_options: dict[str, Any] | None = None,
    catalog: CatalogClient | None = None,
    max_retries: int = 10,
) -> pa.Table:
    """Merge `source` rows into the table `target` (see the module docstring).

    Args:
        target: the table (a `Table`, path or URI).
        source: Arrow data (see `source_table`).
        on: the ON condition, SQL over `source.<column>` and `target.<column>` (the aliases are
            `source_alias` / `target_alias`; a column only one side has may be written bare), or
            a list of column names both sides have.
        clauses: WHEN clauses in order (`when_matched_update`, `when_matched_update_all`,
            `when_matched_delete`, `when_not_matched_insert`, `when_not_matched_insert_all`,
            `when_not_matched_by_source_update`, `when_not_matched_by_source_delete`); of the
            clauses of a kind, the first whose condition holds applies.
        schema_mode: 'merge': source columns the table lacks are added to it by `*` clauses.
        dry_run: plan and evaluate everything (conditions, values, constraints), write nothing.
        use_deletion_vectors: default as the table says (`delta.enableDeletionVectors`).
        max_retries: lost commit races tolerated (conflicting ones fail).

    Returns:
        One row of metrics (`MERGE_METRICS`): operation, version (null for a dry run or when
        nothing changed), dry_run, the row counts Delta records (inserted, updated, deleted,
        copied, ...), files and bytes added and removed, change files, deletion vectors.

    Raises:
        InvalidArgumentError: a source that is not Arrow data, clauses of the wrong type.
        WriteRefusedError: unknown columns, a condition or value that cannot be evaluated, a
            violated rule, a column an `INSERT *` needs missing from the source.
        MultipleMatchError: a target row matched several source rows and a WHEN MATCHED clause
            would change it.
        CommitConflictError: a concurrent commit conflicts.
    """
    t = open_for_write(target, storage_options, catalog)
    snapshot = t.snapshot()
    src = _flat(source_table(source), SOURCE)
    plan = plan_merge(
        snapshot,
        pa.schema([pa.field(n[len(SOURCE) + 1 :], src.schema.field(n).type) for n in src.column_names]),
        on,
        clauses,
        source_alias=source_alias,
        target_alias=target_alias,
        schema_mode=schema_mode,
        use_deletion_vectors=use_deletion_vectors,
    )
    _check_sql(plan, src.schema)
    source_ok = _mask(src, plan.condition.source_filter, "the ON condition")
    source_keys = [_values(src, k.source, "the ON condition") for k in plan.condition.keys]
    scan = plan.candidate_files(None if plan.reads_whole_table else source_key_stats(plan, source_keys, source_ok))
    op = OperationRun.start(
        t,
        "MERGE",
        MERGE_METRICS,
        read_snapshot=snapshot,
        parameters=plan.parameters(),
        dry_run=dry_run,
        metrics=dict.fromkeys(MERGE_METRICS.names[3:], 0),
    )
    metrics = op.metrics
    metrics.update(
        num_source_rows=src.num_rows,
        num_target_files_before_skipping=scan.total_files,
        num_target_files_after_skipping=scan.files.num_rows,
    )
    with op:
        txn = op.txn
        if scan.predicate is None:
            txn.read_whole_table()
        else:
            txn.read_files(paths=scan.files, predicate=scan.predicate)
        tracked = _tracked(snapshot)
        rows = _read_target(plan, scan, tracked=bool(tracked))
        si, ti = _join(plan, src, source_keys, source_ok, rows)
        changes = _decide(plan, src, rows, si, ti)
        metrics.update(changes.counts())
        md = plan.metadata or snapshot.metadata
        updated = _updated_rows(plan, src, rows, changes, tracked)
        inserted, identity_md = _inserted_rows(plan, src, changes, tracked)
        final_md = identity_md or plan.metadata
        touched: np.ndarray = np.unique(rows.column(_FILE).to_numpy()[changes.changed_targets])
        files = scan.files.take(pa.array(touched, pa.int64()))
        if not plan.use_deletion_vectors or plan.change_data_feed or changes.updates:
            refuse_copy_from_outside(snapshot, files, "MERGE")
        dv = None
        copied = None
        if plan.use_deletion_vectors:
            positions = _positions(rows, changes.changed_targets, touched)
            dv = deletion_vector_update(snapshot, files, positions)
            metrics.update(deletion_vector_metrics(dv))
        elif len(touched):
            keep = np.isin(rows.column(_FILE).to_numpy(), touched)
            keep[changes.changed_targets] = False
            copied = _logical(rows.filter(pa.array(keep)), md.schema, tracked, keep_versions=True)
            metrics.update(
                num_target_rows_copied=copied.num_rows,
                num_target_files_removed=len(touched),
                num_target_bytes_removed=total_bytes(files),
            )
        complete_metrics(metrics)
        if dry_run or (not len(changes.changed_targets) and not inserted.num_rows and final_md is None):
            return op.result()
        if final_md is not None:
            txn.update_metadata(final_md)
            txn.upgrade_protocol_for(final_md)
        schema = final_md.schema if final_md is not None else snapshot.schema

        def write(data: pa.Table, *, existing: bool, kind: str = "add") -> pa.Table:
            return op.written(
                write_data_files(
                    t.storage,
                    data,
                    schema=schema,
                    partition_columns=md.partition_columns,
                    mode=snapshot.column_mapping_mode,
                    configuration=md.configuration,
                    target_file_size=target_file_size,
                    extra_columns=tracked if kind == "add" else [],
                    existing_partitions=existing,
                    kind=kind,
                )
            )

        # rows keep partition values of the table's own files (kept as written, control
        # characters included) or bring new ones (a control character in one is refused)
        moved = _moves_partitions(plan)
        existing = [r for r in (copied, None if moved else updated) if r is not None and r.num_rows]
        new = [r for r in (updated if moved else None, inserted) if r is not None and r.num_rows]
        if not any(_control_characters(r, md.partition_columns) for r in new):
            existing, new = existing + new, []
        adds = [write(pa.concat_tables(group), existing=flag) for group, flag in ((existing, True), (new, False)) if group]
        if dv is not None and dv.removes.num_rows:
            if dv.dv_path is not None:
                op.written_path(dv.dv_path)  # a lost commit must not leave it behind
            write_deletion_vector_file(t.storage, dv)
            txn.remove_files(dv.removes)
            txn.add_files(dv.adds)
        elif len(touched):
            txn.remove_files(files)
        for a in adds:
            txn.add_files(a)
        metrics.update(
            num_target_files_added=sum(a.num_rows for a in adds), num_target_bytes_added=sum(total_bytes(a) for a in adds)
        )
        if plan.change_data_feed and len(changes.changed_targets):
            # new partition values were checked by the writes above
            cdc = write(_change_rows(rows, changes, updated, inserted, schema), existing=True, kind="cdc")
            txn.add_cdc_files(cdc)
            metrics["num_target_change_files_added"] = cdc.num_rows
        txn.metrics = plan.commit_metrics(metrics)
        return op.commit(max_retries=max_retries)


# -- reading -------------------------------------------------------------------------------------


def _flat(table: pa.Table, side: str) -> pa.Table:
    return table.rename_columns([flat_name(side, n) for n in table.column_names])


def _tracked(snapshot: Any) -> list[str]:
    """The materialized row id and commit version columns, when the table tracks rows."""
    config = snapshot.config
    names = [c for c in (config.materialized_row_id_column, config.materialized_row_commit_version_column) if c]
    return names if config.row_tracking_enabled and len(names) == 2 else []


def _read_target(plan: MergePlan, scan: MergeScan, *, tracked: bool) -> pa.Table:
    """The live rows of the candidate files: columns `target.<name>`, the file's index in
    `scan.files` and the row's position in it, and (row tracking) its stable id and version."""
    snapshot = plan.snapshot
    storage = snapshot.storage
    schema = snapshot.schema
    parts = set(snapshot.partition_columns)
    fields = [f for f in schema.fields if f.name not in parts]
    files = scan.files
    paths = files.column("path").to_pylist()
    dvs = files.column("deletionVector").to_pylist()
    base_ids = files.column("baseRowId").to_pylist()
    versions = files.column("defaultRowCommitVersion").to_pylist()
    extra = _tracked(snapshot) if tracked else []

    def read_one(i: int) -> pa.Table:
        raw = paths[i]
        dv = dvs[i]
        deleted = read_deletion_vector(storage, DeletionVectorDescriptor.from_dict(dv), data_file=raw) if dv else None
        cols, n, extras = read_data_file(
            storage,
            storage.location(resolve_data_path(storage, raw)),
            path=raw,
            read_fields=fields,
            mode=snapshot.column_mapping_mode,
            deleted_rows=deleted,
            extra_physical=extra,
            with_row_index=True,
        )
        arrays: dict[str, pa.Array] = {}
        for f in schema.fields:
            if f.name in parts:
                value = scan.partition_values.column(f.name).slice(i, 1).combine_chunks()
                arrays[flat_name(TARGET, f.name)] = constant_column(value, to_arrow_type(f.type), n)
            else:
                arrays[flat_name(TARGET, f.name)] = cols[f.name]
        index = extras["__row_index"].cast(pa.int64())
        arrays[_FILE] = pa.array(np.full(n, i, dtype=np.int64))
        arrays[_POS] = index
        if tracked:
            fresh = pc.add(index, base_ids[i]) if base_ids[i] is not None else pa.nulls(n, pa.int64())
            ids = extras.get(extra[0])
            arrays[_ROW_ID] = pc.coalesce(ids.cast(pa.int64()), fresh) if ids is not None else fresh
            cvs = extras.get(extra[1])
            version = constant_column(versions[i], pa.int64(), n)
            arrays[_ROW_CV] = pc.coalesce(cvs.cast(pa.int64()), version) if cvs is not None else version
        return pa.table(arrays)

    out_schema = pa.schema(
        [pa.field(flat_name(TARGET, f.name), to_arrow_type(f.type)) for f in schema.fields]
        + [pa.field(_FILE, pa.int64()), pa.field(_POS, pa.int64())]
        + ([pa.field(_ROW_ID, pa.int64()), pa.field(_ROW_CV, pa.int64())] if tracked else [])
    )
    n_files = files.num_rows
    if n_files <= 1:
        tables = [read_one(i) for i in range(n_files)]
    else:
        with ThreadPoolExecutor(max_workers=min(8, n_files)) as pool:
            tables = list(pool.map(read_one, range(n_files)))
    if not tables:
        return out_schema.empty_table()
    return pa.concat_tables([tb.select(out_schema.names).cast(out_schema) for tb in tables])


def source_key_stats(plan: MergePlan, keys: list[pa.Array], usable: np.ndarray) -> dict[int, KeyStats]:
    """Per key of the ON condition on a target column: the source values' count, range and
    (when few) distinct values, over the source rows that can match (`usable`)."""
    out: dict[int, KeyStats] = {}
    mask = pa.array(usable)
    for i, key in enumerate(plan.condition.keys):
        if key.target_column is None:
            continue
        values = keys[i].filter(mask).drop_null()
        if pa.types.is_dictionary(values.type):
            values = values.dictionary_decode()
        if len(values) == 0:
            out[i] = KeyStats(0)
            continue
        lo = hi = None
        try:
            bounds = pc.min_max(values)
            lo, hi = bounds["min"], bounds["max"]
        except (pa.ArrowNotImplementedError, pa.ArrowTypeError):
            pass
        distinct = pc.unique(values)
        out[i] = KeyStats(len(values), lo, hi, distinct if len(distinct) <= MAX_PARTITION_VALUES else None)
    return out


# -- evaluation ----------------------------------------------------------------------------------


def _frame(table: pa.Table, sql: ResolvedSql) -> pa.Table:
    """The columns of `table` that `sql` refers to (one placeholder when none, to keep the length)."""
    names = [flat_name(side, c) for side, c in sorted(sql.references)]
    if names:
        return table.select(names)
    return pa.table({"__row": pa.array(np.zeros(table.num_rows, dtype=np.int8))})


def _values(table: pa.Table, sql: ResolvedSql, what: str) -> pa.Array:
    """`sql` evaluated on each row of `table` (a plain column is taken as it is)."""
    if sql.column is not None:
        return table.column(flat_name(*sql.column)).combine_chunks()
    try:
        return evaluate_sql(_frame(table, sql), sql.polars, what=what)
    except WriteRefusedError as exc:
        cause = exc.__cause__ or exc
        raise WriteRefusedError(f"cannot evaluate {what} {sql.text!r}: {cause}") from exc


def _mask(table: pa.Table, sql: ResolvedSql | None, what: str) -> np.ndarray:
    """Per row: does the condition hold (null counts as no); all true without one."""
    if sql is None:
        return np.ones(table.num_rows, dtype=bool)
    result = _values(table, sql, what)
    if not (pa.types.is_boolean(result.type) or pa.types.is_null(result.type)):
        raise WriteRefusedError(f"{what} {sql.text!r} is not a condition (it gives {result.type}, not a boolean)")
    return pc.fill_null(result.cast(pa.bool_()), False).to_numpy(zero_copy_only=False).astype(bool)


def _check_sql(plan: MergePlan, source_schema: pa.Schema) -> None:
    """Evaluate every condition and value once on no rows: SQL polars cannot evaluate, or a
    condition that is not boolean, fails before any file is read."""
    target_schema = pa.schema([pa.field(flat_name(TARGET, f.name), to_arrow_type(f.type)) for f in plan.snapshot.schema.fields])
    empty = pa.schema(list(source_schema) + list(target_schema)).empty_table()
    cond = plan.condition
    for sql in (cond.target_filter, cond.source_filter, cond.residual):
        _mask(empty, sql, "the ON condition")
    for key in cond.keys:
        _values(empty, key.source, "the ON condition")
        _values(empty, key.target, "the ON condition")
    for c in plan.clauses:
        _mask(empty, c.condition, f"the condition of {c.clause.label}")
        for name, value in (c.values or {}).items():
            if value is not None:
                _values(empty, value, f"{c.clause.label}, column {name!r}")


def _join_key(values: pa.Array) -> Any:
    import polars as pl

    if pa.types.is_dictionary(values.type):
        values = values.dictionary_decode()
    if pa.types.is_timestamp(values.type) and values.type.tz is not None:
        values = values.cast(pa.timestamp(values.type.unit))  # compare as UTC wall time
    return pl.from_arrow(values)


def _join(
    plan: MergePlan, src: pa.Table, source_keys: list[pa.Array], source_ok: np.ndarray, rows: pa.Table
) -> tuple[np.ndarray, np.ndarray]:
    """The (source row, target row) pairs the ON condition matches."""
    import polars as pl

    cond = plan.condition
    target_ok = _mask(rows, cond.target_filter, "the ON condition")
    s_idx = np.flatnonzero(source_ok)
    t_idx = np.flatnonzero(target_ok)
    if not len(s_idx) or not len(t_idx):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    left: dict[str, Any] = {"__s": s_idx}
    right: dict[str, Any] = {"__t": t_idx}
    for i, key in enumerate(cond.keys):
        a = _join_key(source_keys[i]).gather(s_idx)
        b = _join_key(_values(rows, key.target, "the ON condition")).gather(t_idx)
        if a.dtype != b.dtype:
            try:
                common = pl.concat([a.head(0).to_frame("k"), b.head(0).to_frame("k")], how="vertical_relaxed")["k"].dtype
                a, b = a.cast(common), b.cast(common)
            except Exception as exc:  # polars raises several kinds for types it cannot unify
                raise WriteRefusedError(
                    f"the ON condition compares {key.source.text} ({a.dtype}) with {key.target.text} ({b.dtype}): "
                    "values of these types cannot be compared"
                ) from exc
        left[f"k{i}"], right[f"k{i}"] = a, b
    lf, rf = pl.DataFrame(left), pl.DataFrame(right)
    if cond.keys:
        pairs = lf.join(rf, on=[f"k{i}" for i in range(len(cond.keys))], how="inner")
    else:
        if len(s_idx) * len(t_idx) > MAX_CROSS_PAIRS:
            raise WriteRefusedError(
                f"the ON condition {cond.on.text!r} has no equality between a source and a target column: it would compare "
                f"{len(s_idx)} x {len(t_idx)} rows; add one (source.key = target.key)"
            )
        pairs = lf.join(rf, how="cross")
    si = pairs.get_column("__s").to_numpy().astype(np.int64)
    ti = pairs.get_column("__t").to_numpy().astype(np.int64)
    if cond.residual is not None and len(si):
        keep = _mask(_pairs(src, rows, si, ti, cond.residual), cond.residual, "the ON condition")
        si, ti = si[keep], ti[keep]
    return si, ti


def _pairs(
    src: pa.Table, rows: pa.Table, si: np.ndarray | None, ti: np.ndarray | None, sql: ResolvedSql | None = None
) -> pa.Table:
    """The source rows `si` beside the target rows `ti` (only the columns `sql` uses, when given)."""
    names = None if sql is None else {flat_name(side, c) for side, c in sql.references}
    cols: dict[str, pa.Array] = {}
    for table, idx in ((src, si), (rows, ti)):
        if idx is None:
            continue
        take = pa.array(idx, pa.int64())
        for name in table.column_names:
            if names is None or name in names:
                cols[name] = table.column(name).take(take)
    if not cols:
        n = len(si) if si is not None else len(ti)  # type: ignore[arg-type]
        cols["__row"] = pa.array(np.zeros(n, dtype=np.int8))
    return pa.table(cols)


class _Changes:
    """What the clauses do: per clause, the rows it applies to."""

    def __init__(self) -> None:
        #: (clause, source rows or None, target rows)
        self.updates: list[tuple[ResolvedClause, np.ndarray | None, np.ndarray]] = []
        self.deletes: list[tuple[ResolvedClause, np.ndarray]] = []
        self.inserts: list[tuple[ResolvedClause, np.ndarray]] = []

    @property
    def changed_targets(self) -> np.ndarray:
        """Target rows updated or deleted."""
        parts = [t for _, _, t in self.updates] + [t for _, t in self.deletes]
        return np.unique(np.concatenate(parts)) if parts else np.zeros(0, np.int64)

    def counts(self) -> dict[str, int]:
        def n(items: list[Any], kind: str) -> int:
            return int(sum(len(x[-1]) for x in items if x[0].kind == kind))

        return {
            "num_target_rows_inserted": int(sum(len(s) for _, s in self.inserts)),
            "num_target_rows_matched_updated": n(self.updates, MATCHED),
            "num_target_rows_not_matched_by_source_updated": n(self.updates, NOT_MATCHED_BY_SOURCE),
            "num_target_rows_matched_deleted": n(self.deletes, MATCHED),
            "num_target_rows_not_matched_by_source_deleted": n(self.deletes, NOT_MATCHED_BY_SOURCE),
        }


def _decide(plan: MergePlan, src: pa.Table, rows: pa.Table, si: np.ndarray, ti: np.ndarray) -> _Changes:
    """Which clause applies to each matched pair, unmatched target row and unmatched source row."""
    out = _Changes()
    t_matches = np.bincount(ti, minlength=rows.num_rows) if rows.num_rows else np.zeros(0, np.int64)
    many = np.flatnonzero(t_matches > 1)
    if len(many) and plan.of_kind(MATCHED):
        example = ""
        keys = [k.target.column for k in plan.condition.keys if k.target.column is not None]
        if keys:
            row = rows.slice(int(many[0]), 1).to_pylist()[0]
            example = " (e.g. the target row with " + ", ".join(f"{c}={row[flat_name(side, c)]!r}" for side, c in keys) + ")"
        plan.refuse_multiple_matches(len(many), example)
    matched = plan.of_kind(MATCHED)
    if matched and len(si):
        ms, mt = si, ti
        if len(many):  # only an unconditional DELETE: each target row once
            first = np.unique(ti, return_index=True)[1]
            ms, mt = si[first], ti[first]
        which = _which(plan, MATCHED, _pairs(src, rows, ms, mt, _case_refs(matched)), len(ms))
        for c in matched:
            hit = which == c.index
            if hit.any():
                if c.action == "update":
                    out.updates.append((c, ms[hit], mt[hit]))
                else:
                    out.deletes.append((c, mt[hit]))
    by_source = plan.of_kind(NOT_MATCHED_BY_SOURCE)
    if by_source:
        lonely = np.flatnonzero(t_matches == 0)
        which = _which(plan, NOT_MATCHED_BY_SOURCE, _pairs(src, rows, None, lonely, _case_refs(by_source)), len(lonely))
        for c in by_source:
            hit = which == c.index
            if hit.any():
                if c.action == "update":
                    out.updates.append((c, None, lonely[hit]))
                else:
                    out.deletes.append((c, lonely[hit]))
    inserts = plan.of_kind(NOT_MATCHED)
    if inserts:
        s_matches = np.bincount(si, minlength=src.num_rows) if src.num_rows else np.zeros(0, np.int64)
        lonely = np.flatnonzero(s_matches == 0)
        which = _which(plan, NOT_MATCHED, _pairs(src, rows, lonely, None, _case_refs(inserts)), len(lonely))
        for c in inserts:
            hit = which == c.index
            if hit.any():
                out.inserts.append((c, lonely[hit]))
    return out


def _case_refs(clauses: tuple[ResolvedClause, ...]) -> ResolvedSql:
    """A stand-in carrying the references of the clauses' conditions (for `_pairs`)."""
    refs = frozenset().union(*(c.condition.references for c in clauses if c.condition is not None))
    return ResolvedSql("", "", "", "", refs)


def _which(plan: MergePlan, kind: str, frame: pa.Table, n: int) -> np.ndarray:
    """Per row of `frame`: the index of the clause of `kind` that applies (-1: none)."""
    clauses = plan.of_kind(kind)
    if n == 0:
        return np.zeros(0, np.int64)
    if all(c.condition is None for c in clauses):
        return np.zeros(n, np.int64)  # the one unconditional clause
    out = np.full(n, -1, np.int64)
    for c in clauses:
        undecided = out < 0
        if not undecided.any():
            break
        if c.condition is None:
            out[undecided] = c.index
            break
        holds = _mask(frame, c.condition, f"the condition of {c.clause.label}")
        out[undecided & holds] = c.index
    return out


# -- new rows ------------------------------------------------------------------------------------


def _store(value: pa.Array, f: StructField, what: str) -> pa.Array:
    """A computed value as the column's type (nested types are left to `conform`)."""
    target = to_arrow_type(f.type)
    if isinstance(value, pa.ChunkedArray):
        value = value.combine_chunks()
    if value.type == target:
        return value
    if pa.types.is_null(value.type):
        return pa.nulls(len(value), target)
    if isinstance(f.type, (StructType, ArrayType, MapType)):
        return value
    try:
        if pa.types.is_timestamp(target) and pa.types.is_timestamp(value.type) and value.type.tz is None and target.tz:
            value = pc.assume_timezone(value, "UTC")
        return value.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise WriteRefusedError(f"{what}: the value has type {value.type}, the column is {f.type} ({exc})") from exc


def _project(plan: MergePlan, clause: ResolvedClause, frame: pa.Table) -> pa.Table:
    """The clause's values of every written column, evaluated on `frame`."""
    cols: dict[str, pa.Array] = {}
    assert clause.values is not None
    for f in plan.schema.fields:
        value = clause.values.get(f.name)
        what = f"{clause.clause.label}, column {f.name!r}"
        raw = pa.nulls(frame.num_rows, to_arrow_type(f.type)) if value is None else _values(frame, value, what)
        cols[f.name] = _store(raw, f, what)
    return pa.table(cols)


def _updated_rows(plan: MergePlan, src: pa.Table, rows: pa.Table, changes: _Changes, tracked: list[str]) -> pa.Table | None:
    """The updated rows (written schema; stable row ids kept, commit versions new), rules checked."""
    if not changes.updates:
        return None
    md = plan.metadata or plan.snapshot.metadata
    parts = []
    for clause, si, ti in changes.updates:
        frame = _pairs(src, rows, si, ti) if si is not None else _pairs(src, rows, None, ti)
        projected = _project(plan, clause, frame)
        if tracked:
            projected = projected.append_column(tracked[0], rows.column(_ROW_ID).take(pa.array(ti, pa.int64())))
            projected = projected.append_column(tracked[1], pa.nulls(len(ti), pa.int64()))
        parts.append(projected)
    news = pa.concat_tables(parts)
    conformed, schema = conform(news.select(plan.schema.names), md)
    data, _ = enforce(conformed, schema, md, identity=False)
    for name in tracked:
        data = data.append_column(name, news.column(name))
    return data


def _inserted_rows(plan: MergePlan, src: pa.Table, changes: _Changes, tracked: list[str]) -> tuple[pa.Table, Any]:
    """The inserted rows (written schema) with generated and identity values, rules checked; and
    the metadata with moved identity high-water marks (None when none moved)."""
    md = plan.metadata or plan.snapshot.metadata
    parts = [_project(plan, clause, _pairs(src, src, s, None)) for clause, s in changes.inserts]
    news = pa.concat_tables(parts) if parts else _empty(plan)
    conformed, schema = conform(news, md)
    data, new_md = enforce(conformed, schema, md, identity=True) if news.num_rows else (conformed, None)
    for name in tracked:
        data = data.append_column(name, pa.nulls(data.num_rows, pa.int64()))
    return data, new_md


def _empty(plan: MergePlan) -> pa.Table:
    return pa.schema([pa.field(f.name, to_arrow_type(f.type)) for f in plan.schema.fields]).empty_table()


def _logical(rows: pa.Table, schema: StructType, tracked: list[str], *, keep_versions: bool) -> pa.Table:
    """Target rows (`target.<name>` columns) as rows of the written schema (new columns null),
    with their stable row ids (and commit versions, when kept) in the materialized columns."""
    cols: dict[str, pa.Array] = {}
    for f in schema.fields:
        name = flat_name(TARGET, f.name)
        typ = to_arrow_type(f.type)
        cols[f.name] = rows.column(name) if name in rows.column_names else pa.nulls(rows.num_rows, typ)
    out = pa.table(cols)
    out = out.cast(pa.schema([pa.field(f.name, to_arrow_type(f.type)) for f in schema.fields]))
    if tracked:
        out = out.append_column(tracked[0], rows.column(_ROW_ID))
        cv = rows.column(_ROW_CV) if keep_versions else pa.nulls(rows.num_rows, pa.int64())
        out = out.append_column(tracked[1], cv)
    return out


def _positions(rows: pa.Table, changed: np.ndarray, touched: np.ndarray) -> list[np.ndarray]:
    """Per touched file (in order), the positions of its changed rows."""
    file_of = rows.column(_FILE).to_numpy()[changed]
    pos = rows.column(_POS).to_numpy()[changed].astype(np.uint64)
    order = np.argsort(file_of, kind="stable")
    file_of, pos = file_of[order], pos[order]
    starts = np.searchsorted(file_of, touched, side="left")
    ends = np.searchsorted(file_of, touched, side="right")
    return [pos[a:b] for a, b in zip(starts, ends)]


def _moves_partitions(plan: MergePlan) -> bool:
    """Whether an update clause may give a row another partition value."""
    parts = plan.snapshot.partition_columns
    for c in plan.clauses:
        if c.action == "update" and c.values is not None:
            for p in parts:
                v = c.values.get(p)
                if v is None or v.column != (TARGET, p):
                    return True
    return False


def _control_characters(rows: pa.Table, partition_columns: tuple[str, ...] | list[str]) -> bool:
    """Whether a string partition value of `rows` holds a control character."""
    for name in partition_columns:
        col = rows.column(name)
        if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
            if pc.any(pc.match_substring_regex(col, "[\\x00-\\x1f\\x7f]")).as_py():
                return True
    return False


def _change_rows(rows: pa.Table, changes: _Changes, updated: pa.Table | None, inserted: pa.Table, schema: StructType) -> pa.Table:
    """The change data of the MERGE: pre- and post-images, deletes and inserts."""
    names = schema.names
    arrow = pa.schema([pa.field(f.name, to_arrow_type(f.type)) for f in schema.fields])
    pieces: list[tuple[pa.Table, str]] = []
    if changes.updates:
        pre_idx = np.concatenate([t for _, _, t in changes.updates])
        pieces.append((_logical(rows.take(pa.array(pre_idx, pa.int64())), schema, [], keep_versions=True), "update_preimage"))
        assert updated is not None
        pieces.append((updated.select(names), "update_postimage"))
    for _, t in changes.deletes:
        pieces.append((_logical(rows.take(pa.array(t, pa.int64())), schema, [], keep_versions=True), "delete"))
    if inserted.num_rows:
        pieces.append((inserted.select(names), "insert"))
    tables = [
        p.select(names).cast(arrow).append_column("_change_type", pa.array([kind] * p.num_rows, pa.string()))
        for p, kind in pieces
    ]
    return pa.concat_tables(tables)
