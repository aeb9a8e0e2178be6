"""Collated string columns (protocol_rfcs/collated-string-type.md).

The table: `name` collated spark.UTF8_LCASE, `uni` icu.UNICODE, `plain` UTF-8 binary, three
files whose statistics hold UTF-8 binary bounds at the top level and spark.UTF8_LCASE.75.1
bounds under `statsWithCollation`. A filter compares under the column's collation (as Spark
does): `name = 'APPLE'` finds "Apple" and "apple", so the binary bounds (which would rule out
every file) are not used, and neither are the versioned LCASE ones (this reader's lower-casing
has no collation version); `explain` says so. A binary column still skips on its bounds; a
filter on `uni` is refused.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from helpers import commit_info, metadata, protocol, write_commit, write_data

import deltaexplore as dx

COLLATED = {
    "type": "struct",
    "fields": [
        {"name": "id", "type": "long", "nullable": True, "metadata": {}},
        {"name": "name", "type": "string", "nullable": True, "metadata": {"__COLLATIONS": {"name": "spark.UTF8_LCASE"}}},
        {"name": "uni", "type": "string", "nullable": True, "metadata": {"__COLLATIONS": {"uni": "icu.UNICODE"}}},
        {"name": "plain", "type": "string", "nullable": True, "metadata": {}},
        {
            "name": "tags",
            "type": {"type": "array", "elementType": "string", "containsNull": True},
            "nullable": True,
            "metadata": {"__COLLATIONS": {"tags.element": "spark.UTF8_LCASE"}},
        },
    ],
}
FILES = [
    (["Apple", "banana"], ["a", "b"]),
    (["apple", "Cherry"], ["c", "d"]),
    (["zed"], ["z"]),
]


def _stats(names: list[str], plain: list[str]) -> str:
    binary = {"name": (min(names), max(names)), "plain": (min(plain), max(plain))}
    lower = [n.lower() for n in names]
    return json.dumps(
        {
            "numRecords": len(names),
            "minValues": {k: v[0] for k, v in binary.items()},
            "maxValues": {k: v[1] for k, v in binary.items()},
            "nullCount": {"name": 0, "plain": 0, "uni": len(names)},
            "statsWithCollation": {
                "spark.UTF8_LCASE.75.1": {"minValues": {"name": min(lower)}, "maxValues": {"name": max(lower)}}
            },
        }
    )


def build(root) -> dx.Table:
    actions = [
        commit_info("CREATE TABLE"),
        protocol(1, 7, None, ["collations", "domainMetadata", "appendOnly", "invariants"]),
        metadata(COLLATED),
        {"domainMetadata": {"domain": "collations", "configuration": json.dumps({"writeVersions": {}}), "removed": False}},
    ]
    start = 0
    for i, (names, plain) in enumerate(FILES):
        n = len(names)
        data = pa.table(
            {
                "id": pa.array(range(start, start + n), pa.int64()),
                "name": names,
                "uni": pa.nulls(n, pa.string()),
                "plain": plain,
                "tags": [[x] for x in names],
            }
        )
        start += n
        name, size = write_data(root, f"part-{i}.parquet", data)
        actions.append(
            {
                "add": {
                    "path": name,
                    "partitionValues": {},
                    "size": size,
                    "modificationTime": 1,
                    "dataChange": True,
                    "stats": _stats(names, plain),
                }
            }
        )
    write_commit(root, 0, actions)
    return dx.open_table(str(root))


@pytest.fixture
def table(tmp_path) -> dx.Table:
    return build(tmp_path)


def test_collations_shown_in_the_schema(table):
    rows = {r["column"]: r["collation"] for r in table.inspect.column_mapping().to_pylist()}
    assert rows == {
        "id": None,
        "name": "spark.UTF8_LCASE",
        "uni": "icu.UNICODE",
        "plain": None,
        "tags": None,
        "tags.element": "spark.UTF8_LCASE",
    }
    feats = {r["feature"]: r for r in table.inspect.features().to_pylist()}
    assert feats["collations"]["kind"] == "writer" and feats["collations"]["active"]
    assert "collated-string-type.md" in feats["collations"]["rfc"]


def test_a_collated_column_compares_under_its_collation_without_its_statistics(table):
    snap = table.snapshot()
    plan = snap.scan(where="name = 'APPLE'")
    assert plan.stats_pruned == 0 and plan.files.num_rows == 3  # binary bounds would have skipped all three
    assert sorted(snap.to_arrow(where="name = 'APPLE'").column("name").to_pylist()) == ["Apple", "apple"]
    assert sorted(snap.to_arrow(where="name IN ('APPLE', 'cherry')").column("name").to_pylist()) == ["Apple", "Cherry", "apple"]
    assert snap.to_arrow(where="name > 'BANANA'").column("name").to_pylist() == ["Cherry", "zed"]
    explained = table.inspect.explain("name = 'APPLE'").to_pylist()
    assert all(r["selected"] for r in explained)
    assert all("name: collated spark.UTF8_LCASE" in r["ignored_stats"] for r in explained)


def test_a_binary_column_still_skips_on_its_bounds(table):
    snap = table.snapshot()
    plan = snap.scan(where="plain = 'z'")
    assert plan.stats_pruned == 2 and snap.to_arrow(where="plain = 'z'").column("name").to_pylist() == ["zed"]
    assert {r["ignored_stats"] for r in table.inspect.explain("plain = 'z'").to_pylist()} == {None}


def test_a_collation_this_reader_cannot_compare_is_refused(table):
    with pytest.raises(dx.UnsupportedFeatureError, match=r"'uni'.*icu\.UNICODE") as info:
        table.snapshot().to_arrow(where="uni = 'x'")
    assert info.value.feature == "collations"
    assert table.snapshot().to_arrow(columns=["uni"]).num_rows == 5  # reading it is fine


def test_collations_in_every_schema_view(table, capsys):
    """The CLI, the HTML display's summary and the explorer's static summary say `collate`."""
    from deltaexplore.cli import main
    from deltaexplore.widgets import display, explore, fallback

    assert main(["inspect", table.uri]) == 0
    out = capsys.readouterr().out
    assert "  name: string collate spark.UTF8_LCASE\n" in out and "  uni: string collate icu.UNICODE\n" in out
    assert "  tags: array<string collate spark.UTF8_LCASE>\n" in out and "  plain: string\n" in out
    want = {
        "id": "long",
        "name": "string collate spark.UTF8_LCASE",
        "uni": "string collate icu.UNICODE",
        "plain": "string",
        "tags": "array<string collate spark.UTF8_LCASE>",
    }
    summary = display.summary_json(table)
    assert {c["name"]: c["type"] for c in summary["columns"]} == want
    assert "string collate spark.UTF8_LCASE" in display.summary_html(summary)
    static = fallback.summary(explore(table))
    assert {c["name"]: c["type"] for c in static["columns"]}["name"] == "string collate spark.UTF8_LCASE"
