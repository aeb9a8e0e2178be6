"""Deletion vectors for Spark reads: bitmaps tested per row, or deleted keys to anti-join.

Decoding (`choose_mode`, same result either way):

- ``driver``: the driver decodes every DV (threads, `core.deletion_vectors.read_deletion_vector`);
- ``executor``: a DataFrame of DV descriptors is spread over the executors, each decodes its
  share with the same core function (`mapInArrow`); nothing passes through the driver, so it
  scales to any number of files and deleted rows (executors need deltaexplore installed).

``auto`` picks ``driver`` up to `DRIVER_MAX_ROWS` deleted rows and `DRIVER_MAX_FILES` files.

Applying (`DeletedRows`): driver-decoded DVs become one bitmap per file (`bitmap_words`: bit
``row & 63`` of 64-bit word ``row >> 6``; words up to the file's last deleted row), tested with
one array `get` per row (`keep_row`) — no join, no shuffle. Measured on 20M rows / 16 files /
2M deleted (local[2]), the former left anti join on (file id, row index) cost 5x the parquet
scan; the bitmap test costs about as much as reading `_metadata.row_index` itself. When the
bitmaps of all files would pass `BITMAP_MAX_WORDS`, or the DVs are decoded on executors, the
deleted rows are instead one long key per row (``file << 40 | row``) for a left anti join,
broadcast up to `BROADCAST_MAX_ROWS` (hash join on a single long).
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from deltaexplore.core.protocol.deletion_vectors import DeletionVectorDescriptor, read_deletion_vector
from deltaexplore.errors import SparkError
from deltaexplore.spark.types import quoted
from deltaexplore.storage import storage_for  # runs in the Spark task: imported there

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = [
    "BITMAP_MAX_WORDS",
    "DRIVER_MAX_FILES",
    "DRIVER_MAX_ROWS",
    "DeletedRows",
    "bitmap_words",
    "choose_mode",
    "deleted_rows",
    "keep_row",
]

DRIVER_MAX_ROWS = 20_000_000
DRIVER_MAX_FILES = 20_000
#: Bitmap words (8 bytes each) of all files together; more → anti join on deleted keys.
BITMAP_MAX_WORDS = 1 << 24
BROADCAST_MAX_ROWS = 4_000_000
KEY_COL = "__dx_key"
FILE_SHIFT = 40  # row indexes below 2**40 per file, file ids below 2**23

KEY_SCHEMA = pa.schema([pa.field(KEY_COL, pa.int64(), False)])


def choose_mode(mode: str, cardinalities: list[int]) -> str:
    if mode in ("driver", "executor"):
        return mode
    if mode != "auto":
        raise SparkError(f"dv_mode must be 'auto', 'driver' or 'executor', got {mode!r}")
    if sum(cardinalities) <= DRIVER_MAX_ROWS and len(cardinalities) <= DRIVER_MAX_FILES:
        return "driver"
    return "executor"


def decode_on_driver(storage: Any, paths: list[str], dvs: list[DeletionVectorDescriptor]) -> list[np.ndarray]:
    """Deleted row indexes (int64, sorted) of each file."""

    def one(i: int) -> np.ndarray:
        return np.asarray(read_deletion_vector(storage, dvs[i], data_file=paths[i]), dtype=np.int64)

    if len(dvs) <= 1:
        return [one(i) for i in range(len(dvs))]
    with ThreadPoolExecutor(max_workers=min(8, len(dvs))) as pool:
        return list(pool.map(one, range(len(dvs))))


def bitmap_words(rows: np.ndarray) -> np.ndarray:
    """The bitmap of deleted `rows` as int64 words (bit ``r & 63`` of word ``r >> 6``)."""
    if len(rows) == 0:
        return np.zeros(0, dtype=np.int64)
    rows = np.asarray(rows, dtype=np.int64)
    bits = np.zeros((int(rows.max()) // 64 + 1) * 64, dtype=bool)
    bits[rows] = True
    # little-endian bit order and words: bit j of byte k is row 8k + j, so bit r & 63 of word r >> 6
    return np.packbits(bits, bitorder="little").view("<i8").astype(np.int64)


def keep_row(bitmap: str, row_index: str) -> Column:
    """True unless column `row_index` is set in column `bitmap` (an array<bigint>; null or
    short: kept). SQL text: one expression for the JVM to parse."""
    from pyspark.sql import functions as F

    b, r = quoted(bitmap), quoted(row_index)
    return F.expr(f"coalesce(bit_get(get({b}, CAST({r} >> 6 AS INT)), CAST({r} & 63 AS INT)), 0) = 0")


def deleted_key(file_id: Column, row_index: Column) -> Column:
    from pyspark.sql import functions as F

    return F.shiftleft(file_id.cast("long"), FILE_SHIFT).bitwiseOR(row_index)


@dataclass
class DeletedRows:
    """How a scan drops deleted rows: per-file bitmaps, or a frame of deleted keys."""

    bitmaps: list[np.ndarray] | None = None  # aligned with the DV files given to `deleted_rows`
    keys: DataFrame | None = None  # one column `KEY_COL`
    broadcast: bool = False


def _executor_decoder(root: str, storage_options: dict[str, Any] | None) -> Any:
    def decode(batches: Any) -> Any:
        storage = storage_for(root, storage_options)
        for batch in batches:
            ids, paths, dvs = (batch.column(i).to_pylist() for i in range(3))
            for file_id, path, dv in zip(ids, paths, dvs):
                rows = read_deletion_vector(storage, DeletionVectorDescriptor.from_dict(json.loads(dv)), data_file=path)
                if len(rows):
                    keys = (np.int64(file_id) << FILE_SHIFT) | np.asarray(rows, dtype=np.int64)
                    yield pa.record_batch([pa.array(keys, pa.int64())], schema=KEY_SCHEMA)

    return decode


def deleted_rows(
    spark: SparkSession,
    storage: Any,
    *,
    file_ids: list[int],
    paths: list[str],
    dvs: list[DeletionVectorDescriptor],
    mode: str = "auto",
    storage_options: dict[str, Any] | None = None,
) -> DeletedRows:
    """The deleted rows of the files `file_ids` (see the module docstring).

    Raises:
        DeletionVectorError: a DV cannot be read (driver mode; executor mode fails the job,
            which the caller reports as `SparkError`).
    """
    total = sum(d.cardinality for d in dvs)
    chosen = choose_mode(mode, [d.cardinality for d in dvs])
    if chosen == "driver":
        rows = decode_on_driver(storage, paths, dvs)
        words = sum(int(r.max()) // 64 + 1 for r in rows if len(r))
        if words <= BITMAP_MAX_WORDS:
            return DeletedRows(bitmaps=[bitmap_words(r) for r in rows])
        ids = np.repeat(np.asarray(file_ids, dtype=np.int64), [len(r) for r in rows])
        keys = (ids << FILE_SHIFT) | (np.concatenate(rows) if rows else np.zeros(0, np.int64))
        frame = spark.createDataFrame(pa.table([pa.array(keys, pa.int64())], schema=KEY_SCHEMA))
        return DeletedRows(keys=frame, broadcast=total <= BROADCAST_MAX_ROWS)
    descriptors = spark.createDataFrame(
        pa.table(
            {
                "file": pa.array(file_ids, pa.int64()),
                "path": pa.array(paths, pa.string()),
                "dv": pa.array([json.dumps(d.to_dict()) for d in dvs], pa.string()),
            }
        )
    )
    parts = max(1, min(len(dvs), spark.sparkContext.defaultParallelism * 4))
    frame = descriptors.repartition(parts).mapInArrow(_executor_decoder(storage.root, storage_options), f"{KEY_COL} long")
    return DeletedRows(keys=frame, broadcast=total <= BROADCAST_MAX_ROWS)
