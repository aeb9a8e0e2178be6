"""Protocol and table features: which are supported, which are actually in effect, and which
clients (this library, Delta Spark versions, delta-rs, DuckDB) can read and write the table.

Feature facts come from the core's `FEATURES` table, client capabilities from the declared
tables in `inspect.clients`; this module only joins them with a snapshot.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa

from deltaexplore.core.history import read_protocols
from deltaexplore.core.log.state import NO_PROTOCOL
from deltaexplore.core.protocol.features import FEATURES, check_readable, features_of, handling
from deltaexplore.core.protocol.schema import ArrayType, DataType, MapType, StructType
from deltaexplore.core.snapshot import Snapshot
from deltaexplore.errors import DeltaExploreError, DeltaProtocolError, UnsupportedFeatureError
from deltaexplore.inspect.clients import CLIENTS, LEGACY_READS, STRICT_PROTOCOL_CLIENTS, client_features
from deltaexplore.inspect.errors import InspectError
from deltaexplore.inspect.results import conform, to_ts
from deltaexplore.inspect.schemas import COMPATIBILITY_SCHEMA, FEATURES_SCHEMA, PROTOCOL_VERSIONS_SCHEMA
from deltaexplore.inspect.snapshots import snapshot_of, table_of

if TYPE_CHECKING:
    from deltaexplore.core.table import Table

__all__ = ["compatibility", "features", "lenient_snapshot", "protocol_versions"]

#: field metadata keys that make a writer feature active
_FIELD_METADATA = {
    "generatedColumns": ("delta.generationExpression",),
    "identityColumns": ("delta.identity.start", "delta.identity.step", "delta.identity.allowExplicitInsert"),
    "invariants": ("delta.invariants",),
    "allowColumnDefaults": ("CURRENT_DEFAULT",),
    "collations": ("__COLLATIONS",),
    "collations-preview": ("__COLLATIONS",),
    "typeWidening": ("delta.typeChanges",),
    "typeWidening-preview": ("delta.typeChanges",),
}
#: Delta types whose presence makes a feature active
_TYPES = {
    "timestampNtz": ("timestamp_ntz",),
    "variantType": ("variant",),
    "variantType-preview": ("variant",),
    "geospatial": ("geometry", "geography"),
    "timestampNanos": ("timestamp_nanos", "timestamp_ntz_nanos"),
}
#: features that are in effect whenever the protocol lists them
_ALWAYS = {
    "vacuumProtocolCheck": "VACUUM must check the full protocol",
    "catalogManaged": "commits go through the catalog",
    "catalogOwned-preview": "commits go through the catalog",
    "checkpointProtection": "checkpoints are protected from cleanup",
    "materializePartitionColumns": "partition columns are also written into data files",
    "icebergWriterCompatV1": "writers keep Iceberg-compatible data",
    "adaptiveMetadata": "the table's content metadata may live in an Iceberg V4 metadata tree",
    "columnMappingUsageTracking": "writers track dropped and renamed columns",
}


def _walk_fields(t: DataType) -> list[Any]:
    out = []
    if isinstance(t, StructType):
        for f in t.fields:
            out.append(f)
            out.extend(_walk_fields(f.type))
    elif isinstance(t, ArrayType):
        out.extend(_walk_fields(t.element_type))
    elif isinstance(t, MapType):
        out.extend(_walk_fields(t.key_type))
        out.extend(_walk_fields(t.value_type))
    return out


def _type_names(t: DataType) -> set[str]:
    if isinstance(t, StructType):
        return set().union(*(_type_names(f.type) for f in t.fields)) if t.fields else set()
    if isinstance(t, ArrayType):
        return _type_names(t.element_type)
    if isinstance(t, MapType):
        return _type_names(t.key_type) | _type_names(t.value_type)
    return {t.name.split("(")[0]}


def _activation(name: str, snap: Snapshot, props: dict[str, str], fields: list[Any], types: set[str]) -> tuple[bool, str]:
    info = FEATURES.get(name)
    canonical = info.canonical if info and info.canonical else name
    if canonical == "columnMapping":
        mode = snap.column_mapping_mode
        return mode != "none", f"delta.columnMapping.mode = {props.get('delta.columnMapping.mode', 'none')}"
    if canonical == "v2Checkpoint":
        policy = props.get("delta.checkpointPolicy")
        kind = snap.segment.checkpoint.kind if snap.segment.checkpoint is not None else None
        used = (kind is not None and kind.startswith("v2")) or policy == "v2"
        return used, f"delta.checkpointPolicy = {policy}" + (f"; current checkpoint is {kind}" if kind else "")
    if canonical == "checkConstraints":
        names = [k for k in props if k.startswith("delta.constraints.")]
        return bool(names), f"{len(names)} CHECK constraints" if names else "no delta.constraints.* property"
    if canonical == "domainMetadata":
        domains = snap.domain_metadata()
        return bool(domains), f"{len(domains)} domains: {', '.join(sorted(domains))}" if domains else "no domain"
    if canonical == "clustering":
        on = "delta.clustering" in snap.domain_metadata()
        return on, "delta.clustering domain present" if on else "no delta.clustering domain"
    keys = _FIELD_METADATA.get(name)
    if keys:
        hits = [f.name for f in fields if any(k in f.metadata for k in keys)]
        prop = info.property if info else None
        if prop and str(props.get(prop, "")).lower() == "true" and not hits:
            return True, f"{prop} = true"
        return bool(hits), f"columns: {', '.join(hits)}" if hits else f"no column has {keys[0]} metadata"
    t = _TYPES.get(name)
    if t:
        hits = sorted(types & set(t))
        return bool(hits), f"schema uses {', '.join(hits)}" if hits else f"no {t[0]} column"
    if name in _ALWAYS:
        return True, _ALWAYS[name]
    if info is not None and info.property:
        value = props.get(info.property)
        return str(value).lower() == "true", f"{info.property} = {value}" if value is not None else f"{info.property} not set"
    return False, "unknown feature" if info is None else "no activation rule"


def features(
    obj: Table | Snapshot, *, version: int | None = None, all_known: bool = False, all_versions: bool = False
) -> pa.Table:
    """Protocol features of the table (`FEATURES_SCHEMA`), one row per feature.

    Rows: every feature the protocol lists or implies (legacy versions translated), every
    feature whose enabling property is set without the protocol supporting it, and with
    `all_known=True` every feature deltaexplore knows. Columns: feature, kind (reader-writer |
    writer | unknown), supported, in_reader_features, in_writer_features, legacy, active (in
    effect: property set, schema uses it, domain present, ...), activation (why), property,
    property_value, known, deltaexplore_read, deltaexplore_write, description, handling (what
    deltaexplore does with a table that has it) and rfc (where a feature still in flight is
    specified). A table needing a reader feature deltaexplore does not read is described too.

    With `all_versions=True`: the protocol of every retained version up to `version` instead,
    one row per version (`PROTOCOL_VERSIONS_SCHEMA`, see `protocol_versions`).
    """
    if all_versions:
        return protocol_versions(obj, version=version)
    snap = lenient_snapshot(obj, version)
    p = snap.protocol
    readers, writers = features_of(p)
    props = snap.properties
    try:
        schema = snap.schema if snap.has_metadata else None
    except DeltaExploreError:
        schema = None
    fields = _walk_fields(schema) if schema is not None else []
    types = _type_names(schema) if schema is not None else set()
    names = list(dict.fromkeys([*readers, *writers]))
    for info in FEATURES.values():
        if info.name in names:
            continue
        value = props.get(info.property) if info.property else None
        if all_known or (value is not None and str(value).lower() == "true"):
            names.append(info.name)
    rows: dict[str, list[Any]] = {f.name: [] for f in FEATURES_SCHEMA}
    legacy_r = p.min_reader_version < 3
    legacy_w = p.min_writer_version < 7
    for name in names:
        known = FEATURES.get(name)
        supported = name in readers or name in writers
        active, why = _activation(name, snap, props, fields, types) if supported else (False, "not in the protocol")
        if not supported and known is not None and known.property and str(props.get(known.property, "")).lower() == "true":
            why = f"{known.property} = true but the protocol does not list the feature: writers must add it"
        rows["feature"].append(name)
        rows["kind"].append(("reader-writer" if known.reader_writer else "writer") if known else "unknown")
        rows["supported"].append(supported)
        rows["in_reader_features"].append(name in readers)
        rows["in_writer_features"].append(name in writers)
        rows["legacy"].append(supported and ((name in readers and legacy_r) or (name in writers and legacy_w)))
        rows["active"].append(active)
        rows["activation"].append(why)
        rows["property"].append(known.property if known else None)
        rows["property_value"].append(props.get(known.property) if known and known.property else None)
        rows["known"].append(known is not None)
        rows["deltaexplore_read"].append(known.read if known else False)
        rows["deltaexplore_write"].append(known.write if known else False)
        rows["description"].append(
            known.description or (FEATURES[known.canonical].description if known.canonical else "") if known else ""
        )
        rows["handling"].append(handling(known))
        rows["rfc"].append(known.rfc if known else None)
    return conform(rows, FEATURES_SCHEMA)


def lenient_snapshot(obj: Table | Snapshot, version: int | None = None) -> Snapshot:
    """The snapshot to describe: `snapshot_of`'s, or, when the version cannot be read (a reader
    feature deltaexplore lacks, a damaged checkpoint), the table read with `strict=False`."""
    try:
        return snapshot_of(obj, version)
    except DeltaProtocolError:
        table = table_of(obj)
        if version is None and isinstance(obj, Snapshot):
            version = obj.version
        return table.snapshot(version, strict=False)


def _first_version(listing: Any, end: int) -> int:
    """The oldest version that can be reconstructed: 0 when its commit is there, else the
    oldest checkpoint (the commits before it were cleaned up)."""
    commits = [v for v in listing.versions() if v <= end]
    if commits and commits[0] == 0:
        return 0
    checkpoints = [v for v in listing.checkpoints if v <= end]
    if checkpoints:
        return min(checkpoints)
    raise InspectError(f"no version up to {end} can be reconstructed: the log starts at {commits[0] if commits else '?'}")


def protocol_versions(obj: Table | Snapshot, *, version: int | None = None) -> pa.Table:
    """The protocol and feature set of every retained version up to `version` (default: the
    snapshot's or the latest), oldest first (`PROTOCOL_VERSIONS_SCHEMA`).

    With `checkpointProtection` a feature can be dropped and the protocol can go down: each
    row says what its commit's protocol action changed (change, added, removed) and whether
    deltaexplore reads that version (readable, blockers), which `Table.snapshot(version)`
    decides by that version's own protocol. Reads every retained commit (as `history()`).
    """
    table = table_of(obj)
    listing = table.listing(refresh=False)
    end = obj.version if isinstance(obj, Snapshot) and version is None else version
    end = listing.latest_version if end is None else end
    assert end is not None
    first = _first_version(listing, end)
    start = table.snapshot(first, strict=False)
    clock = (start if first == end else table.snapshot(end, strict=False)).clock
    versions = sorted({first, *(v for v in listing.versions() if first < v <= end)})
    actions = read_protocols(table.storage, listing, versions)
    rows: dict[str, list[Any]] = {f.name: [] for f in PROTOCOL_VERSIONS_SCHEMA}
    previous: Any = None
    for v in versions:
        p = start.protocol if v == first else actions.get(v, previous)
        readers, writers = features_of(p)
        before = set() if previous is None else set(features_of(previous)[0]) | set(features_of(previous)[1])
        now = set(readers) | set(writers)
        added, removed = sorted(now - before) if previous is not None else [], sorted(before - now)
        if v == first:
            change = "created" if v == 0 and 0 in actions else "first retained"
        elif v not in actions:
            change = None
        elif p == previous:
            change = "restated"
        else:
            pairs = ((p.min_reader_version, previous.min_reader_version), (p.min_writer_version, previous.min_writer_version))
            up, down = any(a > b for a, b in pairs), any(a < b for a, b in pairs)
            if (down or (removed and not added)) and not up:
                change = "downgraded"
            elif (up or added) and not (down or removed):
                change = "upgraded"
            else:
                change = "changed"
        try:
            check_readable(p)
            blockers: list[str] = []
        except UnsupportedFeatureError as exc:
            blockers = [exc.feature]
        rows["version"].append(v)
        rows["timestamp"].append(clock.timestamp(v))
        rows["change"].append(change)
        rows["min_reader_version"].append(p.min_reader_version)
        rows["min_writer_version"].append(p.min_writer_version)
        rows["reader_features"].append(list(readers))
        rows["writer_features"].append(list(writers))
        rows["added"].append(added)
        rows["removed"].append(removed)
        rows["readable"].append(not blockers and p != NO_PROTOCOL)
        rows["blockers"].append(blockers if p != NO_PROTOCOL else ["no protocol action"])
        previous = p
    rows["timestamp"] = to_ts(rows["timestamp"])
    return conform(rows, PROTOCOL_VERSIONS_SCHEMA)


def _writer_only_listing(p: Any) -> list[str]:
    """Reader-writer features a table-features protocol lists in writerFeatures but not readerFeatures."""
    if p.min_reader_version < 3:
        return []
    listed = set(p.reader_features or ())
    return [f for f in p.writer_features or () if f in FEATURES and FEATURES[f].reader_writer and f not in listed]


def compatibility(obj: Table | Snapshot, *, version: int | None = None) -> pa.Table:
    """Which clients can read and write the table, and why not (`COMPATIBILITY_SCHEMA`).

    One row per declared client version (`inspect.clients.CLIENTS`: deltaexplore, Delta Spark
    2.2 to 4.0, delta-rs via DataFusion and via pyarrow, DuckDB): can_read, can_write,
    read_blockers / write_blockers (reader/writer versions above the client's, features it does
    not support; a writer must also be able to read), confidence (verified | documented |
    approximate) and notes.
    """
    snap = snapshot_of(obj, version)
    p = snap.protocol
    readers, writers = features_of(p)
    lopsided = _writer_only_listing(p)
    support = {(r["client"], r["version"], r["feature"]): (r["read"], r["write"]) for r in client_features().to_pylist()}
    rows: dict[str, list[Any]] = {f.name: [] for f in COMPATIBILITY_SCHEMA}
    for client, cversion, max_r, max_w, writes, confidence, notes in CLIENTS:
        read_block = []
        if p.min_reader_version > max_r:
            read_block.append(f"readerVersion={p.min_reader_version} (client reads up to {max_r})")
        legacy = LEGACY_READS.get(client, frozenset()) if p.min_reader_version < 3 else frozenset()
        for f in readers:
            if not support.get((client, cversion, f), (False, False))[0] and f not in legacy:
                read_block.append(f)
        if client in STRICT_PROTOCOL_CLIENTS and lopsided:
            read_block.append(f"reader-writer features listed for writers only: {', '.join(lopsided)} (strict protocol check)")
        write_block = list(read_block)
        if not writes:
            write_block.append("the client does not write Delta tables")
        elif p.min_writer_version > max_w:
            write_block.append(f"writerVersion={p.min_writer_version} (client writes up to {max_w})")
        for f in writers if writes else []:
            if not support.get((client, cversion, f), (False, False))[1] and f not in write_block:
                write_block.append(f)
        rows["client"].append(client)
        rows["version"].append(cversion)
        rows["can_read"].append(not read_block)
        rows["can_write"].append(not write_block)
        rows["read_blockers"].append(read_block)
        rows["write_blockers"].append(write_block)
        rows["confidence"].append(confidence)
        rows["notes"].append(notes)
    return conform(rows, COMPATIBILITY_SCHEMA)
