"""Reading a Delta table with plain Spark from the core's scan plan.

The core decides *what* to read (`Snapshot.scan`: selected files, typed partition values,
deletion vectors, the row filter); Spark reads the parquet files in one scan per group (files
with and without DVs) with the physical schema (physical names or parquet field ids), and:

- the files are the ones the log names: a classic session does not run Spark's file listing
  job for them (`parquet_files`), so building the DataFrame runs no Spark job; many local files
  are read by listing their directories, filtered to exactly those files (`_directory_scan`);

- per-file values (the file's id, partition values, the DV bitmap) are attached by
  `file_values`: keyed by `_metadata.file_size` where sizes are unique (local files: or size
  and modification time; else the path), as
  literals indexed by a comparison tree or by a broadcast hash join (a row whose file is not in
  the plan fails the job instead of being dropped);
- rows deleted by DVs are dropped by a bitmap test on `_metadata.row_index` (or, for huge DVs,
  a left anti join on one long key; see `deletion_vectors`); files without DVs are read without
  row indexes and never filtered;
- columns are cast from their physical to their logical type and name (widened types,
  renamed nested fields), missing columns are null, timestamps are instants (UTC);
- variants are the core's `struct<metadata, value>`: read as that struct, or, in a table that may
  hold shredded variants (`variantShredding`), read as Spark's VARIANT (its reader rebuilds
  shredded values, file by file) and turned into the struct on the executors
  (`executor.variant_structs`);
- the row filter runs last, with the core's semantics (`filters.to_spark_filter`).
"""

from __future__ import annotations

import datetime as dt
import os
import re
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from deltaexplore.core.log.state import TableState
from deltaexplore.core.protocol.deletion_vectors import DeletionVectorDescriptor
from deltaexplore.core.protocol.predicates import lower_literals, parse_predicate
from deltaexplore.core.protocol.schema import PrimitiveType, StructField, any_leaf
from deltaexplore.core.scan.plan import ScanPlan, partition_table
from deltaexplore.core.scan.stats import num_records
from deltaexplore.core.snapshot import Snapshot
from deltaexplore.core.table import Table, open_table
from deltaexplore.spark import file_values as fv
from deltaexplore.spark.deletion_vectors import KEY_COL, deleted_key, deleted_rows, keep_row
from deltaexplore.spark.executor import ship, variant_structs
from deltaexplore.spark.file_values import FILE_COL, ROW_COL
from deltaexplore.spark.filters import to_spark_filter
from deltaexplore.spark.paths import file_path_key, local_file, spark_location, spark_root
from deltaexplore.spark.session import is_connect, spark_errors
from deltaexplore.spark.types import quoted, spark_field, spark_schema, spark_type, sql_type

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession


__all__ = ["FILE_COL", "ROW_COL", "read", "read_plan", "scan_files", "snapshot_of"]

DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"


def snapshot_of(
    uri: Any,
    *,
    version: int | None = None,
    timestamp: str | dt.datetime | dt.date | int | None = None,
    storage_options: dict[str, Any] | None = None,
) -> Snapshot:
    """A snapshot from a URI/path, a `Table` or a `Snapshot` (returned as is)."""
    if isinstance(uri, Snapshot):
        if version is None and timestamp is None:
            return uri
        uri = uri.table
    table: Table = uri if isinstance(uri, Table) else open_table(uri, storage_options=storage_options)
    return table.snapshot(version, timestamp=timestamp)


def read(
    spark: SparkSession,
    uri: Any,
    version: int | None = None,
    timestamp: str | dt.datetime | dt.date | int | None = None,
    columns: list[str] | None = None,
    where: Any = None,
    storage_options: dict[str, Any] | None = None,
    *,
    dv_mode: str = "auto",
    delegate: bool = False,
) -> DataFrame:
    """A Delta table as a Spark DataFrame: the rows and logical schema `snapshot.to_arrow()` gives.

    Args:
        spark: the session (see `get_spark`).
        uri: table location (path or URI), or a `Table`/`Snapshot`.
        version: version to read (time travel); default latest.
        timestamp: read the version that was current at this time.
        columns: logical columns to return (default all, in schema order).
        where: row filter (SQL-like text, DNF tuples or a core `Expr`); also prunes files by
            partition values and statistics.
        storage_options: options for the core's storage (object store credentials, ...).
        dv_mode: how deletion vectors are decoded: ``auto``, ``driver`` or ``executor``
            (see `deltaexplore.spark.deletion_vectors`).
        delegate: when the session has the Delta Spark extension configured, read with
            ``spark.read.format("delta")`` instead (nothing else depends on it).

    Raises:
        DeltaExploreError: the table cannot be read (missing version, unsupported feature, ...).
        SparkError: Spark failed to plan the read.
    """
    snap = snapshot_of(uri, version=version, timestamp=timestamp, storage_options=storage_options)
    if delegate and _has_delta_extension(spark):
        return _read_with_extension(spark, snap, columns, where)
    plan = snap.scan(columns, where=where)
    return read_plan(spark, plan, dv_mode=dv_mode, storage_options=storage_options)


def _has_delta_extension(spark: SparkSession) -> bool:
    extensions = spark.conf.get("spark.sql.extensions", "") or ""
    return DELTA_EXTENSION in extensions


def _read_with_extension(spark: SparkSession, snap: Snapshot, columns: list[str] | None, where: Any) -> DataFrame:
    with spark_errors("reading with the Delta extension", path=snap.uri):
        df = spark.read.format("delta").option("versionAsOf", snap.version).load(spark_root(snap.storage))
        expr = parse_predicate(where)
        if expr is not None:
            df = df.where(to_spark_filter(expr, snap.schema))
        return df.select(*(columns or snap.schema.names))


def read_plan(
    spark: SparkSession, plan: ScanPlan, *, dv_mode: str = "auto", storage_options: dict[str, Any] | None = None
) -> DataFrame:
    """Execute a core `ScanPlan` with Spark (see the module docstring)."""
    snap = plan.snapshot
    wanted: list[StructField] = []
    for f in [*plan.fields, *plan.extra_fields]:
        if f.name not in {w.name for w in wanted}:
            wanted.append(f)
    with spark_errors("planning the Spark read", path=snap.uri):
        df = scan_files(
            spark,
            snap,
            plan.files,
            wanted,
            partition_values=plan.partition_values,
            dv_mode=dv_mode,
            storage_options=storage_options,
        )
        if plan.predicate is not None:
            predicate = lower_literals(plan.predicate, plan.lowered)
            df = df.where(to_spark_filter(predicate, snap.schema, lowered=plan.lowered))
        if [f.name for f in wanted] == [f.name for f in plan.fields]:
            return df  # already exactly these columns (each planned DataFrame step costs ~10 ms)
        return df.selectExpr(*[quoted(f.name) for f in plan.fields])


def empty_frame(spark: SparkSession, fields: list[StructField], *, with_ids: bool = False) -> DataFrame:
    from pyspark.sql import types as T

    schema = spark_schema(fields)
    if with_ids:
        schema = schema.add(FILE_COL, T.IntegerType()).add(ROW_COL, T.LongType())
    return spark.createDataFrame([], schema)


def ensure_field_ids(spark: SparkSession) -> None:
    """Column mapping id mode: make Spark match parquet columns by field id."""
    if str(spark.conf.get("spark.sql.parquet.fieldId.read.enabled", "false")).lower() != "true":
        spark.conf.set("spark.sql.parquet.fieldId.read.enabled", "true")
    if str(spark.conf.get("spark.sql.parquet.fieldId.read.ignoreMissing", "false")).lower() != "true":
        spark.conf.set("spark.sql.parquet.fieldId.read.ignoreMissing", "true")


def ensure_variant_structs(spark: SparkSession) -> None:
    """Variant columns are read as ``struct<metadata, value>`` (the core's representation);
    Spark 4.1+ refuses that for files carrying Parquet's VARIANT annotation unless told to
    treat the annotated group as its plain struct (reading as VARIANT is unaffected)."""
    key = "spark.sql.parquet.ignoreVariantAnnotation"
    if str(spark.conf.get(key, "false")).lower() != "true":
        spark.conf.set(key, "true")


def parquet_reader(spark: SparkSession, schema: Any) -> Any:
    return (
        spark.read.schema(schema)
        .option("datetimeRebaseMode", "CORRECTED")
        .option("int96RebaseMode", "CORRECTED")
        .option("mergeSchema", "false")
    )


#: Spark lists more paths than this with a Spark job (one task per path) when building a scan
DISCOVERY_THRESHOLD = "spark.sql.sources.parallelPartitionDiscovery.threshold"


def parquet_files(
    spark: SparkSession, schema: Any, locations: list[str], *, list_on_driver: bool, local_paths: list[str] | None = None
) -> DataFrame:
    """`parquet_reader(spark, schema).parquet(*locations)`: the data files the log names, without Spark's file listing job.

    Spark checks and lists the paths it is given; past `DISCOVERY_THRESHOLD` (32) paths it runs
    a Spark job with a task per path, at plan time (2,000 files on a loopback standalone
    cluster: 12 s). The log already lists the files: with `list_on_driver` (local and HDFS
    tables, where a status is a system call or a name-node RPC) a classic session lists them on
    the driver instead (the threshold raised for this call only); object stores keep Spark's
    parallel listing (a status is an HTTP request). Local files (`local_paths`, the files'
    absolute paths) are read by listing their directories where that is cheaper
    (`_directory_scan`). The paths go to the JVM in one py4j call, not one per path. Spark
    Connect plans lazily on the server: nothing here runs a job."""
    if is_connect(spark) or not locations:
        return parquet_reader(spark, schema).parquet(*locations)
    raised = list_on_driver and len(locations) > 32
    previous = spark.conf.get(DISCOVERY_THRESHOLD, None) if raised else None
    if raised:
        spark.conf.set(DISCOVERY_THRESHOLD, str(len(locations)))
    try:
        if local_paths is not None and len(local_paths) > 32:
            df = _directory_scan(spark, parquet_reader(spark, schema), local_paths)
            if df is not None:
                return df
        return _parquet_in_one_call(spark, parquet_reader(spark, schema), locations)
    finally:
        if raised:
            if previous is None:
                spark.conf.unset(DISCOVERY_THRESHOLD)
            else:
                spark.conf.set(DISCOVERY_THRESHOLD, previous)


#: a directory scan is tried when its directories hold at most this many listed files per file read
DIRECTORY_SCAN_MAX_LISTED = 4
_SAFE_NAME = re.compile(r"[A-Za-z0-9._+=-]+")
_SAFE_DIR = re.compile(r"/[A-Za-z0-9._+=/-]*")


def _directory_scan(spark: SparkSession, reader: Any, local_paths: list[str]) -> DataFrame | None:
    """The local files `local_paths` read by listing their directories, or None (then the paths
    are given one by one).

    Spark resolves every path it is given with a few file-system lookups, each asking Hadoop for
    the current user (a stack walk under the analyzer): 2,000 paths cost ~0.5 s of driver time;
    listing the directory that holds them, ~0.05 s. The directories' other files (removed files
    not vacuumed, DV files) are left out by a `pathGlobFilter` of the names' shortest distinct
    prefixes. Taken only when the directories hold no other visible subdirectory and not many
    more files than are read, and the file names and directories need no quoting. The scan's
    files (`inputFiles`, listed once when the DataFrame is built) must then be exactly
    `local_paths`; anything else (a file missing, a file added meanwhile) gives None."""
    wanted: dict[str, set[str]] = {}
    for p in local_paths:
        folder, _, name = p.rpartition("/")
        if not _SAFE_NAME.fullmatch(name) or not _SAFE_DIR.fullmatch(folder or "/"):
            return None
        wanted.setdefault(folder or "/", set()).add(name)
    if len(wanted) * 8 > len(local_paths):
        return None
    others: set[str] = set()
    listed = 0
    try:
        for folder, names in wanted.items():
            with os.scandir(folder) as entries:
                for entry in entries:
                    if entry.name.startswith(("_", ".")):
                        continue  # Spark skips these too
                    if entry.is_dir():
                        return None
                    listed += 1
                    if entry.name not in names:
                        others.add(entry.name)
    except OSError:
        return None
    every = {n for names in wanted.values() for n in names}
    if listed > DIRECTORY_SCAN_MAX_LISTED * len(local_paths) + 1000 or others & every:
        return None
    pattern = name_glob(sorted(every), others)
    scan = reader.option("recursiveFileLookup", "true")
    if pattern is not None:
        scan = scan.option("pathGlobFilter", pattern)
    try:
        df = _parquet_in_one_call(spark, scan, ["file://" + folder for folder in wanted])
        jvm: Any = spark._jvm
        files = jvm.scala.collection.immutable.ArraySeq.unsafeWrapArray(df._jdf.inputFiles()).mkString("\x00")
    except Exception:  # noqa: BLE001 - another Spark version, a file gone: the paths one by one
        return None
    got = sorted("/" + f.split(":", 1)[1].lstrip("/") for f in files.split("\x00")) if files else []
    return df if got == sorted(local_paths) else None


def name_glob(names: list[str], others: set[str]) -> str | None:
    """A Hadoop glob matching every name of `names` and none of `others` (None: no `others`):
    the names' shortest prefixes no other name has, as nested alternatives (a trie: Spark
    compiles the glob into one regular expression, whose parse time grows with its length)."""
    if not others:
        return None
    everything = sorted({*names, *others})
    wanted = set(names)

    def build(words: list[str], depth: int) -> str:
        if all(w in wanted for w in words):
            return "*"
        groups: dict[str, list[str]] = {}
        for w in words:
            groups.setdefault(w[depth : depth + 1], []).append(w)
        parts = []
        for head, group in groups.items():
            if not any(w in wanted for w in group):
                continue
            parts.append("" if head == "" else head + build(group, depth + 1))
        return parts[0] if len(parts) == 1 else "{" + ",".join(parts) + "}"

    return build(everything, 0)


def _parquet_in_one_call(spark: SparkSession, reader: Any, locations: list[str]) -> DataFrame:
    """`reader.parquet(*locations)` with the paths sent as one string cut in the JVM (py4j
    converts a list with one call per element: 0.4 s for 2,000 paths on a loaded machine)."""
    jreader, jvm = getattr(reader, "_jreader", None), getattr(spark, "_jvm", None)
    if jreader is None or jvm is None or any("\x00" in loc for loc in locations):
        return reader.parquet(*locations)
    try:
        # a Java String[] (py4j would turn a returned String into a Python str)
        paths = jvm.java.util.regex.Pattern.compile("\x00", 16).split("\x00".join(locations), -1)  # 16: LITERAL
        return reader._df(jreader.parquet(paths))
    except Exception:  # noqa: BLE001 - another PySpark's internals: the public call (same frame)
        return reader.parquet(*locations)


def logical_columns(
    fields: list[StructField],
    data_fields: list[StructField],
    part_fields: list[StructField],
    *,
    native_variant: bool = False,
) -> list[str | Column]:
    """`fields` as columns of a scan: data field i is ``__dx_c<i>``, partition field j
    `file_values.part_col(j)`, any other field null; each cast to its Spark type (variants as
    Spark's VARIANT with `native_variant`). SQL text where it can say the type (see `project`),
    else a Column."""
    from pyspark.sql import functions as F

    data_index = {f.name: i for i, f in enumerate(data_fields)}
    part_index = {f.name: j for j, f in enumerate(part_fields)}
    out: list[str | Column] = []
    for f in fields:
        source = None
        if f.name in data_index:
            source = f"__dx_c{data_index[f.name]}"
        elif f.name in part_index:
            source = fv.part_col(part_index[f.name])
        text = sql_type(f.type, native_variant=native_variant)
        if text is not None:
            value = "NULL" if source is None else quoted(source)
            out.append(f"CAST({value} AS {text}) AS {quoted(f.name)}")
        else:
            target = spark_type(f.type, native_variant=native_variant)
            value_col = F.lit(None) if source is None else F.col(source)
            out.append(value_col.cast(target).alias(f.name))
    return out


def project(df: DataFrame, columns: list[str | Column]) -> DataFrame:
    """`df.select` of SQL expressions (text) and Columns. All text: one `selectExpr` (a few py4j
    calls in all; a Column built in Python costs dozens: 46 for a cast and alias)."""
    from pyspark.sql import functions as F

    if all(isinstance(c, str) for c in columns):
        return df.selectExpr(*columns)  # type: ignore[arg-type]
    return df.select(*[F.expr(c) if isinstance(c, str) else c for c in columns])


def scan_files(
    spark: SparkSession,
    snapshot: TableState,
    files: pa.Table,
    fields: list[StructField],
    *,
    partition_values: pa.Table | None = None,
    with_ids: bool = False,
    apply_dvs: bool = True,
    dv_mode: str = "auto",
    storage_options: dict[str, Any] | None = None,
) -> DataFrame:
    """Rows of the add actions `files` as logical columns `fields`.

    With `with_ids` the frame also has ``__dx_file`` (index of the row's file in `files`) and
    ``__dx_row`` (the row's index in its parquet file) — what DML and OPTIMIZE need.
    """
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    n = files.num_rows
    if n == 0:
        return empty_frame(spark, fields, with_ids=with_ids)
    storage = snapshot.storage
    mode = snapshot.column_mapping_mode
    if mode == "id":
        ensure_field_ids(spark)
    # a table that may hold shredded variants is read with Spark's VARIANT, whose reader rebuilds
    # them (a struct read would drop `typed_value`); they become the core's structs at the end
    native_variant = False
    if any(any_leaf(f.type, lambda p: p.name == "variant") for f in fields):
        native_variant = snapshot.protocol.has("variantShredding", "variantShredding-preview")
        if not native_variant:
            ensure_variant_structs(spark)
    parts = set(snapshot.partition_columns)
    part_fields = [f for f in fields if f.name in parts]
    data_fields = [f for f in fields if f.name not in parts and f.type != PrimitiveType("void")]
    if part_fields and partition_values is None:
        partition_values = partition_table(snapshot, files)

    raw_paths = files.column("path").to_pylist()
    dv_dicts = files.column("deletionVector").to_pylist() if "deletionVector" in files.column_names else [None] * n
    with_dv = [i for i in range(n) if apply_dvs and dv_dicts[i]]
    without = [i for i in range(n) if not (apply_dvs and dv_dicts[i])]
    need_values = bool(part_fields) or with_ids

    # Spark matches parquet columns by the read schema's names (or ids): use the physical ones.
    physical = T.StructType([spark_field(f, mode=mode, native_variant=native_variant) for f in data_fields])
    list_on_driver = getattr(storage, "scheme", "file") in ("file", "local", "hdfs")

    deleted = None
    dv_position = {i: k for k, i in enumerate(with_dv)}
    if with_dv:
        deleted = deleted_rows(
            spark,
            storage,
            file_ids=with_dv,
            paths=[raw_paths[i] for i in with_dv],
            dvs=[DeletionVectorDescriptor.from_dict(dv_dicts[i] or {}) for i in with_dv],
            num_records=num_records(files, np.asarray(with_dv, dtype=np.int64)).to_pylist(),
            mode=dv_mode,
            storage_options=storage_options,
        )
    sizes, times = fv.actual_stats(storage, raw_paths) if (need_values or with_dv) else (None, None)

    def scan(indexes: list[int], key: str | None, *, row_index: bool) -> DataFrame:
        locations = [spark_location(storage, raw_paths[i]) for i in indexes]
        local = [local_file(storage, raw_paths[i]) for i in indexes] if list_on_driver else []
        local_paths = [p for p in local if p is not None]
        df = parquet_files(
            spark,
            physical,
            locations,
            list_on_driver=list_on_driver,
            local_paths=local_paths if len(local_paths) == len(indexes) else None,
        )
        selected = [f"{quoted(f.name)} AS __dx_c{i}" for i, f in enumerate(physical.fields)]
        if row_index:
            selected.append(f"_metadata.row_index AS {ROW_COL}")
        if key in ("size", "stamp"):
            selected.append(f"_metadata.file_size AS {fv.KEY_COL}")
            if key == "stamp":
                selected.append(f"unix_millis(_metadata.file_modification_time) AS {fv.TIME_COL}")
        elif key == "path":
            selected.append(f"_metadata.file_path AS {fv.KEY_COL}")
        return df.selectExpr(*selected)

    def values_of(indexes: list[int], key: str, *, dvs: bool) -> fv.FileValues:
        assert sizes is not None
        take = pa.array(indexes, pa.int64())
        bitmaps = None
        if dvs and deleted is not None and deleted.bitmaps is not None:
            bitmaps = [deleted.bitmaps[dv_position[i]] for i in indexes]
        return fv.FileValues(
            bitmap_frame=deleted.bitmap_frame(spark, indexes) if dvs and deleted is not None and deleted.pieces else None,
            ids=indexes,
            part_values=[partition_values.column(f.name).combine_chunks().take(take) for f in part_fields]
            if partition_values is not None
            else [],
            part_types=[f.type for f in part_fields],
            bitmaps=bitmaps,
            sizes=[int(sizes[i]) for i in indexes] if key in ("size", "stamp") else None,
            times=[int(times[i]) for i in indexes] if key == "stamp" and times is not None else None,
            path_keys=[file_path_key(storage, raw_paths[i]) for i in indexes] if key == "path" else None,
        )

    def finish(df: DataFrame) -> DataFrame:
        out = logical_columns(fields, data_fields, part_fields, native_variant=native_variant)
        if with_ids:
            out += [FILE_COL, ROW_COL]
        return project(df, out)

    frames = []
    for indexes, dvs in ((without, False), (with_dv, True)):
        if not indexes:
            continue
        if not dvs and not need_values:
            frames.append(finish(scan(indexes, None, row_index=False)))
            continue
        assert sizes is not None
        for positions, key in fv.split_by_key(sizes[indexes], None if times is None else times[indexes]):
            if not len(positions):
                continue
            subset = [indexes[int(k)] for k in positions]
            df = fv.attach(spark, scan(subset, key, row_index=dvs or with_ids), values_of(subset, key, dvs=dvs))
            if dvs and deleted is not None:
                if deleted.bitmaps is not None:
                    df = df.where(keep_row(fv.BITMAP_COL, ROW_COL))
                elif deleted.pieces is not None:  # bitmaps joined with the per-file values (`fv.attach`)
                    df = df.where(keep_row(fv.BITMAP_COL, ROW_COL))
                else:
                    assert deleted.keys is not None
                    keys = F.broadcast(deleted.keys) if deleted.broadcast else deleted.keys
                    df = df.withColumn(KEY_COL, deleted_key(F.col(FILE_COL), F.col(ROW_COL)))
                    df = df.join(keys, on=KEY_COL, how="left_anti")
            frames.append(finish(df))
    df = frames[0]
    for other in frames[1:]:
        df = df.unionByName(other)
    if native_variant:
        ship()
        schema = spark_schema(fields)
        if with_ids:
            schema = schema.add(FILE_COL, T.IntegerType()).add(ROW_COL, T.LongType())
        df = df.mapInArrow(variant_structs(), schema)
    return df
