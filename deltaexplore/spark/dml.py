"""DELETE and UPDATE on Spark: the core plans, Spark finds the rows, the core commits.

`core.operations.plan_delete` picks the candidate files (partition and stats pruning) and says
whether deletion vectors are used. Spark reads the candidates with each row's file id and
`_metadata.row_index` (existing DVs applied) and evaluates the predicate with the core's
semantics. With deletion vectors, the matching (file, row index) pairs never leave the
executors: they write the new DVs (`deletion_vectors.write_deletion_vectors`) and the driver
turns one descriptor per file into the remove/re-add actions
(`core.operations.deletion_vector_actions`); without, per-file match counts pick the files to
rewrite: by DELETE with Spark's
parquet writer (`maintenance.rewrite_native`: the other rows are copied as they are, stable row
ids kept, so no rule is checked again), by UPDATE with Python tasks (`writer.write_files`: new
values are checked against NOT NULL, invariants and CHECK constraints). With the change data
feed on, the changed rows are written to `_change_data/` files as well.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.operations import (
    DELETE_METRICS,
    UPDATE_METRICS,
    OperationRun,
    open_for_write,
    plan_delete,
    predicate_text,
    refuse_copy_from_outside,
    resolve_assignments,
)
from deltaexplore.core.scan.data_file import row_counts
from deltaexplore.core.scan.stats import num_records
from deltaexplore.core.write.data_writer import DEFAULT_TARGET_FILE_SIZE
from deltaexplore.core.write.row_rules import generated_columns
from deltaexplore.errors import WriteRefusedError
from deltaexplore.spark.deletion_vectors import matched_counts, write_deletion_vectors
from deltaexplore.spark.file_values import FILE_COL, ROW_COL
from deltaexplore.spark.filters import to_spark_filter
from deltaexplore.spark.jobs import progress
from deltaexplore.spark.maintenance import pack_bins, rewrite_native
from deltaexplore.spark.native_write import Staging, discard_staging, supports_native
from deltaexplore.spark.reader import scan_files
from deltaexplore.spark.session import spark_errors
from deltaexplore.spark.types import spark_type
from deltaexplore.spark.writer import write_files

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = ["delete", "update", "write_change_data"]


def _refuse_row_tracking(snapshot: Any, what: str) -> None:
    if snapshot.config.row_tracking_enabled:
        raise WriteRefusedError(
            f"{what} on Spark would rewrite files of {snapshot.uri}, which tracks row ids (delta.enableRowTracking): "
            "not supported on Spark yet; use deltaexplore.core.operations (local) or enable deletion vectors"
        )


def _cardinalities(files: pa.Table) -> np.ndarray:
    """Rows each file's current DV deletes (0 without one)."""
    return np.array([(d or {}).get("cardinality", 0) or 0 for d in files.column("deletionVector").to_pylist()], np.int64)


def write_change_data(
    spark: SparkSession,
    frames: list[tuple[DataFrame, str]],
    op: OperationRun,
    snapshot: Any,
    *,
    metadata: Any = None,
    **kw: Any,
) -> int:
    """Write change rows (`(frame, change type)`, columns of `metadata`'s schema, default the
    snapshot's) as change data files, staged in `op`'s transaction; the number of files."""
    from pyspark.sql import functions as F

    metadata = metadata or snapshot.metadata
    names = metadata.schema.names
    union = None
    for frame, change in frames:
        part = frame.select(*[F.col(f"`{n}`") for n in names]).withColumn("_change_type", F.lit(change))
        union = part if union is None else union.unionByName(part)
    if union is None:
        return 0
    cdc = write_files(
        spark,
        union,
        op.table,
        metadata,
        snapshot.protocol,
        kind="cdc",
        data_change=False,
        extra_columns=["_change_type"],
        check_rules=False,
        **kw,
    )
    op.written(cdc)
    if cdc.num_rows:
        op.txn.add_cdc_files(cdc)
    return cdc.num_rows


def _run(
    spark: SparkSession,
    uri: Any,
    *,
    operation: str,
    predicate: Any,
    assignments: dict[str, str] | None,
    dry_run: bool,
    use_deletion_vectors: bool | None,
    target_file_size: int | None,
    storage_options: dict[str, Any] | None,
    max_retries: int,
) -> pa.Table:
    from pyspark.sql import functions as F

    table = open_for_write(uri, storage_options)
    snapshot = table.snapshot()
    config = snapshot.config
    if operation == "UPDATE" and config.append_only:
        raise WriteRefusedError(f"table {table.uri} is append-only (delta.appendOnly=true): UPDATE is not allowed")
    plan = plan_delete(snapshot, predicate, use_deletion_vectors=use_deletion_vectors, allow_sql=True)
    schema = snapshot.schema
    if operation == "UPDATE":
        assert assignments is not None
        assignments = resolve_assignments(snapshot, assignments)
    generated = generated_columns(snapshot.metadata)
    whole = plan.whole_files and operation == "DELETE"
    native = operation == "DELETE" and supports_native(snapshot)  # rows copied as they are
    if not whole and not plan.use_deletion_vectors and not native:
        _refuse_row_tracking(snapshot, operation)
    if operation == "UPDATE" and config.row_tracking_enabled:
        _refuse_row_tracking(snapshot, operation)
    schema_of_metrics = DELETE_METRICS if operation == "DELETE" else UPDATE_METRICS
    params: dict[str, Any] = {"predicate": json.dumps([predicate_text(predicate, plan)])}
    if assignments:
        params["set"] = json.dumps(assignments)
    op = OperationRun.start(
        table,
        operation,
        schema_of_metrics,
        read_snapshot=snapshot,
        parameters=params,
        dry_run=dry_run,
        metrics=dict.fromkeys(schema_of_metrics.names[3:], 0),
    )
    metrics, txn = op.metrics, op.txn
    matched_rows = "num_deleted_rows" if operation == "DELETE" else "num_updated_rows"
    if plan.predicate is not None:
        txn.read_files(predicate=plan.predicate)
    else:
        txn.read_whole_table()
    files = plan.files
    kw: dict[str, Any] = {"storage_options": storage_options}
    target = target_file_size or DEFAULT_TARGET_FILE_SIZE
    md, protocol = snapshot.metadata, snapshot.protocol
    stagings: list[Staging] = []

    def discard_stagings() -> None:  # files of Spark jobs that succeeded before a failure
        for staging in stagings:
            discard_staging(spark, table, staging)

    op.on_failure(discard_stagings)
    with op:
        with progress(spark, f"deltaexplore {operation} {table.uri}"), spark_errors(operation, path=table.uri):
            if files.num_rows == 0:
                return op.result()
            rows = scan_files(
                spark, snapshot, files, list(schema.fields), partition_values=plan.partition_values, with_ids=True, **kw
            )
            if plan.sql is not None:  # Spark SQL the core's parser does not read (arithmetic, functions): no pruning
                cond: Column = F.coalesce(F.expr(plan.sql), F.lit(False))
            elif plan.predicate is not None:
                cond = F.coalesce(to_spark_filter(plan.predicate, schema), F.lit(False))
            else:
                cond = F.lit(True)

            def updated(frame: DataFrame) -> DataFrame:
                """The rows with the assignments applied where `cond` holds; generated columns
                left null (every row: the write tasks compute them from their expressions)."""
                assert assignments is not None
                cols = []
                for f in schema.fields:
                    if f.name in assignments:
                        new = F.expr(assignments[f.name]).cast(spark_type(f.type))
                        cols.append(F.when(cond, new).otherwise(F.col(f"`{f.name}`")).alias(f.name))
                    elif f.name in generated:
                        cols.append(F.lit(None).cast(spark_type(f.type)).alias(f.name))
                    else:
                        cols.append(F.col(f"`{f.name}`"))
                return frame.select(*cols, F.col(FILE_COL), F.col(ROW_COL))

            # analyse the condition and the new values now: a bad column fails here, before any job
            _ = rows.where(cond).schema
            if operation == "UPDATE":
                _ = updated(rows).schema
            if whole:
                counts = row_counts(snapshot, files)
                metrics.update(num_deleted_rows=int(counts.sum() - _cardinalities(files).sum()), num_removed_files=files.num_rows)
                if dry_run:
                    return op.result()
                if plan.change_data_feed:
                    refuse_copy_from_outside(snapshot, files, f"{operation} (change data feed)")
                    metrics["num_added_change_files"] = write_change_data(spark, [(rows, "delete")], op, snapshot, **kw)
                txn.remove_files(files)
            else:
                matched = rows.where(cond)
                written = None
                if plan.use_deletion_vectors and not dry_run:
                    # positions never reach the driver: executors write the DVs, one row per file comes back
                    written = write_deletion_vectors(spark, matched, snapshot, files, storage_options=storage_options)
                    for path in written.dv_files:
                        op.written_path(path)  # a lost commit must not leave them behind
                    per_file = written.update.deleted_rows
                else:
                    per_file = matched_counts(matched, files.num_rows)
                hit_ids = [int(i) for i in np.flatnonzero(per_file)]
                n_matched = int(per_file.sum())
                metrics[matched_rows] = n_matched
                if n_matched == 0:
                    return op.result()
                touched = rows.where(F.col(FILE_COL).isin(hit_ids))
                hit_files = files.take(pa.array(hit_ids, pa.int64()))
                if operation == "UPDATE" or plan.change_data_feed or not plan.use_deletion_vectors:
                    refuse_copy_from_outside(snapshot, hit_files, operation)
                if plan.use_deletion_vectors:
                    if written is None:  # dry run: what the DVs would do, nothing written
                        kept = row_counts(snapshot, hit_files) - _cardinalities(hit_files) - per_file[hit_ids]
                        metrics.update(num_removed_files=int(np.sum(kept <= 0)), num_deletion_vectors_added=int(np.sum(kept > 0)))
                        return op.result()
                    update = written.update
                    metrics.update(
                        num_removed_files=update.removes.num_rows - update.adds.num_rows,
                        num_deletion_vectors_added=update.adds.num_rows,
                    )
                    txn.remove_files(update.removes)
                    txn.add_files(update.adds)
                    if operation == "UPDATE":
                        new_rows = updated(touched.where(cond))
                        adds = op.written(
                            write_files(
                                spark,
                                new_rows.drop(FILE_COL, ROW_COL),
                                table,
                                md,
                                protocol,
                                target_size=target,
                                identity=False,
                                **kw,
                            )
                        )
                        metrics["num_added_files"] = adds.num_rows
                        txn.add_files(adds)
                else:
                    keep = touched if operation == "UPDATE" else touched.where(~cond)
                    out = updated(keep) if operation == "UPDATE" else keep
                    if dry_run:
                        metrics.update(num_removed_files=len(hit_ids))
                        return op.result()
                    if native:
                        # DELETE copies the other rows as they are: Spark's parquet writer, one task per
                        # bin of touched files (stable row ids kept); no rule needs checking again.
                        bins = pack_bins(snapshot, hit_files, target)
                        order = {p: i for i, p in enumerate(hit_files.column("path").to_pylist())}
                        dropped = np.array(
                            [per_file[hit_ids[order[p]]] for b in bins for p in b.column("path").to_pylist()], np.int64
                        )
                        adds = rewrite_native(
                            spark,
                            table,
                            snapshot,
                            bins,
                            target_size=target,
                            stagings=stagings,
                            keep=~cond,
                            dropped=dropped,
                            data_change=True,
                            storage_options=storage_options,
                        )
                    else:
                        adds = write_files(
                            spark, out.drop(FILE_COL, ROW_COL), table, md, protocol, target_size=target, identity=False, **kw
                        )
                    op.written(adds)
                    txn.remove_files(hit_files)
                    txn.add_files(adds)
                    copied = int(pc.sum(num_records(adds)).as_py() or 0) if adds.num_rows else 0
                    metrics.update(
                        num_removed_files=len(hit_ids),
                        num_added_files=adds.num_rows,
                        num_copied_rows=copied - (n_matched if operation == "UPDATE" else 0),
                    )
                if plan.change_data_feed:
                    matched = touched.where(cond)
                    frames = (
                        [(matched, "delete")]
                        if operation == "DELETE"
                        else [
                            (matched, "update_preimage"),
                            (updated(matched), "update_postimage"),
                        ]
                    )
                    metrics["num_added_change_files"] = write_change_data(spark, frames, op, snapshot, **kw)
        return op.commit(max_retries=max_retries)


def delete(
    spark: SparkSession,
    uri: Any,
    predicate: Any = None,
    *,
    dry_run: bool = False,
    use_deletion_vectors: bool | None = None,
    target_file_size: int | None = None,
    storage_options: dict[str, Any] | None = None,
    max_retries: int = 10,
) -> pa.Table:
    """Delete the rows matching `predicate` (SQL-like text, DNF tuples or `Expr`; None: all).

    Deletion vectors are used when the table enables them (``delta.enableDeletionVectors``) or
    `use_deletion_vectors` says so; otherwise the touched files are rewritten.

    Executors: pyspark, pyarrow and numpy (DVs and rewrites); with the change data feed on, the
    deleted rows are written by the core's data writer, which needs deltaexplore there.

    Returns:
        One row of metrics: operation, version (null for a dry run / no-op), dry_run,
        num_deleted_rows, num_removed_files, num_added_files, num_deletion_vectors_added,
        num_copied_rows, num_added_change_files.

    Raises:
        WriteRefusedError: append-only table, DVs asked for but not enabled.
        CommitConflictError: a concurrent commit conflicts.
        SparkError: a Spark job failed.
    """
    return _run(
        spark,
        uri,
        operation="DELETE",
        predicate=predicate,
        assignments=None,
        dry_run=dry_run,
        use_deletion_vectors=use_deletion_vectors,
        target_file_size=target_file_size,
        storage_options=storage_options,
        max_retries=max_retries,
    )


def update(
    spark: SparkSession,
    uri: Any,
    set: dict[str, str],
    where: Any = None,
    *,
    dry_run: bool = False,
    use_deletion_vectors: bool | None = None,
    target_file_size: int | None = None,
    storage_options: dict[str, Any] | None = None,
    max_retries: int = 10,
) -> pa.Table:
    """Set columns to Spark SQL expressions (``{"price": "price * 1.1"}``) where `where` holds.

    With deletion vectors the old rows are marked deleted and the new ones written to new
    files; otherwise every touched file is rewritten.

    Executors: the new rows go through the core's data writer (the table's rules checked per
    row), so the executors need deltaexplore installed.

    Returns:
        One row of metrics (see `delete`; ``num_updated_rows`` counts the rows changed).
    """
    if not set:
        raise WriteRefusedError("UPDATE needs at least one column to set")
    return _run(
        spark,
        uri,
        operation="UPDATE",
        predicate=where,
        assignments=dict(set),
        dry_run=dry_run,
        use_deletion_vectors=use_deletion_vectors,
        target_file_size=target_file_size,
        storage_options=storage_options,
        max_retries=max_retries,
    )
