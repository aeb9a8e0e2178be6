"""The old path of `deltaexplore.core.protocol.config`, kept for existing imports."""

from deltaexplore.core.protocol.config import (
    TableConfig,
    parse_interval_ms,
)

__all__ = ["TableConfig", "parse_interval_ms"]
