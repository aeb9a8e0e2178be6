"""Installed like any Jupyter extension: a wheel built from a clean clone of this repository (what
`pip install git+…` and a release do; the clone is of the committed tree: commit first), then
an sdist, installed with `[notebook]` into a fresh venv. The wheel carries the explorer's front
end, the prebuilt JupyterLab extension (with install.json) and the server extension's config;
the sdist carries both bundles and builds a wheel on a machine without Node.js, where a clean
checkout refuses with a message saying what is missing; the venv's `jupyter labextension list`
and `jupyter server extension list` show both enabled, and its JupyterLab, started without any
flag, marks Delta tables and opens the explorer (Debian chromium, every request that is not to
127.0.0.1 a failure). One clone, wheel and venv for the module; pip uses its cache.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from email import message_from_bytes
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "notebooks"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import demo_tables
from jupyter_servers import start_server
from lab_helpers import NOTEBOOK7_OWN, Watch, drawn_chart, open_tab, settled

import deltaexplore

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("packaging")]

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
LABEXT = "share/jupyter/labextensions/deltaexplore-jupyterlab"
SERVER_CONFIG = "etc/jupyter/jupyter_server_config.d/deltaexplore.json"
NODE_TOOLS = {"node", "nodejs", "npm", "npx", "corepack", "yarn", "pnpm"}


def _run(command: list[str], *, cwd: Path, env: dict[str, str] | None = None, ok: bool = True) -> str:
    out = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=1200, check=False)
    text = out.stdout + out.stderr
    if ok:
        assert out.returncode == 0, f"{' '.join(command)} failed:\n{text[-6000:]}"
    else:
        assert out.returncode != 0, f"{' '.join(command)} succeeded:\n{text[-3000:]}"
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def _pip_env() -> dict[str, str]:
    return {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1"}


def _env_without_node(tmp: Path) -> dict[str, str]:
    """This machine's PATH as a folder of links to its programs, Node.js's left out: a machine
    where Node.js was never installed (compilers, git and the rest still there)."""
    bin_dir = tmp / "bin-without-node"
    bin_dir.mkdir()
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        if not folder or not Path(folder).is_dir():
            continue
        for program in Path(folder).iterdir():
            link = bin_dir / program.name
            if program.name in NODE_TOOLS or link.exists() or link.is_symlink():
                continue
            if program.is_file() and os.access(program, os.X_OK):
                link.symlink_to(program)
    assert shutil.which("node", path=str(bin_dir)) is None and shutil.which("npm", path=str(bin_dir)) is None
    return {**_pip_env(), "PATH": str(bin_dir)}


def _clone(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    if not (ROOT / ".git").exists() or shutil.which("git") is None:
        pytest.skip("not a git checkout (or no git): nothing to clone")
    dest = tmp_path_factory.mktemp(name) / "deltaexplore"
    _run(["git", "clone", "--quiet", str(ROOT), str(dest)], cwd=dest.parent)
    return dest


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    """A clean clone: no node_modules, no built front end, no built extension."""
    dest = _clone(tmp_path_factory, "clone")
    assert not (dest / "extension" / "build").exists() and not (dest / "deltaexplore" / "widgets" / "static").exists()
    return dest


@pytest.fixture(scope="module")
def wheel(clone, tmp_path_factory) -> Path:
    """`pip wheel .` of the clean clone, as `pip install git+…` builds it."""
    out = tmp_path_factory.mktemp("wheel")
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(out), str(clone)], cwd=clone, env=_pip_env())
    (built,) = out.glob("deltaexplore-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    """A fresh venv with the wheel and its `notebook` extra (JupyterLab, Notebook 7, ...)."""
    dest = tmp_path_factory.mktemp("venv") / "venv"
    _run([sys.executable, "-m", "venv", str(dest)], cwd=dest.parent)
    _run([str(dest / "bin" / "python"), "-m", "pip", "install", "--quiet", f"{wheel}[notebook]"], cwd=dest.parent, env=_pip_env())
    return dest


def _jupyter(venv: Path, *args: str, home: Path) -> str:
    """`jupyter ARGS` of the venv with a fresh home and config dir (nothing of the user's)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "VIRTUAL_ENV"))}
    env.update(HOME=str(home), JUPYTER_CONFIG_DIR=str(home / "config"), NO_COLOR="1")
    return _run([str(venv / "bin" / "jupyter"), *args], cwd=home, env=env)


def test_a_clean_clone_without_nodejs_refuses_saying_what_is_missing(tmp_path_factory):
    clean = _clone(tmp_path_factory, "clone-no-node")
    out = tmp_path_factory.mktemp("no-node-wheel")
    env = _env_without_node(tmp_path_factory.mktemp("path"))
    text = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(out), str(clean)], cwd=clean, env=env, ok=False)
    assert "Node.js/npm are not installed" in text and "must be built" in text, text[-3000:]
    assert list(out.glob("*.whl")) == []


def test_the_wheel_of_a_clean_clone_carries_both_front_ends_and_the_jupyter_config(wheel):
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        data = f"deltaexplore-{deltaexplore.__version__}.data/data/"
        assert {"deltaexplore/widgets/static/explorer.js", "deltaexplore/widgets/static/build.json"} <= names
        assert {f"{data}{LABEXT}/package.json", f"{data}{LABEXT}/install.json", f"{data}{SERVER_CONFIG}"} <= names
        assert any(re.fullmatch(rf"{re.escape(data + LABEXT)}/static/remoteEntry\.\w+\.js", n) for n in names)
        assert f"{data}{LABEXT}/schemas/deltaexplore-jupyterlab/plugin.json" in names
        install = json.loads(z.read(f"{data}{LABEXT}/install.json"))
        assert install["packageManager"] == "python" and install["packageName"] == "deltaexplore"
        labext = json.loads(z.read(f"{data}{LABEXT}/package.json"))
        assert labext["name"] == "deltaexplore-jupyterlab" and labext["version"] == deltaexplore.__version__
        assert "_build" in labext["jupyterlab"]  # built by the builder, prebuilt (federated)
        config = json.loads(z.read(f"{data}{SERVER_CONFIG}"))
        assert config == {"ServerApp": {"jpserver_extensions": {"deltaexplore.labserver": True}}}
        metadata = message_from_bytes(z.read(f"deltaexplore-{deltaexplore.__version__}.dist-info/METADATA"))
    assert metadata["Version"] == deltaexplore.__version__
    classifiers = metadata.get_all("Classifier")
    assert "Framework :: Jupyter :: JupyterLab :: Extensions :: Prebuilt" in classifiers
    assert "Programming Language :: Python :: 3.11" in classifiers
    urls = dict(u.split(", ", 1) for u in metadata.get_all("Project-URL"))
    assert {"Homepage", "Source", "Issues", "Documentation"} <= set(urls) and all(u.startswith("https://") for u in urls.values())
    # the long description as an index renders it (twine check's rule): valid, images absolute
    assert metadata["Description-Content-Type"] == "text/markdown"
    readme_renderer = pytest.importorskip("readme_renderer.markdown", reason="readme-renderer is a dev dependency")
    html = readme_renderer.render(metadata.get_payload(), variant="GFM")
    assert html is not None and re.search(r"<h1[^>]*>deltaexplore<", html)
    images = re.findall(r'<img src="([^"]+)"', html)
    assert len(images) == 4 and all(src.startswith(f"{urls['Source']}/raw/") for src in images), images


def test_the_sdist_carries_both_bundles_and_builds_without_nodejs(clone, wheel, tmp_path_factory):
    """The sdist (of the clone the wheel was built in) holds the built bundles and no front-end
    sources; a wheel built from it where Node.js is missing holds what the first wheel holds."""
    pytest.importorskip("build", reason="build is a dev dependency")
    sdist_dir = tmp_path_factory.mktemp("sdist")
    _run([sys.executable, "-m", "build", "--sdist", "--outdir", str(sdist_dir), str(clone)], cwd=clone, env=_pip_env())
    (sdist,) = sdist_dir.glob("deltaexplore-*.tar.gz")
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    assert {
        "deltaexplore/widgets/static/explorer.js",
        "extension/install.json",
        "extension/build/deltaexplore-jupyterlab/package.json",
    } <= names
    assert not [n for n in names if n.startswith(("frontend/", "extension/src", "extension/package.json"))]
    out = tmp_path_factory.mktemp("wheel-from-sdist")
    env = _env_without_node(tmp_path_factory.mktemp("path"))
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-cache-dir", "-w", str(out), str(sdist)], cwd=out, env=env)
    (rebuilt,) = out.glob("deltaexplore-*.whl")

    def shipped(path: Path) -> set[str]:
        with zipfile.ZipFile(path) as z:
            return {n for n in z.namelist() if ".dist-info/" not in n and not n.endswith(".so")}

    assert shipped(rebuilt) == shipped(wheel)


def test_installed_with_the_notebook_extra_both_extensions_are_enabled(venv, tmp_path):
    labextensions = _jupyter(venv, "labextension", "list", home=tmp_path)
    assert re.search(
        rf"deltaexplore-jupyterlab v{re.escape(deltaexplore.__version__)} enabled OK \(python, deltaexplore\)", labextensions
    ), labextensions
    assert str(venv / "share" / "jupyter" / "labextensions") in labextensions
    server = _jupyter(venv, "server", "extension", "list", home=tmp_path)
    assert re.search(r"deltaexplore\.labserver enabled", server) and re.search(r"deltaexplore\.labserver\s+OK", server), server
    assert re.search(r"notebook enabled", server), server  # Notebook 7 came with the extra
    version = _run([str(venv / "bin" / "deltaexplore"), "--version"], cwd=tmp_path)
    assert version.strip() == f"deltaexplore {deltaexplore.__version__}"
    where = _run([str(venv / "bin" / "python"), "-c", "import deltaexplore; print(deltaexplore.__file__)"], cwd=tmp_path)
    assert where.strip().startswith(str(venv)), where  # the installed package, not this checkout


def test_jupyterlab_of_the_installed_venv_marks_tables_and_opens_the_explorer(venv, page, tmp_path_factory):
    shots = Path(os.environ.get("DELTAEXPLORE_SCREENSHOTS") or HERE / "screenshots")
    shots.mkdir(parents=True, exist_ok=True)
    server = start_server(tmp_path_factory, jupyter=venv / "bin" / "jupyter")  # no extension flag
    try:
        demo_tables.build_sales(server.root / "sales")
        (server.root / "plain_folder").mkdir()
        watch = Watch(page)
        page.goto(server.url("/lab"))
        table = page.locator(".jp-DirListing-item[data-delta-table='true']")
        table.first.wait_for(timeout=90_000)
        assert table.locator(".jp-DirListing-itemText").all_inner_texts() == ["sales"]
        table.first.click(button="right")
        page.get_by_role("menuitem", name="Open in Delta Explorer").click()
        explorer = page.locator(".dx-explorer-panel .dxe-explorer")
        explorer.wait_for(timeout=120_000)
        settled(page, explorer)
        assert explorer.locator(".dxe-title").inner_text() == "sales"
        drawn_chart(open_tab(page, explorer, "History"))
        page.screenshot(path=str(shots / "installed-wheel-jupyterlab.png"))
        # the same server's Notebook 7 tree (the extra installed it) marks the table too
        page.goto(server.url("/tree"))
        page.locator(".jp-DirListing-item[data-delta-table='true']").first.wait_for(timeout=60_000)
        assert watch.outside == [], watch.outside
        assert [e for e in watch.errors if not NOTEBOOK7_OWN.match(e)] == [], watch.errors
    finally:
        server.stop()
