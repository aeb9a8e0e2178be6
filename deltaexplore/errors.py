"""Every error deltaexplore raises: one root, one subclass per kind of failure.

Messages say what was expected, what was found, and name the file involved.
"""

from __future__ import annotations

__all__ = [
    "ColumnNotFoundError",
    "CommitConflictError",
    "DeletionVectorError",
    "DeltaExploreError",
    "DeltaProtocolError",
    "InvalidCheckpointError",
    "InvalidLogError",
    "InvalidVariantError",
    "MissingDependencyError",
    "MultipleMatchError",
    "SparkError",
    "StorageError",
    "TableNotFoundError",
    "UnsupportedFeatureError",
    "VersionNotFoundError",
    "WriteRefusedError",
]


class DeltaExploreError(Exception):
    """Root of every error raised by deltaexplore."""

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


class TableNotFoundError(DeltaExploreError, FileNotFoundError):
    """The location holds no Delta table (no `_delta_log`, or no commits in it)."""

    def __init__(self, message: str, *, path: str | None = None) -> None:
        DeltaExploreError.__init__(self, message, path=path)

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class VersionNotFoundError(DeltaExploreError, LookupError):
    """The requested version or timestamp cannot be reconstructed from the log."""


class ColumnNotFoundError(DeltaExploreError, KeyError):
    """A column name does not exist in the table schema."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class DeltaProtocolError(DeltaExploreError):
    """The table breaks, or needs more than we implement of, the Delta protocol."""


class UnsupportedFeatureError(DeltaProtocolError):
    """The table needs a protocol version or table feature this library does not support.

    Attributes:
        feature: the feature name (or ``"readerVersion=N"``/``"writerVersion=N"``).
        needed_by: ``"readers"`` or ``"writers"``.
    """

    def __init__(self, message: str, *, feature: str, needed_by: str, path: str | None = None):
        super().__init__(message, path=path)
        self.feature = feature
        self.needed_by = needed_by


class InvalidLogError(DeltaProtocolError):
    """A commit or other log file is malformed, missing, or inconsistent."""


class InvalidCheckpointError(DeltaProtocolError):
    """A checkpoint (or one of its parts or sidecars) is truncated, corrupt or inconsistent."""


class InvalidVariantError(DeltaProtocolError):
    """A variant value, or its shredded parts in a data file, breaks Parquet's variant encoding or
    shredding specification (malformed bytes, a conflict between `value` and `typed_value`, a
    shredded type the specification does not allow)."""


class DeletionVectorError(DeltaExploreError):
    """A deletion vector cannot be read: missing file, bad magic, size or checksum mismatch."""


class StorageError(DeltaExploreError):
    """The storage layer failed (I/O error, permission, bad URI, path escaping the table)."""


class CommitConflictError(DeltaExploreError):
    """A concurrent commit conflicts with this transaction; the table is unchanged."""


class WriteRefusedError(DeltaExploreError):
    """A write was refused before anything was committed (protocol rule, constraint, ...)."""


class MultipleMatchError(WriteRefusedError):
    """A MERGE matched one target row with several source rows where its clauses would update or
    delete that row ambiguously (Delta's DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE)."""


class MissingDependencyError(DeltaExploreError, ImportError):
    """An optional dependency is missing; the message names the pip extra to install."""

    def __init__(self, message: str, *, extra: str) -> None:
        DeltaExploreError.__init__(self, message)
        self.extra = extra
        self.msg = message

    def __str__(self) -> str:
        return self.msg


class InvalidArgumentError(DeltaExploreError, ValueError):
    """An argument of a public function has the wrong type or value (a negative count, a
    version that is not a whole number, a path that is not a string)."""


class SparkError(DeltaExploreError):
    """Spark is unavailable or a Spark job failed."""
