"""The net row diff of two versions: the rows that truly differ, read from the files that differ.

`plan_row_diff` takes the file changes of `diff_files` (from the log) and says what to read: the
rows of files removed between the versions (live at the older one), of files added (live at the
newer one), and, for a file re-added with another deletion vector, the rows one DV deletes and
the other does not. `net_rows` counts every distinct row on both sides (older -1, newer +1) in
one polars group-by: rows rewritten unchanged (UPDATE and copy-on-write MERGE of other rows,
OPTIMIZE, DV purge) cancel out, and what is left is the multiset difference of the two versions.
Before it, `rows_in_place.cancel_in_place` drops the rows a rewrite kept at their position (a
removed file and the added file that rewrote it, compared row by row), so only the rest is hashed.
`shape_rows` turns that into the declared result, unkeyed (one row per distinct changed row
with its count) or keyed (old and new values side by side, changed columns named). Rows are
compared in the newer version's schema: columns matched by column mapping id (renames) else by
name, a column missing at the older version is null there, widened types cast. Spark runs the
same plan (`deltaexplore.spark.row_diff`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.arrow import take_rows
from deltaexplore.core.protocol.deletion_vectors import DeletionVectorDescriptor, read_deletion_vector
from deltaexplore.core.protocol.schema import StructField, to_arrow_type
from deltaexplore.core.scan.data_file import row_counts
from deltaexplore.core.scan.partition_values import partition_table
from deltaexplore.core.scan.plan import ScanPlan
from deltaexplore.core.snapshot import Snapshot
from deltaexplore.errors import StorageError
from deltaexplore.inspect.diff import file_changes, replayed_adds, resolve_versions
from deltaexplore.inspect.errors import InspectError
from deltaexplore.inspect.rows_in_place import cancel_in_place, compared_as
from deltaexplore.inspect.schemas import diff_rows_schema
from deltaexplore.inspect.snapshots import table_of

if TYPE_CHECKING:
    from deltaexplore.core.table import Table

__all__ = ["RowDiffPlan", "align", "diff_rows", "net_rows", "plan_row_diff", "shape_rows"]

COUNT = "_count"
CHANGE = "_change"
CHANGED = "_changed_columns"

#: ``progress(fraction, message)``
Progress = Callable[[float, str], None]
#: the share of a row diff's progress that reading the files stands for (comparing the rest)
READ_SHARE = 0.6


@dataclass(frozen=True)
class Column:
    """One compared column: its name and type at the newer version, its name at the older one."""

    name: str
    type: pa.DataType
    older_name: str | None  # None: absent at the older version (null there)


@dataclass
class RowDiffPlan:
    """What a net row diff reads (add actions of each side, log field names)."""

    older: Snapshot
    newer: Snapshot
    columns: list[Column]
    key: list[str]
    removed: pa.Table  # adds of `older` absent from `newer`: their live rows are old rows
    added: pa.Table  # adds of `newer` absent from `older`: their live rows are new rows
    dv_before: pa.Table  # adds of `older` re-added with another DV (same paths, same order as dv_after)
    dv_after: pa.Table  # the same files at `newer`
    backwards: bool  # v1 > v2: old and new swap in the result

    @property
    def files(self) -> int:
        return self.removed.num_rows + self.added.num_rows + self.dv_after.num_rows

    @property
    def bytes(self) -> int:
        """Data file bytes plus the deletion vector bytes read."""
        total = 0
        for t in (self.removed, self.added, self.dv_after):
            if t.num_rows:
                total += int(pc.sum(t.column("size")).as_py() or 0)
        for t in (self.removed, self.added, self.dv_before, self.dv_after):
            if t.num_rows:
                dv = pc.struct_field(t.column("deletionVector").combine_chunks(), "sizeInBytes")
                total += int(pc.sum(dv).as_py() or 0)
        return total


def _columns(older: Snapshot, newer: Snapshot, columns: list[str] | None) -> list[Column]:
    """The newer schema's top-level columns (or `columns` of them), each found at the older
    version by column mapping id, else by name."""
    new_fields = list(newer.schema.fields)
    names = [f.name for f in new_fields]
    if columns is not None:
        if isinstance(columns, str) or not all(isinstance(c, str) for c in columns):
            raise InspectError(f"columns must be a list of column names, got {columns!r}")
        missing = [c for c in columns if c not in names]
        if missing:
            raise InspectError(f"columns {missing} are not in version {newer.version} (columns: {', '.join(names)})")
        new_fields = [f for f in new_fields if f.name in set(columns)]
    old_fields = list(older.schema.fields) if older.has_metadata else []
    by_id = {f.field_id: f for f in old_fields if f.field_id is not None}
    by_name = {f.name: f for f in old_fields}
    out = []
    for f in new_fields:
        match: StructField | None = by_id.get(f.field_id) if f.field_id is not None else None
        if match is None and f.field_id is None:
            match = by_name.get(f.name)
        out.append(Column(f.name, to_arrow_type(f.type), None if match is None else match.name))
    return out


def plan_row_diff(
    obj: Table | Snapshot, v1: int | None, v2: int | None, *, key: Any = None, columns: list[str] | None = None
) -> RowDiffPlan:
    """What the net row diff of `v1` -> `v2` reads (see the module docstring).

    Raises:
        InspectError: bad versions, a key or column not in the newer version.
    """
    v1, v2 = resolve_versions(obj, v1, v2)
    lo, hi = min(v1, v2), max(v1, v2)
    changes, older, newer, _ = file_changes(obj, lo, hi)
    replayed = replayed_adds(obj, lo, hi)
    keys = [key] if isinstance(key, str) else list(key or [])
    if not all(isinstance(k, str) for k in keys):
        raise InspectError(f"key must be a column name or a list of them, got {key!r}")
    names = newer.schema.names
    bad = [k for k in keys if k not in names]
    if bad:
        raise InspectError(f"key column(s) {bad} are not in version {newer.version} (columns: {', '.join(names)})")
    if columns is not None and keys:
        columns = [*keys, *[c for c in columns if c not in keys]]
    cols = _columns(older, newer, columns)
    change = changes.column("change")

    def adds(snap: Snapshot, kind: str, other: str, known: pa.Table | None) -> tuple[pa.Table, pa.Table]:
        """The add actions at `snap` of the paths changed as `kind` and as `other`, each sorted
        by path: taken from those `file_changes` replayed (`known`), else one replay of the
        paths of both."""
        mask = pc.is_in(change, pa.array([kind, other]))
        paths = changes.filter(mask).column("path").combine_chunks()
        if known is not None:
            got = known.filter(pc.is_in(known.column("path"), paths))
        else:
            got = snap.add_actions_for(paths)
        got = got.take(pc.sort_indices(got.column("path")))
        kinds = changes.filter(mask)
        wanted = kinds.filter(pc.equal(kinds.column("change"), kind)).column("path")
        first = pc.is_in(got.column("path"), wanted.combine_chunks())
        return got.filter(first), got.filter(pc.invert(first))

    known_old, known_new = replayed if replayed is not None else (None, None)
    removed, dv_before = adds(older, "removed", "dv_changed", known_old)
    added, dv_after = adds(newer, "added", "dv_changed", known_new)
    return RowDiffPlan(
        older=older,
        newer=newer,
        columns=cols,
        key=keys,
        removed=removed,
        added=added,
        dv_before=dv_before,
        dv_after=dv_after,
        backwards=v1 > v2,
    )


def scan_of(snapshot: Snapshot, files: pa.Table, *, without_dvs: bool = False, names: list[str] | None = None) -> ScanPlan:
    """A scan of exactly `files` (add actions of `snapshot`): the columns `names` (every column
    when None); with `without_dvs` the files' deletion vectors are not applied (every physical
    row, in file order)."""
    if without_dvs:
        i = files.schema.get_field_index("deletionVector")
        files = files.set_column(i, "deletionVector", pa.nulls(files.num_rows, files.schema.field(i).type))
    fields = list(snapshot.schema.fields)
    if names is not None:
        wanted = set(names)
        fields = [f for f in fields if f.name in wanted]
    return ScanPlan(snapshot, fields, None, files, partition_table(snapshot, files), files.num_rows)


def align(rows: pa.Table, columns: list[Column], *, older: bool) -> pa.Table:
    """Rows read at one version in the compared columns (the newer schema's names and types)."""
    out = []
    for c in columns:
        name = c.older_name if older else c.name
        if name is None or name not in rows.column_names:
            out.append(pa.nulls(rows.num_rows, c.type))
            continue
        col = rows.column(name)
        if col.type != c.type:
            try:
                col = col.cast(c.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise InspectError(
                    f"column {c.name!r} changed type from {col.type} to {c.type} between the versions: "
                    f"its rows cannot be compared ({exc}); leave it out with columns=[...]"
                ) from exc
        out.append(col)
    return pa.Table.from_arrays(out, schema=pa.schema([pa.field(c.name, c.type) for c in columns]))


def _dv_positions(snapshot: Snapshot, files: pa.Table) -> list[np.ndarray]:
    out = []
    paths = files.column("path").to_pylist()
    for raw, d in zip(paths, files.column("deletionVector").to_pylist()):
        if d is None:
            out.append(np.zeros(0, np.int64))
        else:
            out.append(
                read_deletion_vector(snapshot.storage, DeletionVectorDescriptor.from_dict(d), data_file=raw).astype(np.int64)
            )
    return out


#: threads reading the files of a piece: one per core (pyarrow decodes each file's columns in
#: parallel already; more Python threads only cost their start)
READERS = min(8, os.cpu_count() or 1)
#: a diff's files are read in pieces of a twentieth of its bytes, at least `MIN_PIECE_BYTES` and
#: at most `PIECE_BYTES`; `progress` is called between them (a small diff is one piece)
PIECE_BYTES = 256 * 1024 * 1024
MIN_PIECE_BYTES = 8 * 1024 * 1024


def _pieces(files: pa.Table, total: int) -> list[pa.Table]:
    """`files` cut into consecutive pieces of about a twentieth of `total` bytes (see `PIECE_BYTES`)."""
    if files.num_rows == 0:
        return []
    piece = max(1, min(PIECE_BYTES, max(MIN_PIECE_BYTES, total // 20)))
    ends = np.cumsum(np.asarray(files.column("size").to_numpy(zero_copy_only=False), np.int64)) // piece
    cuts = np.flatnonzero(np.diff(ends)) + 1
    bounds = [0, *cuts.tolist(), files.num_rows]
    return [files.slice(a, b - a) for a, b in pairwise(bounds) if b > a]


def read_sides(plan: RowDiffPlan, progress: Progress | None = None) -> tuple[pa.Table, pa.Table]:
    """(old rows, new rows) in the compared columns, read locally: only those columns, the
    files of each side in pieces; `progress(fraction of bytes read, message)` is called before
    and after each piece (an exception it raises stops the read: how a caller cancels)."""
    total = max(1, plan.bytes)
    done = 0

    def report(files: pa.Table, what: str) -> None:
        nonlocal done
        if progress is not None:
            progress(min(1.0, done / total), f"read {done / 2**20:,.1f} of {total / 2**20:,.1f} MiB ({what})")
        if files.num_rows:
            done += int(pc.sum(files.column("size")).as_py() or 0)

    def read(snapshot: Snapshot, files: pa.Table, *, older: bool, without_dvs: bool = False) -> list[pa.Table]:
        names = [n for c in plan.columns if (n := (c.older_name if older else c.name)) is not None]
        out = []
        for piece in _pieces(files, total):
            report(piece, "files removed" if older else "files added")
            rows = scan_of(snapshot, piece, without_dvs=without_dvs, names=names).to_arrow(max_workers=READERS)
            out.append(align(rows, plan.columns, older=older))
        return out or [align(pa.table({}), plan.columns, older=older)]

    old = read(plan.older, plan.removed, older=True)
    new = read(plan.newer, plan.added, older=False)
    if plan.dv_after.num_rows:
        before, after = _dv_positions(plan.older, plan.dv_before), _dv_positions(plan.newer, plan.dv_after)
        whole = pa.concat_tables(read(plan.newer, plan.dv_after, older=False, without_dvs=True))
        starts = np.concatenate([[0], np.cumsum(np.asarray(row_counts(plan.newer, plan.dv_after), np.int64))])
        gone = [s + np.setdiff1d(a, b) for s, a, b in zip(starts, after, before)]
        back = [s + np.setdiff1d(b, a) for s, a, b in zip(starts, after, before)]
        old.append(whole.take(pa.array(np.concatenate(gone).astype(np.int64))))
        new.append(whole.take(pa.array(np.concatenate(back).astype(np.int64))))
    if progress is not None:
        progress(1.0, f"read {plan.files:,} files, {plan.bytes / 2**20:,.1f} MiB")
    return pa.concat_tables(old), pa.concat_tables(new)


def net_rows(old: pa.Table, new: pa.Table, read_order: Callable[[np.ndarray, pa.Table], np.ndarray] | None = None) -> pa.Table:
    """The multiset difference: one row per distinct row whose count differs, with `_count` =
    copies at the newer side minus copies at the older side (never 0), in the order rows were
    read. Rows are grouped by a 64-bit hash of the whole row (`_hashed_groups`, exact: a hash
    shared by rows that differ falls back on grouping by every column). `read_order(rows,
    their values)`: where the rows were read, when `old` and `new` are what is left of the rows
    read (`rows_in_place.Kept.read_order`)."""
    both = pa.concat_tables([old, new])
    if both.num_rows == 0:
        return both.append_column(COUNT, pa.array([], pa.int64()))
    frame = pl.from_arrow(both)  # one chunk: a gather from a file's chunks costs ~4x more
    assert isinstance(frame, pl.DataFrame)
    names = list(frame.columns)
    hashed = _hashed_groups(frame, old.num_rows, both) if names else None
    if not names:
        first, count = np.zeros(1, np.int64), np.array([new.num_rows - old.num_rows], np.int64)
    elif hashed is not None:
        first, count = hashed
    else:
        side = np.concatenate([np.full(old.num_rows, -1, np.int64), np.ones(new.num_rows, np.int64)])
        work = frame.with_columns(pl.Series("__side", side), pl.int_range(pl.len(), dtype=pl.Int64).alias("__row"))
        groups = work.group_by(names).agg(pl.col("__row").first(), pl.col("__side").sum())
        first, count = groups.get_column("__row").to_numpy(), groups.get_column("__side").to_numpy()
    keep = count != 0
    first, count = first[keep].astype(np.int64), count[keep]
    if read_order is None:
        order = np.argsort(first, kind="stable")
        rows = take_rows(both, first[order])  # batch by batch: no concatenation of `both`
    else:
        values = take_rows(both, first)
        order = np.argsort(read_order(first, values), kind="stable")
        rows = values.take(pa.array(order, pa.int64()))
    return rows.append_column(COUNT, pa.array(count[order].astype(np.int64)))


#: `_hashed_groups` sorts (hash, row) packed in one 64-bit word, the row in the low bits, for at
#: most 2**`PACKED_ROW_BITS` rows (the hash keeps >= 40 bits: rows that differ rarely share
#: them, and when they do the exactness check falls back); more rows: an argsort of the hashes
PACKED_ROW_BITS = 24


def _sorted_by_hash(hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rows in the order of their hashes, rows of one hash in increasing order; the hashes
    in that order, maybe without their low bits)."""
    n = len(hashes)
    bits = max(1, (n - 1).bit_length())
    if bits <= PACKED_ROW_BITS:
        shift = np.uint64(bits)
        keys = np.sort((hashes >> shift << shift) | np.arange(n, dtype=np.uint64))
        return (keys & np.uint64((1 << bits) - 1)).astype(np.int64), keys >> shift
    order = np.argsort(hashes, kind="stable")
    return order, hashes[order]


def _hashed_groups(frame: pl.DataFrame, older_rows: int, table: pa.Table) -> tuple[np.ndarray, np.ndarray] | None:
    """(first row of each distinct row whose net count is not 0, that count), rows grouped by
    a 64-bit hash of the whole row (the first `older_rows` rows count -1, the others +1): the
    rows sorted by hash, each compared with the one before it when their hashes are equal
    (`_differs`: column by column, only those pairs); None when two rows that differ share a
    hash, or a column cannot be hashed or compared."""
    try:
        hashes = frame.hash_rows(seed=0).to_numpy()
    except pl.exceptions.PolarsError:
        return None
    order, sorted_hashes = _sorted_by_hash(hashes)
    same = sorted_hashes[1:] == sorted_hashes[:-1]
    pairs = np.flatnonzero(same)
    if len(pairs):
        before, after = order[pairs], order[pairs + 1]
        for i, name in enumerate(frame.columns):
            try:
                differs = _differs(table.column(i), frame.get_column(name), before, after)
            except (pl.exceptions.PolarsError, pa.ArrowException):
                return None
            if differs:
                return None
    starts = np.flatnonzero(np.concatenate([[True], ~same]))
    newer = np.cumsum(order >= older_rows)  # rows of the newer side up to each sorted row
    newer_in_group = newer[np.append(starts[1:], len(order)) - 1] - np.where(starts > 0, newer[starts - 1], 0)
    count = 2 * newer_in_group - np.diff(starts, append=len(order))
    keep = count != 0  # rows that cancel out need no first row
    return order[starts[keep]], count[keep]  # rows of one hash are in increasing order


def _differs(column: pa.ChunkedArray, series: pl.Series, before: np.ndarray, after: np.ndarray) -> bool:
    """Whether row `before[i]` differs from row `after[i]` in this column for some i. Numbers,
    dates and times compare as their bits (NaN equals NaN of the same bits, -0.0 differs from
    0.0: the exact fallback decides), booleans, strings and binary as Arrow values; other
    types as polars values (`ne_missing`)."""
    as_type = compared_as(column.type)
    if as_type is None:
        return bool(series.gather(pl.Series(before)).ne_missing(series.gather(pl.Series(after))).any())
    if column.null_count == 0 and (pa.types.is_integer(column.type) or pa.types.is_floating(column.type)):
        values = series.to_numpy()  # numpy gathers plain numbers ~5x faster; polars holds them in one chunk
        if values.dtype.itemsize * 8 == as_type.bit_width:  # the same numbers (float16: polars widens it)
            bits = values.view(as_type.to_pandas_dtype())
            return bool((bits[before] != bits[after]).any())
    arr = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    if as_type != arr.type:
        arr = arr.view(as_type)
    if arr.null_count == 0 and pa.types.is_integer(as_type):
        bits = arr.to_numpy(zero_copy_only=False)
        return bool((bits[before] != bits[after]).any())
    a, b = arr.take(pa.array(before)), arr.take(pa.array(after))
    equal = pc.equal(a, b)
    if arr.null_count:
        equal = pc.or_(pc.fill_null(equal, False), pc.and_(pc.is_null(a), pc.is_null(b)))
    return not pc.all(equal).as_py()


def shape_rows(net: pa.Table, key: list[str], *, backwards: bool, meta: dict[str, str]) -> pa.Table:
    """The declared result (`schemas.diff_rows_schema`) from `net_rows`' output."""
    count = net.column(COUNT).combine_chunks()
    if backwards:
        count = pc.negate(count)
    values = net.drop_columns([COUNT])
    fields = list(values.schema)
    if not key:
        change = pc.if_else(pc.greater(count, 0), "insert", "delete")
        flat = {CHANGE: change, COUNT: pc.abs(count), **{f.name: values.column(f.name) for f in fields}}
        return _conform(flat, diff_rows_schema(fields, None), meta, order=[CHANGE])
    if net.num_rows and int(pc.max(pc.abs(count)).as_py()) > 1:
        i = int(np.flatnonzero(np.abs(count.to_numpy()) > 1)[0])
        shown = {k: values.column(k)[i].as_py() for k in key}
        raise InspectError(f"key {key} is not unique among the changed rows: {shown} has {abs(int(count[i].as_py()))} copies")
    deleted = values.filter(pc.less(count, 0))
    inserted = values.filter(pc.greater(count, 0))
    if deleted.num_rows + inserted.num_rows <= SMALL_PAIRING and all(_plain_key(deleted.schema.field(k).type) for k in key):
        di, ni = _pairs_in_python(deleted.select(key), inserted.select(key), key)
    else:
        di, ni = _pairs(deleted.select(key), inserted.select(key), key)
    before = deleted.take(di)
    after = inserted.take(ni)
    has_b, has_a = pc.is_valid(di), pc.is_valid(ni)
    change = pc.if_else(pc.and_(has_b, has_a), "update", pc.if_else(has_b, "delete", "insert"))
    others = [f for f in fields if f.name not in key]
    changed = _changed_columns(before, after, [f.name for f in others])
    changed = pc.if_else(pc.equal(change, "update"), changed, pa.nulls(len(di), pa.list_(pa.string())))
    out: dict[str, Any] = {CHANGE: change, CHANGED: changed}
    for k in key:
        out[k] = pc.coalesce(before.column(k), after.column(k))
    for f in others:
        out[f"before.{f.name}"] = before.column(f.name)
        out[f"after.{f.name}"] = after.column(f.name)
    key_fields = [f for f in fields if f.name in key]
    return _conform(out, diff_rows_schema(key_fields + others, key), meta, order=None)


#: at most this many changed rows (both sides) are paired by key in Python (`_pairs_in_python`):
#: a few polars queries on a handful of rows cost more than the pairing itself
SMALL_PAIRING = 2000


def _plain_key(t: pa.DataType) -> bool:
    """Whether Python's equality and order of this type's values are polars' (join and sort)."""
    kinds = (pa.types.is_integer, pa.types.is_string, pa.types.is_large_string, pa.types.is_date, pa.types.is_boolean)
    return any(kind(t) for kind in kinds)


def _key_error(key: list[str], side: str, shown: tuple[Any, ...]) -> InspectError:
    return InspectError(f"key {key} is not unique among the changed rows of the {side} version: {shown} repeats")


def _pairs(deleted: pa.Table, inserted: pa.Table, key: list[str]) -> tuple[pa.Array, pa.Array]:
    """(row of `deleted`, row of `inserted`) of each key of either side, sorted by key, nulls
    last (a null where a side lacks the key): a full join in polars.

    Raises:
        InspectError: a key repeated at one side.
    """
    d = _frame(deleted).with_columns(pl.int_range(pl.len(), dtype=pl.Int64).alias("__d"))
    n = _frame(inserted).with_columns(pl.int_range(pl.len(), dtype=pl.Int64).alias("__n"))
    for side, frame in (("older", d), ("newer", n)):
        dup = frame.group_by(key).len().filter(pl.col("len") > 1)
        if dup.height:
            raise _key_error(key, side, dup.row(0)[:-1])
    pairs = d.join(n, on=key, how="full", nulls_equal=True, coalesce=True).sort(key, nulls_last=True)
    return pairs.get_column("__d").to_arrow(), pairs.get_column("__n").to_arrow()


def _pairs_in_python(deleted: pa.Table, inserted: pa.Table, key: list[str]) -> tuple[pa.Array, pa.Array]:
    """`_pairs` for a few rows of plain key types (`_plain_key`), in Python: the same pairs,
    order and errors."""
    sides = []
    for side, t in (("older", deleted), ("newer", inserted)):
        rows: dict[tuple[Any, ...], int] = {}
        for i, k in enumerate(zip(*(t.column(c).to_pylist() for c in key))):
            if k in rows:
                raise _key_error(key, side, k)
            rows[k] = i
        sides.append(rows)
    old, new = sides
    keys = sorted(old.keys() | new.keys(), key=lambda k: tuple((v is None, v) for v in k))
    return pa.array([old.get(k) for k in keys], pa.int64()), pa.array([new.get(k) for k in keys], pa.int64())


def _changed_columns(before: pa.Table, after: pa.Table, names: list[str]) -> pa.Array:
    """Per row, the columns of `names` whose values differ between `before` and `after`
    (polars' `ne_missing`: a null differs from a value, NaN equals NaN, -0.0 equals 0.0), in
    the order of `names`."""
    rows = before.num_rows
    if not names:
        return pa.array([[]] * rows, pa.list_(pa.string()))
    differs = np.column_stack([_differs_per_row(before.column(c), after.column(c)) for c in names])
    flat = np.tile(np.array(names, dtype=object), rows)[differs.ravel()]
    offsets = np.concatenate([[0], np.cumsum(differs.sum(axis=1))]).astype(np.int32)
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), pa.array(flat, pa.string()))


def _arrow_compares(t: pa.DataType) -> bool:
    """Whether Arrow's `equal` of this type is polars' (up to NaN, which `_differs_per_row` adds)."""
    kinds = (
        pa.types.is_integer,
        pa.types.is_floating,
        pa.types.is_string,
        pa.types.is_large_string,
        pa.types.is_boolean,
        pa.types.is_date,
        pa.types.is_timestamp,
        pa.types.is_decimal,
    )
    return any(kind(t) for kind in kinds)


def _differs_per_row(a: pa.ChunkedArray, b: pa.ChunkedArray) -> np.ndarray:
    """Polars' `a.ne_missing(b)` as booleans: in Arrow for plain types, else in polars."""
    if not _arrow_compares(a.type):
        series = pl.Series(a), pl.Series(b)
        return np.asarray(series[0].ne_missing(series[1]).to_numpy(), bool)
    equal = pc.equal(a, b)
    if pa.types.is_floating(a.type):
        equal = pc.or_kleene(equal, pc.and_(pc.is_nan(a), pc.is_nan(b)))
    if a.null_count or b.null_count:
        equal = pc.if_else(pc.is_null(equal), pc.and_(pc.is_null(a), pc.is_null(b)), equal)
    return ~np.asarray(equal.to_numpy(zero_copy_only=False), bool)


def _frame(t: pa.Table) -> pl.DataFrame:
    f = pl.from_arrow(t)
    assert isinstance(f, pl.DataFrame)
    return f


def _conform(cols: dict[str, Any], schema: pa.Schema, meta: dict[str, str], order: list[str] | None) -> pa.Table:
    arrays = [cols[f.name] if cols[f.name].type == f.type else cols[f.name].cast(f.type) for f in schema]
    arrays = [a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a for a in arrays]
    md = {**(schema.metadata or {}), **{f"deltaexplore.diff_rows.{k}".encode(): v.encode() for k, v in meta.items()}}
    table = pa.Table.from_arrays(arrays, schema=schema.with_metadata(md))
    if order:
        # deletes first, then inserts; the order rows were read in otherwise
        table = table.take(pc.sort_indices(table.column(CHANGE), sort_keys=[(CHANGE, "ascending")]))
    return table


def read_summary(result: pa.Table) -> dict[str, Any]:
    """What a `diff_rows` result read: versions, files, bytes, method (from its metadata)."""
    md = result.schema.metadata or {}
    prefix = b"deltaexplore.diff_rows."
    raw = {k[len(prefix) :].decode(): v.decode() for k, v in md.items() if k.startswith(prefix)}
    return {k: (int(v) if k in ("v1", "v2", "files_read", "bytes_read") else v) for k, v in raw.items()}


def diff_rows(
    obj: Table | Snapshot,
    v1: int | None = None,
    v2: int | None = None,
    *,
    key: str | list[str] | None = None,
    columns: list[str] | None = None,
    progress: Progress | None = None,
) -> pa.Table:
    """The rows that truly differ from version `v1` to `v2` (`schemas.diff_rows_schema`).

    Reads only the data files that differ between the versions (and their deletion vectors),
    with or without change data feed; rows rewritten unchanged cancel out. Without `key`: one
    row per distinct changed row, `_change` (insert | delete) and `_count` (copies: the
    comparison is a multiset). With `key` (a column or columns, unique among the changed rows):
    one row per key, `_change` (insert | delete | update), `_changed_columns` (update), the key
    and `before.<column>` / `after.<column>` side by side. Rows are compared in the newer
    version's schema; `columns` limits the comparison to some columns. `v2` defaults to the
    latest (or the snapshot's) version and `v1` to `v2 - 1`; `v1 > v2` diffs backwards. The
    schema metadata says what was read (`read_summary(result)`: files_read, bytes_read).
    `progress(fraction, message)`, when given, follows the read (`read_sides`, to `READ_SHARE`)
    and the comparison; an exception it raises stops the diff.

    Raises:
        InspectError: bad versions, an unknown key or column, a key repeated among the changed
            rows, a column whose type changed so that its values cannot be compared.
        StorageError: a data file of either version is gone (vacuumed).
    """
    plan = plan_row_diff(obj, v1, v2, key=key, columns=columns)

    def report(fraction: float, message: str) -> None:
        if progress is not None:
            progress(fraction, message)

    try:
        old, new = read_sides(plan, lambda f, m: report(READ_SHARE * f, m))
    except StorageError as exc:
        raise StorageError(
            f"the row diff of versions {plan.older.version} and {plan.newer.version} reads the data files that differ "
            f"between them, and one is gone (vacuumed?): {exc}",
            path=exc.path,
        ) from exc
    report(READ_SHARE, f"comparing {old.num_rows + new.num_rows:,} rows")
    kept = cancel_in_place(old, new)
    net = net_rows(kept.old, kept.new, kept.order)
    report(0.9, f"{net.num_rows:,} rows differ" + (f": pairing them by {', '.join(plan.key)}" if plan.key else ""))
    out = shape_rows(net, plan.key, backwards=plan.backwards, meta=plan_meta(plan, "local"))
    report(1.0, f"{out.num_rows:,} changed rows")
    return out


def plan_meta(plan: RowDiffPlan, engine: str) -> dict[str, str]:
    lo, hi = plan.older.version, plan.newer.version
    v1, v2 = (hi, lo) if plan.backwards else (lo, hi)
    return {
        "v1": str(v1),
        "v2": str(v2),
        "files_read": str(plan.files),
        "bytes_read": str(plan.bytes),
        "engine": engine,
        "table": str(table_of(plan.older).uri),
    }
