"""The explorer's built front end: the ES module, its CSS and the build id, from `widgets/static/`.

`frontend/` (TypeScript, Arrow JS, Vega, AG Grid) is bundled by esbuild into
`deltaexplore/widgets/static/explorer.js` + `explorer.css` + `build.json` (`make frontend`, run
by `make setup`; `setup.py` builds it for wheels). A checkout that was never built has no
bundle: the explorer then refuses to start with a message saying how to build it, rather than
showing an empty widget.

The build id (a hash of every front-end input) versions what a saved notebook keeps: the
anywidget id (the `<style>` element anywidget fills is named after it) and the root CSS class
every rule is scoped under, so an old widget state restored from a notebook can never restyle
or drive the installed explorer.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from deltaexplore.errors import DeltaExploreError

__all__ = ["STATIC", "Bundle", "FrontendNotBuiltError", "bundle"]

STATIC = Path(__file__).parent / "static"


class FrontendNotBuiltError(DeltaExploreError):
    """The explorer's front end (`widgets/static/explorer.js`) was not built."""


@dataclass(frozen=True)
class Bundle:
    """The built front end."""

    esm: str
    css: str
    build_id: str
    root_class: str


@cache
def bundle() -> Bundle:
    """The built front end (read once).

    Raises:
        FrontendNotBuiltError: the bundle is missing (a source checkout that was never built).
    """
    try:
        meta = json.loads((STATIC / "build.json").read_text())
        esm = (STATIC / "explorer.js").read_text()
        css = (STATIC / "explorer.css").read_text()
    except (OSError, ValueError) as exc:
        raise FrontendNotBuiltError(
            "the explorer's front end is not built (deltaexplore/widgets/static/explorer.js is missing): "
            "run `make frontend` in the source checkout (needs Node.js and npm), or install a released wheel"
        ) from exc
    return Bundle(esm=esm, css=css, build_id=str(meta["id"]), root_class=str(meta["root_class"]))
