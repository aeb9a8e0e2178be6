"""The live rows of files an operation rewrites (DELETE and UPDATE by rewrite, OPTIMIZE, DV
purge), with their stable row ids and commit versions when the table tracks rows; and the rule
that rows of data files outside the table root are never copied into it."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.snapshot import Snapshot
from deltaexplore.errors import WriteRefusedError

__all__ = ["read_files_for_rewrite", "refuse_copy_from_outside"]


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
