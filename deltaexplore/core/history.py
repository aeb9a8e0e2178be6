"""Table history: one row per retained commit, newest first.

Provenance comes from `commitInfo` (whatever the writer recorded); the counts of files, bytes
and rows added and removed are derived from the commit's own actions, so they are there even
when the writer recorded no metrics. Works without a schema (metaData without schemaString).

Schema:

| column | type |
|---|---|
| version | int64 |
| timestamp | timestamp[ms, UTC] (in-commit timestamp aware, monotonic) |
| operation | string |
| parameters, metrics | map<string, string> |
| user, user_id, user_name, engine, isolation_level, user_metadata, txn_id, cluster_id | string |
| read_version | int64 |
| is_blind_append | bool |
| files_added, files_removed, bytes_added, bytes_removed, rows_added, rows_removed | int64 |
| dv_files_added, cdc_files | int64 |
| metadata_changed, protocol_changed | bool |
| commit_info | string (raw JSON) |
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pyarrow as pa

from deltaexplore.core.log.json_log import read_log_files
from deltaexplore.core.log.segment import LogListing
from deltaexplore.core.log.state import read_log
from deltaexplore.core.log.timestamps import CommitClock, IctConfig, ict_config
from deltaexplore.core.protocol.actions import STRING_MAP, Metadata, Protocol
from deltaexplore.core.scan.action_counts import COUNT_FIELDS, SUMS, commit_counts
from deltaexplore.errors import DeltaExploreError, VersionNotFoundError
from deltaexplore.storage import Storage

__all__ = ["COUNT_FIELDS", "HISTORY_SCHEMA", "read_history", "read_protocols"]

HISTORY_SCHEMA = pa.schema(
    [
        ("version", pa.int64()),
        ("timestamp", pa.timestamp("ms", tz="UTC")),
        ("operation", pa.string()),
        ("parameters", STRING_MAP),
        ("metrics", STRING_MAP),
        ("user", pa.string()),
        ("user_id", pa.string()),
        ("user_name", pa.string()),
        ("engine", pa.string()),
        ("read_version", pa.int64()),
        ("isolation_level", pa.string()),
        ("is_blind_append", pa.bool_()),
        ("user_metadata", pa.string()),
        ("txn_id", pa.string()),
        ("cluster_id", pa.string()),
        ("files_added", pa.int64()),
        ("files_removed", pa.int64()),
        ("bytes_added", pa.int64()),
        ("bytes_removed", pa.int64()),
        ("rows_added", pa.int64()),
        ("rows_removed", pa.int64()),
        ("dv_files_added", pa.int64()),
        ("cdc_files", pa.int64()),
        ("metadata_changed", pa.bool_()),
        ("protocol_changed", pa.bool_()),
        ("commit_info", pa.string()),
    ]
)


def _text_map(value: Any) -> list[tuple[str, str]] | None:
    if not isinstance(value, dict):
        return None
    return [(str(k), v if isinstance(v, str) else json.dumps(v)) for k, v in value.items()]


def _str(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value)


def _int(value: Any) -> int | None:
    """A long, or None (also for what a long cannot hold)."""
    try:
        number = int(value) if value is not None else None
    except (TypeError, ValueError, OverflowError):
        return None
    return number if number is None or -(1 << 63) <= number < (1 << 63) else None


def _group_sum(versions: np.ndarray, values: np.ndarray | None, order: np.ndarray, n: int) -> np.ndarray:
    """Per-commit sums of `values` (counts when None); `order` is the sorted commit versions."""
    out = np.zeros(n, dtype=np.int64)
    if len(versions):
        pos = np.searchsorted(order, versions)
        np.add.at(out, pos, values if values is not None else np.ones(len(pos), dtype=np.int64))
    return out


def _latest_ict_config(storage: Storage, listing: LogListing) -> IctConfig | None:
    """In-commit timestamp config of the latest version, reading commits newest first in small
    batches and stopping as soon as protocol and metadata are found (else the checkpoint)."""
    latest = listing.latest_version
    checkpoint = max((v for v in listing.checkpoints if latest is not None and v <= latest), default=None)
    protocol = metadata = None
    versions = [v for v in sorted(set(listing.commits) | set(listing.ratified), reverse=True) if latest is None or v <= latest]
    versions = [v for v in versions if checkpoint is None or v > checkpoint]
    try:
        for start in range(0, len(versions), 64):
            batch = versions[start : start + 64]
            files = [f for f in (listing.commit(v) for v in batch) if f is not None]
            lines = read_log_files(storage, files, batch)
            for _, _, body in lines.objects("protocol"):
                protocol = protocol or body
            for _, _, body in lines.objects("metaData"):
                metadata = metadata or body
            if protocol is not None and metadata is not None:
                break
        if protocol is None or metadata is None:
            log = read_log(storage, listing, listing.latest_version or 0)
            return ict_config(log.protocol, log.metadata)
        return ict_config(Protocol.from_json(protocol), Metadata.from_json(metadata))
    except DeltaExploreError:
        return None


def read_protocols(storage: Storage, listing: LogListing, versions: list[int]) -> dict[int, Protocol]:
    """The protocol action of each commit of `versions` that has one (the last, if a commit
    repeats it). Whole commits are read: a protocol action may stand anywhere in one."""
    present = [v for v in versions if listing.commit(v) is not None]
    files = [listing.commit(v) for v in present]
    lines = read_log_files(storage, [f for f in files if f is not None], present)
    return {version: Protocol.from_json(body) for _, version, body in lines.objects("protocol")}


def read_history(
    storage: Storage,
    listing: LogListing,
    *,
    limit: int | None = None,
    start_version: int | None = None,
    end_version: int | None = None,
) -> pa.Table:
    """The commits of a table's log `listing` in [start_version, end_version], newest first, at
    most `limit`."""
    versions = listing.versions()
    if end_version is not None:
        versions = [v for v in versions if v <= end_version]
    if start_version is not None:
        versions = [v for v in versions if v >= start_version]
    if start_version is not None and end_version is not None and start_version > end_version:
        raise VersionNotFoundError(f"start_version {start_version} is after end_version {end_version}")
    if limit is not None:
        versions = versions[-limit:] if limit > 0 else []
    files = [listing.commit(v) for v in versions]
    # the add/remove lines are summed per commit (by the compiled pass where it is built); the
    # other lines (commitInfo, metaData, protocol, cdc) are here
    present = [i for i, f in enumerate(files) if f is not None]
    counted = commit_counts(storage, [f for f in files if f is not None], [versions[i] for i in present])
    lines = counted.lines
    n = len(versions)
    index = {v: i for i, v in enumerate(versions)}
    sums = np.zeros((n, *counted.sums.shape[1:]), np.int64)
    sums[present] = counted.sums

    infos: dict[int, dict[str, Any]] = {}
    for _, version, body in lines.objects("commitInfo"):
        infos.setdefault(version, body)
    meta_changed = np.zeros(n, dtype=bool)
    proto_changed = np.zeros(n, dtype=bool)
    newest_protocol = newest_metadata = None
    for _, version, body in lines.objects("metaData"):
        meta_changed[index[version]] = True
        newest_metadata = body
    for _, version, body in lines.objects("protocol"):
        proto_changed[index[version]] = True
        newest_protocol = body

    # In-commit timestamps follow the latest snapshot's configuration: take it from these lines
    # when they reach the latest version and hold both actions, else build the snapshot.
    ict = None
    latest_version = listing.latest_version
    if versions and versions[-1] == latest_version and newest_protocol is not None and newest_metadata is not None:
        try:
            ict = ict_config(Protocol.from_json(newest_protocol), Metadata.from_json(newest_metadata))
        except DeltaExploreError:
            ict = None
    else:
        ict = _latest_ict_config(storage, listing)
    known = {v: int(b["inCommitTimestamp"]) for v, b in infos.items() if _int(b.get("inCommitTimestamp")) is not None}
    clock = CommitClock(storage, listing, ict, known_ict=known)
    timestamps = [clock.timestamp(v) for v in versions]

    cdc_idx = lines.where("cdc")
    cols = _count_columns(sums, _group_sum(lines.version[cdc_idx], None, np.asarray(versions, dtype=np.int64), n))

    def info(v: int, *keys: str) -> Any:
        body = infos.get(v) or {}
        for k in keys:
            if body.get(k) is not None:
                return body[k]
        return None

    order = list(range(n - 1, -1, -1))
    vs = [versions[i] for i in order]
    data = {
        "version": pa.array(vs, pa.int64()),
        "timestamp": pa.array([timestamps[i] for i in order], pa.int64()).cast(pa.timestamp("ms", tz="UTC")),
        "operation": [_str(info(v, "operation")) for v in vs],
        "parameters": pa.array([_text_map(info(v, "operationParameters")) for v in vs], STRING_MAP),
        "metrics": pa.array([_text_map(info(v, "operationMetrics")) for v in vs], STRING_MAP),
        "user": [_str(info(v, "userName", "userId")) for v in vs],
        "user_id": [_str(info(v, "userId")) for v in vs],
        "user_name": [_str(info(v, "userName")) for v in vs],
        "engine": [_str(info(v, "engineInfo", "clientVersion")) for v in vs],
        "read_version": pa.array([_int(info(v, "readVersion")) for v in vs], pa.int64()),
        "isolation_level": [_str(info(v, "isolationLevel")) for v in vs],
        "is_blind_append": pa.array(
            [info(v, "isBlindAppend") if isinstance(info(v, "isBlindAppend"), bool) else None for v in vs], pa.bool_()
        ),
        "user_metadata": [_str(info(v, "userMetadata")) for v in vs],
        "txn_id": [_str(info(v, "txnId")) for v in vs],
        "cluster_id": [_str(info(v, "clusterId")) for v in vs],
    }
    for name, values in cols.items():
        data[name] = values.take(pa.array(order, pa.int64())) if n else values
    data["metadata_changed"] = pa.array(meta_changed[order] if n else [], pa.bool_())
    data["protocol_changed"] = pa.array(proto_changed[order] if n else [], pa.bool_())
    data["commit_info"] = [json.dumps(infos[v]) if v in infos else None for v in vs]
    return pa.table(data, schema=HISTORY_SCHEMA)


def _count_columns(sums: np.ndarray, cdc: np.ndarray) -> dict[str, pa.Array]:
    """History's count columns from `CommitCounts.sums` (per commit, kind, `SUMS`)."""

    def sum_of(kind: int, name: str) -> np.ndarray:
        return sums[:, kind, SUMS.index(name)]

    add, remove = 0, 1
    return {
        "files_added": pa.array(sum_of(add, "files"), pa.int64()),
        "files_removed": pa.array(sum_of(remove, "files"), pa.int64()),
        "bytes_added": pa.array(sum_of(add, "bytes"), pa.int64()),
        "bytes_removed": pa.array(sum_of(remove, "bytes"), mask=sum_of(remove, "bytes_unknown") > 0, type=pa.int64()),
        "rows_added": pa.array(sum_of(add, "rows"), mask=sum_of(add, "rows_unknown") > 0, type=pa.int64()),
        "rows_removed": pa.array(sum_of(remove, "rows"), mask=sum_of(remove, "rows_unknown") > 0, type=pa.int64()),
        "dv_files_added": pa.array(sum_of(add, "dvs"), pa.int64()),
        "cdc_files": pa.array(cdc, pa.int64()),
    }
