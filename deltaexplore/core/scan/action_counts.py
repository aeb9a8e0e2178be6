"""What a commit's add and remove actions count for history: per action its commit, size,
live rows (numRecords less the deletion vector's cardinality) and whether it carries a DV.

The compiled scanner (`_count_kernel.c`, built by setup.py where a C compiler exists) reads
these straight off the lines of the commits; the lines it is not sure about, and every line
where it is not built, are parsed the ordinary way (`LogLines.file_actions`, one `pyarrow.json`
pass) and give the same values (tests compare the two on every corpus table and on odd lines).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.arrow import text_buffers
from deltaexplore.core.log.json_log import LogLines
from deltaexplore.core.scan.stats import num_records

try:  # the compiled scanner: setup.py builds it where a C compiler exists
    from deltaexplore.core.scan import _count_kernel as _compiled_kernel
except ImportError:  # pragma: no cover - depends on the install
    _compiled_kernel = None  # type: ignore[assignment]

__all__ = ["COUNT_FIELDS", "KERNEL", "ActionCounts", "action_counts"]

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
