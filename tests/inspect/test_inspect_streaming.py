"""Streaming inspection (`inspect.streaming.file_pass`, `log_health(streaming=True)`): equal to
the tables of the replayed state on every corpus table and on a generated multi-part
checkpoint with commits after it, without replaying the state; and its peak memory barely
grows with the number of files where the replayed path grows by hundreds of bytes a file."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import pyarrow as pa
import pytest
from corpus_paths import CORPUS, corpus_catalog
from helpers import assert_same_table, first_primitive_column

import deltaexplore as dx
import deltaexplore.inspect as dxi
from deltaexplore.inspect.errors import InspectError
from deltaexplore.inspect.layout_density import file_positions
from deltaexplore.inspect.streaming import file_pass

ROOT = Path(__file__).resolve().parents[2]
GENERATOR = ROOT / "benchmarks" / "gen_many_files.py"
TABLES = [t for t in corpus_catalog() if t.get("is_table", True) and t["status"] in ("ok", "log-only", "special")]


def _check_equal(root: str) -> int:
    """Every streaming table of the table at `root` equals the replayed one; the streaming
    snapshot never replays its files. Returns how many tables were compared."""
    full = dx.open_table(root).snapshot()
    full.add_actions()
    column = first_primitive_column(full) if full.has_metadata else None
    snap = dx.open_table(root).snapshot()
    fp = file_pass(snap, layout_columns=[column] if column else [], keep_file_list=True)
    pairs = [
        (fp.partitions, lambda: dxi.partitions(full)),
        (fp.file_sizes, lambda: dxi.file_sizes(full)),
        (fp.overview, lambda: dxi.overview(full)),
        (fp.deletion_vectors, lambda: dxi.deletion_vectors(full)),
        (lambda: dxi.log_health(snap, streaming=True), lambda: dxi.log_health(full)),
    ]
    if column:
        pairs += [
            (lambda: fp.layout_summary([column]), lambda: dxi.layout_summary(full, [column])),
            (lambda: fp.layout(column), lambda: dxi.layout(full, column)),
            (lambda: fp.layout_density(column, bins=17), lambda: dxi.layout_density(full, column, bins=17)),
            (lambda: _positions(fp.file_positions(column)), lambda: _positions(file_positions(full, column))),
        ]
    compared = 0
    for streamed, replayed in pairs:
        try:
            expected = replayed()
        except dx.DeltaExploreError:
            with pytest.raises(dx.DeltaExploreError):
                streamed()
            continue
        assert_same_table(streamed(), expected)
        compared += 1
    assert fp.files == full.add_actions().num_rows
    assert not snap.files_loaded  # nothing was replayed whole
    return compared


def _positions(got: tuple) -> object:
    table, integral = got
    return table.append_column("integral", pa.array([integral] * table.num_rows))


@pytest.mark.corpus
@pytest.mark.parametrize("row", TABLES, ids=[t["id"] for t in TABLES])
def test_streaming_equals_replayed_on_the_corpus(row):
    if "{{" in row.get("log_fingerprint", ""):
        pytest.skip("log is a template")
    root = str(CORPUS / row["table_root"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dx.CatalogManagedWarning)
        try:
            dx.open_table(root).snapshot().add_actions()
        except dx.DeltaExploreError as exc:
            pytest.skip(f"refused by the core: {exc}")
        _check_equal(root)


def _generate(out: Path, files: int, parts: int) -> None:
    subprocess.run(
        [sys.executable, str(GENERATOR), str(out), "--files", str(files), "--parts", str(parts), "--commits", "6"],
        check=True,
        capture_output=True,
    )


def test_streaming_over_a_multipart_checkpoint_and_commits(tmp_path):
    """Batches of several parts, checkpoint files removed and added by later commits, DVs."""
    _generate(tmp_path / "t", 150_000, 3)
    assert _check_equal(str(tmp_path / "t")) == 9
    snap = dx.open_table(str(tmp_path / "t")).snapshot()
    batches = []
    fp = file_pass(snap, layout_columns=["id"], progress=lambda b, n: batches.append((b, n)))
    assert len(batches) == 4 and batches[-1] == (fp.batches, fp.files)  # 3 parts, then the commits
    assert 150_000 - 6 * 50 < fp.files < 150_000  # commits removed checkpoint files, added fewer
    assert fp.deletion_vectors().num_rows > 7000
    with pytest.raises(InspectError, match="value"):
        fp.layout_summary(["value"])  # bounds not kept by this pass


_PEAK = """
import sys
import deltaexplore as dx
import deltaexplore.inspect as dxi
from deltaexplore.inspect.streaming import file_pass
def peak():  # VmHWM: this process's own high-water mark (ru_maxrss may start at its parent's)
    return next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM"))
snap = dx.open_table(sys.argv[1]).snapshot()
base = peak()
if sys.argv[2] == "streaming":
    fp = file_pass(snap)
    out = [fp.overview(), fp.partitions(), fp.file_sizes(), fp.deletion_vectors(), dxi.log_health(snap, streaming=True)]
elif sys.argv[2] == "layout":
    fp = file_pass(snap, layout_columns=["id"])
    out = [fp.layout_summary(["id"])]
else:
    out = [dxi.overview(snap), dxi.partitions(snap), dxi.file_sizes(snap), dxi.deletion_vectors(snap), dxi.log_health(snap)]
print((peak() - base) * 1024)
"""


def _growth(tmp_path: Path, mode: str) -> float:
    """Bytes of peak memory (past opening the snapshot) per file more, from 40k to 400k files
    (checkpoint parts of 40k actions: a batch is the same size in both)."""
    peaks = []
    for files in (40_000, 400_000):
        table = tmp_path / f"t{files}"
        if not table.exists():
            _generate(table, files, files // 40_000)
        out = subprocess.run([sys.executable, "-c", _PEAK, str(table), mode], check=True, capture_output=True, text=True)
        peaks.append(int(out.stdout.split()[-1]))
    return (peaks[1] - peaks[0]) / 360_000


@pytest.mark.slow
def test_streaming_peak_memory_does_not_grow_with_the_files(tmp_path):
    """Overview, partitions, size histogram, DV and log health tables: the streaming pass keeps
    a size and a partition code per file (the exact medians) and the DV rows, nothing more;
    the replayed state keeps every action. The layout summary keeps each file's bounds (the
    overlap depth is a sweep over all of them)."""
    full = _growth(tmp_path, "full")
    streaming = _growth(tmp_path, "streaming")
    layout = _growth(tmp_path, "layout")
    print(f"peak growth per file: replayed {full:.0f} B, streaming {streaming:.0f} B, streaming layout {layout:.0f} B")
    assert full > 400  # the measurement sees the replayed state
    assert streaming < 80
    # the bounds (4 int64 a file) and the overlap sweep's working arrays (about 30 int64 a
    # file at its peak): linear, well under the replayed state (the allocator's rounding moves
    # it by ±10%, so relative to the replayed state measured in the same run)
    assert layout < min(400, 0.6 * full)
