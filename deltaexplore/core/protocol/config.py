"""Table configuration: protocol + metadata + table properties, read once and validated."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from deltaexplore.core.protocol.actions import Metadata, Protocol
from deltaexplore.core.protocol.schema import StructType
from deltaexplore.errors import DeltaProtocolError

__all__ = ["TableConfig", "parse_interval_ms"]

_UNITS_MS = {
    "nanosecond": 1e-6,
    "microsecond": 1e-3,
    "millisecond": 1,
    "second": 1000,
    "minute": 60_000,
    "hour": 3_600_000,
    "day": 86_400_000,
    "week": 604_800_000,
}
_INTERVAL = re.compile(r"^\s*(?:interval\s+)?(-?\d+(?:\.\d+)?)\s*([a-z]+?)s?\s*$", re.IGNORECASE)

DEFAULT_LOG_RETENTION_MS = 30 * 86_400_000
DEFAULT_DELETED_FILE_RETENTION_MS = 7 * 86_400_000


def parse_interval_ms(text: str) -> int:
    """Milliseconds of a Delta interval property such as ``interval 7 days`` or ``1 week``.

    Raises:
        DeltaProtocolError: not an interval Delta understands.
    """
    m = _INTERVAL.match(str(text))
    if not m or m.group(2).lower() not in _UNITS_MS:
        raise DeltaProtocolError(f"cannot parse interval {text!r} (expected e.g. 'interval 7 days')")
    ms = float(m.group(1)) * _UNITS_MS[m.group(2).lower()]
    if not -(2.0**63) < ms < 2.0**63:
        raise DeltaProtocolError(f"interval {text!r} is beyond the range of a long in milliseconds")
    return int(ms)


@dataclass(frozen=True)
class TableConfig:
    """What a snapshot's protocol and metadata mean for readers and writers."""

    protocol: Protocol
    metadata: Metadata

    @property
    def properties(self) -> dict[str, str]:
        return dict(self.metadata.configuration)

    def _bool(self, key: str, default: bool = False) -> bool:
        return str(self.metadata.configuration.get(key, str(default))).strip().lower() == "true"

    @cached_property
    def column_mapping_mode(self) -> str:
        return self.metadata.column_mapping_mode(self.protocol)

    @property
    def schema(self) -> StructType:
        return self.metadata.schema

    @property
    def partition_columns(self) -> tuple[str, ...]:
        return self.metadata.partition_columns

    @property
    def deletion_vectors_enabled(self) -> bool:
        return "deletionVectors" in self.protocol.writer_feature_set and self._bool("delta.enableDeletionVectors")

    @property
    def change_data_feed_enabled(self) -> bool:
        return self._bool("delta.enableChangeDataFeed")

    @property
    def row_tracking_enabled(self) -> bool:
        return "rowTracking" in self.protocol.writer_feature_set and self._bool("delta.enableRowTracking")

    @property
    def append_only(self) -> bool:
        return self._bool("delta.appendOnly")

    @property
    def in_commit_timestamps_enabled(self) -> bool:
        return "inCommitTimestamp" in self.protocol.writer_feature_set and self._bool("delta.enableInCommitTimestamps")

    @property
    def checkpoint_interval(self) -> int:
        try:
            return max(1, int(self.metadata.configuration.get("delta.checkpointInterval", "10")))
        except ValueError:
            return 10

    @property
    def v2_checkpoints(self) -> bool:
        return (
            "v2Checkpoint" in self.protocol.reader_feature_set
            or self.metadata.configuration.get("delta.checkpointPolicy") == "v2"
        )

    @property
    def log_retention_ms(self) -> int:
        value = self.metadata.configuration.get("delta.logRetentionDuration")
        return parse_interval_ms(value) if value else DEFAULT_LOG_RETENTION_MS

    @property
    def deleted_file_retention_ms(self) -> int:
        value = self.metadata.configuration.get("delta.deletedFileRetentionDuration")
        return parse_interval_ms(value) if value else DEFAULT_DELETED_FILE_RETENTION_MS

    @property
    def set_transaction_retention_ms(self) -> int | None:
        value = self.metadata.configuration.get("delta.setTransactionRetentionDuration")
        return parse_interval_ms(value) if value else None

    @property
    def write_stats_as_json(self) -> bool:
        return self._bool("delta.checkpoint.writeStatsAsJson", True)

    @property
    def write_stats_as_struct(self) -> bool:
        return self._bool("delta.checkpoint.writeStatsAsStruct", False)

    @property
    def materialized_row_id_column(self) -> str | None:
        return self.metadata.configuration.get("delta.rowTracking.materializedRowIdColumnName")

    @property
    def materialized_row_commit_version_column(self) -> str | None:
        return self.metadata.configuration.get("delta.rowTracking.materializedRowCommitVersionColumnName")

    @property
    def constraints(self) -> dict[str, str]:
        prefix = "delta.constraints."
        return {k[len(prefix) :]: v for k, v in self.metadata.configuration.items() if k.startswith(prefix)}
