"""The overview: the handful of numbers that describe a version, as one metrics table."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.log.crc_reader import StateTotals, crc_summary
from deltaexplore.core.protocol.features import features_of
from deltaexplore.errors import DeltaExploreError
from deltaexplore.inspect.file_columns import dv_cardinality, file_partitions
from deltaexplore.inspect.files import files as files_table
from deltaexplore.inspect.files import small_file_threshold
from deltaexplore.inspect.formatting import count_noun, human_bytes
from deltaexplore.inspect.log_health import metric, metrics_table
from deltaexplore.inspect.snapshots import snapshot_of

if TYPE_CHECKING:
    from deltaexplore.core.snapshot import Snapshot
    from deltaexplore.core.table import Table

__all__ = ["FileTotals", "overview"]


@dataclass(frozen=True)
class FileTotals:
    """What the overview's file metrics are made of, whichever engine counted them (the local
    file table here, `FileTotals.of_partitions` from any engine's partition aggregates).
    `rows` and `files_without_stats` are None when no statistics were read."""

    files: int
    bytes: int
    rows: int | None
    deleted_rows: int
    files_without_stats: int | None
    small_files: int
    dv_files: int
    partitions: int

    @classmethod
    def of_partitions(cls, partitions: pa.Table) -> FileTotals:
        """The totals of a `PARTITIONS_SCHEMA` table (or its `PARTITION_AGGREGATES`)."""

        def total(name: str) -> int:
            return int(pc.sum(partitions.column(name)).as_py() or 0) if partitions.num_rows else 0

        return cls(
            files=total("files"),
            bytes=total("bytes"),
            rows=total("rows"),
            deleted_rows=total("deleted_rows"),
            files_without_stats=total("files_without_stats"),
            small_files=total("small_files"),
            dv_files=total("dv_files"),
            partitions=partitions.num_rows,
        )


def _local_totals(snap: Snapshot, small_file_bytes: int | None, rows: bool) -> FileTotals:
    """The totals from `files()` (which parses every file's statistics for its row count), or
    with `rows=False` from the add actions alone."""
    if rows:
        f = files_table(snap, small_file_bytes=small_file_bytes)
        n = f.num_rows
        size, num_records, deleted = f.column("size"), f.column("num_records"), f.column("deleted_rows")
        has_stats, is_small, cardinality, partition = (
            f.column("has_stats"),
            f.column("is_small"),
            f.column("cardinality"),
            f.column("partition"),
        )
    else:
        adds = snap.add_actions()
        n = adds.num_rows
        size = adds.column("size")
        deleted = dv_cardinality(adds)
        num_records = has_stats = None
        is_small = pc.less(size, small_file_threshold(snap, small_file_bytes)) if n else pa.array([], pa.bool_())
        dv = adds.column("deletionVector").combine_chunks()
        cardinality = pc.struct_field(dv, "cardinality") if n else pa.array([], pa.int64())
        partition = file_partitions(snap)

    def total(values: Any) -> int:
        return int(pc.sum(values).as_py() or 0) if n else 0

    parts = snap.partition_columns
    return FileTotals(
        files=n,
        bytes=total(size),
        rows=total(num_records) if rows else None,
        deleted_rows=total(deleted),
        files_without_stats=total(pc.cast(pc.invert(has_stats), pa.int64())) if rows else None,
        small_files=total(pc.cast(is_small, pa.int64())),
        dv_files=total(pc.cast(pc.is_valid(cardinality), pa.int64())),
        partitions=len(pc.unique(pc.cast(partition, pa.string()))) if n and parts else (1 if n else 0),
    )


#: the file-derived metrics of the overview, in order: (section, metric, unit)
_FILE_METRICS = (
    ("size", "files", "files"),
    ("size", "bytes", "bytes"),
    ("size", "rows", "rows"),
    ("size", "deleted_rows", "rows"),
    ("size", "live_rows", "rows"),
    ("size", "files_without_stats", "files"),
    ("layout", "partition_columns", None),
    ("layout", "partitions", "partitions"),
    ("layout", "small_files", "files"),
    ("layout", "mean_file_bytes", "bytes"),
    ("layout", "dv_files", "files"),
    ("layout", "deleted_ratio", "ratio"),
)


def _file_metrics(out: list[dict[str, Any]], snap: Snapshot, t: FileTotals) -> None:
    """Append the file-derived metrics (`_FILE_METRICS`, in that order) to `out`."""
    n, size, deleted, small, dv_files = t.files, t.bytes, t.deleted_rows, t.small_files, t.dv_files
    records, no_stats = t.rows, t.files_without_stats
    out.append(metric("size", "files", n, unit="files"))
    out.append(metric("size", "bytes", size, unit="bytes", detail=human_bytes(size)))
    uncounted = "not counted: overview(rows=False) reads no statistics"
    out.append(
        metric(
            "size",
            "rows",
            records,
            number=None if records is None else float(records),
            unit="rows",
            status="info" if records is None else "warn" if no_stats else "ok",
            detail=uncounted
            if records is None
            else f"{count_noun(no_stats, 'file')} without statistics: their rows are not counted"
            if no_stats
            else "",
        )
    )
    out.append(metric("size", "deleted_rows", deleted, unit="rows", detail="soft-deleted by deletion vectors"))
    live = None if records is None else records - deleted
    out.append(
        metric(
            "size",
            "live_rows",
            live,
            unit="rows",
            status="info",
            detail=uncounted if live is None else "",
        )
    )
    out.append(
        metric(
            "size",
            "files_without_stats",
            no_stats,
            unit="files",
            status="info" if no_stats is None else "warn" if no_stats else "ok",
            detail=uncounted if no_stats is None else "",
        )
    )
    parts = snap.partition_columns
    out.append(metric("layout", "partition_columns", ", ".join(parts) or "none"))
    out.append(metric("layout", "partitions", t.partitions, unit="partitions"))
    out.append(
        metric(
            "layout",
            "small_files",
            small,
            unit="files",
            status="warn" if n and small > n / 2 and n > 10 else "ok",
            detail="run OPTIMIZE to compact small files" if n and small > n / 2 and n > 10 else "",
        )
    )
    out.append(
        metric("layout", "mean_file_bytes", size / n if n else None, unit="bytes", detail=human_bytes(size / n) if n else "")
    )
    out.append(metric("layout", "dv_files", dv_files, unit="files"))
    ratio = deleted / records if records else None
    out.append(
        metric(
            "layout",
            "deleted_ratio",
            None if ratio is None else round(ratio, 6),
            number=ratio,
            unit="ratio",
            status="info" if records is None else "warn" if ratio is not None and ratio > 0.2 else "ok",
            detail=uncounted
            if records is None
            else "rows soft-deleted: REORG/OPTIMIZE would rewrite them"
            if ratio and ratio > 0.2
            else "",
        )
    )


def _crc_numbers(snap: Snapshot) -> dict[tuple[str, str], tuple[Any, str]]:
    """The overview's file numbers the version's `.crc` records, with where they come from."""
    crc = snap.crc if snap.segment.crc is not None else None
    if crc is None:
        return {}
    summary = crc_summary(crc)
    source = f"from {snap.segment.crc.path} (recorded by the writer; checked once the log is replayed)"  # type: ignore[union-attr]
    out: dict[tuple[str, str], tuple[Any, str]] = {}
    for key, name in (
        ("num_files", ("size", "files")),
        ("table_bytes", ("size", "bytes")),
        ("deleted_records", ("size", "deleted_rows")),
        ("deletion_vectors", ("layout", "dv_files")),
    ):
        if summary[key] is not None:
            out[name] = (summary[key], source)
    if summary["num_files"] and summary["table_bytes"] is not None:
        out[("layout", "mean_file_bytes")] = (summary["table_bytes"] / summary["num_files"], source)
    return out


def _crc_check(snap: Snapshot, *, checked: bool, totals: FileTotals | None = None) -> dict[str, Any]:
    """The `crc` row: whether the version has a `.crc`, and (once the files are replayed, or
    counted by another engine: `totals`) whether the state agrees with it."""
    if snap.segment.crc is None:
        return metric("crc", "crc", "absent", status="info", detail="no .crc file for this version (optional)")
    if snap.crc is None:
        return metric("crc", "crc", "unreadable", status="error", detail=f"{snap.segment.crc.path} is not a JSON object")
    if not checked:
        return metric("crc", "crc", "present", status="info", detail="checked against the log once it is replayed")
    counted = None if totals is None else StateTotals(totals.files, totals.bytes, totals.deleted_rows, totals.dv_files)
    checks = snap.validate_crc(counted)
    bad = [r for r in checks.to_pylist() if not r["ok"]]
    if bad:
        detail = "; ".join(f"{r['field']}: .crc says {r['expected']}, the log gives {r['actual']}" for r in bad)
        return metric("crc", "crc", "mismatch", status="error", detail=detail)
    return metric("crc", "crc", "match", status="ok", detail=f"the replayed state agrees with {snap.segment.crc.path}")


def overview(
    obj: Table | Snapshot,
    *,
    version: int | None = None,
    small_file_bytes: int | None = None,
    rows: bool = True,
    files: bool = True,
    totals: FileTotals | None = None,
) -> pa.Table:
    """Key facts of a version as `METRICS_SCHEMA` rows (sections table, size, layout, protocol).

    - `table`: uri, version, timestamp, name, description, table_id, created
    - `size`: files, bytes, rows (files with stats), deleted_rows, live_rows, files_without_stats
    - `layout`: partition_columns, partitions, small_files (status warn over half the files),
      mean_file_bytes, dv_files, deleted_ratio
    - `protocol`: reader_version, writer_version, reader_features, writer_features,
      column_mapping
    - `crc`: crc (absent | present | match | mismatch | unreadable: the version's `.crc`
      against the replayed state)

    `rows=False` leaves out what needs every file's statistics (rows, live_rows,
    files_without_stats and deleted_ratio: null, status info); `files=False` also what needs
    the file actions (every `size` and `layout` number but partition_columns, except files,
    bytes, deleted_rows, dv_files and mean_file_bytes when the version's `.crc` records them:
    their detail says so): views that cost the replay alone, and the log's metadata alone (the
    explorer shows them first). `totals` are the file totals another engine counted
    (`deltaexplore.spark.inspect`, the streaming pass of `inspect.streaming`): the metrics are
    then made of them, nothing is replayed here (the `.crc` checked against them).
    """
    snap = snapshot_of(obj, version)
    out: list[dict[str, Any]] = []
    md = snap.metadata_or_none
    out.append(metric("table", "uri", snap.table.uri))
    out.append(metric("table", "version", snap.version, unit="version"))
    out.append(
        metric(
            "table",
            "timestamp",
            snap.timestamp.isoformat(timespec="milliseconds"),
            number=float(snap.timestamp_ms),
            unit="timestamp",
        )
    )
    if md is not None:
        out.append(metric("table", "name", md.name))
        out.append(metric("table", "description", md.description))
        out.append(metric("table", "table_id", md.id))
    parts = snap.partition_columns
    if not files:
        # the snapshot's log alone (no file action replayed): every file-derived number is null,
        # but what the version's .crc records (one small read) is shown at once
        unread = "not counted: overview(files=False) reads no file actions"
        recorded = _crc_numbers(snap)
        for section, name, unit in _FILE_METRICS:
            if (section, name) == ("layout", "partition_columns"):
                out.append(metric("layout", "partition_columns", ", ".join(parts) or "none"))
            elif (section, name) in recorded:
                value, detail = recorded[(section, name)]
                out.append(metric(section, name, value, unit=unit, status="info", detail=detail))
            else:
                out.append(metric(section, name, None, unit=unit, status="info", detail=unread))
    else:
        _file_metrics(out, snap, totals if totals is not None else _local_totals(snap, small_file_bytes, rows))
    out.append(_crc_check(snap, checked=files, totals=totals))
    p = snap.protocol
    readers, writers = features_of(p)
    out.append(metric("protocol", "reader_version", p.min_reader_version))
    out.append(metric("protocol", "writer_version", p.min_writer_version))
    out.append(metric("protocol", "reader_features", ", ".join(readers) or "none"))
    out.append(metric("protocol", "writer_features", ", ".join(writers) or "none"))
    try:
        mode = snap.column_mapping_mode
    except DeltaExploreError:
        mode = "unknown"
    out.append(metric("protocol", "column_mapping", mode))
    return metrics_table(out, "overview")
