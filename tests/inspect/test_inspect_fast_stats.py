"""fast_stats: one column's bounds located by substring search must equal the core's JSON parse,
on every corpus table and on documents built to break it."""

from __future__ import annotations

import json
import warnings

import pytest
from corpus_paths import CORPUS, corpus_catalog
from helpers import add, commit_info, metadata, protocol, write_commit

import deltaexplore as dx
from deltaexplore.core.stats import stats_columns, stats_for_adds
from deltaexplore.inspect.fast_stats import column_bounds


def _compare(snap) -> int:
    adds = snap.add_actions()
    used = 0
    for col in stats_columns(snap.schema, snap.column_mapping_mode, snap.partition_columns, None):
        fast = column_bounds(snap, adds, col)
        if fast is None:
            continue
        used += 1
        core = stats_for_adds(snap, adds, [col.name])
        for key, prefix in (("min", "min."), ("max", "max."), ("null_count", "null_count.")):
            expected = core.column(prefix + col.name).combine_chunks()
            assert fast[key].to_pylist() == expected.cast(fast[key].type).to_pylist(), (col.name, key)
    return used


def _tables():
    return [
        pytest.param(t, id=t["id"])
        for t in corpus_catalog()
        if t["status"] == "ok" and t["active_files"] and "stats:none" not in t["tags"]
    ]


@pytest.mark.corpus
@pytest.mark.parametrize("row", _tables())
def test_corpus_fast_bounds_equal_core(row):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        snap = dx.open_table(str(CORPUS / row["table_root"])).snapshot()
        _compare(snap)


SCHEMA = {
    "type": "struct",
    "fields": [
        {"name": "id", "type": "long", "nullable": True, "metadata": {}},
        {"name": "s", "type": "string", "nullable": True, "metadata": {}},
        {"name": "ts", "type": "timestamp", "nullable": True, "metadata": {}},
        {
            "name": "nested",
            "type": {"type": "struct", "fields": [{"name": "id2", "type": "long", "nullable": True, "metadata": {}}]},
            "nullable": True,
            "metadata": {},
        },
    ],
}


def test_hostile_documents(tmp_path):
    docs = [
        # usual order
        {
            "numRecords": 3,
            "minValues": {"id": 1, "s": "a,b}", "ts": "2024-01-01T00:00:00.000Z", "nested": {"id2": 5}},
            "maxValues": {"id": 9, "s": 'q"uote', "ts": "2024-01-02T00:00:00.000Z", "nested": {"id2": 6}},
            "nullCount": {"id": 0, "s": 1, "ts": 0, "nested": {"id2": 0}},
        },
        # other object order, id absent from minValues/maxValues (all null)
        {"numRecords": 2, "nullCount": {"id": 2, "s": 0}, "maxValues": {"s": "z"}, "minValues": {"s": "y"}},
        # a string value that mentions the key, and a long string value
        {
            "numRecords": 1,
            "minValues": {"s": '"id":5 ' + "x" * 100, "id": 4},
            "maxValues": {"s": "zz", "id": 4},
            "nullCount": {"id": 0},
        },
        # unicode escapes
        {
            "numRecords": 1,
            "minValues": {"id": -7, "s": "\u00e9t\u00e9"},
            "maxValues": {"id": 7, "s": "\u00e9t\u00e9"},
            "nullCount": {"id": 0, "s": 0},
        },
    ]
    texts = [json.dumps(d, separators=(",", ":"), ensure_ascii=(i != 3)) for i, d in enumerate(docs)]
    texts.append(json.dumps(docs[0], indent=1))  # pretty-printed: headers with spaces
    texts.append("{}")
    actions = [commit_info("WRITE"), protocol(), metadata(schema=SCHEMA)]
    actions += [add(f"f{i}.parquet", 1, stats=t) for i, t in enumerate(texts)]
    actions.append(add("nostats.parquet", 1))
    write_commit(tmp_path, 0, actions)
    snap = dx.open_table(str(tmp_path)).snapshot()
    assert _compare(snap) == 3  # id, s, ts; nested.id2 goes to the core
    col = next(c for c in stats_columns(snap.schema, "none", [], None) if c.name == "id")
    got = column_bounds(snap, snap.add_actions(), col)
    assert got["min"].to_pylist() == [1, None, 4, -7, 1, None, None]
    assert got["null_count"].to_pylist() == [0, 2, 0, 0, 0, None, None]
