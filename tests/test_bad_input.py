"""Every malformed input gets a typed DeltaExploreError naming the file; nothing else leaks."""

from __future__ import annotations

import json
import os
import struct
import uuid
import zlib

import pyarrow as pa
import pytest
from helpers import add, commit_info, metadata, protocol, remove, simple_table, write_commit, write_data

import deltaexplore as dx
from deltaexplore.core.protocol.deletion_vectors import encode_bitmap, z85_encode

DV_PROTOCOL = protocol(3, 7, ["deletionVectors"], ["deletionVectors"])


def test_no_delta_log(tmp_path):
    (tmp_path / "part-0.parquet").write_bytes(b"x")
    with pytest.raises(dx.TableNotFoundError, match="_delta_log") as info:
        dx.open_table(str(tmp_path)).snapshot()
    assert isinstance(info.value, FileNotFoundError)


def test_missing_location(tmp_path):
    with pytest.raises(dx.TableNotFoundError):
        dx.open_table(str(tmp_path / "nope")).snapshot()


def test_empty_delta_log(tmp_path):
    (tmp_path / "_delta_log").mkdir()
    with pytest.raises(dx.TableNotFoundError, match="no commits"):
        dx.open_table(str(tmp_path)).snapshot()


def test_versions_not_contiguous(tmp_path):
    write_commit(tmp_path, 0, [protocol(), metadata()])
    write_commit(tmp_path, 2, [add("a.parquet")])
    with pytest.raises(dx.InvalidLogError, match=r"not contiguous.*1"):
        dx.open_table(str(tmp_path)).snapshot()
    # the contiguous prefix is still readable
    assert dx.open_table(str(tmp_path)).snapshot(version=0).version == 0


def test_missing_protocol(tmp_path):
    write_commit(tmp_path, 0, [metadata(), add("a.parquet")])
    with pytest.raises(dx.InvalidLogError, match="no protocol"):
        dx.open_table(str(tmp_path)).snapshot()


def test_missing_metadata_feature_table(tmp_path):
    write_commit(tmp_path, 0, [protocol(3, 7, [], []), add("a.parquet")])
    with pytest.raises(dx.InvalidLogError, match="no metaData"):
        dx.open_table(str(tmp_path)).snapshot()


def test_missing_metadata_legacy_table_lists_files_but_refuses_data(tmp_path):
    write_commit(tmp_path, 0, [commit_info(), protocol(1, 2), add("a.parquet", records=3)])
    snap = dx.open_table(str(tmp_path)).snapshot()
    assert snap.files().num_rows == 1
    assert dx.open_table(str(tmp_path)).history().num_rows == 1
    with pytest.raises(dx.InvalidLogError, match="no metaData"):
        snap.to_arrow()


def test_malformed_json_line_names_file_and_line(tmp_path):
    write_commit(tmp_path, 0, [protocol(), metadata()])
    path = tmp_path / "_delta_log" / f"{1:020d}.json"
    path.write_text(json.dumps(commit_info()) + "\n" + '{"add":{"path":"a.parquet","size":' + "\n")
    with pytest.raises(dx.InvalidLogError) as info:
        dx.open_table(str(tmp_path)).snapshot().files()
    assert f"{1:020d}.json:2" in str(info.value)


def test_garbage_line(tmp_path):
    write_commit(tmp_path, 0, [protocol(), metadata()])
    (tmp_path / "_delta_log" / f"{1:020d}.json").write_text("not json at all\n")
    with pytest.raises(dx.InvalidLogError, match=f"{1:020d}.json:1"):
        dx.open_table(str(tmp_path)).snapshot()


def test_wrong_field_type(tmp_path):
    write_commit(
        tmp_path,
        0,
        [
            protocol(),
            metadata(),
            {"add": {"path": "a", "size": "big", "partitionValues": {}, "modificationTime": 1, "dataChange": True}},
        ],
    )
    with pytest.raises(dx.InvalidLogError, match=r"add\.size"):
        dx.open_table(str(tmp_path)).snapshot().files()


def test_unsupported_reader_feature_named(tmp_path):
    write_commit(tmp_path, 0, [protocol(3, 7, ["madeUpFeature"], ["madeUpFeature"]), metadata()])
    with pytest.raises(dx.UnsupportedFeatureError) as info:
        dx.open_table(str(tmp_path)).snapshot()
    assert info.value.feature == "madeUpFeature"
    assert info.value.needed_by == "readers"


def test_unsupported_reader_version(tmp_path):
    write_commit(tmp_path, 0, [protocol(99, 7), metadata()])
    with pytest.raises(dx.UnsupportedFeatureError, match="reader version 99"):
        dx.open_table(str(tmp_path)).snapshot()


def test_writer_only_feature_never_blocks_reading(tmp_path):
    name = f"{uuid.uuid4()}.parquet"
    n, size = write_data(tmp_path, name, pa.table({"id": pa.array([1], pa.int64()), "value": ["a"]}))
    write_commit(tmp_path, 0, [protocol(1, 7, None, ["someFutureWriterFeature"]), metadata(), add(n, size, 1)])
    assert dx.open_table(str(tmp_path)).snapshot().to_arrow().num_rows == 1


def test_truncated_checkpoint(tmp_path):
    write_commit(tmp_path, 0, [protocol(), metadata(), add("a.parquet")])
    (tmp_path / "_delta_log" / f"{0:020d}.checkpoint.parquet").write_bytes(b"PAR1garbage")
    write_commit(tmp_path, 1, [add("b.parquet")])
    with pytest.raises(dx.InvalidCheckpointError, match=r"checkpoint\.parquet"):
        dx.open_table(str(tmp_path)).snapshot().files()


def test_data_file_missing_only_data_read_fails(tmp_path):
    write_commit(tmp_path, 0, [protocol(), metadata(), add("missing.parquet", records=2)])
    table = dx.open_table(str(tmp_path))
    snap = table.snapshot()
    assert snap.files().num_rows == 1
    assert table.history().num_rows == 1
    with pytest.raises(dx.StorageError, match=r"missing\.parquet"):
        snap.to_arrow()


def test_metadata_without_schema_string(tmp_path):
    md = metadata()
    del md["metaData"]["schemaString"]
    write_commit(tmp_path, 0, [commit_info(), protocol(), md, add("a.parquet")])
    table = dx.open_table(str(tmp_path))
    assert table.snapshot().files().num_rows == 1
    assert table.history().num_rows == 1
    with pytest.raises(dx.InvalidLogError, match="schemaString"):
        table.snapshot().to_arrow()


def test_relative_path_escaping_root(tmp_path):
    write_commit(tmp_path, 0, [protocol(), metadata(), add("../outside.parquet")])
    snap = dx.open_table(str(tmp_path)).snapshot()
    assert snap.files().num_rows == 1
    with pytest.raises(dx.StorageError, match="escapes the table root"):
        snap.to_arrow()


def _dv_table(tmp_path, dv_bytes: bytes, descriptor: dict) -> dx.Table:
    name, size = write_data(
        tmp_path, "data.parquet", pa.table({"id": pa.array(range(10), pa.int64()), "value": [str(i) for i in range(10)]})
    )
    write_commit(tmp_path, 0, [DV_PROTOCOL, metadata(), add(name, size, 10, dv=descriptor)])
    return dx.open_table(str(tmp_path))


def _u_descriptor(dv_uuid: uuid.UUID, size: int, cardinality: int, offset: int = 1) -> dict:
    return {
        "storageType": "u",
        "pathOrInlineDv": z85_encode(dv_uuid.bytes),
        "offset": offset,
        "sizeInBytes": size,
        "cardinality": cardinality,
    }


def _dv_file(tmp_path, bitmap: bytes, *, crc: int | None = None, version: bytes = b"\x01") -> uuid.UUID:
    dv_uuid = uuid.uuid4()
    crc = zlib.crc32(bitmap) if crc is None else crc
    (tmp_path / f"deletion_vector_{dv_uuid}.bin").write_bytes(
        version + struct.pack(">I", len(bitmap)) + bitmap + struct.pack(">I", crc)
    )
    return dv_uuid


def test_dv_file_applied(tmp_path):
    bitmap = encode_bitmap([1, 3, 5])
    dv_uuid = _dv_file(tmp_path, bitmap)
    rows = _dv_table(tmp_path, b"", _u_descriptor(dv_uuid, len(bitmap), 3)).snapshot().to_arrow()
    assert sorted(rows.column("id").to_pylist()) == [0, 2, 4, 6, 7, 8, 9]


def test_dv_checksum_mismatch(tmp_path):
    bitmap = encode_bitmap([1, 3, 5])
    dv_uuid = _dv_file(tmp_path, bitmap, crc=12345)
    table = _dv_table(tmp_path, b"", _u_descriptor(dv_uuid, len(bitmap), 3))
    assert table.snapshot().files().num_rows == 1
    with pytest.raises(dx.DeletionVectorError, match="CRC-32"):
        table.snapshot().to_arrow()


def test_dv_bad_magic(tmp_path):
    bitmap = b"\x00\x00\x00\x00" + encode_bitmap([1])[4:]
    dv_uuid = _dv_file(tmp_path, bitmap)
    with pytest.raises(dx.DeletionVectorError, match="magic"):
        _dv_table(tmp_path, b"", _u_descriptor(dv_uuid, len(bitmap), 1)).snapshot().to_arrow()


def test_dv_size_mismatch(tmp_path):
    bitmap = encode_bitmap([1])
    dv_uuid = _dv_file(tmp_path, bitmap)
    with pytest.raises(dx.DeletionVectorError, match="descriptor says"):
        _dv_table(tmp_path, b"", _u_descriptor(dv_uuid, len(bitmap) - 2, 1)).snapshot().to_arrow()


def test_dv_cardinality_mismatch(tmp_path):
    bitmap = encode_bitmap([1, 2])
    dv_uuid = _dv_file(tmp_path, bitmap)
    with pytest.raises(dx.DeletionVectorError, match="cardinality"):
        _dv_table(tmp_path, b"", _u_descriptor(dv_uuid, len(bitmap), 5)).snapshot().to_arrow()


def test_dv_file_missing(tmp_path):
    with pytest.raises(dx.DeletionVectorError, match="missing"):
        _dv_table(tmp_path, b"", _u_descriptor(uuid.uuid4(), 30, 1)).snapshot().to_arrow()


def test_dv_unknown_storage_type(tmp_path):
    table = _dv_table(tmp_path, b"", {"storageType": "x", "pathOrInlineDv": "abc", "sizeInBytes": 3, "cardinality": 1})
    assert table.snapshot().files().column("storage_type").to_pylist() == ["x"]
    with pytest.raises(dx.DeletionVectorError, match="storage type 'x'"):
        table.snapshot().to_arrow()


def test_dv_version_byte(tmp_path):
    bitmap = encode_bitmap([1])
    dv_uuid = _dv_file(tmp_path, bitmap, version=b"\x07")
    with pytest.raises(dx.DeletionVectorError, match="format version"):
        _dv_table(tmp_path, b"", _u_descriptor(dv_uuid, len(bitmap), 1)).snapshot().to_arrow()


def test_inline_dv(tmp_path):
    bitmap = encode_bitmap([0, 9])
    padded = bitmap + b"\x00" * (-len(bitmap) % 4)
    rows = (
        _dv_table(
            tmp_path,
            b"",
            {"storageType": "i", "pathOrInlineDv": z85_encode(padded), "sizeInBytes": len(bitmap), "cardinality": 2},
        )
        .snapshot()
        .to_arrow()
    )
    assert sorted(rows.column("id").to_pylist()) == list(range(1, 9))


def test_version_not_found(tmp_path):
    simple_table(tmp_path)
    table = dx.open_table(str(tmp_path))
    with pytest.raises(dx.VersionNotFoundError) as info:
        table.snapshot(version=5)
    assert isinstance(info.value, LookupError)
    with pytest.raises(dx.VersionNotFoundError):
        table.snapshot(version=-1)


def test_unknown_column(tmp_path):
    simple_table(tmp_path)
    with pytest.raises(dx.ColumnNotFoundError, match="nope"):
        dx.open_table(str(tmp_path)).snapshot().to_arrow(columns=["nope"])


def test_remove_then_readd_with_new_dv_is_two_logical_files(tmp_path):
    dv = {"storageType": "i", "pathOrInlineDv": "abc", "sizeInBytes": 3, "cardinality": 1}
    write_commit(tmp_path, 0, [protocol(3, 7, ["deletionVectors"], ["deletionVectors"]), metadata(), add("f.parquet")])
    write_commit(tmp_path, 1, [remove("f.parquet"), add("f.parquet", dv=dv)])
    files = dx.open_table(str(tmp_path)).snapshot().files()
    assert files.num_rows == 1
    assert files.column("storage_type").to_pylist() == ["i"]


def test_errors_all_share_one_root():
    for name in dx.__all__:
        obj = getattr(dx, name)
        if isinstance(obj, type) and issubclass(obj, Exception) and not issubclass(obj, Warning):
            assert issubclass(obj, dx.DeltaExploreError), name


def test_no_raw_exceptions_on_corrupt_commit_bytes(tmp_path):
    write_commit(tmp_path, 0, [protocol(), metadata()])
    (tmp_path / "_delta_log" / f"{1:020d}.json").write_bytes(os.urandom(200).replace(b"\n", b" "))
    with pytest.raises(dx.DeltaExploreError):
        dx.open_table(str(tmp_path)).snapshot().files()


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda t, s: dx.open_table(None), dx.InvalidArgumentError, "path, a URI or a Storage, got NoneType"),
        (lambda t, s: dx.open_table(42), dx.InvalidArgumentError, "got int 42"),
        (lambda t, s: t.history(limit="a"), dx.InvalidArgumentError, "limit must be a whole number, got 'a'"),
        (lambda t, s: t.history(limit=-1), dx.InvalidArgumentError, "limit must be 0 or more, got -1"),
        (lambda t, s: t.history(start_version=1.5), dx.InvalidArgumentError, "start_version must be a whole number"),
        (lambda t, s: t.changes("a"), dx.InvalidArgumentError, "start_version must be a whole number, got 'a'"),
        (lambda t, s: t.changes(0, -2), dx.InvalidArgumentError, "end_version must be 0 or more"),
        (lambda t, s: s.file_stats(["nope"]), dx.ColumnNotFoundError, "no column 'nope' with per-file stats"),
        (lambda t, s: s.file_stats([3]), dx.ColumnNotFoundError, "column names are strings"),
        (lambda t, s: t.inspect.layout(42), dx.ColumnNotFoundError, "a column name is a string, got 42"),
    ],
    ids=[
        "open-none",
        "open-int",
        "limit-str",
        "limit-negative",
        "start-float",
        "changes-str",
        "changes-end",
        "stats-unknown",
        "stats-not-str",
        "layout-int",
    ],
)
def test_bad_arguments_are_typed_errors(tmp_path, call, error, match):
    """Arguments of the wrong type or value are DeltaExploreErrors naming the argument (the
    argument errors are also ValueErrors), not TypeErrors from deep inside."""
    simple_table(tmp_path)
    t = dx.open_table(str(tmp_path))
    with pytest.raises(error, match=match) as info:
        call(t, t.snapshot())
    assert isinstance(info.value, dx.DeltaExploreError)


def test_file_stats_of_one_column_given_as_a_string(tmp_path):
    simple_table(tmp_path)
    s = dx.open_table(str(tmp_path)).snapshot()
    assert (
        s.file_stats("id").column_names
        == s.file_stats(["id"]).column_names
        == ["path", "num_records", "tight_bounds", "min.id", "max.id", "null_count.id"]
    )
