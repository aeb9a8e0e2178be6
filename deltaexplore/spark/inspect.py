"""Inspection on Spark: the file tables of a version computed as Spark jobs on the user's session.

The log segment is read by Spark: the checkpoint's parts and sidecars (parquet, or a V2 JSON
checkpoint) and the JSON commits after it, only the file-action fields the tables need; the
newest action per (path, DV unique id) wins by a window (`row_number` over the key, newest
version first; a checkpoint is older than every commit after it), and an add that wins is an
active file. Per-file columns are the local ones (`partition` as `partition_keys` writes it,
numRecords from the stats, deleted rows, small files), aggregated per partition and per size
bin by Spark; only the aggregates, the files with a deletion vector and (when asked) the file
list or the replayed statistics (for the layout summary's per-file bounds) reach the driver,
where the local shaping functions (`finish_partitions`, `finish_file_sizes`, `overview(totals=)`,
`dv_table`, `layout_columns_bounds` + `summarize_layout`) make the tables: `SparkFilePass` answers
what `inspect.streaming.FilePass` answers, with equal results (tested on the corpus, classic
session and Spark Connect). Each job reports its progress like other Spark work
(`spark.jobs.progress`; to a callback when given one, as the explorer does).

    >>> from deltaexplore.spark.inspect import spark_file_pass
    >>> fp = spark_file_pass(spark, table)          # a Spark job per table asked for
    >>> fp.partitions(), fp.file_sizes(), fp.overview(), fp.deletion_vectors(), fp.layout_summary()
    >>> fp.active_files().where("size < 1000000").count()    # the file listing, a DataFrame
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from functools import cached_property
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.files import translate_map_keys
from deltaexplore.core.scan.partition_values import HIVE_NULL, physical_partition_names
from deltaexplore.inspect.deletion_vectors import DEFAULT_PURGE_THRESHOLD, dv_files_of, dv_table
from deltaexplore.inspect.file_sizes import SIZE_AGGREGATES, finish_file_sizes
from deltaexplore.inspect.files import PARTITION_AGGREGATES, finish_partitions, small_file_threshold
from deltaexplore.inspect.layout import layout_columns_bounds, summarize_layout
from deltaexplore.inspect.overview import FileTotals
from deltaexplore.inspect.overview import overview as overview_table
from deltaexplore.inspect.schemas import PARTITIONS_SCHEMA
from deltaexplore.inspect.snapshots import snapshot_of
from deltaexplore.inspect.streaming import FILE_LIST_COLUMNS, LAYOUT_FILE_COLUMNS, ColumnLayouts, FilePass, merged_bounds
from deltaexplore.spark.jobs import ProgressCallback, report_progress_to
from deltaexplore.spark.jobs import progress as spark_progress
from deltaexplore.spark.paths import spark_location
from deltaexplore.spark.session import spark_errors

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

    from deltaexplore.core.snapshot import Snapshot
    from deltaexplore.core.table import Table

__all__ = ["SparkFilePass", "spark_file_pass"]

_DV_SQL = "struct<storageType:string,pathOrInlineDv:string,offset:int,sizeInBytes:int,cardinality:bigint>"
_ADD_SQL = (
    "struct<path:string,partitionValues:map<string,string>,size:bigint,modificationTime:bigint,stats:string,"
    f"deletionVector:{_DV_SQL}>"
)
_REMOVE_SQL = f"struct<path:string,size:bigint,deletionTimestamp:bigint,deletionVector:{_DV_SQL}>"
_JSON_SCHEMA = f"add {_ADD_SQL}, remove {_REMOVE_SQL}"
#: files whose statistics are parsed at once on the driver (`SparkFilePass.layout_summary`)
_BOUNDS_BATCH = 100_000
_STATS_JSON = {
    "timestampFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX",
    "timestampNTZFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSS",
    "timeZone": "UTC",
}


def _field_types(spark_type: Any) -> dict[str, Any]:
    return {f.name: f.dataType for f in spark_type.fields}


def _dv(kind: str, present: dict[str, Any]) -> Column:
    """The action's deletion vector as `_DV_SQL` (fields a writer added, maxRowIndex, dropped)."""
    from pyspark.sql import functions as F

    if "deletionVector" not in present:
        return F.lit(None).cast(_DV_SQL)
    has = _field_types(present["deletionVector"])
    col = F.col(f"{kind}.deletionVector")
    parts = [
        (col[name].cast(sql) if name in has else F.lit(None).cast(sql)).alias(name)
        for name, sql in (
            ("storageType", "string"),
            ("pathOrInlineDv", "string"),
            ("offset", "int"),
            ("sizeInBytes", "int"),
            ("cardinality", "bigint"),
        )
    ]
    return F.when(col.isNotNull(), F.struct(*parts))


def _actions(df: DataFrame, order: Column, *, parquet: bool) -> DataFrame:
    """One row per file action of `df` (columns `add`, `remove` as in the log): kind, the
    fields the tables need (null where the action has none), the replay key and its order."""
    from pyspark.sql import functions as F

    types = {f.name: f.dataType for f in df.schema.fields}
    pieces = []
    for kind in ("add", "remove"):
        if kind not in types:
            continue
        present = _field_types(types[kind])

        def field(name: str, sql: str, kind: str = kind, present: dict[str, Any] = present) -> Column:
            return F.col(f"{kind}.{name}").cast(sql) if name in present else F.lit(None).cast(sql)

        records = F.lit(None).cast("bigint")
        stats = field("stats", "string")
        if parquet and kind == "add" and "stats_parsed" in present:
            parsed = _field_types(present["stats_parsed"])
            if "numRecords" in parsed:
                records = F.col("add.stats_parsed.numRecords").cast("bigint")
            # a checkpoint with only the struct: its JSON text, timestamps as writers write them
            stats = F.coalesce(stats, F.to_json(F.col("add.stats_parsed"), _STATS_JSON))
        pieces.append(
            df.where(F.col(kind).isNotNull() & F.col(f"{kind}.path").isNotNull()).select(
                F.lit(kind).alias("kind"),
                F.col(f"{kind}.path").alias("path"),
                field("partitionValues", "map<string,string>").alias("partitionValues"),
                field("size", "bigint").alias("size"),
                field("modificationTime", "bigint").alias("modificationTime"),
                stats.alias("stats"),
                records.alias("parsed_records"),
                field("deletionTimestamp", "bigint").alias("deletionTimestamp"),
                _dv(kind, present).alias("deletionVector"),
                order.alias("_order"),
            )
        )
    if not pieces:
        return None  # type: ignore[return-value]
    out = pieces[0]
    for p in pieces[1:]:
        out = out.unionByName(p)
    return out


class SparkFilePass(ColumnLayouts):
    """The file tables of one version computed on Spark (see the module docstring). Each
    table is one Spark job (the replayed active files are cached by Spark between them).
    `layout(column)`, `layout_density(column)` and `file_positions(column)` collect the
    files' statistics once per column (as `layout_summary` does) beside their path, partition,
    size and records, and sweep them on the driver (`ColumnLayouts`)."""

    def __init__(
        self,
        spark: SparkSession,
        snap: Snapshot,
        *,
        small_file_bytes: int | None = None,
        progress: ProgressCallback | None = None,
    ) -> None:
        self.spark = spark
        self.snapshot = snap
        self.small_file_bytes = small_file_bytes
        self.progress = progress

    # -- the log, replayed by Spark ------------------------------------------------------------
    def _log_actions(self) -> DataFrame:
        """Every file action of the segment with its replay order (checkpoint -1, commits their
        version)."""
        from pyspark.sql import functions as F

        snap, spark = self.snapshot, self.spark
        storage = snap.storage
        frames = []
        reader = snap.checkpoint_reader
        if reader is not None:
            parquet = [] if reader.is_json else [p.path for p in reader.checkpoint.parts]
            parquet += [s.path for s in reader.sidecar_files()]
            for path in parquet:
                df = spark.read.parquet(spark_location(storage, path))
                actions = _actions(df, F.lit(-1).cast("bigint"), parquet=True)
                if actions is not None:
                    frames.append(actions)
            if reader.is_json:
                df = spark.read.schema(_JSON_SCHEMA).json(spark_location(storage, reader.checkpoint.parts[0].path))
                frames.append(_actions(df, F.lit(-1).cast("bigint"), parquet=False))
        commits = list(snap.segment.json_files)
        if commits:
            df = spark.read.schema(_JSON_SCHEMA).json([spark_location(storage, f.path) for f in commits])
            version = F.regexp_extract(F.col("_metadata.file_path"), r"(\d+)\.json$", 1).cast("bigint")
            frames.append(_actions(df, version, parquet=False))
        if not frames:
            return spark.createDataFrame([], f"kind string, path string, _order bigint, deletionVector {_DV_SQL}")
        out = frames[0]
        for f in frames[1:]:
            out = out.unionByName(f)
        return out

    def _replayed(self, kind: str) -> DataFrame:
        """The `kind` actions that are the newest of their (path, DV unique id)."""
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        dv = F.col("deletionVector")
        dv_id = F.when(
            dv.isNotNull(),
            F.concat(
                F.coalesce(dv.storageType, F.lit("")),
                F.coalesce(dv.pathOrInlineDv, F.lit("")),
                F.when(dv.offset.isNotNull(), F.concat(F.lit("@"), dv.offset.cast("string"))).otherwise(F.lit("")),
            ),
        )
        newest = Window.partitionBy("path", "_dv_id").orderBy(F.col("_order").desc())
        ranked = self._log_actions().withColumn("_dv_id", dv_id).withColumn("_rank", F.row_number().over(newest))
        return ranked.where((F.col("_rank") == 1) & (F.col("kind") == kind)).drop("_rank", "_dv_id", "kind")

    @cached_property
    def _files(self) -> DataFrame:
        """The active files with the per-file columns of `inspect.files()` the tables use."""
        from pyspark.sql import functions as F

        snap = self.snapshot
        adds = self._replayed("add")
        threshold = small_file_threshold(snap, self.small_file_bytes)
        physical = physical_partition_names(snap)
        pairs = []
        for name in snap.partition_columns:
            key = physical.get(name, name)
            value = F.col("partitionValues")[key]
            if key != name:
                value = F.coalesce(value, F.col("partitionValues")[name])
            value = F.when(value.isNull() | (value == ""), F.lit(HIVE_NULL)).otherwise(value)
            pairs.append(F.concat(F.lit(f"{name}="), value))
        partition = F.concat_ws("/", *pairs) if pairs else F.lit("")
        records = F.coalesce(F.expr("try_cast(get_json_object(stats, '$.numRecords') as bigint)"), F.col("parsed_records"))
        cardinality = F.col("deletionVector.cardinality")
        deleted = F.when(F.col("deletionVector").isNotNull(), F.coalesce(cardinality, F.lit(0))).otherwise(F.lit(0))
        return (
            adds.withColumn("partition", partition)
            .withColumn("num_records", records)
            .withColumn("deleted_rows", deleted.cast("bigint"))
            .withColumn("cardinality", F.when(F.col("deletionVector").isNotNull(), cardinality))
            .withColumn("is_small", F.col("size") < F.lit(threshold))
            .cache()
        )

    @contextlib.contextmanager
    def _job(self, what: str) -> Iterator[None]:
        """Spark errors as typed errors, and the job's progress: to `self.progress` when given
        (`report_progress_to`), else the session's own display (`spark.jobs.progress`)."""
        snap = self.snapshot
        sink = report_progress_to(self.progress) if self.progress is not None else contextlib.nullcontext()
        with spark_errors(what, path=snap.uri), sink, spark_progress(self.spark, f"{what} of {snap.uri} v{snap.version}"):
            yield

    def _collect(self, df: DataFrame, what: str) -> pa.Table:
        with self._job(what):
            return df.toArrow()

    # -- the tables ---------------------------------------------------------------------------------
    def active_files(self) -> DataFrame:
        """The active files as a Spark DataFrame with `FILE_LIST_COLUMNS` (the file listing)."""
        from pyspark.sql import functions as F

        storage = F.col("deletionVector.storageType")
        return self._files.select(
            "path",
            "partition",
            "size",
            "num_records",
            "deleted_rows",
            (F.col("num_records") - F.col("deleted_rows")).alias("live_rows"),
            F.timestamp_millis(F.col("modificationTime")).alias("modification_time"),
            "is_small",
            F.col("num_records").isNotNull().alias("has_stats"),
            F.when(storage == "i", "inline")
            .when(storage == "u", "file")
            .when(storage == "p", "absolute")
            .otherwise(storage)
            .alias("dv_storage"),
        )

    def file_list(self) -> pa.Table:
        """`active_files()` collected (the explorer's file grid), `FILE_LIST_COLUMNS`."""
        local = FilePass(self.snapshot, self.small_file_bytes, keep_file_list=True).file_list()
        got = self._collect(self.active_files(), "listing the files")
        return pa.table({c: got.column(c).cast(local.schema.field(c).type) for c in FILE_LIST_COLUMNS}, schema=local.schema)

    def partitions(self) -> pa.Table:
        """`inspect.partitions()` of the version, aggregated by Spark (one job, kept: the
        overview's totals and the file count come from it)."""
        return self._partitions

    @cached_property
    def _partitions(self) -> pa.Table:
        from pyspark.sql import functions as F

        size, small = F.col("size"), F.col("is_small")
        agg = self._files.groupBy("partition").agg(
            F.count(F.lit(1)).alias("files"),
            F.coalesce(F.sum(size), F.lit(0)).alias("bytes"),
            F.sum("num_records").alias("rows"),
            F.coalesce(F.sum("deleted_rows"), F.lit(0)).alias("deleted_rows"),
            F.sum(F.col("num_records") - F.col("deleted_rows")).alias("live_rows"),
            F.sum(F.col("num_records").isNull().cast("bigint")).alias("files_without_stats"),
            F.count("cardinality").alias("dv_files"),
            F.coalesce(F.sum(small.cast("bigint")), F.lit(0)).alias("small_files"),
            F.coalesce(F.sum(F.when(small, size)), F.lit(0)).alias("small_bytes"),
            F.min(size).alias("min_file_bytes"),
            F.max(size).alias("max_file_bytes"),
            F.avg(size).alias("mean_file_bytes"),
            F.expr("percentile(size, 0.5)").alias("median_file_bytes"),
            F.min_by("partitionValues", "_order").alias("partition_values"),
        )
        got = self._collect(agg, "aggregating the partitions")
        if got.num_rows == 0:
            return PARTITIONS_SCHEMA.empty_table()
        logical = {p: n for n, p in physical_partition_names(self.snapshot).items() if p != n}
        cols = {
            name: got.column(name).cast(PARTITIONS_SCHEMA.field(name).type)
            for name in PARTITION_AGGREGATES
            if name != "partition_values"
        }
        cols["partition_values"] = translate_map_keys(got.column("partition_values").combine_chunks(), logical)
        # the local order before `finish_partitions` sorts: ties broken by partition there too
        return finish_partitions(pa.table(cols).sort_by("partition"))

    def file_sizes(self) -> pa.Table:
        """`inspect.file_sizes()` of the version, binned by Spark (exact: the bit length)."""
        from pyspark.sql import functions as F

        exponent = F.length(F.bin(F.greatest(F.col("size"), F.lit(1)))) - 1
        agg = (
            self._files.where(F.col("size").isNotNull())
            .groupBy(exponent.cast("bigint").alias("exponent"))
            .agg(
                F.count(F.lit(1)).alias("files"),
                F.sum("size").alias("bytes"),
                F.sum(F.col("is_small").cast("bigint")).alias("small_files"),
            )
        )
        got = self._collect(agg, "binning the file sizes")
        return finish_file_sizes(pa.table({n: got.column(n).cast(pa.int64()) for n in SIZE_AGGREGATES}))

    def totals(self) -> FileTotals:
        """The overview's file totals."""
        return FileTotals.of_partitions(self.partitions())

    def overview(self) -> pa.Table:
        """`inspect.overview()` of the version, its file metrics counted by Spark."""
        return overview_table(self.snapshot, small_file_bytes=self.small_file_bytes, totals=self.totals())

    def deletion_vectors(self, *, purge_threshold: float = DEFAULT_PURGE_THRESHOLD) -> pa.Table:
        """`inspect.deletion_vectors()` of the version: the files with a DV found by Spark."""
        from pyspark.sql import functions as F

        dvs = self._files.where(F.col("deletionVector").isNotNull()).select(
            "path", "partitionValues", "size", "deletionVector", "num_records"
        )
        got = self._collect(dvs, "listing the deletion vectors")
        if got.num_rows == 0:
            return dv_table(self.snapshot, pa.table({}), pa.array([], pa.int64()), purge_threshold)
        records = got.column("num_records").combine_chunks()
        return dv_table(self.snapshot, got.drop_columns(["num_records"]), records, purge_threshold)

    def layout_summary(self, columns: list[str] | None = None) -> pa.Table:
        """`inspect.layout_summary(columns)` of the version: the active files' statistics
        replayed by Spark, reduced on the driver a batch at a time to per-file bounds of the
        columns (the local parse, `layout_columns_bounds`: one definition of each type's
        bounds), then `summarize_layout` (the overlap depth is a sweep over every file's
        bounds, so those reach the driver in any engine: 3 values a file and column)."""
        return summarize_layout(self.snapshot, columns, files=self.files, bounds=self._bounds)

    def _bounds(self, names: list[str]) -> dict[str, dict[str, Any]]:
        got = self._collect(self._files.select("path", "partitionValues", "stats"), "reading the files' statistics")
        pieces: dict[str, list[dict[str, Any]]] = {}
        for batch in got.to_batches(max_chunksize=_BOUNDS_BATCH):
            for name, b in layout_columns_bounds(self.snapshot, pa.Table.from_batches([batch]), names).items():
                pieces.setdefault(name, []).append(b)
        return merged_bounds(pieces)

    def _layout_inputs(self, name: str) -> tuple[pa.Table, dict[str, Any]]:
        got = self._collect(self._files.select(*LAYOUT_FILE_COLUMNS, "partitionValues", "stats"), "reading the files' statistics")
        pieces: list[dict[str, Any]] = []
        for batch in got.to_batches(max_chunksize=_BOUNDS_BATCH):
            pieces.append(layout_columns_bounds(self.snapshot, pa.Table.from_batches([batch]), [name])[name])
        if not pieces:
            pieces.append(layout_columns_bounds(self.snapshot, got, [name])[name])
        local = FilePass(self.snapshot, self.small_file_bytes, keep_file_list=True).file_list()
        files = pa.table({c: got.column(c).cast(local.schema.field(c).type) for c in LAYOUT_FILE_COLUMNS})
        return files, merged_bounds({name: pieces})[name]

    def dv_files(self) -> pa.Table:
        """`inspect.dv_files()` of the version (no storage checks)."""
        return dv_files_of(self.deletion_vectors())

    @property
    def files(self) -> int:
        """Active files (counted per partition by Spark: `partitions()`)."""
        return int(pc.sum(self.partitions().column("files")).as_py() or 0)


def spark_file_pass(
    spark: SparkSession,
    obj: Table | Snapshot,
    *,
    version: int | None = None,
    small_file_bytes: int | None = None,
    progress: ProgressCallback | None = None,
) -> SparkFilePass:
    """The file tables of a version, computed on `spark` (see the module docstring).

    Args:
        progress: called ``progress(fraction, message)`` as each table's Spark job runs (the
            explorer's status line); without it the jobs show `spark.jobs.progress`'s display.
    """
    return SparkFilePass(spark, snapshot_of(obj, version), small_file_bytes=small_file_bytes, progress=progress)
