"""Every action of every commit in a version range, raw and parsed, with where it came from.

Commit files (published, or staged and ratified by a catalog) are the source of truth; a
version whose commit file is gone is shown from the log compaction file that covers it; with
`checkpoints=True` the actions of checkpoints (and their sidecars) in the range are included
too. Lines are read once into Arrow (the core's `LogLines`); file actions are parsed by the
core's vectorized parser and scattered back to their lines.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from deltaexplore.core.arrow import combined
from deltaexplore.core.log.checkpoint_reader import CheckpointReader
from deltaexplore.core.log.file_names import LogFile, LogKind
from deltaexplore.core.log.json_log import LogLines, read_log_files
from deltaexplore.core.log.timestamps import CommitClock, ict_config
from deltaexplore.core.protocol.actions import FILE_ACTION_FIELDS
from deltaexplore.core.scan.stats import num_records
from deltaexplore.core.snapshot import Snapshot
from deltaexplore.errors import DeltaExploreError, InvalidCheckpointError
from deltaexplore.inspect.errors import InspectError
from deltaexplore.inspect.file_columns import dv_ids
from deltaexplore.inspect.results import conform, to_ts
from deltaexplore.inspect.schemas import COMMITS_SCHEMA
from deltaexplore.inspect.snapshots import table_of

if TYPE_CHECKING:
    from deltaexplore.core.table import Table

__all__ = ["commits"]

_FILE_KINDS = ("add", "remove", "cdc")


def _clock(table: Table) -> CommitClock:
    listing = table.listing(refresh=False)
    ict = None
    try:
        latest = table.snapshot()
        ict = ict_config(latest.protocol, latest.metadata_or_none)
    except DeltaExploreError:
        ict = None
    return CommitClock(table.storage, listing, ict)


def _source_of(f: LogFile) -> str:
    if f.kind is LogKind.STAGED_COMMIT:
        return "staged"
    if f.kind is LogKind.COMPACTION:
        return "compaction"
    return "commit"


def _json_rows(lines: LogLines, sources: list[str]) -> dict[str, Any]:
    """Columns for every non-blank line of `lines`."""
    kind = lines.kind
    keep = np.flatnonzero(pc.is_valid(kind).to_numpy(zero_copy_only=False)) if len(lines) else np.zeros(0, np.int64)
    n = len(lines)
    cols: dict[str, Any] = {}
    # file actions: parse each kind once, scatter back to line positions
    parsed: dict[str, pa.Array] = {}
    for k in _FILE_KINDS:
        idx = lines.where(k)
        if len(idx) == 0:
            continue
        t = lines.file_actions(k)
        pos = np.full(n, -1, dtype=np.int64)
        pos[idx] = np.arange(len(idx))
        take = pa.array(pos, mask=pos < 0)
        values = {
            "path": combined(t.column("path")).cast(pa.string()),
            "data_change": combined(t.column("dataChange")),
            "size": combined(t.column("size")).cast(pa.int64()),
            "partition_values": combined(t.column("partitionValues")),
        }
        if k != "cdc":
            values["num_records"] = num_records(t)
            values["deletion_vector"] = dv_ids(t)
            dv = combined(t.column("deletionVector"))
            values["dv_cardinality"] = (
                pc.if_else(pc.is_valid(dv), dv.field("cardinality"), pa.scalar(None, pa.int64()))
                if len(dv)
                else pa.array([], pa.int64())
            )
        if k == "add":
            values["modification_time"] = combined(t.column("modificationTime")).cast(pa.int64())
        if k == "remove":
            values["deletion_timestamp"] = combined(t.column("deletionTimestamp")).cast(pa.int64())
        for name, arr in values.items():
            scattered = arr.take(take)
            parsed[name] = scattered if name not in parsed else pc.coalesce(parsed[name], scattered)
    sel = pa.array(keep, pa.int64())
    for name, arr in parsed.items():
        cols[name] = arr.take(sel)
    text = lines.text.take(sel)
    cols["raw"] = pc.utf8_rtrim(text.cast(pa.large_string()), characters="\r\n").cast(pa.string())
    cols["action"] = kind.take(sel)
    cols["version"] = pa.array(lines.version[keep], pa.int64())
    cols["line"] = pa.array(lines.line_number[keep], pa.int64())
    file_index = lines.file_index[keep]
    cols["source_file"] = pa.array([f.path for f in lines.files], pa.string()).take(pa.array(file_index, pa.int64()))
    cols["source"] = pa.array(sources, pa.string()).take(pa.array(file_index, pa.int64()))
    # commitInfo.operation (few lines)
    ops: list[str | None] = [None] * len(keep)
    where_info = {int(i): j for j, i in enumerate(keep)}
    for i, _, body in lines.objects("commitInfo"):
        if i in where_info:
            op = body.get("operation")
            ops[where_info[i]] = op if isinstance(op, str) or op is None else json.dumps(op)
    cols["operation"] = pa.array(ops, pa.string())
    return cols


def _checkpoint_rows(table: Table, version: int) -> list[dict[str, Any]]:
    """Columns for the actions of the checkpoint at `version` (first complete one), per file."""
    listing = table.listing(refresh=False)
    cps = listing.checkpoints.get(version)
    if not cps:
        return []
    cp = cps[0]
    reader = CheckpointReader(table.storage, cp)
    out = []
    if reader.is_json:
        lines = read_log_files(table.storage, cp.parts, [version])
        out.append(_json_rows(lines, ["checkpoint"] * len(cp.parts)))
        sources = [(s.path, "sidecar") for s in reader.sidecar_files()]
    else:
        sources = [(p.path, "checkpoint") for p in cp.parts] + [(s.path, "sidecar") for s in reader.sidecar_files()]
    for path, source in sources:
        out.append(_parquet_rows(table, path, source, version))
    return out


def _parquet_rows(table: Table, path: str, source: str, version: int) -> dict[str, Any]:
    """One row per action of a checkpoint/sidecar parquet file (rows with no action skipped)."""
    fs, _ = table.storage.arrow_filesystem()
    try:
        # strings (and the file's key-value metadata) come unchecked from parquet: no invalid
        # UTF-8 goes on to polars, which panics on it
        full = pq.read_table(fs.open_input_file(table.storage.location(path))).replace_schema_metadata(None)
        full.validate(full=True)
    except (OSError, pa.ArrowInvalid) as exc:
        raise InspectError(f"cannot read checkpoint file {path}: {exc}", path=path) from exc
    names = [n for n in full.column_names if full.column(n).null_count < full.num_rows]
    n = full.num_rows
    action = pa.nulls(n, pa.string())
    for name in names:
        action = pc.if_else(pc.is_valid(full.column(name).combine_chunks()), pa.scalar(name), action)
    keep = np.flatnonzero(pc.is_valid(action).to_numpy(zero_copy_only=False))
    sel = pa.array(keep, pa.int64())
    frame = pl.from_arrow(full.take(sel)) if n else None
    raw = pa.nulls(len(keep), pa.string())
    if frame is not None and len(keep):
        assert isinstance(frame, pl.DataFrame)
        pieces = []
        for name in names:
            enc = frame.select(
                pl.when(pl.col(name).is_not_null())
                .then(pl.concat_str([pl.lit('{"' + name + '":'), pl.col(name).struct.json_encode(), pl.lit("}")]))
                .alias("j")
            ).get_column("j")
            pieces.append(enc.to_arrow())
        raw = pieces[0]
        for p in pieces[1:]:
            raw = pc.coalesce(raw, p)
    cols: dict[str, Any] = {"action": action.take(sel), "raw": raw, "line": pa.array(keep, pa.int64())}
    for k in ("add", "remove"):
        if k not in names:
            continue
        if not pa.types.is_struct(full.schema.field(k).type):
            raise InvalidCheckpointError(
                f"checkpoint {path}: '{k}' column is {full.schema.field(k).type}, not a struct", path=path
            )
        t = _struct_actions(full.column(k).combine_chunks().take(sel), k)
        take = pa.array(np.arange(len(keep)), pa.int64())
        values = {
            "path": combined(t.column("path")).cast(pa.string()),
            "data_change": combined(t.column("dataChange")),
            "size": combined(t.column("size")).cast(pa.int64()),
            "partition_values": combined(t.column("partitionValues")),
            "num_records": num_records(t),
            "deletion_vector": dv_ids(t),
        }
        dv = combined(t.column("deletionVector"))
        values["dv_cardinality"] = (
            pc.if_else(pc.is_valid(dv), dv.field("cardinality"), pa.scalar(None, pa.int64()))
            if len(dv)
            else pa.array([], pa.int64())
        )
        if k == "add":
            values["modification_time"] = combined(t.column("modificationTime")).cast(pa.int64())
        else:
            values["deletion_timestamp"] = combined(t.column("deletionTimestamp")).cast(pa.int64())
        for name, arr in values.items():
            scattered = arr.take(take)
            cols[name] = scattered if name not in cols else pc.coalesce(cols[name], scattered)
    m = len(keep)
    cols["version"] = pa.array(np.full(m, version, dtype=np.int64))
    cols["source_file"] = pa.repeat(pa.scalar(path, pa.string()), m)
    cols["source"] = pa.repeat(pa.scalar(source, pa.string()), m)
    return cols


def _struct_actions(col: pa.StructArray, kind: str) -> pa.Table:
    """A checkpoint's `add`/`remove` struct column as the core's file-action columns."""
    names = {f.name for f in col.type}
    valid = pc.is_valid(col)
    out = {}
    for f in FILE_ACTION_FIELDS[kind]:
        if f.name not in names:
            out[f.name] = pa.nulls(len(col), f.type)
            continue
        child = col.field(f.name)
        if pa.types.is_struct(f.type) and pa.types.is_struct(child.type):
            parts = [
                child.field(g.name).cast(g.type) if child.type.get_field_index(g.name) >= 0 else pa.nulls(len(child), g.type)
                for g in f.type
            ]
            child = pa.StructArray.from_arrays(parts, fields=list(f.type), mask=pc.invert(pc.is_valid(child)))
        elif child.type != f.type:
            child = child.cast(f.type)
        out[f.name] = pc.if_else(valid, child, pa.scalar(None, f.type)) if col.null_count else child
    return pa.table(out)


def commits(obj: Table | Snapshot, start: int | None = None, end: int | None = None, *, checkpoints: bool = False) -> pa.Table:
    """Every action of the commits `start..end` (inclusive), oldest first (`COMMITS_SCHEMA`).

    Columns: version, timestamp (commit time, in-commit timestamp aware), source (commit |
    staged | compaction | checkpoint | sidecar), source_file, line, action, then parsed fields of
    file actions (path, data_change, size, num_records, partition_values, deletion_vector,
    dv_cardinality, modification_time, deletion_timestamp), operation (commitInfo rows) and raw
    (the JSON text of the action).

    Defaults: `end` is the snapshot's (or latest) version, `start` equals `end` (one commit).
    Versions whose commit file was cleaned up come from a log compaction file covering them
    (its actions carry the compaction's end version); `checkpoints=True` adds the actions of the
    checkpoints at versions in the range (they can be millions of rows).

    Raises:
        InspectError: `start > end`.
    """
    table = table_of(obj)
    listing = table.listing()
    if end is None:
        end = obj.version if isinstance(obj, Snapshot) else (listing.latest_version or 0)
    if start is None:
        start = end
    if start > end:
        raise InspectError(f"commits(start={start}, end={end}): start is after end")
    files: list[LogFile] = []
    versions: list[int] = []
    covered: set[int] = set()
    for v in listing.commit_versions(start, end):
        f = listing.commit(v)
        assert f is not None
        files.append(f)
        versions.append(v)
        covered.add(v)
    taken: list[tuple[int, int]] = []  # version runs of the compaction files used
    for c in sorted(listing.compactions, key=lambda c: (c.version, -c.end_version)):
        if c.version < start or c.end_version > end:
            continue
        if any(c.version <= v <= c.end_version for v in covered) or any(a <= c.end_version and c.version <= b for a, b in taken):
            continue
        files.append(c)
        versions.append(c.end_version)
        taken.append((c.version, c.end_version))
    pieces: list[dict[str, Any]] = []
    if files:
        order = sorted(range(len(files)), key=lambda i: versions[i])
        files = [files[i] for i in order]
        versions = [versions[i] for i in order]
        lines = read_log_files(table.storage, files, versions)
        pieces.append(_json_rows(lines, [_source_of(f) for f in files]))
    if checkpoints:
        for v in sorted(listing.checkpoints):
            if start <= v <= end:
                pieces.extend(_checkpoint_rows(table, v))
    tables = [conform(p, COMMITS_SCHEMA.remove(COMMITS_SCHEMA.get_field_index("timestamp"))) for p in pieces]
    if not tables:
        return COMMITS_SCHEMA.empty_table()
    out = pa.concat_tables(tables)
    clock = _clock(table)
    vs = out.column("version").combine_chunks()
    uniq = pc.unique(vs).to_pylist()
    stamps: dict[int, int | None] = {}
    for v in uniq:
        try:
            stamps[v] = clock.timestamp(v)
        except DeltaExploreError:
            stamps[v] = None
    ts = pa.array([stamps[v] for v in uniq], pa.int64()).take(pc.index_in(vs, value_set=pa.array(uniq, pa.int64())))
    cols = {name: out.column(name) for name in out.column_names}
    cols["timestamp"] = to_ts(ts)
    result = conform(cols, COMMITS_SCHEMA)
    # stable: within a version, commit lines (file order) come before checkpoint rows
    return result.take(pc.sort_indices(result.column("version")))
