"""Table features as data: one `FeatureInfo` per feature, and the checks built on them.

Legacy protocols (reader < 3, writer < 7) imply features by version; table-feature protocols
list them. A reader refuses a table that needs a reader feature (or version) it lacks; writer-only
features never block reading.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from deltaexplore.errors import UnsupportedFeatureError

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
    "handling",
]

MAX_READER_VERSION = 3
MAX_WRITER_VERSION = 7
#: the features that make a table catalog-managed (commits ratified by its catalog)
CATALOG_FEATURES = ("catalogManaged", "catalogOwned-preview")


@dataclass(frozen=True, slots=True)
class FeatureInfo:
    """What the protocol says about one feature, and what this library does with it.

    `reader_writer`: listed in readerFeatures too (else writers only). `min_reader`/`min_writer`:
    the legacy protocol versions that imply it (None: only via table features). `read`/`write`:
    whether this library supports reading/writing tables that have it. `property`: the table
    property that activates it, when it has one.
    """

    name: str
    reader_writer: bool
    min_reader: int | None
    min_writer: int | None
    read: bool
    write: bool
    property: str | None = None
    description: str = ""
    canonical: str | None = None  # for -preview spellings: the stable name
    #: where a feature still in flight is specified (delta-io/delta's protocol_rfcs/), None once
    #: it is in PROTOCOL.md
    rfc: str | None = None
    #: what this library does with a table that has it, beyond "read"/"write" (why it refuses)
    note: str = ""


def handling(info: FeatureInfo | None) -> str:
    """What this library does with a table that has the feature, in a sentence."""
    if info is None:
        return "refused: an unknown feature (a reader feature blocks reading, a writer feature writing)"
    what = "read and written" if info.read and info.write else "read; writes refused" if info.read else "refused: not read"
    return f"{what} ({info.note})" if info.note else what


def _f(*args: object, **kw: object) -> FeatureInfo:
    return FeatureInfo(*args, **kw)  # type: ignore[arg-type]


_RFC = "delta-io/delta protocol_rfcs/"

_FEATURE_LIST = [
    _f("appendOnly", False, None, 2, True, True, "delta.appendOnly", "table only grows"),
    _f("invariants", False, None, 2, True, True, None, "column invariants (delta.invariants)"),
    _f("checkConstraints", False, None, 3, True, True, None, "CHECK constraints (delta.constraints.*)"),
    _f("changeDataFeed", False, None, 4, True, True, "delta.enableChangeDataFeed", "change data files"),
    _f("generatedColumns", False, None, 4, True, True, None, "generated columns"),
    _f("columnMapping", True, 2, 5, True, True, "delta.columnMapping.mode", "physical column names / ids"),
    _f("identityColumns", False, None, 6, True, True, None, "identity columns"),
    _f("deletionVectors", True, None, None, True, True, "delta.enableDeletionVectors", "soft-deleted rows"),
    _f("rowTracking", False, None, None, True, True, "delta.enableRowTracking", "row ids and commit versions"),
    _f("timestampNtz", True, None, None, True, True, None, "timestamp without time zone"),
    _f("domainMetadata", False, None, None, True, True, None, "named metadata domains"),
    _f("v2Checkpoint", True, None, None, True, True, "delta.checkpointPolicy", "V2 checkpoints with sidecars"),
    _f("icebergCompatV1", False, None, None, True, False, "delta.enableIcebergCompatV1", "Iceberg compatibility V1"),
    _f("icebergCompatV2", False, None, None, True, False, "delta.enableIcebergCompatV2", "Iceberg compatibility V2"),
    _f(
        "icebergWriterCompatV1",
        False,
        None,
        None,
        True,
        False,
        "delta.enableIcebergWriterCompatV1",
        "Iceberg writer compatibility",
        rfc=_RFC + "iceberg-writer-compat-v1.md (proposed 2025-03-18)",
    ),
    _f("inCommitTimestamp", False, None, None, True, True, "delta.enableInCommitTimestamps", "commit time in the log"),
    _f("vacuumProtocolCheck", True, None, None, True, True, None, "VACUUM checks the whole protocol"),
    _f("typeWidening", True, None, None, True, True, "delta.enableTypeWidening", "widened column types"),
    _f("typeWidening-preview", True, None, None, True, True, "delta.enableTypeWidening", "", "typeWidening"),
    _f("variantType", True, None, None, True, True, None, "variant columns"),
    _f("variantType-preview", True, None, None, True, True, None, "", "variantType"),
    _f(
        "variantShredding",
        True,
        None,
        None,
        True,
        True,
        "delta.enableVariantShredding",
        "shredded variant columns (rebuilt when read; written unshredded, as the spec allows)",
    ),
    _f("variantShredding-preview", True, None, None, True, True, "delta.enableVariantShredding", "", "variantShredding"),
    _f("clustering", False, None, None, True, False, None, "liquid clustering (delta.clustering domain)"),
    _f(
        "collations",
        False,
        None,
        None,
        True,
        False,
        None,
        "collated strings",
        rfc=_RFC + "collated-string-type.md (proposed 2024-04-30)",
        note="collations shown in the schema; a collated column's statistics are not used for skipping",
    ),
    _f("collations-preview", False, None, None, True, False, None, "", "collations", rfc=_RFC + "collated-string-type.md"),
    _f("catalogManaged", True, None, None, True, True, None, "commits go through a catalog"),
    _f("catalogOwned-preview", True, None, None, True, False, None, "", "catalogManaged"),
    _f("allowColumnDefaults", False, None, None, True, False, None, "column DEFAULT values"),
    _f(
        "materializePartitionColumns",
        False,
        None,
        None,
        True,
        False,
        None,
        "partition columns also in files",
        rfc=_RFC + "materialize-partition-columns.md (proposed 2025-11-20)",
        note="partition values are read from the log, as the RFC asks; the writer does not materialize them",
    ),
    _f(
        "checkpointProtection",
        False,
        None,
        None,
        True,
        False,
        None,
        "protects checkpoints from cleanup",
        rfc=_RFC + "checkpoint-protection.md (proposed 2025-03-13)",
        note="each version is read with its own protocol; cleanup would need the protected-checkpoint rules",
    ),
    _f("geospatial", True, None, None, True, False, None, "geometry/geography columns (WKB)"),
    _f(
        "timestampNanos",
        True,
        None,
        None,
        True,
        False,
        None,
        "nanosecond timestamps",
        rfc=_RFC + "nanosecond-timestamps.md (proposed 2026-02-19)",
        note="columns typed timestamp_nanos / timestamp_ntz_nanos read as Arrow timestamp[ns]",
    ),
    _f(
        "icebergCompatV3",
        False,
        None,
        None,
        True,
        False,
        "delta.enableIcebergCompatV3",
        "Iceberg compatibility V3",
        rfc=_RFC + "iceberg-compat-v3.md (proposed 2025-05-19)",
        note="writers would have to keep Iceberg V3 rules",
    ),
    _f(
        "columnMappingUsageTracking",
        False,
        None,
        None,
        True,
        False,
        None,
        "tracks dropped or renamed columns",
        rfc=_RFC + "column-mapping-usage-tracking.md (proposed 2023-02-26)",
        note="writers would have to keep delta.columnMapping.hasDroppedOrRenamed",
    ),
    _f(
        "adaptiveMetadata",
        True,
        None,
        None,
        False,
        False,
        None,
        "Iceberg V4 adaptive metadata tree as the table's content metadata",
        rfc=_RFC + "iceberg-v4-metadata.md (proposed 2026-04-22)",
        note="file actions may live in manifests this reader does not read",
    ),
]

#: Every feature we know, by name.
FEATURES: dict[str, FeatureInfo] = {f.name: f for f in _FEATURE_LIST}


def features_of(protocol: Any) -> tuple[list[str], list[str]]:
    """(reader features, writer features) that a protocol enables, legacy versions included."""
    rv = int(protocol.min_reader_version)
    wv = int(protocol.min_writer_version)
    reader: list[str] = []
    writer: list[str] = []
    if rv >= 3:
        reader = list(protocol.reader_features or [])
    else:
        reader = [f.name for f in _FEATURE_LIST if f.reader_writer and f.min_reader is not None and f.min_reader <= rv]
    if wv >= 7:
        writer = list(protocol.writer_features or [])
    else:
        writer = [f.name for f in _FEATURE_LIST if f.min_writer is not None and f.min_writer <= wv]
    return reader, writer


def check_readable(protocol: Any, *, path: str | None = None) -> None:
    """Refuse a protocol that needs more than we can read.

    Raises:
        UnsupportedFeatureError: naming the reader version or reader feature.
    """
    rv = int(protocol.min_reader_version)
    if rv > MAX_READER_VERSION or rv < 1:
        raise UnsupportedFeatureError(
            f"table needs reader version {rv}; deltaexplore reads versions 1 to {MAX_READER_VERSION}",
            feature=f"readerVersion={rv}",
            needed_by="readers",
            path=path,
        )
    if rv == 3:
        for name in protocol.reader_features or []:
            info = FEATURES.get(name)
            if info is None or not info.read:
                spec = f" ({info.rfc}; {info.note})" if info is not None and info.rfc else ""
                raise UnsupportedFeatureError(
                    f"table needs reader feature {name!r}{spec}, which deltaexplore does not support",
                    feature=name,
                    needed_by="readers",
                    path=path,
                )


def check_writable(protocol: Any, *, path: str | None = None) -> None:
    """Refuse to write a table whose protocol needs writer features we do not implement.

    Raises:
        UnsupportedFeatureError: naming the writer version or feature.
    """
    check_readable(protocol, path=path)
    wv = int(protocol.min_writer_version)
    if wv > MAX_WRITER_VERSION or wv < 1:
        raise UnsupportedFeatureError(
            f"table needs writer version {wv}; deltaexplore writes versions 1 to {MAX_WRITER_VERSION}",
            feature=f"writerVersion={wv}",
            needed_by="writers",
            path=path,
        )
    for name in features_of(protocol)[1]:
        info = FEATURES.get(name)
        if info is None or not info.write:
            spec = f" ({info.rfc})" if info is not None and info.rfc else ""
            raise UnsupportedFeatureError(
                f"table needs writer feature {name!r}{spec}, which deltaexplore cannot write",
                feature=name,
                needed_by="writers",
                path=path,
            )


def feature_table() -> pa.Table:
    """Every known feature as an Arrow table (name, kind, versions, support, property)."""
    return pa.table(
        {
            "name": [f.name for f in _FEATURE_LIST],
            "kind": ["reader-writer" if f.reader_writer else "writer" for f in _FEATURE_LIST],
            "legacy_min_reader": pa.array([f.min_reader for f in _FEATURE_LIST], pa.int32()),
            "legacy_min_writer": pa.array([f.min_writer for f in _FEATURE_LIST], pa.int32()),
            "read_supported": [f.read for f in _FEATURE_LIST],
            "write_supported": [f.write for f in _FEATURE_LIST],
            "property": [f.property for f in _FEATURE_LIST],
            "description": [f.description for f in _FEATURE_LIST],
            "rfc": [f.rfc for f in _FEATURE_LIST],
            "handling": [handling(f) for f in _FEATURE_LIST],
        }
    )
