"""File actions ↔ Arrow ↔ log JSON lines: the vectorized encoder agrees with `json`."""

from __future__ import annotations

import json

import pyarrow as pa

from deltaexplore.core.protocol.action_codec import _action_lines_slow, action_lines, file_actions_table

TRICKY = ["plain", 'quote " and \\ backslash', "new\nline\ttab\rcr", "ünïcødé ✓ 😀", "", "ctrl \x01 char", "x=1/part %20.parquet"]


def _actions(kind: str) -> list[dict]:
    out = []
    for i, text in enumerate(TRICKY):
        a = {"path": f"{text}/f{i}.parquet", "partitionValues": {"p": text, "q": None}, "size": i, "dataChange": i % 2 == 0}
        if kind != "cdc":
            a["tags"] = {"k": text} if i % 3 else None
            a["deletionVector"] = (
                {
                    "storageType": "u",
                    "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^",
                    "offset": 1 if i % 2 else None,
                    "sizeInBytes": 34,
                    "cardinality": 2,
                }
                if i % 2
                else None
            )
            a["baseRowId"] = i * 10 if i % 2 else None
        if kind == "add":
            a["stats"] = json.dumps({"numRecords": i, "minValues": {"s": text}})
            a["modificationTime"] = 1_700_000_000_000 + i
        if kind == "remove":
            a["deletionTimestamp"] = 5
            a["extendedFileMetadata"] = True
        out.append(a)
    return out


def test_vectorized_lines_equal_json():
    for kind in ("add", "remove", "cdc"):
        table = file_actions_table(kind, _actions(kind))
        clean = table.filter(pa.array([("\x01" not in t) for t in TRICKY]))
        fast = action_lines(kind, clean)
        assert fast == _action_lines_slow(kind, clean)
        assert [json.loads(x) for x in fast] == [json.loads(x) for x in _action_lines_slow(kind, clean)]
        # rare control characters take the json path and still round-trip
        lines = action_lines(kind, table)
        assert [json.loads(x)[kind]["path"] for x in lines] == table.column("path").to_pylist()


def test_required_partition_values_and_round_trip():
    table = file_actions_table("add", [{"path": "a.parquet", "size": 1, "modificationTime": 1, "dataChange": True}])
    (line,) = action_lines("add", table)
    assert json.loads(line) == {
        "add": {"path": "a.parquet", "partitionValues": {}, "size": 1, "modificationTime": 1, "dataChange": True}
    }
    again = file_actions_table("add", [json.loads(line)["add"]])
    assert again.drop_columns(["partitionValues"]).equals(table.drop_columns(["partitionValues"]))
    assert again.column("partitionValues").to_pylist() == [[]]


def test_sliced_tables_encode():
    table = file_actions_table("remove", _actions("remove"))
    part = table.slice(3, 2)
    assert action_lines("remove", part) == _action_lines_slow("remove", part)
