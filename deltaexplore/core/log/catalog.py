"""Catalog-managed tables: the catalog-client interface the snapshot builder consults,
and a file-backed reference catalog for tests and local use.

With `catalogManaged`, the catalog is the source of truth for which commits are ratified:
ratified commits may still sit in `_delta_log/_staged_commits/` (or be held inline by the
catalog) and the catalog's latest version caps the table. Staged files are never trusted by
themselves.
"""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from deltaexplore.errors import CommitConflictError, DeltaExploreError

__all__ = ["CatalogClient", "FileCatalog", "RatifiedCommit", "RatifiedCommits"]


@dataclass(frozen=True)
class RatifiedCommit:
    """A commit the catalog ratified: a staged file (`path`, table-relative) or inline `content`."""

    version: int
    path: str | None = None
    content: bytes | None = None
    timestamp: int | None = None


@dataclass(frozen=True)
class RatifiedCommits:
    """Ratified commits the catalog still holds (ascending, contiguous) and its latest version."""

    commits: tuple[RatifiedCommit, ...]
    latest_version: int


@runtime_checkable
class CatalogClient(Protocol):
    """What deltaexplore needs from a catalog that manages tables."""

    def get_ratified_commits(
        self, table_uri: str, start_version: int | None = None, end_version: int | None = None
    ) -> RatifiedCommits:
        """Ratified, possibly unpublished commits in [start, end] and the latest ratified version."""
        ...

    def commit(self, table_uri: str, version: int, content: bytes, storage: Any) -> None:
        """Stage `content` as `version` and ratify it; raise `CommitConflictError` if taken."""
        ...

    def mark_published(self, table_uri: str, version: int) -> None:
        """Forget ratified commits up to `version` once they are published to `_delta_log/`."""
        ...


def _key(table_uri: str) -> str:
    if "://" in table_uri and not table_uri.startswith("file:"):
        return table_uri.rstrip("/")
    path = table_uri[5:] if table_uri.startswith("file:") else table_uri
    while path.startswith("//"):
        path = path[1:]
    return os.path.abspath(path)


class FileCatalog:
    """A catalog kept in one JSON file: per table, the latest version and unpublished commits.

    Layout: ``{"tables": {"<table root>": {"latest_version": N,
    "commits": [{"version": v, "path": "_delta_log/_staged_commits/<v>.<uuid>.json"}]}}}``.
    Updates are serialized with a lock file, so several processes can commit through it.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self._lock = threading.Lock()

    def _load(self) -> dict[str, Any]:
        try:
            with open(self.path, encoding="utf-8") as fh:
                data = json.load(fh)
        except FileNotFoundError:
            return {"tables": {}}
        except ValueError as exc:
            raise DeltaExploreError(f"catalog file {self.path} is not valid JSON: {exc}", path=self.path) from exc
        if not isinstance(data, dict) or not isinstance(data.get("tables"), dict):
            raise DeltaExploreError(f"catalog file {self.path} has no 'tables' object", path=self.path)
        return data

    def _save(self, data: dict[str, Any]) -> None:
        tmp = f"{self.path}.{uuid.uuid4().hex}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=1, sort_keys=True)
        os.replace(tmp, self.path)

    def _locked(self) -> Any:
        return _FileLock(self.path + ".lock", self._lock)

    def register(self, table_uri: str, *, latest_version: int = -1) -> None:
        """Start managing a table (its commits up to `latest_version` are published)."""
        with self._locked():
            data = self._load()
            data["tables"].setdefault(_key(table_uri), {"latest_version": latest_version, "commits": []})
            self._save(data)

    def ratify(self, table_uri: str, version: int, path: str | None = None, content: bytes | None = None) -> None:
        """Record a staged (or inline) commit as version `version` (must be latest + 1)."""
        with self._locked():
            data = self._load()
            entry = data["tables"].setdefault(_key(table_uri), {"latest_version": -1, "commits": []})
            if version != entry["latest_version"] + 1:
                raise CommitConflictError(
                    f"catalog {self.path}: cannot ratify version {version}, latest ratified is {entry['latest_version']}"
                )
            record: dict[str, Any] = {"version": version}
            if path is not None:
                record["path"] = path
            if content is not None:
                record["content"] = content.decode("utf-8")
            entry["commits"].append(record)
            entry["latest_version"] = version
            self._save(data)

    def get_ratified_commits(
        self, table_uri: str, start_version: int | None = None, end_version: int | None = None
    ) -> RatifiedCommits:
        data = self._load()
        entry = data["tables"].get(_key(table_uri))
        if entry is None:
            raise DeltaExploreError(f"table {table_uri} is not registered in catalog {self.path}", path=self.path)
        commits = []
        for c in entry.get("commits", []):
            v = int(c["version"])
            if start_version is not None and v < start_version:
                continue
            if end_version is not None and v > end_version:
                continue
            content = c.get("content")
            commits.append(
                RatifiedCommit(v, c.get("path"), content.encode("utf-8") if content is not None else None, c.get("timestamp"))
            )
        commits.sort(key=lambda c: c.version)
        return RatifiedCommits(tuple(commits), int(entry["latest_version"]))

    def commit(self, table_uri: str, version: int, content: bytes, storage: Any) -> None:
        staged = f"_delta_log/_staged_commits/{version:020d}.{uuid.uuid4()}.json"
        if not storage.put_if_absent(staged, content):
            raise CommitConflictError(f"staged commit {staged} already exists")
        self.ratify(table_uri, version, path=staged)

    def mark_published(self, table_uri: str, version: int) -> None:
        with self._locked():
            data = self._load()
            entry = data["tables"].get(_key(table_uri))
            if entry is None:
                return
            entry["commits"] = [c for c in entry["commits"] if int(c["version"]) > version]
            self._save(data)


class _FileLock:
    """An exclusive lock via O_EXCL lock file (plus a thread lock)."""

    def __init__(self, path: str, lock: threading.Lock) -> None:
        self.path = path
        self.lock = lock
        self.fd: int | None = None

    def __enter__(self) -> _FileLock:
        self.lock.acquire()
        deadline = time.monotonic() + 30
        while True:
            try:
                self.fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
                return self
            except FileExistsError:
                if time.monotonic() > deadline:
                    self.lock.release()
                    raise DeltaExploreError(f"catalog lock {self.path} held for more than 30 s") from None
                time.sleep(0.01)

    def __exit__(self, *exc: object) -> None:
        if self.fd is not None:
            os.close(self.fd)
            os.unlink(self.path)
        self.lock.release()
