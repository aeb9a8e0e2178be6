"""The tour and tutorial notebooks run top to bottom and show what they showed when saved (nbval)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))

pytest.importorskip("nbval", reason="nbval is not installed: pip install -e '.[dev]'")


def test_the_tour_and_every_tutorial_are_there():
    names = [p.stem for p in NOTEBOOKS]
    assert names[0] == "00_tour"
    for topic in ("time_travel", "diffs", "layout", "deletion_vectors", "maintenance_with_spark"):
        assert any(topic in n for n in names), topic


# jupyter_client gives a kernel free TCP ports by probing, and the kernel binds them a second
# later; with the suite's other workers (Spark, moto, the JupyterLab server) opening sockets, a
# port can be taken in between and the kernel exits at start-up ("Address already in use", seen
# once in CI as "Kernel died before replying to kernel_info"). That start-up failure, and only
# it, is retried on fresh ports; a notebook whose outputs differ fails at once.
KERNEL_START_FAILURES = ("Kernel died before replying to kernel_info", "Address already in use")
KERNEL_START_ATTEMPTS = 3


def _run_nbval(notebook: Path) -> subprocess.CompletedProcess[str]:
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "--tb=short",
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
    return subprocess.run(cmd, check=False, capture_output=True, text=True, cwd=ROOT / "notebooks", timeout=1200)


def _kernel_failed_to_start(proc: subprocess.CompletedProcess[str]) -> bool:
    return proc.returncode != 0 and any(m in proc.stdout + proc.stderr for m in KERNEL_START_FAILURES)


@pytest.mark.slow
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_and_matches_its_saved_outputs(notebook: Path):
    for attempt in range(1, KERNEL_START_ATTEMPTS + 1):
        proc = _run_nbval(notebook)
        if not _kernel_failed_to_start(proc):
            break
        print(f"{notebook.name}: kernel failed to start (attempt {attempt}), retrying on fresh ports")
    assert proc.returncode == 0, proc.stderr[-2000:] + proc.stdout[-6000:]


def test_only_a_kernel_that_failed_to_start_is_retried():
    def proc(rc: int, out: str) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess([], rc, stdout=out, stderr="")

    assert _kernel_failed_to_start(proc(1, "RuntimeError: Kernel died before replying to kernel_info"))
    assert _kernel_failed_to_start(proc(1, "zmq.error.ZMQError: Address already in use"))
    assert not _kernel_failed_to_start(proc(1, "Error: cell 3 output differs"))
    assert not _kernel_failed_to_start(proc(0, "Kernel died before replying to kernel_info"))


# -- what is committed is portable ----------------------------------------------------------
def _committed(*patterns: str) -> list[Path]:
    out = subprocess.run(["git", "ls-files", *patterns], cwd=ROOT, capture_output=True, text=True, check=False)
    if out.returncode != 0:  # not a git checkout (an sdist): look at the files on disk
        return sorted(p for pattern in patterns for p in ROOT.glob(pattern) if p.is_file())
    return [ROOT / line for line in out.stdout.splitlines() if line]


#: where absolute paths of a machine start (this checkout, home, temp dirs, the usual roots)
_MACHINE_ROOTS = sorted(
    {
        str(ROOT.parent),
        os.path.expanduser("~"),
        tempfile.gettempdir(),
        sys.prefix,
        "/home",
        "/Users",
        "/root",
        "/tmp",
        "/work",
        "/private/var",
        "C:\\Users",
    }
    - {"", "/"},
    key=len,
    reverse=True,
)
_MACHINE_PATH = re.compile(r"(?<![\w.-])(?:" + "|".join(re.escape(r) for r in _MACHINE_ROOTS) + r")(?:/|\\)[^\s\"'<>`),;]+")


def machine_paths(text: str) -> list[str]:
    """Absolute paths of a machine in `text` (file URIs included)."""
    return sorted(set(_MACHINE_PATH.findall(text)))


def test_machine_path_detection():
    assert machine_paths("read /work/main/notebooks/tables/x and file:///home/ana/t") == [
        "/home/ana/t",
        "/work/main/notebooks/tables/x",
    ]
    assert machine_paths(f"{tempfile.gettempdir()}/pytest-1/t1") != []
    assert machine_paths("tables/tour_sales, s3://lake/t, https://example.org/home/x, /dev/null") == []


SHIPPED = (
    "notebooks/*.ipynb",
    "docs/*",
    "benchmarks/results/*",
    "README.md",
    "binder/*",
    "examples/*.py",
    # defaults in code: the package, the benchmarks, the build and CI
    "deltaexplore/*.py",
    "deltaexplore/**/*.py",
    "benchmarks/*.py",
    "Makefile",
    ".ci/*",
    "pyproject.toml",
    "frontend/build.mjs",
    "frontend/src/**/*",
    "extension/src/*",
)


@pytest.mark.parametrize("path", _committed(*SHIPPED), ids=lambda p: str(p.relative_to(ROOT)))
def test_committed_notebooks_docs_and_results_hold_no_machine_paths(path: Path):
    text = path.read_text(encoding="utf-8", errors="replace")
    assert machine_paths(text) == [], f"{path.relative_to(ROOT)} holds paths of the machine that wrote it"


@pytest.mark.parametrize("path", _committed("notebooks/*.ipynb", "docs/*.ipynb"), ids=lambda p: p.name)
def test_committed_notebooks_hold_no_widget_state(path: Path):
    nbformat.validate(
        nbformat.reads(path.read_text(encoding="utf-8"), as_version=nbformat.NO_CONVERT)
    )  # e.g. no markdown outputs
    nb = json.loads(path.read_text(encoding="utf-8"))
    assert "widgets" not in nb.get("metadata", {}), f"{path.name}: saved widget state (notebook metadata)"
    for cell in nb["cells"]:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            assert "application/vnd.jupyter.widget-view+json" not in data, f"{path.name} cell {cell.get('id')}: widget view"
            assert "application/vnd.jupyter.widget-state+json" not in data, f"{path.name} cell {cell.get('id')}: widget state"
