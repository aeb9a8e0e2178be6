"""Writing data files: Arrow rows → parquet files in the table, and the add actions for them.

Files are named `part-<uuid>.c000.zstd.parquet` (change data files `cdc-<uuid>...` under
`_change_data/`), in Hive-style partition directories (`col=value/`, values escaped as Spark
does, nulls as `__HIVE_DEFAULT_PARTITION__`). Under column mapping data files go to random
two-character directories instead, as the reference implementation does (engines must not
infer partition values from such paths); columns are then written by physical name with parquet
field ids. Timestamps are written as UTC microseconds. Every file is created with put-if-absent
and is never overwritten.

Statistics (numRecords, minValues, maxValues, nullCount, tightBounds) come from the written
file's parquet footer (`stats_from_footer`, also usable for files written by another engine),
for the columns the table asks for (`delta.dataSkippingNumIndexedCols`, default 32, or
`delta.dataSkippingStatsColumns`). Strings are truncated to 32 characters (the max bound is
rounded up), timestamps to milliseconds (min down, max up), so bounds stay valid.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
import time
import uuid
from collections.abc import Sequence
from decimal import Decimal
from typing import Any
from urllib.parse import quote

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from deltaexplore.core.protocol.actions import ADD_FIELDS, CDC_FIELDS, Metadata, Protocol
from deltaexplore.core.protocol.partitions import HIVE_NULL, serialize_partition_value
from deltaexplore.core.protocol.schema import StructType, to_arrow_schema
from deltaexplore.core.scan.stats_columns import StatsColumn, stats_columns
from deltaexplore.errors import StorageError, WriteRefusedError
from deltaexplore.storage import Storage

__all__ = [
    "DEFAULT_TARGET_FILE_SIZE",
    "hive_escape",
    "stats_from_footer",
    "stats_from_parquet_file",
    "write_data_files",
    "write_table_files",
]

DEFAULT_TARGET_FILE_SIZE = 128 * 1024 * 1024
STRING_PREFIX = 32
#: characters a partition value written here may not hold (C0 controls and DEL)
_CONTROL = re.compile("[\x00-\x1f\x7f]")
_ESCAPE = set("\"#%'*/:=?\\{[]^") | {chr(c) for c in range(0x20)} | {"\x7f"}


def hive_escape(text: str) -> str:
    """Escape a partition directory name component as Spark's `escapePathName` does."""
    return "".join(f"%{ord(c):02X}" if c in _ESCAPE else c for c in text)


# -- statistics ----------------------------------------------------------------------------------


class _Raw(str):
    """A JSON number kept as text (decimals)."""


def _json(obj: Any) -> str:
    if isinstance(obj, dict):
        return "{" + ",".join(f"{json.dumps(k)}:{_json(v)}" for k, v in obj.items()) + "}"
    if isinstance(obj, _Raw):
        return str(obj)
    return json.dumps(obj, allow_nan=False)


def _truncate_max(text: str) -> str | None:
    """A string ≥ every string starting with `text[:STRING_PREFIX]` (None if there is none)."""
    if len(text) <= STRING_PREFIX:
        return text
    prefix = text[:STRING_PREFIX]
    for i in range(len(prefix) - 1, -1, -1):
        code = ord(prefix[i]) + 1
        if 0xD800 <= code <= 0xDFFF:
            code = 0xE000
        if code <= 0x10FFFF:
            return prefix[:i] + chr(code)
    return None


def _stat_value(value: Any, col: StatsColumn, *, is_max: bool) -> Any:
    """The JSON value of a min/max from a parquet footer (None: do not record it)."""
    name = col.field.type.name
    if value is None or name in ("boolean", "binary"):
        return None
    if isinstance(value, bytes):
        if name != "string":
            return None
        try:
            value = value.decode("utf-8")
        except UnicodeDecodeError:
            return None
    if isinstance(value, str):
        if name not in ("string",) and not name.startswith(("char", "varchar")):
            return None
        return _truncate_max(value) if is_max else value[:STRING_PREFIX]
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.UTC).replace(tzinfo=None)
        micros = value.microsecond
        value = value.replace(microsecond=(micros // 1000) * 1000)
        if is_max and micros % 1000:
            value += dt.timedelta(milliseconds=1)
        text = value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}"
        return text + "Z" if name == "timestamp" else text
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return _Raw(format(value, "f"))
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, (int, np.integer)):
        return int(value)
    return None


def _leaf_paths(schema: pa.Schema) -> list[tuple[tuple[str, ...], bool]]:
    """(path, inside a list or map) of every parquet leaf column, in file order."""
    out: list[tuple[tuple[str, ...], bool]] = []

    def visit(t: pa.DataType, path: tuple[str, ...], nested: bool) -> None:
        if pa.types.is_struct(t):
            for f in t:
                visit(f.type, (*path, f.name), nested)
        elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
            visit(t.value_type, (*path, "list", "element"), True)
        elif pa.types.is_map(t):
            visit(t.key_type, (*path, "key_value", "key"), True)
            visit(t.item_type, (*path, "key_value", "value"), True)
        else:
            out.append((path, nested))

    for f in schema:
        visit(f.type, (f.name,), False)
    return out


def _indexed_columns(schema: StructType, mode: str, partition_columns: Sequence[str], conf: dict[str, str]) -> list[StatsColumn]:
    cols = stats_columns(schema, mode, list(partition_columns))
    chosen = conf.get("delta.dataSkippingStatsColumns")
    if chosen:
        names = {n.strip().strip("`").lower() for n in chosen.split(",") if n.strip()}
        return [c for c in cols if c.name.lower() in names or c.logical[0].lower() in names]
    try:
        limit = int(conf.get("delta.dataSkippingNumIndexedCols", "32"))
    except ValueError:
        limit = 32
    return cols if limit < 0 else cols[:limit]


def stats_from_footer(
    metadata: pq.FileMetaData,
    schema: StructType,
    *,
    mode: str = "none",
    partition_columns: Sequence[str] = (),
    configuration: dict[str, str] | None = None,
) -> str:
    """The Delta stats JSON of a parquet file from its footer.

    Args:
        metadata: the file's footer (`pq.read_metadata`).
        schema: the table schema (logical); the file must use physical names under `mode`.
    """
    cols = _indexed_columns(schema, mode, partition_columns, configuration or {})
    leaves = _leaf_paths(metadata.schema.to_arrow_schema())
    index = {path: i for i, (path, nested) in enumerate(leaves) if not nested}
    num_rows = metadata.num_rows
    mins: dict[str, Any] = {}
    maxs: dict[str, Any] = {}
    nulls: dict[str, Any] = {}
    for col in cols:
        i = index.get(col.physical)
        if i is None:
            # a column the file lacks: every value is null
            _put(nulls, col.physical, num_rows)
            continue
        null_count, lo, hi, known = 0, None, None, True
        for rg in range(metadata.num_row_groups):
            chunk = metadata.row_group(rg).column(i)
            st = chunk.statistics
            if st is None or not st.has_null_count:
                known = False
                break
            null_count += st.null_count
            rows = metadata.row_group(rg).num_rows
            if st.null_count == rows:
                continue
            if not st.has_min_max:
                lo = hi = None
                known = False
                break
            lo = st.min if lo is None or st.min < lo else lo
            hi = st.max if hi is None or st.max > hi else hi
        if not known:
            continue
        _put(nulls, col.physical, null_count)
        lo_v = _stat_value(lo, col, is_max=False)
        hi_v = _stat_value(hi, col, is_max=True)
        if lo_v is not None and hi_v is not None:
            _put(mins, col.physical, lo_v)
            _put(maxs, col.physical, hi_v)
    return _json({"numRecords": num_rows, "minValues": mins, "maxValues": maxs, "nullCount": nulls, "tightBounds": True})


def _put(tree: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    node = tree
    for part in path[:-1]:
        node = node.setdefault(part, {})
    node[path[-1]] = value


def stats_from_parquet_file(
    storage: Storage,
    path: str,
    schema: StructType,
    *,
    mode: str = "none",
    partition_columns: Sequence[str] = (),
    configuration: dict[str, str] | None = None,
) -> tuple[str, int]:
    """(stats JSON, file size) of a data file already in the table (read from its footer).

    Raises:
        StorageError: the file is missing or not parquet.
    """
    fs, _ = storage.arrow_filesystem()
    location = storage.location(path)
    try:
        with fs.open_input_file(location) as fh:
            size = fh.size()
            md = pq.read_metadata(fh)
    except FileNotFoundError as exc:
        raise StorageError(f"data file {path} is missing", path=path) from exc
    except (pa.ArrowInvalid, OSError) as exc:
        raise StorageError(f"data file {path} is not readable parquet: {exc}", path=path) from exc
    stats = stats_from_footer(md, schema, mode=mode, partition_columns=partition_columns, configuration=configuration)
    return stats, size


# -- writing --------------------------------------------------------------------------------------


def _physical(data: pa.Table, schema: StructType, mode: str) -> tuple[pa.Table, pa.Schema]:
    """Data columns under their physical names (with field ids) as the file stores them."""
    target = to_arrow_schema(schema, physical=mode != "none")
    arrays = []
    for f, target_field in zip(schema.fields, target):
        col = data.column(f.name).combine_chunks()
        if col.type != target_field.type:
            try:
                col = col.view(target_field.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
                raise WriteRefusedError(f"column {f.name!r}: data type {col.type} does not match {target_field.type}") from exc
        arrays.append(col)
    schema_out = pa.schema([pa.field(t.name, t.type, nullable=True, metadata=t.metadata) for t in target])
    return pa.Table.from_arrays(arrays, schema=schema_out), schema_out


def _groups(data: pa.Table, partition_columns: Sequence[str]) -> list[tuple[list[Any], np.ndarray | None]]:
    """(partition values, row indices) per partition; one group without partitions.

    Vectorized: each key column is dictionary-encoded (nulls get their own code), the codes are
    combined into one group id, and a stable argsort splits the rows.
    """
    if not partition_columns:
        return [([], None)]
    n = data.num_rows
    if n == 0:
        return []
    group = np.zeros(n, dtype=np.int64)
    for c in partition_columns:
        enc = pc.dictionary_encode(data.column(c).combine_chunks(), null_encoding="encode")
        codes = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        _, group = np.unique(group * (len(enc.dictionary) + 1) + codes, return_inverse=True)
        group = group.astype(np.int64)
    order = np.argsort(group, kind="stable")
    bounds = np.flatnonzero(np.diff(group[order])) + 1
    pieces = np.split(order, bounds)
    firsts = pa.array([int(p[0]) for p in pieces], pa.int64())
    key_values = data.select(list(partition_columns)).take(firsts).to_pylist()
    return [([kv[c] for c in partition_columns], idx) for kv, idx in zip(key_values, pieces)]


def write_data_files(
    storage: Storage,
    data: pa.Table,
    *,
    schema: StructType,
    partition_columns: Sequence[str] = (),
    mode: str = "none",
    configuration: dict[str, str] | None = None,
    target_file_size: int = DEFAULT_TARGET_FILE_SIZE,
    max_rows_per_file: int | None = None,
    data_change: bool = True,
    kind: str = "add",
    extra_columns: Sequence[str] = (),
    existing_partitions: bool = False,
) -> pa.Table:
    """Write rows (logical columns, already conformed to `schema`) as parquet data files.

    Args:
        storage: the table's storage (files are created under its root).
        data: the rows; partition columns included.
        schema: the table schema (logical).
        partition_columns: the table's partition columns.
        mode: column mapping mode ('none', 'name', 'id').
        configuration: table properties (stats columns).
        target_file_size: bytes after which a new file is started.
        max_rows_per_file: optional cap on rows per file.
        data_change: the `dataChange` flag of the returned adds.
        kind: 'add' (data files) or 'cdc' (change data files under `_change_data/`, with a
            `_change_type` column and no stats).
        extra_columns: columns of `data` outside the schema written as is (e.g. materialized
            row tracking columns, `_change_type`).
        existing_partitions: the partition values come from the table's own files (a rewrite:
            OPTIMIZE, DELETE, an UPDATE that sets no partition column), so values another
            writer gave control characters are kept (escaped) instead of refused.

    Returns:
        One action per file written (`ADD_FIELDS` or `CDC_FIELDS` schema).
    """
    if kind not in ("add", "cdc"):
        raise WriteRefusedError(f"kind must be 'add' or 'cdc', got {kind!r}")
    conf = configuration or {}
    parts = list(partition_columns)
    data_schema = StructType(tuple(f for f in schema.fields if f.name not in parts))
    extras = list(extra_columns) + (["_change_type"] if kind == "cdc" and "_change_type" not in extra_columns else [])
    for name in extras:
        if name not in data.column_names:
            raise WriteRefusedError(f"column {name!r} is missing from the data to write")
    part_fields = [schema.field(c) for c in parts]
    rows: list[dict[str, Any]] = []
    now = int(time.time() * 1000)
    for values, idx in _groups(data, parts):
        chunk = data if idx is None else data.take(pa.array(idx, pa.int64()))
        physical, _ = _physical(chunk, data_schema, mode)
        for name in extras:
            physical = physical.append_column(name, chunk.column(name))
        part_map: list[tuple[str, str | None]] = []
        dirs = []
        for f, value in zip(part_fields, values):
            key = f.physical_name if mode != "none" else f.name
            text = serialize_partition_value(value, f.type)
            bad = _CONTROL.search(text) if text is not None and not existing_partitions else None
            if bad is not None:
                raise WriteRefusedError(
                    f"partition column {f.name!r}: value {text!r} holds the control character U+{ord(bad.group()):04X}: "
                    "partition values must be printable text"
                )
            part_map.append((key, text))
            dirs.append(f"{hive_escape(key)}={HIVE_NULL if text is None or text == '' else hive_escape(text)}")
        if mode != "none" and kind == "add":
            # As the reference implementation does under column mapping: random 2-character
            # directories instead of partition directories (engines infer nothing from them).
            dirs = [uuid.uuid4().hex[:2]]
        base = "/".join(([] if kind == "add" else ["_change_data"]) + dirs)
        for rel, size, md in _write_rolling(storage, physical, base, kind, target_file_size, max_rows_per_file):
            row: dict[str, Any] = {
                "path": quote(rel, safe="/="),
                "partitionValues": part_map,
                "size": size,
                "dataChange": data_change if kind == "add" else False,
            }
            if kind == "add":
                row["modificationTime"] = now
                row["stats"] = stats_from_footer(md, schema, mode=mode, partition_columns=parts, configuration=conf)
            rows.append(row)
    fields = ADD_FIELDS if kind == "add" else CDC_FIELDS
    return pa.table({f.name: pa.array([r.get(f.name) for r in rows], f.type) for f in fields})


def _write_rolling(
    storage: Storage, table: pa.Table, base: str, kind: str, target: int, max_rows: int | None
) -> list[tuple[str, int, pq.FileMetaData]]:
    """Write `table` into as many files as the target size needs."""
    out: list[tuple[str, int, pq.FileMetaData]] = []
    if table.num_rows == 0:
        return out
    per_row = max(1, table.nbytes // max(1, table.num_rows))
    chunk_rows = int(max(1024, min(1 << 20, target // (4 * per_row))))
    if max_rows is not None:
        chunk_rows = max(1, min(chunk_rows, max_rows))
    start = 0
    prefix = "part" if kind == "add" else "cdc"
    while start < table.num_rows:
        sink = pa.BufferOutputStream()
        writer = pq.ParquetWriter(sink, table.schema, compression="zstd", write_statistics=True)
        rows_in_file = 0
        while start < table.num_rows:
            take = chunk_rows if max_rows is None else min(chunk_rows, max_rows - rows_in_file)
            writer.write_table(table.slice(start, take), row_group_size=take)
            start += take
            rows_in_file += take
            if sink.tell() >= target or (max_rows is not None and rows_in_file >= max_rows):
                break
        writer.close()
        data = sink.getvalue()
        name = f"{prefix}-{uuid.uuid4()}.c000.zstd.parquet"
        rel = f"{base}/{name}" if base else name
        try:
            created = storage.put_if_absent(rel, data.to_pybytes())
        except OSError as exc:
            raise StorageError(f"cannot create data file {rel} under {storage.root}: {exc}", path=rel) from exc
        if not created:
            raise StorageError(f"data file {rel} already exists: refusing to overwrite it", path=rel)
        out.append((rel, len(data), pq.read_metadata(pa.BufferReader(data))))
    return out


def write_table_files(
    storage: Storage,
    data: pa.Table,
    protocol: Protocol,
    metadata: Metadata,
    **kwargs: Any,
) -> pa.Table:
    """`write_data_files` with the schema, partitioning, column mapping and properties of a
    table's metadata."""
    return write_data_files(
        storage,
        data,
        schema=metadata.schema,
        partition_columns=metadata.partition_columns,
        mode=metadata.column_mapping_mode(protocol),
        configuration=metadata.configuration,
        **kwargs,
    )
