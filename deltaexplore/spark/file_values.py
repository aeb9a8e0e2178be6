"""Per-file values on the rows of a Spark parquet scan, without joining on the path string.

A Spark row knows its data file only through `_metadata`. Readers need, per file, the file's
id in the plan, its partition values and (files with a DV) the bitmap of its deleted rows. A
file is recognised by one of two keys:

- **size** — `_metadata.file_size`, a long Spark keeps per file (no per-row string work), for
  every file whose size is unique among the files of the scan. The size compared is the one the
  storage reports (`actual_sizes`), not the log's, so a wrong size in the log cannot attach
  another file's values to these rows;
- **stamp** — (`_metadata.file_size`, `_metadata.file_modification_time` in ms), for local files
  when more of them have a unique (size, time) than a unique size (small files of equal size
  are common: 90 corpus tables have some; 1,909 of the 2,000 files of the planning benchmark).
  Both are what the local file system reports (`actual_stats`: Hadoop and `os.stat` truncate
  the time to the same millisecond); two longs, no string;
- **path** — `_metadata.file_path` (`paths.file_path_key`), for the other files.

and the values are attached in one of two ways:

- **literal** (size key, at most `LITERAL_MAX_FILES` files and `LITERAL_MAX_WORDS` bitmap
  words): the file's position is a balanced tree of comparisons over the sorted sizes; the
  file id, partition values and bitmaps are array literals indexed by it (Spark folds each into
  one constant): no join and no shuffle;
- **broadcast**: a small table (key, id, partition values, bitmap) broadcast-hash-joined on the
  key (a single long for sizes, two for stamps).

A row whose key matches no file fails the job (`raise_error`) instead of being dropped. The
message names the key, not the path: referencing `_metadata.file_path` anywhere in the plan
makes Spark build the path string for every row (measured: +15% on the DV benchmark).

Measured (20M rows, 16 files, `local[2]`, JVM CPU seconds, best of 5, parquet scan alone 3.3 s):
file id by the size tree 3.7 s, by a broadcast join on the size 3.9 s, on
`xxhash64(file_path)` 4.1 s, on the path string 6.2 s; one `spark.read.parquet` per file with
literal values 5.9 s (a generated class per file).
"""

from __future__ import annotations

import os
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.protocol.schema import DataType, PrimitiveType
from deltaexplore.core.scan.data_file import resolve_data_path
from deltaexplore.spark.session import is_connect
from deltaexplore.spark.types import quoted, spark_type

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = [
    "FILE_COL",
    "LITERAL_MAX_FILES",
    "LITERAL_MAX_WORDS",
    "ROW_COL",
    "FileValues",
    "actual_stats",
    "attach",
    "split_by_key",
]

FILE_COL = "__dx_file"
#: a row's index in its parquet file (`_metadata.row_index`), next to `FILE_COL` in DML scans
ROW_COL = "__dx_row"
KEY_COL = "__dx_fkey"
#: the file's modification time (ms), the second column of a stamp key
TIME_COL = "__dx_fkey_ms"
BITMAP_COL = "__dx_bitmap"
LITERAL_MAX_FILES = 64
LITERAL_MAX_WORDS = 1 << 21
#: Most files whose sizes are looked up (one stat / HEAD each); larger scans use the path key.
SIZE_LOOKUP_MAX_FILES = {"local": 200_000, "remote": 2_000}
#: "auto", or force "literal"/"broadcast"/"path" (tests exercise every way on the same tables)
STRATEGY = "auto"


def part_col(j: int) -> str:
    return f"__dx_p{j}"


def actual_stats(storage: Any, raw_paths: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(sizes, modification times in ms) of the data files as the storage reports them (-1:
    missing, unknown or not looked up). Times are given for local files only (where Hadoop and
    the storage read the same `stat`)."""

    def one(raw: str) -> tuple[int, int]:
        try:
            info = storage.head(resolve_data_path(storage, raw))
        except Exception:  # noqa: BLE001 - an unknown size only means the path key is used
            return -1, -1
        return (-1, -1) if info is None else (int(info.size), int(info.modification_time))

    local = getattr(storage, "scheme", "file") in ("file", "local")
    n = len(raw_paths)
    if n > SIZE_LOOKUP_MAX_FILES["local" if local else "remote"]:
        return np.full(n, -1, dtype=np.int64), np.full(n, -1, dtype=np.int64)
    if local or n <= 4:
        stats = [one(p) for p in raw_paths]
    else:
        with ThreadPoolExecutor(max_workers=min(32, (os.cpu_count() or 2) * 4)) as pool:
            stats = list(pool.map(one, raw_paths))
    out = np.asarray(stats, dtype=np.int64).reshape(n, 2)
    sizes, times = out[:, 0].copy(), out[:, 1].copy()
    if not local:
        times[:] = -1
    return sizes, times


def split_by_key(sizes: np.ndarray, times: np.ndarray | None = None) -> list[tuple[np.ndarray, str]]:
    """Positions of the files per key (``size``, ``stamp`` or ``path``; see the module
    docstring): a size must be known and unique, a stamp known and unique; the key that covers
    more files is used, the path for the rest."""
    if STRATEGY == "path" or len(sizes) == 0:
        return [(np.arange(len(sizes)), "path")]
    _, inverse, counts = np.unique(sizes, return_inverse=True, return_counts=True)
    unique = (counts[inverse.reshape(-1)] == 1) & (sizes >= 0)
    key = "size"
    if times is not None and STRATEGY in ("auto", "broadcast") and not unique.all():
        pairs = np.stack([sizes, times], axis=1)
        _, inverse, counts = np.unique(pairs, axis=0, return_inverse=True, return_counts=True)
        stamped = (counts[inverse.reshape(-1)] == 1) & (sizes >= 0) & (times >= 0)
        if stamped.sum() > unique.sum():
            unique, key = stamped, "stamp"
    return [(np.flatnonzero(unique), key), (np.flatnonzero(~unique), "path")]


@dataclass
class FileValues:
    """Values of the files of one scan: keys, ids, partition columns, bitmaps (aligned)."""

    ids: list[int]
    part_values: list[pa.Array] = field(default_factory=list)  # typed, one per partition field
    part_types: list[DataType] = field(default_factory=list)
    bitmaps: list[np.ndarray] | None = None
    #: bitmaps decoded on executors (`FILE_COL`, `BITMAP_COL`): joined to the broadcast table
    bitmap_frame: DataFrame | None = None
    sizes: list[int] | None = None  # size key (with `times`: stamp key)
    times: list[int] | None = None  # stamp key: modification times (ms)
    path_keys: list[str] | None = None  # path key

    def bitmap_words(self) -> int:
        return sum(len(b) for b in self.bitmaps) if self.bitmaps is not None else 0


def attach(spark: SparkSession, df: DataFrame, values: FileValues) -> DataFrame:
    """`df` (a scan selecting `KEY_COL`, and `TIME_COL` for a stamp key) with `FILE_COL`, the
    partition columns and `BITMAP_COL` instead of the key.

    Raises (in the job): a row whose key matches no file of `values`.
    """
    literal = (
        values.sizes is not None
        and values.times is None
        and STRATEGY in ("auto", "literal")
        and len(values.ids) <= (LITERAL_MAX_FILES if STRATEGY == "auto" else 1 << 30)
        and values.bitmap_words() <= LITERAL_MAX_WORDS
        and values.bitmap_frame is None
        and (values.bitmaps is None or _jvm_of(spark) is not None)
    )
    if literal:
        return _attach_literal(spark, df, values)
    return _attach_broadcast(spark, df, values)


def _missing_text(what: str) -> str:
    return f"deltaexplore: rows of a data file whose {what} matches no file of the scan plan: "


def _missing(what: str, value: Column) -> Column:
    from pyspark.sql import functions as F

    return F.raise_error(F.concat(F.lit(_missing_text(what)), value.cast("string")))


def _tree(key: str, sorted_keys: list[int], lo: int, hi: int) -> str:
    """SQL for the position in `sorted_keys` of column `key` (null when absent), by O(log n)
    comparisons (SQL text: one expression for the JVM to parse instead of a py4j call per node)."""
    if hi - lo == 1:
        return f"CASE WHEN `{key}` = {sorted_keys[lo]} THEN {lo} END"
    mid = (lo + hi) // 2
    below, above = _tree(key, sorted_keys, lo, mid), _tree(key, sorted_keys, mid, hi)
    return f"CASE WHEN `{key}` < {sorted_keys[mid]} THEN {below} ELSE {above} END"


def _attach_literal(spark: SparkSession, df: DataFrame, values: FileValues) -> DataFrame:
    from pyspark.sql import functions as F

    assert values.sizes is not None
    order = np.argsort(np.asarray(values.sizes, dtype=np.int64), kind="stable")
    sorted_sizes = [int(values.sizes[i]) for i in order]
    # the file's position as SQL text, repeated where used (Spark evaluates it once per row;
    # one projection instead of withColumn + select + drop: each planned step costs ~10-30 ms)
    missing = f"CAST(raise_error(concat('{_missing_text('size (bytes)')}', CAST(`{KEY_COL}` AS STRING))) AS INT)"
    pos = f"coalesce({_tree(KEY_COL, sorted_sizes, 0, len(order))}, {missing})"
    ids = ", ".join(str(int(values.ids[i])) for i in order)
    cols = [F.expr(f"get(array({ids}), {pos})").alias(FILE_COL)]
    for j, (arr, typ) in enumerate(zip(values.part_values, values.part_types)):
        target = spark_type(typ)
        lits = [_value_literal(arr, int(i), typ).cast(target) for i in order]
        cols.append(F.get(F.array(*lits), F.expr(pos)).alias(part_col(j)))
    if values.bitmaps is not None:
        bitmaps = _long_array_literals(spark, [values.bitmaps[i] for i in order])
        cols.append(F.get(F.array(*bitmaps), F.expr(pos)).alias(BITMAP_COL))
    kept = [F.expr(quoted(c)) for c in df.columns if c != KEY_COL]
    return df.select(*kept, *cols)


def _attach_broadcast(spark: SparkSession, df: DataFrame, values: FileValues) -> DataFrame:
    from pyspark.sql import functions as F

    n = len(values.ids)
    table: dict[str, pa.Array] = {}
    keys = [KEY_COL]
    if values.sizes is not None:
        table[KEY_COL] = pa.array(values.sizes, pa.int64())
        if values.times is not None:
            table[TIME_COL] = pa.array(values.times, pa.int64())
            keys.append(TIME_COL)
    else:
        assert values.path_keys is not None
        table[KEY_COL] = pa.array(values.path_keys, pa.string())
    table[FILE_COL] = pa.array(values.ids, pa.int32())
    months = []  # interval year to month: sent as int32 months (Arrow's month_day_nano is not one)
    for j, arr in enumerate(values.part_values):
        if pa.types.is_interval(arr.type):
            arr = pa.array([None if v is None else v.months for v in arr.to_pylist()], pa.int32())
            months.append(j)
        table[part_col(j)] = arr
    if values.bitmaps is not None:
        lengths = np.asarray([len(b) for b in values.bitmaps], dtype=np.int32)
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
        flat = np.concatenate(values.bitmaps) if n else np.zeros(0, np.int64)
        table[BITMAP_COL] = pa.ListArray.from_arrays(pa.array(offsets), pa.array(flat, pa.int64()))
    small = spark.createDataFrame(pa.table(table))
    if values.bitmap_frame is not None:  # one small table: the per-file values and the bitmaps
        small = small.join(values.bitmap_frame, on=FILE_COL, how="left")
    if months:
        small = small.withColumns({part_col(j): F.make_ym_interval(F.lit(0), F.col(part_col(j))) for j in months})
    df = df.join(F.broadcast(small), on=keys, how="left")
    what = "size (bytes)" if values.sizes is not None else "path"
    # withColumn + drop, not a select of `df.columns`: asking a Connect session for columns
    # analyzes the plan on the server, which lists the scan's files there
    return df.withColumn(FILE_COL, F.coalesce(F.col(FILE_COL), _missing(what, F.col(KEY_COL)).cast("int"))).drop(*keys)


def _jvm_of(spark: SparkSession) -> Any:
    """The session's py4j JVM view, or None (Spark Connect: no JVM in this process)."""
    return None if is_connect(spark) else getattr(spark, "_jvm", None)


def _long_array_literals(spark: SparkSession, arrays: list[np.ndarray], *, primitive: bool = True) -> list[Column]:
    """array<bigint> literals of `arrays`: all shipped to the JVM as one byte buffer, then cut
    there (a few py4j calls per array instead of one per element).

    Each literal holds an `UnsafeArrayData` (a primitive long array) where the JVM API allows:
    `functions.lit` would box every element, and the plan a task deserializes carries the
    literals (boxed: +35% on a 20M-row DV read with 300k bitmap words; primitive: nothing)."""
    jvm = _jvm_of(spark)
    lengths = [len(a) for a in arrays]
    every = _ship_longs(spark, np.concatenate([np.asarray(a, dtype="<i8") for a in arrays] or [np.zeros(0, "<i8")]))
    copy_range = jvm.java.util.Arrays.copyOfRange
    try:
        from pyspark.sql.classic.column import Column as ClassicColumn
    except ImportError:  # pragma: no cover - pyspark < 4
        from pyspark.sql.column import Column as ClassicColumn  # type: ignore[assignment]
    try:
        if not primitive:
            raise LookupError("boxed literals asked for")
        catalyst = jvm.org.apache.spark.sql.catalyst.expressions
        to_column = jvm.org.apache.spark.sql.classic.ExpressionUtils.column
        make_literal, unboxed = catalyst.Literal, catalyst.UnsafeArrayData.fromPrimitiveArray
        array_type = jvm.org.apache.spark.sql.types.ArrayType(jvm.org.apache.spark.sql.types.DataTypes.LongType, False)

        def literal(values: Any) -> Any:
            return to_column(make_literal(unboxed(values), array_type))

        literal(copy_range(every, 0, 0))
    except Exception:  # noqa: BLE001 - another Spark version: boxed literals (slower, same result)
        literal = jvm.org.apache.spark.sql.functions.lit
    out: list[Column] = []
    start = 0
    for n in lengths:
        out.append(ClassicColumn(literal(copy_range(every, start, start + n))))
        start += n
    return out


def _ship_longs(spark: SparkSession, values: np.ndarray) -> Any:
    """`values` (little-endian int64) as a JVM long[]. Through a file in PySpark's temporary
    directory, mapped by the JVM, as PySpark itself ships Arrow data (py4j sends bytes as
    base64 text: 50-100 ms for 2.5 MB, the file 10 ms); as py4j bytes if that fails."""
    jvm = _jvm_of(spark)
    gateway: Any = spark.sparkContext._gateway
    every = gateway.new_array(jvm.long, len(values))
    if not len(values):
        return every
    nio = jvm.java.nio
    data = values.tobytes()
    try:
        folder = getattr(spark.sparkContext, "_temp_dir", None)
        with tempfile.NamedTemporaryFile(dir=folder if folder and os.path.isdir(folder) else None, suffix=".longs") as fh:
            fh.write(data)
            fh.flush()
            handle = jvm.java.io.RandomAccessFile(fh.name, "r")
            try:
                mapped = handle.getChannel().map(nio.channels.FileChannel.MapMode.READ_ONLY, 0, len(data))
                mapped.order(nio.ByteOrder.LITTLE_ENDIAN).asLongBuffer().get(every)
            finally:
                handle.close()
        return every
    except Exception:  # noqa: BLE001 - no shared file system with the JVM: send the bytes
        nio.ByteBuffer.wrap(bytearray(data)).order(nio.ByteOrder.LITTLE_ENDIAN).asLongBuffer().get(every)
        return every


def _value_literal(arr: pa.Array, i: int, typ: DataType) -> Column:
    """Element `i` of a typed partition column as an exact Spark literal."""
    from pyspark.sql import functions as F

    if not arr[i].is_valid:
        return F.lit(None).cast(spark_type(typ))
    value = arr[i]
    t = arr.type
    name = typ.name if isinstance(typ, PrimitiveType) else ""
    if pa.types.is_timestamp(t):
        if name == "timestamp_ntz":
            return F.lit(value.as_py().isoformat(sep=" ")).cast("timestamp_ntz")
        micros = pc.cast(arr.slice(i, 1).cast(pa.timestamp("us", tz=t.tz)), pa.int64())[0].as_py()
        return F.timestamp_micros(F.lit(micros))
    if pa.types.is_date(t):
        return F.date_from_unix_date(F.lit(pc.cast(arr.slice(i, 1).cast(pa.date32()), pa.int32())[0].as_py()))
    if pa.types.is_decimal(t):
        return F.lit(format(value.as_py(), "f"))
    if pa.types.is_interval(t):  # interval year to month (months only)
        return F.make_ym_interval(F.lit(0), F.lit(value.as_py().months))
    if pa.types.is_duration(t):  # interval day to second, exact to the microsecond
        micros = pc.cast(arr.slice(i, 1).cast(pa.duration("us")), pa.int64())[0].as_py()
        return F.expr(f"CAST(CAST({micros} AS DECIMAL(38, 0)) / 1000000 AS INTERVAL SECOND)")
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return F.lit(bytearray(value.as_py()))
    if pa.types.is_floating(t):
        return F.lit(float(value.as_py()))
    return F.lit(value.as_py())
