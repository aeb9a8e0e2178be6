"""What every table operation does, whichever engine does the data work: open the table for
writing, stage one transaction, commit it (deleting the files written for it when it does not
commit), and report one row of metrics in the operation's declared schema.

The local operations of this package and the Spark layer (`deltaexplore.spark`) run the same
skeleton, so a result has the same columns on both engines:

    with OperationRun.start(table, "DELETE", DELETE_METRICS, read_snapshot=snap, parameters=p, dry_run=d) as op:
        op.metrics.update(num_deleted_rows=...)      # the plan's numbers
        if op.dry_run:
            return op.result()                       # version stays null
        adds = op.written(write_data_files(...))     # deleted again if anything below fails
        op.txn.add_files(adds)
        return op.commit(max_retries=10)             # version filled in

Every metrics schema is declared here (`METRICS`); `metrics_table` builds the one row.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from types import TracebackType
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.log.catalog import CatalogClient
from deltaexplore.core.snapshot import Snapshot
from deltaexplore.core.table import Table, open_table
from deltaexplore.core.write.transaction import Transaction
from deltaexplore.errors import DeltaExploreError, StorageError
from deltaexplore.storage import Storage

__all__ = [
    "CHECKPOINT_METRICS",
    "DELETE_METRICS",
    "MERGE_METRICS",
    "METRICS",
    "OPTIMIZE_METRICS",
    "RESTORE_METRICS",
    "SET_PROPERTIES_METRICS",
    "UPDATE_METRICS",
    "VACUUM_METRICS",
    "WRITE_METRICS",
    "OperationRun",
    "discard",
    "metrics_table",
    "open_for_write",
    "total_bytes",
]


def _schema(*fields: tuple[str, pa.DataType, str]) -> pa.Schema:
    """A metrics schema: operation, version and dry_run first, then the operation's own."""
    common = (
        ("operation", pa.string(), "the operation committed (as in commitInfo)"),
        ("version", pa.int64(), "the version committed (null: a dry run, or nothing to do)"),
        ("dry_run", pa.bool_(), "planned only: nothing was written"),
    )
    return pa.schema([pa.field(name, typ, metadata={"doc": doc}) for name, typ, doc in (*common, *fields)])


_I, _S, _B = pa.int64(), pa.string(), pa.bool_()

WRITE_METRICS = _schema(
    ("skipped", _B, "nothing written: the table exists (mode 'ignore') or the app version was committed already"),
    ("num_added_files", _I, "data files added"),
    ("num_removed_files", _I, "data files removed (overwrite)"),
    ("num_added_bytes", _I, "bytes of the files added"),
    ("num_output_rows", _I, "rows written"),
    ("schema_changed", _B, "the write changed the table's schema"),
)
_DML = (
    ("num_removed_files", _I, "data files removed (whole, or replaced by a file with a new deletion vector)"),
    ("num_added_files", _I, "data files added"),
    ("num_deletion_vectors_added", _I, "files given a (new) deletion vector"),
    ("num_copied_rows", _I, "unchanged rows copied into rewritten files"),
    ("num_added_change_files", _I, "change data files added"),
)
DELETE_METRICS = _schema(("num_deleted_rows", _I, "rows deleted"), *_DML)
UPDATE_METRICS = _schema(("num_updated_rows", _I, "rows updated"), *_DML)
MERGE_METRICS = _schema(
    ("num_source_rows", _I, "rows of the source"),
    ("num_target_rows_inserted", _I, "source rows inserted (WHEN NOT MATCHED)"),
    ("num_target_rows_updated", _I, "target rows updated (matched and not matched by source)"),
    ("num_target_rows_matched_updated", _I, "target rows updated by a WHEN MATCHED clause"),
    ("num_target_rows_not_matched_by_source_updated", _I, "target rows updated by a WHEN NOT MATCHED BY SOURCE clause"),
    ("num_target_rows_deleted", _I, "target rows deleted (matched and not matched by source)"),
    ("num_target_rows_matched_deleted", _I, "target rows deleted by a WHEN MATCHED clause"),
    ("num_target_rows_not_matched_by_source_deleted", _I, "target rows deleted by a WHEN NOT MATCHED BY SOURCE clause"),
    ("num_target_rows_copied", _I, "unchanged target rows copied into rewritten files"),
    ("num_output_rows", _I, "rows written: inserted + updated + copied"),
    ("num_target_files_before_skipping", _I, "target files before pruning"),
    ("num_target_files_after_skipping", _I, "target files read (after partition and statistics pruning)"),
    ("num_target_files_added", _I, "data files added"),
    ("num_target_files_removed", _I, "data files removed (rewritten, or every row deleted)"),
    ("num_target_change_files_added", _I, "change data files added"),
    ("num_target_bytes_added", _I, "bytes of the data files added"),
    ("num_target_bytes_removed", _I, "bytes of the data files removed"),
    ("num_target_deletion_vectors_added", _I, "files given a (new) deletion vector"),
    ("num_target_deletion_vectors_removed", _I, "deletion vectors dropped (replaced, or their file removed)"),
    ("num_target_deletion_vectors_updated", _I, "deletion vectors replaced by a larger one"),
)
OPTIMIZE_METRICS = _schema(
    ("num_bins", _I, "groups of files rewritten together"),
    ("num_files_removed", _I, "data files removed"),
    ("num_files_added", _I, "data files added"),
    ("bytes_removed", _I, "bytes of the files removed"),
    ("bytes_added", _I, "bytes of the files added"),
    ("num_partitions_optimized", _I, "partitions with a rewritten bin"),
    ("total_considered_files", _I, "files of the partitions looked at"),
    ("num_deleted_rows_purged", _I, "rows hidden by deletion vectors, dropped by the rewrite"),
)
VACUUM_METRICS = _schema(
    ("retention_hours", pa.float64(), "files removed from the state longer ago than this may go"),
    ("num_files", _I, "files deleted (or that would be)"),
    ("num_bytes", _I, "their bytes"),
    ("files", pa.list_(_S), "their table-relative paths"),
)
RESTORE_METRICS = _schema(
    ("restored_version", _I, "the version restored"),
    ("num_restored_files", _I, "files re-added"),
    ("num_removed_files", _I, "files removed"),
    ("restored_files_size", _I, "bytes re-added"),
    ("removed_files_size", _I, "bytes removed"),
    ("table_size_after_restore", _I, "bytes of the table afterwards"),
    ("num_files_after_restore", _I, "files of the table afterwards"),
)
CHECKPOINT_METRICS = _schema(
    ("kind", _S, "classic, v2 (parquet or json top file) or auto"),
    ("path", _S, "the checkpoint file (its top file for V2)"),
    ("num_actions", _I, "actions in the checkpoint"),
    ("num_add_files", _I, "add actions in it"),
    ("size_in_bytes", _I, "bytes written"),
    ("written", _B, "false when that checkpoint existed already"),
)
SET_PROPERTIES_METRICS = _schema(
    ("protocol", _S, "the protocol after the change (JSON)"),
    ("properties", _S, "the table properties after the change (JSON)"),
)

#: the metrics schema of each operation name a result carries (DV purge commits as REORG)
METRICS: dict[str, pa.Schema] = {
    "WRITE": WRITE_METRICS,
    "CREATE TABLE": WRITE_METRICS,
    "DELETE": DELETE_METRICS,
    "UPDATE": UPDATE_METRICS,
    "MERGE": MERGE_METRICS,
    "OPTIMIZE": OPTIMIZE_METRICS,
    "REORG": OPTIMIZE_METRICS,
    "VACUUM": VACUUM_METRICS,
    "RESTORE": RESTORE_METRICS,
    "CHECKPOINT": CHECKPOINT_METRICS,
    "SET TBLPROPERTIES": SET_PROPERTIES_METRICS,
}


def metrics_table(values: dict[str, Any], schema: pa.Schema) -> pa.Table:
    """The one row of metrics: every column of `schema`, in its order (null where `values` has
    no value).

    Raises:
        ValueError: `values` names a column the schema does not declare (a programming error:
            results must keep their declared columns).
    """
    unknown = sorted(set(values) - set(schema.names))
    if unknown:
        raise ValueError(f"metrics {unknown} are not in the declared schema ({', '.join(schema.names)})")
    return pa.table([pa.array([values.get(f.name)], f.type) for f in schema], schema=schema)


def total_bytes(files: pa.Table) -> int:
    """Bytes of the files of an add (or remove) table."""
    return int(pc.sum(files.column("size")).as_py() or 0) if files.num_rows else 0


def open_for_write(
    table: Table | str | os.PathLike[str] | Storage,
    storage_options: dict[str, Any] | None = None,
    catalog: CatalogClient | None = None,
) -> Table:
    """A `Table` from a table, path, URI or storage."""
    if isinstance(table, Table):
        return table
    return open_table(table, storage_options, catalog=catalog)


def discard(table: Table, files: pa.Table) -> None:
    """Best effort: delete data files written for a commit that did not happen (else VACUUM
    removes them)."""
    for path in files.column("path").to_pylist() if files.num_rows else []:
        try:
            table.storage.delete(unquote(path))
        except (DeltaExploreError, OSError):
            pass


class OperationRun:
    """One operation on a table: its transaction, its metrics row, and what to undo when it does
    not commit (see the module docstring). Use it as a context manager: when the block ends
    without a commit (an error before it, a refused commit — a `DeltaExploreError` — or no commit
    at all), the files registered with `written` are deleted and the `on_failure` callbacks run;
    when the commit fails in any other way, or with a `StorageError` (its outcome unknown), the
    files are kept."""

    def __init__(
        self,
        table: Table,
        schema: pa.Schema,
        metrics: dict[str, Any],
        txn: Transaction | None = None,
        *,
        begin: Callable[[], Transaction] | None = None,
    ) -> None:
        self.table = table
        self.schema = schema
        self.metrics = metrics
        self._txn = txn
        self._begin = begin
        self._written: list[pa.Table] = []
        self._on_failure: list[Callable[[], None]] = []
        self._committing = False

    @classmethod
    def start(
        cls,
        table: Table,
        operation: str,
        schema: pa.Schema,
        *,
        read_snapshot: Snapshot | None,
        parameters: dict[str, Any] | None = None,
        dry_run: bool = False,
        metrics: dict[str, Any] | None = None,
    ) -> OperationRun:
        """An operation on `read_snapshot`, its metrics row started at (`operation`, version
        null, `dry_run`) plus `metrics`; its transaction begins when first used (a dry run that
        never stages anything starts none)."""

        def begin() -> Transaction:
            return Transaction(table, operation=operation, parameters=parameters, read_snapshot=read_snapshot)

        values = {"operation": operation, "version": None, "dry_run": dry_run, **(metrics or {})}
        return cls(table, schema, values, begin=begin)

    @property
    def txn(self) -> Transaction:
        """The operation's transaction."""
        if self._txn is None and self._begin is not None:
            self._txn = self._begin()
        if self._txn is None:
            raise DeltaExploreError(f"{self.metrics.get('operation')} has no transaction (a skipped or read-only operation)")
        return self._txn

    @property
    def dry_run(self) -> bool:
        return bool(self.metrics.get("dry_run"))

    def written(self, files: pa.Table) -> pa.Table:
        """Register files written for this operation (deleted if it does not commit); returns them."""
        self._written.append(files)
        return files

    def written_path(self, path: str) -> str:
        """Register one file (a log path: a deletion vector file, ...) about to be written for
        this operation (deleted if it does not commit); returns it."""
        self._written.append(pa.table({"path": pa.array([path], pa.string())}))
        return path

    def on_failure(self, undo: Callable[[], None]) -> None:
        """Run `undo` (best effort) if the operation does not commit."""
        self._on_failure.append(undo)

    def result(self) -> pa.Table:
        """The metrics row as it stands."""
        return metrics_table(self.metrics, self.schema)

    def commit(self, *, max_retries: int | None = None) -> pa.Table:
        """Commit the transaction; the metrics row with the version committed (`max_retries`:
        see `Transaction.commit`)."""
        self._committing = True
        self.metrics["version"] = self.txn.commit(max_retries=max_retries).version
        self._committing = False
        self._written.clear()
        self._on_failure.clear()
        return self.result()

    def __enter__(self) -> OperationRun:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        if (
            error is not None
            and self._committing
            and (isinstance(error, StorageError) or not isinstance(error, DeltaExploreError))
        ):
            # the commit's outcome is unknown (creating the commit file may have failed after it
            # landed): the files stay (VACUUM removes them if unused)
            return
        if error is None and not self._written and not self._on_failure:
            return  # committed, or nothing was written
        for files in self._written:
            discard(self.table, files)
        for undo in self._on_failure:
            try:
                undo()
            except Exception:  # noqa: BLE001 - best effort: the original error is what matters
                pass
