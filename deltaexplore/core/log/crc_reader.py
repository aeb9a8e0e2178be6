"""Reading version checksum files (`<v>.crc`): read when present, compared with the replayed
state, never required (`write.crc_writer` writes them)."""

from __future__ import annotations

import json
from typing import Any, NamedTuple

import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.log.file_names import LogFile
from deltaexplore.core.log.timestamps import CommitClock
from deltaexplore.core.protocol.actions import Metadata, Protocol
from deltaexplore.errors import DeltaExploreError

__all__ = ["StateTotals", "compare_crc", "read_crc"]

REQUIRED = ("tableSizeBytes", "numFiles", "numMetadata", "numProtocol", "metadata", "protocol")


def read_crc(storage: Any, f: LogFile) -> dict[str, Any] | None:
    """The checksum file's JSON object, or None if it is missing or malformed."""
    try:
        obj = json.loads(storage.read_bytes(f.path))
    except (FileNotFoundError, ValueError, RecursionError, DeltaExploreError):
        return None
    return obj if isinstance(obj, dict) else None


class StateTotals(NamedTuple):
    """What a `.crc` says of the active files, counted by whoever replayed them: files, bytes
    and rows deleted by deletion vectors."""

    files: int
    bytes: int
    deleted_records: int

    @classmethod
    def of(cls, adds: pa.Table) -> StateTotals:
        """The totals of some add actions."""
        n = adds.num_rows
        if n == 0:
            return cls(0, 0, 0)
        dv = adds.column("deletionVector").combine_chunks()
        deleted = int(pc.sum(dv.field("cardinality")).as_py() or 0) if dv.null_count < len(dv) else 0
        return cls(n, int(pc.sum(adds.column("size")).as_py() or 0), deleted)


def compare_crc(
    crc: dict[str, Any] | None,
    *,
    present: bool,
    protocol: Protocol,
    metadata: Metadata | None,
    adds: pa.Table | StateTotals | None,
    clock: CommitClock,
    version: int,
) -> pa.Table:
    """One row per field checked: field, expected (from the .crc file), actual (from the replayed
    state: `protocol`, `metadata`, the active `adds` or their `StateTotals`, the commit time of
    `version`), ok. `adds` may be None only when `crc` is.

    Empty when the version has no checksum file (`present` false); one failing row when it is
    not a JSON object.
    """
    rows: list[tuple[str, str, str, bool]] = []
    if crc is None:
        if present:
            rows.append(("file", "valid JSON object", "malformed", False))
        return _table(rows)
    assert adds is not None
    totals = adds if isinstance(adds, StateTotals) else StateTotals.of(adds)
    for key in REQUIRED:
        if key not in crc:
            rows.append((key, "present", "missing", False))
    if "numFiles" in crc:
        rows.append(("numFiles", str(crc["numFiles"]), str(totals.files), int(crc["numFiles"]) == totals.files))
    if "tableSizeBytes" in crc:
        actual = totals.bytes
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
                protocol.min_reader_version,
                protocol.min_writer_version,
                set(protocol.reader_features or ()),
                set(protocol.writer_features or ()),
            )
            rows.append(("protocol", json.dumps(expected.to_json()), json.dumps(protocol.to_json()), ok))
        except DeltaExploreError as exc:
            rows.append(("protocol", "valid protocol", str(exc), False))
    if isinstance(crc.get("metadata"), dict) and metadata is not None:
        try:
            expected_md = Metadata.from_json(crc["metadata"])
            actual_md = metadata
            ok = (expected_md.id, expected_md.schema_string, expected_md.partition_columns, expected_md.configuration) == (
                actual_md.id,
                actual_md.schema_string,
                actual_md.partition_columns,
                actual_md.configuration,
            )
            rows.append(("metadata", expected_md.id, actual_md.id, ok))
        except DeltaExploreError as exc:
            rows.append(("metadata", "valid metadata", str(exc), False))
    if "numDeletedRecordsOpt" in crc and totals.files:
        actual = totals.deleted_records
        rows.append(
            ("numDeletedRecordsOpt", str(crc["numDeletedRecordsOpt"]), str(actual), int(crc["numDeletedRecordsOpt"]) == actual)
        )
    if "inCommitTimestampOpt" in crc and crc["inCommitTimestampOpt"] is not None:
        actual_ts = clock.timestamp(version)
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
