"""Protocol rules a writer must follow, checked before anything is committed.

Which table features a metadata needs (`required_features`) and the protocol that provides them
(`protocol_for`); what a protocol change may do (`check_protocol_change`: never drop a feature or
lower a version); what a metadata must satisfy (`check_metadata`: schema, partition columns,
column mapping, properties backed by their features, row tracking names); append-only tables,
domain metadata and the shape of a commit's file actions (`check_file_actions`). Every refusal
is a `WriteRefusedError` (or `UnsupportedFeatureError`) that says what was expected and found.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.log.replay import dv_unique_id
from deltaexplore.core.protocol.actions import Metadata, Protocol
from deltaexplore.core.protocol.features import FEATURES, check_writable, features_of
from deltaexplore.core.protocol.schema import ArrayType, MapType, PrimitiveType, StructField, StructType
from deltaexplore.core.write.schema_evolution import check_column_mapping
from deltaexplore.errors import DeltaExploreError, WriteRefusedError

__all__ = [
    "FEATURE_PROPERTY_PREFIX",
    "SYSTEM_DOMAINS",
    "check_domain",
    "check_file_actions",
    "check_metadata",
    "check_protocol_change",
    "feature_enabled",
    "protocol_for",
    "required_features",
]

#: system-controlled domains this writer understands and maintains itself
SYSTEM_DOMAINS = frozenset({"delta.rowTracking"})

#: table property -> (value that activates it, features it needs)
_PROPERTY_FEATURES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "delta.enableDeletionVectors": (("true",), ("deletionVectors",)),
    "delta.enableRowTracking": (("true",), ("rowTracking", "domainMetadata")),
    "delta.enableChangeDataFeed": (("true",), ("changeDataFeed",)),
    "delta.enableInCommitTimestamps": (("true",), ("inCommitTimestamp",)),
    "delta.appendOnly": (("true",), ("appendOnly",)),
    "delta.checkpointPolicy": (("v2",), ("v2Checkpoint",)),
    "delta.enableTypeWidening": (("true",), ("typeWidening",)),
    "delta.columnMapping.mode": (("name", "id"), ("columnMapping",)),
}

#: `delta.feature.<name> = supported` adds the feature <name> to the protocol (Delta's way to
#: turn on a feature that has no property of its own)
FEATURE_PROPERTY_PREFIX = "delta.feature."

#: features that need other features
_DEPENDS: dict[str, tuple[str, ...]] = {
    "rowTracking": ("domainMetadata",),
    "catalogManaged": ("inCommitTimestamp",),
    "catalogOwned-preview": ("inCommitTimestamp",),
}

#: operations that change existing rows: with change data feed on they must carry cdc files
ROW_LEVEL_OPERATIONS = frozenset({"DELETE", "UPDATE", "MERGE"})


def _walk_fields(t: Any) -> Iterable[StructField]:
    if isinstance(t, StructType):
        for f in t.fields:
            yield f
            yield from _walk_fields(f.type)
    elif isinstance(t, ArrayType):
        yield from _walk_fields(t.element_type)
    elif isinstance(t, MapType):
        yield from _walk_fields(t.key_type)
        yield from _walk_fields(t.value_type)


def _walk_types(t: Any) -> Iterable[Any]:
    yield t
    if isinstance(t, StructType):
        for f in t.fields:
            yield from _walk_types(f.type)
    elif isinstance(t, ArrayType):
        yield from _walk_types(t.element_type)
    elif isinstance(t, MapType):
        yield from _walk_types(t.key_type)
        yield from _walk_types(t.value_type)


def required_features(metadata: Metadata) -> dict[str, str]:
    """Features the metadata needs, each with the reason (property or column) that needs it."""
    out: dict[str, str] = {}
    conf = metadata.configuration
    for key, (values, feats) in _PROPERTY_FEATURES.items():
        value = str(conf.get(key, "")).strip().lower()
        if value in values:
            for feat in feats:
                out.setdefault(feat, f"table property {key}={conf[key]}")
    for name, info in FEATURES.items():  # the other features a property turns on
        if info.property and info.canonical is None and info.property not in _PROPERTY_FEATURES:
            if str(conf.get(info.property, "")).strip().lower() == "true":
                out.setdefault(name, f"table property {info.property}={conf[info.property]}")
    for key in conf:
        if key.startswith("delta.constraints."):
            out.setdefault("checkConstraints", f"CHECK constraint {key}")
        elif key.startswith(FEATURE_PROPERTY_PREFIX):
            name, value = key[len(FEATURE_PROPERTY_PREFIX) :], str(conf[key]).strip().lower()
            if value not in ("supported", "enabled"):
                raise WriteRefusedError(f"table property {key}={conf[key]}: a feature property is 'supported' or 'enabled'")
            out.setdefault(name, f"table property {key}={conf[key]}")
    if metadata.schema_string:
        schema = metadata.schema
        for f in _walk_fields(schema):
            if "delta.invariants" in f.metadata:
                out.setdefault("invariants", f"invariant on column {f.name!r}")
            if "delta.generationExpression" in f.metadata:
                out.setdefault("generatedColumns", f"generated column {f.name!r}")
            if "delta.identity.start" in f.metadata or "delta.identity.step" in f.metadata:
                out.setdefault("identityColumns", f"identity column {f.name!r}")
        for t in _walk_types(schema):
            if isinstance(t, PrimitiveType) and t.name == "timestamp_ntz":
                out.setdefault("timestampNtz", "a timestamp_ntz column")
            if isinstance(t, PrimitiveType) and t.name == "variant":
                out.setdefault("variantType", "a variant column")
    return out


def feature_enabled(protocol: Protocol, name: str) -> bool:
    """True when the protocol lists (or its legacy versions imply) `name` for writers."""
    return name in protocol.writer_feature_set


def protocol_for(metadata: Metadata, base: Protocol | None = None, *, extra: Iterable[str] = ()) -> Protocol:
    """The protocol a table with `metadata` needs: `base` when it already has every feature,
    else `base` upgraded (legacy versions become table features; nothing is dropped).

    A new table without special features gets (1, 2); otherwise table features: (3, 7) when a
    reader-writer feature is needed, else (1, 7).
    """
    needed = set(required_features(metadata)) | set(extra)
    for name in list(needed):
        needed |= set(_DEPENDS.get(name, ()))
    if base is not None:
        reader, writer = (set(x) for x in features_of(base))
        # a table that has a feature under its preview name keeps it so (readers that know only
        # the preview name must still read it): never a silent upgrade to the stable name
        previews = {FEATURES[p].canonical: p for p in writer if p in FEATURES and FEATURES[p].canonical}
        needed = {previews.get(n, n) for n in needed}
        if needed <= writer and all(not FEATURES[n].reader_writer or n in reader or _legacy_reads(base, n) for n in needed):
            return base
        reader |= {n for n in needed if FEATURES.get(n) and FEATURES[n].reader_writer}
        writer |= needed | reader
        rv = 3 if reader - {"columnMapping"} or base.min_reader_version >= 3 else max(base.min_reader_version, 2 if reader else 1)
        if rv == 3:
            return Protocol(3, 7, tuple(sorted(reader)), tuple(sorted(writer)))
        return Protocol(rv, 7, None, tuple(sorted(writer)))
    if not needed:
        return Protocol(1, 2)
    reader = {n for n in needed if FEATURES.get(n) and FEATURES[n].reader_writer}
    if reader:
        return Protocol(3, 7, tuple(sorted(reader)), tuple(sorted(needed | reader)))
    return Protocol(1, 7, None, tuple(sorted(needed)))


def _legacy_reads(protocol: Protocol, name: str) -> bool:
    info = FEATURES.get(name)
    return bool(
        info
        and info.min_reader is not None
        and protocol.min_reader_version < 3
        and info.min_reader <= protocol.min_reader_version
    )


def check_protocol_change(old: Protocol | None, new: Protocol, *, path: str | None = None) -> None:
    """A protocol may be written only if we implement it, it is well formed, and (for an
    existing table) it keeps every feature and version the old one had.

    Raises:
        UnsupportedFeatureError: a writer feature we do not implement.
        WriteRefusedError: malformed protocol or a downgrade.
    """
    check_writable(new, path=path)
    if new.min_reader_version >= 3 and new.min_writer_version < 7:
        raise WriteRefusedError(
            f"protocol with reader version {new.min_reader_version} needs writer version 7, got {new.min_writer_version}",
            path=path,
        )
    if new.min_reader_version >= 3 and new.reader_features is None:
        raise WriteRefusedError("protocol with reader version 3 must list readerFeatures", path=path)
    if new.min_writer_version >= 7 and new.writer_features is None:
        raise WriteRefusedError("protocol with writer version 7 must list writerFeatures", path=path)
    if new.min_reader_version >= 3 and new.writer_features is not None:
        missing = [f for f in new.reader_features or () if f not in new.writer_features]
        if missing:
            raise WriteRefusedError(
                f"reader features {missing} must also be listed in writerFeatures (found {list(new.writer_features)})", path=path
            )
    for name in new.reader_features or ():
        info = FEATURES.get(name)
        if info is not None and not info.reader_writer:
            raise WriteRefusedError(f"{name!r} is a writer-only feature: it must not be listed in readerFeatures", path=path)
    if old is None:
        return
    if new.min_reader_version < old.min_reader_version or new.min_writer_version < old.min_writer_version:
        raise WriteRefusedError(
            f"protocol downgrade refused: ({old.min_reader_version}, {old.min_writer_version}) -> "
            f"({new.min_reader_version}, {new.min_writer_version})",
            path=path,
        )
    old_r, old_w = features_of(old)
    new_r, new_w = features_of(new)
    dropped_w = sorted(set(old_w) - set(new_w))
    dropped_r = sorted(set(old_r) - set(new_r) - {"columnMapping"} if new.min_reader_version >= 2 else set(old_r) - set(new_r))
    if dropped_w or dropped_r:
        raise WriteRefusedError(
            f"protocol change would drop table features (writers: {dropped_w}, readers: {dropped_r}); features are never removed",
            path=path,
        )


def check_metadata(protocol: Protocol, metadata: Metadata, old: Metadata | None = None, *, path: str | None = None) -> None:
    """Check a metadata action against the protocol (and the metadata it replaces).

    Raises:
        WriteRefusedError: naming the property, column or feature at fault.
    """
    if not metadata.id:
        raise WriteRefusedError("metaData needs a table id", path=path)
    if metadata.format_provider != "parquet":
        raise WriteRefusedError(f"only parquet tables can be written, format is {metadata.format_provider!r}", path=path)
    try:
        schema = metadata.schema
    except DeltaExploreError as exc:
        raise WriteRefusedError(f"metaData schema is invalid: {exc}", path=path) from exc
    if not schema.fields:
        raise WriteRefusedError("a table needs at least one column", path=path)
    _check_names(schema, "", path)
    for name in metadata.partition_columns:
        f = schema.get(name)
        if f is None or f.name != name:
            raise WriteRefusedError(
                f"partition column {name!r} is not a column of the schema (columns: {', '.join(schema.names)})", path=path
            )
        if not isinstance(f.type, PrimitiveType) and f.type.name.startswith(("struct", "array", "map")):
            raise WriteRefusedError(
                f"partition column {name!r} has type {f.type}: only primitive columns can partition", path=path
            )
    if len(schema.fields) == len(metadata.partition_columns):
        raise WriteRefusedError("a table needs at least one column that is not a partition column", path=path)
    _, writer = features_of(protocol)
    # a feature listed under its preview name counts (typeWidening-preview, variantType-preview)
    has = set(writer) | {FEATURES[p].canonical for p in writer if p in FEATURES and FEATURES[p].canonical}
    for feat, reason in required_features(metadata).items():
        if feat not in has:
            raise WriteRefusedError(
                f"{reason} needs the table feature {feat!r}, which the protocol does not have "
                f"(writer features: {sorted(writer)})",
                path=path,
            )
    mode = metadata.column_mapping_mode(protocol)
    conf_mode = str(metadata.configuration.get("delta.columnMapping.mode", "none")).lower()
    if conf_mode not in ("none", "name", "id"):
        raise WriteRefusedError(f"delta.columnMapping.mode must be none, name or id, got {conf_mode!r}", path=path)
    if mode != "none":
        max_id = metadata.configuration.get("delta.columnMapping.maxColumnId")
        try:
            check_column_mapping(schema, int(max_id) if max_id is not None else None, path=path or "")
        except ValueError as exc:
            raise WriteRefusedError(f"delta.columnMapping.maxColumnId is not an integer: {max_id!r}", path=path) from exc
        if max_id is None:
            raise WriteRefusedError("column mapping needs the table property delta.columnMapping.maxColumnId", path=path)
    if old is not None:
        old_mode = old.column_mapping_mode(protocol)
        if old_mode != mode and not (old_mode == "none" and mode == "name"):
            raise WriteRefusedError(f"column mapping mode change {old_mode} -> {mode} is not supported", path=path)
        old_max = old.configuration.get("delta.columnMapping.maxColumnId")
        new_max = metadata.configuration.get("delta.columnMapping.maxColumnId")
        if old_max is not None and new_max is not None and int(new_max) < int(old_max):
            raise WriteRefusedError(f"delta.columnMapping.maxColumnId must never decrease ({old_max} -> {new_max})", path=path)
    _check_row_tracking(protocol, metadata, schema, path)
    _check_identity(schema, path)


def _check_names(schema: StructType, where: str, path: str | None) -> None:
    seen: dict[str, str] = {}
    for f in schema.fields:
        if not f.name:
            raise WriteRefusedError(f"empty column name in {where or 'the schema'}", path=path)
        key = f.name.lower()
        if key in seen:
            raise WriteRefusedError(
                f"duplicate column names {seen[key]!r} and {f.name!r} in {where or 'the schema'} (names are case-insensitive)",
                path=path,
            )
        seen[key] = f.name
        t = f.type
        while isinstance(t, (ArrayType, MapType)):
            t = t.element_type if isinstance(t, ArrayType) else t.value_type
        if isinstance(t, StructType):
            _check_names(t, f"{where}{f.name}.", path)


def _check_row_tracking(protocol: Protocol, metadata: Metadata, schema: StructType, path: str | None) -> None:
    conf = metadata.configuration
    if str(conf.get("delta.enableRowTracking", "false")).lower() != "true":
        return
    names = []
    for key in ("delta.rowTracking.materializedRowIdColumnName", "delta.rowTracking.materializedRowCommitVersionColumnName"):
        value = conf.get(key)
        if not value:
            raise WriteRefusedError(f"row tracking is enabled but the table property {key} is not set", path=path)
        names.append(value)
    taken = {f.name.lower() for f in schema.fields} | {f.physical_name.lower() for f in schema.fields}
    for value in names:
        if value.lower() in taken:
            raise WriteRefusedError(f"materialized row tracking column {value!r} collides with a column of the schema", path=path)
    if names[0] == names[1]:
        raise WriteRefusedError("the materialized row id and row commit version columns must differ", path=path)


def _check_identity(schema: StructType, path: str | None) -> None:
    for f in _walk_fields(schema):
        if "delta.identity.step" not in f.metadata and "delta.identity.start" not in f.metadata:
            continue
        if not (isinstance(f.type, PrimitiveType) and f.type.name == "long"):
            raise WriteRefusedError(f"identity column {f.name!r} must be of type long, found {f.type}", path=path)
        try:
            step = int(f.metadata.get("delta.identity.step", 1))
            int(f.metadata.get("delta.identity.start", 1))
        except (TypeError, ValueError) as exc:
            raise WriteRefusedError(f"identity column {f.name!r}: start and step must be integers ({exc})", path=path) from exc
        if step == 0:
            raise WriteRefusedError(f"identity column {f.name!r}: delta.identity.step must not be 0", path=path)


def check_domain(protocol: Protocol, domain: str, *, internal: bool = False, path: str | None = None) -> None:
    """A domainMetadata action may be written only with the `domainMetadata` feature; system
    (`delta.*`) domains only by this library itself and only the ones it understands.

    Raises:
        WriteRefusedError: naming the domain.
    """
    if not domain:
        raise WriteRefusedError("a metadata domain needs a name", path=path)
    if domain.startswith("delta."):
        if not internal:
            raise WriteRefusedError(f"domain {domain!r} is system-controlled (delta.*): users may not modify it", path=path)
        if domain not in SYSTEM_DOMAINS:
            raise WriteRefusedError(
                f"system domain {domain!r} is not one deltaexplore understands; refusing to modify it", path=path
            )
    if not feature_enabled(protocol, "domainMetadata"):
        raise WriteRefusedError(
            f"writing domain {domain!r} needs the table feature 'domainMetadata' (writer version 7), which the table lacks",
            path=path,
        )


def check_file_actions(
    protocol: Protocol,
    metadata: Metadata,
    adds: pa.Table,
    removes: pa.Table,
    cdc: pa.Table,
    *,
    operation: str,
    append_only: bool,
    path: str | None = None,
) -> None:
    """The file actions of one commit: unique paths, partition values for every partition
    column, DVs only with the feature, numRecords where the protocol needs it, append-only,
    change data files.

    Raises:
        WriteRefusedError: naming the file and the rule.
    """
    for kind, t in (("add", adds), ("remove", removes), ("cdc", cdc)):
        if t.num_rows > 1:
            counts = pc.value_counts(t.column("path").combine_chunks())
            dup = counts.filter(pc.greater(counts.field("counts"), 1))
            if len(dup):
                raise WriteRefusedError(
                    f"a commit may hold at most one {kind} action per path; {dup[0]['values'].as_py()} appears "
                    f"{dup[0]['counts'].as_py()} times",
                    path=path,
                )
    if adds.num_rows and removes.num_rows:

        def keys_of(t: pa.Table) -> pa.Array:
            dv = pc.fill_null(dv_unique_id(t.column("deletionVector").combine_chunks()).cast(pa.string()), "")
            return pc.binary_join_element_wise(t.column("path").combine_chunks().cast(pa.string()), dv, "\x00")

        both = pc.is_in(keys_of(adds), value_set=keys_of(removes))
        if pc.any(both).as_py():
            i = pc.index(both, True).as_py()
            raise WriteRefusedError(
                f"a commit may not add and remove the same logical file: {adds.column('path')[i].as_py()} "
                "(same path and deletion vector)",
                path=path,
            )
    mode = metadata.column_mapping_mode(protocol)
    schema = metadata.schema
    keys = []
    for name in metadata.partition_columns:
        f = schema.get(name)
        keys.append(f.physical_name if (f is not None and mode != "none") else name)
    for kind, t in (("add", adds), ("cdc", cdc)):
        if not t.num_rows:
            continue
        maps = t.column("partitionValues").combine_chunks()
        if maps.null_count:
            bad = t.column("path").filter(pc.is_null(maps))[0].as_py()
            raise WriteRefusedError(f"{kind} of {bad}: partitionValues is required", path=path)
        flags = pc.is_in(maps.keys.cast(pa.string()), value_set=pa.array(keys, pa.string())).to_numpy(zero_copy_only=False)
        offsets = maps.offsets.to_numpy()
        cumulative = np.concatenate([[0], np.cumsum(flags.astype(np.int64))])
        found = cumulative[offsets[1:]] - cumulative[offsets[:-1]]
        if (found != len(keys)).any():
            i = int(np.flatnonzero(found != len(keys))[0])
            raise WriteRefusedError(
                f"{kind} of {t.column('path')[i].as_py()}: partitionValues has keys {[k for k, _ in maps[i].as_py()]}, "
                f"expected exactly the partition columns {keys}",
                path=path,
            )
    writer = features_of(protocol)[1]
    if adds.num_rows:
        has_dv = pc.is_valid(adds.column("deletionVector").combine_chunks())
        if pc.any(has_dv).as_py() and "deletionVectors" not in writer:
            raise WriteRefusedError(
                "add actions carry deletion vectors but the table has no 'deletionVectors' feature", path=path
            )
        needs_count = has_dv
        if "rowTracking" in writer:
            needs_count = pc.or_(needs_count, pc.is_null(adds.column("baseRowId").combine_chunks()))
        if pc.any(needs_count).as_py():
            stats = adds.column("stats").combine_chunks().cast(pa.string())
            counted = pc.match_substring_regex(pc.fill_null(stats, ""), r'"numRecords"\s*:\s*\d')
            missing = pc.and_(needs_count, pc.invert(counted))
            if pc.any(missing).as_py():
                i = pc.index(missing, True).as_py()
                raise WriteRefusedError(
                    f"add of {adds.column('path')[i].as_py()}: stats.numRecords is required "
                    "(deletion vectors and row tracking need the row count)",
                    path=path,
                )
    if cdc.num_rows and "changeDataFeed" not in writer:
        raise WriteRefusedError("cdc actions need the table feature 'changeDataFeed' (writer version 4+)", path=path)
    data_removes = removes.num_rows and pc.any(pc.fill_null(removes.column("dataChange"), True)).as_py()
    data_adds = adds.num_rows and pc.any(pc.fill_null(adds.column("dataChange"), True)).as_py()
    if append_only and data_removes:
        raise WriteRefusedError(
            f"table is append-only (delta.appendOnly=true): {operation} may not remove data "
            f"({removes.num_rows} files would be removed, e.g. {removes.column('path')[0].as_py()})",
            path=path,
        )
    if append_only and adds.num_rows and pc.any(pc.is_valid(adds.column("deletionVector").combine_chunks())).as_py():
        raise WriteRefusedError(
            f"table is append-only (delta.appendOnly=true): {operation} may not delete rows with deletion vectors", path=path
        )
    cdf_on = "changeDataFeed" in writer and str(metadata.configuration.get("delta.enableChangeDataFeed", "")).lower() == "true"
    if cdf_on and operation.upper() in ROW_LEVEL_OPERATIONS and data_removes and not cdc.num_rows and data_adds:
        raise WriteRefusedError(
            f"change data feed is enabled: {operation} rewrites data files and must record the changed rows in cdc files",
            path=path,
        )
