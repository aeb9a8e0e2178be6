"""What a commit's add and remove actions count for history: per action its commit, size,
live rows (numRecords less the deletion vector's cardinality) and whether it carries a DV
(`action_counts`), and their sums per commit (`commit_counts`).

The compiled scanner (`_count_kernel.c`, built by setup.py where a C compiler exists) reads
these straight off the lines of the commits; the lines it is not sure about, and every line
where it is not built, are parsed the ordinary way (`LogLines.file_actions`, one `pyarrow.json`
pass) and give the same values (tests compare the two on every corpus table and on odd lines).
For commits on a local disk, `commit_counts` has it read the files too: each file is read into
one buffer, split into lines and its add/remove lines summed in the same compiled pass; only the
other lines (commitInfo, metaData, protocol, ...) and the unsure ones become `LogLines`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.arrow import text_buffers
from deltaexplore.core.log.file_names import LogFile, LogKind
from deltaexplore.core.log.json_log import LogLines, lines_from_parts, read_log_files
from deltaexplore.core.scan.stats import num_records
from deltaexplore.errors import InvalidLogError
from deltaexplore.storage import Storage

try:  # the compiled scanner: setup.py builds it where a C compiler exists
    from deltaexplore.core.scan import _count_kernel as _compiled_kernel
except ImportError:  # pragma: no cover - depends on the install
    _compiled_kernel = None  # type: ignore[assignment]

__all__ = ["COUNT_FIELDS", "KERNEL", "SUMS", "ActionCounts", "CommitCounts", "action_counts", "commit_counts"]

#: the scanner used by `action_counts` (None: not built; tests set it to compare both paths)
KERNEL = _compiled_kernel
#: the fields of a file action the counts need (not partition values or tags)
COUNT_FIELDS = ("size", "stats", "deletionVector")


class ActionCounts(NamedTuple):
    """Per add or remove action, in line order: its commit version, size (0 where null) and
    whether it is known, live rows (0 where unknown) and whether they are known, and whether it
    carries a deletion vector."""

    version: np.ndarray
    size: np.ndarray
    size_known: np.ndarray
    rows: np.ndarray
    rows_known: np.ndarray
    dv: np.ndarray


def action_counts(lines: LogLines, kind: str) -> ActionCounts:
    """The counts of every `kind` ("add" or "remove") action of `lines`."""
    idx = lines.where(kind)
    if KERNEL is None or len(idx) == 0:
        return _parsed_counts(lines, kind)
    offsets, data = text_buffers(lines.text)
    starts = np.ascontiguousarray(offsets[idx])
    ends = np.ascontiguousarray(offsets[idx + 1])
    n = len(idx)
    flags = np.zeros(n, np.uint8)
    size, records, card = np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, np.int64)
    KERNEL.scan(data.data, starts.data, ends.data, flags.data, size.data, records.data, card.data)
    known_rows = (flags & 4) != 0
    out = ActionCounts(
        lines.version[idx],
        size,
        (flags & 2) != 0,
        np.where(known_rows, records - card, 0),
        known_rows,
        (flags & 8) != 0,
    )
    redo = np.flatnonzero(flags == 0)
    if len(redo):
        parsed = _parsed_counts(lines.take(idx[redo]), kind)
        for mine, theirs in zip(out, parsed):
            mine[redo] = theirs
    return out


#: what `CommitCounts.sums` holds per commit and kind, in this order (the kernel's `NCOUNTS`)
SUMS = ("files", "bytes", "bytes_unknown", "rows", "rows_unknown", "dvs")
KINDS = ("add", "remove")


class CommitCounts(NamedTuple):
    """Sums over each commit's add and remove actions, and the lines they were not taken from.

    `sums[i, k, j]`: for file i (of the files given), kind k (`KINDS`: add, remove), the sum
    `SUMS[j]`: actions, bytes (0 where null), actions without a size, live rows (where known),
    actions without numRecords, actions with a deletion vector. `lines`: the files' lines
    without the add and remove lines summed by the compiled pass (all of them on the plain
    path): every other action (commitInfo, metaData, protocol, cdc, ...) is there."""

    sums: np.ndarray
    lines: LogLines


def commit_counts(storage: Storage, files: Sequence[LogFile], versions: Sequence[int]) -> CommitCounts:
    """The counts of commit `files` (of `versions`, increasing): read, split and summed by the
    compiled pass where the kernel is built and the files are on a local disk, else read with
    `read_log_files` and summed from `action_counts` (the same sums; tests compare them)."""
    compiled = _compiled_commit_counts(storage, files, versions)
    if compiled is not None:
        return compiled
    lines = read_log_files(storage, files, versions)
    sums = np.zeros((len(files), len(KINDS), len(SUMS)), np.int64)
    _add_sums(sums, lines, versions)
    return CommitCounts(sums, lines)


def _add_sums(sums: np.ndarray, lines: LogLines, versions: Sequence[int]) -> None:
    """Add the sums of the add and remove actions of `lines` (commits of `versions`)."""
    order = np.asarray(versions, np.int64)
    for k, kind in enumerate(KINDS):
        c = action_counts(lines, kind)
        if not len(c.version):
            continue
        at = np.searchsorted(order, c.version)
        for j, values in enumerate((None, c.size, ~c.size_known, c.rows, ~c.rows_known, c.dv)):
            np.add.at(sums[:, k, j], at, 1 if values is None else values.astype(np.int64))


def kernel_paths(storage: Storage, files: Sequence[LogFile]) -> list[bytes] | None:
    """The local paths of commit `files` for a compiled pass over whole files; None where it does
    not apply (an object store, no files, inline or compaction files)."""
    root = storage.local_root
    if root is None or not files:
        return None
    if any(f.inline is not None or f.kind is LogKind.COMPACTION or f.fmt != "json" for f in files):
        return None
    return [os.fsencode(os.path.join(root, f.path)) for f in files]


def lines_left(
    files: Sequence[LogFile], rest: bytes | memoryview, index: bytes | memoryview, versions: Sequence[int]
) -> LogLines:
    """The lines a compiled pass left to Python (`rest`, placed by `index`: a (file, line, end)
    row each) as `LogLines`. Raises `InvalidLogError` as the plain parse does."""
    at = np.frombuffer(index, np.int64).reshape(-1, 3)
    offsets = np.zeros(len(at) + 1, np.int64)
    offsets[1:] = at[:, 2]
    return lines_from_parts(files, rest, offsets, at[:, 0], at[:, 1], versions)


def _compiled_commit_counts(storage: Storage, files: Sequence[LogFile], versions: Sequence[int]) -> CommitCounts | None:
    """`commit_counts` by the kernel's `count_files`; None where it does not apply (no kernel,
    an object store, inline or compaction files) or a file could not be read or held text
    that is not UTF-8 (the plain path then raises its typed error)."""
    count_files = getattr(KERNEL, "count_files", None)
    if count_files is None:
        return None
    paths = kernel_paths(storage, files)
    if paths is None:
        return None
    counts, status, rest, index = count_files(paths)
    if np.frombuffer(status, np.int32).any():
        return None
    try:
        lines = lines_left(files, rest, index, versions)
    except InvalidLogError:
        return None
    sums = np.frombuffer(counts, np.int64).reshape(len(files), len(KINDS), len(SUMS)).copy()
    _add_sums(sums, lines, versions)
    return CommitCounts(sums, lines)


def _parsed_counts(lines: LogLines, kind: str) -> ActionCounts:
    """The counts from the ordinary parse of the lines (`LogLines.file_actions`)."""
    t = lines.file_actions(kind, COUNT_FIELDS)
    size_col = t.column("size")
    records = num_records(t)
    dv = t.column("deletionVector").combine_chunks()
    deleted = (
        pc.fill_null(dv.field("cardinality"), 0) if len(dv) and dv.null_count < len(dv) else pa.array(np.zeros(len(dv), np.int64))
    )
    deleted = pc.if_else(pc.is_valid(dv), deleted, 0) if len(dv) else deleted
    live = pc.subtract(records, deleted)
    return ActionCounts(
        t.column("version").to_numpy().astype(np.int64),
        pc.fill_null(size_col, 0).to_numpy().astype(np.int64),
        pc.is_valid(size_col).to_numpy(zero_copy_only=False).astype(bool),
        pc.fill_null(live, 0).to_numpy(zero_copy_only=False).astype(np.int64),
        pc.is_valid(live).to_numpy(zero_copy_only=False).astype(bool),
        pc.is_valid(dv).to_numpy(zero_copy_only=False).astype(bool) if len(dv) else np.zeros(0, bool),
    )
