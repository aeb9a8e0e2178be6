"""Log health: checkpoints and their cadence, log size against data size, tombstones, `.crc`
validation and `_last_checkpoint` consistency, plus a per-version view of what the log holds.

`log_files()` uses the log listing only (no file is read). `log_health()` adds the snapshot's
state (files and tombstones are replayed once) and the `.crc` check.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.log.crc_reader import DELETED_RECORD_BINS, StateTotals, crc_size_bounds, crc_summary
from deltaexplore.errors import DeltaExploreError
from deltaexplore.inspect.formatting import human_bytes, tag_schema
from deltaexplore.inspect.results import conform, to_ts
from deltaexplore.inspect.schemas import LOG_FILES_SCHEMA, METRICS_SCHEMA
from deltaexplore.inspect.snapshots import snapshot_of, table_of

if TYPE_CHECKING:
    from deltaexplore.core.log.file_names import LogFile
    from deltaexplore.core.log.segment import LogListing
    from deltaexplore.core.snapshot import Snapshot
    from deltaexplore.core.table import Table

__all__ = ["commits_since_checkpoint", "log_files", "log_health", "metric", "tombstone_counts"]

#: a log smaller than this is never reported as too large, whatever the data size
LARGE_LOG_BYTES = 64 * 1024 * 1024


def metric(
    section: str,
    name: str,
    value: Any,
    *,
    number: float | None = None,
    unit: str | None = None,
    status: str = "info",
    detail: str = "",
) -> dict[str, Any]:
    """One row of a `METRICS_SCHEMA` table."""
    if number is None and isinstance(value, (int, float)) and not isinstance(value, bool):
        number = float(value)
    return {
        "section": section,
        "metric": name,
        "value": None if value is None else ("yes" if value else "no") if isinstance(value, bool) else str(value),
        "number": number,
        "unit": unit,
        "status": status,
        "detail": detail,
    }


def metrics_table(rows: list[dict[str, Any]], name: str = "metrics") -> pa.Table:
    """A `METRICS_SCHEMA` table of `rows`, tagged as the inspection table `name` (overview, log_health)."""
    return conform({f.name: [r[f.name] for r in rows] for f in METRICS_SCHEMA}, tag_schema(METRICS_SCHEMA, name))


def _versions(listing: LogListing) -> list[int]:
    vs = set(listing.commits) | set(listing.ratified) | set(listing.checkpoints)
    for c in listing.compactions:
        vs |= set(range(c.version, c.end_version + 1))
    if listing.catalog_latest is not None:
        vs = {v for v in vs if v <= listing.catalog_latest}
    return sorted(vs)


def _missing_runs(present: list[int], start: int, end: int) -> list[tuple[int, int]]:
    """The runs (first, last) of versions in start..end that `present` (sorted) lacks."""
    out = []
    expected = start
    for v in [*present, end + 1]:
        if v > expected:
            out.append((expected, v - 1))
        expected = v + 1
    return out


def commits_since_checkpoint(snap: Snapshot) -> tuple[int, int]:
    """(commits a reader replays after the newest checkpoint, `delta.checkpointInterval`): a
    checkpoint is due when the first is larger than the second."""
    interval = snap.config.checkpoint_interval if snap.has_metadata else 10
    since = snap.version - snap.checkpoint_version if snap.checkpoint_version is not None else snap.version + 1
    return since, interval


def log_files(obj: Table | Snapshot) -> pa.Table:
    """One row per version the log knows, oldest first (`LOG_FILES_SCHEMA`). Listing only.

    Columns: version, file_time, commit (published | ratified | compacted | missing),
    commit_bytes, checkpoint_kind, checkpoint_bytes, checkpoint_parts, has_crc, crc_bytes,
    commits_since_checkpoint (JSON commits a reader replays after the newest checkpoint at or
    before the version) and replay_json_bytes (their bytes: the cost of opening that version).
    """
    table = table_of(obj)
    listing = table.listing()
    versions = _versions(listing)
    compacted = set()
    for comp in listing.compactions:
        compacted |= set(range(comp.version, comp.end_version + 1))
    rows: dict[str, list[Any]] = {f.name: [] for f in LOG_FILES_SCHEMA}
    since = 0
    replay = 0
    for v in versions:
        c: LogFile | None = listing.commit(v)
        cps = listing.checkpoints.get(v)
        cp = cps[0] if cps else None
        crc = listing.crcs.get(v)
        if c is not None:
            state = "ratified" if v in listing.ratified and v not in listing.commits else "published"
        else:
            state = "compacted" if v in compacted else "missing"
        if cp is not None:
            since, replay = 0, 0
        elif c is not None:
            since += 1
            replay += c.size
        rows["version"].append(v)
        rows["file_time"].append(c.modification_time if c is not None else (cp.modification_time if cp else None))
        rows["commit"].append(state)
        rows["commit_bytes"].append(c.size if c is not None else None)
        rows["checkpoint_kind"].append(cp.kind if cp else None)
        rows["checkpoint_bytes"].append(cp.size if cp else None)
        rows["checkpoint_parts"].append(len(cp.parts) if cp else None)
        rows["has_crc"].append(crc is not None)
        rows["crc_bytes"].append(crc.size if crc else None)
        rows["commits_since_checkpoint"].append(since)
        rows["replay_json_bytes"].append(replay)
    rows["file_time"] = to_ts(pa.array(rows["file_time"], pa.int64()))  # type: ignore[assignment]
    return conform(rows, LOG_FILES_SCHEMA)


def log_health(obj: Table | Snapshot, *, version: int | None = None, streaming: bool = False) -> pa.Table:
    """Checks and metrics of the transaction log at a version (`METRICS_SCHEMA`).

    Sections and metrics:

    - `checkpoints`: commits_since_checkpoint (warn past 2x `delta.checkpointInterval`),
      checkpoint_interval, last_checkpoint (version and kind), checkpoint_count,
      checkpoint_cadence (mean versions between checkpoints), checkpoint_kinds,
      multipart_with_v2 (multi-part checkpoints are forbidden once v2Checkpoint is on)
    - `last_checkpoint`: `_last_checkpoint` present, parseable, pointing at the newest
      complete checkpoint (a stale hint costs extra listing; a wrong one is tolerated)
    - `log`: log_bytes (commits + checkpoints + sidecars listed + crcs), data_bytes,
      log_to_data_ratio, replay_json_bytes (JSON read to open this version), retained_commits,
      oldest_commit, version_gaps, unknown_log_files, staged_commits
    - `tombstones`: tombstones, tombstone_bytes, reclaimable_bytes (tombstones older than
      `delta.deletedFileRetentionDuration`: what VACUUM would free now, if still on storage)
    - `crc`: crc_present, what the `.crc` records (crc_files, crc_bytes, crc_deleted_records,
      crc_deletion_vectors, crc_file_size_histogram, crc_deleted_records_histogram: no replay
      needed), crc_check (match | mismatch), then one row per field of `snap.validate_crc()`
      (error on mismatch)

    `status` is ok | info | warn | error; `detail` explains and advises. `streaming=True`
    counts the files and tombstones in one pass over the log's batches
    (`Snapshot.iter_file_actions`, a few columns each) instead of replaying them: same values,
    memory bounded by one batch.
    """
    snap = snapshot_of(obj, version)
    table = snap.table
    listing = table.listing(refresh=False)
    rows: list[dict[str, Any]] = []
    since, interval = commits_since_checkpoint(snap)
    # -- checkpoints
    cp_versions = sorted(v for v in listing.checkpoints if v <= snap.version)
    status = "ok" if since <= interval else ("warn" if since > 2 * interval else "info")
    rows.append(
        metric(
            "checkpoints",
            "commits_since_checkpoint",
            since,
            unit="commits",
            status=status,
            detail=f"a reader replays {since} JSON commits after the newest checkpoint; writers checkpoint every {interval}"
            + ("" if status != "warn" else ": checkpoints are not being written, opening the table gets slower"),
        )
    )
    rows.append(metric("checkpoints", "checkpoint_interval", interval, unit="commits", detail="delta.checkpointInterval"))
    if snap.segment.checkpoint is not None:
        cp = snap.segment.checkpoint
        rows.append(
            metric(
                "checkpoints",
                "last_checkpoint",
                cp.version,
                unit="version",
                detail=f"{cp.kind} checkpoint, {len(cp.parts)} file(s), {human_bytes(cp.size)}",
            )
        )
    else:
        rows.append(
            metric("checkpoints", "last_checkpoint", None, status="info", detail="no checkpoint: the whole log is replayed")
        )
    rows.append(metric("checkpoints", "checkpoint_count", len(cp_versions), unit="checkpoints"))
    if len(cp_versions) >= 2:
        cadence = float(np.mean(np.diff(cp_versions)))
        rows.append(
            metric(
                "checkpoints",
                "checkpoint_cadence",
                round(cadence, 2),
                unit="versions",
                status="ok" if cadence <= 2 * interval else "warn",
                detail="mean versions between retained checkpoints",
            )
        )
    kinds = sorted({listing.checkpoints[v][0].kind for v in cp_versions})
    rows.append(metric("checkpoints", "checkpoint_kinds", ", ".join(kinds) or "none"))
    if "multipart" in kinds and snap.protocol.has("v2Checkpoint"):
        rows.append(
            metric(
                "checkpoints",
                "multipart_with_v2",
                True,
                status="warn",
                detail="multi-part checkpoints are forbidden once v2Checkpoint is enabled",
            )
        )
    # -- _last_checkpoint
    rows.extend(_last_checkpoint_rows(listing, cp_versions))
    # -- log and data sizes
    commit_bytes = sum(f.size for v, f in listing.commits.items() if v <= snap.version)
    cp_bytes = sum(c.size for v in cp_versions for c in listing.checkpoints[v][:1])
    sidecar_bytes = 0
    if snap.checkpoint_reader is not None:
        try:
            sidecar_bytes = sum(s.size for s in snap.checkpoint_reader.sidecar_files())
        except DeltaExploreError:
            sidecar_bytes = 0
    crc_bytes = sum(f.size for v, f in listing.crcs.items() if v <= snap.version)
    log_bytes = commit_bytes + cp_bytes + sidecar_bytes + crc_bytes
    totals = _streamed_totals(snap) if streaming else None
    data_bytes = totals.bytes if totals is not None else snap.size_in_bytes
    rows.append(
        metric(
            "log",
            "log_bytes",
            log_bytes,
            unit="bytes",
            detail=f"{human_bytes(log_bytes)}: commits {human_bytes(commit_bytes)}, checkpoints {human_bytes(cp_bytes)}, "
            f"sidecars {human_bytes(sidecar_bytes)}, crc {human_bytes(crc_bytes)}",
        )
    )
    rows.append(metric("log", "data_bytes", data_bytes, unit="bytes", detail=human_bytes(data_bytes)))
    ratio = log_bytes / data_bytes if data_bytes else None
    big_log = ratio is not None and ratio > 0.1 and log_bytes > LARGE_LOG_BYTES
    rows.append(
        metric(
            "log",
            "log_to_data_ratio",
            None if ratio is None else round(ratio, 6),
            number=ratio,
            unit="ratio",
            status="warn" if big_log else "ok",
            detail="log bytes per data byte" + (": the log is large; check log retention and checkpoints" if big_log else ""),
        )
    )
    replay = sum(f.size for f in snap.segment.json_files)
    rows.append(metric("log", "replay_json_bytes", replay, unit="bytes", detail="JSON read to open this version"))
    retained = [v for v in listing.commits if v <= snap.version]
    rows.append(metric("log", "retained_commits", len(retained), unit="commits"))
    oldest = min(retained) if retained else None
    rows.append(metric("log", "oldest_commit", oldest, unit="version", detail="older commits were cleaned up" if oldest else ""))
    present = listing.commit_versions(oldest, snap.version) if oldest is not None else []
    gaps = _missing_runs(present, oldest, snap.version) if oldest is not None else []
    rows.append(
        metric(
            "log",
            "version_gaps",
            sum(b - a + 1 for a, b in gaps),
            unit="versions",
            status="warn" if gaps else "ok",
            detail=f"missing commits: {', '.join(str(a) if a == b else f'{a}-{b}' for a, b in gaps[:10])}"
            if gaps
            else "commits are contiguous",
        )
    )
    if listing.other_files:
        rows.append(
            metric(
                "log",
                "unknown_log_files",
                len(listing.other_files),
                unit="files",
                status="info",
                detail=", ".join(listing.other_files[:5]),
            )
        )
    if snap.published_only or listing.ratified:
        rows.append(
            metric(
                "log",
                "catalog_managed",
                True,
                status="warn" if snap.published_only else "info",
                detail="opened by path: only published commits are visible"
                if snap.published_only
                else f"{len(listing.ratified)} ratified commits not yet published",
            )
        )
    # -- tombstones
    rows.extend(_tombstone_rows(snap, streaming=streaming))
    # -- crc
    rows.extend(_crc_rows(snap, totals))
    return metrics_table(rows, "log_health")


def _streamed_totals(snap: Snapshot) -> StateTotals:
    """What a `.crc` records of the active files (`StateTotals`), counted batch by batch."""
    bounds = crc_size_bounds(snap.crc if snap.segment.crc is not None else None)
    zeros = (0,) * len(bounds)
    totals = StateTotals(0, 0, 0, 0, (0,) * len(DELETED_RECORD_BINS), bounds, zeros, zeros)
    for batch in snap.iter_file_actions("add", fields=("size",)):
        totals = totals.plus(StateTotals.of(batch, bounds))
    return totals


def _last_checkpoint_rows(listing: LogListing, cp_versions: list[int]) -> list[dict[str, Any]]:
    lc = listing.last_checkpoint
    newest = max(listing.checkpoints) if listing.checkpoints else None
    problem = getattr(lc, "problem", None)
    if problem == "missing" and newest is None:
        return [metric("last_checkpoint", "_last_checkpoint", "absent", status="ok", detail="no checkpoint, no hint needed")]
    if problem == "missing":
        return [
            metric(
                "last_checkpoint",
                "_last_checkpoint",
                "absent",
                status="warn",
                detail=f"checkpoint {newest} exists but _last_checkpoint is missing: readers list the whole log",
            )
        ]
    if problem:
        return [metric("last_checkpoint", "_last_checkpoint", "invalid", status="warn", detail=str(problem))]
    if lc.version != newest:
        return [
            metric(
                "last_checkpoint",
                "_last_checkpoint",
                lc.version,
                unit="version",
                status="warn",
                detail=f"stale: points at checkpoint {lc.version}, the newest is {newest}",
            )
        ]
    return [
        metric(
            "last_checkpoint",
            "_last_checkpoint",
            lc.version,
            unit="version",
            status="ok",
            detail="points at the newest complete checkpoint",
        )
    ]


def _retention_ms(snap: Snapshot) -> int:
    try:
        return snap.config.deleted_file_retention_ms if snap.has_metadata else 7 * 86_400_000
    except DeltaExploreError:
        return 7 * 86_400_000


def tombstone_counts(tomb: pa.Table, cutoff_ms: int) -> tuple[int, int, int, int]:
    """(tombstones, bytes, reclaimable bytes, expired tombstones) of some remove actions
    (`size`, `deletionTimestamp`): expired = deleted before `cutoff_ms`. Sums: the counts of
    batches add up."""
    n = tomb.num_rows
    if n == 0:
        return 0, 0, 0, 0
    size = pc.fill_null(tomb.column("size"), 0)
    total = int(pc.sum(size).as_py() or 0)
    ts = pc.fill_null(tomb.column("deletionTimestamp").combine_chunks().cast(pa.int64()), 0)
    expired = pc.less(ts, cutoff_ms)
    reclaim = int(pc.sum(pc.if_else(expired, size, 0)).as_py() or 0)
    return n, total, reclaim, int(pc.sum(expired.cast(pa.int64())).as_py() or 0)


def _tombstone_rows(snap: Snapshot, *, streaming: bool) -> list[dict[str, Any]]:
    retention = _retention_ms(snap)
    cutoff = int(time.time() * 1000) - retention
    if streaming:
        counts = [tombstone_counts(t, cutoff) for t in snap.iter_file_actions("remove", fields=("size", "deletionTimestamp"))]
        n, total, reclaim, n_expired = (sum(c[i] for c in counts) for i in range(4))
    else:
        n, total, reclaim, n_expired = tombstone_counts(snap.tombstones(), cutoff)
    days = retention / 86_400_000
    return [
        metric("tombstones", "tombstones", n, unit="files", detail="remove actions still in the state (files VACUUM may delete)"),
        metric("tombstones", "tombstone_bytes", total, unit="bytes", detail=human_bytes(total)),
        metric(
            "tombstones",
            "reclaimable_bytes",
            reclaim,
            unit="bytes",
            status="warn" if reclaim > 0 else "ok",
            detail=f"{n_expired} tombstones older than the {days:g}-day retention: {human_bytes(reclaim)} VACUUM would free "
            "(if the files are still on storage)",
        ),
    ]


def crc_summary_rows(snap: Snapshot) -> list[dict[str, Any]]:
    """What the version's `.crc` says of its state (`crc` section, one small read, no replay):
    crc_present, then what it records (files, bytes, deleted records, deletion vectors, the
    file-size and deleted-record histograms)."""
    if snap.segment.crc is None:
        return [metric("crc", "crc_present", False, status="info", detail="no .crc file for this version (optional)")]
    rows = [metric("crc", "crc_present", True, status="ok", detail=snap.segment.crc.path)]
    crc = snap.crc
    if crc is None:
        return [*rows, metric("crc", "crc_readable", False, status="error", detail="the .crc file is not a JSON object")]
    summary = crc_summary(crc)
    recorded = "recorded by the writer in the .crc file"
    for name, key, unit in (
        ("crc_files", "num_files", "files"),
        ("crc_bytes", "table_bytes", "bytes"),
        ("crc_deleted_records", "deleted_records", "rows"),
        ("crc_deletion_vectors", "deletion_vectors", "files"),
    ):
        if summary[key] is not None:
            value = summary[key]
            rows.append(metric("crc", name, value, unit=unit, detail=human_bytes(value) if unit == "bytes" else recorded))
    if summary["file_size_histogram"] is not None:
        bins = summary["file_size_histogram"]
        text = "; ".join(
            f"{human_bytes(lo)}-{human_bytes(hi) if hi is not None else '...'}: {n} files ({human_bytes(b)})"
            for lo, hi, n, b in bins
        )
        rows.append(metric("crc", "crc_file_size_histogram", len(bins), unit="bins", detail=text or "no files"))
    if summary["deleted_records_histogram"] is not None:
        bins = summary["deleted_records_histogram"]
        text = "; ".join(f"{lo}-{hi if hi is not None else '...'} deleted: {n} files" for lo, hi, n in bins)
        rows.append(metric("crc", "crc_deleted_records_histogram", len(bins), unit="bins", detail=text or "no files"))
    return rows


def _crc_rows(snap: Snapshot, totals: StateTotals | None) -> list[dict[str, Any]]:
    rows = crc_summary_rows(snap)
    if snap.segment.crc is None or snap.crc is None:
        return rows
    try:
        checks = snap.validate_crc(totals)
    except DeltaExploreError as exc:
        return [*rows, metric("crc", "crc_validation", "failed", status="error", detail=str(exc))]
    bad = [r["field"] for r in checks.to_pylist() if not r["ok"]]
    rows.append(
        metric(
            "crc",
            "crc_check",
            "mismatch" if bad else "match",
            status="error" if bad else "ok",
            detail=f"the replayed state differs from the .crc in {', '.join(bad)}"
            if bad
            else "the replayed state agrees with the .crc",
        )
    )
    for r in checks.to_pylist():
        rows.append(
            metric(
                "crc",
                r["field"],
                "match" if r["ok"] else "mismatch",
                status="ok" if r["ok"] else "error",
                detail=f".crc says {r['expected']}, replay gives {r['actual']}",
            )
        )
    return rows
