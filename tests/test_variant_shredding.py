"""Shredded variants read by the local reader.

Every case of apache/parquet-testing's `shredded_variant/` (tests/fixtures/shredded_variant,
Apache-2.0) is wrapped in a one-commit Delta table with `variantType` + `variantShredding`: the
131 valid cases decode to their expected variants (compared as typed trees, so an INT8 stays an
INT8) and the 6 invalid ones are `InvalidVariantError`s saying why. Then tables that mix
shredded and unshredded files, variants nested in structs and arrays, the spec's own examples
built with pyarrow, and `to_arrow(variant=...)`.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers import add, commit_info, metadata, protocol, write_commit

import deltaexplore as dx
from deltaexplore.core.protocol.variant import parse_metadata, split_variant, to_json, typed_tree
from deltaexplore.errors import InvalidArgumentError, InvalidVariantError

FIXTURES = Path(__file__).parent / "fixtures" / "shredded_variant"
CASES = [c for c in json.loads((FIXTURES / "cases.json").read_text()) if "parquet_file" in c]
VALID = [c for c in CASES if "error_message" not in c]
INVALID = [c for c in CASES if "error_message" in c]
SHREDDING = protocol(3, 7, ["variantType", "variantShredding"], ["variantType", "variantShredding"])
ID_VAR = {
    "type": "struct",
    "fields": [
        {"name": "id", "type": "integer", "nullable": False, "metadata": {}},
        {"name": "var", "type": "variant", "nullable": True, "metadata": {}},
    ],
}


def _table(root: Path, files: list[str], *, schema: dict | None = None, proto: dict | None = None) -> dx.Table:
    actions = [commit_info("CREATE TABLE"), proto or SHREDDING, metadata(schema or ID_VAR)]
    for i, name in enumerate(files):
        src = FIXTURES / name if not Path(name).is_absolute() else Path(name)
        dst = root / f"part-{i:03d}-{src.name}"
        root.mkdir(parents=True, exist_ok=True)
        shutil.copy(src, dst)
        actions.append(add(dst.name, dst.stat().st_size))
    write_commit(root, 0, actions)
    return dx.open_table(str(root))


def _expected(name: str | None):
    if name is None:
        return None
    m, v = split_variant((FIXTURES / name).read_bytes())
    return typed_tree(parse_metadata(m), v)


def _tree(row: dict | None):
    return None if row is None else typed_tree(parse_metadata(row["metadata"]), row["value"])


def test_the_fixture_holds_every_case():
    assert len(CASES) == 137 and len(VALID) == 131 and len(INVALID) == 6


@pytest.mark.parametrize("case", VALID, ids=[f"{c['case_number']:03d}-{c['test']}" for c in VALID])
def test_valid_case_decodes_to_its_variant(tmp_path, case):
    rows = _table(tmp_path / "t", [case["parquet_file"]]).snapshot().to_arrow().sort_by("id").to_pylist()
    expected = case.get("variant_files") or [case["variant_file"]]
    assert len(rows) == len(expected)
    for row, name in zip(rows, expected):
        assert _tree(row["var"]) == _expected(name), (case["case_number"], row)
    # and every one has a JSON text (nothing in them that to_json cannot say)
    texts = _table(tmp_path / "j", [case["parquet_file"]]).snapshot().to_arrow(variant="json").column("var").to_pylist()
    assert all(t is None or isinstance(json.loads(t), (dict, list, str, int, float, bool, type(None))) for t in texts)


@pytest.mark.parametrize("case", INVALID, ids=[f"{c['case_number']:03d}-{c['test']}" for c in INVALID])
def test_invalid_case_is_a_typed_error(tmp_path, case):
    table = _table(tmp_path / "t", [case["parquet_file"]])
    words = {
        "Invalid variant, conflicting value and typed_value": "conflicting value and typed_value",
        "Invalid variant, non-object value with shredded fields": "non-object value with shredded fields",
    }.get(case["error_message"], "unsupported shredded value type")
    with pytest.raises(InvalidVariantError, match=words) as info:
        table.snapshot().to_arrow()
    assert case["parquet_file"] in str(info.value) and "column var" in str(info.value)


def test_shredded_and_unshredded_files_in_one_table(tmp_path):
    """Files of one table may each shred differently, or not at all (the spec allows mixing)."""
    picks = {
        48: "unshredded boolean",
        44: "object in an object",
        1: "shredded array",
        125: "partially shredded object, field conflict",
        83: "mixed records, a null row",
        126: "array of objects",
        31: "shredded string",
    }
    cases = {c["case_number"]: c for c in VALID}
    table = _table(tmp_path / "t", [cases[n]["parquet_file"] for n in picks])
    rows = table.snapshot().to_arrow()
    assert rows.num_rows == sum(len(cases[n].get("variant_files") or [1]) for n in picks)
    got = [_tree(r) for r in rows.column("var").to_pylist()]
    want = [_expected(f) for n in picks for f in (cases[n].get("variant_files") or [cases[n]["variant_file"]])]
    assert got == want


def test_variants_nested_in_structs_and_arrays(tmp_path):
    """A variant inside a struct and an array of variants, shredded in one file."""
    meta = b"\x01\x01\x00\x01a"  # dictionary ["a"]
    shredded_obj = pa.struct(
        [pa.field("a", pa.struct([pa.field("value", pa.binary()), pa.field("typed_value", pa.int64())]), False)]
    )
    inner = pa.struct(
        [pa.field("metadata", pa.binary(), False), pa.field("value", pa.binary()), pa.field("typed_value", shredded_obj)]
    )
    element = pa.struct(
        [pa.field("metadata", pa.binary(), False), pa.field("value", pa.binary()), pa.field("typed_value", pa.string())]
    )
    t = pa.table(
        {
            "id": pa.array([1, 2], pa.int32()),
            "s": pa.array(
                [
                    {"v": {"metadata": meta, "value": None, "typed_value": {"a": {"value": None, "typed_value": 7}}}},
                    {
                        "v": {
                            "metadata": meta,
                            "value": b"\x02\x01\x00\x00\x02\x0c\x03",
                            "typed_value": {"a": {"value": None, "typed_value": None}},
                        }
                    },
                ],
                pa.struct([pa.field("v", inner)]),
            ),
            "arr": pa.array(
                [
                    [
                        {"metadata": b"\x01\x00\x00", "value": None, "typed_value": "x"},
                        {"metadata": b"\x01\x00\x00", "value": b"\x00", "typed_value": None},
                    ],
                    None,
                ],
                pa.list_(element),
            ),
        }
    )
    root = tmp_path / "t"
    root.mkdir()
    pq.write_table(t, root / "nested.parquet")
    schema = {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "integer", "nullable": False, "metadata": {}},
            {
                "name": "s",
                "type": {"type": "struct", "fields": [{"name": "v", "type": "variant", "nullable": True, "metadata": {}}]},
                "nullable": True,
                "metadata": {},
            },
            {
                "name": "arr",
                "type": {"type": "array", "elementType": "variant", "containsNull": True},
                "nullable": True,
                "metadata": {},
            },
        ],
    }
    table = _table(root, [str(root / "nested.parquet")], schema=schema)
    rows = table.snapshot().to_arrow(variant="json").sort_by("id").to_pylist()
    # row 2: the object's only field `a` is missing from typed_value; its value holds {"a": 3}
    # as an unshredded field of the same name, which the shredded column overrides (missing)
    assert rows == [
        {"id": 1, "s": {"v": '{"a":7}'}, "arr": ['"x"', "null"]},
        {"id": 2, "s": {"v": "{}"}, "arr": None},
    ]
    binary = table.snapshot().to_arrow().sort_by("id")
    assert binary.schema.field("arr").type.value_type == pa.struct(
        [pa.field("metadata", pa.binary(), False), pa.field("value", pa.binary(), False)]
    )


def test_spec_example_measurements(tmp_path):
    """VariantShredding.md's first example: 34, null, "n/a", 100 shredded as int64."""
    t = pa.table(
        {
            "id": pa.array([1, 2, 3, 4], pa.int32()),
            "var": pa.array(
                [
                    {"metadata": b"\x01\x00\x00", "value": None, "typed_value": 34},
                    {"metadata": b"\x01\x00\x00", "value": b"\x00", "typed_value": None},
                    {"metadata": b"\x01\x00\x00", "value": b"\x0dn/a", "typed_value": None},
                    {"metadata": b"\x01\x00\x00", "value": None, "typed_value": 100},
                ],
                pa.struct(
                    [
                        pa.field("metadata", pa.binary(), False),
                        pa.field("value", pa.binary()),
                        pa.field("typed_value", pa.int64()),
                    ]
                ),
            ),
        }
    )
    root = tmp_path / "t"
    root.mkdir()
    pq.write_table(t, root / "m.parquet")
    snap = _table(root, [str(root / "m.parquet")]).snapshot()
    assert snap.to_arrow(variant="json").sort_by("id").column("var").to_pylist() == ["34", "null", '"n/a"', "100"]
    trees = [_tree(r) for r in snap.to_arrow().sort_by("id").column("var").to_pylist()]
    assert trees == [("INT64", 34), ("NULL", None), ("STRING", "n/a"), ("INT64", 100)]


def test_variant_argument_is_checked(tmp_path):
    snap = _table(tmp_path / "t", [VALID[0]["parquet_file"]]).snapshot()
    with pytest.raises(InvalidArgumentError, match="variant"):
        snap.to_arrow(variant="text")


def test_unshredded_corpus_table_as_json(corpus):
    """delta-kernel-rs's unshredded variants (nested in arrays, structs, maps) as JSON text."""
    root = corpus / "delta-kernel-rs" / "unshredded-variant"
    if not root.exists():
        pytest.skip("table not in corpus")
    snap = dx.open_table(str(root)).snapshot()
    rows = {r["id"]: r for r in snap.to_arrow(variant="json").to_pylist()}
    assert rows[1]["v"] == '{"key":1}'
    assert rows[1]["array_of_variants"] == ['{"key":1}', None, '{"key":1}', None, '{"key":1}']
    assert rows[1]["struct_of_variants"] == {"v": '{"key":1}'}
    assert dict(rows[1]["map_of_variants"])["1"] == '{"key":1}'
    binary = snap.to_arrow()
    first = binary.filter(pa.compute.equal(binary.column("id"), 1)).column("v").to_pylist()[0]
    assert to_json(first["metadata"], first["value"]) == '{"key":1}'
