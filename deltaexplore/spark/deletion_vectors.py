"""Deletion vectors for Spark reads: the deleted `(file, row index)` pairs as a DataFrame.

Two ways to decode, same result (a DataFrame of ``__dx_file: int, __dx_row: long``):

- ``driver``: the driver decodes every DV (threads, `core.deletion_vectors.read_deletion_vector`)
  and ships the row indexes as one Arrow table; small enough to broadcast for the usual case.
- ``executor``: a DataFrame of DV descriptors is spread over the executors, each decodes its
  share with the same core function (`mapInArrow`); nothing passes through the driver, so it
  scales to any number of files and deleted rows (executors need deltaexplore installed).

``auto`` picks ``driver`` up to `DRIVER_MAX_ROWS` deleted rows and `DRIVER_MAX_FILES` files.
Readers join rows of files with DVs against this frame on (file id, `_metadata.row_index`)
with a left anti join; files without DVs are never joined.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from deltaexplore.core.deletion_vectors import DeletionVectorDescriptor, read_deletion_vector

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["DRIVER_MAX_FILES", "DRIVER_MAX_ROWS", "choose_mode", "deleted_rows_frame"]

DRIVER_MAX_ROWS = 20_000_000
DRIVER_MAX_FILES = 20_000
BROADCAST_MAX_ROWS = 4_000_000

DELETED_SCHEMA = pa.schema([pa.field("__dx_file", pa.int32(), False), pa.field("__dx_row", pa.int64(), False)])


def choose_mode(mode: str, cardinalities: list[int]) -> str:
    if mode in ("driver", "executor"):
        return mode
    if mode != "auto":
        raise ValueError(f"dv_mode must be 'auto', 'driver' or 'executor', got {mode!r}")
    if sum(cardinalities) <= DRIVER_MAX_ROWS and len(cardinalities) <= DRIVER_MAX_FILES:
        return "driver"
    return "executor"


def decode_on_driver(storage: Any, file_ids: list[int], paths: list[str], dvs: list[DeletionVectorDescriptor]) -> pa.Table:
    """Deleted rows of the given files as an Arrow table (`DELETED_SCHEMA`)."""

    def one(i: int) -> np.ndarray:
        return read_deletion_vector(storage, dvs[i], data_file=paths[i]).astype(np.int64)

    if len(dvs) <= 1:
        rows = [one(i) for i in range(len(dvs))]
    else:
        with ThreadPoolExecutor(max_workers=min(8, len(dvs))) as pool:
            rows = list(pool.map(one, range(len(dvs))))
    if not rows:
        return DELETED_SCHEMA.empty_table()
    ids = np.repeat(np.asarray(file_ids, dtype=np.int32), [len(r) for r in rows])
    return pa.table([pa.array(ids), pa.array(np.concatenate(rows))], schema=DELETED_SCHEMA)


def _descriptor_table(file_ids: list[int], paths: list[str], dvs: list[DeletionVectorDescriptor]) -> pa.Table:
    return pa.table(
        {
            "file": pa.array(file_ids, pa.int32()),
            "path": pa.array(paths, pa.string()),
            "dv": pa.array([json.dumps(d.to_dict()) for d in dvs], pa.string()),
        }
    )


def _executor_decoder(root: str, storage_options: dict[str, Any] | None) -> Any:
    def decode(batches: Any) -> Any:
        from deltaexplore.core.deletion_vectors import DeletionVectorDescriptor, read_deletion_vector
        from deltaexplore.storage import storage_for

        storage = storage_for(root, storage_options)
        for batch in batches:
            ids, paths, dvs = (batch.column(i).to_pylist() for i in range(3))
            for file_id, path, dv in zip(ids, paths, dvs):
                rows = read_deletion_vector(storage, DeletionVectorDescriptor.from_dict(json.loads(dv)), data_file=path)
                if len(rows):
                    yield pa.record_batch(
                        [pa.array(np.full(len(rows), file_id, dtype=np.int32)), pa.array(rows.astype(np.int64))],
                        schema=DELETED_SCHEMA,
                    )

    return decode


def deleted_rows_frame(
    spark: SparkSession,
    storage: Any,
    *,
    file_ids: list[int],
    paths: list[str],
    dvs: list[DeletionVectorDescriptor],
    mode: str = "auto",
    storage_options: dict[str, Any] | None = None,
) -> tuple[DataFrame, bool]:
    """The deleted rows of the files `file_ids` and whether to broadcast them.

    Raises:
        DeletionVectorError: a DV cannot be read (driver mode; executor mode fails the job,
            which the caller reports as `SparkError`).
    """
    from pyspark.sql import functions as F

    chosen = choose_mode(mode, [d.cardinality for d in dvs])
    total = sum(d.cardinality for d in dvs)
    if chosen == "driver":
        table = decode_on_driver(storage, file_ids, paths, dvs)
        frame = spark.createDataFrame(table)
        return frame.select(F.col("__dx_file").cast("int"), F.col("__dx_row").cast("long")), total <= BROADCAST_MAX_ROWS
    descriptors = spark.createDataFrame(_descriptor_table(file_ids, paths, dvs))
    parts = max(1, min(len(dvs), spark.sparkContext.defaultParallelism * 4))
    frame = descriptors.repartition(parts).mapInArrow(
        _executor_decoder(storage.root, storage_options), "__dx_file int, __dx_row long"
    )
    return frame, total <= BROADCAST_MAX_ROWS
