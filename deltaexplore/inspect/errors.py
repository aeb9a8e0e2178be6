"""The error of the inspection layer."""

from __future__ import annotations

from deltaexplore.errors import DeltaExploreError

__all__ = ["InspectError"]


class InspectError(DeltaExploreError, ValueError):
    """An inspection was asked something it cannot answer (bad argument, unknown column, ...)."""
