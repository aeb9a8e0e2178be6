"""`_delta_log/_last_checkpoint`: the hint to a recent checkpoint, with its MD5 checksum.

The hint is never trusted blindly: a missing, empty, corrupt, checksum-failing or stale file
just means the log is listed from the start. `LastCheckpoint.problem` says why a hint was not
usable so that log health can show it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

__all__ = ["LastCheckpoint", "canonicalize", "checksum_of", "parse_last_checkpoint"]


class _RawNumber(str):
    """A JSON number kept as written, so canonicalisation reproduces it exactly."""


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def _encode(text: str) -> str:
    return '"' + quote(text, safe="-._~", encoding="utf-8") + '"'


def _leaf(value: Any) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, _RawNumber):
        return str(value)
    if isinstance(value, (int, float)):
        return json.dumps(value)
    return _encode(str(value))


def _flatten(value: Any, path: list[str], out: list[tuple[str, str]]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            _flatten(item, [*path, _encode(key)], out)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _flatten(item, [*path, str(i)], out)
    else:
        out.append(("+".join(path), _leaf(value)))


def canonicalize(obj: dict[str, Any]) -> str:
    """The spec's canonical form of a `_last_checkpoint` object (top-level `checksum` ignored)."""
    pairs: list[tuple[str, str]] = []
    for key, value in obj.items():
        if key == "checksum":
            continue
        _flatten(value, [_encode(key)], pairs)
    pairs.sort(key=lambda kv: kv[0].encode("utf-8"))
    return ",".join(f"{k}={v}" for k, v in pairs)


def checksum_of(obj: dict[str, Any]) -> str:
    """MD5 (32 hex chars) of the canonical form."""
    return hashlib.md5(canonicalize(obj).encode("utf-8")).hexdigest()


def loads_exact(text: str) -> dict[str, Any]:
    """Parse JSON keeping numbers as written and refusing duplicate keys."""
    obj = json.loads(text, parse_float=_RawNumber, parse_int=_RawNumber, object_pairs_hook=_no_duplicates)
    if not isinstance(obj, dict):
        raise ValueError("not a JSON object")
    return obj


@dataclass(frozen=True)
class LastCheckpoint:
    """A parsed `_last_checkpoint` (only `version` is required to use it)."""

    version: int | None
    size: int | None = None
    parts: int | None = None
    size_in_bytes: int | None = None
    num_of_add_files: int | None = None
    checksum: str | None = None
    checksum_valid: bool | None = None  # None: no checksum in the file
    v2_checkpoint: dict[str, Any] | None = None
    raw: dict[str, Any] = field(default_factory=dict)
    problem: str | None = None  # why the hint cannot be used, if it cannot

    @property
    def usable(self) -> bool:
        return self.problem is None and self.version is not None


def _int(value: Any) -> int | None:
    """A long of the file, or None; ValueError when it is not a whole number in int64 range."""
    if value is None:
        return None
    number = int(str(value))
    if not -(1 << 63) <= number < (1 << 63):
        raise ValueError(f"{value} is out of the range of a long")
    return number


def parse_last_checkpoint(data: bytes | None) -> LastCheckpoint:
    """Parse and validate the hint; never raises (problems are recorded on the result)."""
    try:
        return _parse(data)
    except (ValueError, TypeError, RecursionError, OverflowError, MemoryError) as exc:
        return LastCheckpoint(version=None, problem=f"corrupt: {type(exc).__name__}: {str(exc)[:200]}")


def _parse(data: bytes | None) -> LastCheckpoint:
    if data is None:
        return LastCheckpoint(version=None, problem="missing")
    text = data.decode("utf-8", errors="replace").strip()
    if not text:
        return LastCheckpoint(version=None, problem="empty file")
    try:
        obj = loads_exact(text)
        version = _int(obj.get("version"))
        if version is None or version < 0:
            raise ValueError("no valid 'version'")
        plain = json.loads(text)
    except (ValueError, TypeError) as exc:
        return LastCheckpoint(version=None, problem=f"corrupt: {exc}")
    checksum = plain.get("checksum")
    valid = None
    problem = None
    if checksum is not None:
        valid = checksum_of(obj) == str(checksum)
        if not valid:
            problem = "checksum mismatch"
    try:
        parts = _int(plain.get("parts"))
        return LastCheckpoint(
            version=version,
            size=_int(plain.get("size")),
            parts=parts,
            size_in_bytes=_int(plain.get("sizeInBytes")),
            num_of_add_files=_int(plain.get("numOfAddFiles")),
            checksum=checksum,
            checksum_valid=valid,
            v2_checkpoint=plain.get("v2Checkpoint") if isinstance(plain.get("v2Checkpoint"), dict) else None,
            raw=plain,
            problem=problem,
        )
    except (ValueError, TypeError) as exc:
        return LastCheckpoint(version=None, problem=f"corrupt: {exc}")
