"""Time travel reach and VACUUM impact: which versions can still be read, and what VACUUM frees.

A version is readable when its log can be reconstructed (a checkpoint at or before it, or the
first commit, and every commit after that) and every data and deletion vector file of its state
is on storage. File presence is computed once for all versions: each file's lifetime becomes an
interval of versions (from the actions of the retained log, applied from the earliest
reconstructable base), storage is listed once, and the missing files per version come from a
difference array over those intervals. Vectorized with polars/numpy.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.arguments import number
from deltaexplore.core.arrow import combined
from deltaexplore.core.log.json_log import read_log_files
from deltaexplore.core.log.replay import dv_unique_id
from deltaexplore.core.operations.vacuum import MAX_RETENTION_HOURS, list_vacuumable, plan_vacuum, vacuum_partition_names
from deltaexplore.core.protocol.config import DEFAULT_DELETED_FILE_RETENTION_MS, DEFAULT_LOG_RETENTION_MS
from deltaexplore.errors import DeltaExploreError, UnsupportedFeatureError, WriteRefusedError
from deltaexplore.inspect.deletion_vectors import _dv_paths
from deltaexplore.inspect.errors import InspectError
from deltaexplore.inspect.results import conform, to_ts
from deltaexplore.inspect.schemas import VACUUM_SCHEMA, VERSIONS_SCHEMA
from deltaexplore.inspect.snapshots import snapshot_of, table_of

if TYPE_CHECKING:
    from deltaexplore.core.log.segment import LogListing
    from deltaexplore.core.snapshot import Snapshot
    from deltaexplore.core.table import Table

__all__ = ["list_table_files", "reconstructable_versions", "vacuum_preview"]


def list_table_files(table: Table) -> pa.Table:
    """Every file under the table root except `_delta_log/` (path relative, size, mtime ms);
    directory symlinks are not followed (`Storage.list_tree`)."""
    listed = table.storage.list_tree(skip_dir=lambda d: d == "_delta_log")
    return listed.rename_columns(["path", "size", "mtime"])


def relative_to_root(paths: pa.Array, root: str) -> pa.Array:
    """Absolute paths (or `file:` URIs) under the table root made table-relative; others unchanged."""
    if len(paths) == 0:
        return paths
    out = paths
    if pc.any(pc.fill_null(pc.starts_with(out, "file:"), False)).as_py():
        out = _strip_file_scheme(out)
    prefix = root.rstrip("/") + "/"
    under = pc.fill_null(pc.starts_with(out, prefix), False)
    if pc.any(under).as_py():
        out = pc.if_else(under, pc.utf8_slice_codeunits(out, len(prefix)), out)
    return out


def _strip_file_scheme(paths: pa.Array) -> pa.Array:
    """`file:///a/b`, `file:/a/b`, `file://localhost/a/b` -> `/a/b`."""
    out = pc.replace_substring_regex(paths, "^file://localhost/", "/")
    out = pc.replace_substring_regex(out, "^file:///", "/")
    return pc.replace_substring_regex(out, "^file:/", "/")


def _decode(paths: pa.Array) -> pa.Array:
    """URL-decode log paths (only the distinct values that need it)."""
    if len(paths) == 0:
        return paths
    needs = pc.fill_null(pc.match_substring(paths, "%"), False)
    if not pc.any(needs).as_py():
        return paths
    frame = pl.DataFrame({"p": pl.from_arrow(paths)})
    uniq = frame.filter(pl.col("p").str.contains("%", literal=True)).unique()
    lookup = uniq.with_columns(pl.Series("d", [unquote(p) for p in uniq.get_column("p").to_list()], dtype=pl.String))
    out = frame.join(lookup, on="p", how="left", maintain_order="left").select(pl.coalesce("d", "p")).to_series()
    return out.to_arrow().cast(pa.string())


@dataclass
class _Lifetimes:
    """For each retained version: reconstructable or not; for each file: [start, end] versions."""

    versions: np.ndarray  # sorted versions the log knows
    ok: np.ndarray  # log reconstructable
    files: pl.DataFrame  # path (decoded, table-relative or absolute), start, end (inclusive)
    latest: int


def _log_versions(listing: LogListing) -> tuple[np.ndarray, np.ndarray]:
    present = set(listing.commits) | set(listing.ratified)
    compacted: set[int] = set()
    for c in listing.compactions:
        compacted |= set(range(c.version, c.end_version + 1))
    versions = sorted(present | compacted | set(listing.checkpoints))
    if listing.catalog_latest is not None:
        versions = [v for v in versions if v <= listing.catalog_latest]
    ok = np.zeros(len(versions), dtype=bool)
    prev_v, prev_ok = None, False
    for i, v in enumerate(versions):
        has_commit = v in present or v in compacted
        if v in listing.checkpoints:
            ok[i] = True
        elif has_commit and (v == 0 or (prev_v == v - 1 and prev_ok)):
            ok[i] = True
        prev_v, prev_ok = v, bool(ok[i])
    return np.asarray(versions, dtype=np.int64), ok


def _lifetimes(table: Table) -> _Lifetimes:
    listing = table.listing()
    versions, ok = _log_versions(listing)
    pieces: list[pl.DataFrame] = []
    i = 0
    n = len(versions)
    while i < n:
        if not ok[i]:
            i += 1
            continue
        j = i
        while j + 1 < n and ok[j + 1] and versions[j + 1] == versions[j] + 1:
            j += 1
        pieces.append(_run_lifetimes(table, listing, int(versions[i]), int(versions[j])))
        i = j + 1
    files = pl.concat(pieces) if pieces else pl.DataFrame(schema={"path": pl.String, "start": pl.Int64, "end": pl.Int64})
    return _Lifetimes(versions, ok, files, int(versions[-1]) if n else -1)


def _paths_of(adds: pa.Table, root: str) -> pa.Array:
    """Data file paths, URL-decoded and table-relative where they are under the root."""
    return relative_to_root(_decode(combined(adds.column("path")).cast(pa.string())), root)


def _run_lifetimes(table: Table, listing: LogListing, start: int, end: int) -> pl.DataFrame:
    """File lifetimes for a run of reconstructable versions start..end (start is a base)."""
    base = table.snapshot(start)
    base_adds = base.add_actions()
    commits = [listing.commit(v) for v in range(start + 1, end + 1)]
    known = [(v, f) for v, f in zip(range(start + 1, end + 1), commits) if f is not None]
    lines = read_log_files(table.storage, [f for _, f in known], [v for v, _ in known]) if known else None
    root = table.storage.root
    frames = [
        _events(base_adds, np.full(base_adds.num_rows, start, np.int64), np.arange(base_adds.num_rows) - (1 << 40), True, root)
    ]
    if lines is not None:
        for kind, is_add in (("add", True), ("remove", False)):
            acts = lines.file_actions(kind)
            frames.append(_events(acts, acts.column("version").to_numpy(), acts.column("line").to_numpy(), is_add, root))
    ev = pl.concat([f for f in frames if f.height], how="vertical") if any(f.height for f in frames) else frames[0]
    if ev.height == 0:
        return pl.DataFrame(schema={"path": pl.String, "start": pl.Int64, "end": pl.Int64})
    ev = ev.sort(["key", "dv", "order"])
    ev = ev.with_columns(
        pl.col("version").shift(-1).over(["key", "dv"]).alias("next_version"),
    )
    adds = ev.filter(pl.col("is_add")).select(
        pl.col("key").alias("path"),
        pl.col("dv_path"),
        pl.col("version").alias("start"),
        (pl.coalesce(pl.col("next_version") - 1, pl.lit(end))).alias("end"),
    )
    adds = adds.filter(pl.col("end") >= pl.col("start"))
    dv_files = adds.filter(pl.col("dv_path").is_not_null()).select(pl.col("dv_path").alias("path"), "start", "end")
    return pl.concat([adds.select("path", "start", "end"), dv_files], how="vertical")


def _events(actions: pa.Table, versions: np.ndarray, order: np.ndarray, is_add: bool, root: str) -> pl.DataFrame:
    n = actions.num_rows
    if n == 0:
        return pl.DataFrame(
            schema={
                "key": pl.String,
                "dv": pl.String,
                "dv_path": pl.String,
                "version": pl.Int64,
                "order": pl.Int64,
                "is_add": pl.Boolean,
            }
        )
    dv = combined(actions.column("deletionVector"))
    if dv.null_count < n:
        st = pc.if_else(pc.is_valid(dv), dv.field("storageType"), pa.scalar(None, pa.string()))
        dv_path = relative_to_root(_decode(_dv_paths(st.cast(pa.string()), dv.field("pathOrInlineDv").cast(pa.string()))), root)

        dv_id = dv_unique_id(dv).cast(pa.string())
    else:
        dv_path = pa.nulls(n, pa.string())
        dv_id = pa.nulls(n, pa.string())
    return pl.DataFrame(
        {
            "key": pl.from_arrow(_paths_of(actions, root)),
            "dv": pl.from_arrow(dv_id),
            "dv_path": pl.from_arrow(dv_path),
            "version": versions.astype(np.int64),
            "order": order.astype(np.int64),
            "is_add": np.full(n, is_add),
        }
    )


def _count_per_version(files: pl.DataFrame, versions: np.ndarray) -> np.ndarray:
    """Number of intervals [start, end] covering each version."""
    if files.height == 0 or len(versions) == 0:
        return np.zeros(len(versions), np.int64)
    lo = np.searchsorted(versions, files.get_column("start").to_numpy(), side="left")
    hi = np.searchsorted(versions, files.get_column("end").to_numpy(), side="right")
    diff = np.zeros(len(versions) + 1, np.int64)
    np.add.at(diff, lo, 1)
    np.add.at(diff, hi, -1)
    return np.cumsum(diff)[:-1]


def _missing(files: pl.DataFrame, listed: pa.Table, extra_deleted: set[str] | None = None) -> pl.DataFrame:
    """The intervals of files that are not on storage (relative paths only)."""
    if files.height == 0:
        return files
    on_storage = pl.from_arrow(listed.select(["path"]))
    assert isinstance(on_storage, pl.DataFrame)
    rel = files.filter(~pl.col("path").str.contains("://", literal=True) & ~pl.col("path").str.starts_with("/"))
    absent = rel.join(on_storage, on="path", how="anti")
    if extra_deleted:
        gone = rel.filter(pl.col("path").is_in(list(extra_deleted)))
        absent = pl.concat([absent, gone]).unique()
    return absent


def reconstructable_versions(
    obj: Table | Snapshot, *, check_data: bool = True, vacuum_retention_hours: float | None = None
) -> pa.Table:
    """Which versions can still be read, and how far back time travel goes (`VERSIONS_SCHEMA`).

    One row per version the log knows (commits, checkpoints, compactions): version, file_time,
    commit_present, checkpoint, log_reconstructable, files (active files) and missing_files
    (data or DV files of its state absent from storage) — both with `check_data=True` only,
    which replays every retained commit and lists the table once —,
    readable, within_log_retention (younger than `delta.logRetentionDuration`: older commits are
    removed at the next checkpoint), readable_after_vacuum (with `vacuum_retention_hours`: would
    it survive `vacuum_preview(that retention)`), and reason.
    """
    table = table_of(obj)
    listing = table.listing()
    versions, log_ok = _log_versions(listing)
    files_count = None
    missing_count = None
    after_count = None
    if check_data or vacuum_retention_hours is not None:
        # file lifetimes need every retained commit: only when data presence is asked for
        life = _lifetimes(table)
        files_count = _count_per_version(life.files, versions)
        listed = list_table_files(table)
        missing_count = _count_per_version(_missing(life.files, listed), versions)
        if vacuum_retention_hours is not None:
            deleted = set(vacuum_preview(table, retention_hours=vacuum_retention_hours).column("path").to_pylist())
            after_count = _count_per_version(_missing(life.files, listed, deleted), versions)
    try:
        latest = snapshot_of(table)
        log_retention = latest.config.log_retention_ms if latest.has_metadata else DEFAULT_LOG_RETENTION_MS
    except DeltaExploreError:
        log_retention = DEFAULT_LOG_RETENTION_MS
    now = int(time.time() * 1000)
    rows: dict[str, list[Any]] = {f.name: [] for f in VERSIONS_SCHEMA}
    for i, v in enumerate(versions.tolist()):
        c = listing.commit(v)
        cps = listing.checkpoints.get(v)
        t = c.modification_time if c is not None else (cps[0].modification_time if cps else None)
        ok = bool(log_ok[i])
        miss = int(missing_count[i]) if (missing_count is not None and ok) else None
        readable = ok and (miss is None or miss == 0)
        reason = None
        if not ok:
            reason = "log cannot be reconstructed: a commit between the nearest checkpoint and this version is missing"
        elif miss:
            reason = f"{miss} data/DV files of this version are missing from storage (vacuumed?)"
        rows["version"].append(v)
        rows["file_time"].append(t)
        rows["commit_present"].append(c is not None)
        rows["checkpoint"].append(bool(cps))
        rows["log_reconstructable"].append(ok)
        rows["files"].append(int(files_count[i]) if ok and files_count is not None else None)
        rows["missing_files"].append(miss)
        rows["readable"].append(readable)
        rows["within_log_retention"].append(t is None or t >= now - log_retention)
        rows["readable_after_vacuum"].append(None if after_count is None else bool(readable and after_count[i] == 0))
        rows["reason"].append(reason)
    rows["file_time"] = to_ts(pa.array(rows["file_time"], pa.int64()))  # type: ignore[assignment]
    return conform(rows, VERSIONS_SCHEMA)


def _core_plan(table: Table, retention_hours: float) -> pa.Table | None:
    """The files the core's VACUUM would delete (`plan_vacuum`), or None when it refuses the
    table (features it cannot write, catalog-managed): then `_own_plan` previews it. A table
    that fails to read raises: nothing is previewed on a state that could not be read."""
    try:
        return plan_vacuum(table, retention_hours=retention_hours, enforce_retention_duration=False).files
    except (UnsupportedFeatureError, WriteRefusedError):
        return None


def _own_plan(snap: Snapshot, tomb_frame: pl.DataFrame, cutoff: int) -> pl.DataFrame:
    """VACUUM's rules applied here: not referenced by the snapshot, modified before the cut-off,
    not a tombstone younger than it, not hidden."""
    table = table_of(snap)
    root = table.storage.root
    listed = list_vacuumable(table.storage, vacuum_partition_names(snap)).rename_columns(["path", "size", "mtime"])
    adds = snap.add_actions()
    active = pl.DataFrame({"path": pl.from_arrow(_paths_of(adds, root))})
    dv = combined(adds.column("deletionVector"))
    if adds.num_rows and dv.null_count < adds.num_rows:
        st = pc.if_else(pc.is_valid(dv), dv.field("storageType"), pa.scalar(None, pa.string()))
        dvp = relative_to_root(_decode(_dv_paths(st.cast(pa.string()), dv.field("pathOrInlineDv").cast(pa.string()))), root)
        active = pl.concat([active, pl.DataFrame({"path": pl.from_arrow(dvp)}).drop_nulls()])
    frame = pl.from_arrow(listed)
    assert isinstance(frame, pl.DataFrame)
    candidates = frame.join(active, on="path", how="anti").join(tomb_frame, on="path", how="left")
    # as Delta: only files modified before the cut-off, and never a tombstone younger than it
    old = pl.col("mtime").is_not_null() & (pl.col("mtime") < cutoff)
    return candidates.with_columns(
        pl.when(~old)
        .then(pl.lit(None, pl.String))
        .when(pl.col("deletion_time").is_not_null())
        .then(pl.when(pl.col("deletion_time") < cutoff).then(pl.lit("expired_tombstone")))
        .otherwise(pl.lit("unreferenced"))
        .alias("reason")
    ).filter(pl.col("reason").is_not_null())


def vacuum_preview(obj: Table | Snapshot, *, retention_hours: float | None = None) -> pa.Table:
    """What `VACUUM` with this retention would delete, without deleting anything (`VACUUM_SCHEMA`).

    The file set is the core's own VACUUM plan (`core.operations.vacuum.plan_vacuum`, on the
    table's latest version, as VACUUM always is): files neither the latest state nor a commit
    inside the retention window references, older than the retention; hidden paths (`_`/`.`,
    except partition directories and `_change_data`) are left alone. For tables the core
    refuses to vacuum (writer features it lacks, catalog-managed) the same rules are applied
    here without the commit-window rule. Columns: path, size, reason (`expired_tombstone`: a
    removed file; `unreferenced`: orphans of failed writes, replaced DV files), deletion_time,
    modification_time, first_version_needing / last_version_needing (retained versions whose
    state includes the file: time travel to them breaks). Sum `size` for the bytes freed;
    `reconstructable_versions(vacuum_retention_hours=)` shows the versions that stop being
    readable. `retention_hours` defaults to `delta.deletedFileRetentionDuration` (7 days).
    """
    table = table_of(obj)
    snap = snapshot_of(table)
    retention_hours = number(retention_hours, "retention_hours", maximum=MAX_RETENTION_HOURS)
    if retention_hours is not None and retention_hours < 0:
        raise InspectError(f"retention_hours must be >= 0, got {retention_hours}")
    if retention_hours is None:
        try:
            retention_ms = snap.config.deleted_file_retention_ms if snap.has_metadata else DEFAULT_DELETED_FILE_RETENTION_MS
        except DeltaExploreError:
            retention_ms = DEFAULT_DELETED_FILE_RETENTION_MS
    else:
        retention_ms = int(retention_hours * 3_600_000)
    cutoff = int(time.time() * 1000) - retention_ms
    root = table.storage.root
    tomb = snap.tombstones()
    tomb_frame = (
        pl.DataFrame(
            {
                "path": pl.from_arrow(_paths_of(tomb, root)) if tomb.num_rows else pl.Series([], dtype=pl.String),
                "deletion_time": pl.from_arrow(combined(tomb.column("deletionTimestamp")).cast(pa.int64()))
                if tomb.num_rows
                else pl.Series([], dtype=pl.Int64),
            }
        )
        .group_by("path")
        .agg(pl.col("deletion_time").max())
    )
    planned = _core_plan(table, retention_hours if retention_hours is not None else retention_ms / 3_600_000)
    if planned is not None:
        frame = pl.from_arrow(
            planned.select(["path", "size"]).append_column("mtime", planned.column("modification_time").cast(pa.int64()))
        )
        assert isinstance(frame, pl.DataFrame)
        deleted = frame.join(tomb_frame, on="path", how="left").with_columns(
            pl.when(pl.col("deletion_time").is_not_null())
            .then(pl.lit("expired_tombstone"))
            .otherwise(pl.lit("unreferenced"))
            .alias("reason")
        )
    else:
        deleted = _own_plan(snap, tomb_frame, cutoff)
    if deleted.height:
        life = _lifetimes(table)
        needing = (
            life.files.filter(pl.col("path").is_in(deleted.get_column("path").implode()))
            .group_by("path")
            .agg(pl.col("start").min().alias("first"), pl.col("end").max().alias("last"))
        )
        deleted = deleted.join(needing, on="path", how="left").sort("path")
    else:
        deleted = deleted.with_columns(pl.lit(None, pl.Int64).alias("first"), pl.lit(None, pl.Int64).alias("last"))
    out = deleted.to_arrow()
    cols = {
        "path": out.column("path"),
        "size": out.column("size"),
        "reason": out.column("reason"),
        "deletion_time": to_ts(out.column("deletion_time").combine_chunks().cast(pa.int64())),
        "modification_time": to_ts(out.column("mtime").combine_chunks().cast(pa.int64())),
        "first_version_needing": out.column("first"),
        "last_version_needing": out.column("last"),
    }
    return conform(cols, VACUUM_SCHEMA)
