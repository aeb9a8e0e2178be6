"""Checks of the arguments of public functions: a wrong type or value is an
`InvalidArgumentError` naming the argument, never a raw `TypeError` from deep inside."""

from __future__ import annotations

import math
import numbers
from typing import Any

from deltaexplore.errors import InvalidArgumentError

__all__ = ["count", "number"]


def count(value: Any, name: str, *, allow_none: bool = True, positive: bool = False) -> int | None:
    """`value` as a whole number, 0 or more (1 or more when `positive`; None passes when
    allowed): limits, versions, sizes."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InvalidArgumentError(f"{name} must be a whole number, got {value!r}")
    if positive and value <= 0:
        raise InvalidArgumentError(f"{name} must be positive, got {value}")
    if value < 0:
        raise InvalidArgumentError(f"{name} must be 0 or more, got {value}")
    return int(value)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:20]}...({len(text)} characters)"


def number(value: Any, name: str, *, allow_none: bool = True, maximum: float | None = None) -> float | None:
    """`value` as a finite real number, at most `maximum` when given (None passes when
    allowed): sizes, hours."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidArgumentError(f"{name} must be a number, got {value!r}")
    try:
        out = float(value)
    except OverflowError:
        out = math.inf
    if not math.isfinite(out):
        raise InvalidArgumentError(f"{name} must be a finite number, got {_shown(value)}")
    if maximum is not None and out > maximum:
        raise InvalidArgumentError(f"{name} must be at most {maximum:g}, got {_shown(value)}")
    return out
