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
os.environ["PYTHONPATH"] = os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])
