"""Log actions: typed records for the few non-file actions, Arrow schemas for the many file ones.

File actions (add, remove, cdc) stay Arrow columns end to end because tables have millions of
them; protocol, metaData, txn, domainMetadata and commitInfo are small frozen dataclasses.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import pyarrow as pa

from deltaexplore.core.protocol.features import features_of
from deltaexplore.core.protocol.schema import StructType, column_mapping_mode, parse_schema
from deltaexplore.errors import DeltaProtocolError, InvalidLogError

__all__ = [
    "ADD_FIELDS",
    "CDC_FIELDS",
    "DV_TYPE",
    "REMOVE_FIELDS",
    "DomainMetadata",
    "Metadata",
    "Protocol",
    "Txn",
]

STRING_MAP = pa.map_(pa.string(), pa.string())

DV_TYPE = pa.struct(
    [
        pa.field("storageType", pa.string()),
        pa.field("pathOrInlineDv", pa.string()),
        pa.field("offset", pa.int32()),
        pa.field("sizeInBytes", pa.int32()),
        pa.field("cardinality", pa.int64()),
    ]
)

#: add action columns we read (checkpoint nested names; partitionValues/tags are maps).
ADD_FIELDS = [
    pa.field("path", pa.string()),
    pa.field("partitionValues", STRING_MAP),
    pa.field("size", pa.int64()),
    pa.field("modificationTime", pa.int64()),
    pa.field("dataChange", pa.bool_()),
    pa.field("stats", pa.string()),
    pa.field("tags", STRING_MAP),
    pa.field("deletionVector", DV_TYPE),
    pa.field("baseRowId", pa.int64()),
    pa.field("defaultRowCommitVersion", pa.int64()),
    pa.field("clusteringProvider", pa.string()),
]
REMOVE_FIELDS = [
    pa.field("path", pa.string()),
    pa.field("deletionTimestamp", pa.int64()),
    pa.field("dataChange", pa.bool_()),
    pa.field("extendedFileMetadata", pa.bool_()),
    pa.field("partitionValues", STRING_MAP),
    pa.field("size", pa.int64()),
    pa.field("stats", pa.string()),
    pa.field("tags", STRING_MAP),
    pa.field("deletionVector", DV_TYPE),
    pa.field("baseRowId", pa.int64()),
    pa.field("defaultRowCommitVersion", pa.int64()),
]
CDC_FIELDS = [
    pa.field("path", pa.string()),
    pa.field("partitionValues", STRING_MAP),
    pa.field("size", pa.int64()),
    pa.field("dataChange", pa.bool_()),
    pa.field("tags", STRING_MAP),
]
FILE_ACTION_FIELDS = {"add": ADD_FIELDS, "remove": REMOVE_FIELDS, "cdc": CDC_FIELDS}


def _str_list(value: Any) -> tuple[str, ...] | None:
    if value is None:
        return None
    if not isinstance(value, (list, tuple)):
        raise InvalidLogError(f"expected a list of strings, got {value!r}")
    return tuple(str(v) for v in value)


def _str_map(value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if isinstance(value, dict):
        return {str(k): (v if isinstance(v, str) else "" if v is None else json.dumps(v)) for k, v in value.items()}
    if isinstance(value, list):  # map as list of (key, value) pairs (from parquet)
        return {str(k): v for k, v in value}
    raise InvalidLogError(f"expected a string map, got {value!r}")


@dataclass(frozen=True, slots=True)
class Protocol:
    """The `protocol` action."""

    min_reader_version: int
    min_writer_version: int
    reader_features: tuple[str, ...] | None = None
    writer_features: tuple[str, ...] | None = None

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Protocol:
        try:
            rv = obj.get("minReaderVersion", obj.get("readerVersion"))
            wv = obj.get("minWriterVersion", obj.get("writerVersion"))
            if rv is None or wv is None:
                raise ValueError("minReaderVersion and minWriterVersion are required")
            return cls(int(rv), int(wv), _str_list(obj.get("readerFeatures")), _str_list(obj.get("writerFeatures")))
        except (TypeError, ValueError, OverflowError) as exc:
            raise InvalidLogError(f"malformed protocol action {obj!r}: {exc}") from exc

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"minReaderVersion": self.min_reader_version, "minWriterVersion": self.min_writer_version}
        if self.reader_features is not None:
            out["readerFeatures"] = list(self.reader_features)
        if self.writer_features is not None:
            out["writerFeatures"] = list(self.writer_features)
        return out

    @property
    def reader_feature_set(self) -> frozenset[str]:
        """Reader features in force (legacy versions translated)."""
        return frozenset(features_of(self)[0])

    @property
    def writer_feature_set(self) -> frozenset[str]:
        """Writer features in force (legacy versions translated)."""
        return frozenset(features_of(self)[1])

    def has(self, *names: str) -> bool:
        """True when any of `names` is enabled for readers or writers."""
        enabled = self.reader_feature_set | self.writer_feature_set
        return any(n in enabled for n in names)


@dataclass(frozen=True)
class Metadata:
    """The `metaData` action. `schema` parses `schemaString` on first use."""

    id: str
    schema_string: str | None
    partition_columns: tuple[str, ...] = ()
    configuration: dict[str, str] = field(default_factory=dict, hash=False)
    name: str | None = None
    description: str | None = None
    format_provider: str = "parquet"
    format_options: dict[str, str] = field(default_factory=dict, hash=False)
    created_time: int | None = None
    #: the log file this action was read from (named by errors about it), None when built here
    source: str | None = field(default=None, compare=False, hash=False, repr=False)

    @classmethod
    def from_json(cls, obj: dict[str, Any], source: str | None = None) -> Metadata:
        try:
            fmt = obj.get("format") or {}
            created = obj.get("createdTime")
            schema_string = obj.get("schemaString")
            if schema_string is not None and not isinstance(schema_string, str):
                schema_string = json.dumps(schema_string)
            return cls(
                id=str(obj.get("id")),
                schema_string=schema_string,
                partition_columns=_str_list(obj.get("partitionColumns")) or (),
                configuration=_str_map(obj.get("configuration")),
                name=obj.get("name"),
                description=obj.get("description"),
                format_provider=str(fmt.get("provider") or "parquet"),
                format_options=_str_map(fmt.get("options")),
                created_time=int(created) if created is not None else None,
                source=source,
            )
        except (TypeError, ValueError, AttributeError, OverflowError) as exc:
            where = f" in {source}" if source else ""
            raise InvalidLogError(f"malformed metaData action{where}: {exc}", path=source) from exc

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "format": {"provider": self.format_provider, "options": dict(self.format_options)},
            "schemaString": self.schema_string,
            "partitionColumns": list(self.partition_columns),
            "configuration": dict(self.configuration),
        }
        if self.name is not None:
            out["name"] = self.name
        if self.description is not None:
            out["description"] = self.description
        if self.created_time is not None:
            out["createdTime"] = self.created_time
        return out

    @cached_property
    def schema(self) -> StructType:
        """The parsed schema.

        Raises:
            InvalidLogError: the metaData has no (or a malformed) schemaString.
        """
        where = f" (in {self.source})" if self.source else ""
        if not self.schema_string:
            raise InvalidLogError(
                f"metaData {self.id!r}{where} has no schemaString: the table's data cannot be read", path=self.source
            )
        try:
            return parse_schema(self.schema_string)
        except (InvalidLogError, DeltaProtocolError) as exc:
            if not self.source or exc.path is not None or type(exc) not in (InvalidLogError, DeltaProtocolError):
                raise
            raise type(exc)(f"schema of metaData {self.id!r}{where}: {exc}", path=self.source) from exc

    def column_mapping_mode(self, protocol: Protocol) -> str:
        # As in the reference implementation, a feature listed for readers or writers is supported.
        return column_mapping_mode(self.configuration, protocol.has("columnMapping"))


@dataclass(frozen=True, slots=True)
class Txn:
    """The latest `txn` of an application."""

    app_id: str
    version: int
    last_updated: int | None = None

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Txn:
        try:
            lu = obj.get("lastUpdated")
            return cls(str(obj["appId"]), int(obj["version"]), int(lu) if lu is not None else None)
        except (KeyError, TypeError, ValueError, OverflowError) as exc:
            raise InvalidLogError(f"malformed txn action {obj!r}: {exc}") from exc


@dataclass(frozen=True, slots=True)
class DomainMetadata:
    """A `domainMetadata` action; `configuration` is the domain's (JSON) configuration string."""

    domain: str
    configuration: str
    removed: bool = False

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> DomainMetadata:
        try:
            conf = obj.get("configuration")
            if not isinstance(conf, str):
                conf = json.dumps(conf if conf is not None else {})
            return cls(str(obj["domain"]), conf, bool(obj.get("removed", False)))
        except (KeyError, TypeError) as exc:
            raise InvalidLogError(f"malformed domainMetadata action {obj!r}: {exc}") from exc

    @property
    def config(self) -> Any:
        """The configuration parsed as JSON (the raw string when it is not JSON)."""
        try:
            return json.loads(self.configuration)
        except (ValueError, RecursionError):
            return self.configuration
