"""Every add and remove action of some commits as columns, for a replay of all of them at once
(`inspect.timeline`): its replay key (path and deletion vector id), version, order in the log,
size, numRecords, the DV's cardinality and its partition values.

The compiled pass (`_count_kernel.c`'s `action_rows`, for commits on a local disk) reads each
file into one buffer, splits it into lines and reads these straight off the add/remove lines
(their numRecords by the rules of `scan.stats.num_records`, their partition values as the text
`json_log` cuts out, parsed once per distinct text); the other lines (commitInfo, metaData,
protocol...) and the ones it is not sure of (escapes in a path or DV, partition values with
braces or escapes, ...) become `LogLines`, parsed the ordinary way (`LogLines.file_actions`),
which is the whole path where the kernel is not built or the log is on an object store. Both
give the same rows (tests compare them on every corpus log and on generated odd lines).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.arrow import text_buffers
from deltaexplore.core.log.file_names import LogFile
from deltaexplore.core.log.json_log import LogLines, parse_map_texts, read_log_files
from deltaexplore.core.log.replay import dv_unique_id
from deltaexplore.core.protocol.actions import STRING_MAP
from deltaexplore.core.scan import action_counts
from deltaexplore.core.scan.stats import num_records
from deltaexplore.errors import InvalidLogError
from deltaexplore.storage import Storage

__all__ = ["ROW_FIELDS", "ActionRows", "action_rows", "key_hashes", "replay_keys", "rows_of_table"]

#: the fields of a file action the rows are read from (one `pyarrow.json` parse of only these)
ROW_FIELDS = ["size", "partitionValues", "deletionVector", "stats"]
_ORDER_SHIFT = 32  # order = file index << 32 | line number


class ActionRows(NamedTuple):
    """Actions of one kind, row by row: replay key (`replay_keys`), version, order (larger is
    later in the log), size (0 where null), numRecords (0 where unknown), deleted rows (the DV's
    cardinality, 0 without one) and partition values: row i's map is
    `partitions[partition_index[i]]` (null where the index is -1), the distinct maps once where
    the kernel read them (`partition_maps` gives one per row)."""

    key: pa.Array | pa.ChunkedArray
    version: np.ndarray
    order: np.ndarray
    size: np.ndarray
    records: np.ndarray
    deleted: np.ndarray
    partitions: pa.Array
    partition_index: np.ndarray

    def partition_maps(self) -> pa.Array:
        """One partition values map per row (null where absent)."""
        index = self.partition_index
        return self.partitions.take(pa.array(index, mask=index < 0))

    @staticmethod
    def concat(parts: Sequence[ActionRows]) -> ActionRows:
        starts = np.cumsum([0, *(len(p.partitions) for p in parts)])
        keys = [c for p in parts for c in (p.key.chunks if isinstance(p.key, pa.ChunkedArray) else [p.key])]
        return ActionRows(
            pa.chunked_array(keys, pa.large_string()),  # no copy of the keys
            np.concatenate([p.version for p in parts]),
            np.concatenate([p.order for p in parts]),
            np.concatenate([p.size for p in parts]),
            np.concatenate([p.records for p in parts]),
            np.concatenate([p.deleted for p in parts]),
            pa.concat_arrays([p.partitions for p in parts]),
            np.concatenate([np.where(p.partition_index < 0, -1, p.partition_index + at) for p, at in zip(parts, starts)]),
        )


def replay_keys(actions: pa.Table) -> pa.Array:
    """`path` + "\\0" + deletion vector id (`dv_unique_id`, empty without one) per action: the
    key a replay matches actions on, as one string."""
    path = actions.column("path").combine_chunks().cast(pa.large_string())
    dv = actions.column("deletionVector")
    dv_id = pc.fill_null(dv_unique_id(dv.combine_chunks() if isinstance(dv, pa.ChunkedArray) else dv), "")
    return pc.binary_join_element_wise(path, dv_id.cast(pa.large_string()), pa.scalar("\x00", pa.large_string()))


def key_hashes(keys: pa.ChunkedArray) -> np.ndarray | None:
    """A 64-bit hash of each key (strings without nulls), by the kernel's `hash_strings`; None
    where it is not built. Equal keys hash alike; the caller checks the keys of equal hashes."""
    hash_strings = getattr(action_counts.KERNEL, "hash_strings", None)
    if hash_strings is None or keys.null_count:
        return None
    out = np.empty(len(keys), np.uint64)
    at = 0
    for chunk in keys.chunks:
        offsets, data = text_buffers(chunk)
        hash_strings(offsets, data, out[at : at + len(chunk)])
        at += len(chunk)
    return out


def _ints(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    values = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    return pc.fill_null(values.cast(pa.int64()), 0).to_numpy(zero_copy_only=False).astype(np.int64)


def rows_of_table(actions: pa.Table, version: np.ndarray, order: np.ndarray, *, adds: bool = True) -> ActionRows:
    """The rows of parsed file actions (a snapshot's, a checkpoint's or `file_actions`'); for
    removes (`adds` false) only the keys count: the values are zeros."""
    n = actions.num_rows
    if not adds:
        zeros = np.zeros(n, np.int64)
        return ActionRows(
            replay_keys(actions), version, order, zeros, zeros, zeros, pa.array([], STRING_MAP), np.full(n, -1, np.int64)
        )
    records = pc.fill_null(num_records(actions), 0).to_numpy(zero_copy_only=False).astype(np.int64)
    parts = actions.column("partitionValues")
    parts = parts.combine_chunks() if isinstance(parts, pa.ChunkedArray) else parts
    return ActionRows(
        replay_keys(actions),
        version,
        order,
        _ints(actions.column("size")),
        records,
        _ints(pc.struct_field(actions.column("deletionVector"), "cardinality")),
        parts if parts.type == STRING_MAP else parts.cast(STRING_MAP),
        np.arange(n, dtype=np.int64),
    )


def _rows_of_lines(lines: LogLines, kind: str) -> ActionRows:
    t = lines.file_actions(kind, ROW_FIELDS)
    at = t.column("line").to_numpy().astype(np.int64)  # the lines' own order: commits are read in order
    order = (lines.file_index[at].astype(np.int64) << _ORDER_SHIFT) | lines.line_number[at]
    return rows_of_table(t, t.column("version").to_numpy().astype(np.int64), order, adds=kind == "add")


def action_rows(
    storage: Storage, files: Sequence[LogFile], versions: Sequence[int], *, all_lines: bool = False
) -> tuple[ActionRows, ActionRows, LogLines]:
    """The add and remove rows of commit `files` (of `versions`, increasing), and their lines:
    those the compiled pass left (every action but the adds and removes it read), or all of them
    (`all_lines`, or where the compiled pass does not apply)."""
    compiled = None if all_lines else _compiled_rows(storage, files, versions)
    if compiled is not None:
        return compiled
    lines = read_log_files(storage, files, versions)
    return _rows_of_lines(lines, "add"), _rows_of_lines(lines, "remove"), lines


def _compiled_rows(
    storage: Storage, files: Sequence[LogFile], versions: Sequence[int]
) -> tuple[ActionRows, ActionRows, LogLines] | None:
    """`action_rows` by the kernel's `action_rows`; None where it does not apply (as
    `action_counts._compiled_commit_counts`)."""
    read = getattr(action_counts.KERNEL, "action_rows", None)
    if read is None:
        return None
    paths = action_counts.kernel_paths(storage, files)
    if paths is None:
        return None
    got = [memoryview(b) for b in read(paths)]  # the kernel's memory
    add_rows, add_keys, add_key_ends, parts, part_ends, remove_rows, remove_keys, remove_key_ends, status, rest, index = got
    if np.frombuffer(status, np.int32).any():
        return None
    try:
        lines = action_counts.lines_left(files, rest, index, versions)
        adds = _kernel_rows(add_rows, add_keys, add_key_ends, versions, (parts, part_ends))
        removes = _kernel_rows(remove_rows, remove_keys, remove_key_ends, versions, None)
    except (InvalidLogError, pa.ArrowInvalid):
        return None
    return (
        ActionRows.concat([adds, _rows_of_lines(lines, "add")]),
        ActionRows.concat([removes, _rows_of_lines(lines, "remove")]),
        lines,
    )


def _strings(data: memoryview, ends: memoryview, valid: np.ndarray | None = None) -> pa.Array:
    """The strings of `data` ending at `ends` (int64), null where `valid` is false; raises
    `ArrowInvalid` on text that is not UTF-8 (the kernel checked it: this is the assurance)."""
    n = len(ends) // 8
    offsets = np.zeros(n + 1, np.int64)
    offsets[1:] = np.frombuffer(ends, np.int64)
    bitmap = None if valid is None else pa.py_buffer(np.packbits(valid, bitorder="little"))
    out = pa.LargeStringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data), bitmap)
    out.validate(full=True)
    return out


def _kernel_rows(
    rows: memoryview, keys: memoryview, key_ends: memoryview, versions: Sequence[int], parts: tuple[memoryview, memoryview] | None
) -> ActionRows:
    """The kernel's rows of one kind (`parts`: the adds' partition texts, each distinct one parsed once)."""
    table = np.frombuffer(rows, np.int64).reshape(-1, 7)
    n = len(table)
    version = np.asarray(versions, np.int64)[table[:, 1]] if n else np.zeros(0, np.int64)
    order = (table[:, 1] << _ORDER_SHIFT) | table[:, 2]
    if parts is None:
        zeros = np.zeros(n, np.int64)
        return ActionRows(_strings(keys, key_ends), version, order, zeros, zeros, zeros, pa.array([], STRING_MAP), zeros - 1)
    encoded = _strings(*parts, valid=(table[:, 6] & 16) != 0).dictionary_encode()
    return ActionRows(
        _strings(keys, key_ends),
        version,
        order,
        np.ascontiguousarray(table[:, 3]),
        np.ascontiguousarray(table[:, 4]),
        np.ascontiguousarray(table[:, 5]),
        parse_map_texts(encoded.dictionary),
        pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64),
    )
