"""Differences between two versions, from the log only (no data file is read).

File changes are computed per data path: a path only in the newer state was added, only in the
older one removed, in both with a different deletion vector `dv_changed` (the file was re-added
with a new DV: rows were deleted without rewriting it). When every commit between the versions is
retained, the older version is replayed for the paths those commits touch alone (its checkpoint
streamed, the other files never held: a diff of two 1M-file versions holds no second state) and
the commits are applied to them; otherwise both versions are replayed and compared. Bytes and
rows of removed files come from the older state (remove actions may lack stats). Metadata
sections compare the two snapshots' schema, partitioning, properties, protocol and features,
domain metadata and application transactions. Row-level changes are `row_diff.diff_rows`, which
reads the files these changes name.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.arrow import combined, take_rows
from deltaexplore.core.history import read_protocols
from deltaexplore.core.log.json_log import read_log_files
from deltaexplore.core.protocol.features import check_readable, features_of
from deltaexplore.core.scan.partition_values import partition_keys
from deltaexplore.core.scan.stats import num_records
from deltaexplore.core.snapshot import Snapshot
from deltaexplore.errors import DeltaExploreError, UnsupportedFeatureError
from deltaexplore.inspect.errors import InspectError
from deltaexplore.inspect.features import lenient_snapshot
from deltaexplore.inspect.file_columns import dv_cardinality, dv_ids
from deltaexplore.inspect.results import conform
from deltaexplore.inspect.schema_diff import schema_changes
from deltaexplore.inspect.schemas import DIFF_FILES_SCHEMA, DIFF_SCHEMA
from deltaexplore.inspect.snapshots import table_cache, table_of

if TYPE_CHECKING:
    from deltaexplore.core.table import Table

__all__ = ["diff", "diff_files", "file_changes", "resolve_versions"]


def resolve_versions(obj: Table | Snapshot, v1: int | None, v2: int | None) -> tuple[int, int]:
    """(v1, v2) with defaults: v2 = the snapshot's (or latest) version, v1 = v2 - 1."""
    if v2 is None:
        v2 = obj.version if isinstance(obj, Snapshot) else table_of(obj).latest_version()
    if v1 is None:
        v1 = max(v2 - 1, 0)
    for v in (v1, v2):
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise InspectError(f"versions must be non-negative integers, got {v!r}")
    return v1, v2


# -- file changes ------------------------------------------------------------------------------


#: a file diff of at most this many actions and files is computed in Python (`_compare_small`):
#: polars' fixed cost per frame and join dominates a commit of a handful of files
SMALL_FILE_DIFF = 256


def _side_table(snapshot: Snapshot, adds: pa.Table) -> pa.Table:
    """Per add: path, dv id, size, num_records, DV cardinality, partition key, mtime."""
    return pa.table(
        {
            "path": combined(adds.column("path")).cast(pa.string()),
            "dv": dv_ids(adds),
            "size": combined(adds.column("size")).cast(pa.int64()),
            "num_records": num_records(adds),
            "card": dv_cardinality(adds),
            "partition": partition_keys(snapshot, adds),
            "mtime": combined(adds.column("modificationTime")).cast(pa.int64()),
        }
    )


def _side(snapshot: Snapshot, adds: pa.Table) -> pl.DataFrame:
    """`_side_table` as a polars frame."""
    if adds.num_rows == 0:
        return pl.DataFrame(
            schema={
                "path": pl.String,
                "dv": pl.String,
                "size": pl.Int64,
                "num_records": pl.Int64,
                "card": pl.Int64,
                "partition": pl.String,
                "mtime": pl.Int64,
            }
        )
    frame = pl.from_arrow(_side_table(snapshot, adds))
    assert isinstance(frame, pl.DataFrame)
    return frame


def _compare(before: pl.DataFrame, after: pl.DataFrame) -> pl.DataFrame:
    """Outer join by path: added / removed / dv_changed rows (unchanged paths dropped)."""
    b = before.unique(subset=["path"], keep="last").with_columns(pl.lit(True).alias("_in"))
    a = after.unique(subset=["path"], keep="last").with_columns(pl.lit(True).alias("_in"))
    joined = b.join(a, on="path", how="full", suffix="_after", coalesce=True, nulls_equal=False)
    in_b = pl.col("_in").fill_null(False)
    in_a = pl.col("_in_after").fill_null(False)
    change = (
        pl.when(in_b & ~in_a)
        .then(pl.lit("removed"))
        .when(~in_b & in_a)
        .then(pl.lit("added"))
        .when(pl.col("dv").eq_missing(pl.col("dv_after")))
        .then(pl.lit(None, pl.String))
        .otherwise(pl.lit("dv_changed"))
    )
    out = joined.with_columns(change.alias("change")).filter(pl.col("change").is_not_null())
    live_before = pl.col("num_records") - pl.col("card")
    live_after = pl.col("num_records_after") - pl.col("card_after")
    return out.select(
        pl.col("path"),
        pl.col("change"),
        pl.coalesce("partition_after", "partition").alias("partition"),
        pl.coalesce("size_after", "size").alias("size"),
        pl.coalesce("num_records_after", "num_records").alias("num_records"),
        pl.when(pl.col("change") != "added").then(pl.col("card")).alias("deleted_before"),
        pl.when(pl.col("change") != "removed").then(pl.col("card_after")).alias("deleted_after"),
        pl.when(pl.col("change") == "added")
        .then(live_after)
        .when(pl.col("change") == "removed")
        .then(-live_before)
        .otherwise(live_after - live_before)
        .alias("rows_delta"),
        pl.when(pl.col("change") != "added").then(pl.col("dv")).alias("dv_before"),
        pl.when(pl.col("change") != "removed").then(pl.col("dv_after")).alias("dv_after"),
        pl.coalesce("mtime_after", "mtime").alias("modification_time"),
    ).sort(["change", "path"])


def _coalesce(new: dict[str, Any] | None, old: dict[str, Any] | None, name: str) -> Any:
    """`pl.coalesce(name_after, name)` of two optional rows."""
    value = None if new is None else new[name]
    return old[name] if value is None and old is not None else value


def _compare_small(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> pa.Table:
    """`_to_arrow(_compare(before, after))` of a few `_side_table` rows, in Python."""
    b = {r["path"]: r for r in before}  # the last row of a path, as `unique(keep="last")`
    a = {r["path"]: r for r in after}

    def minus(x: int | None, y: int | None) -> int | None:
        return None if x is None or y is None else x - y

    rows = []
    for path in b.keys() | a.keys():
        old, new = b.get(path), a.get(path)
        if new is None:
            change = "removed"
        elif old is None:
            change = "added"
        elif old["dv"] == new["dv"]:
            continue
        else:
            change = "dv_changed"
        live_before = None if old is None else minus(old["num_records"], old["card"])
        live_after = None if new is None else minus(new["num_records"], new["card"])
        if change == "added":
            delta = live_after
        elif change == "removed":
            delta = None if live_before is None else -live_before
        else:
            delta = minus(live_after, live_before)

        rows.append(
            {
                "path": path,
                "change": change,
                "partition": _coalesce(new, old, "partition"),
                "size": _coalesce(new, old, "size"),
                "num_records": _coalesce(new, old, "num_records"),
                "deleted_before": None if old is None else old["card"],
                "deleted_after": None if new is None else new["card"],
                "rows_delta": delta,
                "dv_before": None if old is None else old["dv"],
                "dv_after": None if new is None else new["dv"],
                "modification_time": _coalesce(new, old, "mtime"),
            }
        )
    rows.sort(key=lambda r: (r["change"], r["path"]))
    cols: dict[str, Any] = {f.name: [r[f.name] for r in rows] for f in DIFF_FILES_SCHEMA}
    cols["modification_time"] = pa.array(cols["modification_time"], pa.int64())
    return conform(cols, DIFF_FILES_SCHEMA)


def _incremental_small(
    a: Snapshot, b: Snapshot, adds: pa.Table, removes: pa.Table
) -> tuple[pa.Table, tuple[pa.Table, pa.Table]] | None:
    """`_incremental`'s file changes and replayed adds for a few actions, in Python (None when
    the paths they touch have more than `SMALL_FILE_DIFF` files at the older version)."""
    latest: dict[tuple[str, str | None], tuple[int, int, bool]] = {}  # (path, dv) -> its last action
    for table, is_add in ((adds, True), (removes, False)):
        keys = zip(table.column("path").to_pylist(), dv_ids(table).to_pylist(), table.column("line").to_pylist())
        for row, (path, dv, line) in enumerate(keys):
            seen = latest.get((path, dv))
            if seen is None or line > seen[0]:
                latest[(path, dv)] = (line, row, is_add)
    older_adds = a.add_actions_for(pa.array(sorted({path for path, _ in latest}), pa.string()))
    if older_adds.num_rows > SMALL_FILE_DIFF:
        return None
    before = _side_table(a, older_adds).to_pylist()
    survivors = [r for r in before if (r["path"], r["dv"]) not in latest]
    newer_adds = take_rows(adds, sorted(row for _, row, is_add in latest.values() if is_add))
    after = survivors + _side_table(b, newer_adds).to_pylist()
    fields = [c for c in older_adds.column_names if c in newer_adds.column_names]
    return _compare_small(before, after), (older_adds, newer_adds.select(fields))


def _range_files(table: Table, lo: int, hi: int) -> list[Any] | None:
    listing = table.listing(refresh=False)
    versions = listing.commit_versions(lo + 1, hi)
    if len(versions) != hi - lo:
        return None
    return [listing.commit(v) for v in versions]


def _incremental(table: Table, a: Snapshot, b: Snapshot, files: list[Any]) -> tuple[pa.Table, tuple[pa.Table, pa.Table]]:
    """Apply the commits (lo, hi] to the paths they touch in the older state; with the add
    actions replayed on the way (`Replayed`). A few actions: in Python (`_incremental_small`)."""
    lo, hi = a.version, b.version
    lines = read_log_files(table.storage, files, list(range(lo + 1, hi + 1)))
    adds = lines.file_actions("add")
    removes = lines.file_actions("remove")
    if adds.num_rows + removes.num_rows == 0:
        empty = a.add_actions_for(pa.array([], pa.string()))
        return _to_arrow(_compare(_side(a, adds.slice(0, 0)), _side(b, adds.slice(0, 0)))), (empty, empty)
    if adds.num_rows + removes.num_rows <= SMALL_FILE_DIFF:
        small = _incremental_small(a, b, adds, removes)
        if small is not None:
            return small
    keys = pl.DataFrame(
        {
            "path": pl.from_arrow(pa.concat_arrays([combined(adds.column("path")), combined(removes.column("path"))])),
            "dv": pl.from_arrow(pa.concat_arrays([dv_ids(adds), dv_ids(removes)])),
            "line": np.concatenate([adds.column("line").to_numpy(), removes.column("line").to_numpy()]),
            "row": np.concatenate([np.arange(adds.num_rows), np.arange(removes.num_rows)]).astype(np.int64),
            "is_add": np.concatenate([np.ones(adds.num_rows, bool), np.zeros(removes.num_rows, bool)]),
        }
    )
    final = keys.sort("line", descending=True).unique(subset=["path", "dv"], keep="first")
    touched = final.get_column("path").unique().to_arrow()
    older_adds = a.add_actions_for(touched)  # replayed for the touched paths alone unless loaded
    before = _side(a, older_adds)
    final_keys = final.select("path", "dv")
    survivors = before.join(final_keys, on=["path", "dv"], how="anti", nulls_equal=True)
    added_rows = final.filter(pl.col("is_add")).get_column("row").sort().to_numpy()
    newer_adds = take_rows(adds, added_rows)
    after = pl.concat([survivors, _side(b, newer_adds)], how="vertical")
    fields = [c for c in older_adds.column_names if c in newer_adds.column_names]
    return _to_arrow(_compare(before, after)), (older_adds, newer_adds.select(fields))


def _full(a: Snapshot, b: Snapshot) -> pl.DataFrame:
    return _compare(_side(a, a.add_actions()), _side(b, b.add_actions()))


def _use_incremental(a: Snapshot, b: Snapshot, files: list[Any] | None) -> bool:
    if files is None:
        return False
    if a.checkpoint_version == b.checkpoint_version:
        return True  # the newer segment holds every commit of the range anyway
    range_bytes = sum(f.size for f in files)
    ck = b.segment.checkpoint
    b_bytes = sum(f.size for f in b.segment.json_files) + (4 * ck.size if ck is not None else 0)
    return range_bytes <= b_bytes


def _compute(
    obj: Table | Snapshot, v1: int, v2: int
) -> tuple[pa.Table, Snapshot, Snapshot, str, tuple[pa.Table, pa.Table] | None]:
    """(file changes v1 -> v2, snapshot v1, snapshot v2, method, the adds `_incremental` replayed)."""
    table = table_of(obj)
    lo, hi = min(v1, v2), max(v1, v2)
    listing = table.listing(refresh=False) if table._listing is not None else table.listing()
    stamp = (lo, hi, listing.latest_version, len(listing.commits), listing.earliest_commit)
    hit = table_cache(table).get("diff")
    replayed: tuple[pa.Table, pa.Table] | None = None
    if hit is not None and hit[0] == stamp:
        changes, a, b, method, replayed = hit[1]
    else:
        a = lenient_snapshot(table, lo)  # a version deltaexplore cannot read still has files and a protocol
        b = a if hi == lo else lenient_snapshot(table, hi)
        if lo == hi:
            none = _side(a, a.add_actions().slice(0, 0))
            changes, method = _to_arrow(_compare(none, none)), "same version"
        else:
            files = _range_files(table, lo, hi)
            if _use_incremental(a, b, files):
                assert files is not None
                (changes, replayed), method = _incremental(table, a, b, files), "incremental"
            else:
                changes, method = _to_arrow(_full(a, b)), "full"
        table_cache(table)["diff"] = (stamp, (changes, a, b, method, replayed))
    if v1 > v2:
        changes, a, b = _reverse(changes), b, a
    return changes, a, b, method, replayed


def _to_arrow(frame: pl.DataFrame) -> pa.Table:
    t = frame.to_arrow()
    cols = {name: t.column(name) for name in t.column_names}
    if "modification_time" in cols:
        cols["modification_time"] = pc.cast(cols["modification_time"].cast(pa.int64()), pa.timestamp("ms", tz="UTC"))
    return conform(cols, DIFF_FILES_SCHEMA)


def _reverse(changes: pa.Table) -> pa.Table:
    """The same changes seen from the newer version to the older one."""
    change = changes.column("change").combine_chunks()
    flipped = pc.if_else(pc.equal(change, "added"), "removed", pc.if_else(pc.equal(change, "removed"), "added", change))
    cols = {name: changes.column(name) for name in changes.column_names}
    cols["change"] = flipped
    cols["deleted_before"], cols["deleted_after"] = changes.column("deleted_after"), changes.column("deleted_before")
    cols["dv_before"], cols["dv_after"] = changes.column("dv_after"), changes.column("dv_before")
    cols["rows_delta"] = pc.negate(changes.column("rows_delta").combine_chunks())
    return conform(cols, DIFF_FILES_SCHEMA)


def file_changes(obj: Table | Snapshot, v1: int, v2: int) -> tuple[pa.Table, Snapshot, Snapshot, str]:
    """(`diff_files` rows of v1 -> v2, snapshot v1, snapshot v2, method): kept per table, so
    the metadata diff and the row diff of one pair compute it once."""
    return _compute(obj, v1, v2)[:4]


def replayed_adds(obj: Table | Snapshot, lo: int, hi: int) -> tuple[pa.Table, pa.Table] | None:
    """The add actions an incremental `file_changes(lo, hi)` (lo <= hi) replayed: the older
    version's for every path the commits between touched, and the newer version's added by
    those commits; None when the changes were found otherwise (a full replay). The row diff
    reads its files' actions from them instead of replaying the paths again."""
    return _compute(obj, lo, hi)[4]


def diff_files(obj: Table | Snapshot, v1: int | None = None, v2: int | None = None) -> pa.Table:
    """One row per data file whose state differs from version `v1` to `v2` (`DIFF_FILES_SCHEMA`).

    Columns: path, change (added | removed | dv_changed), partition, size, num_records,
    deleted_before / deleted_after (DV cardinality at each side; null where the file is absent),
    rows_delta (change of live rows; null without stats), dv_before / dv_after (DV unique ids),
    modification_time. `v2` defaults to the snapshot's (or latest) version and `v1` to `v2 - 1`;
    `v1 > v2` is allowed (the diff is seen backwards). Read from the log only.
    """
    v1, v2 = resolve_versions(obj, v1, v2)
    return _compute(obj, v1, v2)[0]


# -- the summary -------------------------------------------------------------------------------


def _row(section: str, change: str, name: str, before: Any = None, after: Any = None, detail: str = "", **nums: Any) -> dict:
    return {
        "section": section,
        "change": change,
        "name": name,
        "before": None if before is None else str(before),
        "after": None if after is None else str(after),
        "files": nums.get("files"),
        "bytes": nums.get("bytes"),
        "rows": nums.get("rows"),
        "detail": detail,
    }


def _rows(n: int) -> str:
    return f"{n:,} {'row' if n == 1 else 'rows'}"


def _file_rows(changes: pa.Table) -> list[dict]:
    frame = pl.from_arrow(changes.select(["change", "size", "rows_delta"]))
    assert isinstance(frame, pl.DataFrame)
    out = []
    labels = {"added": "added", "removed": "removed", "dv_changed": "re-added with another deletion vector"}
    for change, label in labels.items():
        sub = frame.filter(pl.col("change") == change)
        n = sub.height
        size = int(sub.get_column("size").sum() or 0) if change != "dv_changed" else 0
        known = sub.get_column("rows_delta").null_count() == 0
        delta = int(sub.get_column("rows_delta").sum() or 0)
        rows = (delta if change == "added" else -delta) if known else None
        detail = f"{n:,} {'file' if n == 1 else 'files'} {label}"
        if change == "dv_changed" and n and rows is not None:
            detail += f": {_rows(rows)} deleted in place" if rows >= 0 else f": {_rows(-rows)} restored"
        out.append(_row("files", change, "files", detail=detail, files=n, bytes=size, rows=rows))
    added, removed = out[0], out[1]
    all_known = frame.get_column("rows_delta").null_count() == 0
    out.append(
        _row(
            "files",
            "net",
            "files",
            detail="net change of files, bytes and live rows",
            files=added["files"] - removed["files"],
            bytes=added["bytes"] - removed["bytes"],
            rows=int(frame.get_column("rows_delta").sum() or 0) if all_known else None,
        )
    )
    return out


def _metadata_rows(a: Snapshot, b: Snapshot) -> list[dict]:
    out: list[dict] = []
    ma = a.metadata_or_none
    mb = b.metadata_or_none
    # schema
    try:
        sa = ma.schema if ma is not None and ma.schema_string else None
        sb = mb.schema if mb is not None and mb.schema_string else None
    except DeltaExploreError:
        sa = sb = None
    for c in schema_changes(sa, sb):
        out.append(_row("schema", c.change, c.name, c.before, c.after, c.detail))
    # partitioning
    pa_, pb = list(a.partition_columns), list(b.partition_columns)
    if pa_ != pb:
        out.append(_row("partitioning", "changed", "partitionColumns", json.dumps(pa_), json.dumps(pb), "partitioning changed"))
    # properties
    qa, qb = a.properties, b.properties
    for k in sorted(set(qa) | set(qb)):
        if k not in qb:
            out.append(_row("properties", "removed", k, qa[k], None, f"property {k} unset"))
        elif k not in qa:
            out.append(_row("properties", "added", k, None, qb[k], f"property {k} set to {qb[k]}"))
        elif qa[k] != qb[k]:
            out.append(_row("properties", "changed", k, qa[k], qb[k], f"property {k}: {qa[k]} -> {qb[k]}"))
    # protocol and features
    p1, p2 = a.protocol, b.protocol
    for label, x, y in (
        ("minReaderVersion", p1.min_reader_version, p2.min_reader_version),
        ("minWriterVersion", p1.min_writer_version, p2.min_writer_version),
    ):
        if x != y:
            out.append(_row("protocol", "changed", label, x, y, f"{label} {x} -> {y}"))
    (r1, w1), (r2, w2) = features_of(p1), features_of(p2)
    for side, f1, f2 in (("reader", set(r1), set(r2)), ("writer", set(w1), set(w2))):
        for name in sorted(f2 - f1):
            out.append(_row("features", "added", name, None, side, f"{side} feature {name} enabled"))
        for name in sorted(f1 - f2):
            out.append(_row("features", "removed", name, side, None, f"{side} feature {name} dropped"))
    # domain metadata
    da, db = a.domain_metadata(), b.domain_metadata()
    for k in sorted(set(da) | set(db)):
        if k not in db:
            out.append(_row("domain_metadata", "removed", k, da[k].configuration, None, f"domain {k} removed"))
        elif k not in da:
            out.append(_row("domain_metadata", "added", k, None, db[k].configuration, f"domain {k} added"))
        elif da[k].configuration != db[k].configuration:
            out.append(_row("domain_metadata", "changed", k, da[k].configuration, db[k].configuration, f"domain {k} changed"))
    # application transactions
    ta, tb = a._all_txns, b._all_txns
    for k in sorted(set(ta) | set(tb)):
        tx = ta[k].version if k in ta else None
        ty = tb[k].version if k in tb else None
        if tx != ty:
            change = "added" if tx is None else ("removed" if ty is None else "changed")
            out.append(_row("txn", change, k, tx, ty, f"application {k}: version {tx} -> {ty}"))
    # table identity
    if ma is not None and mb is not None:
        identity: list[tuple[str, str | None, str | None]] = [
            ("id", ma.id, mb.id),
            ("name", ma.name, mb.name),
            ("description", ma.description, mb.description),
            ("format", ma.format_provider, mb.format_provider),
        ]
        for label, before_id, after_id in identity:
            if before_id != after_id:
                detail = "the table was replaced (new table id)" if label == "id" else f"{label} changed"
                out.append(_row("metadata", "changed", label, before_id, after_id, detail))
    return out


def _protocol_steps(table: Table, older: Snapshot, hi: int) -> list[dict]:
    """The protocol changes of the commits strictly between two versions (with
    checkpointProtection a feature may come and go between them): one `protocol` row each,
    named after its version."""
    lo = older.version
    files = _range_files(table, lo, hi) if hi - lo > 1 else None
    if not files:
        return []
    actions = read_protocols(table.storage, table.listing(refresh=False), list(range(lo + 1, hi)))
    out = []
    previous = older.protocol
    for version in sorted(actions):
        p = actions[version]
        (r1, w1), (r2, w2) = features_of(previous), features_of(p)
        before, after = set(r1) | set(w1), set(r2) | set(w2)
        if p != previous:
            what = [f"+{f}" for f in sorted(after - before)] + [f"-{f}" for f in sorted(before - after)]
            try:
                check_readable(p)
                note = ""
            except UnsupportedFeatureError as exc:
                note = f"; deltaexplore does not read version {version} ({exc.feature})"
            out.append(
                _row(
                    "protocol",
                    "changed_between",
                    f"version {version}",
                    f"{previous.min_reader_version}/{previous.min_writer_version}",
                    f"{p.min_reader_version}/{p.min_writer_version}",
                    f"version {version}: protocol {previous.min_reader_version}/{previous.min_writer_version} -> "
                    f"{p.min_reader_version}/{p.min_writer_version} {' '.join(what)}".rstrip()
                    + note,
                )
            )
        previous = p
    return out


def _cdf_row(table: Table, a: Snapshot, b: Snapshot) -> dict:
    lo, hi = min(a.version, b.version), max(a.version, b.version)
    if lo == hi:
        return _row("cdf", "unavailable", "change data feed", detail="same version: no row changes")
    older = a if a.version == lo else b
    newer = b if older is a else a
    enabled = [s.has_metadata and s.config.change_data_feed_enabled for s in (older, newer)]
    if not all(enabled):
        return _row(
            "cdf",
            "unavailable",
            "change data feed",
            detail="delta.enableChangeDataFeed is not true at both versions: "
            f"net row changes from the files, inspect.diff_rows({lo}, {hi})",
        )
    if _range_files(table, lo, hi) is None:
        return _row("cdf", "unavailable", "change data feed", detail=f"commits between {lo} and {hi} were cleaned up")
    return _row(
        "cdf",
        "available",
        "change data feed",
        detail=f"row-level changes recorded: table.changes({lo + 1}, {hi}); net changes: inspect.diff_rows({lo}, {hi})",
    )


def diff(obj: Table | Snapshot, v1: int | None = None, v2: int | None = None) -> pa.Table:
    """Everything that changed from version `v1` to `v2`, from metadata only (`DIFF_SCHEMA`).

    One row per change, by `section`:

    - `files`: `added`, `removed`, `dv_changed` (re-added with a new deletion vector) and `net`
      rows with `files`, `bytes` and live `rows` (per-file detail: `diff_files`)
    - `schema`: `added` / `removed` / `renamed` (by column mapping field id) / `widened` /
      `type_changed` / `nullability` / `metadata` per column path
    - `partitioning`, `properties` (added / removed / changed keys), `protocol` (reader and
      writer versions), `features` (added / removed, with reader or writer), `domain_metadata`,
      `txn` (application versions), `metadata` (table id, name, description, format)
    - `cdf`: whether the change data feed recorded the range (net row changes: `diff_rows`,
      with or without it)

    `v2` defaults to the snapshot's (or latest) version and `v1` to `v2 - 1`.
    """
    v1, v2 = resolve_versions(obj, v1, v2)
    changes, a, b, _, _ = _compute(obj, v1, v2)
    steps = _protocol_steps(table_of(obj), a if a.version < b.version else b, max(v1, v2))
    rows = _file_rows(changes) + _metadata_rows(a, b) + steps + [_cdf_row(table_of(obj), a, b)]
    cols = {f.name: [r[f.name] for r in rows] for f in DIFF_SCHEMA}
    return conform(cols, DIFF_SCHEMA)
