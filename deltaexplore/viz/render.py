"""Altair charts of this package's specs, showing them without internet, exporting them as SVG/PNG.

Altair is imported here, inside each function, on first use: the specs themselves
(`vegalite.py`) and the explorer never need it.

Altair 6's default renderer loads Vega from a CDN, and JupyterLab 4 ships no Vega-Lite 6
renderer. What works offline: `alt.JupyterChart` (an anywidget) with its bundled Vega once
`alt.JupyterChart.enable_offline()` has been called (needs `vl-convert-python` and `anywidget`).
Static export goes through vl-convert, which embeds Vega too.
"""

from __future__ import annotations

import importlib
import threading
from typing import TYPE_CHECKING, Any

from deltaexplore.errors import MissingDependencyError

if TYPE_CHECKING:
    import altair as alt

__all__ = ["altair_chart", "enable_in_kernel", "enable_offline_renderer", "show", "to_png", "to_svg", "vega_lite_version"]

#: whether `altair_chart` has made its one `enable_in_kernel` call of this process
_KERNEL_CHECKED = threading.Event()


def altair_chart(spec: dict[str, Any]) -> alt.Chart:
    """A chart spec of this package (`vegalite.chart`) as an `alt.Chart` (its rows inline:
    Altair names and consolidates datasets itself, so charts compose with `+` and `|`). The
    first one of a kernel switches Altair to its offline renderer (`enable_in_kernel`)."""
    import altair as alt

    if not _KERNEL_CHECKED.is_set():
        _KERNEL_CHECKED.set()
        enable_in_kernel()
    inline = {k: v for k, v in spec.items() if k != "datasets"}
    if "datasets" in spec and "name" in spec.get("data", {}):
        inline["data"] = {"values": spec["datasets"][spec["data"]["name"]]}
    return alt.Chart.from_dict(inline, validate=False)


def vega_lite_version() -> str:
    """The Vega-Lite version of this Altair's specs in vl-convert's notation (e.g. ``6.4``)."""
    import altair as alt

    return alt.SCHEMA_VERSION.lstrip("v").rsplit(".", 1)[0]


def _optional(module: str, purpose: str) -> Any:
    """Import an optional dependency of the viz extra, or say which extra installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        package = module.replace("_", "-") + ("-python" if module == "vl_convert" else "")
        raise MissingDependencyError(f"{purpose} needs {package}: pip install 'deltaexplore[viz]'", extra="viz") from exc


def _vl_convert() -> Any:
    return _optional("vl_convert", "static chart export")


def _require_offline() -> None:
    """Offline charts need anywidget (the widget) and vl-convert-python (the bundled Vega)."""
    _optional("anywidget", "showing charts offline")
    _vl_convert()


def _enable_offline_widget() -> None:
    """Give `alt.JupyterChart` its bundled-Vega module (no CDN import). Idempotent: Altair
    keeps the flag on the class; the check is made at every use, never cached here, because
    only the class attribute decides what the next widget's front end imports."""
    import altair as alt

    _require_offline()
    if not getattr(alt.JupyterChart, "_is_offline", False):
        alt.JupyterChart.enable_offline()


def show(chart: alt.TopLevelMixin) -> alt.JupyterChart:
    """`chart` as an `alt.JupyterChart` that renders in JupyterLab without internet access.

    Makes sure `alt.JupyterChart` carries the bundled Vega (no CDN) before building the
    widget, whatever was enabled before. Returns the widget: leave it
    as the last expression of a cell (or `display()` it) to show it.

    Raises:
        MissingDependencyError: anywidget or vl-convert-python is not installed.
    """
    import altair as alt

    _enable_offline_widget()
    return alt.JupyterChart(chart)  # type: ignore[arg-type]


def enable_offline_renderer() -> None:
    """Display every Altair chart of this kernel offline: Altair's `jupyter` renderer (an
    `alt.JupyterChart` widget) with its bundled Vega instead of the default renderer's CDN
    scripts. Undo with `alt.renderers.enable("default")`.

    Raises:
        MissingDependencyError: anywidget or vl-convert-python is not installed.
    """
    import altair as alt

    _enable_offline_widget()
    alt.renderers.enable("jupyter", offline=True)


def enable_in_kernel() -> bool:
    """`enable_offline_renderer()` when running in a Jupyter kernel whose Altair renderer is
    still the default one (a renderer the user chose is kept) and the viz extra is installed.
    Called when `deltaexplore.viz` is imported with altair already loaded, else by the first
    `altair_chart`. True when it switched."""
    import altair as alt

    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    if shell is None or not hasattr(shell, "kernel") or alt.renderers.active != "default":
        return False
    try:
        enable_offline_renderer()
    except MissingDependencyError:
        return False
    return True


def to_svg(chart: alt.TopLevelMixin) -> str:
    """The chart rendered as an SVG document (no browser, no internet)."""
    vlc = _vl_convert()
    return vlc.vegalite_to_svg(chart.to_dict(), vl_version=vega_lite_version())


def to_png(chart: alt.TopLevelMixin, *, scale: float = 2.0) -> bytes:
    """The chart rendered as PNG bytes (`scale` 2 for sharp images in docs)."""
    vlc = _vl_convert()
    return vlc.vegalite_to_png(chart.to_dict(), vl_version=vega_lite_version(), scale=scale)
