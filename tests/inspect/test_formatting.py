"""The display contract: units declared on every inspection schema, one formatting module."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pyarrow as pa
import pytest

from deltaexplore.errors import InvalidArgumentError
from deltaexplore.inspect import formatting as fmt
from deltaexplore.inspect.schemas import SCHEMAS, annotate_core, layout_schema


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_every_inspection_field_declares_a_known_unit(name: str) -> None:
    schema = SCHEMAS[name]
    assert fmt.table_name(schema) is not None
    for f in schema:
        md = f.metadata or {}
        assert b"doc" in md, (name, f.name)
        assert md.get(fmt.UNIT_KEY, b"").decode() in fmt.UNITS, (name, f.name)


def test_layout_schema_leaves_bounds_to_their_type() -> None:
    schema = layout_schema(pa.int32())
    assert fmt.table_name(schema) == "layout"
    assert fmt.unit_of(schema.field("min")) == "count"
    assert fmt.unit_of(layout_schema(pa.timestamp("us", tz="UTC")).field("max")) == "timestamp"
    assert fmt.unit_of(schema.field("size")) == "bytes"


def test_units_chosen_for_what_people_read() -> None:
    h = SCHEMAS["history"]
    assert [
        fmt.unit_of(h.field(c)) for c in ("version", "timestamp", "operation", "parameters", "bytes_added", "rows_added")
    ] == [
        "version",
        "timestamp",
        "operation",
        "json",
        "bytes",
        "count",
    ]
    f = SCHEMAS["files"]
    assert [fmt.unit_of(f.field(c)) for c in ("path", "size", "modification_time", "partition_values", "has_stats")] == [
        "path",
        "bytes",
        "timestamp",
        "json",
        "bool",
    ]
    m = SCHEMAS["overview"]
    assert fmt.unit_of(m.field("status")) == "status"
    assert (m.field("number").metadata or {})[fmt.UNIT_FROM_KEY] == b"unit"
    assert fmt.unit_of(SCHEMAS["deletion_vectors"].field("deleted_ratio")) == "ratio"


def test_annotate_core_keeps_the_data_and_adds_units() -> None:
    core = pa.table({"version": [3, 2], "bytes_added": [10, 2048], "extra": ["a", "b"]})
    out = annotate_core(core, "history")
    assert out.equals(core)
    assert fmt.table_name(out.schema) == "history"
    assert fmt.unit_of(out.schema.field("bytes_added")) == "bytes"
    assert fmt.unit_of(out.schema.field("extra")) == "text"


def test_inspection_tables_carry_the_schema_tag(tmp_path) -> None:
    import deltaexplore as dx
    from tests.helpers import simple_table

    simple_table(tmp_path)
    table = dx.open_table(str(tmp_path))
    assert fmt.table_name(table.inspect.history().schema) == "history"
    assert fmt.table_name(table.inspect.files().schema) == "files"
    assert fmt.table_name(table.inspect.overview().schema) == "overview"
    assert fmt.table_name(table.inspect.log_health().schema) == "log_health"
    assert fmt.unit_of(table.inspect.history().schema.field("timestamp")) == "timestamp"


def test_fallback_units_follow_the_arrow_type() -> None:
    cases = {
        pa.timestamp("ms"): "timestamp",
        pa.bool_(): "bool",
        pa.int16(): "count",
        pa.float32(): "number",
        pa.decimal128(10, 2): "number",
        pa.map_(pa.string(), pa.string()): "json",
        pa.string(): "text",
    }
    for typ, unit in cases.items():
        assert fmt.unit_of(pa.field("x", typ)) == unit
    assert fmt.unit_of(pa.field("x", pa.int64(), metadata={"unit": "not-a-unit"})) == "count"


def test_with_units_refuses_an_unknown_unit() -> None:
    with pytest.raises(InvalidArgumentError, match="parsecs"):
        fmt.with_units(pa.schema([("a", pa.int64())]), {"a": "parsecs"})


def test_human_bytes() -> None:
    assert [fmt.human_bytes(n) for n in (0, 512, 1023, 1024, 1536, 10 * 1024**2, 5 * 1024**4, -2048, None)] == [
        "0 B",
        "512 B",
        "1023 B",
        "1.0 KiB",
        "1.5 KiB",
        "10.0 MiB",
        "5.0 TiB",
        "-2.0 KiB",
        "?",
    ]
    assert fmt.human_bytes(3 * 1024**6) == "3072.0 PiB"


def test_counts_numbers_ratios() -> None:
    assert fmt.human_count(1234567) == "1,234,567"
    assert fmt.human_count(2.5) == "2.5"
    assert fmt.human_count(4.0) == "4"
    assert fmt.human_number(3.14159) == "3.14"
    assert fmt.human_number(123.456) == "123.5"
    assert fmt.human_number(12345.6) == "12,346"
    assert fmt.human_number(7) == "7"
    assert fmt.human_number(float("nan")) == "NaN"
    assert fmt.human_number(float("-inf")) == "-∞"
    assert fmt.human_ratio(0.125) == "12.5%"
    assert fmt.human_ratio(1) == "100.0%"


def test_durations() -> None:
    assert [fmt.human_duration(ms) for ms in (0, 850, 12345, 245000, 7380000, 277200000, -1500)] == [
        "0 ms",
        "850 ms",
        "12.3 s",
        "4 min 05 s",
        "2 h 03 min",
        "3 d 5 h",
        "-1.5 s",
    ]


def test_timestamps_local_with_utc_title() -> None:
    ms = 1704103200123  # 2024-01-01T10:00:00.123Z
    plus2 = timezone(timedelta(hours=2))
    assert fmt.human_timestamp(ms, tz=UTC) == "2024-01-01 10:00:00.123"
    assert fmt.human_timestamp(ms, tz=plus2) == "2024-01-01 12:00:00.123"
    assert fmt.human_timestamp(datetime(2024, 1, 1, 10, tzinfo=UTC), tz=UTC) == "2024-01-01 10:00:00"
    assert fmt.human_timestamp("2024-01-01T10:00:00Z", tz=plus2) == "2024-01-01 12:00:00"
    assert fmt.human_timestamp("yesterday") == "yesterday"
    assert fmt.timestamp_title(ms) == "2024-01-01T10:00:00.123Z"
    assert fmt.timestamp_title(datetime(2024, 1, 1, 12, tzinfo=plus2)) == "2024-01-01T10:00:00.000Z"
    assert fmt.timestamp_title(None) == ""


def test_json_items_and_text() -> None:
    assert fmt.json_items('{"mode":"Append","partitionBy":["region"]}') == [("mode", "Append"), ("partitionBy", '["region"]')]
    assert fmt.json_items([("a", "1"), ("b", None)]) == [("a", "1"), ("b", "null")]
    assert fmt.json_items({"k": 1}) == [("k", "1")]
    assert fmt.json_items("[1, 2]") is None
    assert fmt.json_items("not json") is None
    assert fmt.format_value("json", '{"a":"x","b":2}') == "a=x, b=2"
    assert fmt.format_value("json", "not json") == "not json"


def test_truncate_middle_keeps_both_ends() -> None:
    path = "region=emea/part-00000-2e38d7cc-8bac-46ba-86ed-1da83fad730a-c000.snappy.parquet"
    short = fmt.truncate_middle(path, 30)
    assert len(short) == 30
    assert short.startswith("region=emea/pa") and short.endswith("snappy.parquet") and "…" in short
    assert fmt.truncate_middle("short", 30) == "short"


def test_status_levels() -> None:
    assert [fmt.status_level(s) for s in ("ok", "INFO", "warn", "warning", "error", "published", None)] == [
        "ok",
        "info",
        "warn",
        "warn",
        "error",
        None,
        None,
    ]


def test_format_value_by_unit() -> None:
    assert fmt.format_value("bytes", 1536) == "1.5 KiB"
    assert fmt.format_value("count", 1234) == "1,234"
    assert fmt.format_value("version", 12345) == "12345"
    assert fmt.format_value("timestamp", 1704103200000, tz=UTC) == "2024-01-01 10:00:00"
    assert fmt.format_value("duration_ms", 850) == "850 ms"
    assert fmt.format_value("ratio", 0.5) == "50.0%"
    assert fmt.format_value("bool", True) == "yes"
    assert fmt.format_value("text", False) == "no"
    assert fmt.format_value("status", "warn") == "warn"
    assert fmt.format_value("operation", "WRITE") == "WRITE"
    assert fmt.format_value("text", ["a", "b"]) == "a, b"
    assert fmt.format_value("text", 2.5) == "2.50"
    assert fmt.format_value("bytes", None) == ""
    assert fmt.format_value("bytes", "n/a") == "n/a"
    assert fmt.format_value("unknown-unit", "<b>") == "<b>"  # escaping is the renderer's job


def test_metric_units() -> None:
    assert [fmt.metric_unit(w) for w in ("bytes", "ratio", "version", "timestamp", "ms", "files", "", None)] == [
        "bytes",
        "ratio",
        "version",
        "timestamp",
        "duration_ms",
        "count",
        "number",
        "number",
    ]


def test_samples_cover_every_unit_and_format() -> None:
    assert {u for u, _ in fmt.SAMPLES} == set(fmt.UNITS)
    for unit, value in fmt.SAMPLES:
        assert isinstance(fmt.format_value(unit, value, tz=UTC), str)


def test_compact_counts_keep_three_significant_digits() -> None:
    f = fmt.human_compact
    assert [f(n) for n in (0, 7, 9_999, -9_999)] == ["0", "7", "9,999", "-9,999"]  # exact below 10,000
    assert f(10_000) == "10.0 K" and f(12_345) == "12.3 K" and f(123_456) == "123 K"
    assert f(4_775_210) == "4.78 M" and f(-31_030_000) == "-31.0 M" and f(2_130_471_111) == "2.13 B"
    assert f(999_949) == "1.00 M" and f(999_499) == "999 K"  # a rounding up to 1000 takes the next unit
    assert f(1_000_200_000_000) == "1.00 T" and f(None) == "?" and f(float("inf")) == "∞"
    for n in (10_000, 12_345, 4_775_210, 999_949, 2_130_471_111, 98_765_432_101):  # exact to 0.5%
        number, unit = f(n).split()
        assert abs(float(number) * 1000 ** ("KMBT".index(unit) + 1) - n) <= 0.005 * n


def test_plurals_and_separators() -> None:
    assert fmt.count_noun(1, "file") == "1 file"
    assert fmt.count_noun(1_000_200, "file") == "1,000,200 files"
    assert fmt.count_noun(0, "property") == "0 properties"
    assert fmt.count_noun(2, "fix") == "2 fixes" and fmt.count_noun(3, "day") == "3 days"
    assert fmt.plural("file with a deletion vector", 2) == "files with a deletion vector"


def test_short_paths_keep_what_tells_files_apart() -> None:
    s = fmt.short_path
    spark = "date=2026-11-27/part-00002-3f2a8c1e-7b4d-4c3a-9f2e-1a2b3c4d5e6f-c000.snappy.parquet"
    assert s(spark) == "date=2026-11-27/part-00002-3f2a8c1e…"
    assert s("region=emea/day=2024-01-01/part-9a8b7c6d-7b4d-4c3a-9f2e-1a2b3c4d5e6f.c000.zstd.parquet") == (
        "region=emea/day=2024-01-01/part-9a8b7c6d…"
    )
    # directories that are not partitions (the location, random prefixes) are left out, and say so
    assert s("s3://bucket/t/Ab/part-00000-3f2a8c1e-7b4d-4c3a-9f2e-1a2b3c4d5e6f.c000.zstd.parquet") == ("…/part-00000-3f2a8c1e…")
    assert s("deletion_vector_3f2a8c1e-7b4d-4c3a-9f2e-1a2b3c4d5e6f.bin") == "deletion_vector_3f2a8c1e…"
    assert s("x=1/plain.parquet") == "x=1/plain.parquet" and s("") == ""  # no UUID: the name whole


def test_partition_keys_become_one_column_of_values_per_partition_column() -> None:
    keys = pa.array(["region=emea/day=2024-01-01", "region=a/b=c/day=2024-01-02", None, "", "other=1"])
    region, day = fmt.partition_value_columns(keys, ["region", "day"])
    assert region.to_pylist() == ["emea", "a/b=c", None, None, None]
    assert day.to_pylist() == ["2024-01-01", "2024-01-02", None, None, None]
    (only,) = fmt.partition_value_columns(pa.chunked_array([["date=2024-01-01", "date=x=y", ""]]), ["date"])
    assert only.to_pylist() == ["2024-01-01", "x=y", None]
    assert fmt.partition_names(["region=emea/day=1", "", None, "region=amer/day=2"]) == ["region", "day"]
    assert fmt.partition_names(["a=1", "b=2"]) is None  # keys that disagree are not split
    assert fmt.partition_names(["a=1/x"]) is None and fmt.partition_names(["", None]) is None
