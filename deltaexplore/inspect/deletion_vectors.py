"""Deletion vectors: what they cost per file and per DV file, and which rows they delete.

Everything per file comes from the add actions' `deletionVector` descriptors (no DV file is
read): cardinality, deleted ratio, storage kind, where the DV lives and how many data files share
that DV file. Deleted row positions are read on demand for one file with the core's
`read_deletion_vector` (validated: size, CRC-32, magic and cardinality).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.arrow import combined
from deltaexplore.core.protocol.deletion_vectors import DeletionVectorDescriptor, read_deletion_vector
from deltaexplore.core.scan.partition_values import partition_keys
from deltaexplore.core.scan.stats import num_records
from deltaexplore.errors import DeletionVectorError, DeltaExploreError
from deltaexplore.inspect.errors import InspectError
from deltaexplore.inspect.file_columns import dv_ids
from deltaexplore.inspect.results import conform, sorted_rows
from deltaexplore.inspect.schemas import DELETED_ROWS_SCHEMA, DV_FILES_SCHEMA, DV_SCHEMA
from deltaexplore.inspect.snapshots import snapshot_of

if TYPE_CHECKING:
    from deltaexplore.core.snapshot import Snapshot
    from deltaexplore.core.table import Table

__all__ = [
    "DEFAULT_PURGE_THRESHOLD",
    "DV_COLUMNS",
    "deleted_rows",
    "deletion_vectors",
    "dv_files",
    "dv_files_of",
    "dv_table",
    "storage_names",
]

#: Delta's `spark.databricks.delta.optimize.maxDeletedRowsRatio` default: OPTIMIZE rewrites files
#: whose deleted-row ratio exceeds it
DEFAULT_PURGE_THRESHOLD = 0.05

_STORAGE = {"i": "inline", "u": "file", "p": "absolute"}


def storage_names(storage_types: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """A DV's `storageType` code as a word: inline (i), file (u: next to the table's data),
    absolute (p: an absolute path); other codes as written, null where there is no DV."""
    out = storage_types
    for code, name in _STORAGE.items():
        out = pc.if_else(pc.equal(storage_types, code), name, out)
    return out


def _dv_adds(snap: Snapshot) -> tuple[pa.Table, np.ndarray]:
    """The adds with a deletion vector (only the columns the DV tables use, so the big stats
    column is never copied) and their row numbers in `add_actions()`."""
    adds = snap.add_actions()
    if adds.num_rows == 0:
        return adds.select(DV_COLUMNS), np.zeros(0, dtype=np.int64)
    dv = combined(adds.column("deletionVector"))
    if dv.null_count == len(dv):
        return adds.select(DV_COLUMNS).slice(0, 0), np.zeros(0, dtype=np.int64)
    valid = dv.is_valid()
    return adds.select(DV_COLUMNS).filter(valid), np.flatnonzero(np.asarray(valid))


#: the add-action columns `dv_table` reads
DV_COLUMNS = ["path", "partitionValues", "size", "deletionVector"]


def _dv_paths(storage_types: pa.Array, encoded: pa.Array) -> pa.Array:
    """Resolved DV file path per descriptor (null for inline), decoding each distinct value once."""
    frame = pl.DataFrame({"t": pl.from_arrow(storage_types), "p": pl.from_arrow(encoded)})
    uniq = frame.unique(maintain_order=True)
    resolved: list[str | None] = []
    for t, p in uniq.iter_rows():
        if t == "i" or t is None or p is None:
            resolved.append(None)
            continue
        try:
            resolved.append(DeletionVectorDescriptor(t, p, 0, 0).file_path())
        except DeltaExploreError:
            resolved.append(None)
    lookup = uniq.with_columns(pl.Series("resolved", resolved, dtype=pl.String))
    out = frame.join(lookup, on=["t", "p"], how="left", maintain_order="left", nulls_equal=True).get_column("resolved")
    return out.to_arrow().cast(pa.string())


def deletion_vectors(
    obj: Table | Snapshot, *, version: int | None = None, purge_threshold: float = DEFAULT_PURGE_THRESHOLD
) -> pa.Table:
    """One row per active file with a deletion vector (`DV_SCHEMA`), most deleted first.

    Columns: path, partition, num_records, cardinality (rows deleted), live_rows,
    deleted_ratio, storage (inline | file | absolute), dv_path (the DV file; null inline),
    offset, dv_bytes (serialized bitmap size), dv_id, shared_by (data files whose DVs live in
    the same DV file), past_threshold (`deleted_ratio >= purge_threshold`, default 0.05: Delta's
    OPTIMIZE `maxDeletedRowsRatio`, above which files are worth rewriting) and size (data file
    bytes). Read from the log only.
    """
    snap = snapshot_of(obj, version)
    adds, rows = _dv_adds(snap)
    if adds.num_rows == 0:
        return DV_SCHEMA.empty_table()
    return dv_table(snap, adds, num_records(snap.add_actions(), rows), purge_threshold)


def deleted_ratio(card: pa.Array, records: pa.Array) -> pa.Array:
    """Rows a DV deletes / the file's rows (null without a positive numRecords)."""
    return pc.divide(card.cast(pa.float64()), pc.if_else(pc.greater(records, 0), records, None).cast(pa.float64()))


def past_threshold(ratio: pa.Array, purge_threshold: float = DEFAULT_PURGE_THRESHOLD) -> pa.Array:
    """Files worth rewriting: `deleted_ratio >= purge_threshold` (false where unknown)."""
    return pc.fill_null(pc.greater_equal(ratio, float(purge_threshold)), False)


def dv_table(snap: Snapshot, adds: pa.Table, records: pa.Array, purge_threshold: float = DEFAULT_PURGE_THRESHOLD) -> pa.Table:
    """`DV_SCHEMA` of the adds with a deletion vector (path, partitionValues, size,
    deletionVector) and their numRecords, however they were gathered (the replayed state, a
    streaming pass): the one definition of its columns."""
    if adds.num_rows == 0:
        return DV_SCHEMA.empty_table()
    dv = combined(adds.column("deletionVector"))
    card = dv.field("cardinality").cast(pa.int64())
    st = dv.field("storageType").cast(pa.string())
    paths = _dv_paths(st, dv.field("pathOrInlineDv").cast(pa.string()))
    shared = pl.DataFrame({"p": pl.from_arrow(paths)}).select(
        pl.len().over("p").alias("n"), pl.col("p").is_null().alias("inline")
    )
    shared_by = shared.select(pl.when(pl.col("inline")).then(1).otherwise(pl.col("n")).cast(pl.Int64)).to_series().to_arrow()
    ratio = deleted_ratio(card, records)
    storage = storage_names(st)
    cols = {
        "path": combined(adds.column("path")).cast(pa.string()),
        "partition": partition_keys(snap, adds),
        "num_records": records,
        "cardinality": card,
        "live_rows": pc.subtract(records, card),
        "deleted_ratio": ratio,
        "storage": storage,
        "dv_path": paths,
        "offset": dv.field("offset"),
        "dv_bytes": dv.field("sizeInBytes"),
        "dv_id": dv_ids(adds),
        "shared_by": shared_by,
        "past_threshold": past_threshold(ratio, purge_threshold),
        "size": adds.column("size"),
    }
    out = conform(cols, DV_SCHEMA)
    return sorted_rows(out, [("cardinality", "descending"), ("path", "ascending")])


def dv_files(obj: Table | Snapshot, *, version: int | None = None, check_files: bool = False) -> pa.Table:
    """One row per deletion vector file (inline DVs grouped in one row) (`DV_FILES_SCHEMA`).

    Columns: dv_path, storage, data_files (files with a DV in it), cardinality (deleted rows it
    holds), dv_bytes (sum of the descriptors' sizeInBytes) and, with `check_files=True` (one
    HEAD request per DV file), file_bytes and exists.
    """
    dvs = deletion_vectors(obj, version=version)
    out = dv_files_of(dvs)
    if not check_files or out.num_rows == 0:
        return out
    snap = snapshot_of(obj, version)
    sizes: list[int | None] = []
    exists: list[bool | None] = []
    for p in out.column("dv_path").to_pylist():
        if p is None:
            sizes.append(None)
            exists.append(None)
            continue
        info = snap.storage.head(p)
        sizes.append(info.size if info else None)
        exists.append(info is not None)
    cols = {name: out.column(name) for name in out.column_names}
    cols["file_bytes"] = pa.array(sizes, pa.int64())
    cols["exists"] = pa.array(exists, pa.bool_())
    return conform(cols, DV_FILES_SCHEMA)


def dv_files_of(dvs: pa.Table) -> pa.Table:
    """`dv_files()` (without the storage checks) of a `DV_SCHEMA` table, whoever made it."""
    if dvs.num_rows == 0:
        return DV_FILES_SCHEMA.empty_table()
    frame = pl.from_arrow(dvs.select(["dv_path", "storage", "cardinality", "dv_bytes"]))
    assert isinstance(frame, pl.DataFrame)
    agg = (
        frame.group_by(["dv_path", "storage"])
        .agg(
            pl.len().cast(pl.Int64).alias("data_files"),
            pl.col("cardinality").sum().alias("cardinality"),
            pl.col("dv_bytes").cast(pl.Int64).sum().alias("dv_bytes"),
        )
        .sort(["data_files", "dv_path"], descending=[True, False], nulls_last=True)
    )
    out = agg.to_arrow()
    return conform({name: out.column(name) for name in out.column_names}, DV_FILES_SCHEMA)


def deleted_rows(obj: Table | Snapshot, path: str, *, version: int | None = None) -> pa.Table:
    """Deleted row positions of one data file (`DELETED_ROWS_SCHEMA`: path, row_index).

    Reads and validates the file's deletion vector (inline or from its DV file). A file without
    a deletion vector has no rows.

    Raises:
        InspectError: `path` is not an active file of the snapshot.
        DeletionVectorError: the DV is missing or corrupt.
    """
    snap = snapshot_of(obj, version)
    adds = snap.add_actions()
    mask = pc.equal(combined(adds.column("path")).cast(pa.string()), path) if adds.num_rows else pa.array([], pa.bool_())
    rows = adds.filter(mask) if adds.num_rows else adds
    if rows.num_rows == 0:
        raise InspectError(f"{path!r} is not an active file of {snap.table.uri} at version {snap.version}")
    descriptor = rows.column("deletionVector").combine_chunks()[0].as_py()
    if not descriptor:
        positions = np.zeros(0, dtype=np.int64)
    else:
        dv = DeletionVectorDescriptor.from_dict(descriptor)
        try:
            positions = read_deletion_vector(snap.storage, dv, data_file=path).astype(np.int64)
        except DeletionVectorError:
            raise
    return conform({"path": pa.repeat(pa.scalar(path, pa.string()), len(positions)), "row_index": positions}, DELETED_ROWS_SCHEMA)
