"""Log file names, parsed once into typed records before anything else looks at them."""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from deltaexplore.storage import FileInfo

__all__ = ["LOG_DIR", "SIDECAR_DIR", "STAGED_DIR", "LogFile", "LogKind", "commit_name", "parse_log_file"]

LOG_DIR = "_delta_log"
SIDECAR_DIR = "_delta_log/_sidecars"
STAGED_DIR = "_delta_log/_staged_commits"


class LogKind(enum.Enum):
    COMMIT = "commit"
    STAGED_COMMIT = "staged_commit"
    CHECKPOINT = "checkpoint"  # classic single file (V1 or V2 content)
    MULTIPART_CHECKPOINT = "multipart_checkpoint"
    V2_CHECKPOINT = "v2_checkpoint"  # UUID-named, json or parquet
    COMPACTION = "compaction"
    CRC = "crc"
    LAST_CHECKPOINT = "last_checkpoint"


_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
_PATTERNS: list[tuple[LogKind, re.Pattern[str]]] = [
    (LogKind.COMMIT, re.compile(r"^(\d{20})\.json$")),
    (LogKind.CHECKPOINT, re.compile(r"^(\d{20})\.checkpoint\.parquet$")),
    (LogKind.MULTIPART_CHECKPOINT, re.compile(r"^(\d{20})\.checkpoint\.(\d{10})\.(\d{10})\.parquet$")),
    (LogKind.V2_CHECKPOINT, re.compile(rf"^(\d{{20}})\.checkpoint\.({_UUID})\.(json|parquet)$")),
    (LogKind.COMPACTION, re.compile(r"^(\d{20})\.(\d{20})\.compacted\.json$")),
    (LogKind.CRC, re.compile(r"^(\d{20})\.crc$")),
]
_STAGED = re.compile(rf"^(\d{{20}})\.({_UUID})\.json$")


@dataclass(frozen=True, slots=True)
class LogFile:
    """A recognised file of the log.

    `version` is the commit/checkpoint version (the start version for compactions);
    `end_version` equals it except for compactions. `part`/`num_parts` are set for multi-part
    checkpoints, `uuid` for V2 checkpoints and staged commits, `fmt` is "json" or "parquet".
    """

    kind: LogKind
    path: str
    version: int
    end_version: int
    size: int = 0
    modification_time: int = 0
    part: int = 1
    num_parts: int = 1
    uuid: str | None = None
    fmt: str = "json"
    #: content held by a catalog (inline commit): read from here instead of storage
    inline: bytes | None = None

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]

    @property
    def is_checkpoint(self) -> bool:
        return self.kind in (LogKind.CHECKPOINT, LogKind.MULTIPART_CHECKPOINT, LogKind.V2_CHECKPOINT)


def parse_log_file(info: FileInfo) -> LogFile | None:
    """Classify a file of `_delta_log/` (or `_delta_log/_staged_commits/`); None if not a log file."""
    name = info.name
    if len(name) == 25 and name.endswith(".json") and name[:20].isdigit() and name[:20].isascii():
        if not info.path.startswith(STAGED_DIR + "/"):  # the common case, without a regex
            v = int(name[:20])
            return LogFile(LogKind.COMMIT, info.path, v, v, info.size, info.modification_time)
    if info.path.startswith(STAGED_DIR + "/"):
        m = _STAGED.match(name)
        if not m:
            return None
        v = int(m.group(1))
        return LogFile(LogKind.STAGED_COMMIT, info.path, v, v, info.size, info.modification_time, uuid=m.group(2))
    if name == "_last_checkpoint":
        return LogFile(LogKind.LAST_CHECKPOINT, info.path, -1, -1, info.size, info.modification_time)
    for kind, pattern in _PATTERNS:
        m = pattern.match(name)
        if not m:
            continue
        v = int(m.group(1))
        common = dict(path=info.path, size=info.size, modification_time=info.modification_time)
        if kind is LogKind.CHECKPOINT:
            return LogFile(kind, version=v, end_version=v, fmt="parquet", **common)  # type: ignore[arg-type]
        if kind is LogKind.MULTIPART_CHECKPOINT:
            part, parts = int(m.group(2)), int(m.group(3))
            if parts < 1 or not 1 <= part <= parts:
                return None
            return LogFile(kind, version=v, end_version=v, part=part, num_parts=parts, fmt="parquet", **common)  # type: ignore[arg-type]
        if kind is LogKind.V2_CHECKPOINT:
            return LogFile(kind, version=v, end_version=v, uuid=m.group(2), fmt=m.group(3), **common)  # type: ignore[arg-type]
        if kind is LogKind.COMPACTION:
            end = int(m.group(2))
            if end < v:
                return None
            return LogFile(kind, version=v, end_version=end, **common)  # type: ignore[arg-type]
        return LogFile(kind, version=v, end_version=v, **common)  # type: ignore[arg-type]
    return None


def commit_name(version: int) -> str:
    """`_delta_log/<20-digit version>.json`."""
    return f"{LOG_DIR}/{version:020d}.json"
