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

import os
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.log.file_names import LogFile, LogKind
from deltaexplore.core.log.json_log import LogLines, lines_from_parts, parse_map_texts, read_log_files
from deltaexplore.core.log.replay import dv_unique_id
from deltaexplore.core.protocol.actions import STRING_MAP
from deltaexplore.core.scan import action_counts
from deltaexplore.core.scan.stats import num_records
from deltaexplore.errors import InvalidLogError
from deltaexplore.storage import Storage

__all__ = ["ROW_FIELDS", "ActionRows", "action_rows", "replay_keys", "rows_of_table"]

#: the fields of a file action the rows are read from (one `pyarrow.json` parse of only these)
ROW_FIELDS = ["size", "partitionValues", "deletionVector", "stats"]
_ORDER_SHIFT = 32  # order = file index << 32 | line number


class ActionRows(NamedTuple):
    """Actions of one kind, row by row: replay key (`replay_keys`), version, order (larger is
    later in the log), size (0 where null), numRecords (0 where unknown), deleted rows (the DV's
    cardinality, 0 without one) and partition values: row i's map is
    `partitions[partition_index[i]]` (null where the index is -1), the distinct maps once where
    the kernel read them (`partition_maps` gives one per row)."""

    key: pa.Array
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
        return ActionRows(
            pa.concat_arrays([p.key for p in parts]),
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
    root = storage.local_root
    read = getattr(action_counts.KERNEL, "action_rows", None)
    if read is None or root is None or not files:
        return None
    if any(f.inline is not None or f.kind is LogKind.COMPACTION or f.fmt != "json" for f in files):
        return None
    rows, keys, key_ends, parts, part_ends, status, rest, index = read([os.fsencode(os.path.join(root, f.path)) for f in files])
    if np.frombuffer(status, np.int32).any():
        return None
    at = np.frombuffer(index, np.int64).reshape(-1, 3)
    offsets = np.zeros(len(at) + 1, np.int64)
    offsets[1:] = at[:, 2]
    try:
        lines = lines_from_parts(files, rest, offsets, at[:, 0], at[:, 1], versions)
    except InvalidLogError:
        return None
    table = np.frombuffer(rows, np.int64).reshape(-1, 7)
    n = len(table)
    key_offsets = np.zeros(n + 1, np.int64)
    key_offsets[1:] = np.frombuffer(key_ends, np.int64)
    key = pa.LargeStringArray.from_buffers(n, pa.py_buffer(key_offsets), pa.py_buffer(keys))
    part_offsets = np.zeros(n + 1, np.int64)
    part_offsets[1:] = np.frombuffer(part_ends, np.int64)
    has_parts = (table[:, 6] & 16) != 0
    texts = pa.LargeStringArray.from_buffers(
        n, pa.py_buffer(part_offsets), pa.py_buffer(parts), pa.py_buffer(np.packbits(has_parts, bitorder="little"))
    )
    try:
        key.validate(full=True)  # the kernel checked the strings' UTF-8: this is the assurance
        texts.validate(full=True)
    except pa.ArrowInvalid:
        return None
    version = np.asarray(versions, np.int64)[table[:, 1]] if n else np.zeros(0, np.int64)
    order = (table[:, 1] << _ORDER_SHIFT) | table[:, 2]
    out = []
    for code, kind in ((1, "add"), (2, "remove")):
        mine = np.flatnonzero(table[:, 0] == code)
        take = pa.array(mine, pa.int64())
        if code == 1:  # each distinct text parsed once
            encoded = texts.take(take).dictionary_encode()
            partitions = parse_map_texts(encoded.dictionary)
            partition_index = pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64)
        else:
            partitions, partition_index = pa.array([], STRING_MAP), np.full(len(mine), -1, np.int64)
        kernel_rows = ActionRows(
            key.take(take),
            version[mine],
            order[mine],
            table[mine, 3] if code == 1 else np.zeros(len(mine), np.int64),
            table[mine, 4] if code == 1 else np.zeros(len(mine), np.int64),
            table[mine, 5] if code == 1 else np.zeros(len(mine), np.int64),
            partitions,
            partition_index,
        )
        out.append(ActionRows.concat([kernel_rows, _rows_of_lines(lines, kind)]))
    return out[0], out[1], lines
