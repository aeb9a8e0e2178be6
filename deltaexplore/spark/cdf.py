"""Change data feed on Spark, with the semantics of the core's `Table.changes`.

The driver plans "pieces" from the log (one per file and commit): rows of a `cdc` file; all
live rows of an added or removed file (``exclude``: minus the rows its DV deletes); or, for a
file re-added with a new DV, only the rows whose deletion changed (``keep``). Spark reads each
distinct data file once, joins its rows to the pieces of that file (a file added in one commit
and removed in a later one yields both an insert and a delete) and keeps rows per piece mode.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.cdf import change_commits
from deltaexplore.core.protocol.deletion_vectors import DeletionVectorDescriptor, read_deletion_vector
from deltaexplore.core.protocol.schema import PrimitiveType, StructField
from deltaexplore.core.scan.plan import partition_table, resolve_columns
from deltaexplore.spark.file_values import part_col
from deltaexplore.spark.paths import file_path_key, spark_location
from deltaexplore.spark.reader import ensure_field_ids, logical_columns, parquet_reader, project, snapshot_of
from deltaexplore.spark.session import spark_errors
from deltaexplore.spark.types import spark_field, spark_type

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["changes"]


def _deleted(storage: Any, dv: dict[str, Any] | None, path: str) -> np.ndarray:
    if not dv:
        return np.zeros(0, dtype=np.int64)
    return read_deletion_vector(storage, DeletionVectorDescriptor.from_dict(dv), data_file=path).astype(np.int64)


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
    pieces, row_sets = _plan_pieces(end_snap, lines, versions)
    with spark_errors("reading the change data feed", path=table.uri):
        return _execute(spark, end_snap, fields, pieces, row_sets)


def _plan_pieces(snap: Any, lines: Any, versions: list[int]) -> tuple[pa.Table, pa.Table]:
    """(pieces: one row per file and commit, row sets: (piece, row) for exclude/keep pieces)."""
    storage = snap.storage
    clock = snap.clock
    adds = lines.file_actions("add")
    removes = lines.file_actions("remove")
    cdcs = lines.file_actions("cdc")
    cdc_versions = set(cdcs.column("version").to_pylist())
    rows: list[dict[str, Any]] = []
    sets_piece: list[np.ndarray] = []
    sets_row: list[np.ndarray] = []

    def piece(action: dict[str, Any], version: int, change: str | None, mode: str, row_set: np.ndarray | None) -> None:
        pid = len(rows)
        rows.append(
            {
                "path": action["path"],
                "partitionValues": action.get("partitionValues") or [],
                "version": version,
                "change": change,
                "mode": mode,
                "cdc": change is None,
            }
        )
        if row_set is not None and len(row_set):
            sets_piece.append(np.full(len(row_set), pid, dtype=np.int32))
            sets_row.append(row_set.astype(np.int64))

    for v in versions:
        if v in cdc_versions:
            for action in cdcs.filter(pc.equal(cdcs.column("version"), v)).to_pylist():
                piece(action, v, None, "all", None)
            continue
        a = adds.filter(pc.and_(pc.equal(adds.column("version"), v), pc.fill_null(adds.column("dataChange"), True)))
        r = removes.filter(pc.and_(pc.equal(removes.column("version"), v), pc.fill_null(removes.column("dataChange"), True)))
        removed = {x["path"]: x for x in r.to_pylist()}
        added = set()
        for action in a.to_pylist():
            path = action["path"]
            added.add(path)
            new_deleted = _deleted(storage, action.get("deletionVector"), path)
            old = removed.get(path)
            if old is not None:
                old_deleted = _deleted(storage, old.get("deletionVector"), path)
                gone = np.setdiff1d(new_deleted, old_deleted)
                back = np.setdiff1d(old_deleted, new_deleted)
                if len(gone):
                    piece(action, v, "delete", "keep", gone)
                if len(back):
                    piece(action, v, "insert", "keep", back)
                continue
            piece(action, v, "insert", "exclude", new_deleted)
        for path, action in removed.items():
            if path not in added:
                piece(action, v, "delete", "exclude", _deleted(storage, action.get("deletionVector"), path))

    n = len(rows)
    table = pa.table(
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
        }
    )
    row_sets = pa.table(
        {
            "__dx_piece": pa.array(np.concatenate(sets_piece) if sets_piece else np.zeros(0, np.int32)),
            "__dx_row": pa.array(np.concatenate(sets_row) if sets_row else np.zeros(0, np.int64)),
        }
    )
    return table, row_sets


def _execute(spark: SparkSession, snap: Any, fields: list[StructField], pieces: pa.Table, row_sets: pa.Table) -> DataFrame:
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
        marks = spark.createDataFrame(row_sets).withColumn("__dx_hit", F.lit(True))
        df = df.join(marks, on=["__dx_piece", "__dx_row"], how="left")
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
