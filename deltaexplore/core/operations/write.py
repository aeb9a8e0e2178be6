"""Create, append to and overwrite tables from Arrow data; change table properties.

`write_table` enforces the schema (opt-in evolution with `schema_mode='merge'`, or
`'overwrite'` together with `mode='overwrite'`), fills generated and identity columns, checks
NOT NULL, invariants and CHECK constraints, writes parquet files with stats and commits them.
`app_id`/`app_version` make a write idempotent (a version already recorded for the app is
skipped). `set_table_properties` turns features on (the protocol is upgraded as needed; row
tracking gets its materialized column names and a backfill of row ids; column mapping 'name'
keeps the existing physical names).
"""

from __future__ import annotations

import json
import os
import time
import uuid
from dataclasses import replace
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.log.catalog import CatalogClient
from deltaexplore.core.operations.engine import (
    SET_PROPERTIES_METRICS,
    WRITE_METRICS,
    OperationRun,
    metrics_table,
    open_for_write,
    total_bytes,
)
from deltaexplore.core.protocol.actions import Metadata, Protocol
from deltaexplore.core.protocol.predicates import parse_predicate
from deltaexplore.core.protocol.schema import StructType, parse_schema
from deltaexplore.core.snapshot import Snapshot
from deltaexplore.core.table import Table
from deltaexplore.core.write.action_rules import protocol_for
from deltaexplore.core.write.data_writer import DEFAULT_TARGET_FILE_SIZE, write_data_files
from deltaexplore.core.write.row_rules import as_arrow_table, conform, enforce, evaluate_sql
from deltaexplore.core.write.schema_evolution import assign_column_mapping, max_column_id, schema_from_arrow, schema_json
from deltaexplore.core.write.transaction import Transaction
from deltaexplore.errors import TableNotFoundError, WriteRefusedError

__all__ = [
    "check_write_modes",
    "new_table_metadata",
    "set_table_properties",
    "start_write",
    "write_metadata",
    "write_table",
]


def _with_table_defaults(metadata: Metadata, *, existing: Metadata | None = None) -> Metadata:
    """Column mapping ids/names for new columns and row tracking column names, as the
    properties ask."""
    conf = dict(metadata.configuration)
    schema = metadata.schema
    mode = str(conf.get("delta.columnMapping.mode", "none")).lower()
    if mode in ("name", "id"):
        old_mode = str((existing.configuration if existing else {}).get("delta.columnMapping.mode", "none")).lower()
        keep_names = existing is not None and old_mode == "none"
        current = int(conf.get("delta.columnMapping.maxColumnId", max_column_id(schema)))
        schema, new_max = assign_column_mapping(schema, current, keep_names=keep_names)
        conf["delta.columnMapping.maxColumnId"] = str(new_max)
    if str(conf.get("delta.enableRowTracking", "false")).lower() == "true":
        conf.setdefault("delta.rowTracking.materializedRowIdColumnName", f"_row-id-col-{uuid.uuid4()}")
        conf.setdefault("delta.rowTracking.materializedRowCommitVersionColumnName", f"_row-commit-version-col-{uuid.uuid4()}")
    return replace(metadata, schema_string=schema_json(schema), configuration=conf)


def new_table_metadata(
    schema: pa.Schema | StructType,
    *,
    partition_by: list[str] | None = None,
    configuration: dict[str, str] | None = None,
    name: str | None = None,
    description: str | None = None,
) -> Metadata:
    """Metadata for a new table (fresh id; column mapping and row tracking set up as asked)."""
    delta_schema = schema if isinstance(schema, StructType) else schema_from_arrow(schema)
    parts = tuple(partition_by or ())
    for p in parts:
        if delta_schema.get(p) is None:
            raise WriteRefusedError(f"partition column {p!r} is not in the data (columns: {', '.join(delta_schema.names)})")
    parts = tuple(delta_schema.field(p).name for p in parts)
    md = Metadata(
        id=str(uuid.uuid4()),
        schema_string=schema_json(delta_schema),
        partition_columns=parts,
        configuration={str(k): str(v) for k, v in (configuration or {}).items()},
        name=name,
        description=description,
        created_time=int(time.time() * 1000),
    )
    return _with_table_defaults(md)


def write_table(
    table: Table | str | os.PathLike[str],
    data: Any,
    *,
    mode: str = "append",
    partition_by: list[str] | None = None,
    schema_mode: str | None = None,
    configuration: dict[str, str] | None = None,
    name: str | None = None,
    description: str | None = None,
    predicate: str | None = None,
    app_id: str | None = None,
    app_version: int | None = None,
    target_file_size: int = DEFAULT_TARGET_FILE_SIZE,
    max_rows_per_file: int | None = None,
    dry_run: bool = False,
    storage_options: dict[str, Any] | None = None,
    catalog: CatalogClient | None = None,
    user_metadata: str | None = None,
    max_retries: int | None = None,
) -> pa.Table:
    """Write Arrow data (table, batches, polars/pandas frame) to a Delta table, creating it.

    Args:
        mode: 'append', 'overwrite', 'error' (fail if the table exists) or 'ignore' (do
            nothing if it exists).
        partition_by: partition columns of a new table (must match an existing table's).
        schema_mode: None (enforce), 'merge' (add new columns) or 'overwrite' (replace the
            schema; only with mode='overwrite').
        configuration: table properties (for a new table, or merged into an existing one's).
        predicate: with mode='overwrite', replace only the rows matching this partition
            predicate (every new row must match it).
        app_id / app_version: idempotent write; skipped when the table already recorded
            `app_version` or later for `app_id`.
        dry_run: plan only: nothing is written.
        max_retries: lost commit races tolerated (default: 10, or 100 for a blind append,
            which cannot conflict; each lost race waits a random back-off).

    Returns:
        One row of metrics: operation, version (null for a dry run or skip), dry_run, skipped,
        num_added_files, num_removed_files, num_added_bytes, num_output_rows, schema_changed.

    Raises:
        WriteRefusedError: schema mismatch, a violated constraint, a protocol rule.
        CommitConflictError: a concurrent commit conflicts.
    """
    check_write_modes(mode, schema_mode)
    t = open_for_write(table, storage_options, catalog)
    rows_in = as_arrow_table(data)
    try:
        snapshot: Snapshot | None = t.snapshot()
    except TableNotFoundError:
        snapshot = None
    base = {"operation": "WRITE", "dry_run": dry_run, "skipped": False}
    if snapshot is not None and mode in ("error", "ignore"):
        if mode == "error":
            raise WriteRefusedError(f"table {t.uri} already exists (mode='error')", path=t.uri)
        return metrics_table({**base, "skipped": True}, WRITE_METRICS)
    operation, old_md, md, conformed, schema = write_metadata(
        t,
        snapshot,
        rows_in,
        partition_by=partition_by,
        configuration=configuration,
        schema_mode=schema_mode,
        name=name,
        description=description,
    )
    rows, identity_md = enforce(conformed, schema, md)
    if identity_md is not None:
        md = identity_md
    started = start_write(
        t,
        snapshot,
        operation,
        md,
        old_md,
        mode=mode,
        app_id=app_id,
        app_version=app_version,
        predicate=predicate,
        user_metadata=user_metadata,
    )
    if started is None:
        return metrics_table({**base, "operation": operation, "skipped": True}, WRITE_METRICS)
    txn, protocol = started
    to_remove = pa.table({"path": pa.array([], pa.string())})
    if mode == "overwrite" and snapshot is not None:
        if predicate:
            expr = parse_predicate(predicate)
            assert expr is not None
            part_names = {p.lower() for p in md.partition_columns}
            if not {c.lower() for c in expr.columns()} <= part_names:
                raise WriteRefusedError(
                    f"overwrite predicate {predicate!r} may only use partition columns {list(md.partition_columns)}"
                )
            check = evaluate_sql(rows, predicate, what="overwrite predicate")
            if rows.num_rows and not pc.all(pc.fill_null(check, False)).as_py():
                raise WriteRefusedError(f"data to write does not all match the overwrite predicate {predicate!r}")
            to_remove = snapshot.scan(where=expr).files
            txn.read_files(predicate=expr)
        else:
            to_remove = snapshot.add_actions()
            txn.read_whole_table()
    metrics = {
        **base,
        "operation": operation,
        "num_added_files": 0,
        "num_removed_files": to_remove.num_rows,
        "num_added_bytes": 0,
        "num_output_rows": rows.num_rows,
        "schema_changed": old_md is not None and md.schema_string != old_md.schema_string,
    }
    with OperationRun(t, WRITE_METRICS, metrics, txn) as op:
        if dry_run:
            return op.result()
        adds = op.written(
            write_data_files(
                t.storage,
                rows,
                schema=md.schema,
                partition_columns=md.partition_columns,
                mode=md.column_mapping_mode(protocol),
                configuration=md.configuration,
                target_file_size=target_file_size,
                max_rows_per_file=max_rows_per_file,
            )
        )
        if to_remove.num_rows:
            txn.remove_files(to_remove)
        txn.add_files(adds)
        op.metrics.update(num_added_files=adds.num_rows, num_added_bytes=total_bytes(adds))
        return op.commit(max_retries=max_retries)


def set_table_properties(
    table: Table | str | os.PathLike[str],
    properties: dict[str, str],
    *,
    unset: list[str] | None = None,
    dry_run: bool = False,
    storage_options: dict[str, Any] | None = None,
    catalog: CatalogClient | None = None,
) -> pa.Table:
    """Set (and unset) table properties, upgrading the protocol for the features they turn on.

    Turning on row tracking backfills row ids of files without them in the same commit;
    adding CHECK constraints (`delta.constraints.<name>`) validates the existing rows.

    Returns:
        One row: operation, version, dry_run, protocol (JSON), properties (JSON).
    """
    t = open_for_write(table, storage_options, catalog)
    snapshot = t.snapshot()
    old = snapshot.metadata
    conf = dict(old.configuration)
    conf.update({str(k): str(v) for k, v in properties.items()})
    for key in unset or []:
        conf.pop(key, None)
    protected = {"delta.columnMapping.maxColumnId", "delta.inCommitTimestampEnablementVersion"}
    touched = protected & set(properties)
    if touched:
        raise WriteRefusedError(f"table properties {sorted(touched)} are maintained by the writer and cannot be set")
    md = _with_table_defaults(replace(old, configuration=conf), existing=old)
    parse_schema(md.schema_string or "")
    txn = Transaction(t, operation="SET TBLPROPERTIES", parameters={"properties": json.dumps(properties)}, read_snapshot=snapshot)
    txn.update_metadata(md)
    protocol = protocol_for(md, snapshot.protocol)
    if protocol != snapshot.protocol:
        txn.update_protocol(protocol)
    enabling_rows = (
        str(conf.get("delta.enableRowTracking", "false")).lower() == "true"
        and str(old.configuration.get("delta.enableRowTracking", "false")).lower() != "true"
    )
    if enabling_rows:
        adds = snapshot.add_actions()
        missing = adds.filter(pc.is_null(adds.column("baseRowId")))
        if missing.num_rows:
            recommit = missing.set_column(
                missing.column_names.index("dataChange"), "dataChange", pa.array([False] * missing.num_rows)
            )
            txn.add_files(recommit)
            txn.read_files(missing)
    out: dict[str, Any] = {
        "operation": "SET TBLPROPERTIES",
        "dry_run": dry_run,
        "protocol": json.dumps(protocol.to_json(), sort_keys=True),
        "properties": json.dumps(md.configuration, sort_keys=True),
    }
    with OperationRun(t, SET_PROPERTIES_METRICS, out, txn) as op:
        return op.result() if dry_run else op.commit()


def check_write_modes(mode: str, schema_mode: str | None) -> None:
    """Raises WriteRefusedError: an unknown `mode`, or a schema overwrite without a data overwrite."""
    if mode not in ("append", "overwrite", "error", "ignore"):
        raise WriteRefusedError(f"mode must be 'append', 'overwrite', 'error' or 'ignore', got {mode!r}")
    if schema_mode == "overwrite" and mode != "overwrite":
        raise WriteRefusedError("schema_mode='overwrite' needs mode='overwrite'")


def write_metadata(
    table: Table,
    snapshot: Snapshot | None,
    rows: pa.Table,
    *,
    partition_by: list[str] | None,
    configuration: dict[str, Any] | None,
    schema_mode: str | None,
    name: str | None = None,
    description: str | None = None,
) -> tuple[str, Metadata | None, Metadata, pa.Table, StructType]:
    """The metadata a write of `rows` commits (new table, or the current one with the new
    properties and, by `schema_mode`, an evolved or replaced schema and partitioning).

    Returns (operation, metadata before, metadata to commit, rows conformed to it, its schema).

    Raises:
        WriteRefusedError: other partition columns without a schema overwrite; rows that do not
            fit the schema.
    """
    if snapshot is None:
        md = new_table_metadata(
            rows.schema, partition_by=partition_by, configuration=configuration, name=name, description=description
        )
        operation, old_md = "CREATE TABLE", None
    else:
        old_md = md = snapshot.metadata
        if partition_by is not None and list(partition_by) != list(md.partition_columns) and schema_mode != "overwrite":
            raise WriteRefusedError(
                f"table {table.uri} is partitioned by {list(md.partition_columns)}, the write asks for {list(partition_by)}",
                path=table.uri,
            )
        if configuration:
            md = replace(md, configuration={**md.configuration, **{str(k): str(v) for k, v in configuration.items()}})
        operation = "WRITE"
    conformed, schema = conform(rows, md, schema_mode=schema_mode if snapshot is not None else None)
    if schema_json(schema) != md.schema_string or (schema_mode == "overwrite" and partition_by is not None):
        parts = tuple(partition_by) if (schema_mode == "overwrite" and partition_by is not None) else md.partition_columns
        md = _with_table_defaults(replace(md, schema_string=schema_json(schema), partition_columns=parts), existing=old_md)
        schema = md.schema
    elif snapshot is not None and md is not old_md:
        md = _with_table_defaults(md, existing=old_md)
    return operation, old_md, md, conformed, schema


def start_write(
    table: Table,
    snapshot: Snapshot | None,
    operation: str,
    md: Metadata,
    old_md: Metadata | None,
    *,
    mode: str,
    app_id: str | None = None,
    app_version: int | None = None,
    predicate: str | None = None,
    user_metadata: str | None = None,
) -> tuple[Transaction, Protocol] | None:
    """The transaction of a write: its metadata, the protocol it needs and its `txn` app id.

    None when `app_id` already committed `app_version` or later (an idempotent retry: nothing to do).

    Raises:
        WriteRefusedError: `app_id` without `app_version`.
    """
    txn = Transaction(
        table,
        operation=operation,
        parameters={"mode": mode.capitalize(), "partitionBy": json.dumps(list(md.partition_columns))}
        | ({"predicate": predicate} if predicate else {}),
        read_snapshot=snapshot,
        user_metadata=user_metadata,
    )
    if snapshot is None or md != old_md:
        txn.update_metadata(md)
    protocol = txn.upgrade_protocol_for(md)
    if app_id is not None:
        if app_version is None:
            raise WriteRefusedError("app_id needs app_version")
        done = txn.app_transaction_version(app_id)
        if done is not None and done >= app_version:
            return None
        txn.set_app_transaction(app_id, app_version)
    return txn, protocol
