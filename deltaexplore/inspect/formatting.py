"""How values of inspection tables are shown to a person: one definition for every surface.

The CLI, chart labels, the static HTML tables of notebooks and the explorer's Python side format
through this module; the explorer's TypeScript grid implements the same rules (a test holds the
two to the same output on `SAMPLES`).

Display units (declared per field as `unit` in the field metadata of
`deltaexplore.inspect.schemas`, beside `doc`; `unit_of(field)` falls back on the Arrow type):

========== ===================================================== ===========================
unit       value                                                 shown as
========== ===================================================== ===========================
bytes      int/float byte count                                  ``1.5 KiB`` (1024-based)
count      number of things                                      ``1,234,567``
version    table version                                         ``42``
timestamp  datetime, epoch ms or ISO text                        local ``2024-01-01 10:00:00``
                                                                 (UTC text in the title)
duration_ms milliseconds                                         ``850 ms``, ``12.3 s``,
                                                                 ``4 min 05 s``, ``2 h 03 min``
ratio      0..1                                                  ``12.5%``
number     any number                                            ``1,234`` / ``3.14``
bool       bool                                                  ``yes`` / ``no``
status     ok | info | warn | error                              a pill (text: the word)
path       file path or URI                                      full text (HTML: middle
                                                                 truncated, full text in title)
json       JSON text, a dict or a map (list of key/value pairs)  ``k=v, k2=v2`` (HTML: chips)
operation  commit operation                                      a badge (text: as is)
text       anything else                                         as is
========== ===================================================== ===========================

Where a column is too narrow for a count, `human_compact` gives three significant digits and a
unit (``4.78 M``; the exact value belongs in a title and in exports). Paths are shortened by
`short_path` to what tells files apart (partition directories and the file's unique id), and
a partition key column (``date=2024-01-01``) is shown as one column of values per partition
column (`partition_names`, `partition_value_columns`). `count_noun` says ``1 file`` /
``1,000,200 files``.

Nulls format as ``""`` (`format_value`); the `human_*` helpers take a number and give ``"?"``
for None (they are used inside sentences). A metrics table (`METRICS_SCHEMA`) has a per-row
`unit` column (`files`, `bytes`, `ratio`, ...): `metric_unit(word)` maps it to a display unit
and fields whose metadata has `unit_from` take their unit from that column.
"""

from __future__ import annotations

import json
import math
import re
from datetime import UTC, datetime, tzinfo
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.errors import InvalidArgumentError

__all__ = [
    "NULL_TEXT",
    "SAMPLES",
    "STATUS_LEVELS",
    "TABLE_KEY",
    "UNITS",
    "UNIT_FROM_KEY",
    "UNIT_KEY",
    "count_noun",
    "format_value",
    "human_bytes",
    "human_compact",
    "human_count",
    "human_duration",
    "human_float",
    "human_number",
    "human_ratio",
    "human_timestamp",
    "json_items",
    "metric_unit",
    "partition_names",
    "partition_value_columns",
    "plural",
    "short_path",
    "status_level",
    "table_name",
    "tag_schema",
    "timestamp_title",
    "to_datetime",
    "truncate_middle",
    "unit_of",
    "with_units",
]

#: every display unit a schema field may declare
UNITS = (
    "bytes",
    "count",
    "version",
    "timestamp",
    "duration_ms",
    "ratio",
    "number",
    "bool",
    "status",
    "path",
    "json",
    "operation",
    "text",
)
#: field metadata key of the display unit
UNIT_KEY = b"unit"
#: field metadata key naming a column of the same table that holds each row's unit (metrics)
UNIT_FROM_KEY = b"unit_from"
#: a null value
NULL_TEXT = ""
#: status words and the pill level they get
STATUS_LEVELS = {
    "ok": "ok",
    "info": "info",
    "warn": "warn",
    "warning": "warn",
    "error": "error",
    "failed": "error",
    "fail": "error",
}

_BYTE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def human_bytes(n: float | None) -> str:
    """`1536` -> ``"1.5 KiB"``, `512` -> ``"512 B"`` (1024-based, one decimal); None -> ``"?"``."""
    if n is None:
        return "?"
    value = float(n)
    for unit in _BYTE_UNITS:
        if abs(value) < 1024 or unit == "PiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"  # pragma: no cover  (the loop always returns)


def human_count(n: float | None) -> str:
    """`1234567` -> ``"1,234,567"``; a non-integral float keeps one decimal; None -> ``"?"``."""
    if n is None:
        return "?"
    if isinstance(n, float) and not n.is_integer():
        return f"{n:,.1f}" if math.isfinite(n) else _non_finite(n)
    return f"{int(n):,}"


def human_number(n: float | None) -> str:
    """Integers with thousands separators; other numbers with 2 decimals below 100, 1 up to
    1000, none above (``3.14``, ``123.4``, ``12,346``); None -> ``"?"``."""
    if n is None:
        return "?"
    if isinstance(n, bool):
        return str(int(n))
    if isinstance(n, int) or (isinstance(n, float) and n.is_integer()):
        return f"{int(n):,}"
    return human_float(n)


def human_float(n: float | None) -> str:
    """A value of a floating-point column: `human_number`'s decimals also when it happens to be
    whole, so a column reads ``1.00`` next to ``0.40`` (not ``1``); None -> ``"?"``."""
    if n is None:
        return "?"
    value = float(n)
    if not math.isfinite(value):
        return _non_finite(value)
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 100:
        return f"{value:.1f}"
    return f"{value:.2f}"


#: units of `human_compact`: thousand, million, billion, trillion, quadrillion
_COMPACT_UNITS = ("K", "M", "B", "T", "Q")


def human_compact(n: float | None) -> str:
    """A count in three significant digits and a unit when it has five digits or more:
    ``4,775,210`` -> ``"4.78 M"`` (``K`` thousand, ``M`` million, ``B`` billion, ``T`` trillion),
    exact below 10,000 (`human_count`); for columns too narrow for the exact value, which then
    belongs in the title and the exports. None -> ``"?"``."""
    if n is None:
        return "?"
    value = float(n)
    if not math.isfinite(value):
        return _non_finite(value)
    if abs(value) < 10_000:
        return human_count(n)
    scaled, k = value, -1
    while k < len(_COMPACT_UNITS) - 1 and (k < 0 or abs(float(_fixed3(scaled))) >= 1000):
        scaled /= 1000
        k += 1
    return f"{_fixed3(scaled)} {_COMPACT_UNITS[k]}"


def _fixed3(x: float) -> str:
    """`x` (below 1000 in magnitude, or about to be scaled) with three significant digits."""
    a = abs(x)
    return f"{x:.2f}" if a < 10 else f"{x:.1f}" if a < 100 else f"{x:.0f}"


def plural(noun: str, n: float) -> str:
    """`noun` (singular; of a phrase, its first word) for `n` things: ``file`` for 1, else
    ``files`` (``-y`` -> ``-ies``, ``-s``/``-x``/``-ch``/``-sh`` -> ``-es``): ``file with a
    deletion vector`` -> ``files with a deletion vector``."""
    if n == 1:
        return noun
    word, sep, rest = noun.partition(" ")
    if re.search(r"[^aeiou]y$", word):
        word = word[:-1] + "ies"
    elif re.search(r"(s|x|ch|sh)$", word):
        word += "es"
    else:
        word += "s"
    return word + sep + rest


def count_noun(n: float | None, noun: str) -> str:
    """``1 file``, ``1,000,200 files`` (`noun` in the singular, `human_count` for the number)."""
    return f"{human_count(n)} {plural(noun, n if n is not None else 0)}"


def _non_finite(value: float) -> str:
    return "NaN" if math.isnan(value) else ("∞" if value > 0 else "-∞")


def human_ratio(r: float | None) -> str:
    """`0.125` -> ``"12.5%"`` (one decimal); None -> ``"?"``."""
    if r is None:
        return "?"
    value = float(r)
    if not math.isfinite(value):
        return _non_finite(value)
    return f"{value * 100:.1f}%"


def human_duration(ms: float | None) -> str:
    """Milliseconds as ``850 ms``, ``12.3 s``, ``4 min 05 s``, ``2 h 03 min``, ``3 d 4 h``."""
    if ms is None:
        return "?"
    value = float(ms)
    if not math.isfinite(value):
        return _non_finite(value)
    sign = "-" if value < 0 else ""
    value = abs(value)
    if value < 1000:
        return f"{sign}{value:.0f} ms"
    seconds = value / 1000
    if seconds < 60:
        return f"{sign}{seconds:.1f} s"
    whole = int(seconds)
    if whole < 3600:
        return f"{sign}{whole // 60} min {whole % 60:02d} s"
    if whole < 86400:
        return f"{sign}{whole // 3600} h {whole % 3600 // 60:02d} min"
    return f"{sign}{whole // 86400} d {whole % 86400 // 3600} h"


def to_datetime(value: Any) -> datetime | None:
    """A timezone-aware UTC datetime from a datetime (naive = UTC), epoch milliseconds or ISO text."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return datetime.fromtimestamp(float(value) / 1000, UTC)
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)
    return None


def human_timestamp(value: Any, *, tz: tzinfo | None = None) -> str:
    """``2024-01-01 10:00:00`` in `tz` (default: this machine's local zone); milliseconds shown
    only when not zero; text that is not a time is returned as is; None -> ``"?"``."""
    if value is None:
        return "?"
    dt = to_datetime(value)
    if dt is None:
        return str(value)
    local = dt.astimezone(tz) if tz is not None else dt.astimezone()
    text = local.strftime("%Y-%m-%d %H:%M:%S")
    if local.microsecond // 1000:
        text += f".{local.microsecond // 1000:03d}"
    return text


def timestamp_title(value: Any) -> str:
    """The exact UTC time, ``2024-01-01T10:00:00.000Z`` (for a title/tooltip); "" for null."""
    dt = to_datetime(value)
    if dt is None:
        return "" if value is None else str(value)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def json_items(value: Any) -> list[tuple[str, str]] | None:
    """Key/value pairs of a JSON object text, a dict or an Arrow map (list of pairs); values
    that are not strings as compact JSON. None when the value is not an object."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    if isinstance(value, dict):
        pairs = list(value.items())
    elif isinstance(value, list) and all(isinstance(p, (tuple, list)) and len(p) == 2 for p in value):
        pairs = [(p[0], p[1]) for p in value]
    else:
        return None
    return [(str(k), v if isinstance(v, str) else json.dumps(v, separators=(",", ":"))) for k, v in pairs]


def truncate_middle(text: str, max_chars: int = 60) -> str:
    """`text` shortened to `max_chars` by replacing its middle with ``…`` (the end of a path,
    the file name, is the part people look for, so it keeps one character more than the start)."""
    if len(text) <= max_chars:
        return text
    keep = max(max_chars - 1, 2)
    head = keep // 2
    tail = keep - head
    return text[:head] + "…" + text[len(text) - tail :]


#: a UUID in a file name (the part of a data file's name that tells it apart)
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def short_path(path: str) -> str:
    """A data file's path shortened to what tells it apart from its neighbours: its partition
    directories (``date=2024-01-01``) and its name up to the first 8 characters of the UUID in
    it (``part-00002-3f2a8c1e…``: the rest of a name, ``-c000.snappy.parquet``, is what every
    file shares); other directories (the table's location, random prefixes) become ``…/``.
    A name without a UUID is kept whole. Show the whole path in a title and copy that."""
    parts = path.split("/")
    name, dirs = parts[-1], parts[:-1]
    kept = [d for d in dirs if "=" in d]
    head = "…/" if len(kept) < len([d for d in dirs if d]) else ""
    m = _UUID.search(name)
    if m is not None:
        name = name[: m.start()] + m.group(0)[:8] + "…"
    return head + "".join(f"{d}/" for d in kept) + name


def partition_names(keys: list[str | None]) -> list[str] | None:
    """The partition columns of partition keys ``col=value/col2=value2`` (inspect's `partition`
    column), when every non-empty key names the same columns in the same order; None when the
    keys are empty or disagree (a value holding ``/`` or ``=`` can make them)."""
    names: list[str] | None = None
    for key in keys:
        if not key:
            continue
        these = [seg.split("=", 1)[0] for seg in key.split("/")]
        if any("=" not in seg for seg in key.split("/")):
            return None
        if names is None:
            names = these
        elif these != names:
            return None
    return names


def partition_value_columns(keys: pa.Array | pa.ChunkedArray, names: list[str]) -> list[pa.Array]:
    """One string array of values per partition column `names` (in order) from partition keys
    ``col=value/col2=value2`` (empty keys and keys of other columns give nulls). Each distinct
    key is parsed once (a million files share a few hundred partitions)."""
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks() if keys.num_chunks else pa.array([], pa.string())
    encoded = pc.dictionary_encode(keys.cast(pa.string()))
    distinct = encoded.dictionary
    if len(names) == 1:
        prefix = f"{names[0]}="
        values = pc.if_else(
            pc.starts_with(distinct, prefix), pc.utf8_slice_codeunits(distinct, len(prefix)), pa.scalar(None, pa.string())
        )
        columns = [values]
    else:
        pattern = "^" + "/".join(f"{re.escape(n)}=(?P<p{i}>.*)" for i, n in enumerate(names)) + "$"
        found = pc.extract_regex(distinct, pattern)
        columns = [pc.struct_field(found, [i]) for i in range(len(names))]  # null where no match
    return [c.take(encoded.indices) for c in columns]


def status_level(value: Any) -> str | None:
    """ok | info | warn | error for a status word (case-insensitive), else None."""
    if value is None:
        return None
    return STATUS_LEVELS.get(str(value).strip().lower())


def format_value(unit: str | None, value: Any, *, tz: tzinfo | None = None) -> str:
    """`value` as text for `unit` (see the module docstring); null -> ``""``.

    Numbers given to a text unit are shown as numbers; an unknown unit is treated as text.
    """
    if value is None:
        return NULL_TEXT
    if unit == "bytes" and _is_number(value):
        return human_bytes(value)
    if unit == "count" and _is_number(value):
        return human_count(value)
    if unit == "version" and _is_number(value):
        return str(int(value))
    if unit == "timestamp":
        return human_timestamp(value, tz=tz)
    if unit == "duration_ms" and _is_number(value):
        return human_duration(value)
    if unit == "ratio" and _is_number(value):
        return human_ratio(value)
    if unit == "bool" or isinstance(value, bool):
        return "yes" if value else "no"
    if unit == "json" or isinstance(value, (dict, list)):
        items = json_items(value)
        if items is not None:
            return ", ".join(f"{k}={v}" for k, v in items)
        if isinstance(value, list):
            return ", ".join(format_value(None, v, tz=tz) for v in value)
        return str(value)
    if _is_number(value):
        return human_number(value)
    if isinstance(value, datetime):
        return human_timestamp(value, tz=tz)
    if isinstance(value, bytes):
        return value.hex()
    return str(value)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def unit_of(field: pa.Field) -> str:
    """The display unit of a field: its `unit` metadata, else one implied by its Arrow type."""
    md = field.metadata or {}
    declared = md.get(UNIT_KEY)
    if declared is not None:
        unit = declared.decode()
        if unit in UNITS:
            return unit
    t = field.type
    if pa.types.is_timestamp(t):
        return "timestamp"
    if pa.types.is_boolean(t):
        return "bool"
    if pa.types.is_integer(t):
        return "count"
    if pa.types.is_floating(t) or pa.types.is_decimal(t):
        return "number"
    if pa.types.is_map(t) or pa.types.is_struct(t):
        return "json"
    return "text"


#: metric-row unit words (`METRICS_SCHEMA.unit`) that are display units of their own
_METRIC_UNITS = {
    "bytes": "bytes",
    "ratio": "ratio",
    "version": "version",
    "timestamp": "timestamp",
    "ms": "duration_ms",
    "duration_ms": "duration_ms",
}


def metric_unit(word: str | None) -> str:
    """The display unit of a metrics row's `unit` word: bytes, ratio, version, timestamp and ms
    (a duration) are units of their own; any other word (files, rows, commits, ...) counts
    things (`count`); none -> `number`."""
    if not word:
        return "number"
    return _METRIC_UNITS.get(word, "count")


def with_units(schema: pa.Schema, units: dict[str, str], *, name: str | None = None) -> pa.Schema:
    """`schema` with a display unit added to the named fields' metadata (other metadata kept)
    and, when `name` is given, the schema tagged as the deltaexplore table `name`."""
    fields = []
    for f in schema:
        unit = units.get(f.name)
        if unit is not None:
            if unit not in UNITS:
                raise InvalidArgumentError(f"unknown display unit {unit!r} for field {f.name!r}: one of {', '.join(UNITS)}")
            f = f.with_metadata({**(f.metadata or {}), UNIT_KEY: unit.encode()})
        fields.append(f)
    out = pa.schema(fields, metadata=schema.metadata)
    return tag_schema(out, name) if name is not None else out


#: schema metadata key naming which deltaexplore table a pyarrow table is (the notebook
#: display recognises deltaexplore tables by it)
TABLE_KEY = b"deltaexplore.table"


def tag_schema(schema: pa.Schema, name: str) -> pa.Schema:
    """`schema` marked as the deltaexplore table `name` (schema metadata `deltaexplore.table`)."""
    return schema.with_metadata({**(schema.metadata or {}), TABLE_KEY: name.encode()})


def table_name(schema: pa.Schema) -> str | None:
    """The deltaexplore table name a schema was tagged with, else None."""
    raw = (schema.metadata or {}).get(TABLE_KEY)
    return raw.decode() if raw is not None else None


#: (unit, value) pairs the Python and TypeScript formatters must agree on (timestamps in UTC)
SAMPLES: tuple[tuple[str, Any], ...] = (
    ("bytes", 0),
    ("bytes", 512),
    ("bytes", 1023),
    ("bytes", 1024),
    ("bytes", 1536),
    ("bytes", 10 * 1024 * 1024 + 1),
    ("bytes", 5 * 1024**4),
    ("bytes", -2048),
    ("count", 0),
    ("count", 7),
    ("count", 1234567),
    ("count", -1200),
    ("version", 0),
    ("version", 123456),
    ("timestamp", 1704103200000),
    ("timestamp", 1704103200123),
    ("duration_ms", 0),
    ("duration_ms", 850),
    ("duration_ms", 12345),
    ("duration_ms", 245000),
    ("duration_ms", 7380000),
    ("duration_ms", 277200000),
    ("ratio", 0.0),
    ("ratio", 0.125),
    ("ratio", 1.0),
    ("number", 3),
    ("number", 3.14159),
    ("number", 123.456),
    ("number", 12345.6),
    ("bool", True),
    ("bool", False),
    ("status", "warn"),
    ("path", "region=emea/part-00000-2e38d7cc.snappy.parquet"),
    ("json", '{"mode":"Append","partitionBy":["region"]}'),
    ("json", [["a", "1"], ["b", "2"]]),
    ("operation", "WRITE"),
    ("text", "<script>alert(1)</script>"),
    ("bytes", None),
    ("text", None),
)
