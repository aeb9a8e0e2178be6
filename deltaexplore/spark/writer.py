"""Writing Delta data files from Spark, and create/append/overwrite from a DataFrame.

Each Spark task hands its rows (Arrow batches, `mapInArrow`) to the core's data writer
(`core.data_writer.write_data_files`): the same file names (`part-<uuid>...`, never
overwritten), Hive-style partition directories, physical names and field ids under column
mapping, and statistics read from the written files' footers. Before writing, each batch is
conformed to the table schema and checked against NOT NULL, invariants and CHECK constraints
(`core.data_rules`), so a violation fails the job and nothing is committed. The tasks return
the add actions; the driver commits them with a core `Transaction`.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.operations import (
    WRITE_METRICS,
    OperationRun,
    check_write_modes,
    metrics_table,
    open_for_write,
    start_write,
    total_bytes,
    write_metadata,
)
from deltaexplore.core.protocol.action_codec import file_actions_table
from deltaexplore.core.protocol.actions import Metadata, Protocol
from deltaexplore.core.protocol.schema import PrimitiveType
from deltaexplore.core.scan.stats import num_records
from deltaexplore.core.table import Table
from deltaexplore.core.write.data_writer import DEFAULT_TARGET_FILE_SIZE, write_data_files
from deltaexplore.core.write.row_rules import conform, enforce, fill_generated, identity_columns
from deltaexplore.errors import TableNotFoundError, WriteRefusedError
from deltaexplore.spark.jobs import progress
from deltaexplore.spark.session import spark_errors
from deltaexplore.storage import storage_for  # runs in the Spark task: imported there

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


__all__ = ["write", "write_files"]

WRITTEN_SCHEMA = "path string, partitionValues string, size long, modificationTime long, dataChange boolean, stats string"


def _file_writer(
    root: str,
    storage_options: dict[str, Any] | None,
    metadata_json: str,
    protocol_json: str,
    *,
    kind: str,
    data_change: bool,
    target_size: int,
    extra_columns: list[str],
    check_rules: bool,
    identity: bool,
) -> Any:
    def write(batches: Any) -> Any:
        storage = storage_for(root, storage_options)
        md = Metadata.from_json(json.loads(metadata_json))
        protocol = Protocol.from_json(json.loads(protocol_json))
        schema = md.schema
        mode = md.column_mapping_mode(protocol)
        pending: list[pa.RecordBatch] = []
        pending_bytes = 0

        def flush() -> Any:
            data = pa.Table.from_batches(pending)
            extras = {c: data.column(c) for c in extra_columns if c in data.column_names}
            rows, _ = conform(data.drop_columns(list(extras)), md)
            if check_rules:
                rows, _ = enforce(rows, schema, md, identity=identity)
            elif kind == "cdc":
                rows = fill_generated(rows, md)  # UPDATE post-images: generated values computed
            for name, col in extras.items():
                rows = rows.append_column(name, col)
            adds = write_data_files(
                storage,
                rows,
                schema=schema,
                partition_columns=md.partition_columns,
                mode=mode,
                configuration=md.configuration,
                target_file_size=target_size,
                data_change=data_change,
                kind=kind,
                extra_columns=list(extras) if kind == "add" else [c for c in extras if c != "_change_type"],
            )
            parts = [json.dumps(dict(p or [])) for p in adds.column("partitionValues").to_pylist()]
            n = adds.num_rows
            cols = {
                "path": adds.column("path"),
                "partitionValues": pa.array(parts, pa.string()),
                "size": adds.column("size"),
                "modificationTime": adds.column("modificationTime") if kind == "add" else pa.nulls(n, pa.int64()),
                "dataChange": adds.column("dataChange"),
                "stats": adds.column("stats") if kind == "add" else pa.nulls(n, pa.string()),
            }
            yield from pa.table(cols).to_batches()

        for batch in batches:
            if batch.num_rows == 0:
                continue
            pending.append(batch)
            pending_bytes += batch.nbytes
            if pending_bytes >= 2 * target_size:
                yield from flush()
                pending, pending_bytes = [], 0
        if pending:
            yield from flush()

    return write


def _ntz_as_spark_casts(df: DataFrame, metadata: Metadata) -> DataFrame:
    """`timestamp` columns bound for `timestamp_ntz` columns cast by Spark (the session time
    zone's wall time, as Spark's CAST and Delta Spark do); the Arrow tasks would otherwise take
    their UTC wall time."""
    from pyspark.sql import types as T

    ntz = {f.name.lower() for f in metadata.schema.fields if f.type == PrimitiveType("timestamp_ntz")}
    cols = [f.name for f in df.schema.fields if f.name.lower() in ntz and isinstance(f.dataType, T.TimestampType)]
    if not cols:
        return df
    return df.withColumns({c: df[c].cast(T.TimestampNTZType()) for c in cols})


def write_files(
    spark: SparkSession,
    df: DataFrame,
    table: Table,
    metadata: Metadata,
    protocol: Any,
    *,
    kind: str = "add",
    data_change: bool = True,
    target_size: int = DEFAULT_TARGET_FILE_SIZE,
    extra_columns: list[str] | None = None,
    check_rules: bool = True,
    identity: bool = True,
    storage_options: dict[str, Any] | None = None,
) -> pa.Table:
    """Write the rows of `df` (logical columns) as data files of `table`; the add (or cdc) actions.

    Each task fills generated columns left null and checks the table's rules (`check_rules`);
    with `identity=False` (UPDATE of existing rows) identity columns keep their values. Change
    data files (`kind="cdc"`) are not checked, their null generated values are computed.
    Nothing is committed: the caller stages the actions in a `Transaction` (and deletes the
    files if the commit fails).
    """
    writer = _file_writer(
        table.storage.root,
        storage_options,
        json.dumps(metadata.to_json()),
        json.dumps(protocol.to_json()),
        kind=kind,
        data_change=data_change,
        target_size=target_size,
        extra_columns=list(extra_columns or []),
        check_rules=check_rules,
        identity=identity,
    )
    df = _ntz_as_spark_casts(df, metadata)
    with spark_errors("writing data files", path=table.uri):
        out = df.mapInArrow(writer, WRITTEN_SCHEMA).toArrow()
    rows = []
    for r in out.to_pylist():
        r["partitionValues"] = json.loads(r["partitionValues"]) if r["partitionValues"] else {}
        if kind == "cdc":
            r.pop("modificationTime", None)
            r.pop("stats", None)
        rows.append(r)
    return file_actions_table(kind, rows)


def write(
    spark: SparkSession,
    df: DataFrame,
    uri: Any,
    *,
    mode: str = "append",
    partition_by: list[str] | None = None,
    schema_mode: str | None = None,
    configuration: dict[str, str] | None = None,
    app_id: str | None = None,
    app_version: int | None = None,
    target_file_size: int = DEFAULT_TARGET_FILE_SIZE,
    dry_run: bool = False,
    storage_options: dict[str, Any] | None = None,
    max_retries: int | None = None,
) -> pa.Table:
    """Create, append to or overwrite a Delta table with the rows of a Spark DataFrame.

    Args:
        mode: 'append', 'overwrite', 'error' (fail if the table exists) or 'ignore'.
        partition_by: partition columns of a new table (must match an existing table's).
        schema_mode: None (the table schema is enforced), 'merge' (new columns are added) or
            'overwrite' (with mode='overwrite': the DataFrame's schema replaces the table's).
        configuration: table properties (new table, or merged into the existing ones).
        app_id / app_version: idempotent write: skipped when the table already recorded
            `app_version` (or later) for `app_id`; recorded in the same commit otherwise.
        target_file_size: bytes per data file (about).
        dry_run: check the schema and count the rows; nothing is written.
        max_retries: lost commit races tolerated (default: 10, or 100 for a blind append).

    Returns:
        One row of metrics: operation, version (null for a dry run or skip), dry_run, skipped,
        num_added_files, num_removed_files, num_added_bytes, num_output_rows, schema_changed.

    Raises:
        WriteRefusedError: schema mismatch, a violated constraint or protocol rule (the table
            is unchanged).
        CommitConflictError: a concurrent commit conflicts.
        SparkError: the Spark job failed, or deltaexplore is missing on the executors.

    Executors: the rows are written by the core's data writer inside the Spark tasks, so the
    executors need deltaexplore installed (a `SparkError` says so when they do not).
    """
    from pyspark.sql.pandas.types import to_arrow_schema

    check_write_modes(mode, schema_mode)
    table = open_for_write(uri, storage_options)
    try:
        snapshot = table.snapshot()
    except TableNotFoundError:
        snapshot = None
    base: dict[str, Any] = {"operation": "WRITE", "dry_run": dry_run, "skipped": False}
    if snapshot is not None and mode in ("error", "ignore"):
        if mode == "error":
            raise WriteRefusedError(f"table {table.uri} already exists (mode='error')", path=table.uri)
        return metrics_table({**base, "skipped": True}, WRITE_METRICS)
    with spark_errors("reading the DataFrame schema"):
        arrow_schema = to_arrow_schema(df.schema, timezone="UTC")
    operation, old_md, md, _, _ = write_metadata(
        table,
        snapshot,
        arrow_schema.empty_table(),
        partition_by=partition_by,
        configuration=configuration,
        schema_mode=schema_mode,
    )
    if identity_columns(md):
        raise WriteRefusedError(
            f"table {table.uri} has identity columns: Spark writes cannot assign them consistently across tasks yet "
            "(use deltaexplore.core.operations.write_table)"
        )
    started = start_write(table, snapshot, operation, md, old_md, mode=mode, app_id=app_id, app_version=app_version)
    if started is None:
        return metrics_table({**base, "operation": operation, "skipped": True}, WRITE_METRICS)
    txn, protocol = started
    to_remove = snapshot.add_actions() if (mode == "overwrite" and snapshot is not None) else None
    if to_remove is not None:
        txn.read_whole_table()
    metrics: dict[str, Any] = {
        **base,
        "operation": operation,
        "num_added_files": 0,
        "num_removed_files": to_remove.num_rows if to_remove is not None else 0,
        "num_added_bytes": 0,
        "num_output_rows": None,
        "schema_changed": old_md is not None and md.schema_string != old_md.schema_string,
    }
    with OperationRun(table, WRITE_METRICS, metrics, txn) as op:
        with progress(spark, f"deltaexplore {operation} {table.uri}", display="auto"), spark_errors(operation, path=table.uri):
            if dry_run:
                with spark_errors("counting the rows to write", path=table.uri):
                    metrics["num_output_rows"] = df.count()
                return op.result()
            parts = tuple(md.partition_columns)
            data = df.repartition(*[df[c] for c in parts]) if parts else df
            adds = op.written(
                write_files(spark, data, table, md, protocol, target_size=target_file_size, storage_options=storage_options)
            )
        if to_remove is not None and to_remove.num_rows:
            txn.remove_files(to_remove)
        txn.add_files(adds)
        metrics.update(num_added_files=adds.num_rows, num_added_bytes=total_bytes(adds), num_output_rows=_num_records(adds))
        return op.commit(max_retries=max_retries)


def _num_records(adds: pa.Table) -> int:
    return int(pc.sum(num_records(adds)).as_py() or 0) if adds.num_rows else 0
