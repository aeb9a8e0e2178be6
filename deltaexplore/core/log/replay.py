"""Action reconciliation (log replay), vectorized.

Logical files are keyed by `(path, deletion vector unique id)`. The newest action for a key
wins: JSON actions are ordered by their line index (commits oldest first, lines in file order),
and any JSON action on a key supersedes the checkpoint's entry for it. Paths are compared as
written in the log (no URI canonicalisation), as delta-kernel-rs, delta-kernel-java and delta-rs
do and as the conformance corpus expects.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.arrow import from_numpy, scalar, take_rows, to_numpy

__all__ = ["align", "dv_unique_id", "newest_per_key", "reconcile", "replay", "superseded_by"]


def dv_unique_id(dv: pa.Array) -> pa.Array:
    """`<storageType><pathOrInlineDv>[@<offset>]` per row, null where there is no DV."""
    if len(dv) == 0 or dv.null_count == len(dv):
        return pa.nulls(len(dv), pa.string())
    if isinstance(dv, pa.ChunkedArray):
        dv = dv.combine_chunks()
    st = dv.field("storageType")
    p = dv.field("pathOrInlineDv")
    off = pc.cast(dv.field("offset"), pa.string())
    base = pc.binary_join_element_wise(st, p, scalar("", pa.string()))
    with_off = pc.binary_join_element_wise(base, off, scalar("@", pa.string()))
    out = pc.if_else(pc.is_valid(off), with_off, base)
    return pc.if_else(pc.is_valid(dv), out, scalar(None, pa.string()))


def _bools(mask: pa.Array | pa.ChunkedArray) -> np.ndarray:
    if isinstance(mask, pa.ChunkedArray):
        mask = mask.combine_chunks()
    return to_numpy(mask, null=False)


def _keys(table: pa.Table) -> tuple[pa.Array, pa.Array]:
    path = table.column("path").combine_chunks() if isinstance(table.column("path"), pa.ChunkedArray) else table.column("path")
    dv = table.column("deletionVector").combine_chunks()
    return path.cast(pa.large_string()), dv_unique_id(dv).cast(pa.large_string())


def superseded_by(adds: pa.Table, removes: pa.Table) -> Callable[[pa.Table], pa.Array | None] | None:
    """A function marking checkpoint rows whose key a JSON action touches (None: no JSON actions).

    Any newer action on a key (add or remove) replaces the checkpoint's entry for it. Paths are
    compared first with a hash lookup; only candidate rows get their DV id computed.
    """
    if adds.num_rows == 0 and removes.num_rows == 0:
        return None
    j_path, j_dv = (pa.concat_arrays(x) for x in zip(_keys(adds), _keys(removes)))
    json_paths = pc.unique(j_path.cast(pa.string()))
    touched = set(zip(j_path.to_pylist(), j_dv.to_pylist()))

    def exclude(ck: pa.Table) -> pa.Array | None:
        path = ck.column("path")
        candidate = pc.is_in(path, value_set=json_paths.cast(path.type))
        if not pc.any(candidate).as_py():  # is_in: false (never null) for a null path
            return None
        rows = np.flatnonzero(_bools(candidate))
        cand = take_rows(ck.select(["path", "deletionVector"]), rows)
        c_path, c_dv = _keys(cand)
        drop = np.zeros(ck.num_rows, dtype=bool)
        for row, key in zip(rows, zip(c_path.to_pylist(), c_dv.to_pylist())):
            if key in touched:
                drop[row] = True
        return from_numpy(drop)

    return exclude


def align(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """`table` with exactly `schema`'s columns (missing ones null, types cast)."""
    cols = []
    for f in schema:
        if f.name in table.column_names:
            col = table.column(f.name)
            cols.append(col if col.type == f.type else col.cast(f.type))
        else:
            cols.append(pa.nulls(table.num_rows, f.type))
    return pa.Table.from_arrays(cols, schema=schema)


def reconcile(checkpoint_actions: pa.Table | None, json_adds: pa.Table, json_removes: pa.Table, *, want: str = "add") -> pa.Table:
    """The surviving `want` actions after replay (`replay` without the rows' replay order)."""
    return replay(checkpoint_actions, json_adds, json_removes, want=want)[0]


def replay(
    checkpoint_actions: pa.Table | None, json_adds: pa.Table, json_removes: pa.Table, *, want: str = "add"
) -> tuple[pa.Table, np.ndarray]:
    """The surviving `want` ('add' or 'remove') actions after replay.

    Args:
        checkpoint_actions: the checkpoint's actions of kind `want`, already stripped of rows a
            JSON action supersedes (`superseded_by`), or None.
        json_adds / json_removes: add and remove actions of the JSON part of the segment, each
            with a `line` column giving replay order.
        want: which actions to return: active files (`add`) or tombstones (`remove`).

    Returns:
        The surviving actions (checkpoint entries first) with the checkpoint's schema when there
        is one, else the JSON actions' columns without `version`/`line`; and per surviving row
        the replay order (`line`) of its action, -1 for checkpoint rows.
    """
    wanted = json_adds if want == "add" else json_removes
    out_columns = [c for c in wanted.column_names if c not in ("version", "line")]
    survivors = _json_survivors(json_adds, json_removes, want)
    lines = to_numpy(wanted.column("line")) if wanted.num_rows else np.zeros(0, np.int64)
    if len(survivors) == wanted.num_rows:
        json_part = wanted.select(out_columns)  # every action survives: no copy
    else:
        keep = np.zeros(wanted.num_rows, dtype=bool)
        keep[survivors] = True  # a mask: filter is far cheaper than take on chunked columns
        json_part = wanted.select(out_columns).filter(from_numpy(keep))
        lines = lines[keep]
    if checkpoint_actions is None:
        return json_part, lines.astype(np.int64)
    order = np.concatenate([np.full(checkpoint_actions.num_rows, -1, np.int64), lines.astype(np.int64)])
    if json_part.num_rows == 0:
        return checkpoint_actions, order
    return pa.concat_tables([checkpoint_actions, align(json_part, checkpoint_actions.schema)]), order


def newest_per_key(adds: pa.Table, removes: pa.Table) -> np.ndarray:
    """Row indices into `adds` of the adds that are the newest action of their key among both
    tables (each with `path`, `deletionVector` and `line`, the replay order)."""
    return _json_survivors(adds, removes, "add")


def _codes(values: pa.Array) -> tuple[np.ndarray, int]:
    """Dense integer codes of a (nullable) string column; nulls get their own code."""
    encoded = pc.dictionary_encode(values, null_encoding="encode")
    if isinstance(encoded, pa.ChunkedArray):
        encoded = encoded.combine_chunks()
    return to_numpy(encoded.indices).astype(np.int64), len(encoded.dictionary) + 1


def _json_survivors(adds: pa.Table, removes: pa.Table, want: str) -> np.ndarray:
    """Row indices (into the `want` table) of JSON actions that are the newest for their key.

    Keys become integer codes; rows sorted newest first; the first row of each key wins.
    """
    n_add, n_rem = adds.num_rows, removes.num_rows
    if (want == "add" and n_add == 0) or (want == "remove" and n_rem == 0):
        return np.zeros(0, np.int64)
    a_path, a_dv = _keys(adds)
    r_path, r_dv = _keys(removes)
    path_codes, _ = _codes(pa.concat_arrays([a_path, r_path]))
    dv_codes, n_dv = _codes(pa.concat_arrays([a_dv, r_dv]))
    key = path_codes * n_dv + dv_codes
    line = np.concatenate([to_numpy(adds.column("line")), to_numpy(removes.column("line"))])
    newest_first = np.argsort(-line, kind="stable")
    _, first = np.unique(key[newest_first], return_index=True)
    winners = np.sort(newest_first[first])  # replay order
    is_add = winners < n_add
    rows = winners[is_add] if want == "add" else winners[~is_add] - n_add
    return rows.astype(np.int64, copy=False)
