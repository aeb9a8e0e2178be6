"""What other Delta clients can read and write: declared data, not scattered `if`s.

`CLIENTS` lists client versions with their highest protocol versions; `FEATURE_SINCE` says from
which version of a client family each feature is read / written. `client_features()` expands
them into the long `CLIENT_FEATURES_SCHEMA` table the compatibility check joins against.

Sources and confidence:

- Delta Spark: the "features that require client upgrades" table of docs.delta.io
  (versioning page) and release notes (documented).
- delta-rs (Python `deltalake` 1.x): reads checked here with deltalake 1.6 against the
  conformance corpus and tables this library wrote (`QueryBuilder`/DataFusion reads column
  mapping, deletion vectors, timestampNtz, v2 checkpoints, row tracking and variantType, but not
  type widening, variantShredding, vacuumProtocolCheck, catalog-managed tables or geospatial;
  `to_pyarrow_table()` also refuses column mapping, deletion vectors and v2 checkpoints); writes
  (append, DELETE, UPDATE, MERGE, OPTIMIZE, checkpoint) checked here on the table of every
  feature (`CLIENT_WRITES`).
- DuckDB `delta` extension 1.5 (delta-kernel-rs): reads checked here against the corpus and the
  tables this library wrote (column mapping, deletion vectors, timestampNtz, type widening, v2
  checkpoints, row tracking, vacuumProtocolCheck, variant and shredded variant read; geospatial,
  `void` columns and catalog-managed tables do not; its Python client has no Arrow form of
  VARIANT: the tests read variants as JSON text); writes (INSERT into an ATTACHed table;
  DELETE and UPDATE fail) checked here on the table of every feature (`CLIENT_WRITES`).
- deltaexplore: from `deltaexplore.core.protocol.features.FEATURES` (read/write flags), every
  cell checked on one table per feature.
- deltaexplore on Spark (`dx.spark.read`, writes through `deltaexplore.spark`): checked here on
  the same tables (`SPARK_READS`, `SPARK_WRITES`).

Each cell is marked `checked` where a test here reads (`CHECKED_READS`) or writes
(`CHECKED_WRITES`) tables with the feature using the real client, else `declared`. Write cells
of this library are checked by writing one table per feature with its core writer and reading
it with every client (`WRITTEN_READS`), or by its refusal to write a table listing a feature it
does not write (`REFUSED_WRITES`); `written_reads` says what the other clients do with what it
wrote.
"""

from __future__ import annotations

import pyarrow as pa

from deltaexplore.core.protocol.features import FEATURES, MAX_READER_VERSION, MAX_WRITER_VERSION
from deltaexplore.inspect.results import conform
from deltaexplore.inspect.schemas import CLIENT_FEATURES_SCHEMA, CLIENTS_SCHEMA

__all__ = [
    "CHECKED_READS",
    "CHECKED_WRITES",
    "CLIENTS",
    "CLIENT_WRITES",
    "CLIENT_WRITTEN_READS",
    "CORPUS_CHECKED_READS",
    "DELTA_RS_CREATES",
    "DELTA_RS_CREATES_UNLISTED",
    "FEATURE_SINCE",
    "LEGACY_READS",
    "REFUSED_WRITES",
    "SPARK_READS",
    "SPARK_WRITES",
    "STRICT_PROTOCOL_CLIENTS",
    "WRITING_CLIENTS",
    "WRITTEN_CHECKED_READS",
    "WRITTEN_READS",
    "client_features",
    "clients_table",
]

DELTAEXPLORE = "deltaexplore"
SPARK = "Delta Spark"
DELTA_RS = "delta-rs (DataFusion)"
DELTA_RS_PYARROW = "delta-rs (to_pyarrow)"
DUCKDB = "DuckDB delta"
DX_SPARK = "deltaexplore on Spark"

# (client, version, max reader, max writer, writes, confidence, notes)
CLIENTS: list[tuple[str, str, int, int, bool, str, str]] = [
    (DELTAEXPLORE, "this", MAX_READER_VERSION, MAX_WRITER_VERSION, True, "verified", "local writes for maintenance operations"),
    (SPARK, "2.2", 2, 6, True, "documented", "before table features (reader 3 / writer 7)"),
    (SPARK, "2.4", 3, 7, True, "documented", "table features, deletion vectors (scan + DELETE)"),
    (SPARK, "3.1", 3, 7, True, "documented", "v2 checkpoints, domain metadata, clustering, icebergCompatV2"),
    (SPARK, "3.2", 3, 7, True, "documented", "row tracking, type widening preview, variant preview (Spark 4 builds)"),
    (SPARK, "3.3", 3, 7, True, "documented", "identity columns, in-commit timestamps"),
    (SPARK, "4.0", 3, 7, True, "documented", "type widening, variant, collations, catalog-managed preview"),
    (DELTA_RS, "1.x", 3, 7, True, "verified", "QueryBuilder/DataFusion reads; write_deltalake, merge, optimize"),
    (DELTA_RS_PYARROW, "1.x", 3, 7, False, "verified", "DeltaTable.to_pyarrow_table()/to_pyarrow_dataset() reads"),
    (
        DUCKDB,
        "1.5",
        3,
        7,
        True,
        "verified",
        "delta_scan via delta-kernel-rs; writes: INSERT into an ATTACHed table only (reads and writes checked here)",
    ),
    (
        DX_SPARK,
        "this",
        MAX_READER_VERSION,
        MAX_WRITER_VERSION,
        True,
        "verified",
        "dx.spark.read and deltaexplore.spark writes on plain PySpark 4 (every cell checked here); interval columns "
        "read as Spark's ANSI intervals (PySpark cannot hand year-month ones to Python: cast them in Spark)",
    ),
]

#: clients that reject a table-features protocol (reader 3) listing a reader-writer feature in
#: writerFeatures only (delta-kernel-rs: "Writer features must be Writer-only or also listed in
#: reader features"), checked here with the corpus' dat/iceberg_compat_v1
STRICT_PROTOCOL_CLIENTS = frozenset({DUCKDB})

#: features a client reads in their legacy form (implied by reader version 2) although it refuses
#: a table listing them in readerFeatures: delta-rs' to_pyarrow reads reader-2 column mapping
#: (logical names) and refuses reader-3 tables listing columnMapping (checked here on the corpus)
LEGACY_READS: dict[str, frozenset[str]] = {DELTA_RS_PYARROW: frozenset({"columnMapping"})}

#: The read cells checked against the real client by a test run here (`CHECKED_READS`): a feature
#: is checked for a client when a table listing it was read, or a table listing it and only
#: features the client reads was refused (tests/clients_evidence.py). Tables: every readable corpus
#: table, read by delta-rs both ways, DuckDB and this reader
#: (tests/inspect/test_inspect_features.py::test_checked_read_cells_are_what_the_clients_do;
#: `CORPUS_CHECKED_READS`), and one table per feature written by this library
#: (tests/write/test_clients_matrix.py; `WRITTEN_CHECKED_READS`); this reader and deltaexplore on
#: Spark read every feature's table. Every other cell is declared (documentation, source code).
_CORPUS_FEATURES = frozenset(
    {
        "appendOnly",
        "changeDataFeed",
        "columnMapping",
        "deletionVectors",
        "inCommitTimestamp",
        "invariants",
        "materializePartitionColumns",
        "timestampNtz",
        "typeWidening-preview",
        "v2Checkpoint",
        "variantType-preview",
    }
)
_VARIANTS = frozenset({"variantType", "variantShredding-preview"})
CORPUS_CHECKED_READS: dict[str, frozenset[str]] = {
    DELTA_RS: _CORPUS_FEATURES | {"checkConstraints", "generatedColumns", "identityColumns", "icebergCompatV1"},
    DELTA_RS_PYARROW: _CORPUS_FEATURES | {"icebergCompatV1"},
    DUCKDB: _CORPUS_FEATURES | _VARIANTS | {"checkConstraints", "generatedColumns", "identityColumns"},
}
#: the read cells the table of each feature checks (tests/write/test_clients_matrix.py: written
#: by this library, or hand-written for the features it refuses to write; by the same rule; a
#: client's wrong rows show nothing either way)
_WRITTEN = frozenset(
    {
        "appendOnly",
        "catalogManaged",
        "changeDataFeed",
        "checkConstraints",
        "deletionVectors",
        "domainMetadata",
        "inCommitTimestamp",
        "invariants",
        "rowTracking",
        "timestampNtz",
        "typeWidening",
        "typeWidening-preview",
        "v2Checkpoint",
        "vacuumProtocolCheck",
    }
)
_WRITTEN_VARIANTS = frozenset({"variantType", "variantType-preview", "variantShredding", "variantShredding-preview"})
#: the hand-written tables of the features this library refuses to write (tests/feature_tables.py)
_REFUSED_TABLES = frozenset(
    {
        "adaptiveMetadata",
        "allowColumnDefaults",
        "catalogOwned-preview",
        "checkpointProtection",
        "clustering",
        "collations",
        "collations-preview",
        "columnMappingUsageTracking",
        "geospatial",
        "icebergCompatV3",
        "icebergWriterCompatV1",
        "materializePartitionColumns",
        "timestampNanos",
    }
)
_ICEBERG = frozenset({"icebergCompatV1", "icebergCompatV2"})  # with columnMapping, which to_pyarrow refuses
#: generated and identity columns, listed as table features in copies of their tables
_RELISTED = frozenset({"generatedColumns", "identityColumns"})
WRITTEN_CHECKED_READS: dict[str, frozenset[str]] = {
    DELTA_RS: _WRITTEN | _WRITTEN_VARIANTS | _REFUSED_TABLES | _ICEBERG | _RELISTED | {"columnMapping"},
    # icebergCompatV2 from a copy with reader-2 column mapping, which to_pyarrow reads
    DELTA_RS_PYARROW: _WRITTEN | _WRITTEN_VARIANTS | _REFUSED_TABLES | _RELISTED | {"columnMapping", "icebergCompatV2"},
    DUCKDB: _WRITTEN | _WRITTEN_VARIANTS | _REFUSED_TABLES | _ICEBERG | _RELISTED | {"columnMapping"},
}
CHECKED_READS: dict[str, frozenset[str]] = {
    # every feature's table: tests/write/test_clients_matrix.py and tests/spark/test_spark_clients_matrix.py
    DELTAEXPLORE: frozenset(FEATURES),
    DX_SPARK: frozenset(FEATURES),
    **{c: CORPUS_CHECKED_READS[c] | WRITTEN_CHECKED_READS[c] for c in (DELTA_RS, DELTA_RS_PYARROW, DUCKDB)},
}

#: what the other clients do with a table this library wrote with the feature, where they do not
#: read the same rows as this reader: `<exception class>: <words of its message>` (or `rows
#: differ`). Checked by tests/write/test_clients_matrix.py, which writes one table per feature
#: with the core writer (create, append, DELETE with and without deletion vectors, UPDATE,
#: MERGE, OPTIMIZE, checkpoints, VACUUM as they apply) and reads it whole with each client.
_PYARROW_REFUSES = "DeltaProtocolError: not yet supported by the deltalake reader"
WRITTEN_READS: dict[str, dict[str, str]] = {
    "catalogManaged": {
        DELTA_RS: "DeltaError: Max catalog version is required when loading a catalog-managed table",
        DELTA_RS_PYARROW: "DeltaError: Max catalog version is required when loading a catalog-managed table",
        DUCKDB: "IOException: Catalog-managed table requires max_catalog_version to be set",
    },
    # DuckDB 1.5.5 gives null partition values under column mapping unless the partition
    # column is the table's first column (delta-rs and this reader agree with the spec)
    "columnMapping": {DELTA_RS_PYARROW: _PYARROW_REFUSES, DUCKDB: "rows differ: part"},
    "deletionVectors": {DELTA_RS_PYARROW: _PYARROW_REFUSES},
    "typeWidening": {
        DELTA_RS: "DeltaError: Unsupported table features required: [TypeWidening]",
        DELTA_RS_PYARROW: _PYARROW_REFUSES,
    },
    "typeWidening-preview": {
        DELTA_RS: "DeltaError: Unsupported table features required: [TypeWideningPreview]",
        DELTA_RS_PYARROW: _PYARROW_REFUSES,
    },
    "v2Checkpoint": {DELTA_RS_PYARROW: _PYARROW_REFUSES},
    "vacuumProtocolCheck": {
        DELTA_RS: "DeltaError: Unsupported table features required: [VacuumProtocolCheck]",
        DELTA_RS_PYARROW: _PYARROW_REFUSES,
    },
    "variantShredding": {
        DELTA_RS: "DeltaError: Unsupported table features required: [VariantShredding]",
        DELTA_RS_PYARROW: _PYARROW_REFUSES,
        DUCKDB: "IOException: Feature 'variantShredding' is not supported",
    },
    "variantShredding-preview": {
        DELTA_RS: "DeltaError: Unsupported table features required: [VariantShreddingPreview]",
        DELTA_RS_PYARROW: _PYARROW_REFUSES,
    },
}
#: the clients whose reads of what this library wrote are checked
WRITTEN_READERS = (DELTA_RS, DELTA_RS_PYARROW, DUCKDB, DX_SPARK)
#: features this library refuses to write: a test asks its writer to append to a table listing
#: each, and checks the typed refusal naming the feature (nothing is written)
REFUSED_WRITES = frozenset(name for name, info in FEATURES.items() if not info.write)

#: deltaexplore on Spark, reading the table of each feature (the tables above, and for the
#: features this library does not write, hand-written ones) and writing to it (append and
#: DELETE through `deltaexplore.spark`), where it does not do what the local reader / writer
#: does: the kind of error. Checked by tests/spark/test_spark_clients_matrix.py.
SPARK_READS: dict[str, str] = {
    "adaptiveMetadata": "UnsupportedFeatureError: table needs reader feature 'adaptiveMetadata'",
    "timestampNanos": "UnsupportedFeatureError: cannot be read with Spark, which has no nanosecond timestamps",
}
SPARK_WRITES: dict[str, str] = {
    **{name: f"UnsupportedFeatureError: table needs writer feature {name!r}" for name in sorted(REFUSED_WRITES)},
    "adaptiveMetadata": "UnsupportedFeatureError: table needs reader feature 'adaptiveMetadata'",
    # Spark writes take no catalog client
    "catalogManaged": "WriteRefusedError: commits must go through its catalog",
    "catalogOwned-preview": "WriteRefusedError: commits must go through its catalog",
    "identityColumns": "WriteRefusedError: Spark writes cannot assign them consistently across tasks yet",
}

#: the other clients whose writes are checked here: each writes to a copy of the table of every
#: feature (tests/write/test_clients_write_cells.py: delta-rs appends, DELETEs, UPDATEs, MERGEs,
#: OPTIMIZEs and checkpoints; DuckDB's delta extension INSERTs, and its DELETE / UPDATE are
#: tried), and this reader reads the rows those operations must leave
WRITING_CLIENTS = (DELTA_RS, DUCKDB)
#: client -> feature -> `<operation>: <error kind>` where an operation on the feature's table
#: fails (the operations after it are not run); a client writes a feature when its append works
_RS_NEEDS = "append: CommitFailedError: Unsupported table features required: "
_KERNEL_REFUSES = "append: IOException: Unsupported: Feature "
_NO_CATALOG = {
    DELTA_RS: "append: DeltaError: Max catalog version is required when loading a catalog-managed table",
    DUCKDB: "append: IOException: Catalog-managed table requires max_catalog_version to be set",
}
#: DuckDB's delta extension INSERTs only: DELETE and UPDATE of an attached Delta table fail
_DUCKDB_INSERT_ONLY = "delete: BinderException: Can only delete from base table"
CLIENT_WRITES: dict[str, dict[str, str]] = {
    DELTA_RS: {
        "adaptiveMetadata": "append: DeltaError: Feature 'adaptiveMetadata' is not supported",
        "allowColumnDefaults": _RS_NEEDS + "[AllowColumnDefaults]",
        "appendOnly": "delete: CommitFailedError: Delta table is append-only",
        "catalogManaged": _NO_CATALOG[DELTA_RS],
        "catalogOwned-preview": _NO_CATALOG[DELTA_RS],
        "checkpointProtection": _RS_NEEDS + '[Unknown("checkpointProtection")]',
        "clustering": _RS_NEEDS + "[ClusteredTable]",
        "collations": _RS_NEEDS + '[Unknown("collations")]',
        "collations-preview": _RS_NEEDS + '[Unknown("collations-preview")]',
        "columnMapping": "optimize: DeltaError: Column mapping is not supported for write operation 'OPTIMIZE' yet",
        "columnMappingUsageTracking": _RS_NEEDS + '[Unknown("columnMappingUsageTracking")]',
        "domainMetadata": _RS_NEEDS + "[DomainMetadata]",
        # an UPDATE of a generation expression's input does not recompute the generated column
        "generatedColumns": "update: DeltaError: rows failed validation check",
        "geospatial": "append: DeltaError: Unsupported Delta table type: 'geometry'",
        "icebergCompatV1": _RS_NEEDS + "[IcebergCompatV1]",
        "icebergCompatV2": _RS_NEEDS + "[IcebergCompatV2]",
        "icebergCompatV3": _RS_NEEDS + "[IcebergCompatV3]",
        "icebergWriterCompatV1": _RS_NEEDS + '[Unknown("icebergWriterCompatV1")]',
        "identityColumns": _RS_NEEDS + "[IdentityColumns]",
        "inCommitTimestamp": _RS_NEEDS + "[InCommitTimestamp]",
        "materializePartitionColumns": _RS_NEEDS + "[MaterializePartitionColumns]",
        "rowTracking": _RS_NEEDS.removesuffix(": "),  # [RowTracking, DomainMetadata] in either order
        "timestampNanos": "append: DeltaError: Table contains TIMESTAMP_NANOS or TIMESTAMP_NANOS_NTZ columns",
        "typeWidening": _RS_NEEDS + "[TypeWidening]",
        "typeWidening-preview": _RS_NEEDS + "[TypeWideningPreview]",
        "vacuumProtocolCheck": _RS_NEEDS + "[VacuumProtocolCheck]",
        "variantShredding": _RS_NEEDS + "[VariantShredding]",
        "variantShredding-preview": _RS_NEEDS + "[VariantShreddingPreview]",
    },
    DUCKDB: {
        **{
            f: _KERNEL_REFUSES + f"'{f}' is not supported"
            for f in (
                "adaptiveMetadata",
                "allowColumnDefaults",
                "checkConstraints",
                "checkpointProtection",
                "collations",
                "collations-preview",
                "columnMappingUsageTracking",
                "icebergCompatV1",
                "icebergCompatV2",
                "icebergCompatV3",
                "icebergWriterCompatV1",
                "variantShredding",
            )
        },
        **{f: _KERNEL_REFUSES + f"'{f}' is not supported for write" for f in ("typeWidening", "typeWidening-preview")},
        # generated and identity columns are enforced as constraints, which it does not write
        "generatedColumns": _KERNEL_REFUSES + "'checkConstraints' is not supported",
        "identityColumns": _KERNEL_REFUSES + "'checkConstraints' is not supported",
        "invariants": "append: IOException: Column invariants are not yet supported",
        "catalogManaged": _NO_CATALOG[DUCKDB],
        "catalogOwned-preview": _NO_CATALOG[DUCKDB],
        "clustering": "append: IOException: Feature 'clustering' requires 'domainMetadata' to be supported",
        "geospatial": "append: IOException: Unsupported Delta table type: 'geometry'",
        "timestampNanos": "append: IOException: Unsupported Delta table type: 'timestamp_nanos'",
        **dict.fromkeys(
            (
                "appendOnly",
                "changeDataFeed",
                "columnMapping",
                "deletionVectors",
                "domainMetadata",
                "inCommitTimestamp",
                "materializePartitionColumns",
                "rowTracking",
                "timestampNtz",
                "v2Checkpoint",
                "vacuumProtocolCheck",
                "variantShredding-preview",
                "variantType",
                "variantType-preview",
            ),
            _DUCKDB_INSERT_ONLY,
        ),
    },
}

#: delta-rs asked to create a table with the feature (its table property, `alter.add_constraint`
#: or `alter.add_feature`), then append, DELETE, UPDATE, MERGE, OPTIMIZE and checkpoint as above:
#: `<operation>: <error kind>` where one fails (tests/write/test_clients_write_cells.py; this
#: reader reads the rows each time). Also seen: with `delta.enableDeletionVectors` it lists
#: variantType as a reader and writer feature too, in a table without variant columns.
_RS_PROPERTY = "create: DeltaError: Error parsing property "
DELTA_RS_CREATES: dict[str, str] = {
    "appendOnly": "delete: CommitFailedError: Delta table is append-only",
    "columnMapping": "optimize: DeltaError: Column mapping is not supported for write operation 'OPTIMIZE' yet",
    "domainMetadata": _RS_NEEDS + "[DomainMetadata]",
    "identityColumns": _RS_NEEDS + "[IdentityColumns]",
    **{
        f: _RS_PROPERTY + f"'{FEATURES[f].property}'"
        for f in (
            "icebergCompatV1",
            "icebergCompatV2",
            "icebergCompatV3",
            "icebergWriterCompatV1",
            "inCommitTimestamp",
            "rowTracking",
            "typeWidening",
            "variantShredding",
        )
    },
    # its `add_feature` commits a protocol listing timestampNanos without timestampNtz, which it
    # then refuses to load (this reader reads the table)
    "timestampNanos": "create: DeltaError: Feature 'timestampNanos' requires 'timestampNtz' to be enabled",
}
#: features delta-rs creates a table for without listing the feature: `delta.checkpointPolicy=v2`
#: is stored, but the protocol stays (1, 2) and its checkpoints are classic ones
DELTA_RS_CREATES_UNLISTED = frozenset({"v2Checkpoint"})

#: client -> feature -> what this reader makes of the client's writes to the feature's table,
#: where it is not the rows the operations must leave (a write the client gets wrong)
CLIENT_WRITTEN_READS: dict[str, dict[str, str]] = {
    DELTA_RS: {},
    # DuckDB 1.5.5 writes the data file with logical column names and keys partitionValues by
    # the logical name, where column mapping needs the physical ones: this reader (as the
    # protocol says) finds none of the file's columns and reads them as null
    DUCKDB: {"columnMapping": "rows differ"},
}

#: write cells checked by a test here: this library's (written or refused), Spark's, delta-rs'
#: and DuckDB's
CHECKED_WRITES: dict[str, frozenset[str]] = {
    DELTAEXPLORE: frozenset(FEATURES),
    DX_SPARK: frozenset(FEATURES),
    **dict.fromkeys(WRITING_CLIENTS, frozenset(FEATURES)),
}

# feature -> {client family: (first version that reads, first version that writes)}; None: never.
# For single-version clients the version is "1.x"/"this" or None.
_S = SPARK
FEATURE_SINCE: dict[str, dict[str, tuple[str | None, str | None]]] = {
    "appendOnly": {_S: ("0.0", "0.0"), DELTA_RS: ("1.x", "1.x"), DELTA_RS_PYARROW: ("1.x", None), DUCKDB: ("1.5", "1.5")},
    "invariants": {_S: ("0.0", "0.0"), DELTA_RS: ("1.x", "1.x"), DELTA_RS_PYARROW: ("1.x", None), DUCKDB: ("1.5", None)},
    "checkConstraints": {_S: ("0.8", "0.8"), DELTA_RS: ("1.x", "1.x"), DELTA_RS_PYARROW: ("1.x", None), DUCKDB: ("1.5", None)},
    "changeDataFeed": {_S: ("2.0", "2.0"), DELTA_RS: ("1.x", "1.x"), DELTA_RS_PYARROW: ("1.x", None), DUCKDB: ("1.5", "1.5")},
    "generatedColumns": {_S: ("1.0", "1.0"), DELTA_RS: ("1.x", "1.x"), DELTA_RS_PYARROW: ("1.x", None), DUCKDB: ("1.5", None)},
    "columnMapping": {_S: ("1.2", "1.2"), DELTA_RS: ("1.x", "1.x"), DELTA_RS_PYARROW: (None, None), DUCKDB: ("1.5", None)},
    "identityColumns": {_S: ("3.3", "3.3"), DELTA_RS: ("1.x", None), DELTA_RS_PYARROW: ("1.x", None), DUCKDB: ("1.5", None)},
    "deletionVectors": {_S: ("2.3", "2.4"), DELTA_RS: ("1.x", "1.x"), DELTA_RS_PYARROW: (None, None), DUCKDB: ("1.5", "1.5")},
    "rowTracking": {_S: ("3.2", "3.2"), DELTA_RS: ("1.x", None), DELTA_RS_PYARROW: ("1.x", None), DUCKDB: ("1.5", "1.5")},
    "timestampNtz": {_S: ("2.4", "2.4"), DELTA_RS: ("1.x", "1.x"), DELTA_RS_PYARROW: ("1.x", None), DUCKDB: ("1.5", "1.5")},
    "domainMetadata": {_S: ("3.0", "3.0"), DELTA_RS: ("1.x", None), DELTA_RS_PYARROW: ("1.x", None), DUCKDB: ("1.5", "1.5")},
    "v2Checkpoint": {_S: ("3.0", "3.0"), DELTA_RS: ("1.x", "1.x"), DELTA_RS_PYARROW: (None, None), DUCKDB: ("1.5", "1.5")},
    "icebergCompatV1": {_S: ("3.0", "3.0"), DELTA_RS: ("1.x", None), DELTA_RS_PYARROW: ("1.x", None), DUCKDB: ("1.5", None)},
    "icebergCompatV2": {_S: ("3.1", "3.1"), DELTA_RS: ("1.x", None), DELTA_RS_PYARROW: ("1.x", None), DUCKDB: ("1.5", None)},
    "icebergWriterCompatV1": {
        _S: ("4.0", "4.0"),
        DELTA_RS: ("1.x", None),
        DELTA_RS_PYARROW: ("1.x", None),
        DUCKDB: ("1.5", None),
    },
    "clustering": {_S: ("3.1", "3.1"), DELTA_RS: ("1.x", None), DELTA_RS_PYARROW: ("1.x", None), DUCKDB: ("1.5", None)},
    "inCommitTimestamp": {_S: ("3.3", "3.3"), DELTA_RS: ("1.x", None), DELTA_RS_PYARROW: ("1.x", None), DUCKDB: ("1.5", "1.5")},
    # delta-rs 1.6 refuses it both ways (tests/write/test_clients_matrix.py)
    "vacuumProtocolCheck": {_S: ("3.2", "3.2"), DELTA_RS: (None, None), DELTA_RS_PYARROW: (None, None), DUCKDB: ("1.5", "1.5")},
    "typeWidening-preview": {_S: ("3.2", "3.2"), DELTA_RS: (None, None), DELTA_RS_PYARROW: (None, None), DUCKDB: ("1.5", None)},
    "typeWidening": {_S: ("4.0", "4.0"), DELTA_RS: (None, None), DELTA_RS_PYARROW: (None, None), DUCKDB: ("1.5", None)},
    "variantType-preview": {
        _S: ("3.2", "3.2"),
        DELTA_RS: ("1.x", "1.x"),
        DELTA_RS_PYARROW: ("1.x", None),
        DUCKDB: ("1.5", "1.5"),
    },
    # delta-rs 1.6 reads a table listing the stable name (tests/write/test_clients_matrix.py)
    "variantType": {_S: ("4.0", "4.0"), DELTA_RS: ("1.x", "1.x"), DELTA_RS_PYARROW: ("1.x", None), DUCKDB: ("1.5", "1.5")},
    "variantShredding-preview": {
        _S: ("4.0", "4.0"),
        DELTA_RS: (None, None),
        DELTA_RS_PYARROW: (None, None),
        DUCKDB: ("1.5", "1.5"),
    },
    "variantShredding": {_S: (None, None), DELTA_RS: (None, None), DELTA_RS_PYARROW: (None, None), DUCKDB: (None, None)},
    "allowColumnDefaults": {_S: ("3.1", "3.1"), DELTA_RS: ("1.x", None), DELTA_RS_PYARROW: ("1.x", None), DUCKDB: ("1.5", None)},
    "collations-preview": {_S: ("4.0", "4.0"), DELTA_RS: ("1.x", None), DELTA_RS_PYARROW: ("1.x", None), DUCKDB: ("1.5", None)},
    "checkpointProtection": {_S: ("3.3", "3.3"), DELTA_RS: ("1.x", None), DELTA_RS_PYARROW: ("1.x", None), DUCKDB: ("1.5", None)},
    "catalogOwned-preview": {_S: ("4.0", "4.0"), DELTA_RS: (None, None), DELTA_RS_PYARROW: (None, None), DUCKDB: (None, None)},
    "catalogManaged": {_S: (None, None), DELTA_RS: (None, None), DELTA_RS_PYARROW: (None, None), DUCKDB: (None, None)},
    "materializePartitionColumns": {
        _S: ("4.0", "4.0"),
        DELTA_RS: ("1.x", None),
        DELTA_RS_PYARROW: ("1.x", None),
        DUCKDB: ("1.5", "1.5"),
    },
    # read here from tables listing them (tests/write/test_clients_matrix.py)
    **{
        f: {_S: (None, None), DELTA_RS: ("1.x", None), DELTA_RS_PYARROW: ("1.x", None), DUCKDB: ("1.5", None)}
        for f in ("collations", "columnMappingUsageTracking", "icebergCompatV3")
    },
    "geospatial": {_S: (None, None), DELTA_RS: (None, None), DELTA_RS_PYARROW: (None, None), DUCKDB: (None, None)},
}


def _version_key(v: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in v.split("."))
    except ValueError:
        return (0,)


def _at_least(client_version: str, since: str | None) -> bool:
    if since is None:
        return False
    if since in ("1.x", "this") or client_version in ("1.x", "this"):
        return True
    return _version_key(client_version) >= _version_key(since)


def clients_table() -> pa.Table:
    """`CLIENTS` as a `CLIENTS_SCHEMA` table."""
    cols = {f.name: [c[i] for c in CLIENTS] for i, f in enumerate(CLIENTS_SCHEMA)}
    return conform(cols, CLIENTS_SCHEMA)


def _written_reads(feature: str) -> str:
    """What the other clients do with a table this library wrote with `feature`."""
    if feature in REFUSED_WRITES:
        return "not written: the writer refuses the feature (UnsupportedFeatureError)"
    spark = {feature: SPARK_READS[feature]} if feature in SPARK_READS else {}
    kinds = {**WRITTEN_READS.get(feature, {}), **({DX_SPARK: spark[feature]} if spark else {})}
    return "; ".join(f"{client}: {kinds.get(client, 'same rows')}" for client in WRITTEN_READERS)


#: why the write cells of a client are declared, not checked
_WHY_DECLARED = {
    SPARK: "declared from docs.delta.io and release notes: not checkable here (no delta-spark jars on this machine)",
    DELTA_RS_PYARROW: "a read path of delta-rs: it writes nothing (delta-rs writes are in the DataFusion rows)",
}


def _client_writes(client: str, feature: str) -> str:
    """What `client`'s writes to a table with `feature` did (`CLIENT_WRITES`)."""
    failed = CLIENT_WRITES[client].get(feature)
    created = DELTA_RS_CREATES.get(feature, "") if client == DELTA_RS else ""
    if created.startswith("create: "):
        created = f"; asked to create it: {created.removeprefix('create: ')}"
    elif client == DELTA_RS and feature in DELTA_RS_CREATES_UNLISTED:
        created = "; asked to create it: stores the property without the feature"
    else:
        created = ""
    if failed and failed.startswith("append: "):
        return f"refuses: {failed}{created}"
    read = CLIENT_WRITTEN_READS[client].get(feature, "same rows")
    return f"deltaexplore reads: {read}" + (f"; then {failed}" if failed else "; every operation tried works") + created


def client_features() -> pa.Table:
    """Every (client version, feature) with read/write support (`CLIENT_FEATURES_SCHEMA`)."""
    rows: dict[str, list] = {f.name: [] for f in CLIENT_FEATURES_SCHEMA}
    for client, version, _, _, writes, _, _ in CLIENTS:
        names = sorted(set(FEATURE_SINCE) | set(FEATURES))
        for feature in names:
            info = FEATURES.get(feature)
            notes = None
            if client == DELTAEXPLORE:
                read, write = (info.read, info.write) if info else (False, False)
                notes = _written_reads(feature) if info else None
            elif client == DX_SPARK:
                read = bool(info and info.read) and feature not in SPARK_READS
                write = bool(info and info.write) and feature not in SPARK_WRITES
                notes = SPARK_WRITES.get(feature, "deltaexplore (local): same rows") if info else None
            else:
                since = FEATURE_SINCE.get(feature, {}).get(client, (None, None))
                read = _at_least(version, since[0])
                write = writes and _at_least(version, since[1])
                notes = _client_writes(client, feature) if client in WRITING_CLIENTS else _WHY_DECLARED.get(client)
            rows["client"].append(client)
            rows["version"].append(version)
            rows["feature"].append(feature)
            rows["read"].append(read)
            rows["write"].append(write)
            rows["read_evidence"].append("checked" if feature in CHECKED_READS.get(client, ()) else "declared")
            rows["write_evidence"].append("checked" if feature in CHECKED_WRITES.get(client, ()) else "declared")
            rows["written_reads"].append(notes)
    return conform(rows, CLIENT_FEATURES_SCHEMA)
