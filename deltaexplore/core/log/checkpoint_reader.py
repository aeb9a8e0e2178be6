"""Checkpoint readers: classic, multi-part, V2 (json or parquet, UUID- or classic-named), sidecars.

Only the columns a caller needs are read: the non-file actions (small) separately from the
add/remove columns (large), and only the add/remove fields asked for.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.core.arrow import empty, from_numpy, take_rows, to_numpy
from deltaexplore.core.log.file_names import SIDECAR_DIR, LogFile, LogKind
from deltaexplore.core.log.json_log import LogLines, read_log_files
from deltaexplore.core.protocol.actions import FILE_ACTION_FIELDS
from deltaexplore.errors import DeltaExploreError, InvalidCheckpointError
from deltaexplore.storage import Storage

if TYPE_CHECKING:
    import pyarrow.parquet as pq

__all__ = ["Checkpoint", "CheckpointReader", "NonFileActions"]

NON_FILE_COLUMNS = ("protocol", "metaData", "txn", "domainMetadata", "checkpointMetadata", "sidecar")
NON_FILE_BATCH_ROWS = 8192
FILE_BATCH_ROWS = 1 << 16


@dataclass(frozen=True)
class Checkpoint:
    """A complete checkpoint of `version`: its part files (one unless multi-part)."""

    version: int
    parts: tuple[LogFile, ...]

    @property
    def kind(self) -> str:
        first = self.parts[0]
        if first.kind is LogKind.MULTIPART_CHECKPOINT:
            return "multipart"
        if first.kind is LogKind.V2_CHECKPOINT:
            return f"v2-{first.fmt}"
        return "classic"

    @property
    def size(self) -> int:
        return sum(p.size for p in self.parts)

    @property
    def modification_time(self) -> int:
        return max(p.modification_time for p in self.parts)


@dataclass
class NonFileActions:
    """The non-file actions of a checkpoint as JSON-like dicts, plus its sidecar list."""

    protocol: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    txns: list[dict[str, Any]] = field(default_factory=list)
    domains: list[dict[str, Any]] = field(default_factory=list)
    checkpoint_metadata: dict[str, Any] | None = None
    sidecars: list[dict[str, Any]] = field(default_factory=list)
    row_id_high_water_mark: int | None = None


def _parquet_file(storage: Storage, path: str) -> pq.ParquetFile:
    import pyarrow.parquet as pq  # a log without checkpoints is read without it (~20 ms of import)

    try:
        # A buffered stream decodes page by page: peak memory is the result, not the column chunks.
        return pq.ParquetFile(storage.open_input(path), pre_buffer=False, buffer_size=1 << 20)
    except FileNotFoundError as exc:
        raise InvalidCheckpointError(f"checkpoint file {path} is missing", path=path) from exc
    except (pa.ArrowInvalid, OSError) as exc:
        raise InvalidCheckpointError(f"checkpoint file {path} is truncated or corrupt: {exc}", path=path) from exc


_READ_ERRORS = (pa.ArrowInvalid, OSError, pa.ArrowNotImplementedError)


def _read(pf: pq.ParquetFile, columns: list[str], path: str) -> pa.Table:
    try:
        table = pf.read(columns=columns, use_threads=True)
        table.validate(full=True)
        return table
    except _READ_ERRORS as exc:
        raise InvalidCheckpointError(f"checkpoint file {path} cannot be read: {exc}", path=path) from exc


def _read_file_columns(
    pf: pq.ParquetFile,
    columns: list[str],
    path: str,
    keep: Callable[[pa.RecordBatch], pa.Array] | None = None,
    row_groups: list[int] | None = None,
) -> pa.Table:
    """The add/remove `columns` (most of a checkpoint's bytes), `FILE_BATCH_ROWS` rows at a
    time, the decoder's scratch memory handed back after each batch. Read at once, page
    buffers and outgrown string builders stayed with the allocator: 70 MB of add columns grew
    the process by 190 MB, 700 MB by 960 MB (now by 140 and 840 MB at most). `keep(batch)`,
    when given, selects the rows kept of each batch as it is read (the others are never held);
    `row_groups`, when given, are the only row groups read."""
    if pf.metadata.num_rows == 0 or row_groups == []:
        try:
            return pf.read_row_groups([], columns=columns)
        except _READ_ERRORS as exc:
            raise InvalidCheckpointError(f"checkpoint file {path} cannot be read: {exc}", path=path) from exc
    pool = pa.default_memory_pool()
    batches = []
    schema = None
    try:
        for batch in pf.iter_batches(batch_size=FILE_BATCH_ROWS, row_groups=row_groups, columns=columns, use_threads=True):
            schema = batch.schema
            if keep is not None:
                batch = batch.filter(keep(batch))  # a null drops the row
            batch.validate(full=True)  # parquet hands over strings unchecked: no invalid UTF-8 passes
            if batch.num_rows or keep is None:
                batches.append(batch)
            pool.release_unused()
    except _READ_ERRORS as exc:
        raise InvalidCheckpointError(f"checkpoint file {path} cannot be read: {exc}", path=path) from exc
    return pa.Table.from_batches(batches, schema=schema)


def _row_groups_with(pf: pq.ParquetFile, kind: str, keep: Callable[[pa.RecordBatch], pa.Array], path: str) -> list[int]:
    """The row groups where `keep` selects a row, found from the `kind.path` column alone (a
    small part of a checkpoint: the statistics of the other row groups are never decoded)."""
    out = []
    try:
        for i in range(pf.metadata.num_row_groups):
            if any(
                pc.any(keep(b)).as_py()
                for b in pf.iter_batches(batch_size=FILE_BATCH_ROWS, row_groups=[i], columns=[f"{kind}.path"])
            ):
                out.append(i)
    except _READ_ERRORS as exc:
        raise InvalidCheckpointError(f"checkpoint file {path} cannot be read: {exc}", path=path) from exc
    return out


def _read_non_null(pf: pq.ParquetFile, columns: list[str], path: str) -> pa.Table:
    """The rows where any of `columns` is set, read in batches: the non-file actions are a
    few rows of a checkpoint with millions, whose nulls are not worth holding at once."""
    schema = pa.schema([pf.schema_arrow.field(c) for c in columns])
    kept = []
    try:
        for batch in pf.iter_batches(batch_size=NON_FILE_BATCH_ROWS, columns=columns, use_threads=False):
            present = pc.is_valid(batch.column(0))
            for col in batch.columns[1:]:
                present = pc.or_(present, pc.is_valid(col))
            if pc.any(present).as_py():
                kept.append(batch.filter(present))
                kept[-1].validate(full=True)
    except _READ_ERRORS as exc:
        raise InvalidCheckpointError(f"checkpoint file {path} cannot be read: {exc}", path=path) from exc
    return pa.Table.from_batches(kept, schema=schema)


def _cast_to(arr: pa.Array, typ: pa.DataType, path: str, name: str) -> pa.Array:
    if arr.type == typ:
        return arr
    try:
        return arr.cast(typ)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        if pa.types.is_struct(typ) and pa.types.is_struct(arr.type):
            children = []
            for f in typ:
                idx = arr.type.get_field_index(f.name)
                child = arr.field(idx) if idx >= 0 else pa.nulls(len(arr), f.type)
                children.append(_cast_to(child, f.type, path, f"{name}.{f.name}"))
            return pa.StructArray.from_arrays(children, fields=list(typ), mask=arr.is_null())
        raise InvalidCheckpointError(f"checkpoint {path}: column {name} has type {arr.type}, expected {typ}", path=path) from None


def _compatible(have: pa.DataType, want: pa.DataType) -> bool:
    """True when a column can be used as is (maps differ only in field names)."""
    if have == want:
        return True
    if pa.types.is_map(have) and pa.types.is_map(want):
        return have.key_type == want.key_type and have.item_type == want.item_type
    return False


def _action_columns(
    pf: pq.ParquetFile, path: str, kind: str, extra: tuple[str, ...], *, sidecar: bool, fields: tuple[str, ...] | None
) -> tuple[pa.DataType, list[str]] | None:
    """The `kind` column's struct type and the fields of it to read (None: the file has no
    `kind` column).

    Raises:
        InvalidCheckpointError: an action column that is not a struct with a `path`, or a
            sidecar with neither `add` nor `remove` (a sidecar holds file actions only).
    """
    schema = pf.schema_arrow
    for name in ("add", "remove"):
        i = schema.get_field_index(name)
        if i >= 0 and not pa.types.is_struct(schema.field(i).type):
            raise InvalidCheckpointError(f"checkpoint {path}: '{name}' column is {schema.field(i).type}, not a struct", path=path)
    if sidecar and schema.get_field_index("add") < 0 and schema.get_field_index("remove") < 0:
        raise InvalidCheckpointError(f"sidecar {path} has no 'add' or 'remove' column: it is not a sidecar file", path=path)
    if not sidecar and not {"add", "remove", *NON_FILE_COLUMNS} & set(schema.names):
        raise InvalidCheckpointError(
            f"checkpoint file {path} has no action column (columns: {', '.join(schema.names[:8])}): it is not a checkpoint",
            path=path,
        )
    idx = schema.get_field_index(kind)
    if idx < 0:
        return None
    struct_type = schema.field(idx).type
    present = {f.name for f in struct_type}
    if "path" not in present:
        raise InvalidCheckpointError(f"checkpoint {path}: '{kind}' column has no 'path' field", path=path)
    names = _field_names(kind, fields)
    return struct_type, [n for n in names if n in present] + [e for e in extra if e in present]


def _field_names(kind: str, fields: tuple[str, ...] | None) -> list[str]:
    """The `FILE_ACTION_FIELDS[kind]` names read: all, or `fields` and the key of a file
    action (path, deletionVector), in the declared order."""
    names = [f.name for f in FILE_ACTION_FIELDS[kind]]
    if fields is None:
        return names
    wanted = {"path", "deletionVector", *fields}
    return [n for n in names if n in wanted]


def _shape_actions(
    table: pa.Table,
    path: str,
    kind: str,
    struct_type: pa.DataType,
    wanted: list[str],
    extra: tuple[str, ...],
    exclude: Callable[[pa.Table], pa.Array | None] | None,
    fields: tuple[str, ...] | None,
    superseded: list[pa.Table] | None = None,
) -> pa.Table:
    """Rows of the `kind` struct column of `table` that are `kind` actions and that `exclude`
    keeps, flattened to the (requested) `FILE_ACTION_FIELDS` with their declared types. The rows
    `exclude` drops go to `superseded` when it is given, with the same columns.

    Big columns (stats!) are copied at most once: the struct is flattened without copying, and
    rows that are not `kind` actions or that `exclude` drops go in one filter."""
    declared = [f for f in FILE_ACTION_FIELDS[kind] if f.name in _field_names(kind, fields)]
    chunks = table.column(kind).chunks
    n = table.num_rows
    out: dict[str, pa.ChunkedArray] = {}
    for name in wanted:
        child_type = struct_type.field(name).type
        out[name] = pa.chunked_array([c.field(name) for c in chunks], type=child_type)
    valid = pc.is_valid(out["path"])
    if table.column(kind).null_count:
        valid = pc.and_(valid, pc.is_valid(table.column(kind)))
    result = pa.table(
        {
            **{f.name: out[f.name] if f.name in out else pa.chunked_array([pa.nulls(n, f.type)]) for f in declared},
            **{e: out[e] for e in extra if e in out},
        }
    )
    replaced = None
    if exclude is not None:
        dropped = exclude(result)
        if dropped is not None:
            if superseded is not None:
                replaced = _bool_array(pc.and_(valid, dropped))
            valid = pc.and_(valid, pc.invert(dropped))

    def typed(rows: pa.Table) -> pa.Table:
        columns = {}
        for f in declared:
            col = rows.column(f.name)
            if not _compatible(col.type, f.type):
                col = pa.chunked_array([_cast_to(c, f.type, path, f"{kind}.{f.name}") for c in col.chunks], type=f.type)
            columns[f.name] = col
        for e in extra:
            if e in rows.column_names:
                columns[e] = rows.column(e)
        return pa.table(columns)

    if replaced is not None and superseded is not None and replaced.any():
        superseded.append(typed(take_rows(result, np.flatnonzero(replaced))))
    if n:
        result = select_rows(result, _bool_array(valid))
    return typed(result)


def _file_actions_from_parquet(
    storage: Storage,
    path: str,
    kind: str,
    extra: tuple[str, ...],
    exclude: Callable[[pa.Table], pa.Array | None] | None = None,
    *,
    sidecar: bool = False,
    paths: pa.Array | None = None,
    superseded: list[pa.Table] | None = None,
) -> pa.Table:
    """The `kind` actions of one parquet checkpoint file or sidecar (only those whose path is
    one of `paths` when given: filtered batch by batch, the other rows never held); the rows
    `exclude` drops go to `superseded` when given.

    Raises:
        InvalidCheckpointError: see `_action_columns`.
    """
    pf = _parquet_file(storage, path)
    found = _action_columns(pf, path, kind, extra, sidecar=sidecar, fields=None)
    if found is None:
        return _empty(kind)
    struct_type, wanted = found
    keep, row_groups = None, None
    if paths is not None:
        value_set = paths.cast(struct_type.field("path").type)

        def keep(batch: pa.RecordBatch) -> pa.Array:
            return pc.is_in(pc.struct_field(batch.column(kind), "path"), value_set=value_set)

        row_groups = _row_groups_with(pf, kind, keep, path)

    table = _read_file_columns(pf, [f"{kind}.{name}" for name in wanted], path, keep, row_groups)
    return _shape_actions(table, path, kind, struct_type, wanted, extra, exclude, None, superseded)


def _iter_file_actions_from_parquet(
    storage: Storage,
    path: str,
    kind: str,
    extra: tuple[str, ...],
    exclude: Callable[[pa.Table], pa.Array | None] | None,
    *,
    sidecar: bool,
    fields: tuple[str, ...] | None,
    superseded: list[pa.Table] | None = None,
) -> Iterator[pa.Table]:
    """`_file_actions_from_parquet` one batch of `FILE_BATCH_ROWS` rows at a time (only the
    `fields` asked for): a batch is shaped and handed over before the next is decoded. The rows
    `exclude` drops go to `superseded` when given."""
    pf = _parquet_file(storage, path)
    found = _action_columns(pf, path, kind, extra, sidecar=sidecar, fields=fields)
    if found is None or pf.metadata.num_rows == 0:
        return
    struct_type, wanted = found
    pool = pa.default_memory_pool()
    batches = pf.iter_batches(batch_size=FILE_BATCH_ROWS, columns=[f"{kind}.{name}" for name in wanted], use_threads=True)
    while True:
        try:
            batch = next(batches, None)
            if batch is None:
                return
            batch.validate(full=True)  # parquet hands over strings unchecked: no invalid UTF-8 passes
        except _READ_ERRORS as exc:
            raise InvalidCheckpointError(f"checkpoint file {path} cannot be read: {exc}", path=path) from exc
        out = _shape_actions(pa.Table.from_batches([batch]), path, kind, struct_type, wanted, extra, exclude, fields, superseded)
        del batch
        if out.num_rows:
            yield out
        del out
        pool.release_unused()


def _bool_array(mask: pa.Array | pa.ChunkedArray) -> np.ndarray:
    if isinstance(mask, pa.ChunkedArray):
        mask = mask.combine_chunks()
    return to_numpy(mask, null=False)


def select_rows(table: pa.Table, keep: np.ndarray) -> pa.Table:
    """Rows where `keep` is true, without copying when they form few contiguous runs.

    Checkpoints group actions (adds, then removes, or in long runs), so the add rows are usually
    a handful of slices of the file: slicing shares the buffers of the (large) stats column.
    """
    if keep.all():
        return table
    edges = np.flatnonzero(np.diff(np.concatenate(([0], keep.view(np.int8), [0]))))
    starts, ends = edges[0::2], edges[1::2]
    if len(starts) == 0:
        return table.slice(0, 0)
    if len(starts) > max(64, len(keep) // 256):  # fragmented: one compact copy is cheaper later
        return table.filter(from_numpy(keep))
    return pa.concat_tables([table.slice(int(a), int(b - a)) for a, b in zip(starts, ends)])


def _empty(kind: str, extra: tuple[str, ...] = ()) -> pa.Table:
    return pa.table({f.name: empty(f.type) for f in FILE_ACTION_FIELDS[kind]})


class CheckpointReader:
    """Reads one checkpoint through a `Storage`."""

    def __init__(self, storage: Storage, checkpoint: Checkpoint, hint: dict[str, Any] | None = None) -> None:
        self.storage = storage
        self.checkpoint = checkpoint
        self._hint = hint  # `_last_checkpoint.v2Checkpoint` when it describes this checkpoint
        self._non_file: NonFileActions | None = None
        self._json_lines: LogLines | None = None
        if not self.is_json:
            storage.prefetch([p.path for p in checkpoint.parts])  # overlaps the commit reads

    @property
    def is_json(self) -> bool:
        return self.checkpoint.parts[0].fmt == "json"

    def _lines(self) -> LogLines:
        if self._json_lines is None:
            try:
                self._json_lines = read_log_files(self.storage, self.checkpoint.parts, [self.checkpoint.version])
            except InvalidCheckpointError:
                raise
            except Exception as exc:
                if isinstance(exc, DeltaExploreError):
                    raise InvalidCheckpointError(
                        f"V2 checkpoint {self.checkpoint.parts[0].path}: {exc}", path=self.checkpoint.parts[0].path
                    ) from exc
                raise
        return self._json_lines

    def non_file_actions(self) -> NonFileActions:
        """Protocol, metadata, txns, domains, checkpointMetadata and sidecars of the checkpoint."""
        if self._non_file is None:
            self._non_file = self._read_non_file()
        return self._non_file

    def _read_non_file(self) -> NonFileActions:
        out = NonFileActions()
        if self.is_json:
            lines = self._lines()
            for key, target in (
                ("protocol", "protocol"),
                ("metaData", "metadata"),
                ("checkpointMetadata", "checkpoint_metadata"),
            ):
                for _, _, body in lines.objects(key):
                    setattr(out, target, body)
            out.txns = [b for _, _, b in lines.objects("txn")]
            out.domains = [b for _, _, b in lines.objects("domainMetadata")]
            out.sidecars = [b for _, _, b in lines.objects("sidecar")]
            return out
        for part in self.checkpoint.parts:
            pf = _parquet_file(self.storage, part.path)
            names = pf.schema_arrow.names
            cols = [c for c in NON_FILE_COLUMNS if c in names]
            if not cols:
                continue
            table = _read_non_null(pf, cols, part.path)
            for name in cols:
                col = table.column(name)
                if col.null_count == len(col):
                    continue
                rows = col.filter(pc.is_valid(col)).to_pylist()
                if name == "protocol":
                    out.protocol = rows[-1]
                elif name == "metaData":
                    out.metadata = _fix_maps(rows[-1])
                elif name == "txn":
                    out.txns.extend(rows)
                elif name == "domainMetadata":
                    out.domains.extend(_fix_maps(r) for r in rows)
                elif name == "checkpointMetadata":
                    out.checkpoint_metadata = rows[-1]
                elif name == "sidecar":
                    out.sidecars.extend(rows)
        return out

    def sidecar_files(self) -> list[LogFile]:
        """The sidecar files this (V2) checkpoint refers to.

        Raises:
            InvalidCheckpointError: a sidecar path that does not lead into `_delta_log/_sidecars/`.
        """
        out = []
        top = self.checkpoint.parts[0].path
        for sc in self.non_file_actions().sidecars:
            path = sidecar_path(self.storage, sc.get("path"), checkpoint=top)
            try:
                size = int(sc.get("sizeInBytes") or 0)
                mtime = int(sc.get("modificationTime") or 0)
            except (TypeError, ValueError) as exc:
                raise InvalidCheckpointError(f"checkpoint {top}: malformed sidecar action {sc!r}", path=top) from exc
            out.append(
                LogFile(LogKind.CHECKPOINT, path, self.checkpoint.version, self.checkpoint.version, size, mtime, fmt="parquet")
            )
        return out

    def file_actions(
        self,
        kind: str,
        *,
        extra: tuple[str, ...] = (),
        exclude: Callable[[pa.Table], pa.Array | None] | None = None,
        paths: pa.Array | None = None,
        superseded: list[pa.Table] | None = None,
    ) -> pa.Table:
        """All `kind` ('add' or 'remove') actions of the checkpoint, sidecars included.

        The rows `exclude` drops are appended to `superseded` when given (what the newer
        commits replaced: a state moving back to the checkpoint's version restores them).

        `extra` names optional checkpoint-only fields to carry along (`stats_parsed`,
        `partitionValues_parsed`) when present. `exclude(table)` may return a mask of rows to
        drop (superseded by newer commits); it is applied in the same pass that drops the rows
        of other action kinds. `paths` (strings), when given, keeps only the actions of those
        paths, chosen as each batch is read: a few files of a huge checkpoint cost its reading,
        not its memory.
        """
        tables: list[pa.Table] = []
        if self.is_json:
            lines = self._lines()
            t = lines.file_actions(kind).drop_columns(["version", "line"])
            if paths is not None:
                t = t.filter(pc.is_in(t.column("path"), value_set=paths.cast(t.schema.field("path").type)))
            dropped = exclude(t) if exclude is not None and t.num_rows else None
            if dropped is not None and superseded is not None:
                superseded.append(t.filter(dropped))
            tables.append(t.filter(pc.invert(dropped)) if dropped is not None else t)
        sources, sidecar_paths = self._parquet_sources()
        if sources:

            def load(path: str) -> pa.Table:
                return _file_actions_from_parquet(
                    self.storage, path, kind, extra, exclude, sidecar=path in sidecar_paths, paths=paths, superseded=superseded
                )

            if len(sources) == 1:
                tables.append(load(sources[0]))
            else:
                with ThreadPoolExecutor(max_workers=min(8, len(sources))) as pool:
                    tables.extend(pool.map(load, sources))
        if not tables:
            return _empty(kind)
        if len(tables) == 1:
            return tables[0]
        return pa.concat_tables(
            [
                t.cast(tables[0].schema)
                if t.schema != tables[0].schema and set(t.column_names) == set(tables[0].column_names)
                else t
                for t in tables
            ],
            promote_options="permissive",
        )

    def uniform_data_change(self) -> bool | None:
        """The `dataChange` flag every add row of this checkpoint holds, read off the parquet
        footers (row group statistics), when the rows are what the commits wrote but for that
        flag: a parquet checkpoint without sidecars whose adds keep JSON `stats` and no
        `stats_parsed`. None when that cannot be told without reading the rows (a state moved
        across this checkpoint is then read from it instead: `core.log.state.move_log`)."""
        if self.is_json or self.checkpoint.kind.startswith("v2"):
            return None
        value: bool | None = None
        for part in self.checkpoint.parts:
            meta = _parquet_file(self.storage, part.path).metadata
            schema = meta.schema.to_arrow_schema()
            i = schema.get_field_index("add")
            if i < 0:
                continue
            add = schema.field(i).type
            if not pa.types.is_struct(add) or add.get_field_index("stats") < 0 or add.get_field_index("stats_parsed") >= 0:
                return None
            column = next((j for j in range(meta.num_columns) if meta.schema.column(j).path == "add.dataChange"), None)
            if column is None:
                return None
            for g in range(meta.num_row_groups):
                chunk = meta.row_group(g).column(column)
                stats = chunk.statistics
                if chunk.num_values == 0 or (stats is not None and stats.null_count == chunk.num_values):
                    continue  # no add rows in this row group
                if stats is None or not stats.has_min_max or stats.min != stats.max:
                    return None
                if value is not None and value != stats.min:
                    return None
                value = bool(stats.min)
        return value if value is not None else False

    def _parquet_sources(self) -> tuple[list[str], set[str]]:
        """The parquet files holding file actions (parts, then sidecars) and which are sidecars,
        each sidecar checked to be there and the size its checkpoint says (the parts were
        listed; one gone since is an `InvalidCheckpointError` when it is opened).

        Raises:
            InvalidCheckpointError: a sidecar is missing or not the file it refers to.
        """
        parts = [] if self.is_json else [p.path for p in self.checkpoint.parts]
        sidecars = self.sidecar_files()
        sources = [s.path for s in sidecars]
        self.storage.prefetch(sources, {s.path: s.size for s in sidecars if s.size > 0})  # fetched while stat'ed
        infos = dict(zip(sources, self.storage.head_many(sources), strict=True))  # stat'ed side by side
        for path in sources:
            if infos[path] is None:
                raise InvalidCheckpointError(f"checkpoint {self.checkpoint.version} is incomplete: {path} is missing", path=path)
        for sc in sidecars:
            info = infos[sc.path]
            if sc.size > 0 and info is not None and info.size != sc.size:
                raise InvalidCheckpointError(
                    f"sidecar {sc.path} is {info.size} bytes, checkpoint {self.checkpoint.version} says {sc.size}: "
                    "not the file it refers to",
                    path=sc.path,
                )
        return parts + sources, {s.path for s in sidecars}

    def iter_file_actions(
        self,
        kind: str,
        *,
        fields: tuple[str, ...] | None = None,
        extra: tuple[str, ...] = (),
        exclude: Callable[[pa.Table], pa.Array | None] | None = None,
        superseded: list[pa.Table] | None = None,
    ) -> Iterator[pa.Table]:
        """`file_actions(kind)` in batches of at most `FILE_BATCH_ROWS` rows, parts and
        sidecars one after the other, only `fields` of `FILE_ACTION_FIELDS[kind]` (and path,
        deletionVector) when given: a pass over a checkpoint of millions of actions holds one
        batch (what a streaming inspection reads). Empty batches are not yielded. The rows
        `exclude` drops are appended to `superseded` when given (same columns)."""
        if self.is_json:
            t = self._lines().file_actions(kind).drop_columns(["version", "line"])
            t = t.select(_field_names(kind, fields) + [e for e in extra if e in t.column_names])
            dropped = exclude(t) if exclude is not None and t.num_rows else None
            if dropped is not None and superseded is not None:
                superseded.append(t.filter(dropped))
            t = t.filter(pc.invert(dropped)) if dropped is not None else t
            for start in range(0, t.num_rows, FILE_BATCH_ROWS):
                yield t.slice(start, FILE_BATCH_ROWS)
        sources, sidecar_paths = self._parquet_sources()
        for path in sources:
            yield from _iter_file_actions_from_parquet(
                self.storage, path, kind, extra, exclude, sidecar=path in sidecar_paths, fields=fields, superseded=superseded
            )

    def schema_of(self, kind: str) -> pa.DataType | None:
        """The checkpoint's Arrow type for the `kind` column (None for json checkpoints)."""
        if self.is_json:
            return None
        schema = _parquet_file(self.storage, self.checkpoint.parts[0].path).schema_arrow
        idx = schema.get_field_index(kind)
        return schema.field(idx).type if idx >= 0 else None


def sidecar_path(storage: Storage, raw: Any, *, checkpoint: str) -> str:
    """The storage path of a sidecar from its `sidecar.path` (URL-encoded): relative to
    `_delta_log/_sidecars/`, or an absolute URI of a file there. Sidecars live in the table's
    own sidecar directory only, so nothing outside it is read for one.

    Raises:
        InvalidCheckpointError: a path that is not a string or leads anywhere else.
    """
    if not isinstance(raw, str) or not raw:
        raise InvalidCheckpointError(f"checkpoint {checkpoint}: sidecar path {raw!r} is not a file name", path=checkpoint)
    name = unquote(raw)
    if "://" in name or name.startswith("/"):
        base = name.rstrip("/").rsplit("/", 1)[-1]
        own = f"{SIDECAR_DIR}/{base}"
        try:
            same = bool(base) and storage.location(name) == storage.location(own)
        except DeltaExploreError:
            same = False
        if not same:
            raise InvalidCheckpointError(
                f"checkpoint {checkpoint}: sidecar {raw!r} is not in the table's {SIDECAR_DIR}/ directory", path=checkpoint
            )
        return own
    resolved = posixpath.normpath(f"{SIDECAR_DIR}/{name}")
    if not resolved.startswith(f"{SIDECAR_DIR}/"):
        raise InvalidCheckpointError(
            f"checkpoint {checkpoint}: sidecar {raw!r} leads out of the table's {SIDECAR_DIR}/ directory", path=checkpoint
        )
    return resolved


def _fix_maps(obj: dict[str, Any]) -> dict[str, Any]:
    """Parquet maps come back as lists of (key, value) pairs: make them dicts again."""
    out = dict(obj)
    for key in ("configuration",):
        if isinstance(out.get(key), list):
            out[key] = dict(out[key])
    fmt = out.get("format")
    if isinstance(fmt, dict) and isinstance(fmt.get("options"), list):
        out["format"] = {**fmt, "options": dict(fmt["options"])}
    return out


def group_checkpoints(files: list[LogFile]) -> dict[int, list[Checkpoint]]:
    """Complete checkpoints by version (a multi-part one only if every part is present)."""
    by_version: dict[int, list[Checkpoint]] = {}
    multipart: dict[tuple[int, int], dict[int, LogFile]] = {}
    for f in files:
        if f.kind is LogKind.MULTIPART_CHECKPOINT:
            multipart.setdefault((f.version, f.num_parts), {})[f.part] = f
        elif f.kind in (LogKind.CHECKPOINT, LogKind.V2_CHECKPOINT):
            by_version.setdefault(f.version, []).append(Checkpoint(f.version, (f,)))
    for (version, parts), found in multipart.items():
        if len(found) == parts:
            by_version.setdefault(version, []).append(Checkpoint(version, tuple(found[i] for i in range(1, parts + 1))))
    for cps in by_version.values():
        # Prefer V2 (uuid) and classic single files over multi-part ones: fewer reads.
        cps.sort(key=lambda c: (c.kind == "multipart", c.parts[0].name))
    return by_version
