"""Reading one data file into the table's logical shape (the embedded pyarrow reader).

A file's log path becomes a storage path with `resolve_data_path` (URL-decoded; relative paths
never leave the table). Columns are found by logical name, physical name or parquet field id depending on the column
mapping mode, recursively through structs, lists and maps; values are cast to the table's
types (type widening, INT96/ns timestamps, binary strings; variants rebuilt from their shredded
parts by `variant_shredding`); columns the file lacks are null;
deleted rows (deletion vectors) are dropped; partition values become constant columns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import numpy as np
import pyarrow as pa

from deltaexplore.core.log.state import TableState
from deltaexplore.core.protocol.partitions import months_interval
from deltaexplore.core.protocol.schema import (
    PARQUET_FIELD_ID,
    ArrayType,
    DataType,
    MapType,
    StructField,
    StructType,
    to_arrow_type,
)
from deltaexplore.core.scan.stats import num_records
from deltaexplore.core.scan.variant_shredding import rebuild_variant
from deltaexplore.errors import (
    DeletionVectorError,
    DeltaExploreError,
    InvalidVariantError,
    StorageError,
    UnsupportedFeatureError,
)
from deltaexplore.storage import check_relative

if TYPE_CHECKING:
    import pyarrow.parquet as pq

__all__ = [
    "constant_column",
    "count_rows",
    "open_parquet",
    "project_column",
    "read_data_file",
    "resolve_data_path",
    "row_counts",
]


def resolve_data_path(storage: Any, raw_path: str) -> str:
    """The storage path of a data/DV file from its log path (URL-decoded; relative paths must
    stay inside the table).

    Raises:
        StorageError: a relative path escapes the table root.
    """
    decoded = unquote(raw_path)
    if "://" in decoded or decoded.startswith("/") or decoded.startswith("file:"):
        return decoded
    return check_relative(decoded, storage.root)


def open_parquet(storage: Any, location: str, *, path: str) -> pq.ParquetFile:
    """Open a data file through the storage's pyarrow filesystem.

    Raises:
        StorageError: the file is missing or is not readable parquet.
    """
    import pyarrow.parquet as pq  # opening a table reads no data file

    try:
        if "://" not in location and hasattr(storage, "open_input") and storage.__class__.__name__ == "LocalStorage":
            return pq.ParquetFile(storage.open_input(location))
        fs, _ = storage.arrow_filesystem()
        return pq.ParquetFile(fs.open_input_file(location))
    except FileNotFoundError as exc:
        raise StorageError(f"data file {path} is missing (looked for {location})", path=path) from exc
    except (pa.ArrowInvalid, OSError) as exc:
        raise StorageError(f"data file {path} is not readable parquet: {exc}", path=path) from exc


def _field_id(f: pa.Field) -> int | None:
    if f.metadata and PARQUET_FIELD_ID in f.metadata:
        try:
            return int(f.metadata[PARQUET_FIELD_ID])
        except ValueError:
            return None
    return None


def find_child(fields: list[pa.Field], logical: StructField, mode: str) -> int | None:
    """Index of the file field holding `logical` (by id, physical name or name)."""
    if mode == "id":
        fid = logical.field_id
        if fid is not None:
            for i, f in enumerate(fields):
                if _field_id(f) == fid:
                    return i
        return None
    name = logical.physical_name if mode == "name" else logical.name
    for i, f in enumerate(fields):
        if f.name == name:
            return i
    if mode == "none":
        lowered = name.lower()
        for i, f in enumerate(fields):
            if f.name.lower() == lowered:
                return i
    return None


def project_column(arr: pa.Array, dtype: DataType, mode: str) -> pa.Array:
    """Reshape a column read from a file into the logical type `dtype`."""
    target = to_arrow_type(dtype)
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if isinstance(dtype, StructType):
        if not pa.types.is_struct(arr.type):
            raise StorageError(f"expected a struct column, the file has {arr.type}")
        file_fields = list(arr.type)
        children = []
        for lf in dtype.fields:
            i = find_child(file_fields, lf, mode)
            if i is None:
                children.append(pa.nulls(len(arr), to_arrow_type(lf.type)))
            else:
                children.append(project_column(arr.field(i), lf.type, mode))
        mask = arr.is_null() if arr.null_count else None
        return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)
    if isinstance(dtype, ArrayType):
        if not (pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type)):
            raise StorageError(f"expected a list column, the file has {arr.type}")
        values = project_column(arr.values, dtype.element_type, mode)
        offsets = arr.offsets
        mask = arr.is_null() if arr.null_count else None
        return pa.ListArray.from_arrays(offsets.cast(pa.int32()), values, type=target, mask=mask)
    if isinstance(dtype, MapType):
        if not pa.types.is_map(arr.type):
            raise StorageError(f"expected a map column, the file has {arr.type}")
        keys = project_column(arr.keys, dtype.key_type, mode)
        items = project_column(arr.items, dtype.value_type, mode)
        mask = arr.is_null() if arr.null_count else None
        return pa.MapArray.from_arrays(arr.offsets, keys, items, type=target, mask=mask)
    if dtype.name == "variant":
        return rebuild_variant(arr)
    return cast_primitive(arr, target)


def cast_primitive(arr: pa.Array, target: pa.DataType) -> pa.Array:
    """Cast a leaf column to the logical type (widening and physical encodings)."""
    if arr.type == target:
        return arr
    if pa.types.is_null(target):
        return pa.nulls(len(arr), target)
    if pa.types.is_interval(target) and pa.types.is_integer(arr.type):  # interval year to month: int32 months
        return months_interval(arr.cast(pa.int32()))
    if pa.types.is_duration(target) and pa.types.is_integer(arr.type):  # interval day to second: int64 micros
        return arr.cast(pa.int64()).cast(target)
    if pa.types.is_timestamp(target) and pa.types.is_timestamp(arr.type):
        if arr.type.tz is None and target.tz is not None:
            arr = arr.cast(pa.timestamp(arr.type.unit, tz="UTC"))
        elif arr.type.tz is not None and target.tz is None:
            arr = arr.cast(pa.timestamp(arr.type.unit))
        return arr.cast(target, safe=False) if arr.type.unit == "ns" else arr.cast(target)
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
        if arr.type == target:
            return arr
    try:
        return arr.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise StorageError(f"cannot read a {arr.type} column as {target}: {exc}") from exc


def constant_column(value: Any, typ: pa.DataType, n: int) -> pa.Array:
    """`n` copies of one value (from a length-1 array or a Python value)."""
    base = value if isinstance(value, pa.Array) else pa.array([value], typ)
    if n == 0:
        return base.slice(0, 0)
    return base.take(pa.array(np.zeros(n, dtype=np.int32)))


def read_data_file(
    storage: Any,
    location: str,
    *,
    path: str,
    read_fields: list[StructField],
    mode: str,
    deleted_rows: np.ndarray | None = None,
    extra_physical: list[str] = (),  # type: ignore[assignment]
    with_row_index: bool = False,
) -> tuple[dict[str, pa.Array], int, dict[str, pa.Array]]:
    """Read the `read_fields` columns of one parquet file.

    Returns:
        (logical name -> column, number of rows kept, extra physical columns by name); columns
        missing from the file are null; with `with_row_index` the extras hold `__row_index`.

    Raises:
        StorageError: missing/unreadable file or incompatible column.
    """
    pf = open_parquet(storage, location, path=path)
    try:
        file_schema = pf.schema_arrow
        file_fields = list(file_schema)
        wanted: dict[str, int] = {}
        for lf in read_fields:
            i = find_child(file_fields, lf, mode)
            if i is not None:
                wanted[lf.name] = i
        extras = [name for name in extra_physical if name in file_schema.names]
        column_names = sorted({file_fields[i].name for i in wanted.values()} | set(extras))
        n_rows = pf.metadata.num_rows
        table = pf.read(columns=column_names, use_threads=False) if column_names else None
    except DeltaExploreError:
        raise
    except (pa.ArrowInvalid, OSError, pa.ArrowNotImplementedError) as exc:
        raise StorageError(f"data file {path} cannot be read: {exc}", path=path) from exc
    keep = None
    if deleted_rows is not None and len(deleted_rows):
        if int(deleted_rows.max()) >= n_rows:
            raise DeletionVectorError(
                f"deletion vector of {path} deletes row {int(deleted_rows.max())} but the file has {n_rows} rows", path=path
            )
        mask = np.ones(n_rows, dtype=bool)
        mask[deleted_rows.astype(np.int64)] = False
        keep = pa.array(mask)
    out: dict[str, pa.Array] = {}
    kept = n_rows if keep is None else int(np.count_nonzero(keep.to_numpy(zero_copy_only=False)))
    for lf in read_fields:
        if lf.name in wanted:
            col = table.column(file_fields[wanted[lf.name]].name)  # type: ignore[union-attr]
            if keep is not None:
                col = col.filter(keep)
            try:
                out[lf.name] = project_column(col.combine_chunks(), lf.type, mode)
            except UnsupportedFeatureError as exc:
                raise UnsupportedFeatureError(
                    f"data file {path}, column {lf.name}: {exc}", feature=exc.feature, needed_by=exc.needed_by, path=path
                ) from exc
            except StorageError as exc:
                raise StorageError(f"data file {path}, column {lf.name}: {exc}", path=path) from exc
            except InvalidVariantError as exc:
                raise InvalidVariantError(f"data file {path}, column {lf.name}: {exc}", path=path) from exc
        else:
            out[lf.name] = pa.nulls(kept, to_arrow_type(lf.type))
    extra_cols: dict[str, pa.Array] = {}
    for name in extras:
        col = table.column(name).combine_chunks()  # type: ignore[union-attr]
        extra_cols[name] = col.filter(keep) if keep is not None else col
    if with_row_index:
        idx = pa.array(np.arange(n_rows, dtype=np.int64))
        extra_cols["__row_index"] = idx.filter(keep) if keep is not None else idx
    return out, kept, extra_cols


def count_rows(storage: Any, location: str, *, path: str) -> int:
    return open_parquet(storage, location, path=path).metadata.num_rows


def row_counts(snapshot: TableState, adds: pa.Table, records: pa.Array | None = None) -> np.ndarray:
    """Physical rows of each file of `adds` (numRecords from its stats, else its parquet footer;
    `records`: `num_records(adds)` when the caller parsed it already)."""
    counts = num_records(adds) if records is None else records
    if counts.null_count == 0:
        return counts.to_numpy(zero_copy_only=False).astype(np.int64)
    out = []
    storage = snapshot.storage
    for value, path in zip(counts.to_pylist(), adds.column("path").to_pylist()):
        if value is None:
            value = count_rows(storage, storage.location(resolve_data_path(storage, path)), path=path)
        out.append(value)
    return np.asarray(out, dtype=np.int64)
