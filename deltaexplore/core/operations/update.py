"""UPDATE: set columns of the rows matching a predicate, with deletion vectors or rewrites.

The new values are SQL expressions over the old row (evaluated with polars, as constraints
are). With deletion vectors the old rows are deleted through a DV and the updated rows written
to new files; without, the touched files are rewritten. Updated rows go through the same rules
as inserted ones (types, NOT NULL, invariants, CHECK constraints, generated columns are
recomputed); identity columns keep their values and may only be assigned when explicit values
are allowed. With row tracking, updated rows keep their stable row id and get a new commit
version; with change data feed, `update_preimage`/`update_postimage` rows are written.
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.log.catalog import CatalogClient
from deltaexplore.core.operations.delete import (
    _condition,
    _matches,
    deletion_vector_update,
    plan_delete,
    predicate_text,
    write_deletion_vector_file,
)
from deltaexplore.core.operations.engine import UPDATE_METRICS, OperationRun, open_for_write
from deltaexplore.core.operations.rewrite import read_files_for_rewrite, refuse_copy_from_outside
from deltaexplore.core.protocol.schema import to_arrow_type
from deltaexplore.core.snapshot import Snapshot
from deltaexplore.core.table import Table
from deltaexplore.core.write.data_writer import DEFAULT_TARGET_FILE_SIZE, write_data_files
from deltaexplore.core.write.row_rules import enforce, evaluate_sql, generated_columns, identity_columns
from deltaexplore.errors import WriteRefusedError

__all__ = ["resolve_assignments", "update"]


def _assign(snapshot: Snapshot, rows: pa.Table, assignments: dict[str, str]) -> pa.Table:
    """`rows` (logical columns) with the assignments applied; generated columns recomputed."""
    schema = snapshot.schema
    out = rows
    for name, expr in assignments.items():
        f = schema.field(name)
        value = evaluate_sql(rows, expr, what=f"UPDATE value of column {name!r}")
        try:
            value = value.cast(to_arrow_type(f.type))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
            raise WriteRefusedError(f"UPDATE {name} = {expr}: the value has type {value.type}, expected {f.type}") from exc
        out = out.set_column(out.column_names.index(f.name), f.name, value)
    for name in generated_columns(snapshot.metadata):
        if name not in assignments:
            typ = out.schema.field(name).type
            out = out.set_column(out.column_names.index(name), name, pa.nulls(out.num_rows, typ))
    data, _ = enforce(out.select(schema.names), schema, snapshot.metadata, identity=False)
    for extra in out.column_names[len(schema.names) :]:
        data = data.append_column(extra, out.column(extra))
    return data


def resolve_assignments(snapshot: Snapshot, assignments: dict[str, Any]) -> dict[str, str]:
    """UPDATE's `column -> expression` keyed by the schema's own field names (names match
    case-insensitively, as everywhere in Delta).

    Raises:
        WriteRefusedError: no assignment, an unknown column, a GENERATED ALWAYS identity
            column or a generated column (its value always comes from its expression).
    """
    schema = snapshot.schema
    if not assignments:
        raise WriteRefusedError("UPDATE needs at least one column to set")
    out: dict[str, str] = {}
    for name, expr in assignments.items():
        f = schema.get(name)
        if f is None:
            raise WriteRefusedError(f"UPDATE sets column {name!r}, which is not in the table ({', '.join(schema.names)})")
        out[f.name] = str(expr)
    for name, ident in identity_columns(snapshot.metadata).items():
        if name in out and not ident.allow_explicit_insert:
            raise WriteRefusedError(f"identity column {name!r} is GENERATED ALWAYS: UPDATE cannot set it")
    for name in generated_columns(snapshot.metadata):
        if name in out:
            raise WriteRefusedError(f"column {name!r} is generated: UPDATE cannot set it")
    return out


def update(
    table: Table | str | os.PathLike[str],
    assignments: dict[str, str],
    predicate: Any = None,
    *,
    dry_run: bool = False,
    use_deletion_vectors: bool | None = None,
    target_file_size: int = DEFAULT_TARGET_FILE_SIZE,
    storage_options: dict[str, Any] | None = None,
    catalog: CatalogClient | None = None,
    max_retries: int = 10,
) -> pa.Table:
    """Set `column = <SQL expression>` (`assignments`) on the rows matching `predicate` (all
    rows when None), e.g. `update(t, {"price": "price * 1.1"}, "region = 'EU'")`.

    Returns:
        One row of metrics: operation, version (null for a dry run / no match), dry_run,
        num_updated_rows, num_removed_files, num_added_files, num_deletion_vectors_added,
        num_copied_rows, num_added_change_files.
    """
    t = open_for_write(table, storage_options, catalog)
    snapshot = t.snapshot()
    schema = snapshot.schema
    assignments = resolve_assignments(snapshot, assignments)
    plan = plan_delete(snapshot, predicate, use_deletion_vectors=use_deletion_vectors, allow_sql=True)
    config = snapshot.config
    md = snapshot.metadata
    tracked = [c for c in (config.materialized_row_id_column, config.materialized_row_commit_version_column) if c]
    tracked = tracked if config.row_tracking_enabled and len(tracked) == 2 else []
    op = OperationRun.start(
        t,
        "UPDATE",
        UPDATE_METRICS,
        read_snapshot=snapshot,
        parameters={"predicate": json.dumps([predicate_text(predicate, plan)]), "set": json.dumps(assignments)},
        dry_run=dry_run,
        metrics=dict.fromkeys(UPDATE_METRICS.names[3:], 0),
    )
    metrics, txn = op.metrics, op.txn
    if plan.predicate is not None:
        txn.read_files(predicate=plan.predicate)
    else:
        txn.read_whole_table()
    old_rows: list[pa.Table] = []
    new_rows: list[pa.Table] = []
    storage = t.storage
    keeps_partitions = not set(assignments) & set(md.partition_columns)  # rows stay in their partitions

    def write(rows: pa.Table, extra: list[str], **kw: Any) -> pa.Table:
        return op.written(
            write_data_files(
                storage,
                rows,
                schema=schema,
                partition_columns=md.partition_columns,
                mode=snapshot.column_mapping_mode,
                configuration=md.configuration,
                target_file_size=target_file_size,
                extra_columns=extra,
                existing_partitions=keeps_partitions,
                **kw,
            )
        )

    with op:
        if plan.use_deletion_vectors:
            positions: list[np.ndarray] = []
            keep: list[int] = []
            for i in range(plan.files.num_rows):
                idx, rows = _matches(plan, i, want_rows=True, extra_physical=tracked)
                if not len(idx):
                    continue
                keep.append(i)
                positions.append(idx)
                assert rows is not None
                if tracked:  # stable ids: the materialized one, else baseRowId + position
                    base = plan.files.column("baseRowId")[i].as_py()
                    fresh = pa.array(idx.astype(np.int64) + (base or 0), pa.int64()) if base is not None else None
                    ids = rows.column(tracked[0]).cast(pa.int64())
                    rows = rows.set_column(
                        rows.column_names.index(tracked[0]), tracked[0], pc.coalesce(ids, fresh) if fresh is not None else ids
                    )
                old_rows.append(rows)
            files = plan.files.take(pa.array(keep, pa.int64()))
            refuse_copy_from_outside(snapshot, files, "UPDATE")
            metrics["num_updated_rows"] = int(sum(len(p) for p in positions))
            if metrics["num_updated_rows"] and not dry_run:
                dv = deletion_vector_update(snapshot, files, positions)
                metrics.update(
                    num_removed_files=dv.removes.num_rows - dv.adds.num_rows, num_deletion_vectors_added=dv.adds.num_rows
                )
                olds = pa.concat_tables(old_rows)
                news = _assign(snapshot, olds, assignments)
                if tracked:  # updated rows: a new commit version
                    news = news.set_column(news.column_names.index(tracked[1]), tracked[1], pa.nulls(news.num_rows, pa.int64()))
                new_rows.append(news)
                if dv.dv_path is not None:
                    op.written_path(dv.dv_path)  # a lost commit must not leave it behind
                write_deletion_vector_file(storage, dv)
                txn.remove_files(dv.removes)
                txn.add_files(dv.adds)
                adds = write(news, tracked)
                txn.add_files(adds)
                metrics["num_added_files"] = adds.num_rows
        elif plan.files.num_rows:
            copied_parts: list[pa.Table] = []
            hit_files: list[int] = []
            extra: list[str] = []
            for i in range(plan.files.num_rows):  # file by file: only files with a match are rewritten
                rows, extra = read_files_for_rewrite(snapshot, plan.files.slice(i, 1))
                hit = _condition(plan, rows) if rows.num_rows else pa.array([], pa.bool_())
                if not rows.num_rows or not pc.any(hit).as_py():
                    continue
                hit_files.append(i)
                old_rows.append(rows.filter(hit))
                copied_parts.append(rows.filter(pc.invert(hit)))
            if hit_files:
                olds = pa.concat_tables(old_rows)
                news = _assign(snapshot, olds, assignments)
                if extra:  # updated rows: a new commit version
                    news = news.set_column(news.column_names.index(extra[1]), extra[1], pa.nulls(news.num_rows, pa.int64()))
                new_rows.append(news)
                copied = pa.concat_tables(copied_parts)
                files = plan.files.take(pa.array(hit_files, pa.int64()))
                refuse_copy_from_outside(snapshot, files, "UPDATE")
                metrics.update(num_updated_rows=olds.num_rows, num_removed_files=files.num_rows, num_copied_rows=copied.num_rows)
                if not dry_run:
                    adds = write(pa.concat_tables([copied, news.cast(copied.schema)]), extra)
                    txn.remove_files(files)
                    txn.add_files(adds)
                    metrics["num_added_files"] = adds.num_rows
        if dry_run or metrics["num_updated_rows"] == 0:
            return op.result()
        if plan.change_data_feed:
            names = schema.names
            pre = pa.concat_tables([r.select(names) for r in old_rows])
            post = pa.concat_tables([r.select(names) for r in new_rows]).cast(pre.schema)
            changes = pa.concat_tables([pre, post]).append_column(
                "_change_type", pa.array(["update_preimage"] * pre.num_rows + ["update_postimage"] * post.num_rows)
            )
            cdc = write(changes, [], kind="cdc")
            txn.add_cdc_files(cdc)
            metrics["num_added_change_files"] = cdc.num_rows
        return op.commit(max_retries=max_retries)
