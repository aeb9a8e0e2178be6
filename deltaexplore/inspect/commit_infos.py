"""Provenance of every commit, read from its `commitInfo` alone: the whole history, cheaply.

`history()` reads every action of every commit to count files, bytes and rows; on a table whose
early commits added millions of files that is seconds of JSON. `commit_infos()` reads only the
head of each commit file, where writers put `commitInfo` (the protocol requires it first when
in-commit timestamps are on), and the whole file only when the head does not hold it. The
columns it shares with `history()` mean the same and hold the same values.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from deltaexplore.core.log.timestamps import CommitClock
from deltaexplore.errors import InvalidLogError, VersionNotFoundError
from deltaexplore.inspect.schemas import COMMIT_INFOS_SCHEMA, TS
from deltaexplore.inspect.snapshots import snapshot_of, table_of

if TYPE_CHECKING:
    from deltaexplore.core.log.file_names import LogFile
    from deltaexplore.core.snapshot import Snapshot
    from deltaexplore.core.table import Table
    from deltaexplore.storage.base import Storage

__all__ = ["commit_infos"]

#: bytes read from the start of each commit file (commitInfo is normally its first line)
HEAD_BYTES = 64 * 1024


def _find_commit_info(data: bytes, *, complete: bool) -> dict[str, Any] | None:
    """The first `commitInfo` object among the complete lines of `data` (None: not there)."""
    lines = data.split(b"\n")
    if not complete:
        lines = lines[:-1]  # the last line may be cut short
    for line in lines:
        if b'"commitInfo"' not in line:
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict) and isinstance(obj.get("commitInfo"), dict):
            return obj["commitInfo"]
    return None


def _read_commit_info(storage: Storage, f: LogFile) -> dict[str, Any] | None:
    if f.inline is not None:
        return _find_commit_info(f.inline, complete=True)
    try:
        head = storage.read_range(f.path, 0, HEAD_BYTES)
        found = _find_commit_info(head, complete=len(head) < HEAD_BYTES)
        if found is not None or len(head) < HEAD_BYTES:
            return found
        return _find_commit_info(storage.read_bytes(f.path), complete=True)
    except FileNotFoundError as exc:
        raise InvalidLogError(f"log file {f.path} disappeared while reading the table", path=f.path) from exc


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value)


def _text_map(value: Any) -> list[tuple[str, str]] | None:
    if not isinstance(value, dict):
        return None
    return [(str(k), v if isinstance(v, str) else json.dumps(v)) for k, v in value.items()]


def _int(value: Any) -> int | None:
    try:
        return int(value) if value is not None and not isinstance(value, bool) else None
    except (TypeError, ValueError):
        return None


def _first(body: dict[str, Any], *keys: str) -> Any:
    for k in keys:
        if body.get(k) is not None:
            return body[k]
    return None


def commit_infos(
    obj: Table | Snapshot, start: int | None = None, end: int | None = None, *, version: int | None = None
) -> pa.Table:
    """One row per retained commit in [start, end], newest first (`schemas.COMMIT_INFOS_SCHEMA`).

    Columns: version, timestamp (in-commit timestamp aware, as `history()`), operation,
    parameters and metrics (operationParameters / operationMetrics as text maps), user_id,
    user_name, engine, isolation_level, is_blind_append, read_version, user_metadata, txn_id,
    cluster_id, commit_info (the raw JSON; null when the commit has none) and commit_bytes (the
    size of the commit file). On a snapshot (or with `version`) the range ends at that version.

    Raises:
        VersionNotFoundError: `start` is after `end`.
    """
    snap = snapshot_of(obj, version)
    table = table_of(obj)
    listing = table.listing()
    last = snap.version if end is None else min(end, snap.version)
    if start is not None and start > last:
        raise VersionNotFoundError(f"start version {start} is after end version {last} in {table.uri}")
    versions = sorted(v for v in set(listing.commits) | set(listing.ratified) if v <= last and (start is None or v >= start))
    files: list[LogFile] = [f for v in versions if (f := listing.commit(v)) is not None]
    storage = table.storage
    if len(files) > 8 and storage.__class__.__name__ != "LocalStorage":
        with ThreadPoolExecutor(max_workers=min(32, len(files))) as pool:
            infos = list(pool.map(lambda f: _read_commit_info(storage, f), files))
    else:
        infos = [_read_commit_info(storage, f) for f in files]
    known = {
        v: int(b["inCommitTimestamp"]) for v, b in zip(versions, infos) if b and _int(b.get("inCommitTimestamp")) is not None
    }
    clock = CommitClock(storage, listing, snap.clock.ict, known_ict=known)
    rows = list(zip(versions, infos, files))[::-1]
    data: dict[str, Any] = {
        "version": [v for v, _, _ in rows],
        "timestamp": pa.array([clock.timestamp(v) for v, _, _ in rows], pa.int64()).cast(TS),
    }
    bodies = [b or {} for _, b, _ in rows]
    data["operation"] = [_text(b.get("operation")) for b in bodies]
    data["parameters"] = [_text_map(b.get("operationParameters")) for b in bodies]
    data["metrics"] = [_text_map(b.get("operationMetrics")) for b in bodies]
    data["user_id"] = [_text(b.get("userId")) for b in bodies]
    data["user_name"] = [_text(b.get("userName")) for b in bodies]
    data["engine"] = [_text(_first(b, "engineInfo", "clientVersion")) for b in bodies]
    data["isolation_level"] = [_text(b.get("isolationLevel")) for b in bodies]
    data["is_blind_append"] = [b.get("isBlindAppend") if isinstance(b.get("isBlindAppend"), bool) else None for b in bodies]
    data["read_version"] = [_int(b.get("readVersion")) for b in bodies]
    data["user_metadata"] = [_text(b.get("userMetadata")) for b in bodies]
    data["txn_id"] = [_text(b.get("txnId")) for b in bodies]
    data["cluster_id"] = [_text(b.get("clusterId")) for b in bodies]
    data["commit_info"] = [json.dumps(b) if b is not None else None for _, b, _ in rows]
    data["commit_bytes"] = [f.size if f.inline is None else len(f.inline) for _, _, f in rows]
    arrays = [v if isinstance(v := data[f.name], pa.Array) else pa.array(v, f.type) for f in COMMIT_INFOS_SCHEMA]
    return pa.Table.from_arrays(arrays, schema=COMMIT_INFOS_SCHEMA)
