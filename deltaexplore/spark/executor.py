"""What Spark runs in its Python workers for deltaexplore, needing only pyarrow and numpy there.

Executors often do not have deltaexplore installed (Spark Connect servers, managed clusters), so
the tasks here import nothing of deltaexplore when they run: this module and the DV byte
format (`core.protocol.dv_format`) are pickled *by value* (`ship` registers both with pyspark's
cloudpickle), and every other import is the standard library, numpy or pyarrow. What they do:

- `dv_writer`: (file id, row index) pairs, sorted, become one new DV per file — the union with
  the file's current DV — written as one DV file per task; the task returns one small row per
  file (descriptor fields and counts): the driver never sees a row index (DELETE, UPDATE and
  MERGE with deletion vectors);
- `dv_bitmaps`: DV descriptors carried in the task become one bitmap per file (reads in
  executor mode);
- `dv_rows`: DV descriptors become deleted row indexes, optionally minus a second DV's rows
  (reads of huge DVs in executor mode, the change data feed's pieces);
- `path_deleter`: table-relative paths are deleted (VACUUM of many files);
- `variant_structs`: Spark's VARIANT values (read natively, shredded files rebuilt by Spark's
  reader) become the core's `struct<metadata, value>`.

Files are reached through fsspec when the executor has it (the same options as the driver's
`Storage`), else through `pyarrow.fs` (local, s3, gs, abfs); table-relative paths only: nothing
is written or deleted outside the table root. Failures raise `ExecutorTaskError` whose text
names the file, which the driver reports as a `SparkError`.
"""

from __future__ import annotations

import json
import os
import posixpath
import sys
import uuid
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import unquote, urlparse

import numpy as np
import pyarrow as pa
from pyarrow import fs as pafs

from deltaexplore.core.protocol import dv_format
from deltaexplore.core.protocol.dv_format import (
    decode_bitmap_rows,
    dv_file_bytes,
    encode_bitmap_rows,
    read_dv_entry,
    relative_dv_name,
    sorted_unique,
    z85_decode,
    z85_encode,
)

__all__ = [
    "DV_BITMAPS_SCHEMA",
    "DV_ROWS_SCHEMA",
    "DV_WRITTEN_SCHEMA",
    "ExecutorTaskError",
    "TaskFiles",
    "bitmap_words",
    "dv_bitmaps",
    "dv_rows",
    "dv_writer",
    "path_deleter",
    "ship",
    "variant_structs",
]

#: what `dv_writer` returns per file (its new DV's descriptor and counts)
DV_WRITTEN_SCHEMA = "file int, path_or_inline_dv string, dv_offset int, size_in_bytes int, cardinality long, newly_deleted long"
#: what `dv_rows` returns: deleted rows of a piece (a file id, a CDF piece)
DV_ROWS_SCHEMA = "id int, row long"
#: what `dv_bitmaps` returns: one file's deleted rows as `bitmap_words`
DV_BITMAPS_SCHEMA = "id int, words array<long>"

_ROWS_PER_BATCH = 1 << 20

#: what `mapInArrow` calls: Arrow batches in, Arrow batches out
ArrowTask = Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]


class ExecutorTaskError(RuntimeError):
    """A deltaexplore task failed on an executor (the message names the file)."""


def ship() -> None:
    """Make pyspark pickle the task functions by value (idempotent; runs on the driver)."""
    from pyspark import cloudpickle

    for module in (dv_format, _this_module()):
        try:
            cloudpickle.register_pickle_by_value(module)
        except ValueError:  # registered already
            pass


def _this_module() -> Any:
    return sys.modules[__name__]


# -- files of the table, from an executor ---------------------------------------------------


class TaskFiles:
    """The table's files as an executor reaches them: `root` (a local path or URI) and the
    driver's storage options."""

    def __init__(self, root: str, storage_options: dict[str, Any] | None = None) -> None:
        self.root = root.rstrip("/")
        self.options = {k: v for k, v in (storage_options or {}).items() if k not in _DELTAEXPLORE_OPTIONS}
        parsed = urlparse(self.root)
        self.scheme = parsed.scheme if len(parsed.scheme) > 1 else "file"
        self._fs: Any = None
        self._arrow: Any = None

    # local paths -----------------------------------------------------------------------
    def _local(self, location: str) -> str:
        if location.startswith("file:"):
            location = unquote(urlparse(location).path)
        return location

    def _join(self, rel: str) -> str:
        if rel.startswith("/") or ".." in rel.split("/"):
            raise ExecutorTaskError(f"deltaexplore executor task: {rel!r} is not a path inside the table {self.root}")
        return f"{self.root}/{rel}"

    # remote stores ---------------------------------------------------------------------
    def _store(self) -> tuple[str, Any]:
        """('fsspec', fs) or ('arrow', fs) for a remote root."""
        if self._fs is None:
            try:
                import fsspec

                self._fs = ("fsspec", fsspec.filesystem(self.scheme, **self.options))
            except ImportError:
                self._fs = ("arrow", _arrow_filesystem(self.scheme, self.options))
        return self._fs

    def _strip(self, location: str) -> str:
        return location.split("://", 1)[1] if "://" in location else location

    # operations ------------------------------------------------------------------------
    def read_range(self, location: str, start: int, length: int) -> bytes:
        """`length` bytes of `location` (a URI or local path) from `start`."""
        try:
            if self.scheme == "file" or location.startswith(("/", "file:")):
                with open(self._local(location), "rb") as fh:
                    fh.seek(start)
                    return fh.read(length)
            kind, fs = self._store()
            if kind == "fsspec":
                return fs.cat_file(self._strip(location), start=start, end=start + length)
            with fs.open_input_file(self._strip(location)) as fh:
                return fh.read_at(length, start)
        except FileNotFoundError as exc:
            raise ExecutorTaskError(f"deltaexplore executor task: {location} is missing") from exc
        except OSError as exc:
            raise ExecutorTaskError(f"deltaexplore executor task: cannot read {location}: {exc}") from exc

    def create(self, rel: str, data: bytes) -> None:
        """Create the new file `rel` of the table (never replacing one)."""
        location = self._join(rel)
        try:
            if self.scheme == "file":
                path = self._local(location)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "xb") as fh:
                    fh.write(data)
                return
            kind, fs = self._store()
            if kind == "fsspec":
                fs.pipe_file(self._strip(location), data)
            else:
                with fs.open_output_stream(self._strip(location)) as fh:
                    fh.write(data)
        except OSError as exc:
            raise ExecutorTaskError(f"deltaexplore executor task: cannot write {location}: {exc}") from exc

    def delete(self, rel: str) -> bool:
        """Delete `rel`; False when it was gone already."""
        location = self._join(rel)
        try:
            if self.scheme == "file":
                os.remove(self._local(location))
                return True
            kind, fs = self._store()
            if kind == "fsspec":
                fs.rm_file(self._strip(location))
            else:
                fs.delete_file(self._strip(location))
            return True
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise ExecutorTaskError(f"deltaexplore executor task: cannot delete {location}: {exc}") from exc

    # deletion vectors ------------------------------------------------------------------
    def dv_location(self, dv: dict[str, Any]) -> str | None:
        kind = dv.get("storageType")
        if kind == "i":
            return None
        text = str(dv.get("pathOrInlineDv"))
        if kind == "u":
            prefix, encoded = text[:-20], text[-20:]
            name = relative_dv_name(z85_decode(encoded))
            return self._join(f"{prefix}/{name}" if prefix else name)
        if kind == "p":
            return unquote(text)
        raise ExecutorTaskError(f"deltaexplore executor task: unknown deletion vector storage type {kind!r}")

    def dv_rows(self, dv: dict[str, Any] | None, data_file: str) -> np.ndarray:
        """The rows (sorted uint64) deleted by descriptor `dv` (None: none), checked."""
        if not dv:
            return np.zeros(0, np.uint64)
        size = int(dv["sizeInBytes"])
        try:
            location = self.dv_location(dv)
            if location is None:
                rows = decode_bitmap_rows(z85_decode(str(dv["pathOrInlineDv"]))[:size])
            else:
                offset = dv.get("offset")
                offset = 1 if offset is None else int(offset)
                head = self.read_range(location, 0, 1) if offset else b"\x01"
                blob = self.read_range(location, offset, size + 8)
                rows = decode_bitmap_rows(read_dv_entry(head, blob, size=size, offset=offset))
        except dv_format.DVFormatError as exc:
            raise ExecutorTaskError(f"deltaexplore executor task: deletion vector of {data_file}: {exc}") from exc
        if len(rows) != int(dv["cardinality"]):
            raise ExecutorTaskError(
                f"deltaexplore executor task: deletion vector of {data_file} holds {len(rows)} rows, "
                f"its descriptor says {dv['cardinality']}"
            )
        return rows


#: options of deltaexplore's own storage layer that no filesystem understands
_DELTAEXPLORE_OPTIONS = frozenset({"allow_unsafe_commits"})


def _arrow_filesystem(scheme: str, options: dict[str, Any]) -> Any:
    """A `pyarrow.fs` filesystem for a remote scheme, from fsspec-style options."""
    if scheme in ("s3", "s3a", "s3n"):
        client = dict(options.get("client_kwargs") or {})
        kwargs: dict[str, Any] = {}
        for src, dst in (("key", "access_key"), ("secret", "secret_key"), ("token", "session_token")):
            if options.get(src):
                kwargs[dst] = options[src]
        endpoint = options.get("endpoint_url") or client.get("endpoint_url")
        if endpoint:
            kwargs["endpoint_override"] = endpoint
            if str(endpoint).startswith("http://"):
                kwargs["scheme"] = "http"
        region = options.get("region") or client.get("region_name")
        if region:
            kwargs["region"] = region
        if options.get("anon"):
            kwargs["anonymous"] = True
        return pafs.S3FileSystem(**kwargs)
    if scheme in ("gs", "gcs"):
        return pafs.GcsFileSystem(anonymous=bool(options.get("anon") or options.get("token") == "anon"))
    if scheme in ("abfs", "abfss", "az"):
        account = options.get("account_name")
        if not account:
            raise ExecutorTaskError("deltaexplore executor task: an Azure table needs storage option account_name")
        return pafs.AzureFileSystem(account_name=account, account_key=options.get("account_key"))
    raise ExecutorTaskError(
        f"deltaexplore executor task: {scheme}:// files cannot be reached from an executor without fsspec; "
        "install fsspec (and its driver for the store) on the executors"
    )


# -- tasks ----------------------------------------------------------------------------------


def dv_writer(
    root: str, storage_options: dict[str, Any] | None, current: dict[int, tuple[str, dict[str, Any] | None]]
) -> ArrowTask:
    """A `mapInArrow` function: rows ``(file, row)`` sorted by file then row (a file's rows in
    one task) → one row per file (`DV_WRITTEN_SCHEMA`) describing its new DV, the union of
    its current DV (`current`: file id → (data file path, descriptor or None)) and the rows.
    One DV file per task, named from a fresh UUID at the table root."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        files = TaskFiles(root, storage_options)
        done: list[tuple[int, bytes, int, int]] = []  # file, serialized DV, cardinality, newly deleted
        pending: list[np.ndarray] = []
        file_id: int | None = None

        def finish() -> None:
            if file_id is None:
                return
            new = sorted_unique(np.concatenate(pending)) if pending else np.zeros(0, np.uint64)
            path, dv = current.get(file_id, ("", None))
            old = files.dv_rows(dv, path)
            union = np.union1d(old, new) if len(old) else new
            done.append((file_id, encode_bitmap_rows(union), len(union), len(union) - len(old)))

        for batch in batches:
            ids = batch.column(0).to_numpy(zero_copy_only=False).astype(np.int64)
            rows = batch.column(1).to_numpy(zero_copy_only=False).astype(np.uint64)
            if not len(ids):
                continue
            cuts = np.flatnonzero(ids[1:] != ids[:-1]) + 1
            for start, end in zip(np.concatenate([[0], cuts]), np.append(cuts, len(ids))):
                fid = int(ids[start])
                if fid != file_id:
                    finish()
                    file_id, pending = fid, []
                pending.append(rows[start:end])
        finish()
        if not done:
            return
        blob, offsets = dv_file_bytes([d[1] for d in done])
        dv_uuid = uuid.uuid4()
        files.create(relative_dv_name(dv_uuid.bytes), blob)
        encoded = z85_encode(dv_uuid.bytes)
        yield pa.RecordBatch.from_pydict(
            {
                "file": pa.array([d[0] for d in done], pa.int32()),
                "path_or_inline_dv": pa.array([encoded] * len(done), pa.string()),
                "dv_offset": pa.array(offsets, pa.int32()),
                "size_in_bytes": pa.array([len(d[1]) for d in done], pa.int32()),
                "cardinality": pa.array([d[2] for d in done], pa.int64()),
                "newly_deleted": pa.array([d[3] for d in done], pa.int64()),
            }
        )

    return run


def bitmap_words(rows: np.ndarray) -> np.ndarray:
    """The bitmap of deleted `rows` as int64 words (bit ``r & 63`` of word ``r >> 6``)."""
    if len(rows) == 0:
        return np.zeros(0, dtype=np.int64)
    rows = np.asarray(rows, dtype=np.int64)
    bits = np.zeros((int(rows.max()) // 64 + 1) * 64, dtype=bool)
    bits[rows] = True
    # little-endian bit order and words: bit j of byte k is row 8k + j, so bit r & 63 of word r >> 6
    return np.packbits(bits, bitorder="little").view("<i8").astype(np.int64)


def dv_bitmaps(root: str, storage_options: dict[str, Any] | None, pieces: list[tuple[int, str, str]]) -> ArrowTask:
    """A `mapInArrow` function over ``spark.range(len(pieces))``: position ``k`` → ``(id, words)``,
    the rows deleted by piece ``k`` = ``(file id, data file path, DV descriptor as JSON)`` as
    `bitmap_words`. The pieces travel in the task itself: no table of descriptors to shuffle."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        files = TaskFiles(root, storage_options)
        for batch in batches:
            chosen = [pieces[int(k)] for k in batch.column(0).to_numpy(zero_copy_only=False)]
            words = [bitmap_words(files.dv_rows(json.loads(dv), path)) for _id, path, dv in chosen]
            offsets = np.concatenate([[0], np.cumsum([len(w) for w in words])]).astype(np.int32)
            values = np.concatenate(words) if words else np.zeros(0, np.int64)
            yield pa.RecordBatch.from_arrays(
                [
                    pa.array([c[0] for c in chosen], pa.int32()),
                    pa.ListArray.from_arrays(pa.array(offsets), pa.array(values, pa.int64())),
                ],
                names=["id", "words"],
            )

    return run


def dv_rows(root: str, storage_options: dict[str, Any] | None) -> ArrowTask:
    """A `mapInArrow` function: rows ``(id, data file path, dv, minus)`` (DV descriptors as JSON
    text, null for none) → ``(id, row)`` for every row deleted by `dv` and not by `minus`."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        files = TaskFiles(root, storage_options)
        for batch in batches:
            ids, paths, dvs, minus = (batch.column(i).to_pylist() for i in range(4))
            for piece, path, dv, other in zip(ids, paths, dvs, minus):
                rows = files.dv_rows(json.loads(dv) if dv else None, path)
                if other:
                    rows = np.setdiff1d(rows, files.dv_rows(json.loads(other), path), assume_unique=True)
                for start in range(0, len(rows), _ROWS_PER_BATCH):
                    chunk = rows[start : start + _ROWS_PER_BATCH].astype(np.int64)
                    yield pa.RecordBatch.from_arrays(
                        [pa.array(np.full(len(chunk), piece, np.int32)), pa.array(chunk)], names=["id", "row"]
                    )

    return run


def path_deleter(root: str, storage_options: dict[str, Any] | None) -> ArrowTask:
    """A `mapInArrow` function: table-relative paths → ``(deleted long)``, one row per task."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        files = TaskFiles(root, storage_options)
        deleted = 0
        for batch in batches:
            for rel in batch.column(0).to_pylist():
                deleted += files.delete(posixpath.normpath(rel))
        yield pa.RecordBatch.from_pydict({"deleted": pa.array([deleted], pa.int64())})

    return run


# -- variants ------------------------------------------------------------------------------------


def _is_spark_variant(t: pa.DataType) -> bool:
    """Spark's Arrow form of a VARIANT: struct<value, metadata>, the metadata field marked."""
    return (
        pa.types.is_struct(t)
        and [f.name for f in t] == ["value", "metadata"]
        and (t.field(1).metadata or {}).get(b"variant") == b"true"
    )


def _variant_structs(arr: pa.Array) -> pa.Array:
    t = arr.type
    mask = arr.is_null() if arr.null_count else None
    if _is_spark_variant(t):
        value, metadata = arr.flatten()
        fields = [pa.field("metadata", pa.binary()), pa.field("value", pa.binary())]
        return pa.StructArray.from_arrays([metadata, value], fields=fields, mask=mask)
    if pa.types.is_struct(t):
        children = [_variant_structs(c) for c in arr.flatten()]
        fields = [pa.field(f.name, c.type, f.nullable) for f, c in zip(t, children)]
        return pa.StructArray.from_arrays(children, fields=fields, mask=mask)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        values = _variant_structs(arr.values)
        offsets = arr.offsets
        return type(arr).from_arrays(offsets, values, mask=mask)
    if pa.types.is_map(t):
        items = _variant_structs(arr.items)
        return pa.MapArray.from_arrays(arr.offsets, arr.keys, items, mask=mask)
    return arr


def variant_structs() -> ArrowTask:
    """A `mapInArrow` function: every column passes through, Spark's VARIANTs (at any depth)
    become ``struct<metadata, value>``, the core's form of a variant."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            columns = [_variant_structs(c) for c in batch.columns]
            yield pa.RecordBatch.from_arrays(columns, names=batch.schema.names)

    return run
