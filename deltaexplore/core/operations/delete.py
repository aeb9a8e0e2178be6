"""DELETE: remove the rows matching a predicate, with deletion vectors or by rewriting files.

The protocol part is engine-neutral and shared with the Spark layer:

- `plan_delete` picks the candidate files (partition and stats pruning) and says whether whole
  files go (no predicate, or one on partition columns only) and whether deletion vectors are
  used (`delta.enableDeletionVectors`);
- `deletion_vector_update` turns the row indexes an engine found (physical positions, e.g.
  Spark's `_metadata.row_index`) into one DV file in the spec's format and the remove/add actions
  (a file whose every row is deleted is removed outright);
- `delete` runs it all locally with pyarrow. With change data feed on, deleted rows are also
  written to `_change_data/` files.
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.log.catalog import CatalogClient
from deltaexplore.core.operations.engine import DELETE_METRICS, OperationRun, open_for_write
from deltaexplore.core.operations.rewrite import read_files_for_rewrite, refuse_copy_from_outside
from deltaexplore.core.protocol.action_codec import file_actions_table
from deltaexplore.core.protocol.deletion_vectors import (
    DeletionVectorDescriptor,
    dv_file_bytes,
    encode_bitmap,
    read_deletion_vector,
    z85_encode,
)
from deltaexplore.core.protocol.predicates import Expr, PredicateError, parse_predicate
from deltaexplore.core.protocol.schema import to_arrow_type
from deltaexplore.core.scan.data_file import constant_column, read_data_file, resolve_data_path, row_counts
from deltaexplore.core.snapshot import Snapshot
from deltaexplore.core.table import Table
from deltaexplore.core.write.data_writer import DEFAULT_TARGET_FILE_SIZE, write_data_files
from deltaexplore.core.write.row_rules import evaluate_sql
from deltaexplore.errors import StorageError, WriteRefusedError
from deltaexplore.storage import Storage

__all__ = [
    "DeletePlan",
    "DeletionVectorUpdate",
    "delete",
    "deletion_vector_actions",
    "deletion_vector_update",
    "plan_delete",
    "predicate_text",
    "write_deletion_vector_file",
]


@dataclass
class DeletePlan:
    """Which files a DELETE looks at and how it changes them."""

    snapshot: Snapshot
    predicate: Expr | None
    files: pa.Table  # candidate add actions
    partition_values: pa.Table  # typed partition values of `files`
    whole_files: bool  # every candidate file goes entirely (no row-level work)
    use_deletion_vectors: bool
    change_data_feed: bool
    #: a SQL condition the predicate parser does not handle (evaluated with polars, no pruning)
    sql: str | None = None


def plan_delete(
    snapshot: Snapshot, predicate: Any = None, *, use_deletion_vectors: bool | None = None, allow_sql: bool = False
) -> DeletePlan:
    """Plan a DELETE of the rows matching `predicate` (all rows when None).

    With `allow_sql`, a condition the predicate parser does not handle (arithmetic, functions)
    is kept as `plan.sql` (every file is a candidate; the engine must evaluate it on the rows);
    without it such a condition raises `PredicateError`.

    Raises:
        WriteRefusedError: the table is append-only, or DVs were asked for but are not enabled.
    """
    config = snapshot.config
    if config.append_only and "appendOnly" in snapshot.protocol.writer_feature_set:
        raise WriteRefusedError(f"table {snapshot.table.uri} is append-only (delta.appendOnly=true): DELETE is not allowed")
    dv_on = config.deletion_vectors_enabled
    if use_deletion_vectors and not dv_on:
        raise WriteRefusedError(
            f"deletion vectors are not enabled on {snapshot.table.uri} (set delta.enableDeletionVectors = true)"
        )
    sql = None
    try:
        expr = parse_predicate(predicate)
    except PredicateError:
        if not allow_sql or not isinstance(predicate, str):
            raise
        expr, sql = None, predicate  # e.g. arithmetic: evaluated on the rows, every file read
    plan = snapshot.scan(where=expr)
    parts = {p.lower() for p in snapshot.partition_columns}
    whole = sql is None and (expr is None or {c.lower() for c in expr.columns()} <= parts)
    return DeletePlan(
        snapshot,
        expr,
        plan.files,
        plan.partition_values,
        whole,
        dv_on if use_deletion_vectors is None else bool(use_deletion_vectors),
        config.change_data_feed_enabled,
        sql,
    )


@dataclass
class DeletionVectorUpdate:
    """The outcome of deleting rows from files with deletion vectors.

    `dv_path`/`dv_bytes`: the new DV file (table-relative path) holding every new DV;
    `removes`: add rows of the files whose logical file changes (to pass to `remove_files`);
    `adds`: the same files re-added with their new DV (stats marked not tight);
    `deleted_rows`: rows newly deleted per file (aligned with the input files).
    """

    dv_path: str | None
    dv_bytes: bytes | None
    removes: pa.Table
    adds: pa.Table
    deleted_rows: np.ndarray


def _loosen(stats: str | None) -> str | None:
    if not stats:
        return stats
    try:
        obj = json.loads(stats)
    except (ValueError, RecursionError):
        return stats
    if not isinstance(obj, dict):
        return stats
    obj["tightBounds"] = False
    return json.dumps(obj, separators=(",", ":"))


def deletion_vector_update(snapshot: Snapshot, files: pa.Table, deleted: list[np.ndarray]) -> DeletionVectorUpdate:
    """DV actions for deleting `deleted[i]` (row indexes in the data file) from `files[i]`.

    Indexes already deleted by a file's current DV are ignored; a file left with no live row is
    removed without a new add.

    Raises:
        WriteRefusedError: a row index is outside its file.
    """
    storage = snapshot.storage
    n_files = files.num_rows
    counts = row_counts(snapshot, files)
    paths = files.column("path").to_pylist()
    current = files.column("deletionVector").to_pylist() if "deletionVector" in files.column_names else [None] * n_files
    bitmaps: list[bytes] = []
    descriptors: list[dict[str, Any] | None] = [None] * n_files
    newly = np.zeros(n_files, dtype=np.int64)
    dv_id = uuid.uuid4()
    for i in range(n_files):
        new = np.unique(np.asarray(deleted[i], dtype=np.uint64)) if len(deleted[i]) else np.zeros(0, np.uint64)
        if len(new) and int(new.max()) >= counts[i]:
            raise WriteRefusedError(f"row index {int(new.max())} is outside {paths[i]} ({counts[i]} rows)")
        dv = current[i]
        old = read_deletion_vector(storage, DeletionVectorDescriptor.from_dict(dv), data_file=paths[i]) if dv else new[:0]
        union = np.union1d(old, new)
        newly[i] = len(union) - len(old)
        if newly[i] == 0 or len(union) >= counts[i]:
            continue  # unchanged, or nothing left (the file is just removed)
        data = encode_bitmap(union)
        descriptors[i] = {
            "storageType": "u",
            "pathOrInlineDv": z85_encode(dv_id.bytes),
            "offset": None,
            "sizeInBytes": len(data),
            "cardinality": len(union),
        }
        bitmaps.append(data)
    dv_bytes = None
    if bitmaps:
        dv_bytes, offsets = dv_file_bytes(bitmaps)
        for d, off in zip((d for d in descriptors if d is not None), offsets):
            d["offset"] = off
    update = deletion_vector_actions(files, descriptors, newly, counts)
    update.dv_path = f"deletion_vector_{dv_id}.bin" if bitmaps else None
    update.dv_bytes = dv_bytes
    return update


def deletion_vector_actions(
    files: pa.Table, descriptors: list[dict[str, Any] | None], newly: np.ndarray, counts: np.ndarray
) -> DeletionVectorUpdate:
    """The remove/add actions giving `files[i]` its new DV `descriptors[i]` (an engine wrote the
    DV files). A file with no newly deleted row is left alone; one whose DV deletes all its
    `counts[i]` rows (or with no descriptor) is removed without a new add.

    Raises:
        WriteRefusedError: a DV deletes more rows than its file holds.
    """
    rows = files.to_pylist()
    adds: list[dict[str, Any]] = []
    removed: list[int] = []
    for i, row in enumerate(rows):
        if newly[i] == 0:
            continue
        removed.append(i)
        dv = descriptors[i]
        if dv is None or int(dv["cardinality"]) >= int(counts[i]):
            if dv is not None and int(dv["cardinality"]) > int(counts[i]):
                raise WriteRefusedError(f"a deletion vector of {row['path']} deletes {dv['cardinality']} rows of its {counts[i]}")
            continue
        add = dict(row)
        add["deletionVector"] = dv
        add["stats"] = _loosen(row.get("stats"))
        add["dataChange"] = True
        adds.append(add)
    removes = files.take(pa.array(removed, pa.int64())) if removed else files.slice(0, 0)
    return DeletionVectorUpdate(None, None, removes, file_actions_table("add", adds), np.asarray(newly, dtype=np.int64))


def write_deletion_vector_file(storage: Storage, update: DeletionVectorUpdate) -> None:
    """Create the update's DV file (never overwriting one)."""
    if update.dv_path is None or update.dv_bytes is None:
        return
    if not storage.put_if_absent(update.dv_path, update.dv_bytes):
        raise StorageError(f"deletion vector file {update.dv_path} already exists", path=update.dv_path)


def _matches(
    plan: DeletePlan, i: int, *, want_rows: bool, extra_physical: list[str] | None = None
) -> tuple[np.ndarray, pa.Table | None]:
    """Row indexes of file i that match the predicate (and, with `want_rows`, the rows, plus
    the `extra_physical` columns of the file when it has them)."""
    snapshot = plan.snapshot
    storage = snapshot.storage
    schema = snapshot.schema
    parts = set(snapshot.partition_columns)
    row = plan.files.slice(i, 1).to_pylist()[0]
    raw = row["path"]
    location = storage.location(resolve_data_path(storage, raw))
    dv = row.get("deletionVector")
    existing = read_deletion_vector(storage, DeletionVectorDescriptor.from_dict(dv), data_file=raw) if dv else None
    expr = plan.predicate
    wanted = set(expr.columns()) if expr is not None else set()
    all_columns = want_rows or plan.sql is not None
    fields = [f for f in schema.fields if f.name not in parts and (all_columns or f.name in {w.split(".")[0] for w in wanted})]
    cols, n, extras = read_data_file(
        storage,
        location,
        path=raw,
        read_fields=fields,
        mode=snapshot.column_mapping_mode,
        deleted_rows=existing,
        with_row_index=True,
        extra_physical=extra_physical or [],
    )
    arrays = {}
    for f in schema.fields:
        if f.name in parts:
            value = plan.partition_values.column(f.name).slice(i, 1).combine_chunks()
            arrays[f.name] = constant_column(value, to_arrow_type(f.type), n)
        elif f.name in cols:
            arrays[f.name] = cols[f.name]
    rows = pa.table(arrays)
    index = extras["__row_index"]
    mask = _condition(plan, rows)
    matched = index.filter(mask).to_numpy(zero_copy_only=False).astype(np.uint64)
    deleted_rows = None
    if want_rows:
        deleted_rows = rows.filter(mask).select([f.name for f in schema.fields])
        for name in extra_physical or []:
            col = extras.get(name)
            col = col.filter(mask) if col is not None else pa.nulls(len(matched), pa.int64())
            deleted_rows = deleted_rows.append_column(name, col)
    return matched, deleted_rows


def _condition(plan: DeletePlan, rows: pa.Table) -> pa.Array:
    """Per row: does the DELETE condition hold (null counts as no)?"""
    if plan.sql is not None:
        result = evaluate_sql(rows, plan.sql, what="DELETE condition")
        if not pa.types.is_boolean(result.type):
            raise WriteRefusedError(f"DELETE condition {plan.sql!r} is not boolean (it gives {result.type})")
        return pc.fill_null(result, False)
    if plan.predicate is None:
        return pa.array(np.ones(rows.num_rows, dtype=bool))
    types = {f.name: to_arrow_type(f.type) for f in plan.snapshot.schema.fields}
    return pc.fill_null(_eval(rows, plan.predicate, types), False)


def _eval(rows: pa.Table, expr: Expr, types: dict[str, pa.DataType]) -> pa.Array:
    import pyarrow.dataset as ds  # heavy (seconds on a loaded machine): loaded by the first row-level DELETE

    result = ds.dataset(rows).to_table(columns={"__m": expr.to_arrow(types)})
    return result.column("__m").combine_chunks()


def delete(
    table: Table | str | os.PathLike[str],
    predicate: Any = None,
    *,
    dry_run: bool = False,
    use_deletion_vectors: bool | None = None,
    target_file_size: int = DEFAULT_TARGET_FILE_SIZE,
    storage_options: dict[str, Any] | None = None,
    catalog: CatalogClient | None = None,
    max_retries: int = 10,
) -> pa.Table:
    """Delete the rows matching `predicate` (SQL-like text, DNF tuples or `Expr`; None: all).

    Returns:
        One row of metrics: version (null for a dry run / no-op), dry_run, num_deleted_rows,
        num_removed_files, num_added_files, num_deletion_vectors_added, num_copied_rows,
        num_added_change_files.
    """
    t = open_for_write(table, storage_options, catalog)
    snapshot = t.snapshot()
    plan = plan_delete(snapshot, predicate, use_deletion_vectors=use_deletion_vectors, allow_sql=True)
    op = OperationRun.start(
        t,
        "DELETE",
        DELETE_METRICS,
        read_snapshot=snapshot,
        parameters={"predicate": json.dumps([predicate_text(predicate, plan)])},
        dry_run=dry_run,
        metrics=dict.fromkeys(DELETE_METRICS.names[3:], 0),
    )
    with op:
        metrics, txn = op.metrics, op.txn
        if plan.predicate is not None:
            txn.read_files(predicate=plan.predicate)
        else:
            txn.read_whole_table()  # no predicate, or one we cannot prune with
        cdc_rows: list[pa.Table] = []
        storage = t.storage
        md = snapshot.metadata
        if plan.whole_files:
            counts = row_counts(snapshot, plan.files) if plan.files.num_rows else np.zeros(0, np.int64)
            live = counts - _dv_cardinality(plan.files)
            metrics.update(num_deleted_rows=int(live.sum()), num_removed_files=plan.files.num_rows)
            if plan.change_data_feed and plan.files.num_rows and not dry_run:
                refuse_copy_from_outside(snapshot, plan.files, "DELETE (change data feed)")
                rows, _ = read_files_for_rewrite(snapshot, plan.files)
                cdc_rows.append(rows.select(snapshot.schema.names))
            if not dry_run and plan.files.num_rows:
                txn.remove_files(plan.files)
        else:
            matched: list[np.ndarray] = []
            for i in range(plan.files.num_rows):
                idx, rows = _matches(plan, i, want_rows=plan.change_data_feed)
                matched.append(idx)
                if rows is not None and rows.num_rows:
                    cdc_rows.append(rows)
            hit = np.asarray([len(m) > 0 for m in matched], dtype=bool)
            files = plan.files.filter(pa.array(hit)) if len(hit) else plan.files
            hits = [m for m in matched if len(m)]
            metrics["num_deleted_rows"] = int(sum(len(m) for m in hits))
            if plan.change_data_feed:
                refuse_copy_from_outside(snapshot, files, "DELETE (change data feed)")
            if plan.use_deletion_vectors:
                update = deletion_vector_update(snapshot, files, hits)
                metrics.update(
                    num_removed_files=update.removes.num_rows - update.adds.num_rows,
                    num_deletion_vectors_added=update.adds.num_rows,
                )
                if not dry_run and update.removes.num_rows:
                    if update.dv_path is not None:
                        op.written_path(update.dv_path)  # a lost commit must not leave it behind
                    write_deletion_vector_file(storage, update)
                    txn.remove_files(update.removes)
                    txn.add_files(update.adds)
            elif files.num_rows:
                refuse_copy_from_outside(snapshot, files, "DELETE")
                rows, extra = read_files_for_rewrite(snapshot, files)
                gone = _condition(plan, rows)
                survivors = rows.filter(pc.invert(gone))
                metrics.update(num_removed_files=files.num_rows, num_copied_rows=survivors.num_rows)
                if not dry_run:
                    adds = op.written(
                        write_data_files(
                            storage,
                            survivors,
                            schema=snapshot.schema,
                            partition_columns=md.partition_columns,
                            mode=snapshot.column_mapping_mode,
                            configuration=md.configuration,
                            target_file_size=target_file_size,
                            extra_columns=extra,
                            existing_partitions=True,
                        )
                    )
                    metrics["num_added_files"] = adds.num_rows
                    txn.remove_files(files)
                    txn.add_files(adds)
        if dry_run or (metrics["num_deleted_rows"] == 0 and metrics["num_removed_files"] == 0):
            return op.result()
        if cdc_rows:
            changes = pa.concat_tables([r.select(snapshot.schema.names) for r in cdc_rows], promote_options="permissive")
            changes = changes.append_column("_change_type", pa.array(["delete"] * changes.num_rows, pa.string()))
            cdc = op.written(
                write_data_files(
                    storage,
                    changes,
                    schema=snapshot.schema,
                    partition_columns=md.partition_columns,
                    mode=snapshot.column_mapping_mode,
                    configuration=md.configuration,
                    kind="cdc",
                    existing_partitions=True,
                )
            )
            txn.add_cdc_files(cdc)
            metrics["num_added_change_files"] = cdc.num_rows
        return op.commit(max_retries=max_retries)


def predicate_text(predicate: Any, plan: DeletePlan) -> str:
    """The condition of a DELETE or UPDATE as `commitInfo.operationParameters` records it."""
    if isinstance(predicate, str):
        return predicate
    return repr(plan.predicate) if plan.predicate is not None else "true"


def _dv_cardinality(files: pa.Table) -> np.ndarray:
    if files.num_rows == 0:
        return np.zeros(0, np.int64)
    dv = files.column("deletionVector").combine_chunks()
    card = pc.if_else(pc.is_valid(dv), dv.field("cardinality"), pa.scalar(0, pa.int64())) if dv.null_count < len(dv) else None
    if card is None:
        return np.zeros(files.num_rows, np.int64)
    return pc.fill_null(card, 0).to_numpy(zero_copy_only=False).astype(np.int64)
