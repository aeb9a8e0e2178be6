"""A version's overview totals stepped from a neighbouring version's streaming pass.

Past the streaming threshold the explorer counts a version by one pass over its whole log
(`inspect.streaming`: no replayed state kept, memory bounded): seconds at a million files. A
slider step away most files are the same, so `stepped_totals(base, snap)` gives `snap`'s
`FileTotals` as `base`'s changed by the files the commits in between touch, each by its replay
key (path, deletion vector id):

- what the key held at the base version leaves: the base pass's file list has every active
  file with its size, rows, deleted rows, smallness and partition;
- what it holds at `snap`'s version comes in. Going forward, the key's last action in the
  commits between (an add: active with its values; a remove: gone). Going back, its last
  action in `snap`'s own commits (those after its checkpoint, which the snapshot read), else
  its checkpoint row, else nothing. Every key the commits between touch is one the base's
  commits touched, so its checkpoint row is among those the base pass kept
  (`FilePass.superseded`): no remove has to carry the file's fields.

That is the replay restricted to the touched keys, so the totals equal a pass of `snap` (tested
on every corpus table and version). None, for the caller to make the pass, where the step cannot
be made this way: going back to another checkpoint than the base's, commits between missing or
more than `MAX_STEP_BYTES` of them, a different small-file threshold, partition columns or
column mapping, or a path that would be active under two keys.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.arrow import combined, take_rows, text_buffers
from deltaexplore.core.log.json_log import LogLines, read_log_files
from deltaexplore.core.log.replay import dv_unique_id
from deltaexplore.core.scan.partition_values import partition_keys, physical_partition_names
from deltaexplore.core.scan.stats import num_records
from deltaexplore.inspect.file_columns import dv_cardinality
from deltaexplore.inspect.files import small_file_threshold
from deltaexplore.inspect.overview import FileTotals
from deltaexplore.inspect.streaming import FilePass

if TYPE_CHECKING:
    from deltaexplore.core.snapshot import Snapshot

__all__ = ["MAX_STEP_BYTES", "stepped_totals"]

#: the JSON of the commits between two versions past which a step is not worth it (a pass reads
#: the checkpoint's columns; this much JSON parses in about the time of a pass of 1M files)
MAX_STEP_BYTES = 64 << 20

_SEP = pa.scalar("\x00", pa.large_string())


def stepped_totals(base: FilePass, snap: Snapshot, *, max_bytes: int = MAX_STEP_BYTES) -> FileTotals | None:
    """`snap`'s file totals from the pass `base` of a neighbouring version (made with
    `keep_file_list=True`) and the commits in between (module docstring); None when the step
    cannot be made this way, or would read more than `max_bytes` of JSON (the commits between;
    going back, `snap`'s own commits too)."""
    before = base.snapshot
    if not base.keep_file_list:
        return None
    if snap.version == before.version:
        return base.totals()
    if snap.partition_columns != before.partition_columns or physical_partition_names(snap) != physical_partition_names(before):
        return None
    threshold = small_file_threshold(snap, base.small_file_bytes)
    if threshold != small_file_threshold(before, base.small_file_bytes):
        return None
    lo, hi = sorted((snap.version, before.version))
    between = _commits(before if snap.version < before.version else snap, lo, hi, max_bytes)
    if between is None:
        return None
    moved = _actions(snap, between, threshold)
    touched = pc.unique(moved.column("key"))
    if snap.version > before.version:
        arriving = _last_adds(moved)
    else:
        if snap.checkpoint_version != before.checkpoint_version or _text_bytes(snap.json_lines) > max_bytes:
            return None
        paths = pc.unique(moved.column("path"))
        own = _actions(snap, snap.json_lines, threshold, paths)
        own = own.filter(pc.is_in(own.column("key"), value_set=touched))
        arriving = _last_adds(own)
        if snap.checkpoint_version is not None and base.superseded:
            held = _values(snap, _with_paths(pa.concat_tables(base.superseded, promote_options="permissive"), paths), threshold)
            untouched_since = pc.invert(pc.is_in(held.column("key"), value_set=own.column("key")))
            held = held.filter(pc.and_(pc.is_in(held.column("key"), value_set=touched), untouched_since))
            arriving = pa.concat_tables([arriving, held.select(arriving.column_names)])
    leaving, staying = _leaving(base, moved.column("path"), touched)
    if _paths_repeat(arriving) or pc.any(pc.is_in(arriving.column("path"), value_set=staying)).as_py():
        return None
    return _stepped(base.totals(), base.partitions(), leaving, arriving)


def _text_bytes(lines: LogLines) -> int:
    offsets, _ = text_buffers(lines.text)
    return int(offsets[-1] - offsets[0]) if len(offsets) else 0


def _commits(segment_of: Snapshot, lo: int, hi: int, max_bytes: int) -> LogLines | None:
    """The lines of the commits lo+1..hi (at most `max_bytes` of them): a slice of
    `segment_of`'s lines when they hold them (its checkpoint at or before `lo`), else read from
    the listing."""
    if segment_of.checkpoint_version is None or segment_of.checkpoint_version <= lo:
        lines = segment_of.json_lines.after(lo)
        if lines is not None and (not lines.files or lines.files[-1].end_version == hi):
            return lines if _text_bytes(lines) <= max_bytes else None
    listing = segment_of.listing
    files = [listing.commit(v) for v in range(lo + 1, hi + 1)]
    if any(f is None for f in files) or sum(f.size for f in files if f is not None) > max_bytes:
        return None
    return read_log_files(segment_of.storage, [f for f in files if f is not None], list(range(lo + 1, hi + 1)))


def _keys(path: pa.Array, dv_id: pa.Array) -> pa.Array:
    """The replay key of each file: path and deletion vector id (empty without one)."""
    return pc.binary_join_element_wise(path.cast(pa.large_string()), pc.fill_null(dv_id.cast(pa.large_string()), ""), _SEP)


def _values(snap: Snapshot, actions: pa.Table, threshold: int) -> pa.Table:
    """Per file action: its key and path and what it counts with (as `FilePass.add` counts)."""
    if actions.num_rows == 0:
        return pa.table(
            {
                "key": pa.array([], pa.large_string()),
                "path": pa.array([], pa.large_string()),
                "size": pa.array([], pa.int64()),
                "num_records": pa.array([], pa.int64()),
                "deleted_rows": pa.array([], pa.int64()),
                "is_small": pa.array([], pa.bool_()),
                "dv_file": pa.array([], pa.bool_()),
                "partition": pa.array([], pa.string()),
            }
        )
    dv = combined(actions.column("deletionVector"))
    size = combined(actions.column("size")).cast(pa.int64())
    path = combined(actions.column("path"))
    return pa.table(
        {
            "key": _keys(path, dv_unique_id(dv)),
            "path": path.cast(pa.large_string()),
            "size": size,
            "num_records": num_records(actions),
            "deleted_rows": dv_cardinality(actions),
            "is_small": pc.less(size, threshold),
            "dv_file": pc.is_valid(pc.struct_field(dv, "cardinality")) if len(dv) else pa.array([], pa.bool_()),
            "partition": combined(partition_keys(snap, actions)).cast(pa.string()),
        }
    )


def _with_paths(actions: pa.Table, paths: pa.Array | None) -> pa.Table:
    """The rows of `actions` whose path is one of `paths` (all without `paths`)."""
    if paths is None or actions.num_rows == 0:
        return actions
    return actions.filter(
        pc.fill_null(pc.is_in(actions.column("path"), value_set=paths.cast(actions.column("path").type)), False)
    )


def _actions(snap: Snapshot, lines: LogLines, threshold: int, paths: pa.Array | None = None) -> pa.Table:
    """The add and remove actions of `lines` (of `paths` only, when given): `_values`, with
    `is_add` and their replay order."""
    parts = []
    for kind in ("add", "remove"):
        t = _with_paths(lines.file_actions(kind), paths)
        values = _values(snap, t, threshold)
        values = values.append_column("line", combined(t.column("line")).cast(pa.int64()))
        parts.append(values.append_column("is_add", pa.array(np.full(t.num_rows, kind == "add"))))
    return pa.concat_tables(parts)


def _last_adds(actions: pa.Table) -> pa.Table:
    """The adds that are their key's last action (in replay order) among `actions`."""
    if actions.num_rows == 0:
        return actions.drop_columns(["line", "is_add"])
    codes = pc.dictionary_encode(actions.column("key")).combine_chunks().indices.to_numpy()
    line = actions.column("line").to_numpy()
    order = np.lexsort((line, codes))
    last = order[np.r_[codes[order][1:] != codes[order][:-1], True]]
    picked = actions.take(pa.array(last, pa.int64()))
    return picked.filter(picked.column("is_add")).drop_columns(["line", "is_add"])


def _leaving(base: FilePass, paths: pa.ChunkedArray | pa.Array, touched: pa.Array) -> tuple[pa.Table, pa.Array]:
    """The base's active files whose key is touched (with `_values`' columns), and the paths of
    those whose path is touched but not their key (a remove without the file's deletion vector
    leaves it active: such a path must not arrive under another key)."""
    rows = base.rows_of(pc.unique(combined(paths)))
    files = take_rows(base.file_list(), rows)
    dvs = take_rows(base.file_dvs(), rows)
    keys = _keys(combined(files.column("path")), combined(dvs.column("dv_id")))
    hit = pc.is_in(keys, value_set=touched)
    staying = combined(files.column("path")).cast(pa.large_string()).filter(pc.invert(hit))
    files, dvs, keys = files.filter(hit), dvs.filter(hit), keys.filter(hit)
    leaving = pa.table(
        {
            "key": keys,
            "path": combined(files.column("path")).cast(pa.large_string()),
            "size": combined(files.column("size")),
            "num_records": combined(files.column("num_records")),
            "deleted_rows": combined(files.column("deleted_rows")),
            "is_small": combined(files.column("is_small")),
            "dv_file": combined(dvs.column("dv_file")),
            "partition": combined(files.column("partition")).cast(pa.string()),
        }
    )
    return leaving, staying


def _paths_repeat(files: pa.Table) -> bool:
    return len(pc.unique(files.column("path"))) != files.num_rows


def _stepped(totals: FileTotals, partitions: pa.Table, leaving: pa.Table, arriving: pa.Table) -> FileTotals:
    """`totals` (with its `partitions`) less the files `leaving`, plus the files `arriving`."""

    def change(column: str, count: bool = False) -> int:
        def total(t: pa.Table) -> int:
            values = t.column(column)
            if count:
                return int(pc.sum(pc.cast(values, pa.int64())).as_py() or 0)
            return int(pc.sum(values).as_py() or 0)

        return total(arriving) - total(leaving)

    def without_stats(t: pa.Table) -> int:
        return int(t.column("num_records").null_count)

    files_in = Counter(dict(zip(partitions.column("partition").to_pylist(), partitions.column("files").to_pylist())))
    files_in.update(arriving.column("partition").to_pylist())
    files_in.subtract(leaving.column("partition").to_pylist())
    return FileTotals(
        files=totals.files + arriving.num_rows - leaving.num_rows,
        bytes=totals.bytes + change("size"),
        rows=None if totals.rows is None else totals.rows + change("num_records"),
        deleted_rows=totals.deleted_rows + change("deleted_rows"),
        files_without_stats=None
        if totals.files_without_stats is None
        else totals.files_without_stats + without_stats(arriving) - without_stats(leaving),
        small_files=totals.small_files + change("is_small", count=True),
        dv_files=totals.dv_files + change("dv_file", count=True),
        partitions=sum(1 for n in files_in.values() if n > 0),
    )
