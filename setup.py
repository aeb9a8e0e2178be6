"""Build hooks: the stats search kernel of `deltaexplore.core.scan.stats_search` and the
add/remove scanner of `deltaexplore.core.scan.action_counts` (the compiled parts), the
explorer's front end (`frontend/`, bundled into `deltaexplore/widgets/static/`) and the
JupyterLab extension (`extension/`, built into `extension/build/deltaexplore-jupyterlab`
and installed as `share/jupyter/labextensions/deltaexplore-jupyterlab`, with its server
extension enabled by `etc/jupyter/jupyter_server_config.d/deltaexplore.json`).

Everything else is configured in pyproject.toml. The C extensions are optional: without a C
compiler the package installs all the same and `stats_search` uses its numpy/polars path,
`action_counts` the Arrow parse (same results). Both front ends are built with Node.js and npm when missing or older than their
sources, by every wheel and sdist build (`build_py`, `sdist`); an sdist carries both built
bundles and no front-end sources, so installing from it needs no Node.js. A source checkout
built without Node.js fails here with a message saying so (or, with
`DELTAEXPLORE_SKIP_FRONTEND=1`, installs without the explorer and the JupyterLab extension: the
explorer then refuses to start with `FrontendNotBuiltError` instead of showing a broken widget).

The long description is README.md with its relative links made absolute (to the `Source` URL
of pyproject.toml), so its images show on a package index too.
"""

import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

HERE = Path(__file__).resolve().parent
FRONTEND = HERE / "frontend"
BUNDLE = HERE / "deltaexplore" / "widgets" / "static" / "explorer.js"
EXTENSION = HERE / "extension"
LABEXTENSION_NAME = "deltaexplore-jupyterlab"
LABEXTENSION = EXTENSION / "build" / LABEXTENSION_NAME  # `jupyter-builder build` writes it here
#: what the JupyterLab extension is built from (its build is current when newer than all of them)
EXTENSION_INPUTS = ("package.json", "package-lock.json", "tsconfig.json", "src", "schema", "style")
SKIP = os.environ.get("DELTAEXPLORE_SKIP_FRONTEND") == "1"


def _missing_node(what: str) -> SystemExit:
    return SystemExit(
        f"deltaexplore: {what} must be built and Node.js/npm are not installed. Install Node.js >= 18 "
        "(with npm), or build from a released sdist/wheel, or set DELTAEXPLORE_SKIP_FRONTEND=1 to install "
        "without the explorer widget and the JupyterLab extension."
    )


def _npm_ci(project: Path, npm: str) -> None:
    """`npm ci` unless node_modules was installed from the current lock file."""
    installed = project / "node_modules" / ".package-lock.json"
    if not installed.exists() or installed.stat().st_mtime < (project / "package-lock.json").stat().st_mtime:
        subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=project, check=True)


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
    if SKIP:
        print("DELTAEXPLORE_SKIP_FRONTEND=1: building without the explorer's front end")
        return
    npm = shutil.which("npm")
    if npm is None or not (FRONTEND / "package.json").exists():
        raise _missing_node("the explorer's front end (frontend/)")
    _npm_ci(FRONTEND, npm)
    subprocess.run([npm, "run", "--silent", "build"], cwd=FRONTEND, check=True)


def _extension_current() -> bool:
    built = LABEXTENSION / "package.json"
    if not built.exists():
        return False
    if not (EXTENSION / "package.json").exists():
        return True  # an sdist: the extension shipped built, without its sources
    inputs = [EXTENSION / name for name in EXTENSION_INPUTS]
    files = [f for p in inputs for f in ([p] if p.is_file() else p.rglob("*")) if f.is_file()]
    return all(f.stat().st_mtime <= built.stat().st_mtime for f in files)


def build_extension() -> None:
    """Build the JupyterLab extension into `extension/build/` unless it is up to date: TypeScript
    compiled by `tsc`, then bundled as a prebuilt (federated) extension by jupyter-builder, the
    builder `jupyter labextension build` runs (a build requirement in pyproject.toml)."""
    if _extension_current():
        return
    if SKIP:
        print("DELTAEXPLORE_SKIP_FRONTEND=1: building without the JupyterLab extension")
        return
    npm = shutil.which("npm")
    if npm is None or not (EXTENSION / "package.json").exists():
        raise _missing_node("the JupyterLab extension (extension/)")
    try:
        from jupyter_builder.federated_extensions import build_labextension
    except ImportError as exc:
        raise SystemExit(
            "deltaexplore: building the JupyterLab extension needs jupyter-builder (a build requirement in "
            "pyproject.toml: build with pip or `python -m build`, or `pip install jupyter-builder`)"
        ) from exc
    _npm_ci(EXTENSION, npm)
    subprocess.run([npm, "run", "--silent", "build:lib"], cwd=EXTENSION, check=True)
    build_labextension(str(EXTENSION))
    (LABEXTENSION / "package.json").touch()  # the build's mark: newer than every input


def data_files() -> list[tuple[str, list[str]]]:
    """The server extension's config and the built lab extension (with its install.json), as
    JupyterLab finds them under an environment's prefix; paths relative to this directory."""
    files = [("etc/jupyter/jupyter_server_config.d", ["jupyter-config/jupyter_server_config.d/deltaexplore.json"])]
    if not (LABEXTENSION / "package.json").exists():
        return files
    target = f"share/jupyter/labextensions/{LABEXTENSION_NAME}"
    folders: dict[str, list[str]] = {target: ["extension/install.json"]}
    for f in sorted(LABEXTENSION.rglob("*")):
        if f.is_file():
            folder = f.parent.relative_to(LABEXTENSION).as_posix()
            folders.setdefault(target if folder == "." else f"{target}/{folder}", []).append(f.relative_to(HERE).as_posix())
    return files + sorted(folders.items())


def build_front_ends(command) -> None:  # type: ignore[no-untyped-def]
    """Both front ends built, and the distribution told which lab extension files it carries
    (they exist only now: pyproject's data-files globs would have matched nothing)."""
    build_frontend()
    build_extension()
    command.distribution.data_files = data_files()


class BuildPyWithFrontEnds(build_py):
    """`build_py` that builds the explorer's front end and the JupyterLab extension first."""

    def run(self) -> None:
        build_front_ends(self)
        super().run()


class SdistWithFrontEnds(sdist):
    """`sdist` that builds both front ends first: the sdist carries them built."""

    def run(self) -> None:
        build_front_ends(self)
        super().run()


def long_description() -> str:
    """README.md with its relative links and images pointing at the repository (`Source`)."""
    source = tomllib.loads((HERE / "pyproject.toml").read_text())["project"]["urls"]["Source"].rstrip("/")

    def absolute(match: re.Match[str]) -> str:
        bang, text, url = match.groups()
        if re.match(r"^([a-z][a-z0-9+.-]*:|#|/)", url):
            return match.group(0)
        return f"{bang}[{text}]({source}/{'raw' if bang else 'blob'}/main/{url})"

    return re.sub(r"(!?)\[([^\]]*)\]\(([^)\s]+)\)", absolute, (HERE / "README.md").read_text())


setup(
    cmdclass={"build_py": BuildPyWithFrontEnds, "sdist": SdistWithFrontEnds},
    data_files=data_files(),
    long_description=long_description(),
    long_description_content_type="text/markdown",
    ext_modules=[
        Extension(
            "deltaexplore.core.scan._stats_kernel",
            ["deltaexplore/core/scan/_stats_kernel.c"],
            extra_compile_args=["-O3"],
            optional=True,
        ),
        Extension(
            "deltaexplore.core.scan._count_kernel",
            ["deltaexplore/core/scan/_count_kernel.c"],
            extra_compile_args=["-O3"],
            optional=True,
        ),
    ],
)
