"""`deltaexplore inspect PATH` on the demo table that ships in the repo."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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
