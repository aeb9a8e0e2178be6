"""Partition values: from the log's strings to typed Arrow columns (and back, for writers).

An empty string (or a missing key) is null. Timestamps come as `YYYY-MM-DD HH:MM:SS[.ffffff]`
(no zone; read as UTC) or ISO 8601 with a zone; binary as the string's UTF-8 bytes.
"""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.protocol.schema import DataType, DecimalType, PrimitiveType, to_arrow_type
from deltaexplore.errors import InvalidLogError

__all__ = [
    "HIVE_NULL",
    "map_column_values",
    "months_interval",
    "parse_intervals",
    "parse_partition_column",
    "parse_timestamp",
    "serialize_partition_value",
    "uniform_map_values",
]


#: how a null partition value is written in directory names and partition keys
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"


def map_column_values(maps: pa.Array, key: str) -> pa.Array:
    """The value for `key` in each row of a map<string,string> column (null where absent)."""
    if isinstance(maps, pa.ChunkedArray):
        maps = maps.combine_chunks()
    if len(maps) == 0:
        return pa.array([], pa.string())
    first = maps[0].as_py()
    keys = [k for k, _ in first] if first else []
    if key in keys:
        uniform = uniform_map_values(maps, keys)
        if uniform is not None:
            return uniform[keys.index(key)]
    looked = pc.map_lookup(maps, pa.scalar(key, pa.string()), "first")
    return looked.cast(pa.string())


def uniform_map_values(maps: pa.MapArray, keys: list[str]) -> list[pa.Array] | None:
    """When every map holds exactly `keys` in that order (what writers do with partition
    values), each key's values straight from the map's items, no per-row lookup; else None."""
    n, m = len(maps), len(keys)
    if n == 0 or maps.null_count or m == 0 or len(set(keys)) != m:
        return None
    offsets = maps.offsets.to_numpy(zero_copy_only=False)
    if offsets[0] != 0 or not np.all(np.diff(offsets) == m):
        return None
    flat_keys = maps.keys.cast(pa.string())
    if len(flat_keys) != n * m:
        return None
    items = maps.items.cast(pa.string())
    out = []
    for i, key in enumerate(keys):
        take = None if m == 1 else pa.array(np.arange(i, n * m, m), pa.int64())
        k = flat_keys if take is None else flat_keys.take(take)
        if k.null_count or not pc.all(pc.equal(k, pa.scalar(key, pa.string()))).as_py():
            return None
        out.append(items if take is None else items.take(take))
    return out


def parse_timestamp(strings: pa.Array, with_tz: bool, unit: str = "us") -> pa.Array:
    """Timestamps written as text in the log (partition values, stats): ISO 8601 with a zone,
    or `YYYY-MM-DD HH:MM:SS[.ffffff]` read as UTC; in `unit` (microseconds, or "ns" for
    nanosecond timestamps), UTC-zoned when `with_tz`."""
    if len(strings) and pc.all(pc.ends_with(strings, "Z")).as_py():
        # The usual form (stats are written like this): Arrow's ISO 8601 cast, no regex pass.
        try:
            aware = pc.cast(strings, pa.timestamp(unit, tz="UTC"))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass
        else:
            return aware if with_tz else pc.cast(aware, pa.timestamp(unit))
    s = pc.utf8_trim_whitespace(strings)
    zoned = pc.fill_null(pc.match_substring_regex(s, r"(Z|[+-]\d\d:?\d\d)$"), False)
    s = pc.replace_substring_regex(s, r"^(\d{4}-\d\d-\d\d)T", r"\1 ")
    result_type = pa.timestamp(unit, tz="UTC") if with_tz else pa.timestamp(unit)
    if not pc.any(zoned).as_py():
        naive = pc.cast(s, pa.timestamp(unit))
        return pc.assume_timezone(naive, "UTC") if with_tz else naive
    if pc.all(pc.or_(zoned, pc.is_null(s))).as_py():
        norm = pc.replace_substring_regex(pc.replace_substring_regex(s, "Z$", "+00:00"), r"([+-]\d\d)(\d\d)$", r"\1:\2")
        aware = pc.cast(pc.replace_substring_regex(norm, " ", "T"), pa.timestamp(unit, tz="UTC"))
        return aware if with_tz else pc.cast(aware, pa.timestamp(unit))
    values = [_py_timestamp(v, with_tz) for v in s.to_pylist()]
    return pa.array(values, result_type)


def _py_timestamp(text: str | None, with_tz: bool) -> dt.datetime | None:
    if text is None:
        return None
    parsed = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    if parsed.tzinfo is not None:
        parsed = parsed.astimezone(dt.UTC)
        return parsed if with_tz else parsed.replace(tzinfo=None)
    return parsed.replace(tzinfo=dt.UTC) if with_tz else parsed


def parse_partition_column(raw: pa.Array, dtype: DataType, *, column: str = "") -> pa.Array:
    """Typed values of a partition column from its serialized strings.

    Raises:
        InvalidLogError: a value cannot be parsed as the column's type.
    """
    if isinstance(raw, pa.ChunkedArray):
        raw = raw.combine_chunks()
    raw = raw.cast(pa.string())
    target = to_arrow_type(dtype)
    strings = pc.if_else(pc.equal(raw, ""), pa.scalar(None, pa.string()), raw)
    name = dtype.name if isinstance(dtype, (PrimitiveType, DecimalType)) else str(dtype)
    try:
        if name == "string" or name.startswith(("char", "varchar")):
            return strings
        if name in ("timestamp", "timestamp_ntz"):
            return parse_timestamp(strings, name == "timestamp")
        if name in ("timestamp_nanos", "timestamp_ntz_nanos"):
            return parse_timestamp(strings, name == "timestamp_nanos", unit="ns")
        if name.startswith("interval"):
            return parse_intervals(strings, name)
        if name == "boolean":
            lowered = pc.utf8_lower(strings)
            bad = pc.and_(pc.is_valid(lowered), pc.invert(pc.is_in(lowered, value_set=pa.array(["true", "false"]))))
            if pc.any(bad).as_py():
                raise ValueError("not true/false")
            return pc.equal(lowered, "true")
        if name == "binary":
            return pa.array([None if v is None else v.encode("utf-8") for v in strings.to_pylist()], pa.binary())
        if name == "date":
            return pc.cast(pc.utf8_slice_codeunits(pc.utf8_trim_whitespace(strings), 0, 10), pa.date32())
        if name == "void":
            return pa.nulls(len(raw), pa.null())
        if isinstance(dtype, DecimalType):
            return pa.array([None if v is None else Decimal(v) for v in strings.to_pylist()], target)
        return pc.cast(pc.utf8_trim_whitespace(strings), target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError, ArithmeticError) as exc:
        raise InvalidLogError(f"partition column {column!r}: cannot parse values as {name}: {exc}") from exc


_YEAR_MONTH = re.compile(r"^INTERVAL '([+-]?)(\d+)-(\d+)' YEAR TO MONTH$", re.IGNORECASE)
_DAY_SECOND = re.compile(r"^INTERVAL '([+-]?)(\d+) (\d+):(\d+):(\d+)(?:\.(\d{1,6}))?' DAY TO SECOND$", re.IGNORECASE)


def parse_intervals(strings: pa.Array, name: str) -> pa.Array:
    """Interval partition values, written as ANSI literals (protocol_rfcs/interval-types.md):
    `INTERVAL '1-6' YEAR TO MONTH` (months) or `INTERVAL '7 12:34:56.123456' DAY TO SECOND`
    (microseconds).

    Raises:
        ValueError: a value that is not such a literal, or does not fit the column's range.
    """
    months = name == "interval year to month"
    out: list[int | None] = []
    for text in strings.to_pylist():
        if text is None:
            out.append(None)
            continue
        m = (_YEAR_MONTH if months else _DAY_SECOND).match(text.strip())
        if m is None:
            raise ValueError(f"{text!r} is not an {name} literal")
        sign = -1 if m.group(1) == "-" else 1
        if months:
            value = sign * (int(m.group(2)) * 12 + int(m.group(3)))
            limit = 2**31
        else:
            seconds = ((int(m.group(2)) * 24 + int(m.group(3))) * 60 + int(m.group(4))) * 60 + int(m.group(5))
            value = sign * (seconds * 1_000_000 + int((m.group(6) or "0").ljust(6, "0")))
            limit = 2**63
        if not -limit <= value < limit:
            raise ValueError(f"{text!r} does not fit an {name} column")
        out.append(value)
    if months:
        return months_interval(pa.array(out, pa.int32()))
    return pa.array(out, pa.int64()).cast(pa.duration("us"))


def months_interval(months: pa.Array) -> pa.Array:
    """A count of months (int32) as Arrow's month-day-nano interval (days and nanoseconds 0)."""
    n = len(months)
    cells = np.zeros(n, dtype=np.dtype([("months", "<i4"), ("days", "<i4"), ("nanos", "<i8")]))
    cells["months"] = np.asarray(months.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int32)
    validity = months.is_valid().buffers()[1] if months.null_count else None
    return pa.Array.from_buffers(pa.month_day_nano_interval(), n, [validity, pa.py_buffer(cells.tobytes())])


def serialize_partition_value(value: Any, dtype: DataType) -> str | None:
    """The log's string form of one partition value (None for null)."""
    if value is None:
        return None
    name = dtype.name
    if name == "boolean":
        return "true" if value else "false"
    if name == "timestamp":
        if isinstance(value, dt.datetime):
            if value.tzinfo is not None:
                value = value.astimezone(dt.UTC).replace(tzinfo=None)
            return value.strftime("%Y-%m-%d %H:%M:%S.%f")
    if name == "timestamp_ntz" and isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S.%f")
    if name == "date" and isinstance(value, dt.date):
        return value.isoformat()
    if name == "binary" and isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", errors="surrogateescape")
    if isinstance(value, float) and np.isnan(value):
        return "NaN"
    return str(value)
