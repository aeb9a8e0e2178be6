"""Newline-delimited JSON log files (commits, compactions, V2 json checkpoints), vectorized.

All files of a log segment are read once into one Arrow string array of lines (zero-copy line
splitting with numpy). Each line's action kind is read off its first key. File actions (add,
remove, cdc) of many lines are parsed in one `pyarrow.json` pass with an explicit schema; their
string maps (partitionValues, tags) are cut out with a regex, parsed once per distinct value and
gathered back. A few lines (a commit of a handful of actions) are parsed with `json` instead
(`_parse_small`: pyarrow.json's fixed cost per call dominates there), into the same columns, or
left to the vectorized parse when anything is unusual. The few other actions are parsed with
`json`. Any line the fast path cannot parse is re-parsed alone so the error names the file and
line.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pajson

from deltaexplore.core.arrow import empty, from_numpy, from_pylist, scalar, text_buffers, to_numpy
from deltaexplore.core.log.file_names import LogFile, LogKind
from deltaexplore.core.protocol.actions import DV_TYPE, FILE_ACTION_FIELDS, STRING_MAP
from deltaexplore.errors import InvalidLogError
from deltaexplore.storage import Storage

__all__ = ["LogLines", "lines_from_buffer", "lines_from_bytes", "lines_from_parts", "parse_map_texts", "read_log_files"]

#: The pool of the one big parse of all file actions (for a 10k-commit log, ~100 MB of columns
#: allocated at once). Arrow's default pool (mimalloc) hands such memory back and re-faults it
#: (transparent huge pages: first touches stalled at random, 0.4-0.65 s from run to run for the
#: same parse); the system allocator gave steady times. Only this parse: nothing process-wide.
PARSE_POOL = pa.system_memory_pool()
_KIND_RE = r'^\s*\{\s*"(?P<k>[A-Za-z_][A-Za-z0-9_]*)"'
#: `LogLines.naming` picks the lines of at most this many paths (more: every line is parsed)
NAMING_PATHS = 64
#: file actions of at most this many lines (and `SMALL_BYTES` of text) are parsed with `json`
#: (`_parse_small`): ~0.3 ms for a 12-line commit against ~3 ms of pyarrow.json's fixed cost
SMALL_LINES = 64
SMALL_BYTES = 256 * 1024
#: a "path" value written with an escape (`\/`, `\u0061`, ...): such a line may name any path
_ESCAPED_PATH = r'"path"\s*:\s*"[^"]*\\'


def _read_all(storage: Storage, files: Sequence[LogFile]) -> list[bytes]:
    if len(files) <= 4 or storage.local_root is not None:  # local reads: threads only add overhead
        return [_read_one(storage, f) for f in files]
    stored = [f for f in files if f.inline is None]
    try:
        data = iter(storage.read_many([f.path for f in stored]))
    except FileNotFoundError as exc:
        gone = exc.filename if isinstance(exc.filename, str) else None
        raise InvalidLogError(f"log file {gone or '?'} disappeared while reading the table: {exc}", path=gone) from exc
    return [f.inline if f.inline is not None else next(data) for f in files]


def _read_one(storage: Storage, f: LogFile) -> bytes:
    if f.inline is not None:
        return f.inline
    try:
        return storage.read_bytes(f.path)
    except FileNotFoundError as exc:
        raise InvalidLogError(f"log file {f.path} disappeared while reading the table", path=f.path) from exc


@dataclass
class LogLines:
    """The lines of some JSON log files, in the order given (oldest first).

    `text` holds each line with its newline; `version` and `file_index` say where each came from;
    `kind` is the action key (None for blank lines).
    """

    files: list[LogFile]
    text: pa.LargeStringArray
    version: np.ndarray
    file_index: np.ndarray
    line_number: np.ndarray
    kind: pa.Array
    #: replay order of each line (larger = newer); log compaction files are written newest
    #: action first, so their lines count backwards
    order: np.ndarray | None = None
    _parsed: tuple[pa.Table, np.ndarray] | None = field(default=None, repr=False)
    _file_action_cache: dict[str, pa.Table] = field(default_factory=dict, repr=False)
    _map_text_cache: dict[str, pa.Array] = field(default_factory=dict, repr=False)
    _where_cache: dict[str, np.ndarray] = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return len(self.text)

    # -- slices and joins: moving a state between versions (`core.log.travel`) -----------------
    def upto(self, version: int) -> LogLines | None:
        """The lines of the files of versions up to `version` (a zero-copy prefix, with the
        parsed file actions cut alike); None when a compaction file straddles the cut."""
        keep = self._files_through(version)
        if keep is None:
            return None
        return self._slice(0, keep)

    def after(self, version: int) -> LogLines | None:
        """The lines of the files of versions after `version` (a zero-copy suffix); None when a
        compaction file straddles the cut."""
        keep = self._files_through(version)
        if keep is None:
            return None
        return self._slice(keep, len(self.files))

    def _files_through(self, version: int) -> int | None:
        """How many leading files hold versions <= `version` only (None: one holds both sides)."""
        n = 0
        for f in self.files:
            if f.end_version <= version:
                n += 1
            elif f.version <= version:
                return None
            else:
                break
        return n

    def _slice(self, first_file: int, end_file: int) -> LogLines:
        lo, hi = (int(x) for x in np.searchsorted(self.file_index, [first_file, end_file]))
        order = self.order if self.order is not None else np.arange(len(self.text), dtype=np.int64)
        out = LogLines(
            self.files[first_file:end_file],
            self.text.slice(lo, hi - lo),
            self.version[lo:hi],
            self.file_index[lo:hi] - first_file,
            self.line_number[lo:hi],
            self.kind.slice(lo, hi - lo),
            order[lo:hi],
        )
        if hi > lo:
            first, last = order[lo:hi].min(), order[lo:hi].max()
            for key, table in self._file_action_cache.items():
                line = to_numpy(table.column("line"))
                rows = np.flatnonzero((line >= first) & (line <= last))
                out._file_action_cache[key] = table.slice(int(rows[0]), len(rows)) if len(rows) else table.slice(0, 0)
        else:
            out._file_action_cache = {key: table.slice(0, 0) for key, table in self._file_action_cache.items()}
        return out

    def then(self, newer: LogLines) -> LogLines:
        """These lines followed by `newer`'s (the next commits): one set of lines whose replay
        order puts every newer line after these. File actions parsed on both sides are joined,
        not parsed again (the newer side is parsed when this side was)."""
        if not len(newer):
            return self
        if not len(self):
            return newer
        mine = self.order if self.order is not None else np.arange(len(self.text), dtype=np.int64)
        theirs = newer.order if newer.order is not None else np.arange(len(newer.text), dtype=np.int64)
        shift = int(mine.max()) + 1 - int(theirs.min())
        out = LogLines(
            [*self.files, *newer.files],
            pa.concat_arrays([self.text, newer.text]),
            np.concatenate([self.version, newer.version]),
            np.concatenate([self.file_index, newer.file_index + len(self.files)]).astype(np.int32),
            np.concatenate([self.line_number, newer.line_number]),
            pa.concat_arrays([self.kind, newer.kind.cast(self.kind.type)]),
            np.concatenate([mine, theirs + shift]),
        )
        for key, table in self._file_action_cache.items():
            kind, _, columns = key.partition(":")
            other = newer.file_actions(kind, columns.split(",") if columns else None)
            other = other.set_column(
                other.schema.get_field_index("line"), "line", pc.add(other.column("line"), scalar(shift, pa.int64()))
            )
            out._file_action_cache[key] = pa.concat_tables([table, other.select(table.column_names).cast(table.schema)])
        return out

    def where(self, kind: str) -> np.ndarray:
        """Indices of the lines holding `kind` actions (every kind's found in one pass over the
        kinds, on the first call; read-only arrays, shared by the calls)."""
        if not self._where_cache and len(self.kind):
            encoded = self.kind.dictionary_encode()
            codes = to_numpy(encoded.indices, null=-1)
            order = np.argsort(codes, kind="stable")
            bounds = np.searchsorted(codes[order], np.arange(len(encoded.dictionary) + 1))
            for code, name in enumerate(encoded.dictionary.to_pylist()):
                rows = order[bounds[code] : bounds[code + 1]]
                rows.flags.writeable = False
                self._where_cache[name] = rows
        found = self._where_cache.get(kind)
        return found if found is not None else np.zeros(0, np.int64)

    def location(self, i: int) -> str:
        return f"{self.files[int(self.file_index[i])].path}:{int(self.line_number[i]) + 1}"

    def objects(self, kind: str) -> Iterator[tuple[int, int, dict[str, Any]]]:
        """(line index, version, action body) of every `kind` action, oldest first."""
        for i in self.where(kind):
            obj = self._loads(int(i))
            body = obj.get(kind)
            if not isinstance(body, dict):
                raise InvalidLogError(
                    f"{self.location(int(i))}: '{kind}' action is not an object", path=self.files[int(self.file_index[i])].path
                )
            yield int(i), int(self.version[i]), body

    def _loads(self, i: int) -> dict[str, Any]:
        text = self.text[i].as_py()
        try:
            obj = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise InvalidLogError(
                f"{self.location(i)}: malformed JSON line: {exc}", path=self.files[int(self.file_index[i])].path
            ) from exc
        if not isinstance(obj, dict):
            raise InvalidLogError(
                f"{self.location(i)}: a log line must be a JSON object", path=self.files[int(self.file_index[i])].path
            )
        return obj

    def naming(self, paths: Sequence[str]) -> LogLines:
        """The lines that may hold a file action of one of `paths`, with their versions and
        replay order (what a replay of those paths needs, without parsing the other lines).

        A superset: every line holding one of the paths as written, and every line whose
        "path" value has an escape. A path of printable ASCII without a quote or backslash
        stands in the JSON as itself unless the writer escaped one of its characters (then
        the value holds a backslash); action keys are taken as written plainly, as `kind`
        does. Every line (self) for other paths, more than `NAMING_PATHS` of them, or when
        the file actions were parsed already."""
        plain = all(p.isascii() and p.isprintable() and '"' not in p and "\\" not in p for p in paths)
        if not plain or not paths or len(paths) > NAMING_PATHS or "add" in self._file_action_cache:
            return self
        pattern = "|".join(re.sub(r"([.+*?()|\[\]{}^$\\])", r"\\\1", p) for p in paths)
        # two passes over the text: RE2 runs the paths' alternation and the escape pattern each
        # faster than the one alternation of both (~1.0 against ~1.6 ms on 0.5 MB)
        mask = pc.or_(pc.match_substring_regex(self.text, pattern), pc.match_substring_regex(self.text, _ESCAPED_PATH))
        keep = np.flatnonzero(to_numpy(mask, null=False))
        if len(keep) == len(self.text):
            return self
        return self.take(keep)

    def take(self, rows: np.ndarray) -> LogLines:
        """The lines at `rows` (increasing positions) as their own `LogLines`, each keeping its
        file, version, line number and replay order."""
        order = self.order if self.order is not None else np.arange(len(self.text), dtype=np.int64)
        at = from_numpy(rows, pa.int64())
        return LogLines(
            self.files,
            self.text.take(at),
            self.version[rows],
            self.file_index[rows],
            self.line_number[rows],
            self.kind.take(at),
            order[rows],
        )

    def file_actions(self, kind: str, columns: Sequence[str] | None = None) -> pa.Table:
        """All `kind` (add/remove/cdc) actions as a table with the fields of `FILE_ACTION_FIELDS`
        plus `version` and `line` (replay order of the line). Cached.

        With `columns`, only those fields (and `path`, which every file action must have) are
        parsed, in one pass for every kind: what a caller needing a few fields should ask for
        (history's counts need sizes, stats and DVs, not partition values or tags). A kind
        without some of them (cdc has no stats) gets the ones it has."""
        if columns is None:
            if kind not in self._file_action_cache:
                small = self._parse_small(FILE_ACTION_FIELDS)
                for k in FILE_ACTION_FIELDS:  # one parse serves every kind; then free it
                    self._file_action_cache[k] = self._file_actions(k, FILE_ACTION_FIELDS, small)
                self._parsed = None
                self._map_text_cache.clear()
            return self._file_action_cache[kind]
        wanted = ["path", *(c for c in columns if c != "path")]
        if kind in self._file_action_cache:  # already fully parsed: its columns (those the kind has)
            full = self._file_action_cache[kind]
            return full.select([*(c for c in wanted if c in full.column_names), "version", "line"])
        key = f"{kind}:{','.join(wanted)}"
        if key not in self._file_action_cache:
            subset = {k: [f for f in fields if f.name in wanted] for k, fields in FILE_ACTION_FIELDS.items()}
            small = self._parse_small(subset)
            for k in FILE_ACTION_FIELDS:
                self._file_action_cache[f"{k}:{','.join(wanted)}"] = self._file_actions(k, subset, small)
            self._parsed = None
            self._map_text_cache.clear()
        return self._file_action_cache[key]

    def _file_actions(
        self, kind: str, fields_by_kind: dict[str, list[pa.Field]], small: dict[str, dict[str, pa.Array]] | None = None
    ) -> pa.Table:
        fields = fields_by_kind[kind]
        idx = self.where(kind)
        if small is not None:
            cols = small[kind]
        elif len(idx) == 0:
            cols = {f.name: empty(f.type) for f in fields}
        else:
            try:
                cols = self._fast_parse(idx, kind, fields, fields_by_kind)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError, TypeError, AttributeError, RecursionError):
                # anything unusual in the lines: the line-by-line parse names the bad line
                cols = self._slow_parse(idx, kind, fields)
        cols["version"] = from_numpy(self.version[idx], pa.int64())
        order = self.order if self.order is not None else np.arange(len(self.text), dtype=np.int64)
        cols["line"] = from_numpy(order[idx], pa.int64())
        return pa.table(cols)

    def _parse_small(self, fields_by_kind: dict[str, list[pa.Field]]) -> dict[str, dict[str, pa.Array]] | None:
        """Each kind's `fields_by_kind` columns of a few lines, parsed with `json`: what the
        vectorized parse gives (`_fast_parse`, its slow path alike). None for more than
        `SMALL_LINES` lines or `SMALL_BYTES` of text, and whenever a line or value is unusual
        (malformed JSON, a repeated key, a value not of its field's JSON type, a map value that
        is not a string): the vectorized parse then decides, errors included."""
        if len(self.text) > SMALL_LINES or self.text.nbytes > SMALL_BYTES:
            return None
        rows: dict[str, list[dict[str, Any]]] = {k: [] for k in fields_by_kind}
        for kind, text in zip(self.kind.to_pylist(), self.text.to_pylist()):
            if kind not in rows:
                continue
            try:
                body = json.loads(text, object_pairs_hook=_distinct_keys)[kind]
            except (ValueError, RecursionError, KeyError, TypeError):
                return None
            if not isinstance(body, dict) or not isinstance(body.get("path"), str):
                return None
            rows[kind].append(body)
        out: dict[str, dict[str, pa.Array]] = {}
        try:
            for kind, fields in fields_by_kind.items():
                out[kind] = {f.name: from_pylist([_plain(r.get(f.name), f.type) for r in rows[kind]], f.type) for f in fields}
        except (_Unusual, pa.ArrowException, OverflowError, TypeError, ValueError):
            return None
        return out

    def _parse_all(self, fields_by_kind: dict[str, list[pa.Field]]) -> tuple[pa.Table, np.ndarray]:
        """Every non-blank line parsed once for the file actions' `fields_by_kind`, with an
        explicit schema (kept until the file actions are built).

        pyarrow.json cannot parse maps: they are parsed as empty structs, which marks the rows
        that have one; their text is cut out afterwards (`_extract_map`).
        """
        if self._parsed is None:
            nonblank = np.flatnonzero(to_numpy(pc.is_valid(self.kind)))
            schema = pa.schema(
                [
                    pa.field(kind, pa.struct([pa.field(f.name, pa.struct([])) if pa.types.is_map(f.type) else f for f in fields]))
                    for kind, fields in fields_by_kind.items()
                ]
            )
            offsets, _ = text_buffers(self.text)  # a slice of lines (`after`) starts inside the buffer
            data = self.text.buffers()[2]
            longest = int(np.max(np.diff(offsets))) if len(offsets) > 1 else 0
            table = pajson.read_json(
                pa.BufferReader(data.slice(int(offsets[0]), int(offsets[-1] - offsets[0]))),  # zero-copy (io.BytesIO copies)
                read_options=pajson.ReadOptions(block_size=max(1 << 22, 2 * longest + 16), use_threads=data.size > (8 << 20)),
                parse_options=pajson.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore"),
                memory_pool=PARSE_POOL,
            )
            if table.num_rows != len(nonblank):
                raise ValueError("line count mismatch")
            self._parsed = (table, nonblank)
        return self._parsed

    def _fast_parse(
        self, idx: np.ndarray, kind: str, fields: list[pa.Field], fields_by_kind: dict[str, list[pa.Field]]
    ) -> dict[str, pa.Array]:
        table, _ = self._parse_all(fields_by_kind)
        column = table.column(kind)
        present = pc.is_valid(column)
        if pc.sum(present).as_py() != len(idx):
            raise ValueError("action is not an object")
        out: dict[str, pa.Array] = {}
        for f in fields:
            col = _rows_of(pc.struct_field(column, f.name), present)
            if pa.types.is_map(f.type):
                col = self._extract_map(idx, f.name, pc.is_valid(col).combine_chunks())
            elif f.name == "deletionVector":
                col = _null_empty_struct(col)
            out[f.name] = col
        if out["path"].null_count:
            raise ValueError("action without a path")
        return out

    def _extract_map(self, idx: np.ndarray, name: str, present: pa.BooleanArray) -> pa.Array:
        """The `name` string map of lines `idx` (null where `present` is false)."""
        where = np.flatnonzero(to_numpy(present))
        if len(where) == 0:
            return pa.nulls(len(idx), STRING_MAP)
        lines = idx[where]
        if len(where) * 2 > len(self.text):
            # Most lines have it: one regex pass over all lines beats copying them.
            if name not in self._map_text_cache:
                self._map_text_cache[name] = _map_texts(self.text, name)
            texts = self._map_text_cache[name].take(from_numpy(lines, pa.int64()))
        else:
            texts = _map_texts(self.text.take(from_numpy(lines, pa.int64())), name)
        values = _parse_maps(texts, self.text, lines, name)
        if len(where) == len(idx):
            return values
        index = np.full(len(idx), -1, dtype=np.int64)
        index[where] = np.arange(len(where))
        return values.take(from_numpy(index, mask=index < 0))

    def _slow_parse(self, idx: np.ndarray, kind: str, fields: list[pa.Field]) -> dict[str, pa.Array]:
        rows = []
        for i in idx:
            body = self._loads(int(i)).get(kind)
            if not isinstance(body, dict):
                raise InvalidLogError(
                    f"{self.location(int(i))}: '{kind}' action is not an object", path=self.files[int(self.file_index[i])].path
                )
            if not isinstance(body.get("path"), str):
                raise InvalidLogError(
                    f"{self.location(int(i))}: '{kind}' action without a string 'path'",
                    path=self.files[int(self.file_index[i])].path,
                )
            rows.append(body)
        out = {}
        for f in fields:
            values = [_coerce(r.get(f.name), f.type) for r in rows]
            try:
                out[f.name] = pa.array(values, f.type)
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError) as exc:
                bad = _first_bad(values, f.type)
                where = self.location(int(idx[bad])) if bad is not None else self.files[0].path
                raise InvalidLogError(f"{where}: bad '{kind}.{f.name}' value: {exc}", path=where.rsplit(":", 1)[0]) from exc
        return out


def _rows_of(values: pa.ChunkedArray, keep: pa.ChunkedArray) -> pa.ChunkedArray:
    """`values.filter(keep)` (chunks aligned); string chunks whose dropped rows are all empty
    (the fields of other kinds' lines) keep their data buffer: only offsets and validity are
    gathered, the text (stats: most of a log's bytes) is not copied."""
    if not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)):
        return values.filter(keep)
    return pa.chunked_array([_string_rows(v, m) for v, m in zip(values.chunks, keep.chunks, strict=True)], values.type)


def _string_rows(values: pa.Array, keep: pa.BooleanArray) -> pa.Array:
    offsets, _ = text_buffers(values)
    rows = np.flatnonzero(to_numpy(keep))
    if len(rows) == len(values) or not len(rows) or np.any(np.delete(np.diff(offsets), rows)):
        return values.filter(keep)
    gathered = np.empty(len(rows) + 1, dtype=np.int64 if pa.types.is_large_string(values.type) else np.int32)
    gathered[:-1] = offsets[rows]
    gathered[-1] = offsets[rows[-1] + 1]
    valid = to_numpy(values.is_valid())[rows]
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(values.type, len(rows), [bitmap, pa.py_buffer(gathered), values.buffers()[2]])


class _Unusual(Exception):
    """A value `_parse_small` leaves to the vectorized parse."""


def _distinct_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object's pairs as a dict; a repeated key is unusual (`json` keeps the last one)."""
    out = dict(pairs)
    if len(out) != len(pairs):
        raise ValueError("repeated key")
    return out


_JSON_TYPES: dict[pa.DataType, type] = {pa.string(): str, pa.int64(): int, pa.int32(): int, pa.bool_(): bool}


def _plain(value: Any, typ: pa.DataType) -> Any:
    """`value` (from `json`) as `pa.array(..., typ)` takes it, the way the vectorized parse reads
    it: maps as (key, value) pairs, a deletion vector without a storage type as none."""
    if value is None:
        return None
    if pa.types.is_map(typ):
        if not isinstance(value, dict) or not all(v is None or type(v) is str for v in value.values()):
            raise _Unusual
        return list(value.items())
    if pa.types.is_struct(typ):
        if not isinstance(value, dict):
            raise _Unusual
        if typ == DV_TYPE and value.get("storageType") is None:
            return None  # `_null_empty_struct`
        return {f.name: _plain(value.get(f.name), f.type) for f in typ}
    if type(value) is not _JSON_TYPES.get(typ):
        raise _Unusual
    return value


def _first_bad(values: list[Any], typ: pa.DataType) -> int | None:
    for i, v in enumerate(values):
        try:
            pa.array([v], typ)
        except Exception:  # noqa: BLE001
            return i
    return None


def _coerce(value: Any, typ: pa.DataType) -> Any:
    if value is None:
        return None
    if pa.types.is_map(typ):
        if isinstance(value, dict):
            return [(str(k), v if isinstance(v, str) or v is None else json.dumps(v)) for k, v in value.items()]
        return value
    if pa.types.is_string(typ) and not isinstance(value, str):
        return json.dumps(value)  # stats written as an object by a non-conforming writer
    if pa.types.is_struct(typ) and isinstance(value, dict):
        return {f.name: _coerce(value.get(f.name), f.type) for f in typ}
    return value


def _null_empty_struct(col: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """A DV struct whose every field is null (written as `{}`) is no DV."""
    if len(col) == 0 or col.null_count == len(col):
        return col
    has = pc.is_valid(pc.struct_field(col, "storageType"))
    return pc.if_else(has, col, scalar(None, DV_TYPE))


def _map_texts(lines: pa.Array, name: str) -> pa.Array:
    """The JSON text of the flat `name` object in each line (null where the pattern fails)."""
    pattern = rf'"{name}"\s*:\s*(?P<m>\{{[^{{}}]*\}})'
    return pc.extract_regex(lines, pattern).flatten()[0]


def _parse_maps(texts: pa.Array, all_lines: pa.Array, line_idx: np.ndarray, name: str) -> pa.Array:
    """Map values from their JSON texts, each distinct text parsed once."""
    if texts.null_count:
        # Values with braces defeat the flat pattern: parse those lines alone.
        values = texts.to_pylist()
        for i in np.flatnonzero(to_numpy(pc.is_null(texts))):
            obj = json.loads(all_lines[int(line_idx[i])].as_py())
            body = next(iter(obj.values())) if len(obj) == 1 else {}
            values[int(i)] = json.dumps(body.get(name)) if isinstance(body, dict) else None
        texts = from_pylist(values, pa.large_string())
    return parse_map_texts(texts)


def parse_map_texts(texts: pa.Array) -> pa.Array:
    """String maps from their JSON object texts (null where null), each distinct text parsed once."""
    encoded = texts.dictionary_encode()
    uniques = [_parse_map_text(t) for t in encoded.dictionary.to_pylist()]
    return from_pylist(uniques, STRING_MAP).take(encoded.indices)


def _parse_map_text(text: str | None) -> list[tuple[str, str | None]] | None:
    if text is None:
        return None
    obj = json.loads(text)
    if obj is None:
        return None
    if not isinstance(obj, dict):
        raise ValueError("map is not an object")
    return [(str(k), v if isinstance(v, str) or v is None else json.dumps(v)) for k, v in obj.items()]


def lines_from_bytes(files: Sequence[LogFile], contents: Sequence[bytes], versions: Sequence[int] | None = None) -> LogLines:
    """Split file contents into lines; `versions[i]` is the version lines of file i belong to."""
    chunks = []
    sizes = []
    for data in contents:
        if data and not data.endswith(b"\n"):
            data = data + b"\n"
        chunks.append(data)
        sizes.append(len(data))
    return lines_from_buffer(files, b"".join(chunks), sizes, versions)


def lines_from_buffer(
    files: Sequence[LogFile], buf: bytes | bytearray, sizes: Sequence[int], versions: Sequence[int] | None = None
) -> LogLines:
    """Split one buffer holding the files back to back (each ending with a newline) into lines."""
    raw = np.frombuffer(buf, dtype=np.uint8)
    step = 1 << 22  # in pieces: no temporary as large as the log
    newlines = np.concatenate(
        [np.flatnonzero(raw[i : i + step] == 10) + i for i in range(0, len(raw), step)] or [np.zeros(0, np.int64)]
    )
    offsets = np.empty(len(newlines) + 1, dtype=np.int64)
    offsets[0] = 0
    offsets[1:] = newlines + 1
    n = len(newlines)
    file_ends = np.cumsum(np.asarray(sizes, dtype=np.int64))
    starts = offsets[:-1]
    file_index = np.searchsorted(file_ends, starts, side="right").astype(np.int32)
    file_starts_line = np.searchsorted(starts, np.concatenate([[0], file_ends[:-1]])) if len(files) else np.array([], np.int64)
    line_number = np.arange(n, dtype=np.int64) - file_starts_line[file_index] if n else np.array([], np.int64)
    return lines_from_parts(files, buf, offsets, file_index, line_number, versions)


def lines_from_parts(
    files: Sequence[LogFile],
    buf: bytes | bytearray | memoryview,
    offsets: np.ndarray,
    file_index: np.ndarray,
    line_number: np.ndarray,
    versions: Sequence[int] | None = None,
) -> LogLines:
    """The lines at `offsets` (n + 1 increasing positions; each line ending with a newline) of
    `buf`, line i from file `file_index[i]` (non-decreasing) at its `line_number[i]`: a file's
    lines in order, not necessarily all of them (`scan.action_counts` passes the lines it did
    not count). Raises `InvalidLogError` on text that is not UTF-8 and on a malformed line."""
    if versions is None:
        versions = [f.end_version for f in files]
    n = len(offsets) - 1
    text = pa.LargeStringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(buf))
    try:
        text.validate(full=True)
    except pa.ArrowInvalid:
        for i, f in enumerate(files):
            rows = np.flatnonzero(file_index == i)
            if not len(rows):
                continue
            try:
                bytes(buf[int(offsets[rows[0]]) : int(offsets[rows[-1] + 1])]).decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InvalidLogError(f"{f.path} is not valid UTF-8 text: {exc}", path=f.path) from None
        raise InvalidLogError("log files are not valid UTF-8 text") from None
    file_index = file_index.astype(np.int32, copy=False)
    version = np.asarray(versions, dtype=np.int64)[file_index] if n else np.array([], np.int64)
    kind = pc.extract_regex(text, _KIND_RE).flatten()[0] if n else empty(pa.string())
    order = np.arange(n, dtype=np.int64)
    for i, f in enumerate(files):
        if f.kind is LogKind.COMPACTION:
            sel = file_index == i
            order[sel] = order[sel][::-1]
    lines = LogLines(list(files), text, version, file_index, np.asarray(line_number, np.int64), kind, order)
    _check_unrecognised(lines)
    return lines


def _check_unrecognised(lines: LogLines) -> None:
    """A non-blank line that does not start like an action is a malformed log file."""
    if len(lines) == 0 or lines.kind.null_count == 0:
        return
    blank = pc.match_substring_regex(lines.text, r"^\s*$")
    bad = pc.and_(pc.is_null(lines.kind), pc.invert(blank))
    bad_idx = np.flatnonzero(to_numpy(bad, null=False))
    if len(bad_idx):
        i = int(bad_idx[0])
        snippet = lines.text[i].as_py().strip()[:80]
        raise InvalidLogError(
            f"{lines.location(i)}: malformed log line (expected a JSON action object): {snippet!r}",
            path=lines.files[int(lines.file_index[i])].path,
        )


def _read_local(root: str, files: Sequence[LogFile]) -> tuple[bytearray, list[int]] | None:
    """Read local files straight into one buffer (sizes from the listing): no per-file copies,
    three system calls per file (open relative to the open log directory, one read, close).

    None when a file changed size since it was listed (the caller reads it the plain way).
    """
    if any(f.inline is not None for f in files):
        return None
    total = sum(f.size for f in files) + len(files)
    buf = bytearray(total + 1)  # one byte more than each file: a file that grew is noticed
    view = memoryview(buf)
    pos = 0
    sizes = []
    folders: dict[str, int] = {}
    relative = os.open in os.supports_dir_fd
    try:
        for f in files:
            folder, _, name = f.path.rpartition("/")
            try:
                if relative:
                    if folder not in folders:
                        folders[folder] = os.open(os.path.join(root, folder) if folder else root, os.O_RDONLY)
                    fd = os.open(name, os.O_RDONLY, dir_fd=folders[folder])
                else:
                    fd = os.open(os.path.join(root, f.path), os.O_RDONLY | getattr(os, "O_BINARY", 0))
                try:
                    got = os.readv(fd, [view[pos : pos + f.size + 1]]) if f.size else len(os.read(fd, 1))
                finally:
                    os.close(fd)
            except FileNotFoundError as exc:
                raise InvalidLogError(f"log file {f.path} disappeared while reading the table", path=f.path) from exc
            except OSError:
                return None
            if got != f.size:
                return None
            end = pos + f.size
            if f.size and buf[end - 1] != 10:
                buf[end] = 10
                end += 1
            sizes.append(end - pos)
            pos = end
    finally:
        for fd in folders.values():
            os.close(fd)
    del view
    del buf[pos:]
    return buf, sizes


def read_log_files(storage: Storage, files: Sequence[LogFile], versions: Sequence[int] | None = None) -> LogLines:
    """Read JSON log files (in parallel for object stores) and split them into lines."""
    root = storage.local_root
    if root is not None and files:
        local = _read_local(root, files)
        if local is not None:
            return lines_from_buffer(files, local[0], local[1], versions)
    return lines_from_bytes(files, _read_all(storage, files), versions)
