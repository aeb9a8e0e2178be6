"""`timeline()`: the table through time, every version's health from one replay of the log.

Reopening each version would replay the log once per version. Instead every add action gets the
version range it is active in: from its commit (or the start, for the first state's files) to
the first later action on the same key (`path`, deletion vector id) — the replay rule, applied
to all actions at once (one sort by key). A file's size, rows, deleted rows and smallness then
count in every version of its range: one `+` at its start and one `-` at its end, summed up
(`numpy.cumsum`) over the versions. Partitions count the partition keys with at least one file
(the same per key). Schema and protocol changes come from the commits' `metaData` and
`protocol` actions. Metadata only: no data file is read.

The first version is the oldest one the log can rebuild (version 0 when its commit is there,
else the oldest checkpoint); its files are its snapshot's.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.log.checkpoint_reader import CheckpointReader
from deltaexplore.core.log.json_log import LogLines, read_log_files
from deltaexplore.core.log.segment import LogListing, build_segment
from deltaexplore.core.protocol.actions import STRING_MAP, Metadata, Protocol
from deltaexplore.core.scan.action_rows import action_rows, key_hashes, replay_keys, rows_of_table
from deltaexplore.core.snapshot import Snapshot
from deltaexplore.core.table import Table
from deltaexplore.errors import DeltaExploreError
from deltaexplore.inspect.errors import InspectError
from deltaexplore.inspect.files import small_file_threshold
from deltaexplore.inspect.layout import layout_columns_bounds, order_keys, overlap_metrics
from deltaexplore.inspect.schemas import TIMELINE_SCHEMA
from deltaexplore.inspect.snapshots import snapshot_of, table_of

__all__ = ["TIMELINE_METRICS", "timeline"]

#: the metric columns of a timeline (`metrics=` picks among them)
TIMELINE_METRICS = (
    "files",
    "bytes",
    "rows",
    "small_files",
    "small_file_share",
    "dv_files",
    "dv_deleted_rows",
    "dv_deleted_ratio",
    "tombstones",
    "partitions",
    "overlap_depth_mean",
    "overlap_depth_max",
)


def _first_version(table: Table, latest: int) -> int:
    """The oldest version the log rebuilds: 0 when its commit is there, else the oldest
    checkpoint whose later commits are all there."""
    listing = table.listing(refresh=False)
    commits = set(listing.versions())
    if 0 in commits:
        first = 0
    else:
        checkpoints = sorted(v for v in listing.checkpoints if v <= latest)
        if not checkpoints:
            raise InspectError(f"no version of {table.uri} can be rebuilt: the log's start was cleaned up without a checkpoint")
        first = checkpoints[0]
    gaps = [v for v in range(first + 1, latest + 1) if v not in commits]
    if gaps:  # commits missing after the start: begin after the last gap's checkpoint
        later = sorted(v for v in listing.checkpoints if gaps[-1] <= v <= latest)
        if not later:
            raise InspectError(f"commits {gaps[:5]} of {table.uri} are missing: no timeline past them")
        first = later[0]
    return first


def _same_schema(a: str | None, b: str | None) -> bool:
    """Whether two schema strings say the same schema (parsed: writers format them differently)."""
    if a == b:
        return True
    if a is None or b is None:
        return False
    try:
        return Metadata(id="", schema_string=a).schema == Metadata(id="", schema_string=b).schema
    except DeltaExploreError:
        return False


def _partition_codes(maps: pa.ChunkedArray) -> np.ndarray:
    """One code per distinct partitionValues map (by its keys' values, whatever their order)."""
    maps_arr = maps.combine_chunks()
    names = pc.unique(maps_arr.keys).to_pylist()
    parts = [pc.fill_null(pc.map_lookup(maps_arr, name, "first").cast(pa.large_string()), "\x01") for name in sorted(names)]
    if not parts:
        return np.zeros(len(maps_arr), np.int64)
    joined = parts[0] if len(parts) == 1 else pc.binary_join_element_wise(*parts, pa.scalar("\x00", pa.large_string()))
    return pc.dictionary_encode(joined).indices.to_numpy().astype(np.int64)


def _replay_order(keys: pa.ChunkedArray, order_in_log: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The actions sorted by key, then by their order in the log (`np.lexsort`), and per sorted
    action whether the next one has the same key. Sorted by the keys' 64-bit hashes where the
    kernel is built (no hash table of 2M strings): equal keys hash alike, and every two
    neighbours of equal hash are checked to be equal keys (then every run of one hash is one
    key); any that are not (a collision) and the keys are dictionary-encoded instead."""
    hashes = key_hashes(keys)
    if hashes is not None:
        order = np.lexsort((order_in_log, hashes))
        sorted_hashes = hashes[order]
        same = sorted_hashes[1:] == sorted_hashes[:-1]
        pairs = np.flatnonzero(same)
        equal = pc.equal(keys.take(pa.array(order[pairs])), keys.take(pa.array(order[pairs + 1])))
        if not len(pairs) or pc.all(equal).as_py():
            return order, np.r_[same, False]
    codes = pc.dictionary_encode(keys).combine_chunks().indices.to_numpy()
    order = np.lexsort((order_in_log, codes))
    return order, np.r_[codes[order][1:] == codes[order][:-1], False]


def _per_version(starts: np.ndarray, ends: np.ndarray, values: np.ndarray, first: int, n: int) -> np.ndarray:
    """Per version first..first+n-1: the sum of `values` of the rows active there ([start, end))."""
    delta = np.zeros(n + 1, dtype=np.float64 if values.dtype.kind == "f" else np.int64)
    np.add.at(delta, starts - first, values)
    np.add.at(delta, ends - first, -values)
    return np.cumsum(delta[:n])


def _partition_counts(codes: np.ndarray, starts: np.ndarray, ends: np.ndarray, first: int, n: int) -> np.ndarray:
    """Per version: how many partition `codes` have at least one active file."""
    if len(codes) == 0:
        return np.zeros(n, np.int64)
    keys = np.concatenate([codes, codes])
    versions = np.concatenate([starts, ends]) - first
    steps = np.concatenate([np.ones(len(codes), np.int64), -np.ones(len(codes), np.int64)])
    # by partition, then version (`np.lexsort((versions, keys))`: one stable sort of one number)
    order = np.argsort(keys * (n + 2) + versions, kind="stable")
    keys, versions, steps = keys[order], versions[order], steps[order]
    files = np.cumsum(steps)
    group_start = np.r_[True, keys[1:] != keys[:-1]]
    base = np.maximum.accumulate(np.where(group_start, np.arange(len(keys)), 0))
    files = files - np.r_[0, np.cumsum(steps)][base]  # the running count within each partition
    last_of_version = np.r_[(keys[1:] != keys[:-1]) | (versions[1:] != versions[:-1]), True]
    keys, versions, files = keys[last_of_version], versions[last_of_version], files[last_of_version]
    before = np.r_[0, files[:-1]]
    before[np.r_[True, keys[1:] != keys[:-1]]] = 0
    change = (files > 0).astype(np.int64) - (before > 0).astype(np.int64)
    delta = np.zeros(n + 1, np.int64)
    np.add.at(delta, versions, change)
    return np.cumsum(delta[:n])


def timeline(
    obj: Table | Snapshot,
    start: int | None = None,
    end: int | None = None,
    *,
    column: str | None = None,
    metrics: list[str] | tuple[str, ...] | None = None,
    small_file_bytes: int | None = None,
) -> pa.Table:
    """One row per version (`TIMELINE_SCHEMA`): files, bytes, rows, small-file share, deletion
    vector ratio, tombstones, partitions, `column`'s overlap depth, schema and protocol changes,
    from one replay (module docstring).

    Args:
        obj: a table (every version the log rebuilds) or a snapshot (versions up to it).
        start, end: the versions to report (default: all). The replay starts from the state of
            `start` (read from its nearest checkpoint): no commit before it is read.
        column: a column whose clustering quality to follow: mean and max overlap depth of the
            active files' ranges (`layout.overlap_metrics`), one pass per version over bounds
            read once (null without it). Reads the commits' stats: costs about a parse of them.
        metrics: the metric columns to keep (`TIMELINE_METRICS`; default all); version,
            timestamp and the change flags are always there.
        small_file_bytes: the small-file threshold (default: the latest's, as `files()`).

    Raises:
        InspectError: a range outside the versions the log rebuilds, or an unknown metric.
        ColumnNotFoundError: `column` has no per-file statistics.
    """
    if metrics is not None:
        unknown = [m for m in metrics if m not in TIMELINE_METRICS]
        if unknown or isinstance(metrics, str):
            raise InspectError(f"unknown timeline metrics {unknown or metrics!r}: choose from {', '.join(TIMELINE_METRICS)}")
    latest_snap = snapshot_of(obj)
    table = table_of(obj)
    latest = latest_snap.version
    first = _first_version(table, latest)
    lo = first if start is None else int(start)
    hi = latest if end is None else int(end)
    if not first <= lo <= hi <= latest:
        raise InspectError(f"versions {lo}..{hi} are not in {first}..{latest}, the versions the log of {table.uri} rebuilds")
    n = hi - lo + 1
    base = table.snapshot(version=lo)
    listing = table.listing(refresh=False)
    commits = list(range(lo + 1, hi + 1))
    # the commits' actions as rows (read by the compiled pass where it applies); all their lines
    # are parsed only when the column's bounds need the stats
    files = [listing.commit(v) for v in commits]  # all there: `_first_version` checked the gaps
    json_adds, json_removes, lines = action_rows(table.storage, files, commits, all_lines=column is not None)  # type: ignore[arg-type]
    base_adds = base.add_actions()
    base_removes = base.tombstones()
    in_base = base_adds.num_rows + base_removes.num_rows
    before = np.arange(-in_base, 0, dtype=np.int64) - 1  # the first state's actions come first
    first_adds = rows_of_table(base_adds, np.full(base_adds.num_rows, lo, np.int64), before[: base_adds.num_rows])
    first_removes = rows_of_table(
        base_removes, np.full(base_removes.num_rows, lo, np.int64), before[base_adds.num_rows :], adds=False
    )
    every = (first_adds, first_removes, json_adds, json_removes)

    # every action: its key, version and replay order
    keys = pa.chunked_array(
        [c for r in every for c in (r.key.chunks if isinstance(r.key, pa.ChunkedArray) else [r.key])], pa.large_string()
    )
    versions = np.concatenate([r.version for r in every])
    order, next_same = _replay_order(keys, np.concatenate([r.order for r in every]))
    ends_sorted = np.where(next_same, np.r_[versions[order][1:], 0], hi + 1)
    ends = np.empty_like(ends_sorted)
    ends[order] = ends_sorted
    is_add = np.zeros(len(keys), bool)
    is_add[: base_adds.num_rows] = True
    is_add[in_base : in_base + len(json_adds.version)] = True
    starts, ends, r_starts, r_ends = versions[is_add], ends[is_add], versions[~is_add], ends[~is_add]  # adds: base, then JSON
    adds_n = len(starts)

    # the values each add counts with
    size = np.concatenate([first_adds.size, json_adds.size])
    records = np.concatenate([first_adds.records, json_adds.records])
    deleted = np.concatenate([first_adds.deleted, json_adds.deleted])
    with_dv = (deleted > 0).astype(np.int64)
    threshold = small_file_threshold(latest_snap, small_file_bytes)
    small = (size < threshold).astype(np.int64)
    ones = np.ones(adds_n, np.int64)

    files_n = _per_version(starts, ends, ones, lo, n)
    bytes_n = _per_version(starts, ends, size, lo, n)
    records_n = _per_version(starts, ends, records, lo, n)
    deleted_n = _per_version(starts, ends, deleted, lo, n)
    dv_files_n = _per_version(starts, ends, with_dv, lo, n)
    small_n = _per_version(starts, ends, small, lo, n)
    r_keys = keys.take(pa.array(np.flatnonzero(~is_add)))
    readers: dict[int, CheckpointReader | None] = {}  # one reader per checkpoint: its columns read once
    r_ends = _checkpoint_tombstones(table, listing, lo, hi, r_starts, r_ends, r_keys, readers)
    tombstones_n = _per_version(r_starts, r_ends, np.ones(len(r_starts), np.int64), lo, n)
    schema_changed, protocol_changed, partitioned = _changes(table, listing, base, lines, first, lo, hi, readers)

    partitions_n: np.ndarray | None = None
    if partitioned.any():
        # the codes of the distinct maps (and of no map), then per add
        distinct = pa.concat_arrays([first_adds.partitions, json_adds.partitions, pa.nulls(1, STRING_MAP)])
        index = np.concatenate([first_adds.partition_index, json_adds.partition_index + len(first_adds.partitions)])
        index[np.concatenate([first_adds.partition_index, json_adds.partition_index]) < 0] = len(distinct) - 1
        pcodes = _partition_codes(pa.chunked_array([distinct]))[index]
        partitions_n = _partition_counts(pcodes, starts, ends, lo, n)
    depth_mean = depth_max = None
    if column is not None:
        depth_mean, depth_max = _overlap_depths(latest_snap, column, base_adds, lines, starts, ends, lo, n)
    clock = latest_snap.clock
    stamps = [clock.timestamp(v) for v in range(lo, hi + 1)]

    live = records_n - deleted_n
    partitions = pa.nulls(n, pa.int64()) if partitions_n is None else pa.array(partitions_n, pa.int64(), mask=~partitioned)
    out = pa.table(
        {
            "version": pa.array(np.arange(lo, hi + 1), pa.int64()),
            "timestamp": pa.array(stamps, pa.int64()).cast(pa.timestamp("ms", tz="UTC")),
            "files": pa.array(files_n),
            "bytes": pa.array(bytes_n),
            "rows": pa.array(live),
            "small_files": pa.array(small_n),
            "small_file_share": pa.array(np.where(files_n > 0, small_n / np.maximum(files_n, 1), np.nan), from_pandas=True),
            "dv_files": pa.array(dv_files_n),
            "dv_deleted_rows": pa.array(deleted_n),
            "dv_deleted_ratio": pa.array(np.where(records_n > 0, deleted_n / np.maximum(records_n, 1), np.nan), from_pandas=True),
            "tombstones": pa.array(tombstones_n),
            "partitions": partitions,
            "overlap_depth_mean": pa.nulls(n, pa.float64()) if depth_mean is None else depth_mean,
            "overlap_depth_max": pa.nulls(n, pa.int64()) if depth_max is None else depth_max,
            "schema_changed": pa.array(schema_changed),
            "protocol_changed": pa.array(protocol_changed),
        }
    ).cast(TIMELINE_SCHEMA)
    out = out.replace_schema_metadata({**(out.schema.metadata or {}), b"deltaexplore.timeline.column": (column or "").encode()})
    if metrics is not None:
        out = out.select([c for c in out.column_names if c in _ALWAYS or c in metrics])
    return out


_ALWAYS = ("version", "timestamp", "schema_changed", "protocol_changed")


def _changes(
    table: Table,
    listing: LogListing,
    base: Snapshot,
    lines: LogLines,
    first: int,
    lo: int,
    hi: int,
    readers: dict[int, CheckpointReader | None],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per version lo..hi: schema changed, protocol changed, partitioned — from the commits'
    actions, then (as a cold read of that version does) the metadata a checkpoint of it holds."""
    n = hi - lo + 1
    changes: dict[int, list[Metadata | Protocol]] = {}
    for _, version, body in lines.objects("protocol"):
        changes.setdefault(version, []).append(Protocol.from_json(body))
    for _, version, body in lines.objects("metaData"):
        changes.setdefault(version, []).append(Metadata.from_json(body))
    for version in sorted(v for v in listing.checkpoints if lo < v <= hi):
        reader = _complete_checkpoint(table, listing, version, readers)
        if reader is not None:  # a complete one: its non-file columns only
            held = reader.non_file_actions()
            if held.protocol is not None:
                changes.setdefault(version, []).append(Protocol.from_json(held.protocol))
            if held.metadata is not None:
                changes.setdefault(version, []).append(Metadata.from_json(held.metadata))
    schema_changed = np.zeros(n, bool)
    protocol_changed = np.zeros(n, bool)
    partitioned = np.zeros(n, bool)
    schema = _schema_string(base)
    columns: tuple[str, ...] | list[str] = base.partition_columns if base.has_metadata else ()
    protocol = base.protocol
    for i, version in enumerate(range(lo, hi + 1)):
        for action in changes.get(version, ()):
            if isinstance(action, Protocol):
                protocol_changed[i] |= action != protocol
                protocol = action
            else:
                schema_changed[i] |= not _same_schema(action.schema_string, schema)
                schema, columns = action.schema_string, action.partition_columns
        partitioned[i] = bool(columns)
    own = listing.commit(lo) if lo > first else None
    if own is not None and any(
        True for kind in ("metaData", "protocol") for _ in read_log_files(table.storage, [own]).objects(kind)
    ):
        # the first version's commit holds a metaData or protocol action: against the version before it
        before = table.snapshot(version=lo - 1)
        schema_changed[0] = not _same_schema(_schema_string(before), _schema_string(base))
        protocol_changed[0] = before.protocol != base.protocol
    return schema_changed, protocol_changed, partitioned


def _complete_checkpoint(
    table: Table, listing: LogListing, version: int, readers: dict[int, CheckpointReader | None]
) -> CheckpointReader | None:
    """The reader of the complete checkpoint of `version` (None: none), one per version."""
    if version not in readers:
        checkpoint = build_segment(listing, version, root=table.uri).checkpoint
        complete = checkpoint is not None and checkpoint.version == version
        readers[version] = CheckpointReader(table.storage, checkpoint) if complete else None  # type: ignore[arg-type]
    return readers[version]


def _checkpoint_tombstones(
    table: Table,
    listing: LogListing,
    lo: int,
    hi: int,
    starts: np.ndarray,
    ends: np.ndarray,
    keys: pa.Array,
    readers: dict[int, CheckpointReader | None],
) -> np.ndarray:
    """The removes' ends, as a cold read sees them: a checkpoint may drop tombstones (expired
    ones, or all, as old writers did), and a version read through that checkpoint has only the
    ones it kept. A remove active at a complete checkpoint's version that the checkpoint lacks
    ends there."""
    ends = ends.copy()
    for version in sorted(v for v in listing.checkpoints if lo < v <= hi):
        active = np.flatnonzero((starts <= version) & (ends > version))
        if not len(active):
            continue
        reader = _complete_checkpoint(table, listing, version, readers)
        if reader is None:
            continue
        # the removes' keys only: path and deletion vector, batch by batch (not every field of them)
        kept = pa.concat_arrays(
            [replay_keys(t) for t in reader.iter_file_actions("remove", fields=())] or [pa.array([], pa.large_string())]
        )
        held = pc.is_in(keys.take(pa.array(active, pa.int64())), value_set=kept).to_numpy(zero_copy_only=False)
        ends[active[~held]] = version
    return ends


def _schema_string(snap: Snapshot) -> str | None:
    return snap.metadata.schema_string if snap.has_metadata else None


def _overlap_depths(
    snap: Snapshot, column: str, base_adds: pa.Table, lines: LogLines, starts: np.ndarray, ends: np.ndarray, lo: int, n: int
) -> tuple[pa.Array, pa.Array]:
    """Per version: mean and max `overlap_depth` (`layout.overlap_metrics`) of the active files
    with bounds of `column`. Every add's bounds are read once (the commits' stats parsed here),
    keyed in one shared order; each version then takes its active files' keys."""
    json_adds = lines.file_actions("add", ["size", "partitionValues", "deletionVector", "stats"])
    bounds = [layout_columns_bounds(snap, t, [column]) for t in (base_adds, json_adds)]
    name = next(iter(bounds[0]))
    mins = pa.concat_arrays([b[name]["min"].cast(bounds[0][name]["min"].type) for b in bounds])
    maxs = pa.concat_arrays([b[name]["max"].cast(bounds[0][name]["max"].type) for b in bounds])
    has = pc.and_(pc.is_valid(mins), pc.is_valid(maxs)).to_numpy(zero_copy_only=False).astype(bool)
    keys_lo = np.zeros(len(has), np.int64)
    keys_hi = np.zeros(len(has), np.int64)
    if has.any():
        take = pa.array(np.flatnonzero(has), pa.int64())
        k_lo, k_hi = order_keys(mins.take(take), maxs.take(take))
        keys_lo[has], keys_hi[has] = np.minimum(k_lo, k_hi), np.maximum(k_lo, k_hi)
    mean = np.full(n, np.nan)
    most = np.zeros(n, np.int64)
    valid = np.zeros(n, bool)
    for i in range(n):
        v = lo + i
        active = has & (starts <= v) & (ends > v)
        if active.any():
            depth = overlap_metrics(keys_lo[active], keys_hi[active])["overlap_depth"]
            mean[i], most[i], valid[i] = depth.mean(), depth.max(), True
    return pa.array(mean, mask=~valid), pa.array(most, mask=~valid)
