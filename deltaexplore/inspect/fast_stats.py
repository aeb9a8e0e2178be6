"""One column's min / max / null count out of a million stats JSON strings, without a JSON parser.

`layout(column)` needs three values per file from stats strings like
``{"numRecords":5,"minValues":{"a":1,"id":7},"maxValues":{...},"nullCount":{...}}``. Parsing the
whole documents (the core's `stats_for_adds`) costs a full JSON pass over every column. Here
the values are located by substring search (`pyarrow.compute.find_substring_regex`: RE2 skips
ahead with memchr, so each search starts from a rare byte of the needle and checks the skipped
prefix in place) on *views*: a string array whose even elements start where the previous search
stopped and whose odd elements (the skipped prefixes) are null, so no byte is scanned twice and
no string data is copied. Chunks are searched by a thread pool. Per file:

1. the `"minValues":{`, `"maxValues":{` and `"nullCount":{` headers, each searched from the
   previous one;
2. the key `"<physical name>":` inside each object (accepted only before the next header);
3. the value after it, read with an anchored regex and cast to the column type.

In valid JSON an unescaped `"name":` can only be a key, and the fast path is used only for
top-level columns whose physical name is unique in the whole schema, so a match is the
column's. Files where any step fails (other key order, escapes in strings, values that do not
cast) are parsed by the core, and so are `stats_parsed`-only checkpoints.
"""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.schema import ArrayType, MapType, StructType
from deltaexplore.inspect._common import combined

if TYPE_CHECKING:
    from deltaexplore.core.snapshot import Snapshot
    from deltaexplore.core.stats import StatsColumn

__all__ = ["column_bounds"]

_RESERVED = {"numRecords", "minValues", "maxValues", "nullCount", "tightBounds"}


def _all_physical_names(t: Any, mode: str, out: list[str]) -> list[str]:
    if isinstance(t, StructType):
        for f in t.fields:
            out.append(f.physical_name if mode != "none" else f.name)
            _all_physical_names(f.type, mode, out)
    elif isinstance(t, ArrayType):
        _all_physical_names(t.element_type, mode, out)
    elif isinstance(t, MapType):
        _all_physical_names(t.key_type, mode, out)
        _all_physical_names(t.value_type, mode, out)
    return out


def _view(strings: pa.LargeStringArray, starts: np.ndarray, stops: np.ndarray | None = None) -> pa.LargeStringArray:
    """Element i of the result is bytes `starts[i]:stops[i]` of element i of `strings` (to its
    end when `stops` is None; null where `starts[i] < 0`), on the same data buffer: 2n offsets
    whose odd elements (what lies between two views) are null, so kernels never scan them."""
    n = len(strings)
    offsets = np.frombuffer(strings.buffers()[1], dtype=np.int64)[strings.offset : strings.offset + n + 1]
    begin, end = offsets[:-1], offsets[1:]
    ok = starts >= 0
    s = np.where(ok, begin + np.maximum(starts, 0), end)
    e = end if stops is None else np.where(ok, np.minimum(begin + np.maximum(stops, 0), end), end)
    e = np.maximum(e, s)
    pairs = np.empty(2 * n + 1, dtype=np.int64)
    pairs[0 : 2 * n : 2] = s
    pairs[1 : 2 * n : 2] = e
    pairs[2 * n] = end[-1] if n else 0
    valid = np.zeros(2 * n, dtype=bool)
    valid[0::2] = ok
    mask = pa.array(valid).buffers()[1]
    return pa.LargeStringArray.from_buffers(2 * n, pa.py_buffer(pairs), strings.buffers()[2], mask)


def _bytes_at(strings: pa.LargeStringArray, pos: np.ndarray) -> np.ndarray:
    """The byte at `pos[i]` of element i (0 where pos < 0)."""
    n = len(strings)
    offsets = np.frombuffer(strings.buffers()[1], dtype=np.int64)[strings.offset : strings.offset + n + 1]
    data = np.frombuffer(strings.buffers()[2], dtype=np.uint8)
    ok = (pos >= 0) & (offsets[:-1] + pos < offsets[1:])
    out = np.zeros(n, dtype=np.uint8)
    out[ok] = data[offsets[:-1][ok] + pos[ok]]
    return out


def _even(values: pa.Array) -> np.ndarray:
    """Every other element of an integer result computed on a `_view` (the real rows), read
    straight from the data buffer; null slots (rows with no view) hold anything and are masked
    by the callers, which test `starts >= 0`."""
    width = values.type.bit_width // 8
    raw = np.frombuffer(values.buffers()[1], dtype=np.int64 if width == 8 else np.int32)[
        values.offset : values.offset + len(values)
    ]
    return raw[0::2].astype(np.int64)


def _regex_literal(text: str) -> str:
    return "".join("\\" + c if c in _RE2_SPECIAL else c for c in text)


_RE2_SPECIAL = set("\\.^$|?*+()[]{}")
#: a skipped prefix that does not match is retried this many times before giving up (the
#: document then goes to the core's parser)
_MAX_RETRIES = 4
#: above this many files the chunks of the stats column are searched by a thread pool
PARALLEL_ROWS = 100_000
_SEARCH = pc.find_substring_regex


def _find(
    strings: pa.LargeStringArray, starts: np.ndarray, needle: str, *, skip: int = 0, stops: np.ndarray | None = None
) -> np.ndarray:
    """Byte position (from the string start) of `needle` at or after `starts`, -1 if absent.

    The search goes through RE2 (`find_substring_regex`), which skips ahead with memchr on the
    pattern's first byte: `skip` leaves out that many leading bytes of `needle` so the search
    starts on a rare one (`Count":{` rather than `"nullCount":{`); those bytes are then checked
    in place, and a match whose prefix differs counts as not found."""
    pattern = _regex_literal(needle[skip:])
    prefix = needle[:skip].encode()
    result = np.full(len(starts), -1, dtype=np.int64)
    todo = starts.copy()
    for _ in range(_MAX_RETRIES):
        found = _even(_SEARCH(_view(strings, todo, stops), pattern))
        pos = np.where((todo >= 0) & (found >= 0), todo + found - skip, -1)
        ok = pos >= 0
        for i, byte in enumerate(prefix):
            ok &= _bytes_at(strings, np.where(ok, pos + i, -1)) == byte
        result = np.where(ok, pos, result)
        # a match whose skipped prefix differs: search again just after it
        retry = (pos >= 0) & ~ok
        if not retry.any():
            break
        todo = np.where(retry, pos + skip + 1, -1)
    return result


_WINDOW = 40


def _values(strings: pa.LargeStringArray, starts: np.ndarray) -> tuple[pa.Array, np.ndarray]:
    """The JSON value text starting at `starts` (null where starts < 0): a quoted string up to
    its closing quote, else up to the next `,` `}` or `]`; and the rows to re-read (escapes).
    Delimiters are looked for in a window of bytes gathered with numpy; values longer than the
    window fall back to `find_substring`."""
    n = len(strings)
    offsets = np.frombuffer(strings.buffers()[1], dtype=np.int64)[strings.offset : strings.offset + n + 1]
    data = np.frombuffer(strings.buffers()[2], dtype=np.uint8)
    ok = starts >= 0
    absolute = offsets[:-1] + np.maximum(starts, 0)
    limit = offsets[1:]
    first = np.full(n, -1, dtype=np.int64)
    escaped = np.zeros(n, dtype=bool)
    quoted = np.zeros(n, dtype=bool)
    last = max(len(data) - 1, 0)
    active = np.flatnonzero(ok & (absolute < limit)) if len(data) else np.zeros(0, np.int64)
    if len(active):
        quoted[active] = data[absolute[active]] == ord('"')
        prev = data[absolute[active]]
        for k in range(_WINDOW):
            pos = absolute[active] + k
            inside = pos < limit[active]
            b = np.where(inside, data[np.minimum(pos, last)], 0)
            q = quoted[active]
            if k == 0:
                hit = inside & ~q & ((b == ord(",")) | (b == ord("}")) | (b == ord("]")))
            else:
                hit = inside & np.where(q, b == ord('"'), (b == ord(",")) | (b == ord("}")) | (b == ord("]")))
                escaped[active[hit & q & (prev == ord("\\"))]] = True
            first[active[hit]] = k
            keep = ~hit & inside
            active, prev = active[keep], b[keep]
            if not len(active):
                break
    has = first >= 0
    stop = np.where(has, starts + first + np.where(quoted, 1, 0), -1)
    long = ok & ~has
    if long.any():  # rare: values longer than the window
        plain = long & ~quoted
        comma = _find(strings, np.where(plain, starts, -1), ",")
        brace = _find(strings, np.where(plain, starts, -1), "}")
        s_plain = np.where(comma < 0, brace, np.where(brace < 0, comma, np.minimum(comma, brace)))
        close = _find(strings, np.where(long & quoted, starts + 1, -1), '"')
        s_long = np.where(quoted, np.where(close >= 0, close + 1, -1), s_plain)
        escaped |= long & quoted & (close > 0) & (_bytes_at(strings, close - 1) == ord("\\"))
        stop = np.where(long, s_long, stop)
    good = ok & (stop >= 0)
    view = _view(strings, np.where(good, starts, -1), stop)
    texts = view.take(pa.array(np.arange(0, 2 * n, 2), pa.int64()))
    return texts, escaped | (ok & (stop < 0))


def _convert(texts: pa.Array, col: StatsColumn) -> tuple[pa.Array, np.ndarray]:
    """Typed values from JSON value texts, and the rows that could not be converted."""
    from deltaexplore.core.stats import _to_type

    n = len(texts)
    texts = pc.utf8_trim_whitespace(texts)
    is_null = pc.fill_null(pc.equal(texts, "null"), False)
    texts = pc.if_else(is_null, pa.scalar(None, pa.large_string()), texts)
    quoted = pc.fill_null(pc.starts_with(texts, '"'), False)
    escaped = pc.fill_null(pc.match_substring(texts, "\\"), False)
    bad = pc.and_(quoted, escaped).to_numpy(zero_copy_only=False).astype(bool)
    if pa.types.is_string(col.json_type) or pa.types.is_large_string(col.json_type):
        inner = pc.utf8_slice_codeunits(texts, 1, -1)
        raw = pc.if_else(quoted, inner, pa.scalar(None, pa.large_string())).cast(pa.string())
        bad |= pc.and_(pc.is_valid(texts), pc.invert(quoted)).to_numpy(zero_copy_only=False).astype(bool)
    else:
        raw = pc.if_else(quoted, pa.scalar(None, pa.large_string()), texts)
        bad |= quoted.to_numpy(zero_copy_only=False).astype(bool)
        try:
            raw = raw.cast(col.json_type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return pa.nulls(n, col.arrow_type), np.ones(n, dtype=bool)
    typed = _to_type(raw, col, n)
    lost = pc.and_(pc.is_valid(raw), pc.is_null(typed)).to_numpy(zero_copy_only=False).astype(bool)
    return typed, bad | lost


def _chunk_bounds(stats: pa.LargeStringArray, needle: str, col: StatsColumn) -> tuple[pa.Array, pa.Array, pa.Array, np.ndarray]:
    """min, max, null_count texts converted, and the rows to re-read, for one chunk of stats."""
    n = len(stats)
    zero = np.zeros(n, dtype=np.int64)
    # usual order first (each header searched from the previous one: one pass), then the rows
    # where a header was not found that way are searched from the start (any order)
    names = ('"minValues":{', '"maxValues":{', '"nullCount":{')
    skips = (4, 4, 5)  # search from `Values":{` / `Count":{`: uppercase letters are rare in stats
    headers = []
    prev = zero
    for h, k in zip(names, skips):
        found = _find(stats, prev, h, skip=k)
        headers.append(found)
        # the next header starts after this one (no need to match this one's own text again)
        prev = np.where(found >= 0, found + len(h), prev)
    for i, h in enumerate(names):
        missing = headers[i] < 0
        if missing.any():
            headers[i] = np.where(missing, _find(stats, np.where(missing, 0, -1), h, skip=skips[i]), headers[i])
    # a header written another way (`"minValues": {`): the core parses those documents
    odd_header = np.zeros(n, dtype=bool)
    for pos, bare in zip(headers, ('"minValues"', '"maxValues"', '"nullCount"')):
        odd_header |= _find(stats, np.where(pos < 0, 0, -1), bare) >= 0
    length = np.diff(np.frombuffer(stats.buffers()[1], dtype=np.int64)[stats.offset : stats.offset + n + 1])
    keys = []
    for i, hdr in enumerate(headers):
        # the object runs to the next header after it (any order), else to the end
        bound = length.copy()
        for j, other in enumerate(headers):
            if j != i:
                bound = np.where((other > hdr) & (other < bound), other, bound)
        found = _find_in(stats, hdr, bound, needle)
        keys.append(found)
    skip = len(needle.encode())
    k_min, k_max, k_null = keys
    min_texts, esc_min = _values(stats, np.where(k_min >= 0, k_min + skip, -1))
    max_texts, esc_max = _values(stats, np.where(k_max >= 0, k_max + skip, -1))
    null_texts, _ = _values(stats, np.where(k_null >= 0, k_null + skip, -1))
    mins, bad_min = _convert(min_texts, col)
    maxs, bad_max = _convert(max_texts, col)
    try:
        nulls = pc.utf8_trim_whitespace(null_texts).cast(pa.int64())
        bad_null = np.zeros(n, dtype=bool)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        nulls, bad_null = pa.nulls(n, pa.int64()), np.ones(n, dtype=bool)
    has_stats = pc.is_valid(stats).to_numpy(zero_copy_only=False).astype(bool)
    # the key is in the document but in no object we recognised (pretty-printed JSON, ...)
    none_found = (k_min < 0) & (k_max < 0) & (k_null < 0)
    lost_key = none_found & (_find(stats, np.where(none_found, 0, -1), needle, skip=1) >= 0)
    redo = bad_min | bad_max | esc_min | esc_max | bad_null | lost_key | odd_header
    return mins, maxs, nulls, redo | ~has_stats


def _find_in(strings: pa.LargeStringArray, starts: np.ndarray, stops: np.ndarray, needle: str) -> np.ndarray:
    """Position of `needle` within bytes [starts, stops) of each element, -1 if absent."""
    return _find(strings, starts, needle, skip=1, stops=stops)


def column_bounds(snap: Snapshot, adds: pa.Table, col: StatsColumn) -> dict[str, pa.Array] | None:
    """`min`, `max` (column type) and `null_count` of `col` per add, or None when the fast path
    does not apply to this column (nested, ambiguous name); rows it cannot read are parsed by
    the core's `stats_for_adds`."""
    if len(col.physical) != 1:
        return None
    key = col.physical[0]
    names = _all_physical_names(snap.schema, snap.column_mapping_mode, [])
    if names.count(key) != 1 or key in _RESERVED:
        return None
    if "stats_parsed" in adds.column_names:
        return _with_parsed(snap, adds, col, key)
    return _json_bounds(snap, adds, col, key)


def _with_parsed(snap: Snapshot, adds: pa.Table, col: StatsColumn, key: str) -> dict[str, pa.Array] | None:
    """Checkpoint rows with `stats_parsed` give typed bounds directly (a struct field read, no
    text); the other rows (JSON commits) go through the text search."""
    from deltaexplore.core.stats import _from_parsed

    parsed = combined(adds.column("stats_parsed"))
    if not pa.types.is_struct(parsed.type):
        return _json_bounds(snap, adds.drop_columns(["stats_parsed"]), col, key)
    typed = _from_parsed(parsed, [col])
    use = pc.is_valid(parsed).to_numpy(zero_copy_only=False).astype(bool)
    if not use.any():
        return _json_bounds(snap, adds.drop_columns(["stats_parsed"]), col, key)
    out = {
        "min": typed[f"min.{col.name}"].cast(col.arrow_type),
        "max": typed[f"max.{col.name}"].cast(col.arrow_type),
        "null_count": typed[f"null_count.{col.name}"].cast(pa.int64()),
    }
    rest = np.flatnonzero(~use)
    if len(rest):
        sub = _json_bounds(snap, adds.take(pa.array(rest, pa.int64())).drop_columns(["stats_parsed"]), col, key)
        assert sub is not None
        index = np.full(len(use), -1, dtype=np.int64)
        index[rest] = np.arange(len(rest))
        take = pa.array(index, mask=index < 0)
        mask = pa.array(~use)
        out = {k: pc.if_else(mask, sub[k].take(take), v) for k, v in out.items()}
    return out


def _json_bounds(snap: Snapshot, adds: pa.Table, col: StatsColumn, key: str) -> dict[str, pa.Array] | None:
    needle = json.dumps(key) + ":"
    column = adds.column("stats")
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    work = [c.cast(pa.large_string()) for c in chunks if len(c)]
    workers = min(len(work), os.cpu_count() or 1)
    if workers > 1 and adds.num_rows > PARALLEL_ROWS:
        # arrow kernels and numpy release the GIL: chunks are searched in parallel
        with ThreadPoolExecutor(max_workers=workers) as pool:
            pieces = list(pool.map(lambda c: _chunk_bounds(c, needle, col), work))
    else:
        pieces = [_chunk_bounds(c, needle, col) for c in work]
    n = adds.num_rows
    if not pieces:
        return {"min": pa.nulls(n, col.arrow_type), "max": pa.nulls(n, col.arrow_type), "null_count": pa.nulls(n, pa.int64())}
    mins = pa.concat_arrays([p[0] for p in pieces])
    maxs = pa.concat_arrays([p[1] for p in pieces])
    nulls = pa.concat_arrays([p[2] for p in pieces])
    redo = np.concatenate([p[3] for p in pieces])
    if "stats_parsed" not in adds.column_names:
        has = pc.is_valid(column).to_numpy(zero_copy_only=False).astype(bool) if n else np.zeros(0, bool)
        redo &= has  # no stats at all: nothing to parse
    rows = np.flatnonzero(redo)
    if len(rows):
        from deltaexplore.core.stats import stats_for_adds

        sub = stats_for_adds(snap, adds.take(pa.array(rows, pa.int64())), [col.name])
        index = np.full(n, -1, dtype=np.int64)
        index[rows] = np.arange(len(rows))
        take = pa.array(index, mask=index < 0)
        mask = pa.array(redo)
        mins = pc.if_else(mask, sub.column(f"min.{col.name}").combine_chunks().take(take), mins)
        maxs = pc.if_else(mask, sub.column(f"max.{col.name}").combine_chunks().take(take), maxs)
        nulls = pc.if_else(mask, sub.column(f"null_count.{col.name}").combine_chunks().cast(pa.int64()).take(take), nulls)
    return {"min": mins, "max": maxs, "null_count": nulls}
