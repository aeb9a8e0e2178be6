"""The explorer on tables this reader cannot fully read, headless: a damaged table (a checkpoint
without its metaData) and a version needing a reader feature it lacks still show their history,
files and log, marked in the overview; History lists the protocol of every version that changed
it; the schema grid shows collations."""

from __future__ import annotations

import json

import test_collations
import test_damaged_checkpoints
import test_protocol_versions

import deltaexplore as dx
from deltaexplore.widgets import explore
from deltaexplore.widgets.arrow_ipc import from_ipc


def _damaged(root) -> str:
    ck = test_damaged_checkpoints._table_with_checkpoint(root)
    test_damaged_checkpoints._drop_row(ck, "metaData")
    return str(root)


def test_a_damaged_table_is_marked_and_still_shown(tmp_path):
    w = explore(_damaged(tmp_path / "t"))
    data = w.overview_data
    assert data["problem"]["kind"] == "damaged" and "has no metaData action" in data["problem"]["message"]
    assert "schema_error" in data  # no metadata: no schema to show
    assert w.error == ""
    w.tab = "history"
    assert from_ipc(w.history_data["commits"]).num_rows == 4
    w.tab = "files"
    assert w.files_data["version"] == 3 and w.error == ""
    w.tab = "health"
    assert w.health_data and w.error == ""


def test_an_unsupported_version_is_marked_and_the_protocol_timeline_shown(tmp_path):
    root = test_protocol_versions.build(tmp_path / "t")
    w = explore(str(root), version=1)
    assert w.version == 1
    problem = w.overview_data["problem"]
    assert problem["kind"] == "unsupported" and "adaptiveMetadata" in problem["message"]
    assert [r["column"] for r in from_ipc(w.overview_data["schema"]).to_pylist()] == ["id"]
    features = {r["feature"] for r in from_ipc(w.overview_data["features"]).to_pylist()}
    assert "adaptiveMetadata" in features
    w.tab = "history"
    timeline = from_ipc(w.history_data["protocol"]).to_pylist()
    assert [(r["version"], r["change"], r["readable"]) for r in timeline] == [
        (0, "created", True),
        (1, "upgraded", False),
        (2, "downgraded", True),
    ]
    assert json.loads(timeline[1]["blockers"]) == ["adaptiveMetadata"]  # list columns travel as JSON text
    w.version = 3  # the slider moves on to a version it reads: no problem there
    assert "problem" not in w.overview_data and w.overview_data["version"] == 3


def test_the_schema_grid_shows_collations(tmp_path):
    root = tmp_path / "c"
    root.mkdir()
    test_collations.build(root)
    w = explore(dx.open_table(str(root)))
    schema = {r["column"]: r["collation"] for r in from_ipc(w.overview_data["schema"]).to_pylist()}
    assert schema["name"] == "spark.UTF8_LCASE" and schema["uni"] == "icu.UNICODE" and schema["plain"] is None
