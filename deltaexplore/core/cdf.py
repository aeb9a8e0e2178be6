"""Change data feed: the row-level changes of a range of versions.

Per commit: when it has `cdc` actions, its changes are exactly the rows of those change data
files (`_change_type` is a column in them); otherwise rows of added files are inserts and rows
of removed files are deletes (only actions with dataChange=true). Deletion vectors are honoured:
a file re-added with a larger DV yields deletes for the newly deleted rows only, and rows of a
file are only counted if they were live in it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.log.json_log import LogLines, read_log_files
from deltaexplore.core.log.state import TableState, read_log
from deltaexplore.core.protocol.actions import Metadata
from deltaexplore.core.protocol.deletion_vectors import DeletionVectorDescriptor, read_deletion_vector
from deltaexplore.core.protocol.partitions import parse_partition_column
from deltaexplore.core.protocol.schema import PrimitiveType, StructField, to_arrow_type
from deltaexplore.core.scan.data_file import constant_column, open_parquet, read_data_file, resolve_data_path
from deltaexplore.core.scan.plan import resolve_columns
from deltaexplore.errors import DeltaProtocolError, VersionNotFoundError

__all__ = ["CHANGE_COLUMNS", "change_commits", "read_changes"]

CHANGE_COLUMNS = [
    pa.field("_change_type", pa.string()),
    pa.field("_commit_version", pa.int64()),
    pa.field("_commit_timestamp", pa.timestamp("ms", tz="UTC")),
]


def _cdf_enabled(md: Metadata) -> bool:
    return str(md.configuration.get("delta.enableChangeDataFeed", "false")).lower() == "true"


def change_commits(end_snap: TableState, start_version: int) -> LogLines:
    """The commits `start_version`..`end_snap.version` read as lines, for a change data feed.

    Raises:
        VersionNotFoundError: the start is outside the table, or a commit of the range is gone.
        DeltaProtocolError: change data feed is not enabled at some version of the range.
    """
    end = end_snap.version
    if start_version < 0 or start_version > end:
        raise VersionNotFoundError(f"start version {start_version} is outside 0..{end} of {end_snap.uri}")
    listing = end_snap.listing
    versions = list(range(start_version, end + 1))
    missing = [v for v in versions if listing.commit(v) is None]
    if missing:
        raise VersionNotFoundError(
            f"change data feed of {end_snap.uri} needs commits {start_version}..{end}; {len(missing)} are no longer in the log "
            f"(first missing: {missing[0]})"
        )
    lines = read_log_files(end_snap.storage, [listing.commit(v) for v in versions], versions)  # type: ignore[misc]
    # CDF must be enabled at every version of the range (metadata may change inside it).
    start_snap = (
        end_snap if start_version == end else TableState(end_snap.storage, read_log(end_snap.storage, listing, start_version))
    )
    metadata = start_snap.metadata
    metadata_at = {version: Metadata.from_json(body) for _, version, body in lines.objects("metaData")}
    for v in versions:
        metadata = metadata_at.get(v, metadata)
        if not _cdf_enabled(metadata):
            raise DeltaProtocolError(
                f"change data feed is not enabled on {end_snap.uri} at version {v} "
                "(set delta.enableChangeDataFeed = true; changes before that cannot be read)"
            )
    return lines


def read_changes(end_snap: TableState, start_version: int, *, columns: list[str] | None = None) -> pa.Table:
    """Change data feed rows for versions `start_version`..`end_snap.version` (see the module
    docstring)."""
    end = end_snap.version
    lines = change_commits(end_snap, start_version)

    fields = resolve_columns(end_snap.schema, columns)
    out_schema = pa.schema([pa.field(f.name, to_arrow_type(f.type)) for f in fields] + CHANGE_COLUMNS)
    clock = end_snap.clock
    adds = lines.file_actions("add")
    removes = lines.file_actions("remove")
    cdcs = lines.file_actions("cdc")
    cdc_versions = set(cdcs.column("version").to_pylist())
    pieces: list[pa.Table] = []
    for v in range(start_version, end + 1):
        ts = clock.timestamp(v)
        if v in cdc_versions:
            rows = cdcs.filter(pc.equal(cdcs.column("version"), v))
            for i in range(rows.num_rows):
                pieces.append(_read_cdc(end_snap, rows.slice(i, 1), fields, v, ts))
            continue
        a = adds.filter(pc.and_(pc.equal(adds.column("version"), v), pc.fill_null(adds.column("dataChange"), True)))
        r = removes.filter(pc.and_(pc.equal(removes.column("version"), v), pc.fill_null(removes.column("dataChange"), True)))
        pieces.extend(_file_changes(end_snap, a, r, fields, v, ts))
    pieces = [p.select(out_schema.names).cast(out_schema) for p in pieces if p.num_rows]
    return pa.concat_tables(pieces) if pieces else out_schema.empty_table()


def _dv_of(row: dict[str, Any]) -> DeletionVectorDescriptor | None:
    dv = row.get("deletionVector")
    return DeletionVectorDescriptor.from_dict(dv) if dv else None


def _file_changes(
    snap: TableState, adds: pa.Table, removes: pa.Table, fields: list[Any], version: int, ts: int
) -> list[pa.Table]:
    storage = snap.storage
    out = []
    removed = {r["path"]: r for r in removes.to_pylist()}
    added_paths = set()
    for row in adds.to_pylist():
        path = row["path"]
        added_paths.add(path)
        new_dv = _dv_of(row)
        old = removed.get(path)
        new_deleted = _deleted(storage, new_dv, path)
        if old is not None:
            # Same data file with a new deletion vector: only the difference changed.
            old_deleted = _deleted(storage, _dv_of(old), path)
            gone = np.setdiff1d(new_deleted, old_deleted)
            back = np.setdiff1d(old_deleted, new_deleted)
            if len(gone):
                out.append(_read_rows(snap, row, fields, keep=gone, change="delete", version=version, ts=ts))
            if len(back):
                out.append(_read_rows(snap, row, fields, keep=back, change="insert", version=version, ts=ts))
            continue
        out.append(_read_rows(snap, row, fields, deleted=new_deleted, change="insert", version=version, ts=ts))
    for path, row in removed.items():
        if path in added_paths:
            continue
        out.append(
            _read_rows(snap, row, fields, deleted=_deleted(storage, _dv_of(row), path), change="delete", version=version, ts=ts)
        )
    return out


def _deleted(storage: Any, dv: DeletionVectorDescriptor | None, path: str) -> np.ndarray:
    if dv is None:
        return np.zeros(0, dtype=np.uint64)
    return read_deletion_vector(storage, dv, data_file=path)


def _partition_arrays(snap: TableState, row: dict[str, Any], fields: list[Any], n: int) -> dict[str, pa.Array]:
    parts = set(snap.partition_columns)
    pv = row.get("partitionValues") or []
    pv_map = dict(pv)
    out = {}
    for f in fields:
        if f.name not in parts:
            continue
        key = f.physical_name if snap.column_mapping_mode != "none" else f.name
        raw = pv_map.get(key, pv_map.get(f.name))
        value = parse_partition_column(pa.array([raw], pa.string()), f.type, column=f.name)
        out[f.name] = constant_column(value, to_arrow_type(f.type), n)
    return out


def _read_rows(
    snap: TableState,
    row: dict[str, Any],
    fields: list[Any],
    *,
    change: str,
    version: int,
    ts: int,
    deleted: np.ndarray | None = None,
    keep: np.ndarray | None = None,
) -> pa.Table:
    storage = snap.storage
    path = row["path"]
    location = storage.location(resolve_data_path(storage, path))
    parts = set(snap.partition_columns)
    data_fields = [f for f in fields if f.name not in parts]
    if keep is not None:
        n_rows = open_parquet(storage, location, path=path).metadata.num_rows
        mask = np.ones(n_rows, dtype=bool)
        mask[keep.astype(np.int64)] = False
        deleted = np.flatnonzero(mask).astype(np.uint64)
    cols, n, _ = read_data_file(
        storage, location, path=path, read_fields=data_fields, mode=snap.column_mapping_mode, deleted_rows=deleted
    )
    cols.update(_partition_arrays(snap, row, fields, n))
    cols["_change_type"] = constant_column(change, pa.string(), n)
    cols["_commit_version"] = constant_column(version, pa.int64(), n)
    cols["_commit_timestamp"] = constant_column(ts, pa.int64(), n).cast(pa.timestamp("ms", tz="UTC"))
    return pa.table(cols)


def _read_cdc(snap: TableState, action: pa.Table, fields: list[Any], version: int, ts: int) -> pa.Table:
    storage = snap.storage
    row = action.to_pylist()[0]
    path = row["path"]
    location = storage.location(resolve_data_path(storage, path))
    parts = set(snap.partition_columns)
    data_fields = [f for f in fields if f.name not in parts]
    change_field = StructField("_change_type", PrimitiveType("string"))
    cols, n, _ = read_data_file(
        storage, location, path=path, read_fields=[*data_fields, change_field], mode=snap.column_mapping_mode
    )
    if cols["_change_type"].null_count == n and n:
        # In name/id mode the change type column is still called _change_type.
        cols2, _, _ = read_data_file(storage, location, path=path, read_fields=[change_field], mode="none")
        cols["_change_type"] = cols2["_change_type"]
    cols.update(_partition_arrays(snap, row, fields, n))
    cols["_commit_version"] = constant_column(version, pa.int64(), n)
    cols["_commit_timestamp"] = constant_column(ts, pa.int64(), n).cast(pa.timestamp("ms", tz="UTC"))
    return pa.table(cols)
