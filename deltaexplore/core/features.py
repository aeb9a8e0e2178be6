"""The old path of `deltaexplore.core.protocol.features`, kept for existing imports."""

from deltaexplore.core.protocol.features import (
    CATALOG_FEATURES,
    FEATURES,
    MAX_READER_VERSION,
    MAX_WRITER_VERSION,
    FeatureInfo,
    check_readable,
    check_writable,
    feature_table,
    features_of,
)

__all__ = [
    "CATALOG_FEATURES",
    "FEATURES",
    "MAX_READER_VERSION",
    "MAX_WRITER_VERSION",
    "FeatureInfo",
    "check_readable",
    "check_writable",
    "feature_table",
    "features_of",
]
