"""`.crc` files as a source: what the writer recorded (files, bytes, deleted records, deletion
vectors, the file-size and deleted-record histograms) is shown at once by `log_health` and by
`overview(files=False)` (no replay), then checked against the replayed state, and a mismatch is
reported field by field. Tables are written with the project's writer (which writes `.crc`
files), then their `.crc` edited to disagree.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

import deltaexplore as dx
from deltaexplore.core.operations import delete, write_table
from deltaexplore.inspect import overview


def _table(root: Path) -> dx.Table:
    props = {"delta.enableDeletionVectors": "true"}
    write_table(str(root), pa.table({"id": pa.array(range(100), pa.int64())}), configuration=props)
    write_table(str(root), pa.table({"id": pa.array(range(100, 130), pa.int64())}))
    delete(str(root), "id < 12")  # a deletion vector on the first file
    return dx.open_table(str(root))


def _metrics(t: pa.Table, section: str) -> dict[str, dict]:
    return {r["metric"]: r for r in t.to_pylist() if r["section"] == section}


def test_agreeing_crc_is_shown_before_the_replay_and_checked_after(tmp_path):
    table = _table(tmp_path)
    snap = table.snapshot()
    crc = _metrics(table.inspect.log_health(), "crc")
    assert crc["crc_files"]["number"] == 2 and crc["crc_bytes"]["number"] == snap.size_in_bytes
    assert crc["crc_deleted_records"]["number"] == 12 and crc["crc_deletion_vectors"]["number"] == 1
    assert "2 files" in crc["crc_file_size_histogram"]["detail"]
    assert "1-9 deleted: 0" not in crc["crc_deleted_records_histogram"]["detail"]
    assert "10-99 deleted: 1 files" in crc["crc_deleted_records_histogram"]["detail"]
    assert crc["crc_check"]["value"] == "match" and crc["crc_check"]["status"] == "ok"
    assert crc["fileSizeHistogram"]["value"] == "match" and crc["deletedRecordCountsHistogramOpt"]["value"] == "match"

    fresh = dx.open_table(str(tmp_path)).snapshot()
    early = overview(fresh, files=False)
    assert not fresh.files_loaded  # nothing replayed: the numbers come from the .crc alone
    size = _metrics(early, "size")
    assert size["files"]["number"] == 2 and size["bytes"]["number"] == snap.size_in_bytes
    assert size["deleted_rows"]["number"] == 12 and ".crc" in size["files"]["detail"]
    assert _metrics(early, "layout")["dv_files"]["number"] == 1
    assert _metrics(early, "crc")["crc"]["value"] == "present"
    assert _metrics(overview(fresh, rows=False), "crc")["crc"]["value"] == "match"


def test_disagreeing_crc_is_reported(tmp_path):
    table = _table(tmp_path)
    path = tmp_path / "_delta_log" / f"{table.latest_version():020d}.crc"
    crc = json.loads(path.read_text())
    crc["numFiles"] = 3
    crc["numDeletionVectorsOpt"] = 2
    crc["fileSizeHistogram"]["fileCounts"][0] += 1
    crc["deletedRecordCountsHistogramOpt"]["deletedRecordCounts"] = [2] + [0] * 9
    path.write_text(json.dumps(crc))
    table = dx.open_table(str(tmp_path))
    health = _metrics(table.inspect.log_health(), "crc")
    assert health["crc_files"]["number"] == 3  # what the file says, as it says it
    assert health["crc_check"]["value"] == "mismatch" and health["crc_check"]["status"] == "error"
    for field in ("numFiles", "numDeletionVectorsOpt", "fileSizeHistogram", "deletedRecordCountsHistogramOpt"):
        assert field in health["crc_check"]["detail"]
        assert health[field]["value"] == "mismatch"
    assert health["tableSizeBytes"]["value"] == "match"
    over = _metrics(overview(table, rows=False), "crc")["crc"]
    assert over["value"] == "mismatch" and "numFiles: .crc says 3, the log gives 2" in over["detail"]


def test_unreadable_and_absent_crc(tmp_path):
    table = _table(tmp_path)
    path = tmp_path / "_delta_log" / f"{table.latest_version():020d}.crc"
    path.write_text("[1, 2")
    table = dx.open_table(str(tmp_path))
    assert _metrics(overview(table, files=False), "crc")["crc"]["value"] == "unreadable"
    assert _metrics(table.inspect.log_health(), "crc")["crc_readable"]["status"] == "error"
    path.unlink()
    table = dx.open_table(str(tmp_path))
    assert _metrics(overview(table, files=False), "crc")["crc"]["value"] == "absent"
    assert _metrics(overview(table, files=False), "size")["files"]["number"] is None


def test_another_writers_crc(corpus_table):
    """delta-spark's .crc of a shredded-variant table (a one-file histogram), read as written."""
    table = dx.open_table(corpus_table("delta-spark/variant-stats-state-reconstruction"))
    crc = _metrics(table.inspect.log_health(), "crc")
    assert crc["crc_files"]["number"] == 1 and crc["crc_check"]["value"] == "match"
    if "crc_file_size_histogram" not in crc:
        pytest.skip("this .crc has no histogram")
    assert "1 files" in crc["crc_file_size_histogram"]["detail"]
