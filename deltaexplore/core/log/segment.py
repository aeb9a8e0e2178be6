"""Log listing and log segments: which files reconstruct a given version.

A `LogListing` is one listing of `_delta_log/` parsed into typed files. A `LogSegment` for
version v is the newest complete checkpoint at or before v plus the commits after it up to v
(contiguous), optionally with log compaction files standing in for runs of commits.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from deltaexplore.core.log.checkpoint_reader import Checkpoint, group_checkpoints
from deltaexplore.core.log.file_names import LOG_DIR, LogFile, LogKind, parse_log_file
from deltaexplore.core.log.last_checkpoint import LastCheckpoint, parse_last_checkpoint
from deltaexplore.errors import DeltaExploreError, InvalidLogError, TableNotFoundError, VersionNotFoundError
from deltaexplore.storage import FileInfo, Storage

__all__ = ["MAX_VERSION", "LogListing", "LogSegment", "list_log"]

#: versions are longs in the protocol
MAX_VERSION = (1 << 63) - 1


@dataclass
class LogListing:
    """Everything recognised in one listing of `_delta_log/`."""

    commits: dict[int, LogFile] = field(default_factory=dict)
    checkpoints: dict[int, list[Checkpoint]] = field(default_factory=dict)
    compactions: list[LogFile] = field(default_factory=list)
    crcs: dict[int, LogFile] = field(default_factory=dict)
    last_checkpoint: LastCheckpoint = field(default_factory=lambda: LastCheckpoint(version=None, problem="missing"))
    other_files: list[str] = field(default_factory=list)
    #: temporary files (`.<name>.tmp`) writers left in `_delta_log/` (also in `other_files`)
    temp_files: list[FileInfo] = field(default_factory=list)
    #: ratified-but-unpublished commits supplied by a catalog (version -> file)
    ratified: dict[int, LogFile] = field(default_factory=dict)
    #: a catalog capped the table at this version
    catalog_latest: int | None = None

    @property
    def latest_version(self) -> int | None:
        candidates = list(self.commits) + list(self.checkpoints) + list(self.ratified)
        if self.catalog_latest is not None:
            candidates = [v for v in candidates if v <= self.catalog_latest]
        return max(candidates) if candidates else None

    def commit(self, version: int) -> LogFile | None:
        """The commit file of `version`: the catalog's ratified one first, else the published one."""
        return self.ratified.get(version) or self.commits.get(version)

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
        return sorted(v for v in {*self.commits, *self.ratified} if lo <= v <= hi)

    @property
    def earliest_commit(self) -> int | None:
        versions = set(self.commits) | set(self.ratified)
        return min(versions) if versions else None


def list_log(storage: Storage) -> LogListing:
    """List and classify `_delta_log/`.

    Raises:
        TableNotFoundError: no `_delta_log` directory, or nothing in it.
    """

    def read_last_checkpoint() -> bytes | None:
        return _read_if_present(storage, f"{LOG_DIR}/_last_checkpoint")

    last_checkpoint = read_last_checkpoint
    try:
        if storage.max_concurrency > 1:
            # on an object store `_last_checkpoint` comes first: its version splits the listing
            # into ranges of names listed at once (`Storage.list_dir_split`)
            try:
                hint = read_last_checkpoint()
            except DeltaExploreError:  # raised where it is used (when the listing shows the file)
                hint = None
            else:
                last_checkpoint = lambda: hint  # noqa: E731
            infos = storage.list_dir_split(LOG_DIR, _listing_boundaries(parse_last_checkpoint(hint)))
        else:
            infos = storage.list_dir(LOG_DIR)
    except FileNotFoundError as exc:
        raise TableNotFoundError(f"not a Delta table: {storage.root} has no {LOG_DIR} directory", path=storage.root) from exc
    listing = LogListing()
    files: list[LogFile] = []
    for info in infos:
        parsed = parse_log_file(info)
        if parsed is None:
            listing.other_files.append(info.path)
            if info.name.startswith(".") and info.name.endswith(".tmp"):
                listing.temp_files.append(info)
            continue
        if parsed.end_version > MAX_VERSION:
            raise InvalidLogError(
                f"{storage.root}/{info.path}: version {parsed.end_version} is beyond the largest Delta version "
                f"({MAX_VERSION}): not a file of this table's log",
                path=info.path,
            )
        if parsed.kind is LogKind.COMMIT:
            listing.commits[parsed.version] = parsed
        elif parsed.kind is LogKind.COMPACTION:
            listing.compactions.append(parsed)
        elif parsed.kind is LogKind.CRC:
            listing.crcs[parsed.version] = parsed
        elif parsed.kind is LogKind.LAST_CHECKPOINT:
            listing.last_checkpoint = parse_last_checkpoint(last_checkpoint())
        elif parsed.is_checkpoint:
            files.append(parsed)
    listing.checkpoints = group_checkpoints(files)
    newest = max([*listing.commits, *listing.checkpoints], default=-1)
    stray = [c for c in listing.compactions if c.end_version > newest]
    if stray:  # a compaction reaching past every commit and checkpoint backs versions nothing else knows
        listing.compactions = [c for c in listing.compactions if c.end_version <= newest]
        listing.other_files.extend(c.path for c in stray)
    lc = listing.last_checkpoint
    if lc.usable and lc.version not in listing.checkpoints:
        listing.last_checkpoint = replace(lc, problem=f"points at checkpoint {lc.version}, which is missing or incomplete")
    if not listing.commits and not listing.checkpoints:
        raise TableNotFoundError(
            f"not a Delta table: {storage.root}/{LOG_DIR} holds no commits or checkpoints", path=storage.root
        )
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
