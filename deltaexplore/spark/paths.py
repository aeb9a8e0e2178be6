"""Data file locations as Spark sees them: paths to read and the `_metadata.file_path` keys.

Spark reads Hadoop paths: glob characters are escaped (Spark globs any path containing them),
`s3://` becomes `s3a://`. Rows are tied back to their file by `_metadata.file_path`, which is
the file's URI as `java.net.URI` quotes it; `file_path_key` computes the same string so a
small table of per-file values (partition values, deletion vectors) joins to the rows.
Readers add a guard so that a key that does not match fails loudly rather than dropping rows.
"""

from __future__ import annotations

import posixpath
import re
import string
import unicodedata
from typing import Any

from deltaexplore.core.scan.data_file import resolve_data_path
from deltaexplore.errors import SparkError

__all__ = ["SCHEME_FOR_SPARK", "file_path_key", "local_file", "spark_location", "spark_root"]

#: fsspec scheme -> Hadoop filesystem scheme
SCHEME_FOR_SPARK = {
    "s3": "s3a",
    "s3a": "s3a",
    "s3n": "s3a",
    "gs": "gs",
    "gcs": "gs",
    "abfs": "abfs",
    "abfss": "abfss",
    "hdfs": "hdfs",
}

_LEGAL = frozenset(string.ascii_letters + string.digits + "-_.!~*'()" + ";/:@&=+$,")
_ALL_LEGAL = re.compile("[" + re.escape("".join(sorted(_LEGAL))) + "]*")
_GLOB = re.compile(r"([\[\]{}*?\\])")


def _java_quote(path: str) -> str:
    """Quote a path component exactly as `java.net.URI`'s multi-argument constructors do."""
    if _ALL_LEGAL.fullmatch(path):
        return path  # the common case, without a loop over the characters
    out = []
    for ch in path:
        if ch in _LEGAL:
            out.append(ch)
        elif ord(ch) < 0x80 or unicodedata.category(ch) in ("Zs", "Zl", "Zp") or 0x80 <= ord(ch) <= 0x9F:
            out.append("".join(f"%{b:02X}" for b in ch.encode("utf-8", "surrogatepass")))
        else:
            out.append(ch)
    return "".join(out)


def _split(storage: Any, raw_path: str) -> tuple[str, str]:
    """(Hadoop scheme, path within it) of a data file given by its log path."""
    location = storage.location(resolve_data_path(storage, raw_path))
    scheme = getattr(storage, "scheme", "file")
    if scheme in ("file", "local") or (location.startswith("/") and scheme not in SCHEME_FOR_SPARK):
        return "file", posixpath.normpath(location)
    hadoop = SCHEME_FOR_SPARK.get(scheme)
    if hadoop is None:
        raise SparkError(
            f"Spark cannot read {scheme}:// files (table {storage.root}); copy the table to a local, HDFS or cloud "
            "location Hadoop understands (file, s3/s3a, gs, abfs)",
            path=storage.root,
        )
    return hadoop, location.lstrip("/")


def spark_location(storage: Any, raw_path: str) -> str:
    """The path to hand to `spark.read` for a data file (glob characters escaped)."""
    scheme, path = _split(storage, raw_path)
    if scheme == "file":
        return "file://" + _GLOB.sub(r"\\\1", path)
    return f"{scheme}://" + _GLOB.sub(r"\\\1", path)


def local_file(storage: Any, raw_path: str) -> str | None:
    """The absolute path of a data file on this machine's file system, or None (another scheme)."""
    scheme, path = _split(storage, raw_path)
    return path if scheme == "file" else None


def file_path_key(storage: Any, raw_path: str) -> str:
    """The value `_metadata.file_path` has for rows of this data file."""
    scheme, path = _split(storage, raw_path)
    if scheme == "file":
        return "file:" + _java_quote(path)
    bucket, _, key = path.partition("/")
    return f"{scheme}://{bucket}/" + _java_quote(key)


def spark_root(storage: Any) -> str:
    """The table root as a Hadoop URI (for writes)."""
    scheme = getattr(storage, "scheme", "file")
    if scheme in ("file", "local"):
        root = storage.root
        if "://" in root:
            root = root.split("://", 1)[1]
        return "file://" + posixpath.normpath(root)
    hadoop = SCHEME_FOR_SPARK.get(scheme)
    if hadoop is None:
        raise SparkError(f"Spark cannot write {scheme}:// tables ({storage.root})", path=storage.root)
    return f"{hadoop}://" + storage.root.split("://", 1)[1]
