"""Commit timestamps: in-commit timestamps where enabled, adjusted file modification times elsewhere.

Without in-commit timestamps a commit's time is its file's modification time, made strictly
increasing (a time not after the previous commit's becomes previous + 1 ms). With them
(`delta.enableInCommitTimestamps`), versions from `delta.inCommitTimestampEnablementVersion`
(or all, when enabled at creation) use `commitInfo.inCommitTimestamp`; timestamp time travel
searches only the side of the enablement point the requested time falls on.
"""

from __future__ import annotations

import bisect
import datetime as dt
import json
from dataclasses import dataclass

from deltaexplore.core.log.segment import LogListing
from deltaexplore.core.protocol.actions import Metadata, Protocol
from deltaexplore.errors import DeltaExploreError, VersionNotFoundError
from deltaexplore.storage import Storage

__all__ = ["CommitClock", "IctConfig", "ict_config", "to_datetime", "to_millis"]


@dataclass(frozen=True)
class IctConfig:
    """Where in-commit timestamps start (version, and its timestamp when enabled after creation)."""

    enablement_version: int
    enablement_timestamp: int | None


def ict_config(protocol: Protocol | None, metadata: Metadata | None) -> IctConfig | None:
    """The in-commit timestamp configuration of a snapshot, or None when they are not enabled."""
    if protocol is None or metadata is None:
        return None
    conf = metadata.configuration
    if str(conf.get("delta.enableInCommitTimestamps", "false")).lower() != "true":
        return None
    if "inCommitTimestamp" not in protocol.writer_feature_set:
        return None
    version = conf.get("delta.inCommitTimestampEnablementVersion")
    ts = conf.get("delta.inCommitTimestampEnablementTimestamp")
    try:
        return IctConfig(int(version) if version is not None else 0, int(ts) if ts is not None else None)
    except ValueError:
        return IctConfig(0, None)


def to_datetime(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)


def to_millis(value: str | dt.datetime | dt.date | int | float) -> int:
    """Milliseconds since the epoch of a timestamp given as ISO text, datetime, date or number.

    Naive datetimes and text without a zone are taken as UTC.
    """
    if isinstance(value, bool):
        raise TypeError("a boolean is not a timestamp")
    if isinstance(value, (int, float)):
        return int(value)
    if isinstance(value, str):
        text = value.strip().replace("Z", "+00:00")
        try:
            value = dt.datetime.fromisoformat(text)
        except ValueError as exc:
            raise VersionNotFoundError(f"cannot parse timestamp {value!r}: expected ISO 8601") from exc
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        value = dt.datetime(value.year, value.month, value.day)
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    return round(value.timestamp() * 1000)


def read_ict(storage: Storage, path: str) -> int | None:
    """`commitInfo.inCommitTimestamp` of a commit file (it must be the first action)."""
    try:
        data = storage.read_bytes(path)
    except (FileNotFoundError, DeltaExploreError):
        return None
    for line in data.splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):
            return None
        info = obj.get("commitInfo") if isinstance(obj, dict) else None
        if isinstance(info, dict) and info.get("inCommitTimestamp") is not None:
            try:
                return int(info["inCommitTimestamp"])
            except (TypeError, ValueError):
                return None
        return None
    return None


class CommitClock:
    """Timestamps of the listed versions, and the version in effect at a time."""

    def __init__(
        self, storage: Storage, listing: LogListing, ict: IctConfig | None, *, known_ict: dict[int, int] | None = None
    ) -> None:
        self.storage = storage
        self.listing = listing
        self.ict = ict
        self._ict_cache: dict[int, int | None] = dict(known_ict or {})
        versions = sorted(set(listing.commits) | set(listing.ratified))
        if listing.catalog_latest is not None:
            versions = [v for v in versions if v <= listing.catalog_latest]
        self.versions = versions
        adjusted: dict[int, int] = {}
        prev: int | None = None
        for v in versions:
            f = listing.commit(v)
            assert f is not None
            t = f.modification_time
            if prev is not None and t <= prev:
                t = prev + 1
            adjusted[v] = t
            prev = t
        self._adjusted = adjusted

    def uses_ict(self, version: int) -> bool:
        return self.ict is not None and version >= self.ict.enablement_version

    def _ict_of(self, version: int) -> int | None:
        if version not in self._ict_cache:
            f = self.listing.commit(version)
            self._ict_cache[version] = read_ict(self.storage, f.path) if f is not None else None
        return self._ict_cache[version]

    def timestamp(self, version: int) -> int:
        """Commit time (ms) of `version`."""
        if self.uses_ict(version):
            value = self._ict_of(version)
            if value is not None:
                return value
        if version in self._adjusted:
            return self._adjusted[version]
        cps = self.listing.checkpoints.get(version)
        if cps:
            return cps[0].modification_time
        raise VersionNotFoundError(f"no commit file for version {version}")

    def version_at(self, ts: int, *, root: str = "") -> int:
        """The latest version committed at or before `ts` (ms).

        Raises:
            VersionNotFoundError: `ts` is before the earliest retained commit.
        """
        if not self.versions:
            raise VersionNotFoundError(f"{root}: no commits to travel to")
        ict_versions = [v for v in self.versions if self.uses_ict(v)]
        plain_versions = [v for v in self.versions if not self.uses_ict(v)]
        if ict_versions:
            first_ict = ict_versions[0]
            start_ts = (
                self.ict.enablement_timestamp
                if self.ict and self.ict.enablement_timestamp is not None
                else self.timestamp(first_ict)
            )
            if ts >= start_ts or not plain_versions:
                # Binary search on strictly increasing in-commit timestamps.
                lo, hi = 0, len(ict_versions) - 1
                if ts < self.timestamp(ict_versions[0]):
                    if not plain_versions:
                        raise self._too_early(ts, root)
                    return plain_versions[-1]
                while lo < hi:
                    mid = (lo + hi + 1) // 2
                    if self.timestamp(ict_versions[mid]) <= ts:
                        lo = mid
                    else:
                        hi = mid - 1
                return ict_versions[lo]
        times = [self._adjusted[v] for v in plain_versions]
        i = bisect.bisect_right(times, ts)
        if i == 0:
            raise self._too_early(ts, root)
        return plain_versions[i - 1]

    def _too_early(self, ts: int, root: str) -> VersionNotFoundError:
        first = self.versions[0]
        return VersionNotFoundError(
            f"{root}: timestamp {to_datetime(ts).isoformat()} is before the earliest retained commit "
            f"(version {first} at {to_datetime(self.timestamp(first)).isoformat()})"
        )
