"""Reading details: partition values, stats, row tracking, type widening, column mapping, crc,
txns, history counts, change data feed errors, scan pruning, log compaction."""

from __future__ import annotations

import datetime as dt
import json
import math
import shutil
from decimal import Decimal

import pyarrow as pa
import pytest
from helpers import add, commit_info, mapped_field, metadata, protocol, remove, write_commit, write_data

import deltaexplore as dx
from deltaexplore.core.protocol.partitions import parse_partition_column
from deltaexplore.core.protocol.schema import DecimalType, PrimitiveType

UTC = dt.UTC


@pytest.mark.parametrize(
    ("typ", "raw", "expected"),
    [
        (PrimitiveType("string"), ["a", "", None], ["a", None, None]),
        (PrimitiveType("long"), ["-5", "", "9223372036854775807"], [-5, None, 9223372036854775807]),
        (PrimitiveType("integer"), ["7"], [7]),
        (PrimitiveType("short"), ["-3"], [-3]),
        (PrimitiveType("byte"), ["12"], [12]),
        (PrimitiveType("double"), ["1.5", "NaN", "-Infinity"], [1.5, float("nan"), float("-inf")]),
        (PrimitiveType("float"), ["2.25"], [2.25]),
        (PrimitiveType("boolean"), ["true", "False", ""], [True, False, None]),
        (PrimitiveType("date"), ["2024-02-29", ""], [dt.date(2024, 2, 29), None]),
        (DecimalType(10, 2), ["12.34", "-0.01"], [Decimal("12.34"), Decimal("-0.01")]),
        (PrimitiveType("binary"), ["\u0001\u0002"], [b"\x01\x02"]),
        (
            PrimitiveType("timestamp"),
            ["2021-01-01 10:00:00", "2021-01-01 10:00:00.123456", ""],
            [dt.datetime(2021, 1, 1, 10, tzinfo=UTC), dt.datetime(2021, 1, 1, 10, 0, 0, 123456, tzinfo=UTC), None],
        ),
        (
            PrimitiveType("timestamp"),
            ["2021-01-01T10:00:00.000000Z", "2021-01-01T12:00:00+02:00"],
            [dt.datetime(2021, 1, 1, 10, tzinfo=UTC), dt.datetime(2021, 1, 1, 10, tzinfo=UTC)],
        ),
        (PrimitiveType("timestamp_ntz"), ["2021-11-18 02:30:00.123456"], [dt.datetime(2021, 11, 18, 2, 30, 0, 123456)]),
    ],
)
def test_partition_value_parsing(typ, raw, expected):
    got = parse_partition_column(pa.array(raw, pa.string()), typ).to_pylist()
    for g, e in zip(got, expected):
        if isinstance(e, float) and math.isnan(e):
            assert math.isnan(g)
        else:
            assert g == e


def test_bad_partition_value_is_a_typed_error():
    with pytest.raises(dx.InvalidLogError, match="partition column 'n'"):
        parse_partition_column(pa.array(["x"]), PrimitiveType("integer"), column="n")


def test_partitioned_table_end_to_end(tmp_path):
    schema = {
        "type": "struct",
        "fields": [
            {"name": "v", "type": "long", "nullable": True, "metadata": {}},
            {"name": "d", "type": "date", "nullable": True, "metadata": {}},
            {"name": "ts", "type": "timestamp", "nullable": True, "metadata": {}},
        ],
    }
    name1, size1 = write_data(tmp_path, "d=2024-01-01/a.parquet", pa.table({"v": pa.array([1, 2], pa.int64())}))
    name2, size2 = write_data(tmp_path, "d=__HIVE_DEFAULT_PARTITION__/b.parquet", pa.table({"v": pa.array([3], pa.int64())}))
    write_commit(
        tmp_path,
        0,
        [
            protocol(),
            metadata(schema, ["d", "ts"]),
            add(name1, size1, 2, pv={"d": "2024-01-01", "ts": "2024-01-01T05:00:00.000000Z"}),
            add(name2, size2, 1, pv={"d": None, "ts": ""}),
        ],
    )
    rows = dx.open_table(str(tmp_path)).snapshot().to_arrow()
    assert rows.column_names == ["v", "d", "ts"]
    got = sorted(rows.to_pylist(), key=lambda r: r["v"])
    assert got[0] == {"v": 1, "d": dt.date(2024, 1, 1), "ts": dt.datetime(2024, 1, 1, 5, tzinfo=UTC)}
    assert got[2] == {"v": 3, "d": None, "ts": None}
    # partition pruning
    plan = dx.open_table(str(tmp_path)).snapshot().scan(where="d = '2024-01-01'")
    assert plan.explain() == {"total_files": 2, "partition_pruned": 1, "stats_pruned": 0, "selected_files": 1}
    assert plan.to_arrow().column("v").to_pylist() == [1, 2]


def test_stats_pruning_and_row_filter(tmp_path):
    adds = []
    for i in range(4):
        t = pa.table({"id": pa.array(range(i * 10, i * 10 + 10), pa.int64()), "value": [f"v{j}" for j in range(10)]})
        name, size = write_data(tmp_path, f"f{i}.parquet", t)
        stats = {
            "numRecords": 10,
            "minValues": {"id": i * 10, "value": "v0"},
            "maxValues": {"id": i * 10 + 9, "value": "v9"},
            "nullCount": {"id": 0, "value": 0},
        }
        adds.append(add(name, size, stats=json.dumps(stats)))
    write_commit(tmp_path, 0, [protocol(), metadata(), *adds])
    snap = dx.open_table(str(tmp_path)).snapshot()
    plan = snap.scan(where="id >= 15 AND id < 22")
    assert plan.stats_pruned == 2
    assert sorted(plan.to_arrow().column("id").to_pylist()) == list(range(15, 22))
    assert snap.scan(where=[("id", "in", [5, 35])]).files.num_rows == 2
    assert snap.scan(where="id IS NULL").files.num_rows == 0
    assert snap.to_arrow(columns=["value"], where="id = 3").to_pylist() == [{"value": "v3"}]
    stats = snap.file_stats(["id"])
    assert stats.column("min.id").to_pylist() == [0, 10, 20, 30]
    assert stats.column("null_count.id").to_pylist() == [0, 0, 0, 0]
    with pytest.raises(dx.DeltaExploreError):
        snap.scan(where="id >>> 3")


def test_file_stats_from_stats_parsed(corpus):
    snap = dx.open_table(str(corpus / "delta-kernel-rs" / "v1-single-part-struct-stats-only")).snapshot()
    stats = snap.file_stats()
    assert stats.num_rows == snap.files().num_rows > 0
    assert stats.column("num_records").null_count == 0
    assert snap.files().column("num_records").null_count == 0


def test_file_stats_typed(corpus):
    snap = dx.open_table(str(corpus / "dat" / "basic_partitioned" / "delta")).snapshot()
    stats = snap.file_stats()
    assert stats.schema.field("min.number").type == pa.int64()
    assert stats.schema.field("max.a_float").type == pa.float64()
    assert "min.letter" not in stats.column_names  # partition column: no stats
    rows = snap.to_arrow()
    assert min(stats.column("min.number").to_pylist()) == min(rows.column("number").to_pylist())
    assert max(stats.column("max.a_float").to_pylist()) == max(rows.column("a_float").to_pylist())


def test_row_tracking(tmp_path):
    t = pa.table(
        {
            "id": pa.array([1, 2, 3], pa.int64()),
            "value": ["a", "b", "c"],
            "_row_id_col": pa.array([None, 500, None], pa.int64()),
            "_cv_col": pa.array([None, None, 1], pa.int64()),
        }
    )
    name, size = write_data(tmp_path, "f.parquet", t)
    conf = {
        "delta.enableRowTracking": "true",
        "delta.rowTracking.materializedRowIdColumnName": "_row_id_col",
        "delta.rowTracking.materializedRowCommitVersionColumnName": "_cv_col",
    }
    write_commit(
        tmp_path,
        0,
        [
            protocol(1, 7, None, ["rowTracking", "domainMetadata"]),
            metadata(configuration=conf),
            add(name, size, 3, baseRowId=100, defaultRowCommitVersion=4),
        ],
    )
    snap = dx.open_table(str(tmp_path)).snapshot()
    rows = snap.to_arrow(row_tracking=True).to_pylist()
    assert [(r["id"], r["_row_id"], r["_row_commit_version"]) for r in rows] == [(1, 100, 4), (2, 500, 4), (3, 102, 1)]
    assert "_row_id_col" not in snap.to_arrow().column_names
    files = snap.files()
    assert files.column("base_row_id").to_pylist() == [100]
    assert files.column("default_row_commit_version").to_pylist() == [4]


def test_type_widening_and_missing_columns(tmp_path):
    schema = {
        "type": "struct",
        "fields": [
            {"name": "a", "type": "long", "nullable": True, "metadata": {}},
            {"name": "b", "type": "double", "nullable": True, "metadata": {}},
            {"name": "c", "type": "timestamp_ntz", "nullable": True, "metadata": {}},
            {"name": "d", "type": "decimal(10,2)", "nullable": True, "metadata": {}},
            {"name": "new_col", "type": "string", "nullable": True, "metadata": {}},
        ],
    }
    old = pa.table(
        {
            "a": pa.array([1], pa.int8()),
            "b": pa.array([1.5], pa.float32()),
            "c": pa.array([dt.date(2024, 1, 2)], pa.date32()),
            "d": pa.array([Decimal("1.5")], pa.decimal128(4, 1)),
        }
    )
    name, size = write_data(tmp_path, "old.parquet", old)
    write_commit(tmp_path, 0, [protocol(3, 7, ["typeWidening"], ["typeWidening"]), metadata(schema), add(name, size, 1)])
    rows = dx.open_table(str(tmp_path)).snapshot().to_arrow()
    assert rows.schema.field("a").type == pa.int64() and rows.schema.field("c").type == pa.timestamp("us")
    assert rows.to_pylist() == [{"a": 1, "b": 1.5, "c": dt.datetime(2024, 1, 2), "d": Decimal("1.50"), "new_col": None}]


def test_column_mapping_id_mode_by_field_id(tmp_path):
    schema = {
        "type": "struct",
        "fields": [
            mapped_field("renamed", "long", 1, "col-1"),
            mapped_field("other", "string", 2, "col-2"),
            mapped_field("absent", "string", 3, "col-3"),
        ],
    }
    file_schema = pa.schema(
        [
            pa.field("whatever_name", pa.int64(), metadata={b"PARQUET:field_id": b"1"}),
            pa.field("col-2", pa.string(), metadata={b"PARQUET:field_id": b"2"}),
        ]
    )
    name, size = write_data(tmp_path, "f.parquet", pa.table([pa.array([7], pa.int64()), pa.array(["x"])], schema=file_schema))
    conf = {"delta.columnMapping.mode": "id", "delta.columnMapping.maxColumnId": "3"}
    write_commit(tmp_path, 0, [protocol(2, 5), metadata(schema, configuration=conf), add(name, size, 1)])
    assert dx.open_table(str(tmp_path)).snapshot().to_arrow().to_pylist() == [{"renamed": 7, "other": "x", "absent": None}]


def test_crc_validation(corpus):
    snap = dx.open_table(str(corpus / "delta-kernel-rs" / "v2-checkpoints-json-with-sidecars")).snapshot()
    assert snap.crc is not None
    report = snap.validate_crc()
    assert report.num_rows >= 3
    assert all(report.column("ok").to_pylist()), report.to_pylist()


def test_crc_mismatch_is_reported(corpus, tmp_path):
    dst = tmp_path / "t"
    shutil.copytree(corpus / "delta-kernel-rs" / "v2-checkpoints-json-with-sidecars", dst)
    crc = sorted((dst / "_delta_log").glob("*.crc"))[-1]
    obj = json.loads(crc.read_text())
    obj["numFiles"] += 1
    crc.write_text(json.dumps(obj))
    report = {r["field"]: r["ok"] for r in dx.open_table(str(dst)).snapshot().validate_crc().to_pylist()}
    assert report["numFiles"] is False and report["protocol"] is True


def test_txns_and_expiry(corpus):
    snap = dx.open_table(str(corpus / "delta-golden" / "deltalog-getChanges")).snapshot()
    assert snap.transaction_version("fakeAppId") == 3
    assert snap.transaction_version("nonExistentAppId") is None
    expired = dx.open_table(str(corpus / "delta-kernel-rs" / "app-txn-with-last-updated")).snapshot()
    assert expired.config.set_transaction_retention_ms == 86_400_000
    assert all(t.last_updated is None or t.last_updated >= 0 for t in expired.txns().values())
    assert len(expired.txns()) < len(expired._all_txns)


def test_history_counts(tmp_path):
    write_commit(
        tmp_path,
        0,
        [
            commit_info("CREATE TABLE", userName="ann <script>"),
            protocol(),
            metadata(),
            add("a.parquet", 10, 5),
            add("b.parquet", 20, 7),
        ],
    )
    write_commit(
        tmp_path,
        1,
        [
            commit_info("DELETE", operationMetrics={"numRemovedFiles": "1"}),
            remove("a.parquet", size=10, stats=json.dumps({"numRecords": 5})),
        ],
    )
    write_commit(tmp_path, 2, [add("c.parquet", 30)])  # no commitInfo, no stats
    hist = dx.open_table(str(tmp_path)).history().to_pylist()
    assert [h["version"] for h in hist] == [2, 1, 0]
    v2, v1, v0 = hist
    assert (v0["operation"], v0["user"], v0["files_added"], v0["bytes_added"], v0["rows_added"]) == (
        "CREATE TABLE",
        "ann <script>",
        2,
        30,
        12,
    )
    assert v0["metadata_changed"] and v0["protocol_changed"]
    assert (v1["files_removed"], v1["bytes_removed"], v1["rows_removed"], dict(v1["metrics"])) == (
        1,
        10,
        5,
        {"numRemovedFiles": "1"},
    )
    assert v2["operation"] is None and v2["rows_added"] is None and v2["files_added"] == 1


def test_changes_need_cdf(tmp_path):
    write_commit(tmp_path, 0, [protocol(), metadata(), add("a.parquet", 10, 5)])
    with pytest.raises(dx.DeltaProtocolError, match="change data feed is not enabled"):
        dx.open_table(str(tmp_path)).changes(0)
    with pytest.raises(dx.VersionNotFoundError):
        dx.open_table(str(tmp_path)).changes(3)


def test_log_compaction_bridges_cleaned_commits(corpus, tmp_path):
    src = corpus / "delta-kernel-rs" / "compacted-log-files-table"
    dst = tmp_path / "t"
    shutil.copytree(src, dst)
    for v in range(6, 16):
        (dst / "_delta_log" / f"{v:020d}.json").unlink()
    snap = dx.open_table(str(dst)).snapshot()
    assert any(f.name.endswith(".compacted.json") for f in snap.segment.json_files)
    expected = dx.open_table(str(src)).snapshot()
    key = lambda t: sorted(map(repr, t.to_pylist()))  # noqa: E731
    assert key(snap.to_arrow()) == key(expected.to_arrow())
    with pytest.raises(dx.InvalidLogError):  # version 8 sits inside the compacted range: no way to rebuild it
        dx.open_table(str(dst)).snapshot(version=8).files()


def test_fsspec_memory_storage():
    import fsspec

    fs = fsspec.filesystem("memory")
    root = "memory://mem-table"
    lines = [commit_info(), protocol(), metadata(), add("x.parquet", 10, 1)]
    fs.pipe(f"{root}/_delta_log/{0:020d}.json", ("\n".join(json.dumps(x) for x in lines) + "\n").encode())
    snap = dx.open_table(root).snapshot()
    assert snap.version == 0 and snap.files().column("path").to_pylist() == ["x.parquet"]


def test_date_and_timestamp_are_column_names_too():
    from deltaexplore.core.protocol.predicates import Cmp, IsNull, parse_predicate

    assert parse_predicate("date = '2024-01-01'") == Cmp("date", "=", "2024-01-01")
    assert parse_predicate("Date >= DATE '2024-01-01' AND Timestamp IS NULL").children == (
        Cmp("Date", ">=", "2024-01-01"),
        IsNull("Timestamp"),
    )


def test_num_records_from_any_position_and_out_of_range(tmp_path):
    """numRecords first (numpy path) or later (regex); a count beyond int64 is no count, not a crash."""
    stats = [
        '{"numRecords":12,"minValues":{}}',
        '{"minValues":{},"numRecords":34}',
        '{"numRecords":123456789012345678901234}',
        '{"minValues":{},"numRecords":123456789012345678901234}',
        '{"numRecords":999999999999999999}',
    ]
    actions = [protocol(), metadata()] + [add(f"f{i}.parquet", stats=s) for i, s in enumerate(stats)]
    write_commit(tmp_path, 0, actions)
    files = dx.open_table(str(tmp_path)).snapshot().files().sort_by("path")
    assert files.column("num_records").to_pylist() == [12, 34, None, None, 999999999999999999]


def _records_by_python(text: str | None) -> int | None:
    """numRecords of one stats text as `num_records` defines it, by Python's `re` one text at a time."""
    import re

    if text is None:
        return None
    lead = re.match(r'\{"numRecords":([0-9]{1,19})(?![0-9])', text)
    if lead and int(lead.group(1)) < 2**63:
        return int(lead.group(1))
    found = re.search(r'"numRecords"\s*:\s*(-?[0-9]+)', text)
    return int(found.group(1)) if found and len(found.group(1).lstrip("-")) <= 18 else None


@pytest.mark.parametrize("kernel", [True, False], ids=["kernel", "regex"])
def test_num_records_equals_a_python_reading_of_each_stats_text(corpus, monkeypatch, kernel):
    """The leading-count reader over whole columns (the compiled kernel, or without it an
    anchored regex; the regex for the rest) against one text at a time: on every corpus table
    with JSON stats, and on the edges of the numbers, in string and large_string columns and
    slices of them."""
    from deltaexplore.core.scan import stats_search
    from deltaexplore.core.scan.stats import num_records

    if not kernel:
        monkeypatch.setattr(stats_search, "KERNEL", None)
    elif stats_search.KERNEL is None:
        pytest.skip("the compiled stats kernel is not built here")

    edges = [
        '{"numRecords":12,"minValues":{}}',
        '{"numRecords":0}',
        '{"numRecords":9223372036854775807}',  # 19 digits, the largest int64
        '{"numRecords":9223372036854775808}',  # one more: no count
        '{"numRecords":12345678901234567890}',  # 20 digits
        '{"numRecords":-5,"minValues":{}}',
        '{"numRecords" : 7}',
        '{"numRecords":12.5}',
        '{"numRecords":}',
        '{"numRecords":',
        '{"minValues":{},"numRecords":34}',
        "",
        None,
        '{"numRecórds":1,"numRecords":3}',
    ]
    texts = pa.array(edges, pa.string())
    want = [_records_by_python(t) for t in edges]
    assert num_records(pa.table({"stats": texts})).to_pylist() == want
    import numpy as np

    rows = np.array([1, 3, 5, 10, 13])
    assert num_records(pa.table({"stats": texts}), rows).to_pylist() == [want[i] for i in rows]
    wide = pa.array(edges, pa.large_string())
    assert num_records(pa.table({"stats": wide})).to_pylist() == want
    for start in (1, 3, 9):
        assert num_records(pa.table({"stats": texts.slice(start)})).to_pylist() == want[start:]
        assert num_records(pa.table({"stats": wide.slice(start, 4)})).to_pylist() == want[start : start + 4]
    checked = 0
    for log in sorted(corpus.rglob("_delta_log")):
        try:
            adds = dx.open_table(str(log.parent)).snapshot().add_actions()
        except dx.DeltaExploreError:
            continue
        stats = adds.column("stats").to_pylist()
        got = num_records(adds).to_pylist()
        for text, count in zip(stats, got, strict=True):
            if text is not None:  # without a text the count comes from stats_parsed
                assert count == _records_by_python(text), (str(log), text)
                checked += 1
    assert checked > 500


@pytest.mark.parametrize("typ", [pa.string(), pa.large_string()])
def test_json_file_action_rows_equal_a_filter(typ):
    """File-action fields are cut out of the one JSON parse of all lines without copying text
    when the dropped rows (other kinds' lines) are empty; anything else is a plain filter."""
    from deltaexplore.core.log.json_log import _rows_of

    values = pa.array(["a", None, "", "bcd", None, "ef", "", "ghij"], typ)
    cases = {
        "others empty": [True, False, True, True, False, True, False, True],
        "a dropped row has text": [False, True, True, True, True, True, True, True],
        "all": [True] * 8,
        "none": [False] * 8,
    }
    chunked = pa.chunked_array([values.slice(0, 3), values.slice(3)])  # sliced chunks: offsets not at 0
    for name, keep in cases.items():
        mask = pa.chunked_array([pa.array(keep[:3]), pa.array(keep[3:])])
        got = _rows_of(chunked, mask)
        got.validate(full=True)
        assert got.to_pylist() == chunked.filter(mask).to_pylist(), name
    # the zero-copy case shares the text buffer
    mask = pa.chunked_array([pa.array([True, False, True]), pa.array([True, False, True, False, True])])
    got = _rows_of(chunked, mask)
    assert got.chunk(1).buffers()[2].address == chunked.chunk(1).buffers()[2].address


def test_json_adds_keep_their_stats_among_other_actions(tmp_path):
    """Adds, removes and commit infos interleaved over commits: every add keeps its own stats."""
    write_commit(tmp_path, 0, [commit_info("WRITE"), protocol(), metadata(), add("a.parquet", 10, stats='{"numRecords":1}')])
    write_commit(
        tmp_path,
        1,
        [commit_info("WRITE"), remove("a.parquet"), add("b.parquet", 20, stats='{"numRecords":2}'), add("c.parquet", 30)],
    )
    write_commit(tmp_path, 2, [add("d.parquet", 40, stats='{"numRecords":4,"minValues":{"id":7}}'), commit_info("WRITE")])
    adds = dx.open_table(str(tmp_path)).snapshot().add_actions()
    got = dict(zip(adds.column("path").to_pylist(), adds.column("stats").to_pylist()))
    assert got == {"b.parquet": '{"numRecords":2}', "c.parquet": None, "d.parquet": '{"numRecords":4,"minValues":{"id":7}}'}


@pytest.mark.parametrize("change", ["none", "grew", "shrank", "no final newline"])
def test_local_log_read_matches_the_files(tmp_path, change):
    """Local commits are read straight into one buffer using the listed sizes; a file whose size
    changed since the listing is read again the plain way, so the lines are always the files'."""
    from deltaexplore.core.log.json_log import read_log_files
    from deltaexplore.core.log.segment import list_log

    write_commit(tmp_path, 0, [commit_info("WRITE"), protocol(), metadata(), add("a.parquet", 10)])
    write_commit(tmp_path, 1, [commit_info("WRITE"), add("b.parquet", 20)])
    table = dx.open_table(str(tmp_path))
    listing = list_log(table.storage)
    files = [listing.commits[0], listing.commits[1]]
    second = tmp_path / "_delta_log" / f"{1:020d}.json"
    text = second.read_text()
    if change == "grew":
        second.write_text(text + json.dumps(add("c.parquet", 30)) + "\n")
    elif change == "shrank":
        second.write_text(text.splitlines()[0] + "\n")
    elif change == "no final newline":
        second.write_text(text.rstrip("\n"))
        files[1] = list_log(table.storage).commits[1]
    lines = read_log_files(table.storage, files)
    expected = [ln for f in (tmp_path / "_delta_log" / f"{0:020d}.json", second) for ln in f.read_text().splitlines()]
    assert [t.rstrip("\n") for t in lines.text.to_pylist()] == expected
    assert list(lines.version) == [0] * 4 + [1] * (len(expected) - 4)


def test_partition_value_maps_however_written(tmp_path):
    """partitionValues however written (paths with escapes or quotes, other key orders, spaces,
    values holding braces or escapes, null values): every add gets its own map."""
    log = tmp_path / "_delta_log"
    log.mkdir()
    first = [json.dumps(a) for a in (commit_info("WRITE"), protocol(), metadata())]
    adds = [
        '{"add":{"path":"a.parquet","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true}}',
        '{"add":{"path":"b\\/c.parquet","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true}}',
        '{"add":{"path":"\\u00e9t\\u00e9.parquet","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true}}',
        '{"add":{"path":"q\\",\\"partitionValues\\":{}.parquet","partitionValues":{"p":"1"},"size":1,'
        '"modificationTime":1,"dataChange":true}}',
        '{"add":{"partitionValues":{"p":"2"},"path":"d.parquet","size":1,"modificationTime":1,"dataChange":true}}',
        '{"add": {"path": "e.parquet", "partitionValues": {}, "size": 1, "modificationTime": 1, "dataChange": true}}',
        '{"add":{"path":"f.parquet","partitionValues":{"p":null},"size":1,"modificationTime":1,"dataChange":true}}',
        '{"add":{"path":"g.parquet","partitionValues":{"p":"}{"},"size":1,"modificationTime":1,"dataChange":true}}',
        '{"add":{"path":"h.parquet","partitionValues":{"p":"3","q":"x"},"size":1,"modificationTime":1,"dataChange":true}}',
        '{"add":{"path":"i.parquet","partitionValues":{"p":"a\\"b\\u00e9"},"size":1,"modificationTime":1,"dataChange":true}}',
        '{"add":{"path":"j.parquet","partitionValues":{"p":"3","q":"x"},"size":1,"modificationTime":1,"dataChange":true}}',
    ]
    (log / f"{0:020d}.json").write_text("\n".join(first + adds) + "\n")
    got = dx.open_table(str(tmp_path)).snapshot().add_actions()
    maps = dict(zip(got.column("path").to_pylist(), got.column("partitionValues").to_pylist()))
    assert maps == {
        "a.parquet": [],
        "b/c.parquet": [],
        "\u00e9t\u00e9.parquet": [],
        'q","partitionValues":{}.parquet': [("p", "1")],
        "d.parquet": [("p", "2")],
        "e.parquet": [],
        "f.parquet": [("p", None)],
        "g.parquet": [("p", "}{")],
        "h.parquet": [("p", "3"), ("q", "x")],
        "i.parquet": [("p", 'a"b\u00e9')],
        "j.parquet": [("p", "3"), ("q", "x")],
    }


def test_file_action_subsets_equal_the_full_parse(corpus, tmp_path):
    """`LogLines.file_actions(kind, columns)` (history parses only sizes, stats and DVs) gives
    exactly the full parse's columns, on every corpus log; a line the subset cannot parse falls
    back like the full parse does (a bad add fails with the file and line)."""
    from corpus_paths import corpus_catalog

    from deltaexplore.core.log.json_log import read_log_files
    from deltaexplore.core.scan.action_counts import COUNT_FIELDS

    checked = 0
    for row in corpus_catalog():
        try:
            table = dx.open_table(str(corpus / row["table_root"]))
            versions = table.versions()
            files = [f for f in (table.listing().commit(v) for v in versions) if f is not None]
        except dx.DeltaExploreError:
            continue
        if not files:
            continue
        kept = [v for v in versions if table.listing().commit(v) is not None]
        full = read_log_files(table.storage, files, kept)
        subset = read_log_files(table.storage, files, kept)
        for kind in ("add", "remove", "cdc"):
            got = subset.file_actions(kind, COUNT_FIELDS)
            if kind != "cdc":
                assert got.column_names == ["path", *COUNT_FIELDS, "version", "line"]
            assert got.equals(full.file_actions(kind).select(got.column_names)), (row["table_root"], kind)
        # asked after the full parse: the cached table's columns
        assert full.file_actions("add", ["size"]).column_names == ["path", "size", "version", "line"]
        checked += 1
    assert checked > 100
    write_commit(tmp_path, 0, [commit_info(), protocol(), metadata(), add("a.parquet", 10, 5)])
    write_commit(tmp_path, 1, [{"add": {"size": 3, "stats": "{}"}}])  # no path
    with pytest.raises(dx.InvalidLogError, match=r"00000000000000000001.json:1: 'add' action without a string 'path'"):
        dx.open_table(str(tmp_path)).history()


def _file_actions_both_ways(read, monkeypatch) -> list[tuple[str, object, object]]:
    """(what, small parse, vectorized parse) of every kind, whole and `COUNT_FIELDS`, of the
    lines `read()` gives; each side a table, or the error it raised (type and message)."""
    from deltaexplore.core.history import COUNT_FIELDS
    from deltaexplore.core.log import json_log

    def parse(small: bool) -> list[object]:
        monkeypatch.setattr(json_log, "SMALL_LINES", 10**9 if small else -1)
        monkeypatch.setattr(json_log, "SMALL_BYTES", 10**12 if small else -1)
        out: list[object] = []
        for columns in (None, COUNT_FIELDS):
            lines = read()
            for kind in ("add", "remove", "cdc"):
                try:
                    out.append(lines.file_actions(kind, columns))
                except dx.DeltaExploreError as exc:
                    out.append((type(exc), str(exc)))
        return out

    small, vectorized = parse(True), parse(False)
    monkeypatch.undo()
    whats = [f"{kind} {columns}" for columns in ("all", "counts") for kind in ("add", "remove", "cdc")]
    return list(zip(whats, small, vectorized))


def _same(a: object, b: object) -> bool:
    if isinstance(a, pa.Table) and isinstance(b, pa.Table):
        return a.schema == b.schema and a.equals(b)
    return a == b


def test_small_commit_parse_equals_the_vectorized_parse(corpus, monkeypatch):
    """A few lines are parsed with `json` (`LogLines._parse_small`): every corpus commit's file
    actions, each commit read alone and whole logs, equal pyarrow.json's (values, types, order)."""
    from corpus_paths import corpus_catalog

    from deltaexplore.core.log.json_log import LogLines, read_log_files
    from deltaexplore.core.protocol.actions import FILE_ACTION_FIELDS

    commits = small = 0
    for row in corpus_catalog():
        try:
            table = dx.open_table(str(corpus / row["table_root"]))
            listing = table.listing()
            kept = [v for v in table.versions() if listing.commit(v) is not None]
        except dx.DeltaExploreError:
            continue
        groups = [[v] for v in kept] + ([kept] if len(kept) > 1 else [])
        for versions in groups:
            files = [listing.commit(v) for v in versions]

            def read(storage=table.storage, files=files, versions=versions) -> LogLines:
                return read_log_files(storage, files, versions)

            for what, got, expected in _file_actions_both_ways(read, monkeypatch):
                assert _same(got, expected), (row["table_root"], versions, what)
            commits += 1
            small += read()._parse_small(FILE_ACTION_FIELDS) is not None
    assert commits > 300 and small > 300, (commits, small)


UNUSUAL_LINES = {
    "DV written as {} or without a storage type": [
        '{"add":{"path":"a.parquet","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true,"deletionVector":{}}}',
        '{"remove":{"path":"b.parquet","deletionTimestamp":1,"dataChange":true,"deletionVector":{"offset":3,"cardinality":2}}}',
        '{"add":{"path":"c.parquet","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true,'
        '"deletionVector":{"storageType":"u","pathOrInlineDv":"ab","offset":1,"sizeInBytes":40,"cardinality":2,"maxRowIndex":9}}}',
    ],
    "escapes, unicode, nulls, blank lines, other keys": [
        '{"add":{"path":"d\\u00e9j\\u00e0\\/x y.parquet","partitionValues":{"p":null,"q":"\\"}{"},"size":1,'
        '"modificationTime":1,"dataChange":false,"tags":{"t":null},"stats":null,"unknown":{"x":[1,2]}}}',
        "",
        '  { "cdc" : { "path" : "_change_data/c.parquet" , "partitionValues" : { } , "size" : 5 , "dataChange" : false } }',
        '{"remove":{"path":"e.parquet","deletionTimestamp":5,"dataChange":true,"extendedFileMetadata":true,'
        '"partitionValues":{"p":"1"},"size":9,"stats":"{\\"numRecords\\":3}","tags":{}},"add":{"path":"x"}}',
        '{"commitInfo":{"timestamp":1,"operation":"WRITE","operationParameters":{}}}',
    ],
    "stats written as an object": [
        '{"add":{"path":"f.parquet","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true,"stats":{"numRecords":1}}}',
    ],
    "map values that are not strings": [
        '{"add":{"path":"g.parquet","partitionValues":{"p":1,"q":true},"size":1,"modificationTime":1,"dataChange":true}}',
        '{"add":{"path":"h.parquet","partitionValues":{"p":{"q":"r"}},"size":1,"modificationTime":1,"dataChange":true}}',
    ],
    "a repeated key": [
        '{"add":{"path":"i.parquet","path":"j.parquet","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true}}',
    ],
    "a whole number written as a float": [
        '{"add":{"path":"k.parquet","partitionValues":{},"size":1.0,"modificationTime":1,"dataChange":true}}',
    ],
    "a fraction in an integer field": [
        '{"add":{"path":"l.parquet","partitionValues":{},"size":1.5,"modificationTime":1,"dataChange":true}}',
    ],
    "an integer out of range": [
        '{"add":{"path":"m.parquet","partitionValues":{},"size":123456789012345678901234,"modificationTime":1,"dataChange":true}}',
        '{"remove":{"path":"n.parquet","deletionVector":{"storageType":"u","pathOrInlineDv":"ab","offset":4294967296}}}',
    ],
    "a boolean written as a number": [
        '{"add":{"path":"o.parquet","partitionValues":{},"size":1,"modificationTime":1,"dataChange":1}}',
    ],
    "no path": ['{"add":{"size":1,"partitionValues":{},"modificationTime":1,"dataChange":true}}'],
    "an action that is not an object": ['{"add":["p.parquet"]}'],
    "a malformed line of another action": [
        '{"commitInfo":{"timestamp":1,',
        '{"add":{"path":"q.parquet","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true}}',
    ],
}
#: the cases `_parse_small` takes (the others are left to the vectorized parse)
SMALL_TAKES = {
    "DV written as {} or without a storage type",
    "escapes, unicode, nulls, blank lines, other keys",
    "a malformed line of another action",
}


@pytest.mark.parametrize("case", list(UNUSUAL_LINES))
def test_small_commit_parse_of_unusual_lines(tmp_path, monkeypatch, case):
    """Lines the small parse reads as pyarrow.json does (DVs written `{}`, escapes, nulls,
    unknown keys, a second action key), and lines it leaves to the vectorized parse (stats as
    an object, non-string map values, repeated keys, floats, out-of-range integers, malformed
    lines): the file actions, or the error, equal the vectorized parse's."""
    from deltaexplore.core.log.json_log import read_log_files
    from deltaexplore.core.log.segment import list_log
    from deltaexplore.core.protocol.actions import FILE_ACTION_FIELDS

    log = tmp_path / "_delta_log"
    log.mkdir()
    (log / f"{0:020d}.json").write_text("\n".join(UNUSUAL_LINES[case]) + "\n")
    table = dx.open_table(str(tmp_path))

    def read():
        return read_log_files(table.storage, [list_log(table.storage).commits[0]], [0])

    for what, got, expected in _file_actions_both_ways(read, monkeypatch):
        assert _same(got, expected), (case, what, got, expected)
    taken = read()._parse_small(FILE_ACTION_FIELDS) is not None
    assert taken == (case in SMALL_TAKES), case


def _variant_table(root, parts: pa.StructArray, features: list[str]) -> None:
    schema = {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {"name": "v", "type": "variant", "nullable": True, "metadata": {}},
        ],
    }
    _, size = write_data(root, "part-0.parquet", pa.table({"id": pa.array(range(len(parts)), pa.int64()), "v": parts}))
    write_commit(
        root,
        0,
        [
            commit_info(),
            protocol(3, 7, features, features),
            metadata(schema),
            add("part-0.parquet", size=size, records=len(parts)),
        ],
    )


def test_variant_nulls_and_shredded_files(tmp_path):
    """Null variants read as null whatever their parts hold; a data file with shredded values
    (`typed_value`) is rebuilt (the shredded int64 0 is an INT64 variant); a non-null variant
    without value bytes is a malformed file."""
    meta, val = b"\x01\x00\x00", b"\x0c\x07"  # empty dictionary; int8 7
    plain = pa.StructArray.from_arrays(
        [pa.array([meta, None]), pa.array([val, None])], names=["metadata", "value"], mask=pa.array([False, True])
    )
    _variant_table(tmp_path / "plain", plain, ["variantType"])
    got = dx.open_table(str(tmp_path / "plain")).snapshot().to_arrow().sort_by("id").column("v").to_pylist()
    assert got == [{"metadata": meta, "value": val}, None]

    shredded = pa.StructArray.from_arrays(
        [pa.array([meta, meta]), pa.array([None, val]), pa.array([0, None], pa.int64())],
        names=["metadata", "value", "typed_value"],
    )
    _variant_table(tmp_path / "shredded", shredded, ["variantType", "variantShredding"])
    table = dx.open_table(str(tmp_path / "shredded"))
    got = table.snapshot().to_arrow().sort_by("id").column("v").to_pylist()
    assert got == [{"metadata": meta, "value": b"\x18" + bytes(8)}, {"metadata": meta, "value": val}]
    assert table.snapshot().to_arrow(variant="json").sort_by("id").column("v").to_pylist() == ["0", "7"]

    broken = pa.StructArray.from_arrays([pa.array([meta]), pa.array([None], pa.binary())], names=["metadata", "value"])
    _variant_table(tmp_path / "broken", broken, ["variantType"])
    with pytest.raises(dx.StorageError, match=r"part-0\.parquet, column v: malformed variant"):
        dx.open_table(str(tmp_path / "broken")).snapshot().to_arrow()


def test_local_log_reads_are_a_storage_capability(tmp_path, monkeypatch):
    """The JSON log is read in one buffer with OS calls where the storage says its files are on
    this machine (`Storage.local_root`), through the storage interface elsewhere: same lines."""
    from helpers import add, commit_info, metadata, protocol, write_commit

    from deltaexplore.core.log import json_log
    from deltaexplore.core.log.segment import list_log
    from deltaexplore.storage import LocalStorage
    from deltaexplore.storage.fsspec_store import FsspecStorage

    write_commit(tmp_path, 0, [commit_info(), protocol(), metadata(), add("a.parquet", 10, 1)])
    for v in range(1, 6):
        write_commit(tmp_path, v, [commit_info(), add(f"f{v}.parquet", 10 * v, v)])
    fast = []
    read_local = json_log._read_local
    monkeypatch.setattr(json_log, "_read_local", lambda root, files: fast.append(root) or read_local(root, files))
    local, generic = LocalStorage(tmp_path), FsspecStorage(f"file://{tmp_path}", {"auto_mkdir": False})
    assert local.local_root == str(tmp_path) and generic.local_root is None
    lines = {}
    for storage in (local, generic):
        files = [f for _, f in sorted(list_log(storage).commits.items())]
        got = json_log.read_log_files(storage, files)
        lines[storage.local_root] = list(got.objects("add"))
    assert fast == [str(tmp_path)]  # only the local storage took the one-buffer path
    assert lines[str(tmp_path)] == lines[None] and len(lines[None]) == 6
