"""MERGE on Spark: the core plans (`core.operations.plan_merge`), Spark joins and decides, the
core commits.

    dxs.merge(spark, "path/to/table", updates_df, on="source.id = target.id", clauses=[
        when_matched_update_all(condition="source.ts > target.ts"),
        when_not_matched_insert_all(),
        when_not_matched_by_source_delete(),
    ])

The plan resolves every condition and value to one Spark SQL text over the source and target
aliased ``source`` and ``target``. Spark then:

1. computes the source keys' range (and, on partition columns, their values) in one
   aggregate, which the plan turns into the target files that can match;
2. joins the candidate target rows (with their file id and row index) to the source on the ON
   condition — inner, or outer on the side whose unmatched rows a clause acts on — and gives
   every row its clause (`MergePlan.case_sql`: the first of its kind whose condition holds);
   a target row matched twice where Delta forbids it fails with `MultipleMatchError`;
3. deletes the updated and deleted target rows through deletion vectors written by the
   executors (`deletion_vectors.write_deletion_vectors`: positions never reach the driver), or
   rewrites the files that hold one (the other rows copied);
4. writes the updated and inserted rows, and with the change data feed on the pre- and
   post-images, deletes and inserts (`writer.write_files`: the table's rules checked per row).

The counts of every clause come back in one small aggregate. Metrics and `commitInfo` carry
Delta's MERGE names (`MERGE_METRICS`, `MergePlan.commit_metrics`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.operations import (
    MERGE_METRICS,
    DeletionVectorUpdate,
    KeyStats,
    MergePlan,
    OperationRun,
    complete_metrics,
    deletion_vector_metrics,
    open_for_write,
    plan_merge,
    refuse_copy_from_outside,
    total_bytes,
)
from deltaexplore.core.operations.merge_clauses import MATCHED, NOT_MATCHED, NOT_MATCHED_BY_SOURCE, MergeClause
from deltaexplore.core.operations.merge_plan import MAX_PARTITION_VALUES
from deltaexplore.core.scan.data_file import row_counts
from deltaexplore.core.scan.stats import num_records
from deltaexplore.core.write.data_writer import DEFAULT_TARGET_FILE_SIZE
from deltaexplore.core.write.row_rules import identity_columns
from deltaexplore.errors import WriteRefusedError
from deltaexplore.spark.deletion_vectors import matched_counts, write_deletion_vectors
from deltaexplore.spark.dml import write_change_data
from deltaexplore.spark.file_values import FILE_COL, ROW_COL
from deltaexplore.spark.jobs import progress
from deltaexplore.spark.reader import scan_files
from deltaexplore.spark.session import spark_errors
from deltaexplore.spark.types import spark_type
from deltaexplore.spark.writer import write_files

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = ["merge"]

_SRC, _TGT = "__dx_in_source", "__dx_in_target"
_KIND, _CLAUSE = "__dx_kind", "__dx_clause"


def merge(
    spark: SparkSession,
    target: Any,
    source: DataFrame,
    on: str | list[str],
    clauses: list[MergeClause] | MergeClause,
    *,
    source_alias: str = "source",
    target_alias: str = "target",
    schema_mode: str | None = None,
    dry_run: bool = False,
    use_deletion_vectors: bool | None = None,
    target_file_size: int | None = None,
    storage_options: dict[str, Any] | None = None,
    max_retries: int = 10,
) -> pa.Table:
    """Merge the rows of the DataFrame `source` into the table `target` (see the module docstring).

    Args:
        target: the table (path, URI or `Table`).
        source: a Spark DataFrame.
        on: the ON condition, Spark SQL over ``source.<column>`` and ``target.<column>`` (the
            aliases are `source_alias` / `target_alias`; a column only one side has may be bare),
            or a list of column names both sides have.
        clauses: WHEN clauses in order, from `deltaexplore.core.operations` (also exported here):
            `when_matched_update(set, condition)`, `when_matched_update_all`,
            `when_matched_delete`, `when_not_matched_insert(values, condition)`,
            `when_not_matched_insert_all`, `when_not_matched_by_source_update`,
            `when_not_matched_by_source_delete`.
        schema_mode: 'merge': source columns the table lacks are added by `*` clauses.
        dry_run: plan, join and count; nothing is written.
        use_deletion_vectors: default as the table says (`delta.enableDeletionVectors`).

    Returns:
        One row of metrics (`MERGE_METRICS`), as the local `core.operations.merge` returns.

    Raises:
        WriteRefusedError: unknown columns, a condition or value Spark cannot analyse, a
            violated rule, identity columns or row tracking (not supported on Spark yet).
        MultipleMatchError: a target row matched several source rows and a WHEN MATCHED
            clause would change it.
        CommitConflictError: a concurrent commit conflicts.
        SparkError: a Spark job failed (with deletion vectors this runs with only pyspark
            and pyarrow on the executors; writing the new rows needs deltaexplore there).
    """
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import to_arrow_schema

    table = open_for_write(target, storage_options)
    snapshot = table.snapshot()
    with spark_errors("reading the MERGE source schema", path=table.uri):
        source_schema = to_arrow_schema(source.schema, timezone="UTC")
    plan = plan_merge(
        snapshot,
        source_schema,
        on,
        clauses,
        source_alias=source_alias,
        target_alias=target_alias,
        schema_mode=schema_mode,
        use_deletion_vectors=use_deletion_vectors,
    )
    if identity_columns(plan.metadata or snapshot.metadata):
        raise WriteRefusedError(
            f"table {table.uri} has identity columns: MERGE on Spark cannot assign them consistently across tasks yet "
            "(use deltaexplore.core.operations.merge)"
        )
    if snapshot.config.row_tracking_enabled and plan.modifies_target:
        raise WriteRefusedError(
            f"MERGE on Spark would rewrite rows of {table.uri}, which tracks row ids (delta.enableRowTracking): "
            "not supported on Spark yet; use deltaexplore.core.operations.merge"
        )
    kw: dict[str, Any] = {"storage_options": storage_options}
    op = OperationRun.start(
        table,
        "MERGE",
        MERGE_METRICS,
        read_snapshot=snapshot,
        parameters=plan.parameters(),
        dry_run=dry_run,
        metrics=dict.fromkeys(MERGE_METRICS.names[3:], 0),
    )
    metrics, txn = op.metrics, op.txn
    schema = plan.schema
    md = plan.metadata or snapshot.metadata
    target_size = target_file_size or DEFAULT_TARGET_FILE_SIZE
    with op:
        with progress(spark, f"deltaexplore MERGE {table.uri}"), spark_errors("MERGE", path=table.uri):
            src = source.alias("source")
            stats, stats_rows = (None, None) if plan.reads_whole_table else _key_stats(src, plan)
            scan = plan.candidate_files(stats)
            metrics.update(num_target_files_before_skipping=scan.total_files, num_target_files_after_skipping=scan.files.num_rows)
            if scan.predicate is None:
                txn.read_whole_table()
            else:
                txn.read_files(paths=scan.files, predicate=scan.predicate)
            rows = scan_files(
                spark,
                snapshot,
                scan.files,
                list(snapshot.schema.fields),
                partition_values=scan.partition_values,
                with_ids=True,
                **kw,
            )
            tgt = rows.withColumn(_TGT, F.lit(True)).alias("target")
            decided = _decide(plan, src.withColumn(_SRC, F.lit(True)), tgt)
            _ = decided.schema  # analysed now: a bad condition or value fails before any job
            decided = decided.persist()
            try:
                counts = _clause_counts(plan, decided)
                if counts.pop("matched_pairs") > counts.pop("matched_targets"):
                    _refuse_multiple_matches(plan, decided)
                metrics.update(counts)
                metrics["num_source_rows"] = stats_rows if stats_rows is not None else _count(source)
                changed = decided.where(F.col(_TGT) & F.col("__dx_action").isin("update", "delete")).select(FILE_COL, ROW_COL)
                n_changed = counts["num_target_rows_matched_updated"] + counts["num_target_rows_matched_deleted"]
                n_changed += counts["num_target_rows_not_matched_by_source_updated"]
                n_changed += counts["num_target_rows_not_matched_by_source_deleted"]
                n_inserted = counts["num_target_rows_inserted"]
                touched_ids: list[int] = []
                copied_frame = None
                written_dvs = None
                if n_changed and plan.use_deletion_vectors:
                    if dry_run:  # what the DVs would do, nothing written
                        metrics.update(deletion_vector_metrics(_planned_dvs(snapshot, scan.files, changed)))
                    else:
                        written_dvs = write_deletion_vectors(
                            spark, changed, snapshot, scan.files, storage_options=storage_options
                        )
                        for path in written_dvs.dv_files:
                            op.written_path(path)
                        metrics.update(deletion_vector_metrics(written_dvs.update))
                elif n_changed:
                    touched_ids = sorted(int(r[0]) for r in changed.select(FILE_COL).distinct().collect())
                    touched = scan.files.take(pa.array(touched_ids, pa.int64()))
                    refuse_copy_from_outside(snapshot, touched, "MERGE")
                    copied_frame = rows.where(F.col(FILE_COL).isin(touched_ids)).join(changed, [FILE_COL, ROW_COL], "left_anti")
                    metrics.update(num_target_files_removed=len(touched_ids), num_target_bytes_removed=total_bytes(touched))
                complete_metrics(metrics)
                if dry_run or (not n_changed and not n_inserted and plan.metadata is None):
                    if copied_frame is not None:
                        metrics["num_target_rows_copied"] = _count(copied_frame)
                        complete_metrics(metrics)
                    return op.result()
                if plan.metadata is not None:
                    txn.update_metadata(plan.metadata)
                    txn.upgrade_protocol_for(plan.metadata)
                updated = _new_rows(plan, decided, "update") if _has(plan, "update") else None
                inserted = _new_rows(plan, decided, "insert") if _has(plan, "insert") else None
                outputs = [f for f in (updated, inserted) if f is not None]
                if copied_frame is not None:
                    outputs.append(copied_frame.select(*_logical(schema, copied_frame.columns)))
                adds = None
                if outputs:
                    union = outputs[0]
                    for other in outputs[1:]:
                        union = union.unionByName(other)
                    adds = op.written(
                        write_files(spark, union, table, md, snapshot.protocol, target_size=target_size, identity=False, **kw)
                    )
                if written_dvs is not None:
                    txn.remove_files(written_dvs.update.removes)
                    txn.add_files(written_dvs.update.adds)
                elif touched_ids:
                    txn.remove_files(scan.files.take(pa.array(touched_ids, pa.int64())))
                if adds is not None and adds.num_rows:
                    txn.add_files(adds)
                    metrics.update(num_target_files_added=adds.num_rows, num_target_bytes_added=total_bytes(adds))
                    if copied_frame is not None:
                        written_rows = int(pc.sum(num_records(adds)).as_py() or 0)
                        metrics["num_target_rows_copied"] = written_rows - metrics["num_target_rows_updated"] - n_inserted
                complete_metrics(metrics)
                if plan.change_data_feed and n_changed:
                    frames = _change_frames(plan, decided, updated, inserted)
                    metrics["num_target_change_files_added"] = write_change_data(spark, frames, op, snapshot, metadata=md, **kw)
                txn.metrics = plan.commit_metrics(metrics)
            finally:
                decided.unpersist()
        return op.commit(max_retries=max_retries)


def _planned_dvs(snapshot: Any, files: pa.Table, changed: DataFrame) -> DeletionVectorUpdate:
    """The remove/add shape of the DVs a MERGE would write (per-file counts only)."""
    per_file = matched_counts(changed.dropDuplicates([FILE_COL, ROW_COL]), files.num_rows)
    hit = np.flatnonzero(per_file)
    touched = files.take(pa.array(hit, pa.int64()))
    cards = np.array([(d or {}).get("cardinality", 0) or 0 for d in touched.column("deletionVector").to_pylist()], np.int64)
    kept = row_counts(snapshot, touched) - cards - per_file[hit]
    return DeletionVectorUpdate(None, None, touched, touched.filter(pa.array(kept > 0)), per_file)


def _count(frame: DataFrame) -> int:
    return int(frame.count())


def _has(plan: MergePlan, action: str) -> bool:
    return any(c.action == action for c in plan.clauses)


def _key_stats(src: DataFrame, plan: MergePlan) -> tuple[dict[int, KeyStats], int]:
    """Per ON key, the source values (where the ON's source-only terms hold), and the source's
    row count: one aggregate."""
    from pyspark.sql import functions as F

    keys = plan.condition.keys
    ok = F.expr(plan.condition.source_filter.sql) if plan.condition.source_filter is not None else F.lit(True)
    if not keys:
        return {}, _count(src)
    parts = {p.lower() for p in plan.snapshot.partition_columns}
    aggs = [F.count(F.lit(1)).alias("rows")]
    for i, key in enumerate(keys):
        value = F.when(ok, F.expr(key.source.sql))
        aggs += [F.count(value).alias(f"n{i}"), F.min(value).alias(f"lo{i}"), F.max(value).alias(f"hi{i}")]
        if key.target_column is not None and key.target_column.lower() in parts:
            aggs.append(F.slice(F.collect_set(value), 1, MAX_PARTITION_VALUES + 1).alias(f"v{i}"))
    row = src.agg(*aggs).toArrow()
    out = {}
    for i in range(len(keys)):
        values = row.column(f"v{i}")[0].values if f"v{i}" in row.column_names else None
        if values is not None and len(values) > MAX_PARTITION_VALUES:
            values = None
        out[i] = KeyStats(int(row.column(f"n{i}")[0].as_py() or 0), row.column(f"lo{i}")[0], row.column(f"hi{i}")[0], values)
    return out, int(row.column("rows")[0].as_py() or 0)


def _decide(plan: MergePlan, src: DataFrame, tgt: DataFrame) -> DataFrame:
    """The join with `__dx_kind` (matched / not_matched / not_matched_by_source), `__dx_clause`
    (the clause of that kind that applies, -1: none) and `__dx_action`."""
    from pyspark.sql import functions as F

    inserts, by_source = bool(plan.of_kind(NOT_MATCHED)), bool(plan.of_kind(NOT_MATCHED_BY_SOURCE))
    how = "full" if inserts and by_source else "left" if inserts else "right" if by_source else "inner"
    joined = src.join(tgt, on=F.expr(plan.condition.on.sql), how=how)
    in_src, in_tgt = F.col(_SRC).isNotNull(), F.col(_TGT).isNotNull()
    kind = F.when(in_src & in_tgt, F.lit(MATCHED)).when(in_src, F.lit(NOT_MATCHED)).otherwise(F.lit(NOT_MATCHED_BY_SOURCE))
    clause: Column = F.lit(-1)
    action: Column = F.lit("none")
    for k in (MATCHED, NOT_MATCHED, NOT_MATCHED_BY_SOURCE):
        case = plan.case_sql(k)
        if case is None:
            continue
        which = F.expr(case)
        clause = F.when(kind == k, which).otherwise(clause)
        for c in plan.of_kind(k):
            action = F.when((kind == k) & (which == c.index), F.lit(c.action)).otherwise(action)
    return (
        joined.select("*", kind.alias(_KIND), clause.alias(_CLAUSE), action.alias("__dx_action"))
        .withColumn(_SRC, F.coalesce(F.col(_SRC), F.lit(False)))
        .withColumn(_TGT, F.coalesce(F.col(_TGT), F.lit(False)))
    )


def _refuse_multiple_matches(plan: MergePlan, decided: DataFrame) -> None:
    """MultipleMatchError when a target row matched several source rows and Delta forbids it
    (the exact number of such rows, counted only when some matched twice)."""
    from pyspark.sql import functions as F

    if plan.multiple_matches_allowed:
        return
    many = (
        decided.where(F.col(_KIND) == MATCHED)
        .groupBy(FILE_COL, ROW_COL)
        .count()
        .where(F.col("count") > 1)
        .agg(F.count(F.lit(1)).alias("n"))
        .collect()
    )
    plan.refuse_multiple_matches(int(many[0]["n"]) if many else 0)


def _clause_counts(plan: MergePlan, decided: DataFrame) -> dict[str, int]:
    """Rows each kind of clause updated, deleted and inserted, and the matched (source, target)
    pairs and target rows (more pairs than rows: a target row matched twice): one aggregate."""
    from pyspark.sql import functions as F

    def n(kind: str, action: str) -> Column:
        hit = (F.col(_KIND) == kind) & (F.col("__dx_action") == action)
        if kind == MATCHED and plan.multiple_matches_allowed:
            # a target row matched by several source rows is deleted once
            return F.count_distinct(F.when(hit, F.struct(F.col(FILE_COL), F.col(ROW_COL))))
        return F.sum(F.when(hit, 1).otherwise(0))

    matched = F.col(_KIND) == MATCHED
    row = decided.agg(
        F.count(F.when(matched, 1)).alias("matched_pairs"),
        F.count_distinct(F.when(matched, F.struct(F.col(FILE_COL), F.col(ROW_COL)))).alias("matched_targets"),
        n(MATCHED, "update").alias("num_target_rows_matched_updated"),
        n(MATCHED, "delete").alias("num_target_rows_matched_deleted"),
        n(NOT_MATCHED_BY_SOURCE, "update").alias("num_target_rows_not_matched_by_source_updated"),
        n(NOT_MATCHED_BY_SOURCE, "delete").alias("num_target_rows_not_matched_by_source_deleted"),
        n(NOT_MATCHED, "insert").alias("num_target_rows_inserted"),
    ).collect()[0]
    return {k: int(row[k] or 0) for k in row.asDict()}


def _logical(schema: Any, columns: list[str]) -> list[Column]:
    """The written schema's columns from a frame with `columns` (columns new to the schema null),
    cast to their types."""
    from pyspark.sql import functions as F

    have = {c.lower() for c in columns}
    return [
        (F.col(f"`{f.name}`") if f.name.lower() in have else F.lit(None)).cast(spark_type(f.type)).alias(f.name)
        for f in schema.fields
    ]


def _target_values(plan: MergePlan, frame: DataFrame) -> DataFrame:
    """Target rows of the join as rows of the written schema (columns new to it null)."""
    from pyspark.sql import functions as F

    have = {n.lower() for n in plan.snapshot.schema.names}
    cols = [
        (F.col(f"target.`{f.name}`") if f.name.lower() in have else F.lit(None)).cast(spark_type(f.type)).alias(f.name)
        for f in plan.schema.fields
    ]
    return frame.select(*cols)


def _new_rows(plan: MergePlan, decided: DataFrame, action: str) -> DataFrame:
    """The rows the `action` ('update' or 'insert') clauses write: each column the value of the
    clause that applies (None: null, computed by the write tasks for generated columns)."""
    from pyspark.sql import functions as F

    chosen = [c for c in plan.clauses if c.action == action]
    frame = decided.where(F.col("__dx_action") == action)
    cols = []
    for f in plan.schema.fields:
        value: Column = F.lit(None)
        for c in chosen:
            assert c.values is not None
            v = c.values.get(f.name)
            expr = F.lit(None) if v is None else F.expr(v.sql)
            value = F.when((F.col(_KIND) == c.kind) & (F.col(_CLAUSE) == c.index), expr).otherwise(value)
        cols.append(value.cast(spark_type(f.type)).alias(f.name))
    return frame.select(*cols)


def _change_frames(
    plan: MergePlan, decided: DataFrame, updated: DataFrame | None, inserted: DataFrame | None
) -> list[tuple[DataFrame, str]]:
    """The MERGE's change data: pre- and post-images, deletes, inserts."""
    from pyspark.sql import functions as F

    frames: list[tuple[DataFrame, str]] = []
    if updated is not None:
        frames.append((_target_values(plan, decided.where(F.col("__dx_action") == "update")), "update_preimage"))
        frames.append((updated, "update_postimage"))
    deleted = decided.where(F.col("__dx_action") == "delete")
    if any(c.action == "delete" for c in plan.clauses):
        if plan.multiple_matches_allowed:
            deleted = deleted.dropDuplicates([FILE_COL, ROW_COL])
        frames.append((_target_values(plan, deleted), "delete"))
    if inserted is not None:
        frames.append((inserted, "insert"))
    return frames
