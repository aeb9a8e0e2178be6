"""Log listing and log segments: which files reconstruct a given version.

A `LogListing` is one listing of `_delta_log/` parsed into typed files. A `LogSegment` for
version v is the newest complete checkpoint at or before v plus the commits after it up to v
(contiguous), optionally with log compaction files standing in for runs of commits.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, replace

from deltaexplore.core.log.checkpoint_reader import Checkpoint, group_checkpoints
from deltaexplore.core.log.file_names import LOG_DIR, LogFile, LogKind, parse_log_file
from deltaexplore.core.log.last_checkpoint import LastCheckpoint, parse_last_checkpoint
from deltaexplore.errors import DeltaExploreError, InvalidLogError, TableNotFoundError, VersionNotFoundError
from deltaexplore.storage import FileInfo, Storage

__all__ = ["MAX_VERSION", "LogListing", "LogSegment", "list_log"]

#: versions are longs in the protocol
MAX_VERSION = (1 << 63) - 1


class LogListing:
    """Everything recognised in one listing of `_delta_log/`.

    On an object store the listing may start at the checkpoint `_last_checkpoint` names
    (`tail_from`: the files of that version and newer, what the latest version's snapshot
    needs); the older names are listed on first use of anything that needs them (`commits`,
    `checkpoints`, `compactions`, `crcs`, `other_files`, `temp_files`, `versions()`, ...),
    once. `latest_version`, `commit(v)` of a listed version and `build_segment` of a version
    the listed checkpoint covers need no more.
    """

    def __init__(self) -> None:
        self._commits: dict[int, LogFile] = {}
        self._checkpoints: dict[int, list[Checkpoint]] = {}
        self._compactions: list[LogFile] = []
        self._crcs: dict[int, LogFile] = {}
        self._other_files: list[str] = []
        self._temp_files: list[FileInfo] = []
        self.last_checkpoint: LastCheckpoint = LastCheckpoint(version=None, problem="missing")
        #: ratified-but-unpublished commits supplied by a catalog (version -> file)
        self.ratified: dict[int, LogFile] = {}
        #: a catalog capped the table at this version
        self.catalog_latest: int | None = None
        #: the versions before this one are not listed yet (`_rest` lists them); 0: all listed
        self.tail_from = 0
        self._rest: Callable[[], LogListing] | None = None
        self._rest_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"LogListing(latest={self.latest_version}, tail_from={self.tail_from})"

    # -- the files, everything listed first ------------------------------------------------------
    @property
    def commits(self) -> dict[int, LogFile]:
        self.complete()
        return self._commits

    @property
    def checkpoints(self) -> dict[int, list[Checkpoint]]:
        """Complete checkpoints by version (several of one version: classic, multi-part, V2)."""
        self.complete()
        return self._checkpoints

    @property
    def compactions(self) -> list[LogFile]:
        self.complete()
        return self._compactions

    @property
    def crcs(self) -> dict[int, LogFile]:
        self.complete()
        return self._crcs

    @property
    def other_files(self) -> list[str]:
        self.complete()
        return self._other_files

    @property
    def temp_files(self) -> list[FileInfo]:
        """Temporary files (`.<name>.tmp`) writers left in `_delta_log/` (also in `other_files`)."""
        self.complete()
        return self._temp_files

    def complete(self) -> None:
        """List the names before `tail_from` (once; a failed listing is tried again next time).

        Raises:
            StorageError: the listing failed.
            InvalidLogError: a name with a version beyond the protocol's longs.
        """
        if self._rest is None:
            return
        with self._rest_lock:
            if self._rest is None:
                return
            rest = self._rest()
            # every name listed here sorts before every name of the tail: merged in order
            self._commits = {**rest._commits, **self._commits}
            self._checkpoints = {**rest._checkpoints, **self._checkpoints}
            self._compactions = [*rest._compactions, *self._compactions]
            self._crcs = {**rest._crcs, **self._crcs}
            self._other_files = [*rest._other_files, *self._other_files]
            self._temp_files = [*rest._temp_files, *self._temp_files]
            self._drop_stray_compactions()
            self._rest = None
            self.tail_from = 0

    def _drop_stray_compactions(self) -> None:
        """A compaction reaching past every commit and checkpoint backs versions nothing else
        knows: it is an other file."""
        newest = max([*self._commits, *self._checkpoints], default=-1)
        stray = [c for c in self._compactions if c.end_version > newest]
        if stray:
            self._compactions = [c for c in self._compactions if c.end_version <= newest]
            self._other_files.extend(c.path for c in stray)

    # -- questions a tail answers ---------------------------------------------------------------
    @property
    def latest_version(self) -> int | None:
        candidates = list(self._commits) + list(self._checkpoints) + list(self.ratified)
        if self.catalog_latest is not None:
            candidates = [v for v in candidates if v <= self.catalog_latest]
        return max(candidates) if candidates else None

    def commit(self, version: int) -> LogFile | None:
        """The commit file of `version`: the catalog's ratified one first, else the published one."""
        if version < self.tail_from:
            self.complete()
        return self.ratified.get(version) or self._commits.get(version)

    def versions(self) -> list[int]:
        """Versions that have a commit file (published or ratified), oldest first, up to the
        catalog's latest."""
        vs = sorted(set(self.commits) | set(self.ratified))
        if self.catalog_latest is not None:
            vs = [v for v in vs if v <= self.catalog_latest]
        return vs

    def commit_versions(self, lo: int, hi: int) -> list[int]:
        """The versions in lo..hi that have a commit file (published or ratified), sorted: never
        a walk over the version numbers in between."""
        if lo < self.tail_from:
            self.complete()
        return sorted(v for v in {*self._commits, *self.ratified} if lo <= v <= hi)

    @property
    def earliest_commit(self) -> int | None:
        versions = set(self.commits) | set(self.ratified)
        return min(versions) if versions else None


def list_log(storage: Storage) -> LogListing:
    """List and classify `_delta_log/`.

    On an object store (`Storage.max_concurrency` > 1) `_last_checkpoint` is read first; when
    it names a checkpoint, only the names from that version on are listed (one request for the
    newest commits instead of a page per 1,000 names of the whole log), the rest when something
    asks for it (`LogListing.complete`). A hint naming a checkpoint the listing does not show
    complete means the whole log is listed now.

    Raises:
        TableNotFoundError: no `_delta_log` directory, or nothing in it.
    """

    try:
        if storage.max_concurrency > 1:
            listing = _list_from_hint(storage)
        else:
            listing = _classify(storage.root, storage.list_dir(LOG_DIR), lambda: _read_last_checkpoint(storage))
    except FileNotFoundError as exc:
        raise TableNotFoundError(f"not a Delta table: {storage.root} has no {LOG_DIR} directory", path=storage.root) from exc
    listing._drop_stray_compactions()
    lc = listing.last_checkpoint
    if lc.usable and lc.version not in listing._checkpoints:
        listing.last_checkpoint = replace(lc, problem=f"points at checkpoint {lc.version}, which is missing or incomplete")
    if not listing._commits and not listing._checkpoints:
        raise TableNotFoundError(
            f"not a Delta table: {storage.root}/{LOG_DIR} holds no commits or checkpoints", path=storage.root
        )
    return listing


def _read_last_checkpoint(storage: Storage) -> bytes | None:
    return _read_if_present(storage, f"{LOG_DIR}/_last_checkpoint")


def _list_from_hint(storage: Storage) -> LogListing:
    """The listing of an object store: `_last_checkpoint` first, then the names from its
    checkpoint on (`_tail_listing`), or the whole log in ranges split at versions up to it."""
    last_checkpoint: Callable[[], bytes | None] = lambda: _read_last_checkpoint(storage)  # noqa: E731
    try:
        raw = last_checkpoint()
    except DeltaExploreError:  # raised where it is used (when the listing shows the file)
        raw = None
    else:
        last_checkpoint = lambda: raw  # noqa: E731
    hint = parse_last_checkpoint(raw)
    listing = _tail_listing(storage, hint, last_checkpoint)
    if listing is None:
        listing = _classify(storage.root, storage.list_dir_split(LOG_DIR, _listing_boundaries(hint)), last_checkpoint)
    return listing


def _tail_listing(storage: Storage, hint: LastCheckpoint, last_checkpoint: Callable[[], bytes | None]) -> LogListing | None:
    """The listing of the names from the hint's checkpoint version on, the older ones left to
    `LogListing.complete`; None when the hint names no checkpoint or those names hold no
    complete checkpoint of its version (`_last_checkpoint` sorts after every versioned name:
    listed here when it is there)."""
    if not hint.usable or hint.version is None or hint.version <= 0:
        return None
    start = f"{hint.version:020d}"  # every name of the version starts with it, and sorts after it
    listing = _classify(storage.root, storage.list_dir(LOG_DIR, start_after=start), last_checkpoint)
    if hint.version not in listing._checkpoints:
        return None
    listing.tail_from = hint.version
    boundaries = [b for b in _listing_boundaries(hint) if b < start]
    listing._rest = lambda: _classify(storage.root, storage.list_dir_split(LOG_DIR, boundaries, stop_before=start), None)
    return listing


def _classify(root: str, infos: list[FileInfo], last_checkpoint: Callable[[], bytes | None] | None) -> LogListing:
    """The listing of the recognised files of `infos` (`last_checkpoint` reads the hint when
    the listing shows it; None: the hint is not read).

    Raises:
        InvalidLogError: a name with a version beyond the protocol's longs.
    """
    listing = LogListing()
    files: list[LogFile] = []
    for info in infos:
        parsed = parse_log_file(info)
        if parsed is None:
            listing._other_files.append(info.path)
            if info.name.startswith(".") and info.name.endswith(".tmp"):
                listing._temp_files.append(info)
            continue
        if parsed.end_version > MAX_VERSION:
            raise InvalidLogError(
                f"{root}/{info.path}: version {parsed.end_version} is beyond the largest Delta version "
                f"({MAX_VERSION}): not a file of this table's log",
                path=info.path,
            )
        if parsed.kind is LogKind.COMMIT:
            listing._commits[parsed.version] = parsed
        elif parsed.kind is LogKind.COMPACTION:
            listing._compactions.append(parsed)
        elif parsed.kind is LogKind.CRC:
            listing._crcs[parsed.version] = parsed
        elif parsed.kind is LogKind.LAST_CHECKPOINT:
            if last_checkpoint is not None:
                listing.last_checkpoint = parse_last_checkpoint(last_checkpoint())
        elif parsed.is_checkpoint:
            files.append(parsed)
    listing._checkpoints = group_checkpoints(files)
    return listing


#: versions per range of a split listing: about one page (1,000 names) of commits and checksums
LISTING_RANGE_VERSIONS = 500
#: ranges listed at once at most
LISTING_RANGES = 32


def _listing_boundaries(hint: LastCheckpoint) -> list[str]:
    """Names splitting `_delta_log/` into ranges of about a listing page each, up to the
    checkpoint `_last_checkpoint` names (the newest commits are one range after it)."""
    if not hint.usable or hint.version is None or hint.version <= 0:
        return []
    step = max(LISTING_RANGE_VERSIONS, -(-hint.version // (LISTING_RANGES - 1)))
    versions = {*range(step, hint.version, step), hint.version}
    return [f"{v:020d}" for v in sorted(versions)]


def _read_if_present(storage: Storage, path: str) -> bytes | None:
    try:
        return storage.read_bytes(path)
    except FileNotFoundError:
        return None


@dataclass(frozen=True)
class LogSegment:
    """The files that reconstruct `version`: a checkpoint (or none) and the JSON files after it.

    `json_files` are commits and compaction files in replay order; `commits` are the commit files
    of every version after the checkpoint (for timestamps), even where a compaction replaces them.
    """

    version: int
    checkpoint: Checkpoint | None
    json_files: tuple[LogFile, ...]
    commits: tuple[LogFile, ...]
    crc: LogFile | None

    @property
    def start_version(self) -> int:
        return self.checkpoint.version if self.checkpoint else 0


def build_segment(listing: LogListing, version: int, *, root: str, use_compactions: bool = True) -> LogSegment:
    """The log segment of `version`.

    Raises:
        VersionNotFoundError: the version is newer than the table or older than its retained log.
        InvalidLogError: a commit is missing between the checkpoint and the version.
    """
    if listing.tail_from and version >= listing.tail_from:
        tail = _tail_segment(listing, version)
        if tail is not None:
            return tail
    listing.complete()
    latest = listing.latest_version
    if latest is None:
        raise TableNotFoundError(f"not a Delta table: {root} has no commits", path=root)
    if version < 0 or version > latest:
        raise VersionNotFoundError(f"version {version} does not exist: {root} has versions up to {latest}", path=root)
    checkpoint = None
    for v in sorted((v for v in listing.checkpoints if v <= version), reverse=True):
        checkpoint = listing.checkpoints[v][0]
        break
    start = checkpoint.version + 1 if checkpoint else 0
    # never a walk over version numbers: a stray huge commit name must cost nothing
    present = sorted(v for v in {*listing.commits, *listing.ratified} if start <= v <= version)
    commits = [c for c in (listing.commit(v) for v in present) if c is not None]
    missing = _gaps(present, start, version)
    json_files = list(commits)
    if missing and use_compactions:
        # Commits are the source of truth; compaction files only bridge commits that are gone.
        json_files, missing = _with_compactions(listing, start, version)
    if missing:
        if checkpoint is None and missing[0][0] == 0 and version < (listing.earliest_commit or 0):
            raise VersionNotFoundError(
                f"version {version} cannot be reconstructed: the log before version {listing.earliest_commit} was cleaned up "
                "and no checkpoint covers it",
                path=root,
            )
        if checkpoint is None and missing[0][0] == 0:
            raise VersionNotFoundError(
                f"version {version} cannot be reconstructed: commits {_ranges(missing)} are missing and no checkpoint "
                f"at or before version {version} exists",
                path=root,
            )
        present = sorted(v for v in listing.commits if start <= v <= version)
        raise InvalidLogError(
            f"versions are not contiguous in {root}/{LOG_DIR}: commits {_ranges(missing)} are missing "
            f"(found {_ranges(present)}{'' if checkpoint is None else f' after checkpoint {checkpoint.version}'})",
            path=f"{root}/{LOG_DIR}",
        )
    return LogSegment(version, checkpoint, tuple(json_files), tuple(commits), listing.crcs.get(version))


def _tail_segment(listing: LogListing, version: int) -> LogSegment | None:
    """The segment of `version` from the listed tail alone (its newest checkpoint at or before
    the version and every commit after it); None when the tail does not hold one (a gap, a
    version past the latest): `build_segment` answers from the whole listing."""
    latest = listing.latest_version
    if latest is None or version > latest:
        return None
    checkpoint = listing._checkpoints[max(v for v in listing._checkpoints if v <= version)][0]
    present = sorted(v for v in {*listing._commits, *listing.ratified} if checkpoint.version < v <= version)
    if _gaps(present, checkpoint.version + 1, version):
        return None
    commits = tuple(c for c in (listing.commit(v) for v in present) if c is not None)
    return LogSegment(version, checkpoint, commits, commits, listing._crcs.get(version))


def _with_compactions(listing: LogListing, start: int, version: int) -> tuple[list[LogFile], list[tuple[int, int]]]:
    """Cover start..version with commits, using the longest compaction file that fits where a
    commit is missing; the runs of versions still missing."""
    by_start: dict[int, LogFile] = {}
    for c in listing.compactions:
        if c.version >= start and c.end_version <= version:
            best = by_start.get(c.version)
            if best is None or c.end_version > best.end_version:
                by_start[c.version] = c
    present = sorted(v for v in {*listing.commits, *listing.ratified} if start <= v <= version)
    out: list[LogFile] = []
    missing: list[tuple[int, int]] = []
    v = start
    i = 0
    while v <= version:
        while i < len(present) and present[i] < v:
            i += 1
        if i < len(present) and present[i] == v:
            commit = listing.commit(v)
            assert commit is not None
            out.append(commit)
            v += 1
            continue
        if v in by_start:
            out.append(by_start[v])
            v = by_start[v].end_version + 1
            continue
        # v is missing: up to the next version a commit or a compaction starts at
        nexts = [present[i]] if i < len(present) else []
        nexts += [s for s in by_start if s > v]
        stop = min(nexts) if nexts else version + 1
        missing.append((v, stop - 1))
        v = stop
    return out, missing


def _gaps(present: list[int], start: int, end: int) -> list[tuple[int, int]]:
    """The runs of versions in start..end that `present` (sorted) lacks."""
    out = []
    expected = start
    for v in present:
        if v > expected:
            out.append((expected, v - 1))
        expected = v + 1
    if expected <= end:
        out.append((expected, end))
    return out


def _ranges(versions: list[int] | list[tuple[int, int]]) -> str:
    """`1-3, 7` from versions or (first, last) runs (at most 10 runs named)."""
    if not versions:
        return "none"
    runs: list[tuple[int, int]] = []
    for item in versions:
        lo, hi = item if isinstance(item, tuple) else (item, item)
        if runs and lo == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], hi)
        else:
            runs.append((lo, hi))
    parts = [f"{lo}" if lo == hi else f"{lo}-{hi}" for lo, hi in runs[:10]]
    if len(runs) > 10:
        parts.append(f"... ({len(runs) - 10} more)")
    return ", ".join(parts)
