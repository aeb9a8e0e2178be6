"""Shared pieces of the local operations: opening tables, metrics tables, reading files to
rewrite (with row tracking preserved), and the numbers of rows of add actions."""

from __future__ import annotations

import os
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.files import num_records_of
from deltaexplore.core.scan import resolve_data_path
from deltaexplore.errors import CommitConflictError, DeltaExploreError, UnsupportedFeatureError, WriteRefusedError

if TYPE_CHECKING:
    from deltaexplore.core.catalog import CatalogClient
    from deltaexplore.core.snapshot import Snapshot
    from deltaexplore.core.table import Table
    from deltaexplore.core.transaction import CommitResult, Transaction
    from deltaexplore.storage import Storage

__all__ = [
    "commit_or_discard",
    "discard_files",
    "metrics_table",
    "open_for_write",
    "read_files_for_rewrite",
    "refuse_copy_from_outside",
    "row_counts",
]


def open_for_write(
    table: Table | str | os.PathLike[str] | Storage,
    storage_options: dict[str, Any] | None = None,
    catalog: CatalogClient | None = None,
) -> Table:
    """A `Table` from a table, path, URI or storage."""
    from deltaexplore.core.table import Table, open_table

    if isinstance(table, Table):
        return table
    return open_table(table, storage_options, catalog=catalog)


_TYPES: dict[type, pa.DataType] = {bool: pa.bool_(), int: pa.int64(), float: pa.float64(), str: pa.string()}


def metrics_table(values: dict[str, Any], types: dict[str, pa.DataType] | None = None) -> pa.Table:
    """One row of metrics; column types from `types`, else from the Python values."""
    types = types or {}
    cols = {}
    for key, value in values.items():
        typ = types.get(key)
        if typ is None:
            if isinstance(value, list):
                typ = pa.list_(pa.string())
            else:
                typ = pa.int64() if value is None else _TYPES.get(type(value), pa.string())
        cols[key] = pa.array([value], typ)
    return pa.table(cols)


def row_counts(snapshot: Snapshot, adds: pa.Table) -> np.ndarray:
    """Physical row count of each file (stats numRecords, else the parquet footer)."""
    counts = num_records_of(adds)
    if counts.null_count == 0:
        return counts.to_numpy(zero_copy_only=False).astype(np.int64)
    from deltaexplore.core.read import count_rows

    out = []
    storage = snapshot.storage
    for value, path in zip(counts.to_pylist(), adds.column("path").to_pylist()):
        if value is None:
            rel = resolve_data_path(storage, path)
            value = count_rows(storage, storage.location(rel), path=path)
        out.append(value)
    return np.asarray(out, dtype=np.int64)


def discard_files(table: Table, paths: list[str]) -> None:
    """Best effort: delete the files (log paths) an operation wrote for a commit that did not
    happen: data, change data and deletion vector files (else they wait for VACUUM)."""
    from urllib.parse import unquote

    for path in paths:
        try:
            table.storage.delete(unquote(path))
        except (DeltaExploreError, OSError):
            pass


def commit_or_discard(table: Table, txn: Transaction, written: list[str], *, max_retries: int | None) -> CommitResult:
    """Commit `txn`; when the commit surely did not happen (a conflict, a refusal), delete the
    files written for it (`written`, log paths). A storage failure while creating the commit
    file may hide a commit that landed: then the files stay (VACUUM removes them if not)."""
    try:
        return txn.commit(max_retries=max_retries)
    except (CommitConflictError, WriteRefusedError, UnsupportedFeatureError):
        discard_files(table, written)
        raise


def refuse_copy_from_outside(snapshot: Snapshot, files: pa.Table, operation: str) -> None:
    """Refuse an operation that would copy rows of data files outside the table root into it
    (the protocol lets a table refer to them; maintenance leaves them where they are).

    Raises:
        WriteRefusedError: some of `files` (add rows) lie outside the root.
    """
    if files.num_rows == 0:
        return
    outside = snapshot.storage.outside(files.column("path"))
    if outside.any():
        first = files.column("path")[int(np.flatnonzero(outside)[0])].as_py()
        raise WriteRefusedError(
            f"{operation} would copy rows of {int(outside.sum())} data file(s) outside the table root "
            f"{snapshot.table.uri} (e.g. {first}) into the table: refused; "
            "use deletion vectors (delta.enableDeletionVectors, without change data feed) to delete from them",
            path=first,
        )


def read_files_for_rewrite(snapshot: Snapshot, files: pa.Table) -> tuple[pa.Table, list[str]]:
    """The live rows of `files` (add rows of `snapshot`), logical columns, for rewriting.

    With row tracking enabled, the stable row ids and commit versions are carried along in the
    materialized columns the table names, so rewritten rows keep them.

    Returns:
        (rows, names of the extra materialized columns in them).
    """
    plan = snapshot.scan()
    wanted = pa.array(files.column("path").to_pylist(), pa.string())
    mask = pc.is_in(plan.files.column("path"), value_set=wanted)
    plan = replace(plan, files=plan.files.filter(mask), partition_values=plan.partition_values.filter(mask))
    if plan.files.num_rows != files.num_rows:
        raise WriteRefusedError(
            f"{files.num_rows - plan.files.num_rows} of the files to rewrite are not active in version {snapshot.version}"
        )
    config = snapshot.config
    if not config.row_tracking_enabled:
        return plan.to_arrow(), []
    rows = plan.to_arrow(row_tracking=True)
    id_col = config.materialized_row_id_column
    cv_col = config.materialized_row_commit_version_column
    if not id_col or not cv_col:
        return rows.drop_columns(["_row_id", "_row_commit_version"]), []
    names = rows.column_names
    rows = rows.rename_columns([id_col if n == "_row_id" else cv_col if n == "_row_commit_version" else n for n in names])
    return rows, [id_col, cv_col]
