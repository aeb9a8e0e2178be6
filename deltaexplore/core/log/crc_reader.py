"""Reading version checksum files (`<v>.crc`): read when present, summarized (`crc_summary`:
what the writer recorded of the state, at the cost of one small read, before any replay),
compared with the replayed state (`compare_crc`), never required (`write.crc_writer` writes
them)."""

from __future__ import annotations

import json
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.log.file_names import LogFile
from deltaexplore.core.log.timestamps import CommitClock
from deltaexplore.core.protocol.actions import Metadata, Protocol
from deltaexplore.errors import DeltaExploreError

__all__ = [
    "DELETED_RECORD_BINS",
    "StateTotals",
    "compare_crc",
    "crc_size_bounds",
    "crc_summary",
    "deleted_records_histogram",
    "file_size_histogram",
    "read_crc",
]

REQUIRED = ("tableSizeBytes", "numFiles", "numMetadata", "numProtocol", "metadata", "protocol")
#: lower bounds of the spec's ten deleted-record-count bins ([0], [1, 9], [10, 99], ...)
DELETED_RECORD_BINS = (0, 1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000, 2_147_483_647)


def _int(value: Any) -> int | None:
    try:
        return None if value is None or isinstance(value, bool) else int(value)
    except (TypeError, ValueError):
        return None


def _ints(value: Any) -> list[int] | None:
    if not isinstance(value, list):
        return None
    out = [_int(v) for v in value]
    return None if any(v is None for v in out) else out  # type: ignore[return-value]


def crc_summary(crc: dict[str, Any]) -> dict[str, Any]:
    """What a `.crc` records of its version's state (None where it records nothing):
    num_files, table_bytes, deleted_records, deletion_vectors, txns, domains,
    in_commit_timestamp, file_size_histogram (non-empty bins as (lowest size, highest size
    or None, files, bytes)) and deleted_records_histogram (non-empty bins as (fewest, most or
    None, files))."""
    out: dict[str, Any] = {
        "num_files": _int(crc.get("numFiles")),
        "table_bytes": _int(crc.get("tableSizeBytes")),
        "deleted_records": _int(crc.get("numDeletedRecordsOpt")),
        "deletion_vectors": _int(crc.get("numDeletionVectorsOpt")),
        "txns": len(crc["setTransactions"]) if isinstance(crc.get("setTransactions"), list) else None,
        "domains": len(crc["domainMetadata"]) if isinstance(crc.get("domainMetadata"), list) else None,
        "in_commit_timestamp": _int(crc.get("inCommitTimestampOpt")),
        "file_size_histogram": None,
        "deleted_records_histogram": None,
    }
    hist = crc.get("fileSizeHistogram") or crc.get("histogramOpt")
    if isinstance(hist, dict):
        bounds, counts, sizes = (
            _ints(hist.get("sortedBinBoundaries")),
            _ints(hist.get("fileCounts")),
            _ints(hist.get("totalBytes")),
        )
        if bounds and counts and sizes and len(bounds) == len(counts) == len(sizes):
            out["file_size_histogram"] = [
                (bounds[i], bounds[i + 1] - 1 if i + 1 < len(bounds) else None, counts[i], sizes[i])
                for i in range(len(bounds))
                if counts[i]
            ]
    deleted = crc.get("deletedRecordCountsHistogramOpt")
    counts = _ints(deleted.get("deletedRecordCounts")) if isinstance(deleted, dict) else None
    if counts and len(counts) == len(DELETED_RECORD_BINS):
        ends = [b - 1 for b in DELETED_RECORD_BINS[1:]] + [None]
        out["deleted_records_histogram"] = [(DELETED_RECORD_BINS[i], ends[i], counts[i]) for i in range(len(counts)) if counts[i]]
    return out


def file_size_histogram(sizes: np.ndarray, boundaries: list[int]) -> tuple[list[int], list[int]]:
    """(files, bytes) per bin of `boundaries` (each bin from its boundary to the next)."""
    bins = np.searchsorted(np.asarray(boundaries, dtype=np.int64), sizes, side="right") - 1
    counts = np.bincount(bins[bins >= 0], minlength=len(boundaries))
    totals = np.bincount(bins[bins >= 0], weights=sizes[bins >= 0], minlength=len(boundaries))
    return counts.astype(np.int64).tolist(), totals.astype(np.int64).tolist()


def deleted_records_histogram(cardinalities: np.ndarray) -> list[int]:
    """Files per deleted-record-count bin of the spec (a file without a DV deletes none)."""
    bins = np.searchsorted(np.asarray(DELETED_RECORD_BINS, dtype=np.int64), cardinalities, side="right") - 1
    return np.bincount(bins, minlength=len(DELETED_RECORD_BINS)).astype(np.int64).tolist()


def read_crc(storage: Any, f: LogFile) -> dict[str, Any] | None:
    """The checksum file's JSON object, or None if it is missing or malformed."""
    try:
        obj = json.loads(storage.read_bytes(f.path))
    except (FileNotFoundError, ValueError, RecursionError, DeltaExploreError):
        return None
    return obj if isinstance(obj, dict) else None


def crc_size_bounds(crc: dict[str, Any] | None) -> tuple[int, ...]:
    """The lower bounds of the file-size histogram's bins a `.crc` records (empty if none)."""
    hist = (crc.get("fileSizeHistogram") or crc.get("histogramOpt")) if crc else None
    bounds = _ints(hist.get("sortedBinBoundaries")) if isinstance(hist, dict) else None
    return tuple(bounds or ())


class StateTotals(NamedTuple):
    """What a `.crc` says of the active files, counted by whoever replayed them (in one piece or
    batch by batch, summed with `plus`): files, bytes, rows deleted by deletion vectors, files
    with one, files per deleted-record bin of the spec and, for `size_bounds`, files and bytes
    per file-size bin (a histogram not counted is left unchecked by `compare_crc`)."""

    files: int
    bytes: int
    deleted_records: int
    deletion_vectors: int = 0
    deleted_records_histogram: tuple[int, ...] = ()  # () when not counted
    size_bounds: tuple[int, ...] = ()
    size_counts: tuple[int, ...] = ()
    size_bytes: tuple[int, ...] = ()

    @classmethod
    def of(cls, adds: pa.Table, size_bounds: tuple[int, ...] = ()) -> StateTotals:
        """The totals of some add actions (`adds` needs `size` and `deletionVector`)."""
        n = adds.num_rows
        sizes = np.asarray(adds.column("size").to_numpy(), dtype=np.int64) if n else np.zeros(0, np.int64)
        if n:
            dv = adds.column("deletionVector").combine_chunks()
            has_dv = np.asarray(dv.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
            cards = np.asarray(pc.fill_null(pc.struct_field(dv, "cardinality"), 0).to_numpy(zero_copy_only=False), dtype=np.int64)
            cards = np.where(has_dv, cards, 0)
        else:
            cards = np.zeros(0, np.int64)
        counts, totals = file_size_histogram(sizes, list(size_bounds)) if size_bounds else ([], [])
        return cls(
            n,
            int(sizes.sum()),
            int(cards.sum()),
            int((cards > 0).sum()),
            tuple(deleted_records_histogram(cards)),
            tuple(size_bounds),
            tuple(counts),
            tuple(totals),
        )

    def plus(self, other: StateTotals) -> StateTotals:
        """The totals of both sets of files (counted with the same `size_bounds`)."""

        def add(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
            return tuple(x + y for x, y in zip(a, b, strict=True)) if a and b else a or b

        return StateTotals(
            self.files + other.files,
            self.bytes + other.bytes,
            self.deleted_records + other.deleted_records,
            self.deletion_vectors + other.deletion_vectors,
            add(self.deleted_records_histogram, other.deleted_records_histogram),
            self.size_bounds or other.size_bounds,
            add(self.size_counts, other.size_counts),
            add(self.size_bytes, other.size_bytes),
        )


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
    totals = adds if isinstance(adds, StateTotals) else StateTotals.of(adds, crc_size_bounds(crc))
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
    if _int(crc.get("numDeletedRecordsOpt")) is not None:
        actual = totals.deleted_records
        rows.append(
            ("numDeletedRecordsOpt", str(crc["numDeletedRecordsOpt"]), str(actual), int(crc["numDeletedRecordsOpt"]) == actual)
        )
    if _int(crc.get("numDeletionVectorsOpt")) is not None:
        actual = totals.deletion_vectors
        rows.append(
            ("numDeletionVectorsOpt", str(crc["numDeletionVectorsOpt"]), str(actual), int(crc["numDeletionVectorsOpt"]) == actual)
        )
    hist = crc.get("fileSizeHistogram") or crc.get("histogramOpt")
    bounds = list(crc_size_bounds(crc))
    if bounds and totals.size_bounds == tuple(bounds):
        counts, sizes = list(totals.size_counts), list(totals.size_bytes)
        want_counts, want_totals = _ints(hist.get("fileCounts")), _ints(hist.get("totalBytes"))  # type: ignore[union-attr]
        rows.append(
            (
                "fileSizeHistogram",
                _bins(bounds, want_counts, want_totals),
                _bins(bounds, counts, sizes),
                (want_counts, want_totals) == (counts, sizes),
            )
        )
    deleted_hist = crc.get("deletedRecordCountsHistogramOpt")
    if isinstance(deleted_hist, dict) and totals.deleted_records_histogram:
        expected_counts = _ints(deleted_hist.get("deletedRecordCounts"))
        actual_counts = list(totals.deleted_records_histogram)
        rows.append(
            (
                "deletedRecordCountsHistogramOpt",
                json.dumps(expected_counts),
                json.dumps(actual_counts),
                expected_counts == actual_counts,
            )
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


def _bins(bounds: list[int], counts: list[int] | None, totals: list[int] | None) -> str:
    """The non-empty bins of a size histogram, as text: `[lo, next)`: files / bytes."""
    if counts is None or totals is None or len(counts) != len(bounds) or len(totals) != len(bounds):
        return "malformed"
    shown = [
        f"[{bounds[i]}, {bounds[i + 1] if i + 1 < len(bounds) else 'inf'}): {counts[i]} / {totals[i]} B"
        for i in range(len(bounds))
        if counts[i] or totals[i]
    ]
    return "; ".join(shown) or "empty"


def _table(rows: list[tuple[str, str, str, bool]]) -> pa.Table:
    return pa.table(
        {
            "field": pa.array([r[0] for r in rows], pa.string()),
            "expected": pa.array([r[1] for r in rows], pa.string()),
            "actual": pa.array([r[2] for r in rows], pa.string()),
            "ok": pa.array([r[3] for r in rows], pa.bool_()),
        }
    )
