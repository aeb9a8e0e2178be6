"""Moving a replayed file state between versions: forward by the next commits, back by undoing them.

A version's active files are the replay of its log segment: a checkpoint (or none) and the JSON
commits after it. `ReplayedFiles` keeps, beside the active add actions, what moving them needs:

- `origin`: per active row, the replay order (`line`) of the action it comes from, -1 for a
  checkpoint row;
- `before`: the checkpoint rows that the segment's commits replaced (removed, or re-added with
  another deletion vector). The spec lets a `remove` omit every field but the path, so going
  back restores a file's `add` from here (or from an earlier commit), exactly, never from the
  remove.

`forward` applies the next commits' actions; `backward` undoes the commits after a version at or
after the checkpoint: the rows they touched are dropped and each touched key gets back its newest
action up to that version; `rebase` makes a state the lineage of a newer checkpoint it passed (the
checkpoint's rows the later commits replaced become `before`), so a moved state reads like a
cold open of its version. Every step is vectorized: the touched keys are found by one hash lookup
of the active paths (`replay.superseded_by`), kept rows are zero-copy slices of the previous
state's (`select_rows`), so states moved from one another share their buffers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.arrow import empty_table, take_rows
from deltaexplore.core.log.checkpoint_reader import CheckpointReader, select_rows
from deltaexplore.core.log.json_log import LogLines
from deltaexplore.core.log.replay import align, newest_per_key, replay, superseded_by
from deltaexplore.core.protocol.actions import DV_TYPE

__all__ = ["ReplayedFiles", "backward", "forward", "rebase", "replay_files", "split_at"]

#: a state's add actions are re-chunked when they hold more chunks than this: runs of small
#: chunks (commits applied one by one, slices between dropped rows) are joined, large ones kept
MAX_CHUNKS = 256
SMALL_CHUNK = 1 << 16


@dataclass(frozen=True)
class ReplayedFiles:
    """The active add actions of one version, and what moving them to another needs (see the
    module docstring)."""

    adds: pa.Table
    origin: np.ndarray
    before: pa.Table


def replay_files(lines: LogLines, reader: CheckpointReader | None) -> ReplayedFiles:
    """The active files of a segment (its checkpoint, then its commits' lines), replayed."""
    adds = lines.file_actions("add")
    removes = lines.file_actions("remove")
    ck = None
    replaced: list[pa.Table] = []
    if reader is not None:
        ck = reader.file_actions("add", extra=("stats_parsed",), exclude=superseded_by(adds, removes), superseded=replaced)
    table, origin = replay(ck, adds, removes, want="add")
    return ReplayedFiles(table, origin, _joined(replaced, table.schema))


def split_at(actions: pa.Table, version: int) -> tuple[pa.Table, pa.Table]:
    """(actions of versions <= `version`, actions after it) of a segment's file actions (rows in
    replay order, so versions never decrease): two zero-copy slices."""
    versions = actions.column("version").to_numpy()
    cut = int(np.searchsorted(versions, version, side="right"))
    return actions.slice(0, cut), actions.slice(cut)


def forward(files: ReplayedFiles, adds: pa.Table, removes: pa.Table) -> ReplayedFiles:
    """The state after the next commits, given their add and remove actions (with `line`, later
    in replay order than every action of the state)."""
    if adds.num_rows == 0 and removes.num_rows == 0:
        return files
    kept, origin, touched = _drop_touched(files, adds, removes)
    before = files.before
    replaced = np.flatnonzero(touched & (files.origin < 0))
    if len(replaced):
        before = _joined([before, take_rows(files.adds, replaced)], before.schema)
    survivors, lines = replay(None, adds, removes, want="add")
    return ReplayedFiles(_compact(_joined([kept, survivors], kept.schema)), np.concatenate([origin, lines]), before)


def backward(files: ReplayedFiles, adds: pa.Table, removes: pa.Table, version: int) -> ReplayedFiles:
    """The state at `version` from the state of a later version, given the add and remove actions
    of that state's commits (`version` is at or after the state's checkpoint)."""
    earlier_adds, later_adds = split_at(adds, version)
    earlier_removes, later_removes = split_at(removes, version)
    if later_adds.num_rows == 0 and later_removes.num_rows == 0:
        return files
    kept, origin, _ = _drop_touched(files, later_adds, later_removes)
    restored, restored_origin = _newest_adds(later_adds, later_removes, earlier_adds, earlier_removes, files.before, kept.schema)
    before = _rows_touched_by(files.before, earlier_adds, earlier_removes)
    adds_at = _compact(_joined([kept, restored], kept.schema))
    return ReplayedFiles(adds_at, np.concatenate([origin, restored_origin]), before)


def rebase(
    files: ReplayedFiles, adds: pa.Table, removes: pa.Table, checkpoint_version: int, *, data_change: bool
) -> ReplayedFiles:
    """The same state as the lineage of the checkpoint of `checkpoint_version` (passed by the
    state's commits, whose add and remove actions are given): rows from commits up to it count
    as checkpoint rows, with the checkpoint's `dataChange` flag (`data_change`: every row of
    the checkpoint holds it), and `before` holds the checkpoint's rows the later commits
    replaced."""
    earlier_adds, later_adds = split_at(adds, checkpoint_version)
    earlier_removes, later_removes = split_at(removes, checkpoint_version)
    before, _ = _newest_adds(later_adds, later_removes, earlier_adds, earlier_removes, files.before, files.adds.schema)
    origin = files.origin
    if earlier_adds.num_rows:
        last = int(pc.max(earlier_adds.column("line")).as_py())
        origin = np.where(origin <= last, -1, origin)
    flags = files.adds.column("dataChange")
    from_checkpoint = pa.array(origin < 0)
    flags = pc.if_else(
        from_checkpoint, pa.scalar(data_change), flags.combine_chunks() if flags.num_chunks != 1 else flags.chunk(0)
    )
    index = files.adds.schema.get_field_index("dataChange")
    adds_at = files.adds.set_column(index, files.adds.field(index), flags.cast(files.adds.field(index).type))
    if before.num_rows:
        b = before.schema.get_field_index("dataChange")
        before = before.set_column(b, before.field(b), pa.array(np.full(before.num_rows, data_change), before.field(b).type))
    return ReplayedFiles(adds_at, origin, before)


def _bools(mask: pa.Array | pa.ChunkedArray) -> np.ndarray:
    if isinstance(mask, pa.ChunkedArray):
        mask = mask.combine_chunks()
    return pc.fill_null(mask, False).to_numpy(zero_copy_only=False).astype(bool)


def _drop_touched(files: ReplayedFiles, adds: pa.Table, removes: pa.Table) -> tuple[pa.Table, np.ndarray, np.ndarray]:
    """The state's rows whose key no action of `adds`/`removes` touches (zero-copy slices), their
    origins, and the mask of the touched rows."""
    match = superseded_by(adds, removes)
    mask = match(files.adds) if match is not None and files.adds.num_rows else None
    if mask is None:
        return files.adds, files.origin, np.zeros(files.adds.num_rows, dtype=bool)
    touched = _bools(mask)
    return select_rows(files.adds, ~touched), files.origin[~touched], touched


def _rows_touched_by(table: pa.Table, adds: pa.Table, removes: pa.Table) -> pa.Table:
    """Rows of `table` whose key an action of `adds`/`removes` touches."""
    match = superseded_by(adds, removes)
    mask = match(table) if match is not None and table.num_rows else None
    return table.slice(0, 0) if mask is None else table.filter(mask)


def _key_table(table: pa.Table, line: pa.Array | pa.ChunkedArray) -> pa.Table:
    """`path`, `deletionVector` (one type for checkpoint and JSON rows) and `line` of `table`."""
    dv = table.column("deletionVector")
    if dv.type != DV_TYPE:
        dv = dv.cast(DV_TYPE)
    return pa.table({"path": table.column("path").cast(pa.large_string()), "deletionVector": dv, "line": line})


def _newest_adds(
    touch_adds: pa.Table,
    touch_removes: pa.Table,
    adds: pa.Table,
    removes: pa.Table,
    before: pa.Table,
    schema: pa.Schema,
) -> tuple[pa.Table, np.ndarray]:
    """For every key `touch_adds`/`touch_removes` touch: its newest action among `adds`,
    `removes` (earlier commits, with `line`) and `before` (checkpoint rows, older than any
    commit), kept when it is an add. The rows (with `schema`) and their origins."""
    before = _rows_touched_by(before, touch_adds, touch_removes)
    adds = _rows_touched_by(adds, touch_adds, touch_removes)
    removes = _rows_touched_by(removes, touch_adds, touch_removes)
    if before.num_rows == 0 and adds.num_rows == 0:
        return empty_table(schema), np.zeros(0, np.int64)
    candidates = pa.concat_tables(
        [
            _key_table(before, pa.array(np.full(before.num_rows, -1, np.int64))),
            _key_table(adds, adds.column("line")),
        ]
    )
    rows = newest_per_key(candidates, _key_table(removes, removes.column("line")))
    from_before = rows[rows < before.num_rows]
    from_commits = rows[rows >= before.num_rows] - before.num_rows
    commit_rows = take_rows(adds, from_commits)
    restored = [take_rows(before, from_before), commit_rows.drop_columns(["version", "line"])]
    origin = np.concatenate([np.full(len(from_before), -1, np.int64), commit_rows.column("line").to_numpy()])
    return _joined(restored, schema), origin.astype(np.int64)


def _joined(tables: list[pa.Table], schema: pa.Schema) -> pa.Table:
    """`tables` one after the other with `schema`'s columns (missing ones null)."""
    parts = [t if t.schema == schema else align(t, schema) for t in tables if t.num_rows]
    if not parts:
        return empty_table(schema)
    return parts[0] if len(parts) == 1 else pa.concat_tables(parts)


def _compact(table: pa.Table) -> pa.Table:
    """`table` with its runs of small chunks joined once it holds more than `MAX_CHUNKS` chunks
    (large chunks, e.g. a checkpoint's, are kept as they are: never copied)."""
    if max((c.num_chunks for c in table.columns), default=0) <= MAX_CHUNKS:
        return table
    out: list[pa.RecordBatch] = []
    run: list[pa.RecordBatch] = []

    def flush() -> None:
        if run:
            out.extend(pa.Table.from_batches(run, schema=table.schema).combine_chunks().to_batches())
            run.clear()

    for batch in table.to_batches():
        if batch.num_rows >= SMALL_CHUNK:
            flush()
            out.append(batch)
        else:
            run.append(batch)
    flush()
    return pa.Table.from_batches(out, schema=table.schema)
