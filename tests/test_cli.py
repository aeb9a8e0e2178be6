"""`deltaexplore inspect PATH` on the demo table that ships in the repo."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import deltaexplore
from deltaexplore.cli import main

DEMO = Path(__file__).resolve().parent.parent / "examples" / "demo_table"


def test_inspect_demo_table(capsys):
    assert main(["inspect", str(DEMO)]) == 0
    out = capsys.readouterr().out
    for expected in (
        "version      6",
        "reader v1, writer v4",
        "partitioned  region",
        "id: long",
        "files        ",
        "last commits",
        "OPTIMIZE",
    ):
        assert expected in out


def test_inspect_counts_with_separators_and_plurals(tmp_path, capsys):
    """Billions of rows read with separators (the big browser-test table); one row is "1 row"."""
    sys.path.insert(0, str(Path(__file__).resolve().parent / "browser"))
    from big_table import build_big
    from helpers import add, commit_info, metadata, protocol, write_commit

    import deltaexplore as dx

    big = build_big(tmp_path / "big")
    files = dx.open_table(big).snapshot().files()
    rows, dvs = sum(files.column("num_records").to_pylist()), files.num_rows - files.column("storage_type").null_count
    assert rows > 1_000_000_000 and files.num_rows > 1000 and dvs > 1
    assert main(["inspect", big]) == 0
    assert f"files        {files.num_rows:,} (" in (out := capsys.readouterr().out)
    assert f"), {rows:,} rows, {dvs:,} with deletion vectors" in out
    write_commit(tmp_path / "one", 0, [commit_info("WRITE"), protocol(), metadata(), add("a.parquet", 10, records=1)])
    assert main(["inspect", str(tmp_path / "one")]) == 0
    assert "files        1 (10 B), 1 row\n" in capsys.readouterr().out


def test_inspect_time_travel(capsys):
    assert main(["inspect", str(DEMO), "--version", "0"]) == 0
    assert "version      0" in capsys.readouterr().out


def test_inspect_error_is_short(tmp_path, capsys):
    assert main(["inspect", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "TableNotFoundError" in err and "Traceback" not in err


def test_console_script():
    out = subprocess.run(
        [sys.executable, "-m", "deltaexplore.cli", "inspect", str(DEMO)], capture_output=True, text=True, check=True
    )
    assert "Delta table" in out.stdout


def test_version_is_the_package_version():
    """`deltaexplore --version` prints `deltaexplore.__version__`, the one version (the wheel's
    metadata reads it too); the JupyterLab extension carries the same."""
    out = subprocess.run([sys.executable, "-m", "deltaexplore.cli", "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == f"deltaexplore {deltaexplore.__version__}"
    assert re.fullmatch(r"\d+\.\d+\.\d+", deltaexplore.__version__)
    root = DEMO.parents[1]
    assert json.loads((root / "extension" / "package.json").read_text())["version"] == deltaexplore.__version__
    pyproject = (root / "pyproject.toml").read_text()
    assert 'dynamic = ["version", "readme"]' in pyproject and 'version = { attr = "deltaexplore.__version__" }' in pyproject
