"""Every output schema of `deltaexplore.inspect`, declared in one place.

Each inspection function returns a `pyarrow.Table` with exactly one of these schemas (the
`layout` schema is parameterised by the inspected column's type). Column meanings are documented
next to each field and repeated in the function docstrings; `docs/architecture.md` has a summary.
Timestamps are `timestamp[ms, UTC]`; counts and bytes `int64`; ratios `float64` in [0, 1].

Every field also declares its display unit (`unit` metadata: bytes, count, version, timestamp,
duration_ms, ratio, number, bool, status, path, json, operation, text; see
`deltaexplore.inspect.formatting`), and every schema is tagged with its table's name (schema
metadata `deltaexplore.table`), which is how a notebook recognises an inspection table and
shows it as a formatted HTML table. The core's history and files schemas get their units here.
"""

from __future__ import annotations

import pyarrow as pa

from deltaexplore.core.files import FILES_SCHEMA as CORE_FILES_SCHEMA
from deltaexplore.core.history import HISTORY_SCHEMA as CORE_HISTORY_SCHEMA
from deltaexplore.core.protocol.actions import STRING_MAP
from deltaexplore.inspect.formatting import UNIT_FROM_KEY, tag_schema, with_units

__all__ = [
    "ADVICE_CHECK_SCHEMA",
    "ADVICE_SCHEMA",
    "AT_VERSIONS_SCHEMA",
    "CATALOG_SCHEMA",
    "CLIENTS_SCHEMA",
    "CLIENT_FEATURES_SCHEMA",
    "CLUSTERING_SCHEMA",
    "COLUMN_MAPPING_SCHEMA",
    "COMMITS_SCHEMA",
    "COMMIT_INFOS_SCHEMA",
    "COMPATIBILITY_SCHEMA",
    "DELETED_ROWS_SCHEMA",
    "DIFF_FILES_SCHEMA",
    "DIFF_SCHEMA",
    "DOMAINS_SCHEMA",
    "DV_FILES_SCHEMA",
    "DV_SCHEMA",
    "EXPLAIN_SCHEMA",
    "FEATURES_SCHEMA",
    "FILES_SCHEMA",
    "FILE_SIZES_SCHEMA",
    "HISTORY_SCHEMA",
    "LAYOUT_SUMMARY_SCHEMA",
    "LOG_FILES_SCHEMA",
    "METRICS_SCHEMA",
    "PARTITIONS_SCHEMA",
    "PROTOCOL_VERSIONS_SCHEMA",
    "ROW_TRACKING_SCHEMA",
    "SCHEMAS",
    "TIMELINE_SCHEMA",
    "TS",
    "TXNS_SCHEMA",
    "VACUUM_SCHEMA",
    "VERSIONS_SCHEMA",
    "annotate_core",
    "diff_rows_schema",
    "layout_density_schema",
    "layout_schema",
]

#: every timestamp column
TS = pa.timestamp("ms", tz="UTC")

#: display unit and documentation of the core's history and files columns (the core schemas
#: carry neither: the core knows nothing of display; inspect adds them by field name)
_CORE_FIELDS: dict[str, tuple[str, str]] = {
    # history
    "version": ("version", "commit version"),
    "timestamp": ("timestamp", "commit time (in-commit timestamp aware)"),
    "operation": ("operation", "commitInfo.operation (WRITE, MERGE, OPTIMIZE, ...)"),
    "parameters": ("json", "commitInfo.operationParameters"),
    "metrics": ("json", "commitInfo.operationMetrics"),
    "user": ("text", "user name, else user id"),
    "user_id": ("text", "commitInfo.userId"),
    "user_name": ("text", "commitInfo.userName"),
    "engine": ("text", "commitInfo.engineInfo (or clientVersion)"),
    "read_version": ("version", "version the writer read"),
    "isolation_level": ("text", "commitInfo.isolationLevel"),
    "is_blind_append": ("bool", "commitInfo.isBlindAppend"),
    "user_metadata": ("text", "commitInfo.userMetadata"),
    "txn_id": ("text", "commitInfo.txnId"),
    "cluster_id": ("text", "commitInfo.clusterId"),
    "files_added": ("count", "add actions with dataChange"),
    "files_removed": ("count", "remove actions with dataChange"),
    "bytes_added": ("bytes", "bytes of the added files"),
    "bytes_removed": ("bytes", "bytes of the removed files"),
    "rows_added": ("count", "rows of the added files (stats)"),
    "rows_removed": ("count", "rows of the removed files (stats)"),
    "dv_files_added": ("count", "added files carrying a deletion vector"),
    "cdc_files": ("count", "change data files written"),
    "metadata_changed": ("bool", "the commit changed the metadata (schema, properties, ...)"),
    "protocol_changed": ("bool", "the commit changed the protocol"),
    "commit_info": ("json", "the whole commitInfo action (JSON text)"),
    # files
    "path": ("path", "data file path as written in the log"),
    "size": ("bytes", "bytes of the data file"),
    "modification_time": ("timestamp", "add.modificationTime"),
    "data_change": ("bool", "add.dataChange"),
    "partition_values": ("json", "partitionValues (logical column -> serialized value)"),
    "num_records": ("count", "numRecords from the stats (null without stats)"),
    "stats": ("json", "the add's statistics (JSON text)"),
    "storage_type": ("text", "deletion vector storage: u (file), i (inline), p (absolute path)"),
    "path_or_inline": ("path", "deletion vector file id, path or inline bitmap"),
    "offset": ("number", "offset of the deletion vector in its file"),
    "size_in_bytes": ("bytes", "serialized deletion vector size"),
    "cardinality": ("count", "rows deleted by the deletion vector"),
    "base_row_id": ("number", "first row id of the file (row tracking)"),
    "default_row_commit_version": ("version", "commit version of rows without a materialized one"),
    "tags": ("json", "add.tags"),
}


def _annotated(schema: pa.Schema, name: str | None = None) -> pa.Schema:
    """A core schema with the unit and doc of each known field added to its metadata."""
    fields = []
    for f in schema:
        known = _CORE_FIELDS.get(f.name)
        if known is not None:
            f = f.with_metadata({b"doc": known[1].encode(), **(f.metadata or {})})
        fields.append(f)
    units = {n: u for n, (u, _) in _CORE_FIELDS.items()}
    return with_units(pa.schema(fields, metadata=schema.metadata), units, name=name)


#: `history()`: the core's history table (one row per commit, newest first) with display units
HISTORY_SCHEMA = _annotated(CORE_HISTORY_SCHEMA, "history")


def annotate_core(table: pa.Table, name: str) -> pa.Table:
    """A table the core built (history) with the display units of its columns and tagged as
    the inspection table `name` (no copy: only the schema's metadata changes)."""
    return pa.Table.from_arrays(table.columns, schema=_annotated(table.schema, name))


def _s(name: str, *fields: tuple[str, pa.DataType, str, str | None]) -> pa.Schema:
    """The schema of the inspection table `name`: every field carries its documentation (`doc`)
    and display unit (`unit`, see `inspect.formatting`) as field metadata; the schema is tagged
    with `name` (`formatting.TABLE_KEY`) so a notebook can recognise and format it."""
    out = []
    for field_name, typ, doc, unit in fields:
        md = {"doc": doc} if unit is None else {"doc": doc, "unit": unit}
        out.append(pa.field(field_name, typ, metadata=md))
    return tag_schema(pa.schema(out), name)


#: `commits(start, end)`: one row per action of every commit (and, on request, checkpoint).
COMMITS_SCHEMA = _s(
    "commits",
    ("version", pa.int64(), "commit version (end version for a log compaction file)", "version"),
    ("timestamp", TS, "commit time (in-commit timestamp aware)", "timestamp"),
    ("source", pa.string(), "commit | staged | compaction | checkpoint | sidecar", "text"),
    ("source_file", pa.string(), "log file the action was read from, table-relative", "path"),
    ("line", pa.int64(), "0-based line (JSON) or row (parquet) within source_file", "number"),
    (
        "action",
        pa.string(),
        "action key: add, remove, cdc, metaData, protocol, commitInfo, txn, domainMetadata, ...",
        "operation",
    ),
    ("path", pa.string(), "file path of add/remove/cdc actions", "path"),
    ("data_change", pa.bool_(), "dataChange of file actions", "bool"),
    ("size", pa.int64(), "bytes of the data file (file actions)", "bytes"),
    ("num_records", pa.int64(), "numRecords from the stats (add/remove with stats)", "count"),
    ("partition_values", STRING_MAP, "partitionValues as written (physical names under column mapping)", "json"),
    ("deletion_vector", pa.string(), "deletion vector unique id (storageType + path/inline + @offset)", "text"),
    ("dv_cardinality", pa.int64(), "rows deleted by that deletion vector", "count"),
    ("modification_time", TS, "add.modificationTime", "timestamp"),
    ("deletion_timestamp", TS, "remove.deletionTimestamp", "timestamp"),
    ("operation", pa.string(), "commitInfo.operation (commitInfo rows only)", "operation"),
    ("raw", pa.string(), "the action as JSON text (for parquet rows: a JSON rendering, maps as key/value lists)", "json"),
)

#: `diff(v1, v2)`: one row per change between two versions, grouped by section.
DIFF_SCHEMA = _s(
    "diff",
    (
        "section",
        pa.string(),
        "files | schema | partitioning | properties | protocol | features | domain_metadata | txn | metadata | cdf",
        "text",
    ),
    (
        "change",
        pa.string(),
        "added | removed | dv_changed | net | changed | changed_between | renamed | widened | type_changed | nullability "
        "| available | unavailable",
        "operation",
    ),
    ("name", pa.string(), "what changed: column path, property key, feature, domain, app id ('files' for file totals)", "text"),
    ("before", pa.string(), "value at v1 (text)", "text"),
    ("after", pa.string(), "value at v2 (text)", "text"),
    ("files", pa.int64(), "files section: number of logical files", "count"),
    ("bytes", pa.int64(), "files section: bytes of those files (signed for 'net')", "bytes"),
    ("rows", pa.int64(), "files section: live rows affected (signed for 'net'); null when stats are missing", "count"),
    ("detail", pa.string(), "human-readable explanation", "text"),
)

#: `diff_files(v1, v2)`: one row per data file whose state differs between two versions.
DIFF_FILES_SCHEMA = _s(
    "diff_files",
    ("path", pa.string(), "data file path as written in the log", "path"),
    ("change", pa.string(), "added | removed | dv_changed (same file re-added with another deletion vector)", "operation"),
    ("partition", pa.string(), "partition key 'col=value/...' ('' when unpartitioned)", "text"),
    ("size", pa.int64(), "bytes of the data file", "bytes"),
    ("num_records", pa.int64(), "rows physically in the file (stats); null without stats", "count"),
    ("deleted_before", pa.int64(), "rows deleted by the file's DV at v1 (null: file absent at v1)", "count"),
    ("deleted_after", pa.int64(), "rows deleted by the file's DV at v2 (null: file absent at v2)", "count"),
    ("rows_delta", pa.int64(), "change of live rows contributed by this file (v2 - v1)", "count"),
    ("dv_before", pa.string(), "deletion vector unique id at v1", "text"),
    ("dv_after", pa.string(), "deletion vector unique id at v2", "text"),
    ("modification_time", TS, "file modification time from the add action", "timestamp"),
)

#: `files()`: the core files table plus derived columns.
FILES_SCHEMA = tag_schema(
    pa.schema(
        [
            *_annotated(CORE_FILES_SCHEMA),
            pa.field(
                "partition",
                pa.string(),
                metadata={"doc": "partition key 'col=value/...' ('' when unpartitioned)", "unit": "text"},
            ),
            pa.field("deleted_rows", pa.int64(), metadata={"doc": "rows deleted by the DV (0 without DV)", "unit": "count"}),
            pa.field(
                "live_rows", pa.int64(), metadata={"doc": "num_records - deleted_rows (null without stats)", "unit": "count"}
            ),
            pa.field("has_stats", pa.bool_(), metadata={"doc": "the add carries statistics", "unit": "bool"}),
            pa.field("is_small", pa.bool_(), metadata={"doc": "size < small_file_bytes", "unit": "bool"}),
        ]
    ),
    "files",
)

#: `partitions()`: one row per partition (one row for an unpartitioned table).
PARTITIONS_SCHEMA = _s(
    "partitions",
    ("partition", pa.string(), "partition key 'col=value/...' ('' when unpartitioned)", "text"),
    ("partition_values", STRING_MAP, "logical partition column -> serialized value", "json"),
    ("files", pa.int64(), "active files", "count"),
    ("bytes", pa.int64(), "bytes of those files", "bytes"),
    ("rows", pa.int64(), "rows in files with stats (see files_without_stats)", "count"),
    ("deleted_rows", pa.int64(), "rows deleted by deletion vectors", "count"),
    ("live_rows", pa.int64(), "rows - deleted_rows", "count"),
    ("files_without_stats", pa.int64(), "files whose row count is unknown", "count"),
    ("dv_files", pa.int64(), "files with a deletion vector", "count"),
    ("small_files", pa.int64(), "files smaller than small_file_bytes", "count"),
    ("small_bytes", pa.int64(), "bytes in small files", "bytes"),
    ("min_file_bytes", pa.int64(), "smallest file", "bytes"),
    ("max_file_bytes", pa.int64(), "largest file", "bytes"),
    ("mean_file_bytes", pa.float64(), "mean file size", "bytes"),
    ("median_file_bytes", pa.float64(), "median file size", "bytes"),
    ("bytes_share", pa.float64(), "share of the table's bytes", "ratio"),
    ("skew", pa.float64(), "bytes / median bytes over partitions (1.0 = typical; large = hot partition)", "number"),
)

#: `file_sizes()`: files per power-of-two size bin.
FILE_SIZES_SCHEMA = _s(
    "file_sizes",
    ("bin_start", pa.int64(), "smallest size of the bin (a power of two)", "bytes"),
    ("bin_end", pa.int64(), "sizes below this are in the bin (twice bin_start; the last bin ends at the largest long)", "bytes"),
    ("files", pa.int64(), "active files in the bin", "count"),
    ("bytes", pa.int64(), "bytes of those files", "bytes"),
    ("small_files", pa.int64(), "of those, files under the small-file threshold", "count"),
)


def layout_schema(value_type: pa.DataType) -> pa.Schema:
    """`layout(column)`: per-file ranges of one column; `min`/`max` have the column's type."""
    return _s(
        "layout",
        ("path", pa.string(), "data file path", "path"),
        ("partition", pa.string(), "partition key ('' when unpartitioned)", "text"),
        ("size", pa.int64(), "bytes", "bytes"),
        ("num_records", pa.int64(), "rows in the file (stats)", "count"),
        ("null_count", pa.int64(), "nulls of the column in the file", "count"),
        ("min", value_type, "minimum of the column in the file (stats; partition value for partition columns)", None),
        ("max", value_type, "maximum of the column in the file", None),
        ("has_stats", pa.bool_(), "min and max are both known", "bool"),
        ("truncated", pa.bool_(), "string bounds look truncated (32+ characters or a tie-breaker suffix)", "bool"),
        ("rank", pa.int64(), "position of the file when sorted by (min, max); null without stats", "number"),
        ("overlapping_files", pa.int64(), "other files whose [min, max] intersects this file's", "count"),
        ("overlap_depth", pa.int64(), "most files (this one included) containing any single value of this file's range", "count"),
    )


#: `layout_summary(columns)`: per column, stats coverage, data-skipping eligibility, clustering.
LAYOUT_SUMMARY_SCHEMA = _s(
    "layout_summary",
    ("column", pa.string(), "logical column path (dotted for nested fields)", "text"),
    ("physical_name", pa.string(), "physical path in data files and stats", "text"),
    ("type", pa.string(), "Delta type", "text"),
    ("position", pa.int64(), "0-based leaf position in the schema (what dataSkippingNumIndexedCols counts)", "number"),
    ("is_partition", pa.bool_(), "partition column (pruned exactly, no stats needed)", "bool"),
    ("is_clustering", pa.bool_(), "listed as a liquid clustering column", "bool"),
    ("eligible_type", pa.bool_(), "the type can carry min/max statistics", "bool"),
    ("indexed", pa.bool_(), "writers collect stats for it (dataSkippingNumIndexedCols / dataSkippingStatsColumns)", "bool"),
    ("files", pa.int64(), "active files", "count"),
    ("files_with_min_max", pa.int64(), "files with both bounds", "count"),
    ("files_with_null_count", pa.int64(), "files with a null count", "count"),
    ("coverage", pa.float64(), "files_with_min_max / files", "ratio"),
    ("truncated_files", pa.int64(), "files whose string bounds look truncated", "count"),
    ("min", pa.string(), "smallest min over files (text)", "text"),
    ("max", pa.string(), "largest max over files (text)", "text"),
    ("avg_depth", pa.float64(), "mean overlap_depth over files with stats", "number"),
    ("max_depth", pa.int64(), "largest overlap_depth: worst-case files read by a point query", "count"),
    (
        "clustering_quality",
        pa.float64(),
        "1 - (avg_depth - 1) / (files_with_min_max - 1): 1 = disjoint ranges, 0 = all overlap",
        "ratio",
    ),
    ("skipping", pa.string(), "partition | stats | partial | none", "text"),
    ("reason", pa.string(), "why skipping is limited, when it is", "text"),
)

#: `explain(predicate)`: one row per active file: read or skipped, and why.
EXPLAIN_SCHEMA = _s(
    "explain",
    ("path", pa.string(), "data file path", "path"),
    ("partition", pa.string(), "partition key ('' when unpartitioned)", "text"),
    ("size", pa.int64(), "bytes", "bytes"),
    ("num_records", pa.int64(), "rows (stats)", "count"),
    ("stage", pa.string(), "partition_pruned | stats_pruned | read", "operation"),
    ("selected", pa.bool_(), "the scan reads this file", "bool"),
    ("reason", pa.string(), "the part of the predicate that excluded the file, or why it must be read", "text"),
    ("missing_stats", pa.bool_(), "the file lacks statistics for a predicate column (cannot be skipped by stats)", "bool"),
    (
        "ignored_stats",
        pa.string(),
        "predicate columns whose statistics and partition values skip no file, and why (a collation whose "
        "statistics this reader cannot match, an interval column)",
        "text",
    ),
)

#: `deletion_vectors()`: one row per active file that has a deletion vector.
DV_SCHEMA = _s(
    "deletion_vectors",
    ("path", pa.string(), "data file path", "path"),
    ("partition", pa.string(), "partition key", "text"),
    ("num_records", pa.int64(), "rows physically in the file", "count"),
    ("cardinality", pa.int64(), "rows deleted by the DV", "count"),
    ("live_rows", pa.int64(), "num_records - cardinality", "count"),
    ("deleted_ratio", pa.float64(), "cardinality / num_records", "ratio"),
    ("storage", pa.string(), "inline | file (table-relative uuid) | absolute", "text"),
    ("dv_path", pa.string(), "DV file path (null when inline)", "path"),
    ("offset", pa.int32(), "offset of the DV in its file", "number"),
    ("dv_bytes", pa.int32(), "serialized bitmap size (sizeInBytes)", "bytes"),
    ("dv_id", pa.string(), "deletion vector unique id", "text"),
    ("shared_by", pa.int64(), "data files whose DVs live in the same DV file", "count"),
    ("past_threshold", pa.bool_(), "deleted_ratio >= purge_threshold (OPTIMIZE/REORG PURGE would rewrite it)", "bool"),
    ("size", pa.int64(), "bytes of the data file", "bytes"),
)

#: `dv_files()`: one row per deletion vector file (inline DVs grouped under storage 'inline').
DV_FILES_SCHEMA = _s(
    "dv_files",
    ("dv_path", pa.string(), "DV file path (null for the inline group)", "path"),
    ("storage", pa.string(), "inline | file | absolute", "text"),
    ("data_files", pa.int64(), "data files with a DV in it", "count"),
    ("cardinality", pa.int64(), "deleted rows it holds", "count"),
    ("dv_bytes", pa.int64(), "sum of sizeInBytes of its DVs", "bytes"),
    ("file_bytes", pa.int64(), "size of the DV file on storage (check_files=True), else null", "bytes"),
    ("exists", pa.bool_(), "the DV file exists (check_files=True), else null", "bool"),
)

#: `deleted_rows(path)`: deleted row positions of one file.
DELETED_ROWS_SCHEMA = _s(
    "deleted_rows",
    ("path", pa.string(), "data file path", "path"),
    ("row_index", pa.int64(), "0-based position of a deleted row in the data file", "count"),
)

#: `log_health()`, `overview()`: one row per metric or check.
METRICS_SCHEMA = _s(
    "metrics",
    ("section", pa.string(), "group of the metric (log, checkpoints, files, tombstones, crc, ...)", "text"),
    ("metric", pa.string(), "metric or check name", "text"),
    ("value", pa.string(), "value as text", "text"),
    ("number", pa.float64(), "numeric value when there is one", "number"),
    (
        "unit",
        pa.string(),
        "unit of number: bytes, ratio, version, timestamp (epoch ms), ms (a duration), or the things counted (files, rows, ...)",
        "text",
    ),
    ("status", pa.string(), "ok | info | warn | error", "status"),
    ("detail", pa.string(), "explanation and advice", "text"),
)
#: `number` is shown in the unit its row's `unit` column names (`formatting.metric_unit`)
METRICS_SCHEMA = METRICS_SCHEMA.set(
    METRICS_SCHEMA.get_field_index("number"),
    METRICS_SCHEMA.field("number").with_metadata({**(METRICS_SCHEMA.field("number").metadata or {}), UNIT_FROM_KEY: b"unit"}),
)

#: `log_files()`: one row per version with what the log holds for it.
LOG_FILES_SCHEMA = _s(
    "log_files",
    ("version", pa.int64(), "version", "version"),
    ("file_time", TS, "modification time of the commit file (or checkpoint)", "timestamp"),
    ("commit", pa.string(), "published | ratified | compacted | missing", "text"),
    ("commit_bytes", pa.int64(), "bytes of the commit file", "bytes"),
    ("checkpoint_kind", pa.string(), "classic | multipart | v2-json | v2-parquet (null: none)", "text"),
    ("checkpoint_bytes", pa.int64(), "bytes of the checkpoint (all parts; sidecars not included)", "bytes"),
    ("checkpoint_parts", pa.int64(), "part files of the checkpoint", "count"),
    ("has_crc", pa.bool_(), "a .crc file exists", "bool"),
    ("crc_bytes", pa.int64(), "bytes of the .crc file", "bytes"),
    ("commits_since_checkpoint", pa.int64(), "commits a reader replays after the newest checkpoint <= version", "count"),
    ("replay_json_bytes", pa.int64(), "bytes of JSON commits a reader reads to build this version", "bytes"),
)

#: `reconstructable_versions()`: one row per version the log knows about.
VERSIONS_SCHEMA = _s(
    "reconstructable_versions",
    ("version", pa.int64(), "version", "version"),
    ("file_time", TS, "modification time of its commit file (or checkpoint)", "timestamp"),
    ("commit_present", pa.bool_(), "its commit file is in the log", "bool"),
    ("checkpoint", pa.bool_(), "a complete checkpoint exists at this version", "bool"),
    ("log_reconstructable", pa.bool_(), "a checkpoint <= version and every commit after it are present", "bool"),
    ("files", pa.int64(), "active files at this version (null when not reconstructable)", "count"),
    ("missing_files", pa.int64(), "of those, data files absent from storage (null unless check_data)", "count"),
    ("readable", pa.bool_(), "log reconstructable and (if checked) no data file missing", "bool"),
    ("within_log_retention", pa.bool_(), "commit younger than delta.logRetentionDuration", "bool"),
    ("readable_after_vacuum", pa.bool_(), "still readable after vacuum_preview(retention) (null unless asked)", "bool"),
    ("reason", pa.string(), "why it is not readable", "text"),
)

#: `vacuum_preview(retention)`: one row per file VACUUM would delete.
VACUUM_SCHEMA = _s(
    "vacuum_preview",
    ("path", pa.string(), "table-relative path of the file", "path"),
    ("size", pa.int64(), "bytes freed", "bytes"),
    ("reason", pa.string(), "expired_tombstone | unreferenced", "text"),
    ("deletion_time", TS, "remove.deletionTimestamp (tombstones)", "timestamp"),
    ("modification_time", TS, "file modification time on storage", "timestamp"),
    ("first_version_needing", pa.int64(), "oldest retained version whose state includes the file (null: none)", "version"),
    ("last_version_needing", pa.int64(), "newest version whose state includes the file (null: none)", "version"),
)

#: `features()`: one row per feature the protocol lists or implies, or that this library knows.
FEATURES_SCHEMA = _s(
    "features",
    ("feature", pa.string(), "feature name as in the protocol", "text"),
    ("kind", pa.string(), "reader-writer | writer | unknown", "text"),
    ("supported", pa.bool_(), "listed in (or implied by) the table's protocol", "bool"),
    ("in_reader_features", pa.bool_(), "needed by readers", "bool"),
    ("in_writer_features", pa.bool_(), "needed by writers", "bool"),
    ("legacy", pa.bool_(), "implied by legacy protocol versions (reader < 3 / writer < 7)", "bool"),
    ("active", pa.bool_(), "actually in effect (property set, schema uses it, domain present, ...)", "bool"),
    ("activation", pa.string(), "what makes it active (or why not)", "text"),
    ("property", pa.string(), "table property controlling it", "text"),
    ("property_value", pa.string(), "its value in this table", "text"),
    ("known", pa.bool_(), "deltaexplore knows the feature", "bool"),
    ("deltaexplore_read", pa.bool_(), "deltaexplore reads tables with it", "bool"),
    ("deltaexplore_write", pa.bool_(), "deltaexplore writes tables with it", "bool"),
    ("description", pa.string(), "what it is", "text"),
    ("handling", pa.string(), "what deltaexplore does with a table that has it", "text"),
    ("rfc", pa.string(), "where a feature still in flight is specified (delta-io/delta protocol_rfcs/)", "text"),
)

#: `features(all_versions=True)`: the protocol and feature set of every retained version.
PROTOCOL_VERSIONS_SCHEMA = _s(
    "protocol_versions",
    ("version", pa.int64(), "commit version", "version"),
    ("timestamp", TS, "commit time (in-commit timestamp aware)", "timestamp"),
    (
        "change",
        pa.string(),
        "created | first retained | upgraded | downgraded | changed | restated (a protocol action "
        "that changes nothing); null: no protocol action in this commit",
        "operation",
    ),
    ("min_reader_version", pa.int32(), "minReaderVersion", "number"),
    ("min_writer_version", pa.int32(), "minWriterVersion", "number"),
    ("reader_features", pa.list_(pa.string()), "reader features in force (legacy versions translated)", "text"),
    ("writer_features", pa.list_(pa.string()), "writer features in force (legacy versions translated)", "text"),
    ("added", pa.list_(pa.string()), "features this version's protocol adds", "text"),
    ("removed", pa.list_(pa.string()), "features this version's protocol drops (checkpointProtection allows it)", "text"),
    ("readable", pa.bool_(), "deltaexplore reads this version (its own protocol decides)", "bool"),
    ("blockers", pa.list_(pa.string()), "why not: reader versions or features deltaexplore lacks", "text"),
)

#: declared client capabilities (`clients.CLIENTS`).
CLIENTS_SCHEMA = _s(
    "clients",
    ("client", pa.string(), "client family", "text"),
    ("version", pa.string(), "client version label", "text"),
    ("max_reader_version", pa.int32(), "highest reader protocol version", "number"),
    ("max_writer_version", pa.int32(), "highest writer protocol version", "number"),
    ("writes", pa.bool_(), "the client writes Delta tables at all", "bool"),
    ("confidence", pa.string(), "verified (tested here) | documented | approximate", "text"),
    ("notes", pa.string(), "limits and sources", "text"),
)

#: declared client feature support (`clients.CLIENT_FEATURES`), long format.
CLIENT_FEATURES_SCHEMA = _s(
    "client_features",
    ("client", pa.string(), "client family", "text"),
    ("version", pa.string(), "client version label", "text"),
    ("feature", pa.string(), "feature name", "text"),
    ("read", pa.bool_(), "reads tables with the feature", "bool"),
    ("write", pa.bool_(), "writes tables with the feature", "bool"),
    ("read_evidence", pa.string(), "checked (a test here reads tables with the feature with the real client) | declared", "text"),
    (
        "write_evidence",
        pa.string(),
        "checked (a test here writes the feature with the client, or its refusal) | declared",
        "text",
    ),
    (
        "written_reads",
        pa.string(),
        "checked writes: what other clients do with a table this client wrote with the feature (same rows, or the error "
        "kind), or what this client's writes to a table with it did; declared cells: why they are not checked",
        "text",
    ),
)

#: `compatibility()`: which clients can read and write this table, and why not.
COMPATIBILITY_SCHEMA = _s(
    "compatibility",
    ("client", pa.string(), "client family", "text"),
    ("version", pa.string(), "client version label", "text"),
    ("can_read", pa.bool_(), "the client can read the table", "bool"),
    ("can_write", pa.bool_(), "the client can write the table", "bool"),
    ("read_blockers", pa.list_(pa.string()), "features or versions that stop it reading", "text"),
    ("write_blockers", pa.list_(pa.string()), "features or versions that stop it writing", "text"),
    ("confidence", pa.string(), "verified | documented | approximate", "text"),
    ("notes", pa.string(), "client limits", "text"),
)

#: `column_mapping()`: every field (nested included): logical <-> physical <-> field id.
COLUMN_MAPPING_SCHEMA = _s(
    "column_mapping",
    ("column", pa.string(), "logical path (dotted; array elements as 'element', map parts as 'key'/'value')", "text"),
    ("physical_path", pa.string(), "physical path used in data files and stats", "text"),
    ("field_id", pa.int64(), "delta.columnMapping.id (parquet field id in id mode)", "number"),
    ("type", pa.string(), "Delta type", "text"),
    ("nullable", pa.bool_(), "nullable", "bool"),
    ("depth", pa.int32(), "0 for top-level columns", "number"),
    ("is_partition", pa.bool_(), "partition column", "bool"),
    ("type_changes", pa.string(), "delta.typeChanges history (JSON) for widened columns", "json"),
    ("collation", pa.string(), "collation of a string (__COLLATIONS), none for UTF-8 binary order", "text"),
    ("metadata", pa.string(), "other field metadata (JSON): comments, generation expressions, identity, defaults", "json"),
)

#: `row_tracking()`: one row per active file.
ROW_TRACKING_SCHEMA = _s(
    "row_tracking",
    ("path", pa.string(), "data file path", "path"),
    ("num_records", pa.int64(), "rows in the file", "count"),
    ("base_row_id", pa.int64(), "first row id of the file (fresh rows)", "number"),
    ("last_row_id", pa.int64(), "base_row_id + num_records - 1", "number"),
    ("default_row_commit_version", pa.int64(), "commit version of rows without a materialized one", "version"),
    ("overlaps", pa.bool_(), "its row id range overlaps another file's (a protocol violation)", "bool"),
    ("above_high_water_mark", pa.bool_(), "last_row_id > rowIdHighWaterMark (a protocol violation)", "bool"),
)

#: `domain_metadata()`: one row per domain.
DOMAINS_SCHEMA = _s(
    "domain_metadata",
    ("domain", pa.string(), "domain name", "text"),
    ("configuration", pa.string(), "configuration (JSON text)", "json"),
    ("system", pa.bool_(), "reserved 'delta.*' domain", "bool"),
    ("meaning", pa.string(), "what the domain is for, when known", "text"),
)

#: `clustering()`: one row per liquid clustering column.
CLUSTERING_SCHEMA = _s(
    "clustering",
    ("position", pa.int32(), "order of the clustering column", "number"),
    ("column", pa.string(), "logical column path", "text"),
    ("physical_path", pa.string(), "physical path as stored in delta.clustering", "text"),
    ("type", pa.string(), "Delta type", "text"),
    ("coverage", pa.float64(), "share of files with min/max for it", "ratio"),
    ("avg_depth", pa.float64(), "mean overlap depth", "number"),
    ("max_depth", pa.int64(), "worst-case files per point query", "count"),
    ("clustering_quality", pa.float64(), "1 = disjoint file ranges, 0 = every file overlaps every other", "ratio"),
)

#: `transactions()`: one row per application transaction id (txn action).
TXNS_SCHEMA = _s(
    "transactions",
    ("app_id", pa.string(), "application id", "text"),
    ("version", pa.int64(), "latest version the application committed", "version"),
    ("last_updated", TS, "txn.lastUpdated", "timestamp"),
    ("expired", pa.bool_(), "older than delta.setTransactionRetentionDuration", "bool"),
)

#: `catalog_status()`: one row per version of a (possibly) catalog-managed table.
CATALOG_SCHEMA = _s(
    "catalog_status",
    ("version", pa.int64(), "version", "version"),
    ("published", pa.bool_(), "the commit is published in _delta_log/", "bool"),
    ("ratified", pa.bool_(), "the catalog ratified it (null: no catalog client to ask)", "bool"),
    ("staged_files", pa.int64(), "files in _delta_log/_staged_commits/ for this version", "count"),
    ("status", pa.string(), "published | ratified-unpublished | staged-unratified | staged (catalog unknown)", "operation"),
    ("path", pa.string(), "commit file (published, else the ratified staged file)", "path"),
)

#: `commit_infos(start, end)`: one row per commit, from its commitInfo only (newest first).
COMMIT_INFOS_SCHEMA = _s(
    "commit_infos",
    ("version", pa.int64(), "commit version", "version"),
    ("timestamp", TS, "commit time (in-commit timestamp aware, as history())", "timestamp"),
    ("operation", pa.string(), "commitInfo.operation (WRITE, MERGE, OPTIMIZE, ...)", "operation"),
    ("parameters", STRING_MAP, "commitInfo.operationParameters (values as text)", "json"),
    ("metrics", STRING_MAP, "commitInfo.operationMetrics as the writer recorded them", "json"),
    ("user_id", pa.string(), "commitInfo.userId", "text"),
    ("user_name", pa.string(), "commitInfo.userName", "text"),
    ("engine", pa.string(), "commitInfo.engineInfo (else clientVersion)", "text"),
    ("isolation_level", pa.string(), "commitInfo.isolationLevel", "text"),
    ("is_blind_append", pa.bool_(), "commitInfo.isBlindAppend", "bool"),
    ("read_version", pa.int64(), "commitInfo.readVersion: the version the writer read", "version"),
    ("user_metadata", pa.string(), "commitInfo.userMetadata (set by the writer's user)", "text"),
    ("txn_id", pa.string(), "commitInfo.txnId", "text"),
    ("cluster_id", pa.string(), "commitInfo.clusterId", "text"),
    ("commit_info", pa.string(), "the whole commitInfo as JSON text (null: the commit has none)", "json"),
    ("commit_bytes", pa.int64(), "size of the commit file", "bytes"),
)


#: `advise()`: ranked maintenance recommendations with their predicted effect (from the log).
ADVICE_SCHEMA = _s(
    "advice",
    ("rank", pa.int64(), "1 = do first (highest score)", "number"),
    ("kind", pa.string(), "compaction | zorder | dv_purge | checkpoint | log_cleanup | vacuum | stats_columns", "operation"),
    ("target", pa.string(), "what it applies to: partitions, columns, files", "text"),
    ("reason", pa.string(), "why, in numbers measured on this version", "text"),
    ("action", pa.string(), "the call that does it (a maintenance operation or a property)", "text"),
    ("operation", pa.string(), "the explorer's maintenance operation that runs it (null: none)", "operation"),
    (
        "parameters",
        pa.string(),
        "its parameters as JSON: `widgets.maintenance.run(operation, table, progress, **parameters)`",
        "json",
    ),
    ("score", pa.float64(), "expected benefit in [0, 1] (ranks the advice)", "ratio"),
    ("files_before", pa.int64(), "active files now", "count"),
    ("files_after", pa.int64(), "active files predicted after", "count"),
    ("bytes_before", pa.int64(), "bytes now (data files; log files for log advice)", "bytes"),
    ("bytes_after", pa.int64(), "bytes predicted after", "bytes"),
    ("bytes_rewritten", pa.int64(), "the cost: bytes read and written again", "bytes"),
    ("columns", pa.list_(pa.string()), "columns whose point queries are measured", "json"),
    ("mean_depth_before", pa.float64(), "mean overlap depth of the columns' files now (layout_summary avg_depth)", "number"),
    ("mean_depth_after", pa.float64(), "mean overlap depth predicted after", "number"),
    ("max_depth_before", pa.int64(), "max overlap depth now", "count"),
    ("max_depth_after", pa.int64(), "max overlap depth predicted after", "count"),
    ("point_files_before", pa.float64(), "files a point query on the columns reads now (mean over the data)", "number"),
    ("point_files_after", pa.float64(), "files it reads after (predicted)", "number"),
    ("retention_hours", pa.float64(), "retention it needs (VACUUM, log cleanup): versions older lose time travel", "number"),
)

#: `advise(check=True)`: the predictions made before a maintenance commit against what the
#: version after it measures.
ADVICE_CHECK_SCHEMA = _s(
    "advice_check",
    ("kind", pa.string(), "the recommendation checked", "operation"),
    ("version_before", pa.int64(), "version the prediction was made at", "version"),
    ("version_after", pa.int64(), "version measured (after the maintenance commit)", "version"),
    ("metric", pa.string(), "files | bytes | mean_depth | max_depth | point_files", "text"),
    ("predicted", pa.float64(), "the prediction", "number"),
    ("measured", pa.float64(), "what the version after measures", "number"),
    ("error", pa.float64(), "(measured - predicted) / max(predicted, 1)", "ratio"),
    ("tolerance", pa.float64(), "the stated tolerance of this metric (relative)", "ratio"),
    (
        "within",
        pa.bool_(),
        "abs(measured - predicted) <= tolerance * max(predicted, 1), or within one file / one depth step",
        "bool",
    ),
)


def layout_density_schema(value_type: pa.DataType) -> pa.Schema:
    """`layout_density(column)`: files per range of values; `lo`/`hi` have the column's type."""
    return _s(
        "layout_density",
        ("bin", pa.int64(), "bin number, 0-based, in value order", "number"),
        ("lo", value_type, "smallest value of the bin", None),
        ("hi", value_type, "largest value of the bin", None),
        ("position_lo", pa.float64(), "the bin's start on a numeric axis (the value; its rank for strings)", "number"),
        ("position_hi", pa.float64(), "the bin's end on that axis", "number"),
        ("files", pa.int64(), "files whose [min, max] intersects the bin", "count"),
        ("max_depth", pa.int64(), "most files containing one single value of the bin: what a point query there reads", "count"),
        ("starts", pa.int64(), "files whose min falls in the bin", "count"),
    )


def diff_rows_schema(fields: list[pa.Field], key: list[str] | None) -> pa.Schema:
    """`diff_rows(v1, v2, key=...)`: the net row changes; `fields` are the compared columns
    (the newer version's). Unkeyed: `_change`, `_count` and the columns; keyed: `_change`,
    `_changed_columns`, the key columns, then `before.<c>` / `after.<c>` for every other one.
    What was read is in the schema metadata (`deltaexplore.diff_rows.files_read`, `bytes_read`)."""
    head: list[tuple[str, pa.DataType, str, str | None]] = [
        ("_change", pa.string(), "insert | delete (| update with a key): how the row differs from v1 to v2", "operation")
    ]
    if not key:
        head.append(("_count", pa.int64(), "copies of this row inserted or deleted (rows compare as a multiset)", "count"))
        base = _s("diff_rows", *head)
        return tag_schema(pa.schema([*base, *(pa.field(f.name, f.type) for f in fields)]), "diff_rows")
    head.append(("_changed_columns", pa.list_(pa.string()), "columns whose value differs (updates only)", "json"))
    base = _s("diff_rows", *head)
    keyed = [pa.field(f.name, f.type, metadata={"doc": "key column"}) for f in fields if f.name in key]
    side = []
    for f in fields:
        if f.name in key:
            continue
        side.append(pa.field(f"before.{f.name}", f.type, metadata={"doc": f"{f.name} at v1 (null for an insert)"}))
        side.append(pa.field(f"after.{f.name}", f.type, metadata={"doc": f"{f.name} at v2 (null for a delete)"}))
    return tag_schema(pa.schema([*base, *keyed, *side]), "diff_rows")


#: name -> schema of every fixed-schema inspection function
#: `timeline(start, end)`: one row per version, from one replay of the log.
AT_VERSIONS_SCHEMA = _s(
    "at_versions",
    ("version", pa.int64(), "version", "version"),
    ("timestamp", TS, "commit time (in-commit timestamp aware)", "timestamp"),
    ("expression", pa.string(), "the expression as written", "text"),
    ("value", pa.float64(), "the aggregate at this version (null: SQL gave null)", "number"),
    ("rows", pa.int64(), "rows the filter kept (the rows the aggregate saw)", "count"),
    ("files_read", pa.int64(), "files read after skipping by partition values and statistics", "count"),
)

TIMELINE_SCHEMA = _s(
    "timeline",
    ("version", pa.int64(), "version", "version"),
    ("timestamp", TS, "commit time (in-commit timestamp aware)", "timestamp"),
    ("files", pa.int64(), "active files", "count"),
    ("bytes", pa.int64(), "bytes of the active files", "bytes"),
    (
        "rows",
        pa.int64(),
        "live rows: numRecords minus rows deleted by DVs (a file without numRecords counts 0)",
        "count",
    ),
    ("small_files", pa.int64(), "active files under the small-file threshold (as files())", "count"),
    ("small_file_share", pa.float64(), "small_files / files (null without files)", "ratio"),
    ("dv_files", pa.int64(), "active files with a deletion vector", "count"),
    ("dv_deleted_rows", pa.int64(), "rows deleted by deletion vectors", "count"),
    ("dv_deleted_ratio", pa.float64(), "dv_deleted_rows / numRecords of the active files (null without rows)", "ratio"),
    (
        "tombstones",
        pa.int64(),
        "remove actions still in the state (as a read of that version sees them)",
        "count",
    ),
    ("partitions", pa.int64(), "partitions with at least one file (null: unpartitioned)", "count"),
    (
        "overlap_depth_mean",
        pa.float64(),
        "mean overlap depth of the active files' ranges of the chosen column (layout's overlap_depth; null without a column)",
        "number",
    ),
    ("overlap_depth_max", pa.int64(), "largest overlap depth of the chosen column (null without a column)", "count"),
    ("schema_changed", pa.bool_(), "a metaData action of this version changed the schema", "bool"),
    ("protocol_changed", pa.bool_(), "a protocol action of this version changed the protocol", "bool"),
)


SCHEMAS: dict[str, pa.Schema] = {
    "history": HISTORY_SCHEMA,
    "timeline": TIMELINE_SCHEMA,
    "at_versions": AT_VERSIONS_SCHEMA,
    "commits": COMMITS_SCHEMA,
    "diff": DIFF_SCHEMA,
    "diff_files": DIFF_FILES_SCHEMA,
    "files": FILES_SCHEMA,
    "partitions": PARTITIONS_SCHEMA,
    "file_sizes": FILE_SIZES_SCHEMA,
    "layout_summary": LAYOUT_SUMMARY_SCHEMA,
    "explain": EXPLAIN_SCHEMA,
    "deletion_vectors": DV_SCHEMA,
    "dv_files": DV_FILES_SCHEMA,
    "deleted_rows": DELETED_ROWS_SCHEMA,
    "log_health": METRICS_SCHEMA,
    "overview": METRICS_SCHEMA,
    "log_files": LOG_FILES_SCHEMA,
    "reconstructable_versions": VERSIONS_SCHEMA,
    "vacuum_preview": VACUUM_SCHEMA,
    "features": FEATURES_SCHEMA,
    "protocol_versions": PROTOCOL_VERSIONS_SCHEMA,
    "compatibility": COMPATIBILITY_SCHEMA,
    "column_mapping": COLUMN_MAPPING_SCHEMA,
    "row_tracking": ROW_TRACKING_SCHEMA,
    "domain_metadata": DOMAINS_SCHEMA,
    "clustering": CLUSTERING_SCHEMA,
    "transactions": TXNS_SCHEMA,
    "catalog_status": CATALOG_SCHEMA,
    "commit_infos": COMMIT_INFOS_SCHEMA,
    "advise": ADVICE_SCHEMA,
}
