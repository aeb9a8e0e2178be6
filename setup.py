"""Build hooks: the stats search kernel of `deltaexplore.core.scan.stats_search` (the one
compiled part), and the explorer's front end (`frontend/`, bundled into `deltaexplore/widgets/static/`).

Everything else is configured in pyproject.toml. The C extension is optional: without a C
compiler the package installs all the same and `stats_search` uses its numpy/polars path (same
results). The front end is built with Node.js and npm when the bundle is missing or older than
its sources; an sdist carries the built bundle, so installing from it needs no Node.js. A source
checkout built without Node.js fails here with a message saying so (or, with
`DELTAEXPLORE_SKIP_FRONTEND=1`, installs without the explorer, which then refuses to start with
`FrontendNotBuiltError` instead of showing a broken widget).
"""

import os
import shutil
import subprocess
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
FRONTEND = HERE / "frontend"
BUNDLE = HERE / "deltaexplore" / "widgets" / "static" / "explorer.js"


def _frontend_current() -> bool:
    if not BUNDLE.exists():
        return False
    if not (FRONTEND / "build.mjs").exists() or shutil.which("node") is None:
        return True  # an sdist (no sources) or no node to check with: the bundle shipped is it
    check = subprocess.run(["node", "build.mjs", "--check"], cwd=FRONTEND, capture_output=True, check=False)
    return check.returncode == 0


def build_frontend() -> None:
    """Bundle `frontend/` into `deltaexplore/widgets/static/` unless it is up to date."""
    if _frontend_current():
        return
    if os.environ.get("DELTAEXPLORE_SKIP_FRONTEND") == "1":
        print("DELTAEXPLORE_SKIP_FRONTEND=1: building without the explorer's front end")
        return
    npm = shutil.which("npm")
    if npm is None or not (FRONTEND / "package.json").exists():
        raise SystemExit(
            "deltaexplore: the explorer's front end (frontend/) must be built and Node.js/npm are not installed. "
            "Install Node.js >= 18, or build from a released sdist/wheel, or set DELTAEXPLORE_SKIP_FRONTEND=1 "
            "to install without the explorer widget."
        )
    if not (FRONTEND / "node_modules" / ".package-lock.json").exists():
        subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=FRONTEND, check=True)
    subprocess.run([npm, "run", "--silent", "build"], cwd=FRONTEND, check=True)


class BuildPyWithFrontend(build_py):
    """`build_py` that builds the explorer's front end first (wheels and sdists carry it)."""

    def run(self) -> None:
        build_frontend()
        super().run()


setup(
    cmdclass={"build_py": BuildPyWithFrontend},
    ext_modules=[
        Extension(
            "deltaexplore.core.scan._stats_kernel",
            ["deltaexplore/core/scan/_stats_kernel.c"],
            extra_compile_args=["-O3"],
            optional=True,
        )
    ],
)
