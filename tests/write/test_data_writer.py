"""Data files: names, partition directories, column mapping, statistics from footers."""

from __future__ import annotations

import datetime as dt
import json
import re
from decimal import Decimal
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from write_helpers import rows, sample

import deltaexplore as dx
from deltaexplore.core.operations import write_table
from deltaexplore.core.write.data_writer import hive_escape, stats_from_parquet_file, write_data_files
from deltaexplore.core.write.schema_evolution import schema_from_arrow
from deltaexplore.storage import LocalStorage

NAME = re.compile(r"part-[0-9a-f-]{36}\.c000\.zstd\.parquet$")


def test_file_names_and_partition_dirs(tmp_path):
    data = pa.table(
        {
            "id": pa.array([1, 2, 3, 4], pa.int64()),
            "p": ["a b", "x/y:z", None, "a b"],
            "d": pa.array([dt.date(2024, 1, 1)] * 4),
        }
    )
    storage = LocalStorage(tmp_path)
    adds = write_data_files(storage, data, schema=schema_from_arrow(data.schema), partition_columns=["p", "d"])
    paths = adds.column("path").to_pylist()
    assert len(paths) == 3 and all(NAME.search(p) for p in paths)
    dirs = sorted(unquote(p).rsplit("/", 1)[0] for p in paths)
    assert dirs == ["p=__HIVE_DEFAULT_PARTITION__/d=2024-01-01", "p=a b/d=2024-01-01", "p=x%2Fy%3Az/d=2024-01-01"]
    for p in paths:  # the log path is a URI: decoding it gives the file on disk
        assert (tmp_path / unquote(p)).exists()
    pvs = [dict(m) for m in adds.column("partitionValues").to_pylist()]
    assert {"p": None, "d": "2024-01-01"} in pvs
    assert hive_escape("a=b%c") == "a%3Db%25c"


def test_written_table_reads_back_with_special_partition_values(tmp_path):
    data = pa.table({"id": pa.array(range(6), pa.int64()), "p": ["a b", "x/y:z", None, "%41", "é", "a b"]})
    write_table(str(tmp_path / "t"), data, partition_by=["p"])
    got = dx.open_table(str(tmp_path / "t")).snapshot().to_arrow()
    assert rows(got) == rows(data)


def test_stats_from_footer(tmp_path):
    long = "x" * 40
    data = pa.table(
        {
            "i": pa.array([3, None, 7], pa.int32()),
            "s": [long, "b", None],
            "ts": pa.array(
                [dt.datetime(2024, 1, 1, 0, 0, 0, 1500), None, dt.datetime(2024, 1, 2, 0, 0, 0, 999)],
                pa.timestamp("us", tz="UTC"),
            ),
            "ntz": pa.array([dt.datetime(2024, 1, 1)] * 3, pa.timestamp("us")),
            "dec": pa.array([Decimal("1.50"), Decimal("-2.25"), None], pa.decimal128(5, 2)),
            "f": pa.array([1.5, float("nan"), -2.0]),
            "b": [True, False, None],
            "st": pa.array([{"x": 1}, {"x": 5}, None], pa.struct([("x", pa.int64())])),
            "l": pa.array([[1], [], None], pa.list_(pa.int64())),
        }
    )
    storage = LocalStorage(tmp_path)
    adds = write_data_files(storage, data, schema=schema_from_arrow(data.schema))
    stats = json.loads(adds.column("stats")[0].as_py())
    assert stats["numRecords"] == 3 and stats["tightBounds"] is True
    assert stats["minValues"]["i"] == 3 and stats["maxValues"]["i"] == 7
    assert stats["nullCount"]["i"] == 1 and stats["nullCount"]["s"] == 1
    assert stats["minValues"]["s"] == "b"
    assert stats["maxValues"]["s"] == "x" * 31 + "y"  # truncated to 32 chars, rounded up
    assert stats["minValues"]["ts"] == "2024-01-01T00:00:00.001Z"  # ms, floor
    assert stats["maxValues"]["ts"] == "2024-01-02T00:00:00.001Z"  # ms, ceiling
    assert stats["minValues"]["ntz"] == "2024-01-01T00:00:00.000"
    assert stats["minValues"]["dec"] == -2.25 and stats["maxValues"]["dec"] == 1.5
    assert stats["minValues"]["f"] == -2.0 and stats["maxValues"]["f"] == 1.5
    assert "b" not in stats["minValues"] and stats["nullCount"]["b"] == 1
    assert stats["minValues"]["st"] == {"x": 1} and stats["nullCount"]["st"] == {"x": 1}
    assert "l" not in stats["minValues"]
    # the same stats come from reading the footer of the file in place
    again, size = stats_from_parquet_file(storage, adds.column("path")[0].as_py(), schema_from_arrow(data.schema))
    assert json.loads(again) == stats and size == adds.column("size")[0].as_py()


def test_stats_respect_indexed_columns(tmp_path):
    data = sample(5)
    storage = LocalStorage(tmp_path)
    schema = schema_from_arrow(data.schema)
    adds = write_data_files(storage, data, schema=schema, configuration={"delta.dataSkippingNumIndexedCols": "1"})
    stats = json.loads(adds.column("stats")[0].as_py())
    assert list(stats["minValues"]) == ["id"]
    adds = write_data_files(storage, data, schema=schema, configuration={"delta.dataSkippingStatsColumns": "value"})
    assert list(json.loads(adds.column("stats")[0].as_py())["minValues"]) == ["value"]


def test_target_file_size_and_max_rows(tmp_path):
    storage = LocalStorage(tmp_path)
    data = pa.table({"id": pa.array(range(10_000), pa.int64()), "s": [f"row {i} " * 5 for i in range(10_000)]})
    schema = schema_from_arrow(data.schema)
    adds = write_data_files(storage, data, schema=schema, max_rows_per_file=3000)
    assert adds.num_rows == 4
    assert sum(json.loads(s)["numRecords"] for s in adds.column("stats").to_pylist()) == 10_000
    adds = write_data_files(storage, data, schema=schema, target_file_size=20_000)
    assert adds.num_rows > 2


def test_column_mapping_physical_names_and_field_ids(tmp_path):
    root = tmp_path / "t"
    data = pa.table({"id": pa.array([1, 2], pa.int64()), "my col": ["a", "b"], "p": ["x", "y"]})
    write_table(str(root), data, partition_by=["p"], configuration={"delta.columnMapping.mode": "name"})
    snap = dx.open_table(str(root)).snapshot()
    assert snap.column_mapping_mode == "name"
    fields = {f.name: f for f in snap.schema.fields}
    assert int(snap.metadata.configuration["delta.columnMapping.maxColumnId"]) == 3
    assert sorted(f.field_id for f in fields.values()) == [1, 2, 3]
    add = snap.add_actions().to_pylist()[0]
    assert dict(add["partitionValues"]).keys() == {fields["p"].physical_name}
    stats = json.loads(add["stats"])
    assert set(stats["minValues"]) == {fields["id"].physical_name, fields["my col"].physical_name}
    file_schema = pq.read_schema(root / unquote(add["path"]))
    assert file_schema.names == [fields["id"].physical_name, fields["my col"].physical_name]
    assert [int(f.metadata[b"PARQUET:field_id"]) for f in file_schema] == [fields["id"].field_id, fields["my col"].field_id]
    assert rows(snap.to_arrow()) == rows(data)


def test_column_mapping_id_mode_and_evolution(tmp_path):
    root = tmp_path / "t"
    write_table(str(root), sample(3), configuration={"delta.columnMapping.mode": "id"})
    extra = sample(2, 10).append_column("new", pa.array([1.5, 2.5]))
    write_table(str(root), extra, schema_mode="merge")
    snap = dx.open_table(str(root)).snapshot()
    new = snap.schema.field("new")
    assert new.field_id == 4 and new.physical_name.startswith("col-")
    assert snap.metadata.configuration["delta.columnMapping.maxColumnId"] == "4"
    got = snap.to_arrow().to_pylist()
    assert sorted((r["id"], r["new"]) for r in got) == [(0, None), (1, None), (2, None), (10, 1.5), (11, 2.5)]


def test_timestamps_written_as_utc_micros(tmp_path):
    root = tmp_path / "t"
    ts = pa.array([dt.datetime(2024, 5, 1, 12, 0, 0, 123456)], pa.timestamp("ns", tz="Europe/Paris"))
    write_table(str(root), pa.table({"t": ts}))
    snap = dx.open_table(str(root)).snapshot()
    path = snap.add_actions().column("path")[0].as_py()
    f = pq.read_schema(root / path).field("t")
    assert f.type == pa.timestamp("us", tz="UTC")
    assert snap.to_arrow().column("t")[0].as_py() == dt.datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=dt.UTC)


def test_cdc_files(tmp_path):
    storage = LocalStorage(tmp_path)
    data = sample(3).append_column("_change_type", pa.array(["delete"] * 3))
    cdc = write_data_files(storage, data, schema=schema_from_arrow(sample().schema), partition_columns=["part"], kind="cdc")
    assert all(p.startswith("_change_data/part=") for p in cdc.column("path").to_pylist())
    assert cdc.column("dataChange").to_pylist() == [False, False]
    with pytest.raises(dx.WriteRefusedError):
        write_data_files(storage, sample(3), schema=schema_from_arrow(sample().schema), kind="cdc")


def test_turning_column_mapping_on_keeps_existing_files_readable(tmp_path):
    from deltaexplore.core.operations import set_table_properties

    root = tmp_path / "t"
    write_table(str(root), sample(3), partition_by=["part"])
    set_table_properties(str(root), {"delta.columnMapping.mode": "name"})
    snap = dx.open_table(str(root)).snapshot()
    assert snap.column_mapping_mode == "name"
    assert [f.physical_name for f in snap.schema.fields] == ["id", "part", "value"]  # existing names kept
    assert "columnMapping" in snap.protocol.reader_feature_set
    write_table(str(root), sample(2, 10).append_column("new", pa.array([1, 2])), schema_mode="merge")
    snap = dx.open_table(str(root)).snapshot()
    assert snap.schema.field("new").physical_name.startswith("col-")
    assert rows(snap.to_arrow(), "id") == [(0,), (1,), (2,), (10,), (11,)]
    with pytest.raises(dx.WriteRefusedError, match="maintained by the writer"):
        set_table_properties(str(root), {"delta.columnMapping.maxColumnId": "99"})
