"""Absolute-path (`p`) deletion vectors, with the Spark test table whose log is a template."""

from __future__ import annotations

import shutil
from pathlib import Path
from urllib.parse import quote

import pytest

import deltaexplore as dx

SPECIAL = "folder&with%special char"


@pytest.mark.parametrize("encoded", [True, False], ids=["url-encoded", "raw"])
def test_absolute_dv_in_folder_with_special_characters(corpus, tmp_path, encoded):
    src = corpus / "delta-spark" / "table-with-dv-special-char"
    if not src.exists():
        pytest.skip("table not in corpus")
    dst = tmp_path / "t"
    shutil.copytree(src, dst)
    folder = str((dst / SPECIAL).resolve())
    value = quote(folder) if encoded else folder
    log = next((dst / "_delta_log").glob("*.json"))
    log.write_text(log.read_text().replace("{{FOLDER_WITH_SPECIAL_CHAR}}", value))
    snap = dx.open_table(str(dst)).snapshot()
    assert snap.files().column("storage_type").to_pylist() == ["p"]
    rows = snap.to_arrow()
    assert sorted(rows.column(rows.column_names[0]).to_pylist()) == [1, 3, 5, 7, 9]


def test_missing_absolute_dv(tmp_path, corpus):
    src = corpus / "delta-spark" / "table-with-dv-special-char"
    if not src.exists():
        pytest.skip("table not in corpus")
    dst = tmp_path / "t"
    shutil.copytree(src, dst)
    log = next((dst / "_delta_log").glob("*.json"))
    log.write_text(log.read_text().replace("{{FOLDER_WITH_SPECIAL_CHAR}}", str(Path(tmp_path, "elsewhere"))))
    with pytest.raises(dx.DeletionVectorError, match="missing"):
        dx.open_table(str(dst)).snapshot().to_arrow()
