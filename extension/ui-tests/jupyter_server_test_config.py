"""Jupyter server for the galata tests: galata's test settings, this extension, demo Delta tables."""

import os
import sys
from pathlib import Path

from jupyterlab.galata import configure_jupyter_server

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]

configure_jupyter_server(c)  # noqa: F821 - `c` is the config object jupyter passes in
c.ServerApp.port = int(os.environ.get("DELTAEXPLORE_UI_PORT", "8899"))  # noqa: F821
c.ServerApp.allow_root = True  # noqa: F821
c.ServerApp.jpserver_extensions = {"deltaexplore.labserver": True}  # noqa: F821 - which folders are tables
c.LabServerApp.extra_labextensions_path = [  # noqa: F821
    str(Path(c.LabServerApp.extra_labextensions_path)),  # noqa: F821 - galata's helper extension
    str(HERE.parent / "build"),  # this extension, built by `npm run build` in extension/
]

# the tables the tests explore, built with the notebooks' deterministic builder
sys.path.insert(0, str(REPO / "notebooks"))
import demo_tables  # noqa: E402

root = Path(c.ServerApp.root_dir)  # noqa: F821
demo_tables.build_sales(root / "sales")
demo_tables.build_hostile(root / "hostile")
(root / "plain_folder").mkdir(exist_ok=True)  # a folder that is not a table
(root / "broken_table" / "_delta_log").mkdir(parents=True, exist_ok=True)  # looks like one, holds no commit
os.environ["PYTHONPATH"] = os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])
