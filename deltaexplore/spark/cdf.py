"""Change data feed on Spark, with the semantics of the core's `Table.changes`.

The driver plans "pieces" from the log (one per file and commit): rows of a `cdc` file; all
live rows of an added or removed file (``exclude``: minus the rows its DV deletes); or, for a
file re-added with a new DV, only the rows whose deletion changed (``keep``). The driver never
decodes a DV: the executors turn each piece's DVs into (piece, row) marks
(`executor.dv_rows`). Spark reads each distinct data file once, joins its rows to the pieces of
that file (a file added in one commit and removed in a later one yields both an insert and a
delete), joins the marks and keeps rows per piece mode.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.cdf import change_commits
from deltaexplore.core.protocol.deletion_vectors import DeletionVectorDescriptor
from deltaexplore.core.protocol.schema import PrimitiveType, StructField
from deltaexplore.core.scan.plan import partition_table, resolve_columns
from deltaexplore.spark.executor import DV_ROWS_SCHEMA, dv_rows, ship
from deltaexplore.spark.file_values import part_col
from deltaexplore.spark.paths import file_path_key, spark_location
from deltaexplore.spark.reader import ensure_field_ids, logical_columns, parquet_reader, project, snapshot_of
from deltaexplore.spark.session import default_parallelism, spark_errors
from deltaexplore.spark.types import spark_field, spark_type

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["changes"]


def changes(
    spark: SparkSession,
    uri: Any,
    start_version: int,
    end_version: int | None = None,
    *,
    columns: list[str] | None = None,
    storage_options: dict[str, Any] | None = None,
) -> DataFrame:
    """Row-level changes of versions start..end (inclusive) as a DataFrame.

    Columns: the table's columns (or `columns`) at `end_version`, then ``_change_type``
    (insert/delete/update_preimage/update_postimage), ``_commit_version``, ``_commit_timestamp``.

    Raises:
        VersionNotFoundError: the range is outside the table or its commits were cleaned up.
        DeltaProtocolError: the change data feed is not enabled at some version of the range.
        SparkError: Spark failed to plan the read.
    """
    end_snap = snapshot_of(uri, version=end_version, storage_options=storage_options)
    table = end_snap.table
    versions = list(range(start_version, end_snap.version + 1))
    lines = change_commits(end_snap, start_version)
    fields = resolve_columns(end_snap.schema, columns)
    pieces = _plan_pieces(end_snap, lines, versions)
    with spark_errors("reading the change data feed", path=table.uri):
        return _execute(spark, end_snap, fields, pieces, storage_options)


def _plan_pieces(snap: Any, lines: Any, versions: list[int]) -> pa.Table:
    """One row per file and commit (`PIECES_SCHEMA`-like): its rows come from a cdc file
    (``all``), are a file's live rows (``exclude``: minus the rows DV `dv` deletes) or the rows
    whose deletion changed (``keep``: deleted by `dv` and not by `minus`). DVs stay descriptors
    (JSON): the executors decode them."""
    clock = snap.clock
    adds = lines.file_actions("add")
    removes = lines.file_actions("remove")
    cdcs = lines.file_actions("cdc")
    cdc_versions = set(cdcs.column("version").to_pylist())
    rows: list[dict[str, Any]] = []

    def dv_text(action: dict[str, Any]) -> str | None:
        dv = action.get("deletionVector")
        if not dv:
            return None
        DeletionVectorDescriptor.from_dict(dv).file_path()  # a DV outside the table fails here
        return json.dumps({k: v for k, v in dv.items() if v is not None})

    def piece(action: dict[str, Any], version: int, change: str | None, mode: str, dv: str | None, minus: str | None) -> None:
        rows.append(
            {
                "path": action["path"],
                "partitionValues": action.get("partitionValues") or [],
                "version": version,
                "change": change,
                "mode": mode,
                "cdc": change is None,
                "dv": dv,
                "minus": minus,
            }
        )

    for v in versions:
        if v in cdc_versions:
            for action in cdcs.filter(pc.equal(cdcs.column("version"), v)).to_pylist():
                piece(action, v, None, "all", None, None)
            continue
        a = adds.filter(pc.and_(pc.equal(adds.column("version"), v), pc.fill_null(adds.column("dataChange"), True)))
        r = removes.filter(pc.and_(pc.equal(removes.column("version"), v), pc.fill_null(removes.column("dataChange"), True)))
        removed = {x["path"]: x for x in r.to_pylist()}
        added = set()
        for action in a.to_pylist():
            path = action["path"]
            added.add(path)
            new_dv = dv_text(action)
            old = removed.get(path)
            if old is not None:
                old_dv = dv_text(old)
                if new_dv != old_dv:  # the rows whose deletion changed, both ways
                    if new_dv is not None:
                        piece(action, v, "delete", "keep", new_dv, old_dv)
                    if old_dv is not None:
                        piece(action, v, "insert", "keep", old_dv, new_dv)
                continue
            piece(action, v, "insert", "exclude", new_dv, None)
        for path, action in removed.items():
            if path not in added:
                piece(action, v, "delete", "exclude", dv_text(action), None)

    n = len(rows)
    return pa.table(
        {
            "path": pa.array([x["path"] for x in rows], pa.string()),
            "partitionValues": pa.array(
                [list(dict(x["partitionValues"]).items()) if x["partitionValues"] else [] for x in rows],
                pa.map_(pa.string(), pa.string()),
            ),
            "version": pa.array([x["version"] for x in rows], pa.int64()),
            "change": pa.array([x["change"] for x in rows], pa.string()),
            "mode": pa.array([x["mode"] for x in rows], pa.string()),
            "cdc": pa.array([x["cdc"] for x in rows], pa.bool_()),
            "piece": pa.array(np.arange(n, dtype=np.int32)),
            "timestamp": pa.array([clock.timestamp(x["version"]) for x in rows], pa.int64()).cast(pa.timestamp("ms", tz="UTC")),
            "dv": pa.array([x["dv"] for x in rows], pa.string()),
            "minus": pa.array([x["minus"] for x in rows], pa.string()),
        }
    )


def _marks(spark: SparkSession, snap: Any, pieces: pa.Table, storage_options: dict[str, Any] | None) -> DataFrame | None:
    """(piece, row) of every row a piece's DVs select, decoded on the executors; None: no DV."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    with_dv = pc.is_valid(pieces.column("dv"))
    if not pc.any(with_dv).as_py():
        return None
    ship()
    chosen = pieces.filter(with_dv).select(["piece", "path", "dv", "minus"])
    schema = T.StructType(
        [T.StructField("id", T.IntegerType()), T.StructField("path", T.StringType())]
        + [T.StructField(c, T.StringType()) for c in ("dv", "minus")]
    )
    frame = spark.createDataFrame(chosen.rename_columns(["id", "path", "dv", "minus"]), schema=schema)
    parts = max(1, min(chosen.num_rows, default_parallelism(spark) * 4))
    decoded = frame.repartition(parts).mapInArrow(dv_rows(snap.storage.root, storage_options), DV_ROWS_SCHEMA)
    return decoded.select(F.col("id").alias("__dx_piece"), F.col("row").alias("__dx_row"), F.lit(True).alias("__dx_hit"))


def _execute(
    spark: SparkSession, snap: Any, fields: list[StructField], pieces: pa.Table, storage_options: dict[str, Any] | None
) -> DataFrame:
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    out_fields = [T.StructField(f.name, spark_type(f.type), True) for f in fields] + [
        T.StructField("_change_type", T.StringType(), True),
        T.StructField("_commit_version", T.LongType(), True),
        T.StructField("_commit_timestamp", T.TimestampType(), True),
    ]
    if pieces.num_rows == 0:
        return spark.createDataFrame([], T.StructType(out_fields))
    storage = snap.storage
    mode = snap.column_mapping_mode
    if mode == "id":
        ensure_field_ids(spark)
    parts = set(snap.partition_columns)
    part_fields = [f for f in fields if f.name in parts]
    data_fields = [f for f in fields if f.name not in parts and f.type != PrimitiveType("void")]
    typed_parts = partition_table(snap, pieces) if part_fields else None
    keys = [file_path_key(storage, p) for p in pieces.column("path").to_pylist()]
    info: dict[str, Any] = {
        "__dx_path": pa.array(keys, pa.string()),
        "__dx_piece": pieces.column("piece"),
        "__dx_mode": pieces.column("mode"),
        "__dx_change": pieces.column("change"),
        "_commit_version": pieces.column("version"),
        "_commit_timestamp": pieces.column("timestamp"),
    }
    for j, f in enumerate(part_fields):
        assert typed_parts is not None
        info[part_col(j)] = typed_parts.column(f.name)
    info_df = spark.createDataFrame(pa.table(info))
    marks = _marks(spark, snap, pieces, storage_options)
    is_cdc = pieces.column("cdc").to_pylist()
    raw_paths = pieces.column("path").to_pylist()

    def load(cdc: bool) -> DataFrame | None:
        wanted = sorted({raw_paths[i] for i in range(len(raw_paths)) if is_cdc[i] == cdc})
        if not wanted:
            return None
        read_fields = [spark_field(f, mode=mode) for f in data_fields]
        if cdc:
            read_fields.append(T.StructField("_change_type", T.StringType(), True))
        df = parquet_reader(spark, T.StructType(read_fields)).parquet(*[spark_location(storage, p) for p in wanted])
        cols = [F.col(f"`{rf.name}`").alias(f"__dx_c{i}") for i, rf in enumerate(read_fields[: len(data_fields)])]
        cols += [F.col("_metadata.file_path").alias("__dx_path"), F.col("_metadata.row_index").alias("__dx_row")]
        if cdc:
            cols.append(F.col("_change_type").alias("__dx_cdc_change"))
        df = df.select(*cols)
        sub = info_df.where(F.col("__dx_change").isNull() if cdc else F.col("__dx_change").isNotNull())
        df = df.join(F.broadcast(sub), on="__dx_path", how="left")
        missing = F.raise_error(F.concat(F.lit("deltaexplore: rows of a file that is not in the CDF plan: "), F.col("__dx_path")))
        df = df.withColumn("__dx_piece", F.coalesce(F.col("__dx_piece"), missing.cast("int")))
        if cdc:
            return df.withColumn("__dx_change", F.col("__dx_cdc_change"))
        if marks is not None:
            df = df.join(marks, on=["__dx_piece", "__dx_row"], how="left")
        else:
            df = df.withColumn("__dx_hit", F.lit(None).cast("boolean"))
        keep = (
            (F.col("__dx_mode") == "all")
            | ((F.col("__dx_mode") == "exclude") & F.col("__dx_hit").isNull())
            | ((F.col("__dx_mode") == "keep") & F.col("__dx_hit").isNotNull())
        )
        return df.where(keep)

    frames = [f for f in (load(False), load(True)) if f is not None]
    out = logical_columns(fields, data_fields, part_fields)
    out += [
        "`__dx_change` AS `_change_type`",
        "CAST(`_commit_version` AS BIGINT) AS `_commit_version`",
        "CAST(`_commit_timestamp` AS TIMESTAMP_LTZ) AS `_commit_timestamp`",
    ]
    selected = [project(f, out) for f in frames]
    result = selected[0]
    for other in selected[1:]:
        result = result.unionByName(other)
    return result
