"""The tour and tutorial notebooks run top to bottom and show what they showed when saved (nbval)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))

pytest.importorskip("nbval", reason="nbval is not installed: pip install -e '.[dev]'")


def test_the_tour_and_every_tutorial_are_there():
    names = [p.stem for p in NOTEBOOKS]
    assert names[0] == "00_tour"
    for topic in ("time_travel", "diffs", "layout", "deletion_vectors", "maintenance_with_spark"):
        assert any(topic in n for n in names), topic


@pytest.mark.slow
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_and_matches_its_saved_outputs(notebook: Path):
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:xdist",
        "-p",
        "no:randomly",
        "--nbval",
        str(notebook),
        "--nbval-sanitize-with",
        str(ROOT / "notebooks" / "nbval_sanitize.cfg"),
        "--nbval-cell-timeout",
        "600",
        "--rootdir",
        str(ROOT / "notebooks"),
    ]
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True, cwd=ROOT / "notebooks", timeout=1200)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
