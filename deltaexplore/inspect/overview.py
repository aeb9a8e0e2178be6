"""The overview: the handful of numbers that describe a version, as one metrics table."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.protocol.features import features_of
from deltaexplore.errors import DeltaExploreError
from deltaexplore.inspect._common import snapshot_of
from deltaexplore.inspect.files import files as files_table
from deltaexplore.inspect.formatting import human_bytes
from deltaexplore.inspect.log_health import metric, metrics_table

if TYPE_CHECKING:
    from deltaexplore.core.snapshot import Snapshot
    from deltaexplore.core.table import Table

__all__ = ["overview"]


def overview(obj: Table | Snapshot, *, version: int | None = None, small_file_bytes: int | None = None) -> pa.Table:
    """Key facts of a version as `METRICS_SCHEMA` rows (sections table, size, layout, protocol).

    - `table`: uri, version, timestamp, name, description, table_id, created
    - `size`: files, bytes, rows (files with stats), deleted_rows, live_rows, files_without_stats
    - `layout`: partition_columns, partitions, small_files (status warn over half the files),
      mean_file_bytes, dv_files, deleted_ratio
    - `protocol`: reader_version, writer_version, reader_features, writer_features,
      column_mapping
    """
    snap = snapshot_of(obj, version)
    rows: list[dict[str, Any]] = []
    md = snap.metadata_or_none
    rows.append(metric("table", "uri", snap.table.uri))
    rows.append(metric("table", "version", snap.version, unit="version"))
    rows.append(
        metric(
            "table",
            "timestamp",
            snap.timestamp.isoformat(timespec="milliseconds"),
            number=float(snap.timestamp_ms),
            unit="timestamp",
        )
    )
    if md is not None:
        rows.append(metric("table", "name", md.name))
        rows.append(metric("table", "description", md.description))
        rows.append(metric("table", "table_id", md.id))
    f = files_table(snap, small_file_bytes=small_file_bytes)
    n = f.num_rows
    size = int(pc.sum(f.column("size")).as_py() or 0) if n else 0
    records = int(pc.sum(f.column("num_records")).as_py() or 0) if n else 0
    deleted = int(pc.sum(f.column("deleted_rows")).as_py() or 0) if n else 0
    no_stats = int(pc.sum(pc.invert(f.column("has_stats").combine_chunks()).cast(pa.int64())).as_py() or 0) if n else 0
    small = int(pc.sum(f.column("is_small").combine_chunks().cast(pa.int64())).as_py() or 0) if n else 0
    dv_files = int(pc.sum(pc.is_valid(f.column("cardinality").combine_chunks()).cast(pa.int64())).as_py() or 0) if n else 0
    rows.append(metric("size", "files", n, unit="files"))
    rows.append(metric("size", "bytes", size, unit="bytes", detail=human_bytes(size)))
    rows.append(
        metric(
            "size",
            "rows",
            records,
            unit="rows",
            status="warn" if no_stats else "ok",
            detail=f"{no_stats} files have no statistics: their rows are not counted" if no_stats else "",
        )
    )
    rows.append(metric("size", "deleted_rows", deleted, unit="rows", detail="soft-deleted by deletion vectors"))
    rows.append(metric("size", "live_rows", records - deleted, unit="rows"))
    rows.append(metric("size", "files_without_stats", no_stats, unit="files", status="warn" if no_stats else "ok"))
    parts = snap.partition_columns
    rows.append(metric("layout", "partition_columns", ", ".join(parts) or "none"))
    n_parts = len(pc.unique(f.column("partition").combine_chunks())) if n and parts else (1 if n else 0)
    rows.append(metric("layout", "partitions", n_parts, unit="partitions"))
    rows.append(
        metric(
            "layout",
            "small_files",
            small,
            unit="files",
            status="warn" if n and small > n / 2 and n > 10 else "ok",
            detail="run OPTIMIZE to compact small files" if n and small > n / 2 and n > 10 else "",
        )
    )
    rows.append(
        metric("layout", "mean_file_bytes", size / n if n else None, unit="bytes", detail=human_bytes(size / n) if n else "")
    )
    rows.append(metric("layout", "dv_files", dv_files, unit="files"))
    ratio = deleted / records if records else None
    rows.append(
        metric(
            "layout",
            "deleted_ratio",
            None if ratio is None else round(ratio, 6),
            number=ratio,
            unit="ratio",
            status="warn" if ratio is not None and ratio > 0.2 else "ok",
            detail="rows soft-deleted: REORG/OPTIMIZE would rewrite them" if ratio and ratio > 0.2 else "",
        )
    )
    p = snap.protocol
    readers, writers = features_of(p)
    rows.append(metric("protocol", "reader_version", p.min_reader_version))
    rows.append(metric("protocol", "writer_version", p.min_writer_version))
    rows.append(metric("protocol", "reader_features", ", ".join(readers) or "none"))
    rows.append(metric("protocol", "writer_features", ", ".join(writers) or "none"))
    try:
        mode = snap.column_mapping_mode
    except DeltaExploreError:
        mode = "unknown"
    rows.append(metric("protocol", "column_mapping", mode))
    return metrics_table(rows, "overview")
