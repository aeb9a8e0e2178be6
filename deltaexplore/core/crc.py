"""Version checksum files (`<v>.crc`): read when present, validated against replay, never required."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.actions import Metadata, Protocol
from deltaexplore.core.log_path import LogFile
from deltaexplore.errors import DeltaExploreError

if TYPE_CHECKING:
    from deltaexplore.core.snapshot import Snapshot

__all__ = ["read_crc", "validate_crc"]

REQUIRED = ("tableSizeBytes", "numFiles", "numMetadata", "numProtocol", "metadata", "protocol")


def read_crc(storage: Any, f: LogFile) -> dict[str, Any] | None:
    """The checksum file's JSON object, or None if it is missing or malformed."""
    try:
        obj = json.loads(storage.read_bytes(f.path))
    except (FileNotFoundError, ValueError, RecursionError, DeltaExploreError):
        return None
    return obj if isinstance(obj, dict) else None


def validate_crc(snapshot: Snapshot) -> pa.Table:
    """One row per field checked: field, expected (from .crc), actual (from replay), ok.

    Empty when the version has no (readable) checksum file.
    """
    crc = snapshot.crc
    rows: list[tuple[str, str, str, bool]] = []
    if crc is None:
        if snapshot.segment.crc is not None:
            rows.append(("file", "valid JSON object", "malformed", False))
        return _table(rows)
    for key in REQUIRED:
        if key not in crc:
            rows.append((key, "present", "missing", False))
    adds = snapshot.add_actions()
    if "numFiles" in crc:
        rows.append(("numFiles", str(crc["numFiles"]), str(adds.num_rows), int(crc["numFiles"]) == adds.num_rows))
    if "tableSizeBytes" in crc:
        actual = int(pc.sum(adds.column("size")).as_py() or 0) if adds.num_rows else 0
        rows.append(("tableSizeBytes", str(crc["tableSizeBytes"]), str(actual), int(crc["tableSizeBytes"]) == actual))
    if isinstance(crc.get("protocol"), dict):
        try:
            expected = Protocol.from_json(crc["protocol"])
            ok = (
                expected.min_reader_version,
                expected.min_writer_version,
                set(expected.reader_features or ()),
                set(expected.writer_features or ()),
            ) == (
                snapshot.protocol.min_reader_version,
                snapshot.protocol.min_writer_version,
                set(snapshot.protocol.reader_features or ()),
                set(snapshot.protocol.writer_features or ()),
            )
            rows.append(("protocol", json.dumps(expected.to_json()), json.dumps(snapshot.protocol.to_json()), ok))
        except DeltaExploreError as exc:
            rows.append(("protocol", "valid protocol", str(exc), False))
    if isinstance(crc.get("metadata"), dict) and snapshot.has_metadata:
        try:
            expected_md = Metadata.from_json(crc["metadata"])
            actual_md = snapshot.metadata
            ok = (expected_md.id, expected_md.schema_string, expected_md.partition_columns, expected_md.configuration) == (
                actual_md.id,
                actual_md.schema_string,
                actual_md.partition_columns,
                actual_md.configuration,
            )
            rows.append(("metadata", expected_md.id, actual_md.id, ok))
        except DeltaExploreError as exc:
            rows.append(("metadata", "valid metadata", str(exc), False))
    if "numDeletedRecordsOpt" in crc and adds.num_rows:
        dv = adds.column("deletionVector").combine_chunks()
        actual = int(pc.sum(dv.field("cardinality")).as_py() or 0) if dv.null_count < len(dv) else 0
        rows.append(
            ("numDeletedRecordsOpt", str(crc["numDeletedRecordsOpt"]), str(actual), int(crc["numDeletedRecordsOpt"]) == actual)
        )
    if "inCommitTimestampOpt" in crc and crc["inCommitTimestampOpt"] is not None:
        actual_ts = snapshot.timestamp_ms
        rows.append(
            (
                "inCommitTimestampOpt",
                str(crc["inCommitTimestampOpt"]),
                str(actual_ts),
                int(crc["inCommitTimestampOpt"]) == actual_ts,
            )
        )
    return _table(rows)


def _table(rows: list[tuple[str, str, str, bool]]) -> pa.Table:
    return pa.table(
        {
            "field": pa.array([r[0] for r in rows], pa.string()),
            "expected": pa.array([r[1] for r in rows], pa.string()),
            "actual": pa.array([r[2] for r in rows], pa.string()),
            "ok": pa.array([r[3] for r in rows], pa.bool_()),
        }
    )
