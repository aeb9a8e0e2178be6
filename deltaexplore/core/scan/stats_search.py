"""One column's min / max / null count out of a million stats JSON strings, without a JSON parser.

`scan.stats.column_bounds` (data skipping, `inspect.layout`, `inspect.explain`) needs three
values per file and column from stats strings like
``{"numRecords":5,"minValues":{"a":1,"id":7},"maxValues":{...},"nullCount":{...}}``. Parsing the
whole documents (`stats_parse.stats_for_adds`) costs a full JSON pass over every column. Here the
snapshot's own `add.stats` arrays are searched in place, in runs of files on a thread pool:

1. locate (`_locate`): the ``"minValues":{``, ``"maxValues":{`` and ``"nullCount":{`` headers,
   every ``"<physical name>":`` key and the document's braces; a key counts when it lies inside
   the object of the nearest header before it, at the column's depth; per file four values in
   text order (numRecords, min, max, null count) are delimited (a quoted string to its closing
   quote, anything else to the next ``,`` ``}`` ``]`` or space). The compiled kernel
   (`_stats_kernel.c`, built by setup.py where a C compiler exists) does this in one pass per
   string with the GIL released: SSE2 masks of the quotes and of the characters a key or
   header can start with, strings followed by a prefix XOR of the quotes. Without it, polars
   searches (`str.find_many`, Rust memchr) and numpy windows over the text do the same;
2. cast (`_typed`): numbers from a string_view array whose inline bytes are the values' first
   words and whose long values point into the text, strings copied out, timestamps and dates
   with the core's own conversion.

In valid JSON an unescaped ``"name":`` can only be a key, and the fast path is used only for
columns whose physical leaf name is unique in the whole schema, is not a reserved stats key and
needs no JSON escaping. Files where any step is unsure go to the core's parse: a document that is
not one whole object (truncated, a string left open, braces that do not close), a key outside the
three objects or twice in one, headers written another way, escapes in a string, values that do
not cast (the numpy path also sends documents with braces inside strings). So the result equals
the parse (`Snapshot.file_stats`) for every stats string that is JSON and for truncated ones; a string broken
in other ways (a trailing comma inside an object, say) is not detected. Checkpoint rows with
`stats_parsed` are read from the struct (no text at all).
"""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.arrow import combined, put_rows, take_rows, text_buffers
from deltaexplore.core.log.state import TableState
from deltaexplore.core.protocol.schema import ArrayType, MapType, StructType
from deltaexplore.core.scan.stats_columns import StatsColumn, typed_values
from deltaexplore.core.scan.stats_parse import from_parsed, stats_for_adds

try:  # the compiled search: setup.py builds it where a C compiler exists
    from deltaexplore.core.scan import _stats_kernel as _compiled_kernel
except ImportError:  # pragma: no cover - depends on the install
    _compiled_kernel = None  # type: ignore[assignment]

__all__ = ["KERNEL", "Found", "search_bounds", "searchable"]

_RESERVED = {"numRecords", "minValues", "maxValues", "nullCount", "tightBounds"}
_HEADERS = ('"minValues":{', '"maxValues":{', '"nullCount":{')
_BARE_HEADERS = ('"minValues"', '"maxValues"', '"nullCount"')
_MAX_WIDTH = 1 << 16
#: a failing cast is bisected down to pieces of this many values, which then go to the core
_MIN_PIECE = 64
_QUOTE, _BACKSLASH = ord('"'), ord("\\")
_LEAD = b'{"numRecords":'
#: above this many files the chunks of the stats column are read by a thread pool
PARALLEL_ROWS = 100_000
#: files per run of the search (so the per-value arrays of a run stay a few MB)
RUN_ROWS = 1 << 17
#: values delimited per numpy pass: the (BLOCK, 24-byte) windows stay in the CPU cache
BLOCK = 1 << 16
VIEW_SLICE_BITS = 30
#: Where the scan's Arrow arrays are allocated. Arrow's default pool (mimalloc) hands freed
#: pages back to the OS within milliseconds, so the hundreds of ~0.5 MB cast results of one
#: column's scan were faulted in afresh every time (80k page faults at 1M files, a third of the
#: wall time in kernel); the system allocator keeps and reuses them (measured: 16-24k faults,
#: 0.76 -> 0.56 s). Only this module's arrays: nothing process-wide is switched.
SCAN_POOL = pa.system_memory_pool()


#: the compiled `locate` (None without it, or when the environment variable
#: DELTAEXPLORE_NO_KERNEL is set): `_locate` then searches with polars and numpy
KERNEL: Any = None if os.environ.get("DELTAEXPLORE_NO_KERNEL") else _compiled_kernel


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


def _windows(data: np.ndarray, starts: np.ndarray, words: int) -> np.ndarray:
    """`words` 8-byte little-endian words of `data` from each start ((m, words) uint64; bytes
    past the end of `data` are zero). The words are read unaligned, straight from the text."""
    m = len(starts)
    if not m:
        return np.zeros((0, words), dtype=np.uint64)
    span = 8 * words
    if len(data) >= span:
        # every byte position as the start of a word (unaligned loads: x86 and arm64 do them)
        table = np.ndarray((len(data) - 7,), dtype=np.uint64, buffer=data, strides=(1,))
        past = np.flatnonzero(starts > len(data) - span)
        if not len(past):
            return table[starts[:, None] + np.arange(0, span, 8)]
        out = table[np.minimum(starts, len(data) - span)[:, None] + np.arange(0, span, 8)]
    else:
        past, out = np.arange(m), np.zeros((m, words), dtype=np.uint64)
    # windows running past the end: those rows from a zero-padded copy of the tail only
    lo = int(starts[past].min())
    tail = np.zeros(len(data) - lo + span, dtype=np.uint8)
    tail[: len(data) - lo] = data[lo:]
    out[past] = np.ndarray((len(tail) - 7,), dtype=np.uint64, buffer=tail, strides=(1,))[
        (starts[past] - lo)[:, None] + np.arange(0, span, 8)
    ]
    return out


_LOW = np.array([(1 << (8 * k)) - 1 for k in range(8)], dtype=np.uint64)


class _Values(NamedTuple):
    """JSON values located in the text: per value its first byte (after an opening quote),
    length, whether it is quoted, whether it could not be delimited, and `head` ((m, 2) uint64:
    the 16 bytes from where the value starts (its quote, if any), what a string view of an
    unquoted value inlines)."""

    first: np.ndarray
    length: np.ndarray
    quoted: np.ndarray
    unsure: np.ndarray
    head: np.ndarray

    def part(self, rows: slice) -> _Values:
        return _Values(*(a[rows] for a in self))


def _spans(data: np.ndarray, starts: np.ndarray, limits: np.ndarray, words: int = 3) -> _Values:
    """The JSON value at each absolute byte position (`starts`, within strings ending at `limits`).

    A quoted string spans to its closing quote (first byte and length of its content; escapes
    are checked by the caller), anything else to the next `,` `}` `]` or whitespace. `unsure`
    marks values without an end in the string (`starts >= limits`: no value). The window read
    for each value also gives its first 16 bytes (`head`), so building string views reads the
    text no second time. Blocks of `BLOCK` values at a time keep the windows in cache (3-5x
    faster than one pass)."""
    assert words >= 2
    m = len(starts)
    out = _Values(
        np.empty(m, dtype=np.int64),
        np.empty(m, dtype=np.int64),
        np.empty(m, dtype=bool),
        np.empty(m, dtype=bool),
        np.empty((m, 2), dtype=np.uint64),
    )
    for i in range(0, m, BLOCK):
        part = slice(i, i + BLOCK)
        _spans_block(data, starts[part], limits[part], words, out.part(part))
    return out


def _ends(win: np.ndarray, quoted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row of `win` (bytes from a value's first byte): the offset where the value ends and
    whether it ends in the window at all."""
    stop = (win == ord(",")) | (win == ord("}")) | (win == ord("]")) | (win <= ord(" "))
    if quoted.any():  # a quoted string ends at the next quote (not the opening one)
        close = win == _QUOTE
        close[:, 0] = False
        stop = np.where(quoted[:, None], close, stop)
    end = stop.argmax(axis=1)
    return end, stop.ravel()[np.arange(0, stop.size, stop.shape[1]) + end]


def _spans_block(data: np.ndarray, starts: np.ndarray, limits: np.ndarray, words: int, out: _Values) -> None:
    """`_spans` of one block, written into `out` (views of the result arrays)."""
    room = limits - starts
    w = _windows(data, starts, words)
    out.head[:] = w[:, :2]
    q = (w[:, 0] & np.uint64(0xFF)) == _QUOTE
    end, hit = _ends(w.view(np.uint8), q)
    done = hit & (end < room)
    qd = q & done
    out.quoted[:] = qd
    out.first[:] = starts + qd
    out.length[:] = np.where(done, end - qd, 0)
    more = ~hit & (room > 8 * words)
    out.unsure[:] = ~done & ~more
    todo = np.flatnonzero(more)
    while len(todo):  # longer values: wider windows
        words *= 8
        if 8 * words > _MAX_WIDTH:
            out.unsure[todo] = True
            return
        s, qt = starts[todo], q[todo]
        end, hit = _ends(_windows(data, s, words).view(np.uint8), qt)
        done = hit & (end < room[todo])
        rows = todo[done]
        out.quoted[rows] = qt[done]
        out.first[rows] = s[done] + qt[done]
        out.length[rows] = end[done] - qt[done]
        more = ~hit & (room[todo] > 8 * words)
        out.unsure[todo[~done & ~more]] = True
        todo = todo[more]


def _view(data_buffer: pa.Buffer | None, first: np.ndarray, length: np.ndarray, valid: np.ndarray) -> pa.Array:
    """The byte ranges [first, first + length) of `data_buffer` (in increasing order) as a
    zero-copy string array of 2m elements: range i is element 2i (null where not `valid`),
    element 2i + 1 is the null gap up to the next range."""
    m = len(first)
    pairs = np.empty(2 * m + 1, dtype=np.int64)
    pairs[0 : 2 * m : 2] = first
    pairs[1 : 2 * m : 2] = first + length
    pairs[2 * m] = first[-1] + length[-1] if m else 0
    pairs = np.maximum.accumulate(pairs)  # gaps never negative (null rows keep any position)
    mask = np.zeros(2 * m, dtype=bool)
    mask[0::2] = valid
    bitmap = pa.py_buffer(np.packbits(mask, bitorder="little"))
    data = data_buffer if data_buffer is not None else pa.py_buffer(b"")
    return pa.LargeStringArray.from_buffers(2 * m, pa.py_buffer(pairs), data, bitmap)


# -- values ------------------------------------------------------------------------------------


def _string_views(data_buffer: pa.Buffer | None, values: _Values, valid: np.ndarray) -> pa.Array:
    """The values as a string_view array over the text: up to 12 bytes inline (from `head`),
    longer ones a 4-byte prefix and a pointer into the buffer (nothing copied)."""
    m = len(values.first)
    lengths = np.where(valid, values.length, 0)
    lo = values.head[:, 0] & np.where(lengths >= 8, ~np.uint64(0), _LOW[np.minimum(lengths, 7)])
    hi = values.head[:, 1] & _LOW[np.clip(lengths - 8, 0, 4)]
    views = np.empty((m, 4), dtype=np.int32)  # length, then 12 inline bytes or prefix, buffer, offset
    views[:, 0] = lengths
    views[:, 1:3] = lo.view(np.int32).reshape(m, 2)
    views[:, 3] = hi.view(np.int32).reshape(m, 2)[:, 0]
    long = lengths > 12
    first = values.first[long]
    source = data_buffer if data_buffer is not None else pa.py_buffer(b"")
    # buffers are slices of the data (each to its end) every 2**VIEW_SLICE_BITS bytes, so
    # offsets fit an int32 whatever the size of the data
    bits = VIEW_SLICE_BITS
    pieces = [source.slice(k << bits) for k in range((int(first.max()) >> bits) + 1)] if len(first) else [source]
    views[long, 2] = first >> bits
    views[long, 3] = first & ((1 << bits) - 1)
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(pa.string_view(), m, [bitmap, pa.py_buffer(views), *pieces])


def _cast(texts: pa.Array, target: pa.DataType) -> tuple[pa.Array, np.ndarray]:
    """`texts` cast to `target`; a failing cast is bisected so only the pieces holding values
    that do not cast (down to `_MIN_PIECE` values) are reported as bad (nulls there)."""
    n = len(texts)
    try:
        return texts.cast(target, memory_pool=SCAN_POOL), np.zeros(n, dtype=bool)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        if n <= _MIN_PIECE:
            return pa.nulls(n, target), np.asarray(texts.is_valid())
    half = n // 2
    a, bad_a = _cast(texts.slice(0, half), target)
    b, bad_b = _cast(texts.slice(half), target)
    return pa.concat_arrays([a, b], memory_pool=SCAN_POOL), np.concatenate([bad_a, bad_b])


def _typed(
    data_buffer: pa.Buffer | None, values: _Values, found: np.ndarray, col: StatsColumn | None
) -> tuple[pa.Array, np.ndarray]:
    """`col`'s values (None: a count, int64) at the located `values` of the rows in `found`;
    and the rows to re-read with the core."""
    first, length, quoted, unsure = values.first, values.length, values.quoted, values.unsure
    n = len(first)
    lead = (values.head[:, 0] & np.uint64(0xFF)).astype(np.uint8)
    is_null = found & ~quoted & (length == 4) & (lead == ord("n"))
    text = col is not None and (pa.types.is_string(col.json_type) or pa.types.is_large_string(col.json_type))
    bad = found & unsure
    bad |= found & ~is_null & (quoted != text)  # strings quoted, everything else not
    valid = found & ~is_null & ~bad
    if text:
        assert col is not None
        texts = _view(data_buffer, first, length, valid).take(pa.array(np.arange(0, 2 * n, 2), pa.int64()))
        bad |= pc.fill_null(pc.match_substring(texts, "\\"), False).to_numpy(zero_copy_only=False)  # escapes: the core
        raw = pc.if_else(pa.array(bad), pa.scalar(None, pa.large_string()), texts, memory_pool=SCAN_POOL).cast(
            pa.string(), memory_pool=SCAN_POOL
        )
    else:
        raw, failed = _cast(_string_views(data_buffer, values, valid), pa.int64() if col is None else col.json_type)
        bad |= failed
    if col is None:
        return raw, bad
    typed = typed_values(raw, col, n)
    lost = pc.and_(pc.is_valid(raw), pc.is_null(typed)).to_numpy(zero_copy_only=False).astype(bool)
    return typed, bad | lost


def _match_at(data: np.ndarray, positions: np.ndarray, ok: np.ndarray, pattern: bytes) -> np.ndarray:
    """Where `ok`: whether the bytes of `data` at `positions` are `pattern` (compared as words)."""
    if len(positions) > BLOCK:
        return np.concatenate(
            [_match_at(data, positions[i : i + BLOCK], ok[i : i + BLOCK], pattern) for i in range(0, len(positions), BLOCK)]
        )
    words = (len(pattern) + 7) // 8
    w = _windows(data, np.where(ok, positions, 0), words)
    expected = np.zeros(8 * words, dtype=np.uint8)
    expected[: len(pattern)] = np.frombuffer(pattern, dtype=np.uint8)
    mask = np.zeros(8 * words, dtype=np.uint8)
    mask[: len(pattern)] = 0xFF
    return ok & ((w & mask.view(np.uint64)) == expected.view(np.uint64)).all(axis=1)


def _attribute(headers: np.ndarray, row: np.ndarray, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(object kind 0-2, inside an object) of each key occurrence: the header nearest before
    it. `headers` is (n, 3) byte positions (-1: absent) of minValues, maxValues, nullCount."""
    hmin, hmax, hnul = headers[:, 0], headers[:, 1], headers[:, 2]
    usual = ((hmin >= 0) & (hmax > hmin) & (hnul > hmax))[row]
    kind = (positions > hmax[row]).astype(np.int64) + (positions > hnul[row])
    inside = positions > hmin[row]
    other = np.flatnonzero(~usual)
    if len(other):  # another order or missing headers
        h = headers[row[other]]
        before = np.where((h >= 0) & (h < positions[other, None]), h, -1)
        kind[other] = before.argmax(axis=1)
        inside[other] = before.max(axis=1) >= 0
    return kind, inside


class _Run:
    """Consecutive chunks of a stats column that are slices of one array (the snapshot drops
    superseded rows by slicing): one data buffer, increasing offsets, so they are read as one."""

    def __init__(self, chunks: list[pa.Array]) -> None:
        self.chunks = chunks
        parts = [text_buffers(c) for c in chunks]
        self.data = parts[0][1]
        self.buffer = chunks[0].buffers()[2]
        self.starts = np.concatenate([o[:-1] for o, _ in parts])
        self.limits = np.concatenate([o[1:] for o, _ in parts])
        self.has = np.concatenate([np.asarray(c.is_valid()) if c.null_count else np.ones(len(c), dtype=bool) for c in chunks])

    def __len__(self) -> int:
        return len(self.starts)

    def strings(self) -> pa.ChunkedArray:
        return pa.chunked_array(self.chunks, type=self.chunks[0].type)


def _runs(column: pa.Array | pa.ChunkedArray, pieces: int = 1, most: int | None = None) -> list[_Run]:
    """The chunks of `column` grouped into runs: about `pieces` runs of similar size for a
    thread pool, none longer than `most` rows (chunks are sliced: small working sets)."""
    chunks = [c for c in (column.chunks if isinstance(column, pa.ChunkedArray) else [column]) if len(c)]
    target = max(sum(len(c) for c in chunks) // max(pieces, 1), 1)
    if most is not None:
        target = min(target, most)
        chunks = [c.slice(i, most) for c in chunks for i in range(0, len(c), most)]
    groups: list[list[pa.Array]] = []
    end, address, size = -1, None, 0
    for c in chunks:
        buf = c.buffers()[2]
        offsets, _ = text_buffers(c)
        key = buf.address if buf is not None else None
        if groups and key == address and key is not None and offsets[0] >= end and size < target:
            groups[-1].append(c)
            size += len(c)
        else:
            groups.append([c])
            size = len(c)
        address, end = key, offsets[-1]
    return [_Run(g) for g in groups]


def _locate(run: _Run, needle: str, col: StatsColumn) -> tuple[np.ndarray, _Values, np.ndarray]:
    """Per file of the run, its four values in text order — numRecords (writers put it first),
    min, max, null count: `at` ((n, 4) bool: found), the located values (value k of file i at
    4 i + k) and the rows the search is unsure about (`redo`). The compiled kernel when it is
    built, else polars searches and numpy windows (same results)."""
    if KERNEL is not None:
        return _locate_compiled(run, needle, len(col.physical) + 1)
    import polars as pl

    n = len(run)
    data, starts, limits, has = run.data, run.starts, run.limits, run.has
    series = pl.from_arrow(run.strings())
    assert isinstance(series, pl.Series)
    # one polars pass per search (run in parallel): the key, the three headers, the lead
    found = pl.DataFrame({"s": series}).select(
        pl.col("s").str.find_many([needle]).alias("key"),
        *(pl.col("s").str.find(h, literal=True).cast(pl.Int64).fill_null(-1).alias(h) for h in _HEADERS),
        pl.col("s").str.starts_with(_LEAD.decode()).fill_null(False).alias("lead"),
        _plain_object(pl.col("s")).fill_null(True).alias("whole"),
        pl.col("s").str.find_many(["{", "}"]).alias("braces"),
    )
    lead = found.get_column("lead").to_numpy() & has
    headers = np.empty((n, 3), dtype=np.int64)
    for i, h in enumerate(_HEADERS):
        headers[:, i] = found.get_column(h).to_numpy()
    braces = _Braces(found.get_column("braces"), data, starts)
    whole = found.get_column("whole").to_numpy() & braces.whole(n) & braces.outside_strings(limits, n)
    redo = ~whole  # truncated documents, braces in strings: the core
    # a header written another way (`"minValues": {`): the core parses those documents
    for i, bare in enumerate(_BARE_HEADERS):
        missing = np.flatnonzero(has & (headers[:, i] < 0))
        if len(missing):
            other = series.gather(missing).str.contains(bare, literal=True).fill_null(False).to_numpy()
            redo[missing[other]] = True
    # every occurrence of the key, in the object whose header is the nearest before it
    occurrences = found.get_column("key").to_arrow()
    if isinstance(occurrences, pa.ChunkedArray):
        occurrences = occurrences.combine_chunks()
    list_offsets = np.asarray(occurrences.offsets).astype(np.int64)
    positions = np.asarray(occurrences.values)[list_offsets[0] : list_offsets[-1]].astype(np.int64)
    row = np.repeat(np.arange(n), np.diff(list_offsets))
    kind, inside = _attribute(headers, row, positions)
    # each header's object: its `{` opens depth 2 (a top-level key), it ends where depth 1 returns
    header_rows = np.repeat(np.arange(n), 3)
    opens = headers.ravel() + len(_HEADERS[0]) - 1
    top, ends = braces.object_at(header_rows, opens)
    redo[header_rows[(headers.ravel() >= 0) & ~top]] = True  # a header that is not a top-level key
    ends = ends.reshape(n, 3)
    inside &= positions <= ends[row, kind]
    inside &= braces.depth_at(row, positions) == len(col.physical) + 1
    redo[row[~inside]] = True  # a key outside the three objects, or not at the column's level
    twice = (row[1:] == row[:-1]) & (kind[1:] == kind[:-1])
    redo[row[1:][twice]] = True  # twice in one object
    at = np.zeros((n, 4), dtype=bool)
    at[:, 0] = lead
    value_at = np.repeat(limits[:, None], 4, axis=1)
    value_at[:, 0] = np.where(lead, starts + len(_LEAD), limits)
    r, k = row[inside], kind[inside] + 1
    at[r, k] = True
    value_at[r, k] = starts[r] + positions[inside] + len(needle.encode())
    # windows of 24 bytes hold numbers; strings (timestamps: 26 bytes with quotes) get 48
    values = _spans(data, value_at.ravel(), np.repeat(limits, 4), 6 if pa.types.is_string(col.json_type) else 3)
    return at, values, redo


class _Braces:
    """The `{` and `}` of each document (positions from a polars `find_many`) with the depth
    after each: the structure `_locate` checks keys against. Exact for documents without braces
    inside strings (`outside_strings`); the others go to the core."""

    def __init__(self, found: Any, data: np.ndarray, starts: np.ndarray) -> None:
        lists = found.to_arrow()
        if isinstance(lists, pa.ChunkedArray):
            lists = lists.combine_chunks()
        offsets = np.asarray(lists.offsets).astype(np.int64)
        self.offsets = offsets - offsets[0]
        self.pos = np.asarray(lists.values)[offsets[0] : offsets[-1]].astype(np.int64)
        self.row = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
        step = np.where(data[starts[self.row] + self.pos] == ord("{"), 1, -1)
        total = np.cumsum(step)
        base = np.concatenate([[0], total])[self.offsets[:-1]]
        self.depth = total - base[self.row]
        self.key = (self.row << 40) + self.pos  # sorted: rows in order, positions increasing
        self.data, self.starts = data, starts

    def whole(self, n: int) -> np.ndarray:
        """Per document: its braces close in order, and the first `{` closes at the last `}`."""
        bad = np.zeros(n, dtype=bool)
        last = self.offsets[1:] - 1
        early = (self.depth == 0) & (np.arange(len(self.depth)) != last[self.row])
        bad[self.row[(self.depth < 0) | early]] = True
        counts = np.diff(self.offsets)
        ends_at_zero = np.zeros(n, dtype=bool)
        ends_at_zero[counts > 0] = self.depth[last[counts > 0]] == 0
        return ~bad & ends_at_zero

    def outside_strings(self, limits: np.ndarray, n: int) -> np.ndarray:
        """Per document: every string closed (an even number of quotes) and no brace inside one
        (an even number of quotes before each). Documents without escapes only."""
        starts = self.starts
        ends = _quotes_before(self.data, np.concatenate([starts, limits, starts[self.row] + self.pos]))
        first, last, at = ends[:n], ends[n : 2 * n], ends[2 * n :]
        ok = (last - first) % 2 == 0
        ok[self.row[(at - first[self.row]) % 2 == 1]] = False
        return ok

    def object_at(self, rows: np.ndarray, opens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Whether a brace at `opens` (per row) opens a depth-2 object, and where that object ends
        (the next brace back at depth 1; -1 where none)."""
        key = (rows << 40) + opens
        i = np.minimum(np.searchsorted(self.key, key), max(len(self.key) - 1, 0))
        top = (opens >= 0) & (len(self.key) > 0)
        if len(self.key):
            top &= (self.key[i] == key) & (self.depth[i] == 2)
        ones = np.flatnonzero(self.depth == 1)
        j = np.searchsorted(self.key[ones], key)
        ok = top & (j < len(ones))
        ends = np.full(len(rows), -1, dtype=np.int64)
        hit = ones[np.minimum(j, max(len(ones) - 1, 0))] if len(ones) else np.zeros(len(rows), np.int64)
        ok &= self.row[hit] == rows if len(ones) else ok
        ends[ok] = self.pos[hit[ok]]
        return top, ends

    def depth_at(self, rows: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """Depth at each position: after the last brace of its row before it."""
        i = np.searchsorted(self.key, (rows << 40) + positions) - 1
        same = (i >= 0) & (self.row[np.maximum(i, 0)] == rows) if len(self.key) else np.zeros(len(rows), bool)
        return np.where(same, self.depth[np.maximum(i, 0)] if len(self.key) else 0, 0)


def _plain_object(s: Any) -> Any:
    """Whether each text starts with `{`, ends with `}` and has no backslash (this path does not
    follow escapes; the kernel does)."""
    return s.str.starts_with("{") & s.str.ends_with("}") & ~s.str.contains("\\", literal=True)


_POPCOUNT = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)


def _quotes_before(data: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """How many `"` bytes of `data` lie between the smallest of the positions and each (counts
    to subtract from one another): the quote bytes packed to bits, a running count per 8 bytes,
    and the bits of the last partial byte."""
    if not len(positions):
        return np.zeros(0, dtype=np.int64)
    lo, hi = int(positions.min()), int(positions.max())
    bits = np.packbits(data[lo:hi] == _QUOTE, bitorder="little")
    before = np.zeros(len(bits) + 1, dtype=np.int64)
    np.cumsum(_POPCOUNT[bits], out=before[1:])
    at = positions - lo
    word = at >> 3
    partial = bits[np.minimum(word, max(len(bits) - 1, 0))] if len(bits) else np.zeros(len(at), np.uint8)
    partial = np.where(word < len(bits), partial & ((1 << (at & 7)) - 1).astype(np.uint8), 0)
    return before[word] + _POPCOUNT[partial]


def _locate_compiled(run: _Run, needle: str, depth: int) -> tuple[np.ndarray, _Values, np.ndarray]:
    """`_locate` by the kernel: one byte pass per string, the GIL released."""
    assert KERNEL is not None
    n = len(run)
    values = _Values(
        np.empty(4 * n, dtype=np.int64),
        np.empty(4 * n, dtype=np.int64),
        np.empty(4 * n, dtype=bool),
        np.empty(4 * n, dtype=bool),
        np.empty((4 * n, 2), dtype=np.uint64),
    )
    at = np.empty((n, 4), dtype=bool)
    redo = np.empty(n, dtype=bool)
    KERNEL.locate(run.data, run.starts, run.limits, run.has, needle.encode(), depth, *values, at, redo)
    return at, values, redo


def _chunk_bounds(run: _Run, needle: str, col: StatsColumn) -> tuple[pa.Array, ...]:
    """min, max, null count and numRecords of one run of stats strings, and the rows whose
    bounds (then numRecords) must be re-read by the core."""
    at, values, redo = _locate(run, needle, col)
    out = []
    for k in range(4):
        got, bad = _typed(run.buffer, values.part(slice(k, None, 4)), at[:, k], col if k in (1, 2) else None)
        out.append(got)
        if k:
            redo |= bad
        else:
            bad_records = bad
    records, has, lead = out[0], run.has, at[:, 0]
    redo_records = (has & (~lead | bad_records | pc.is_null(records).to_numpy(zero_copy_only=False))) | ~has
    return out[1], out[2], out[3], records, redo & has, redo_records


def _needle(key: str) -> str | None:
    """`"key":` as written in the stats JSON, or None when the key would need escaping."""
    if key in _RESERVED or not key.isascii() or not key.isprintable() or '"' in key or "\\" in key:
        return None
    return json.dumps(key) + ":"


def searchable(snap: TableState, col: StatsColumn) -> bool:
    """Whether `search_bounds` can search for `col`: its physical leaf name is unique in the
    schema, not a reserved stats key and needs no JSON escapes."""
    key = col.physical[-1]
    return _needle(key) is not None and _all_physical_names(snap.schema, snap.column_mapping_mode, []).count(key) == 1


class Found(NamedTuple):
    """One column's bounds per add, found by the search. `num_records` is what the search read
    of numRecords on the way (None when it read none) and `records_unsure` the rows where it
    could not: `scan.stats.num_records` reads those."""

    min: pa.Array
    max: pa.Array
    null_count: pa.Array
    num_records: pa.Array | None = None
    records_unsure: np.ndarray | None = None


def search_bounds(snap: TableState, adds: pa.Table, col: StatsColumn) -> Found | None:
    """`min`, `max` (column type) and `null_count` of `col` per add, or None when the column is
    not `searchable`; rows the search cannot read are parsed by `stats_parse.stats_for_adds`."""
    needle = _needle(col.physical[-1])
    if needle is None or not searchable(snap, col):
        return None
    if "stats_parsed" in adds.column_names:
        return _with_parsed(snap, adds, col, needle)
    return _json_bounds(snap, adds, col, needle)


def _with_parsed(snap: TableState, adds: pa.Table, col: StatsColumn, needle: str) -> Found:
    """Checkpoint rows with `stats_parsed` give typed bounds directly (a struct field read, no
    text); the other rows (JSON commits) go through the text search."""
    parsed = combined(adds.column("stats_parsed"))
    if not pa.types.is_struct(parsed.type):
        return _json_bounds(snap, adds.drop_columns(["stats_parsed"]), col, needle)
    typed = from_parsed(parsed, [col])
    use = pc.is_valid(parsed).to_numpy(zero_copy_only=False).astype(bool)
    if not use.any():
        return _json_bounds(snap, adds.drop_columns(["stats_parsed"]), col, needle)
    out = {
        "min": typed[f"min.{col.name}"].cast(col.arrow_type),
        "max": typed[f"max.{col.name}"].cast(col.arrow_type),
        "null_count": typed[f"null_count.{col.name}"].cast(pa.int64()),
    }
    rest = np.flatnonzero(~use)
    if len(rest):
        sub = _json_bounds(snap, take_rows(adds, rest).drop_columns(["stats_parsed"]), col, needle)
        index = np.full(len(use), -1, dtype=np.int64)
        index[rest] = np.arange(len(rest))
        take = pa.array(index, mask=index < 0)
        mask = pa.array(~use)
        out = {k: pc.if_else(mask, getattr(sub, k).take(take), v) for k, v in out.items()}
    return Found(out["min"], out["max"], out["null_count"])


def _json_bounds(snap: TableState, adds: pa.Table, col: StatsColumn, needle: str) -> Found:
    n = adds.num_rows
    column = adds.column("stats")
    workers = min(os.cpu_count() or 1, 4) if n > PARALLEL_ROWS else 1
    runs = _runs(column, workers, RUN_ROWS)
    if not runs:
        return Found(pa.nulls(n, col.arrow_type), pa.nulls(n, col.arrow_type), pa.nulls(n, pa.int64()))
    if workers > 1 and len(runs) > 1:
        # numpy, Arrow and polars (in `select`) release the GIL: runs are read in parallel
        with ThreadPoolExecutor(max_workers=min(workers, len(runs))) as pool:
            pieces = list(pool.map(lambda r: _chunk_bounds(r, needle, col), runs))
    else:
        pieces = [_chunk_bounds(r, needle, col) for r in runs]
    keys = ("min", "max", "null_count", "num_records")
    out = {key: pa.concat_arrays([p[i] for p in pieces], memory_pool=SCAN_POOL) for i, key in enumerate(keys)}
    redo = np.concatenate([p[4] for p in pieces])
    rows = np.flatnonzero(redo)
    if len(rows):
        sub = stats_for_adds(snap, take_rows(adds, rows), [col.name])
        fixed = {
            "min": sub.column(f"min.{col.name}"),
            "max": sub.column(f"max.{col.name}"),
            "null_count": sub.column(f"null_count.{col.name}").cast(pa.int64()),
        }
        for key, values in fixed.items():
            out[key] = put_rows(out[key], rows, combined(values))
    unsure = np.concatenate([p[5] for p in pieces])
    return Found(out["min"], out["max"], out["null_count"], out["num_records"], unsure)
