"""Vega-Lite specs as plain dicts: what every chart of this package is built from.

The explorer sends these dicts to the browser as they are (its front end compiles Vega-Lite),
so drawing a chart there never imports altair (3-6 s of pure Python on a cold kernel); the
public chart functions wrap the same dict in an `alt.Chart` (`render.altair_chart`). A spec
carries its rows inline, as Altair writes them: `data: {name}` and the rows in `datasets`.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import polars as pl
import pyarrow as pa

__all__ = ["channel", "chart", "interval", "rows"]

_TYPES = {"Q": "quantitative", "N": "nominal", "O": "ordinal", "T": "temporal"}

#: dates and times as Altair writes them (ISO text, the zone offset when the column has one)
_ISO = "%Y-%m-%dT%H:%M:%S"


def channel(shorthand: str, **props: Any) -> dict[str, Any]:
    """An encoding channel (or tooltip entry) of a field: ``"version:Q"`` is the field
    `version`, quantitative; a name without a type (``"hi"``: an x2/y2 channel) has none."""
    name, colon, kind = shorthand.rpartition(":")
    if not colon or kind not in _TYPES:
        return {"field": shorthand, **props}
    return {"field": name, "type": _TYPES[kind], **props}


def interval(name: str, encodings: tuple[str, ...] = ("x",)) -> dict[str, Any]:
    """A named interval selection over `encodings` (a brush the explorer listens to)."""
    return {"name": name, "select": {"type": "interval", "encodings": list(encodings)}}


def rows(data: pa.Table | pl.DataFrame) -> list[dict[str, Any]]:
    """The rows of `data` as JSON-ready dicts: dates and times as ISO text, NaN as null."""
    df = data if isinstance(data, pl.DataFrame) else pl.from_arrow(data)
    assert isinstance(df, pl.DataFrame)
    fixes = []
    for name, dtype in df.schema.items():
        if dtype == pl.Date:
            fixes.append(pl.col(name).cast(pl.Datetime("ms")).dt.to_string(_ISO))
        elif isinstance(dtype, pl.Datetime):
            digits = {"ms": 3, "us": 6, "ns": 9}[dtype.time_unit or "us"]
            fixes.append(pl.col(name).dt.to_string(f"{_ISO}%.{digits}f" + ("%z" if dtype.time_zone else "")))
        elif dtype.is_float():
            fixes.append(pl.col(name).fill_nan(None))
    return (df.with_columns(fixes) if fixes else df).to_dicts()


def chart(
    data: pa.Table | pl.DataFrame, *, mark: dict[str, Any], encoding: dict[str, Any], title: str | None = None, **props: Any
) -> dict[str, Any]:
    """A single-view Vega-Lite spec of `data` (its rows inline, named by their content) drawn
    as `mark` with `encoding`; `props` are further top-level properties (`params`, `height`)."""
    values = rows(data)
    name = "data-" + hashlib.sha256(json.dumps(values, default=str).encode()).hexdigest()[:32]
    spec: dict[str, Any] = {"data": {"name": name}, "mark": mark, "encoding": encoding, **props}
    if title is not None:
        spec["title"] = title
    spec["datasets"] = {name: values}
    return spec
