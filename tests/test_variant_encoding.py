"""The Variant binary encoding (core.protocol.variant): JSON text as Spark's `to_json` writes it,
typed trees, building objects and arrays, and malformed bytes as typed errors.

The JSON forms of dates, timestamps, decimals, binaries and floats are also checked against a
real Spark's `to_json` in tests/spark/test_spark_variants.py.
"""

from __future__ import annotations

import datetime as dt
import struct

import pytest

from deltaexplore.core.protocol.variant import (
    encode_array,
    encode_object,
    encode_string,
    java_double,
    object_entries,
    parse_metadata,
    to_json,
    typed_tree,
    value_size,
)
from deltaexplore.errors import InvalidVariantError

EMPTY = b"\x01\x00\x00"


def _prim(type_id: int, body: bytes = b"") -> bytes:
    return bytes([type_id << 2]) + body


def _metadata(*keys: str) -> bytes:
    raw = [k.encode() for k in keys]
    offsets = [0]
    for k in raw:
        offsets.append(offsets[-1] + len(k))
    return bytes([0x01, len(raw), *offsets]) + b"".join(raw)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (_prim(0), "null"),
        (_prim(1), "true"),
        (_prim(2), "false"),
        (_prim(3, b"\xde"), "-34"),
        (_prim(4, struct.pack("<h", 1234)), "1234"),
        (_prim(5, struct.pack("<i", -12345)), "-12345"),
        (_prim(6, struct.pack("<q", 9876543210)), "9876543210"),
        (_prim(7, struct.pack("<d", 14.3)), "14.3"),
        (_prim(7, struct.pack("<d", 1e10)), "1.0E10"),
        (_prim(7, struct.pack("<d", 1.5e-5)), "1.5E-5"),
        (_prim(7, struct.pack("<d", 0.001)), "0.001"),
        (_prim(7, struct.pack("<d", -0.0)), "-0.0"),
        (_prim(7, struct.pack("<d", float("nan"))), '"NaN"'),
        (_prim(7, struct.pack("<d", float("-inf"))), '"-Infinity"'),
        (_prim(14, struct.pack("<f", 10.11)), "10.11"),
        (_prim(8, bytes([4]) + struct.pack("<i", 123456789)), "12345.6789"),
        (_prim(9, bytes([2]) + struct.pack("<q", -150)), "-1.5"),
        (_prim(8, bytes([2]) + struct.pack("<i", 1000)), "10"),
        (_prim(10, bytes([0]) + (10**20).to_bytes(16, "little", signed=True)), "100000000000000000000"),
        (_prim(11, struct.pack("<i", 20034)), '"2024-11-07"'),
        (_prim(12, struct.pack("<q", 1730982834123456)), '"2024-11-07 12:33:54.123456+00:00"'),
        (_prim(12, struct.pack("<q", 1730982834000000)), '"2024-11-07 12:33:54+00:00"'),
        (_prim(13, struct.pack("<q", 1730982834120000)), '"2024-11-07 12:33:54.12"'),
        (_prim(18, struct.pack("<q", 1730982834123456789)), '"2024-11-07 12:33:54.123456789+00:00"'),
        (_prim(17, struct.pack("<q", 45234123456)), '"12:33:54.123456"'),
        (_prim(15, struct.pack("<I", 4) + b"\x0a\x0b\x0c\x0d"), '"CgsMDQ=="'),
        (_prim(16, struct.pack("<I", 2) + "héllo".encode()[:2]), None),
        (encode_string('a "quoted"\nline'), '"a \\"quoted\\"\\nline"'),
        (_prim(20, bytes.fromhex("f24f9b6481fa49d1b74e8c09a6e31c56")), '"f24f9b64-81fa-49d1-b74e-8c09a6e31c56"'),
    ],
)
def test_primitives_as_json(value, text):
    if text is None:  # a long string cut inside a UTF-8 sequence
        with pytest.raises(InvalidVariantError, match="UTF-8"):
            to_json(EMPTY, value)
        return
    assert to_json(EMPTY, value) == text


def test_java_double_matches_java_forms():
    assert [java_double(x) for x in (1.0, 100.0, 1234567.0, 12345678.0, 0.0001, 123.456)] == [
        "1.0",
        "100.0",
        "1234567.0",
        "1.2345678E7",
        "1.0E-4",
        "123.456",
    ]
    assert java_double(3.4028234663852886e38, single=True) == "3.4028235E38"


def test_objects_sorted_and_nested():
    meta = _metadata("b", "a", "c")
    inner = encode_array([_prim(3, b"\x01"), encode_string("x"), _prim(0)])
    obj = encode_object([("b", 0, _prim(1)), ("c", 2, inner), ("a", 1, encode_string("first"))])
    assert to_json(meta, obj) == '{"a":"first","b":true,"c":[1,"x",null]}'
    m = parse_metadata(meta)
    assert [k for k, _, _ in object_entries(m, obj)] == ["a", "b", "c"]
    assert typed_tree(m, obj) == {
        "a": ("STRING", "first"),
        "b": ("BOOLEAN_TRUE", True),
        "c": [("INT8", 1), ("STRING", "x"), ("NULL", None)],
    }
    assert value_size(obj) == len(obj)


def test_large_containers_and_wide_offsets():
    keys = [f"k{i:03d}" for i in range(300)]
    raw = [k.encode() for k in keys]
    offsets = [0]
    for k in raw:
        offsets.append(offsets[-1] + len(k))
    meta = (
        bytes([0x01 | (1 << 6)])
        + len(raw).to_bytes(2, "little")
        + b"".join(o.to_bytes(2, "little") for o in offsets)
        + b"".join(raw)
    )
    obj = encode_object([(k, i, encode_string("v" * 70)) for i, k in enumerate(keys)])
    assert obj[0] & 0x03 == 2 and (obj[0] >> 2) & 0x10  # is_large
    parsed = parse_metadata(meta)
    tree = typed_tree(parsed, obj)
    assert len(tree) == 300 and tree["k299"] == ("STRING", "v" * 70)
    arr = encode_array([_prim(5, struct.pack("<i", i)) for i in range(400)])
    assert to_json(EMPTY, arr) == "[" + ",".join(str(i) for i in range(400)) + "]"


def test_short_and_long_strings_are_one_value():
    long_form = _prim(16, struct.pack("<I", 3) + b"abc")
    assert typed_tree(parse_metadata(EMPTY), long_form) == typed_tree(parse_metadata(EMPTY), encode_string("abc"))


@pytest.mark.parametrize(
    ("metadata", "value", "words"),
    [
        (b"", b"\x00", "metadata is empty"),
        (b"\x02\x00\x00", b"\x00", "version is 2"),
        (b"\x01\x05\x00", b"\x00", "end at"),
        (EMPTY, b"", "expected at 0"),
        (EMPTY, _prim(63), "unknown variant primitive type 63"),
        (EMPTY, _prim(6, b"\x01\x02"), "bytes were expected"),
        (EMPTY, b"\x02\x01\x07\x00\x01\x00", "field id 7 is not in its metadata"),
        (_metadata("a"), b"\x03\x02\x00\x09\x0a\x0c", "ends at"),
    ],
)
def test_malformed_bytes_are_typed_errors(metadata, value, words):
    with pytest.raises(InvalidVariantError, match=words):
        to_json(metadata, value)


def test_duplicate_keys_refused():
    with pytest.raises(InvalidVariantError, match="twice"):
        encode_object([("a", 0, _prim(0)), ("a", 1, _prim(1))])


def test_dates_before_the_epoch():
    assert to_json(EMPTY, _prim(11, struct.pack("<i", (dt.date(1957, 11, 7) - dt.date(1970, 1, 1)).days))) == '"1957-11-07"'
    micros = (dt.datetime(1957, 11, 7, 12, 33, 54, 123456) - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1)
    assert to_json(EMPTY, _prim(12, struct.pack("<q", micros))) == '"1957-11-07 12:33:54.123456+00:00"'
