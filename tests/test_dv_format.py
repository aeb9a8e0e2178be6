"""The one DV byte codec (`core.protocol.dv_format`, numpy) against CRoaring (pyroaring) on
random bitmaps both ways, its typed errors on damaged bytes, and the executor side
(`spark.executor.TaskFiles`) writing and reading DV files without deltaexplore's storage."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from deltaexplore.core.protocol import dv_format
from deltaexplore.core.protocol.dv_format import DVFormatError, decode_roaring64, encode_roaring64

pyroaring = pytest.importorskip("pyroaring", reason="pyroaring (the reference codec) is a dev dependency")


def _cases() -> list[np.ndarray]:
    rng = np.random.default_rng(20261127)
    cases = [
        np.zeros(0, np.uint64),
        np.array([0], np.uint64),
        np.arange(100_000, dtype=np.uint64),  # runs
        rng.choice(1_250_000, 500_000, replace=False).astype(np.uint64),  # bitmap containers
        np.array([1, 2**32 + 5, 2**40 + 7, 2**33], np.uint64),  # several 32-bit buckets
        rng.choice(70_000, 5_000, replace=False).astype(np.uint64),  # array containers
        np.concatenate([np.arange(10, 5000), np.arange(70_000, 200_000, 3)]).astype(np.uint64),
        np.arange(65_536 * 4, dtype=np.uint64),  # full containers
    ]
    for _ in range(200):
        n, hi = int(rng.integers(0, 20_000)), int(rng.choice([100, 70_000, 10**6, 2**34]))
        v = rng.integers(0, hi, n).astype(np.uint64)
        if rng.random() < 0.5:
            start = int(rng.integers(0, hi))
            v = np.concatenate([v, np.arange(start, start + int(rng.integers(0, 100_000)), dtype=np.uint64)])
        cases.append(v)
    return cases


def test_codec_agrees_with_croaring_both_ways():
    for i, rows in enumerate(_cases()):
        expected = np.unique(rows)
        reference = pyroaring.BitMap64(rows.tolist())
        if len(rows) and i % 3:
            reference.run_optimize()
        assert np.array_equal(decode_roaring64(reference.serialize()), expected), f"case {i}: decoding CRoaring's bytes"
        ours = encode_roaring64(rows)
        back = pyroaring.BitMap64.deserialize(ours)
        assert np.array_equal(np.array(back.to_array(), np.uint64) if len(back) else expected[:0], expected), f"case {i}"
        assert np.array_equal(decode_roaring64(ours), expected)
        if len(rows):  # as compact as CRoaring's run-optimized bitmap
            optimized = pyroaring.BitMap64(rows.tolist())
            optimized.run_optimize()
            assert len(ours) <= len(optimized.serialize()), f"case {i}: {len(ours)} > {len(optimized.serialize())} bytes"


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda b: b[:6], "shorter|truncated"),
        (lambda b: b[:8] + b"\x00\x00\x00\x00" + struct.pack("<I", 99999) + b[16:], "cookie"),
        (lambda b: b + b"\x00", "after its last bitmap"),
        (lambda b: b[:-3], "truncated"),
    ],
)
def test_damaged_bitmaps_are_typed_errors(damage, message):
    data = encode_roaring64(np.array([1, 5, 70_000, 2**33], np.uint64))
    with pytest.raises(DVFormatError, match=message):
        decode_roaring64(damage(data))


def test_dv_file_entries_checked():
    blob, offsets = dv_format.dv_file_bytes([dv_format.encode_bitmap_rows(np.array([3, 4], np.uint64))])
    size = len(blob) - 1 - 8
    data = dv_format.read_dv_entry(blob[:1], blob[offsets[0] :], size=size, offset=offsets[0])
    assert list(dv_format.decode_bitmap_rows(data)) == [3, 4]
    bad = bytearray(blob)
    bad[-1] ^= 1
    with pytest.raises(DVFormatError, match="CRC-32"):
        dv_format.read_dv_entry(bytes(bad[:1]), bytes(bad[offsets[0] :]), size=size, offset=offsets[0])
    with pytest.raises(DVFormatError, match="format version"):
        dv_format.read_dv_entry(b"\x02", blob[offsets[0] :], size=size, offset=offsets[0])


def test_executor_dv_writer_and_reader_without_the_core(tmp_path):
    """The executor task writes a DV file the core reads, and reads it back (the union with the
    file's current DV), with nothing but the module's own code."""
    import pyarrow as pa

    from deltaexplore.core.protocol.deletion_vectors import DeletionVectorDescriptor, read_deletion_vector
    from deltaexplore.spark.executor import TaskFiles, dv_rows, dv_writer
    from deltaexplore.storage import storage_for

    root = str(tmp_path)
    batch = pa.record_batch({"f": pa.array([0, 0, 0, 1], pa.int32()), "r": pa.array([5, 1, 3, 2], pa.int64())})
    [out] = list(dv_writer(root, None, {})(iter([batch])))
    rows = out.to_pylist()
    assert [r["file"] for r in rows] == [0, 1] and [r["cardinality"] for r in rows] == [3, 1]
    dv = {"storageType": "u", "pathOrInlineDv": rows[0]["path_or_inline_dv"], "offset": rows[0]["dv_offset"]}
    dv |= {"sizeInBytes": rows[0]["size_in_bytes"], "cardinality": 3}
    assert list(read_deletion_vector(storage_for(root), DeletionVectorDescriptor.from_dict(dv))) == [1, 3, 5]
    # a second DML on file 0: the union with its current DV
    more = pa.record_batch({"f": pa.array([0], pa.int32()), "r": pa.array([9], pa.int64())})
    [out2] = list(dv_writer(root, None, {0: ("part-0.parquet", dv)})(iter([more])))
    assert out2.to_pylist()[0]["cardinality"] == 4 and out2.to_pylist()[0]["newly_deleted"] == 1
    import json

    pieces = pa.record_batch({"id": [7], "path": ["p"], "dv": [json.dumps(dv)], "minus": [None]})
    got = pa.Table.from_batches(list(dv_rows(root, None)(iter([pieces]))))
    assert got.column("row").to_pylist() == [1, 3, 5] and set(got.column("id").to_pylist()) == {7}
    with pytest.raises(Exception, match="not a path inside the table"):
        TaskFiles(root).create("../outside.bin", b"x")


@pytest.mark.s3
@pytest.mark.parametrize("through", ["fsspec", "pyarrow.fs"])
def test_executor_tasks_on_s3(monkeypatch, through):
    """Executor DV files on a real S3 endpoint (moto), through fsspec or, where the executor has
    no fsspec, through `pyarrow.fs` built from the same storage options; the core reads them."""
    import sys

    import pyarrow as pa
    from s3_server import fsspec_options, s3_endpoint

    from deltaexplore.core.protocol.deletion_vectors import DeletionVectorDescriptor, read_deletion_vector
    from deltaexplore.spark.executor import TaskFiles, dv_writer, path_deleter
    from deltaexplore.storage import storage_for

    with s3_endpoint() as endpoint:
        options = fsspec_options(endpoint)
        root = f"s3://lake/t-{through}"
        with monkeypatch.context() as patched:
            if through == "pyarrow.fs":
                patched.setitem(sys.modules, "fsspec", None)  # `import fsspec` fails in the task
            batch = pa.record_batch({"f": pa.array([0, 0], pa.int32()), "r": pa.array([4, 2], pa.int64())})
            [out] = list(dv_writer(root, options, {})(iter([batch])))
            assert TaskFiles(root, options)._store()[0] == ("arrow" if through == "pyarrow.fs" else "fsspec")
        r = out.to_pylist()[0]
        dv = {"storageType": "u", "pathOrInlineDv": r["path_or_inline_dv"], "offset": r["dv_offset"]}
        dv |= {"sizeInBytes": r["size_in_bytes"], "cardinality": 2}
        descriptor = DeletionVectorDescriptor.from_dict(dv)
        storage = storage_for(root, options)
        assert list(read_deletion_vector(storage, descriptor)) == [2, 4]
        deleted = list(path_deleter(root, options)(iter([pa.record_batch({"path": [descriptor.file_path()]})])))
        assert deleted[0].to_pylist() == [{"deleted": 1}]
        assert storage.head(descriptor.file_path()) is None
