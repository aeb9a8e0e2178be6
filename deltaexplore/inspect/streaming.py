"""Streaming inspection: the file-derived tables of a version in one pass over its file actions
in batches (`Snapshot.iter_file_actions`: a checkpoint batch at a time, then the commits after
it), never the whole file table.

`file_pass(snap)` reads the add actions once (only the fields the tables need) and keeps what
the results need: per partition the sums (`files.partition_aggregates`, merged) and the file
sizes (8 bytes a file, for the exact median and mean), per power-of-two size bin the counts,
the adds with a deletion vector (the DV table's rows), and for the layout columns asked for
their per-file bounds (min, max, null count: the overlap depth is a sweep over all of them).
The statistics JSON, paths and maps of the other files are dropped batch by batch. What the
pass holds is shaped by the same functions as the local tables (`finish_partitions`,
`finish_file_sizes`, `overview(totals=)`, `summarize_layout`, `dv_table`): the results are
equal to `partitions()`, `file_sizes()`, `overview()`, `layout_summary()` and
`deletion_vectors()` (tested on every corpus table).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from deltaexplore.core.arrow import combined, take_rows
from deltaexplore.core.files import translate_map_keys
from deltaexplore.core.log.replay import dv_unique_id
from deltaexplore.core.scan.partition_values import partition_keys, physical_partition_names
from deltaexplore.core.scan.stats import num_records
from deltaexplore.inspect.deletion_vectors import DEFAULT_PURGE_THRESHOLD, DV_COLUMNS, dv_files_of, dv_table, storage_names
from deltaexplore.inspect.errors import InspectError
from deltaexplore.inspect.file_columns import dv_cardinality
from deltaexplore.inspect.file_sizes import SIZE_AGGREGATES, finish_file_sizes, size_aggregates
from deltaexplore.inspect.files import finish_partitions, partition_aggregates, small_file_threshold
from deltaexplore.inspect.layout import layout_columns_bounds, layout_of_bounds, resolved_column, summarize_layout
from deltaexplore.inspect.layout_density import density_of_bounds, positions_of_bounds
from deltaexplore.inspect.overview import FileTotals
from deltaexplore.inspect.overview import overview as overview_table
from deltaexplore.inspect.schemas import FILES_SCHEMA
from deltaexplore.inspect.snapshots import snapshot_of

if TYPE_CHECKING:
    from deltaexplore.core.snapshot import Snapshot
    from deltaexplore.core.table import Table

__all__ = [
    "FILE_LIST_COLUMNS",
    "KERNEL_BYTES_PER_FILE",
    "STREAMING_FILES",
    "ColumnLayouts",
    "FilePass",
    "available_memory",
    "estimated_files",
    "file_pass",
    "merged_bounds",
    "spark_threshold",
]

#: the add-action fields a pass reads (stats for numRecords and bounds)
_FIELDS = ("size", "partitionValues", "stats", "modificationTime")

#: past this many active files (estimated before any replay: `estimated_files`), the explorer
#: computes its file tabs by a streaming pass instead of replaying the state
STREAMING_FILES = 1_000_000

#: memory a file costs the kernel when it keeps a version's files (the replayed state, which the
#: layout tab reads: ~650 bytes a file measured by `test_inspect_streaming`)
KERNEL_BYTES_PER_FILE = 650

#: the share of the free memory `spark_threshold` lets the files of one version take
_KERNEL_SHARE = 0.5

#: the columns of `FilePass.file_list()`: the explorer's file grid, no statistics or maps
FILE_LIST_COLUMNS = (
    "path",
    "partition",
    "size",
    "num_records",
    "deleted_rows",
    "live_rows",
    "modification_time",
    "is_small",
    "has_stats",
    "dv_storage",
)

#: the per-partition sums merged over batches (min/max/mean/median come from the kept sizes)
_SUMS = ("files", "bytes", "deleted_rows", "files_without_stats", "dv_files", "small_files", "small_bytes")
_NULLABLE_SUMS = ("rows", "live_rows")  # null when no file of the partition has stats


#: the add-action fields bounds are read from, of no file
_NO_ADDS = pa.table(
    {
        "path": pa.array([], pa.string()),
        "partitionValues": pa.array([], pa.map_(pa.string(), pa.string())),
        "stats": pa.array([], pa.string()),
    }
)
#: the file columns the layout table takes beside a column's bounds (`layout_of_bounds`)
LAYOUT_FILE_COLUMNS = ("path", "partition", "size", "num_records")


class ColumnLayouts:
    """The Layout tab's tables of one column from what a pass kept (the files' `path`,
    `partition`, `size`, `num_records` and the column's per-file bounds, same order):
    `layout`, `layout_density` and `file_positions`, made by the local functions from those
    (`layout_of_bounds`, `density_of_bounds`, `positions_of_bounds`), so equal to them. The
    bounds of the last column asked are kept with their sweep (one column at a time)."""

    snapshot: Snapshot

    def _layout_inputs(self, name: str) -> tuple[pa.Table, dict[str, Any]]:
        """The files (`LAYOUT_FILE_COLUMNS`) and the merged bounds of the resolved column `name`."""
        raise NotImplementedError

    def layout_summary(self, columns: list[str] | None = None) -> pa.Table:
        """`inspect.layout_summary(columns)` of the version."""
        raise NotImplementedError

    def _column_layout(self, column: str) -> tuple[pa.Table, dict[str, Any]]:
        name = resolved_column(self.snapshot, column)
        kept: dict[str, tuple[pa.Table, dict[str, Any]]] = self.__dict__.setdefault("_kept_layout", {})
        if name not in kept:
            kept.clear()
            kept[name] = self._layout_inputs(name)
        return kept[name]

    def layout(self, column: str) -> pa.Table:
        """`inspect.layout(column)` of the version."""
        files, b = self._column_layout(column)
        return layout_of_bounds(self.snapshot, files, b)

    def layout_density(self, column: str, *, bins: int = 100) -> pa.Table:
        """`inspect.layout_density(column, bins=bins)` of the version."""
        return density_of_bounds(self._column_layout(column)[1], bins=bins)

    def file_positions(self, column: str) -> tuple[pa.Table, bool]:
        """`inspect.layout_density.file_positions(column)` of the version."""
        return positions_of_bounds(self._column_layout(column)[1])


@dataclass
class FilePass(ColumnLayouts):
    """What one streaming pass over a version's active files keeps (see the module docstring).

    Tables of it: `partitions()`, `file_sizes()`, `overview()`, `layout_summary()`,
    `deletion_vectors()`, with `keep_file_list` `file_list()` and for a layout column
    `layout()`, `layout_density()`, `file_positions()`; `files` is the number of active files."""

    snapshot: Snapshot
    small_file_bytes: int | None
    keep_file_list: bool = False
    files: int = 0
    batches: int = 0
    _sums: list[pl.DataFrame] = field(default_factory=list)
    _codes: dict[str, int] = field(default_factory=dict)
    _values: list[pa.Table] = field(default_factory=list)
    _code_of_file: list[np.ndarray] = field(default_factory=list)
    _size_of_file: list[pa.Array] = field(default_factory=list)
    _bins: list[pa.Table] = field(default_factory=list)
    _dv_adds: list[pa.Table] = field(default_factory=list)
    _dv_records: list[pa.Array] = field(default_factory=list)
    _bounds: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    _file_list: list[pa.Table] = field(default_factory=list)
    _dv_keys: list[pa.Table] = field(default_factory=list)
    _partitions: pa.Table | None = None
    #: the file list's path hashes (`rows_of`)
    _path_hashes: pl.Series | None = None
    #: the layout columns whose bounds the pass keeps (resolved names)
    kept_columns: tuple[str, ...] = ()
    #: the checkpoint's add rows the version's commits replaced (`Snapshot.iter_file_actions`),
    #: kept with the file list: what stepping back from this version needs (`stepped_totals`)
    superseded: list[pa.Table] = field(default_factory=list)

    # -- the pass ---------------------------------------------------------------------------
    def add(self, adds: pa.Table, columns: Sequence[str]) -> None:
        """Count one batch of active add actions."""
        n = adds.num_rows
        if n == 0:
            return
        self._partitions = self._path_hashes = None
        snap = self.snapshot
        threshold = small_file_threshold(snap, self.small_file_bytes)
        size = combined(adds.column("size")).cast(pa.int64())
        records = num_records(adds)
        deleted = dv_cardinality(adds)
        dv = combined(adds.column("deletionVector"))
        cardinality = pc.struct_field(dv, "cardinality").cast(pa.int64())
        partition = partition_keys(snap, adds)
        frame = pl.from_arrow(
            pa.table(
                {
                    "partition": partition,
                    "size": size,
                    "num_records": records,
                    "deleted_rows": deleted,
                    "live_rows": pc.subtract(records, deleted),
                    "has_stats": pc.is_valid(records),
                    "is_small": pc.less(size, threshold),
                    "cardinality": cardinality,
                    "_row": pa.array(np.arange(self.files, self.files + n, dtype=np.int64)),
                }
            )
        )
        assert isinstance(frame, pl.DataFrame)
        agg = partition_aggregates(frame)
        self._sums.append(agg.select(["partition", *_SUMS, *_NULLABLE_SUMS, "_row"]))
        # partition codes of the files (for the sizes kept); the values of partitions first seen here
        encoded = pc.dictionary_encode(partition)
        keys = encoded.dictionary.to_pylist()
        fresh = [i for i, key in enumerate(keys) if key not in self._codes]
        if fresh:
            first = np.unique(encoded.indices.to_numpy(zero_copy_only=False), return_index=True)
            first_row = dict(zip(first[0].tolist(), first[1].tolist()))
            rows = pa.array([first_row[i] for i in fresh], pa.int64())
            logical = {phys: name for name, phys in physical_partition_names(snap).items() if phys != name}
            self._values.append(
                pa.table(
                    {
                        "partition": partition.take(rows),
                        "partition_values": translate_map_keys(combined(adds.column("partitionValues")).take(rows), logical),
                    }
                )
            )
            for i in fresh:
                self._codes[keys[i]] = len(self._codes)
        lookup = np.array([self._codes[k] for k in keys], np.int32)
        self._code_of_file.append(lookup[encoded.indices.to_numpy(zero_copy_only=False)])
        self._size_of_file.append(size)
        known = pc.is_valid(size)
        sizes = size.filter(known).to_numpy().astype(np.int64) if size.null_count else size.to_numpy()
        small = pc.less(size, threshold).filter(known) if size.null_count else pc.less(size, threshold)
        self._bins.append(size_aggregates(sizes, small.to_numpy(zero_copy_only=False)))
        with_dv = pc.is_valid(dv)
        if pc.any(with_dv).as_py():
            self._dv_adds.append(adds.select(DV_COLUMNS).filter(with_dv))
            self._dv_records.append(records.filter(with_dv))
        if self.keep_file_list:
            self._file_list.append(
                pa.table(
                    {
                        "path": combined(adds.column("path")),
                        "partition": partition,
                        "size": size,
                        "num_records": records,
                        "deleted_rows": deleted,
                        "live_rows": pc.subtract(records, deleted),
                        "modification_time": pc.cast(combined(adds.column("modificationTime")), pa.timestamp("ms", tz="UTC")),
                        "is_small": pc.less(size, threshold),
                        "has_stats": pc.is_valid(records),
                        "dv_storage": storage_names(pc.struct_field(dv, "storageType").cast(pa.string())),
                    }
                )
            )
            self._dv_keys.append(pa.table({"dv_id": dv_unique_id(dv), "dv_file": pc.is_valid(cardinality)}))
        if columns:
            for name, b in layout_columns_bounds(snap, adds, list(columns)).items():
                self._bounds.setdefault(name, []).append(b)
        self.files += n
        self.batches += 1

    # -- what it counted ----------------------------------------------------------------------
    def partitions(self) -> pa.Table:
        """`inspect.partitions()` of the version (`PARTITIONS_SCHEMA`)."""
        if self._partitions is None:
            self._partitions = self._partition_table()
        return self._partitions

    def _partition_table(self) -> pa.Table:
        if self.files == 0:
            return finish_partitions(pa.table({}))
        sums = (
            pl.concat(self._sums)
            .group_by("partition")
            .agg(
                *(pl.col(c).sum() for c in _SUMS),
                *(pl.when(pl.col(c).is_not_null().any()).then(pl.col(c).sum()).alias(c) for c in _NULLABLE_SUMS),
                pl.col("_row").min(),
            )
        )
        spread = (
            pl.DataFrame(
                {
                    "code": pl.Series(np.concatenate(self._code_of_file)).cast(pl.Int64),
                    "size": pl.from_arrow(pa.chunked_array(self._size_of_file, pa.int64())),
                }
            )
            .group_by("code")
            .agg(
                pl.col("size").min().alias("min_file_bytes"),
                pl.col("size").max().alias("max_file_bytes"),
                pl.col("size").mean().alias("mean_file_bytes"),
                pl.col("size").median().alias("median_file_bytes"),
            )
        )
        codes = pl.DataFrame({"partition": list(self._codes), "code": np.arange(len(self._codes), dtype=np.int64)})
        # in `partitions()`'s order before it sorts (each partition's first file) with its values
        table = sums.join(codes, on="partition").join(spread, on="code").sort("_row").drop(["_row", "code"]).to_arrow()
        seen = pa.concat_tables(self._values)
        at = pc.index_in(table.column("partition"), value_set=seen.column("partition"))
        return finish_partitions(table.append_column("partition_values", seen.column("partition_values").take(at)))

    def file_sizes(self) -> pa.Table:
        """`inspect.file_sizes()` of the version (`FILE_SIZES_SCHEMA`)."""
        bins = [b for b in self._bins if b.num_rows]
        if not bins:
            return finish_file_sizes(pa.table({n: pa.array([], pa.int64()) for n in SIZE_AGGREGATES}))
        return finish_file_sizes(pa.concat_tables(bins))

    def totals(self) -> FileTotals:
        """The overview's file totals."""
        return FileTotals.of_partitions(self.partitions())

    def overview(self) -> pa.Table:
        """`inspect.overview()` of the version (`METRICS_SCHEMA`)."""
        return overview_table(self.snapshot, small_file_bytes=self.small_file_bytes, totals=self.totals())

    def deletion_vectors(self, *, purge_threshold: float = DEFAULT_PURGE_THRESHOLD) -> pa.Table:
        """`inspect.deletion_vectors()` of the version (`DV_SCHEMA`)."""
        if not self._dv_adds:
            return dv_table(self.snapshot, pa.table({}), pa.array([], pa.int64()), purge_threshold)
        adds = pa.concat_tables(self._dv_adds, promote_options="permissive")
        return dv_table(self.snapshot, adds, pa.concat_arrays(self._dv_records), purge_threshold)

    def dv_files(self) -> pa.Table:
        """`inspect.dv_files()` of the version (`DV_FILES_SCHEMA`, no storage checks)."""
        return dv_files_of(self.deletion_vectors())

    def file_list(self) -> pa.Table:
        """The active files with `FILE_LIST_COLUMNS` (their values as `inspect.files()` has
        them), kept by a pass with `keep_file_list=True`: about a tenth of the replayed
        state (no statistics JSON, maps or row tracking fields)."""
        if not self.keep_file_list:
            raise InspectError("this streaming pass kept no file list: pass file_pass(keep_file_list=True)")
        dv_storage = pa.field(
            "dv_storage", pa.string(), metadata={"doc": "where the deletion vector is: file, inline or absolute", "unit": "text"}
        )
        schema = FILES_SCHEMA.append(dv_storage)
        fields = [schema.field(c) for c in FILE_LIST_COLUMNS]
        if not self._file_list:
            return pa.schema(fields).empty_table()
        if len(self._file_list) > 1:  # joined once: a kept pass is read many times (steps, grids)
            self._file_list = [pa.concat_tables(self._file_list)]
        return self._file_list[0].cast(pa.schema(fields))

    def file_dvs(self) -> pa.Table:
        """Per file of `file_list()` (same order): `dv_id`, its deletion vector's unique id
        (null without one: with the path, the file's replay key), and `dv_file`, whether it
        counts as a file with a deletion vector."""
        if not self.keep_file_list:
            raise InspectError("this streaming pass kept no file list: pass file_pass(keep_file_list=True)")
        if not self._dv_keys:
            return pa.table({"dv_id": pa.array([], pa.string()), "dv_file": pa.array([], pa.bool_())})
        return pa.concat_tables(self._dv_keys)

    def rows_of(self, paths: pa.Array) -> np.ndarray:
        """The rows of `file_list()` whose path is one of `paths`, in increasing order: their
        hashes looked up among the list's path hashes (hashed once), each candidate's path then
        compared."""
        if self._path_hashes is None:
            self._path_hashes = pl.Series(self.file_list().column("path")).hash()
        if len(paths) == 0 or len(self._path_hashes) == 0:
            return np.zeros(0, np.int64)
        wanted = combined(paths).cast(pa.string())
        hit = self._path_hashes.is_in(pl.Series(wanted).hash().implode()).to_numpy()
        candidates = np.flatnonzero(hit)
        if not len(candidates):
            return candidates.astype(np.int64)
        found = combined(take_rows(self.file_list().select(["path"]), candidates).column("path")).cast(pa.string())
        same = pc.fill_null(pc.is_in(found, value_set=wanted), False).to_numpy(zero_copy_only=False)
        return candidates[same].astype(np.int64)

    def layout_summary(self, columns: list[str] | None = None) -> pa.Table:
        """`inspect.layout_summary(columns)` of the version, from the bounds of the columns the
        pass was asked for (`LAYOUT_SUMMARY_SCHEMA`)."""
        return summarize_layout(self.snapshot, columns, files=self.files, bounds=self._merged_bounds)

    def _layout_inputs(self, name: str) -> tuple[pa.Table, dict[str, Any]]:
        if not self.keep_file_list:
            raise InspectError("this streaming pass kept no file list: pass file_pass(keep_file_list=True)")
        files = self.file_list().select(list(LAYOUT_FILE_COLUMNS))
        if self.files == 0:  # no batch came: the bounds of no file
            return files, layout_columns_bounds(self.snapshot, _NO_ADDS, [name])[name]
        return files, self._merged_bounds([name])[name]

    def _merged_bounds(self, names: list[str]) -> dict[str, dict[str, Any]]:
        missing = [name for name in names if name not in self._bounds]
        if missing:
            raise InspectError(f"the streaming pass kept no bounds of {missing[0]!r}: pass it in file_pass(layout_columns=...)")
        return merged_bounds({name: self._bounds[name] for name in names})


def merged_bounds(pieces: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Per column, the bounds of batches of files (`layout_columns_bounds` of each) as one."""
    out = {}
    for name, parts in pieces.items():
        merged = dict(parts[0])
        for key in ("min", "max", "null_count", "num_records"):
            if merged.get(key) is not None:
                merged[key] = pa.concat_arrays([combined(p[key]) for p in parts])
        out[name] = merged
    return out


def file_pass(
    obj: Table | Snapshot,
    *,
    version: int | None = None,
    small_file_bytes: int | None = None,
    layout_columns: Sequence[str] = (),
    keep_file_list: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> FilePass:
    """One streaming pass over the active files of a version (see the module docstring).

    Args:
        layout_columns: columns whose per-file bounds are kept for `layout_summary` (each
            costs its min, max and null count per file).
        keep_file_list: keep `file_list()` (the explorer's file grid).
        progress: called after each batch with (batches, files) counted so far.
    """
    snap = snapshot_of(obj, version)
    columns = list(layout_columns)
    out = FilePass(snap, small_file_bytes, keep_file_list=keep_file_list)
    out.kept_columns = tuple(resolved_column(snap, c) for c in columns)
    for batch in snap.iter_file_actions("add", fields=_FIELDS, superseded=out.superseded if keep_file_list else None):
        out.add(batch, columns)
        if progress is not None:
            progress(out.batches, out.files)
    return out


def estimated_files(snap: Snapshot) -> int | None:
    """Active files of `snap` as the log says before any replay: the `.crc`'s numFiles, else
    `_last_checkpoint`'s numOfAddFiles (or its action count) when it names `snap`'s checkpoint,
    else the rows of the checkpoint's parquet parts (their footers), plus the add lines of the
    commits after it (an upper bound: removes are not subtracted); None when a footer cannot be
    read."""
    if snap.files_loaded:
        return snap.add_actions().num_rows
    crc = snap.crc
    if isinstance(crc, dict) and isinstance(crc.get("numFiles"), int):
        return int(crc["numFiles"])
    adds = len(snap.json_lines.where("add"))
    hint = snap.listing.last_checkpoint
    checkpoint = snap.checkpoint_version
    if checkpoint is None:
        return adds
    if hint is not None and not hint.problem and hint.version == checkpoint:
        counted = hint.num_of_add_files if hint.num_of_add_files is not None else hint.size
        if counted is not None:
            return int(counted) + adds
    reader = snap.checkpoint_reader
    if reader is None or reader.is_json:
        return None
    try:
        rows = 0
        for part in reader.checkpoint.parts:
            with snap.storage.open_input(part.path) as f:
                rows += pq.ParquetFile(f).metadata.num_rows
    except (OSError, pa.ArrowInvalid):
        return None
    return rows + adds


def available_memory() -> int | None:
    """Bytes this process can still take: the system's available memory (`/proc/meminfo`),
    less when a cgroup limit is closer; None where neither can be read (not Linux)."""
    free = None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    free = int(line.split()[1]) * 1024
                    break
    except OSError:
        return None
    try:
        with open("/sys/fs/cgroup/memory.max") as f:
            limit = f.read().strip()
        with open("/sys/fs/cgroup/memory.current") as f:
            used = int(f.read().strip())
        if limit != "max" and free is not None:
            free = min(free, max(0, int(limit) - used))
    except (OSError, ValueError):
        pass
    return free


def spark_threshold(free_bytes: int | None) -> int | None:
    """The file count past which a version's files do not fit the kernel: half of `free_bytes`
    at `KERNEL_BYTES_PER_FILE` a file (at least one file); None when the free memory is unknown."""
    if free_bytes is None:
        return None
    return max(1, int(free_bytes * _KERNEL_SHARE) // KERNEL_BYTES_PER_FILE)
