"""Data files written by Spark's own parquet writer (OPTIMIZE, Z-order, DV purge).

Rewrites of rows already in the table need no Python per row: Spark's parquet writer writes
them and the driver reads the new files' footers for the add actions. What the Python path
(`core.data_writer`) guarantees is kept:

- **Names and places**: each Spark job writes into its own new directory inside the table root,
  ``dx-<uuid>/`` (Spark's committer then never shares ``_temporary`` with another job), files
  are ``part-<task>-<job uuid>-c<n>.zstd.parquet`` (never overwritten) and add paths are
  relative to the root. Partition values come from the log (as under column mapping, the path
  says nothing about them). The directory is not hidden, so VACUUM collects what a failed
  commit leaves behind.
- **Columns**: data columns only (partition columns are in the log), physical names and parquet
  field ids under column mapping (``parquet.field.id`` field metadata,
  ``spark.sql.parquet.fieldId.write.enabled``), timestamps as INT64 microseconds (never INT96),
  no calendar rebasing, zstd level 1. These are writer options: the session's settings are untouched.
- **Nothing else is left**: no ``_SUCCESS`` marker, no checksum files (local files are written
  through Hadoop's raw local filesystem), ``_temporary`` is removed by Spark's job commit; a
  failed job's directory is deleted (best effort).
- **Stats** come from the footers (`core.data_writer.stats_from_parquet_file`: the table's
  stats columns, truncation rules, numRecords), read on the driver by a few threads.

Only rewrites use this path: rows are not re-checked against NOT NULL, invariants or CHECK
constraints (they were checked when written). Types Spark cannot write the way Delta stores
them (variant, geo types) make `supports_native` false and callers fall back to the Python path.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import pyarrow as pa

from deltaexplore.core.protocol.action_codec import file_actions_table
from deltaexplore.core.protocol.schema import DataType, PrimitiveType, StructField, any_leaf
from deltaexplore.core.snapshot import Snapshot
from deltaexplore.core.table import Table
from deltaexplore.core.write.data_writer import stats_from_parquet_file
from deltaexplore.errors import DeltaExploreError
from deltaexplore.spark.paths import spark_root
from deltaexplore.spark.session import is_connect, spark_errors
from deltaexplore.spark.types import SPARK_FIELD_ID, spark_type

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


__all__ = [
    "NativeFile",
    "Staging",
    "data_fields",
    "discard_staging",
    "native_adds",
    "physical_columns",
    "supports_native",
    "write_native",
    "write_session",
]

STAGING_PREFIX = "dx-"
_PART = re.compile(r"^part-(\d+)-.*\.parquet$")


def _native_type(t: DataType) -> bool:
    return not any_leaf(t, lambda p: p.name.startswith(("variant", "geometry", "geography")))


def supports_native(snapshot: Snapshot) -> bool:
    """Whether Spark's parquet writer can write this table's data files as Delta stores them."""
    return all(_native_type(f.type) for f in snapshot.schema.fields)


def data_fields(snapshot: Snapshot) -> list[StructField]:
    """The columns data files hold: no partition columns, no void columns (read back as null)."""
    parts = {p.lower() for p in snapshot.partition_columns}
    return [f for f in snapshot.schema.fields if f.name.lower() not in parts and f.type != PrimitiveType("void")]


def physical_columns(fields: Sequence[StructField], mode: str) -> list[Any]:
    """Spark columns turning logical columns `fields` into what a data file stores.

    Under column mapping: physical names (nested ones too, by a cast) with parquet field ids
    (in both modes, as `core.data_writer` does).
    """
    from pyspark.sql import functions as F

    out = []
    for f in fields:
        col = F.col(f"`{f.name.replace('`', '``')}`")
        if mode in ("name", "id"):
            target = spark_type(f.type, mode="id")  # physical nested names + field ids
            meta = {SPARK_FIELD_ID: f.field_id} if f.field_id is not None else {}
            out.append(col.cast(target).alias(f.physical_name, metadata=meta))
        else:
            out.append(col.cast(spark_type(f.type)).alias(f.name))
    return out


def write_session(spark: SparkSession) -> SparkSession:
    """A session sharing `spark`'s context and SQL settings, for writes that need other settings.

    Its unions keep one task per child (``spark.sql.unionOutputPartitioning=false``: a union
    of single-partition frames is otherwise read as one partition): OPTIMIZE writes one union
    whose task *i* is bin *i*. The caller's session is never reconfigured.
    """
    session = spark.newSession()
    for key, value in spark.conf.getAll.items():
        if key.startswith("spark.sql.") and spark.conf.isModifiable(key):
            session.conf.set(key, value)
    session.conf.set("spark.sql.unionOutputPartitioning", "false")
    return session


@dataclass(frozen=True)
class Staging:
    """A new directory of the table root one Spark job writes into."""

    rel: str  # relative to the table root
    location: str  # Hadoop URI

    @classmethod
    def new(cls, table: Table) -> Staging:
        rel = f"{STAGING_PREFIX}{uuid.uuid4().hex}"
        return cls(rel, f"{spark_root(table.storage)}/{rel}")


@dataclass(frozen=True)
class NativeFile:
    """One data file Spark wrote: path relative to the root (not URL-encoded), size, mtime,
    and the group it belongs to (the task's partition index, or the `partition_by` value)."""

    path: str
    size: int
    modification_time: int
    group: int


def writer_options(table: Table, *, max_records_per_file: int | None = None) -> dict[str, str]:
    """Options of `DataFrameWriter` for Delta data files (see the module docstring)."""
    options = {
        "compression": "zstd",
        "parquet.compression.codec.zstd.level": "1",  # Arrow's default, as the Python writer; ~1.8x faster than 3
        "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
        "spark.sql.parquet.fieldId.write.enabled": "true",
        "spark.sql.parquet.writeLegacyFormat": "false",
        "spark.sql.parquet.datetimeRebaseModeInWrite": "CORRECTED",
        "spark.sql.parquet.int96RebaseModeInWrite": "CORRECTED",
        "mapreduce.fileoutputcommitter.marksuccessfuljobs": "false",
        "parquet.enable.summary-metadata": "false",
    }
    if spark_root(table.storage).startswith("file:"):
        # Hadoop's LocalFileSystem writes a `.crc` file next to every file: write raw.
        options["fs.file.impl"] = "org.apache.hadoop.fs.RawLocalFileSystem"
        options["fs.file.impl.disable.cache"] = "true"
    if max_records_per_file:
        options["maxRecordsPerFile"] = str(int(max_records_per_file))
    return options


def discard_staging(spark: SparkSession, table: Table, staging: Staging) -> None:
    """Best effort: delete a staging directory and everything in it (a failed job or commit).
    Through Hadoop on a classic session; through the core's storage on Spark Connect (no JVM
    here) or when Hadoop fails."""
    if not is_connect(spark):
        try:
            jvm: Any = spark._jvm  # type: ignore[attr-defined]
            path = jvm.org.apache.hadoop.fs.Path(staging.location)
            path.getFileSystem(spark._jsc.hadoopConfiguration()).delete(path, True)  # type: ignore[attr-defined]
            return
        except Exception:  # noqa: BLE001 - best effort; fall back to the core's storage
            pass
    try:
        tree = table.storage.list_tree(staging.rel)
    except (FileNotFoundError, DeltaExploreError, OSError):
        return
    for path in tree.column("path").to_pylist():
        try:
            table.storage.delete(path)
        except (DeltaExploreError, OSError):
            pass


def _listed(table: Table, rel: str) -> list[Any]:
    try:
        return table.storage.list_dir(rel)
    except (FileNotFoundError, DeltaExploreError, OSError):
        return []


def write_native(
    spark: SparkSession,
    df: DataFrame,
    table: Table,
    *,
    partition_by: str | None = None,
    groups: Sequence[int] = (),
    max_records_per_file: int | None = None,
) -> tuple[Staging, list[NativeFile]]:
    """Write `df` (physical columns, see `physical_columns`) into a new staging directory.

    Without `partition_by` each task writes its own files and `NativeFile.group` is the task's
    partition index (from Spark's ``part-<index>-`` names). With `partition_by` (an integer
    column with the values `groups`) files go to ``<column>=<value>/`` and the group is the value.

    Raises:
        SparkError: the job failed (its directory is deleted).
    """
    staging = Staging.new(table)
    writer = df.write.mode("error").options(**writer_options(table, max_records_per_file=max_records_per_file))
    try:
        with spark_errors("writing data files with Spark's parquet writer", path=table.uri):
            if partition_by is not None:
                writer = writer.partitionBy(partition_by)
            writer.parquet(staging.location)
    except BaseException:
        discard_staging(spark, table, staging)
        raise
    dirs = [(staging.rel, None)] if partition_by is None else [(f"{staging.rel}/{partition_by}={g}", g) for g in groups]
    out: list[NativeFile] = []
    for rel, group in dirs:
        for f in _listed(table, rel):
            m = _PART.match(f.name)
            if m is None:
                table.storage.delete(f.path)  # a marker or checksum some committer left
                continue
            out.append(NativeFile(f.path, f.size, f.modification_time, int(m.group(1)) if group is None else group))
    return staging, out


def native_adds(
    snapshot: Snapshot,
    files: Sequence[NativeFile],
    partition_values: Sequence[Any],
    *,
    data_change: bool,
    threads: int = 8,
) -> pa.Table:
    """Add actions for files Spark wrote, stats from their footers (read by a few threads).

    Args:
        partition_values: per file, its partitionValues (pairs or a dict, physical keys).

    Files with no rows are deleted and get no action (the Python writer writes none).
    """
    md = snapshot.metadata
    storage = snapshot.storage

    def stats(f: NativeFile) -> str:
        text, _ = stats_from_parquet_file(
            storage,
            f.path,
            snapshot.schema,
            mode=snapshot.column_mapping_mode,
            partition_columns=md.partition_columns,
            configuration=md.configuration,
        )
        return text

    with ThreadPoolExecutor(max(1, min(threads, len(files)))) as pool:
        all_stats = list(pool.map(stats, files))
    rows = []
    for f, text, pv in zip(files, all_stats, partition_values):
        if json.loads(text).get("numRecords") == 0:
            storage.delete(f.path)
            continue
        rows.append(
            {
                "path": quote(f.path, safe="/="),
                "partitionValues": dict(pv or {}),
                "size": f.size,
                "modificationTime": f.modification_time,
                "dataChange": data_change,
                "stats": text,
            }
        )
    return file_actions_table("add", rows)
