"""The engine-neutral aggregates (`file_sizes`, partition aggregates, `FileTotals`): what any
engine counts is shaped by one definition, and equals what the full files table says, on every
corpus table."""

from __future__ import annotations

import warnings

import numpy as np
import pyarrow as pa
import pytest
from corpus_paths import CORPUS, corpus_catalog
from inspect_tables import build_partitioned_table

import deltaexplore as dx
from deltaexplore import viz
from deltaexplore.inspect import file_sizes, files, overview, partitions
from deltaexplore.inspect.file_sizes import finish_file_sizes, size_aggregates, size_exponents
from deltaexplore.inspect.overview import FileTotals
from deltaexplore.inspect.schemas import FILE_SIZES_SCHEMA

TABLES = [t for t in corpus_catalog() if t.get("is_table", True) and t["status"] in ("ok", "log-only", "special")]


def _open(row: dict) -> dx.Snapshot:
    """The latest snapshot of a corpus table (skipped when the core refuses it)."""
    if "{{" in row.get("log_fingerprint", ""):
        pytest.skip("log is a template")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dx.CatalogManagedWarning)
        try:
            snap = dx.open_table(str(CORPUS / row["table_root"])).snapshot()
            snap.add_actions()
        except dx.DeltaExploreError as exc:
            pytest.skip(f"refused by the core: {exc}")
    return snap


def _bins_by_hand(f: pa.Table) -> list[dict]:
    """File-size bins computed row by row with integer arithmetic (bit_length), not numpy."""
    bins: dict[int, dict] = {}
    for size, small in zip(f.column("size").to_pylist(), f.column("is_small").to_pylist()):
        if size is None:
            continue
        e = max(size, 1).bit_length() - 1
        b = bins.setdefault(e, {"bin_start": 1 << e, "bin_end": 1 << (e + 1), "files": 0, "bytes": 0, "small_files": 0})
        b["files"] += 1
        b["bytes"] += size
        b["small_files"] += int(small)
    return [bins[e] for e in sorted(bins)]


def test_size_bins_at_powers_of_two():
    sizes = np.array([0, 1, 2, 3, 1023, 1024, 1025, (1 << 53) + 1, (1 << 62) - 1, 1 << 62], np.int64)
    assert size_exponents(sizes).tolist() == [0, 0, 1, 1, 9, 10, 10, 53, 61, 62]
    out = finish_file_sizes(size_aggregates(sizes, sizes < 1024))
    assert out.schema == FILE_SIZES_SCHEMA
    assert out.column("bin_start").to_pylist() == [1, 2, 512, 1024, 1 << 53, 1 << 61, 1 << 62]
    assert out.column("bin_end").to_pylist()[-2:] == [1 << 62, (1 << 63) - 1]
    assert out.column("files").to_pylist() == [2, 2, 1, 2, 1, 1, 1]
    # bytes exact past 2**53 (no float sum)
    assert out.column("bytes").to_pylist() == [1, 5, 1023, 2049, (1 << 53) + 1, (1 << 62) - 1, 1 << 62]
    assert out.column("small_files").to_pylist() == [2, 2, 1, 0, 0, 0, 0]


def test_bins_of_several_engines_are_summed():
    a = size_aggregates(np.array([10, 100], np.int64), np.array([True, False]))
    b = size_aggregates(np.array([12, 5000], np.int64), np.array([True, False]))
    both = finish_file_sizes(pa.concat_tables([a, b]))
    assert (
        both.to_pylist()
        == finish_file_sizes(size_aggregates(np.array([10, 100, 12, 5000], np.int64), np.array([1, 0, 1, 0], bool))).to_pylist()
    )
    assert both.column("files").to_pylist() == [2, 1, 1]


def test_file_sizes_of_a_partitioned_table(tmp_path):
    build_partitioned_table(tmp_path)
    t = dx.open_table(str(tmp_path))
    out = t.inspect.file_sizes(small_file_bytes=256)
    # sizes 100, 300, 1000, 50
    assert out.to_pylist() == [
        {"bin_start": 32, "bin_end": 64, "files": 1, "bytes": 50, "small_files": 1},
        {"bin_start": 64, "bin_end": 128, "files": 1, "bytes": 100, "small_files": 1},
        {"bin_start": 256, "bin_end": 512, "files": 1, "bytes": 300, "small_files": 0},
        {"bin_start": 512, "bin_end": 1024, "files": 1, "bytes": 1000, "small_files": 0},
    ]
    chart_rows = viz.file_size_histogram(out).to_dict()["datasets"]
    assert [r["files"] for r in next(iter(chart_rows.values()))] == [1, 1, 1, 1]


@pytest.mark.corpus
@pytest.mark.parametrize("row", TABLES, ids=[t["id"] for t in TABLES])
def test_aggregates_equal_the_files_table_on_the_corpus(row):
    """file_sizes = bins counted by hand from files(); the overview made of the partitions'
    totals = the overview replayed from the files table; the histogram of the bins = the
    histogram of the files."""
    snap = _open(row)
    f = files(snap)
    assert file_sizes(snap).to_pylist() == _bins_by_hand(f)
    parts = partitions(snap)
    assert sum(parts.column("files").to_pylist()) == f.num_rows
    assert overview(snap, totals=FileTotals.of_partitions(parts)).to_pylist() == overview(snap).to_pylist()
    from_bins = viz.file_size_histogram(file_sizes(snap)).to_dict()
    from_files = viz.file_size_histogram(f).to_dict()
    assert list(from_bins["datasets"].values()) == list(from_files["datasets"].values())
