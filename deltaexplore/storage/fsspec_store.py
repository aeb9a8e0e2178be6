"""Storage on any fsspec filesystem (s3://, gs://, az://, memory://, ...).

Every store goes through the same code: reads, listings and stats are retried on transient
failures (`storage.retries`), many reads or stats overlap up to `max_concurrency` requests
(`storage.concurrency`; s3fs's connection pool is widened to match), and a parquet file whose
size the listing gave is fetched in one request when it is small (`WHOLE_READ_BYTES`), in
range requests otherwise. On S3, reads, stats and listings are plain signed requests
(`storage.s3_requests`: one request per read, listings in ranges at once), s3fs serves the rest.
"""

from __future__ import annotations

import datetime as dt
import posixpath
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import fsspec
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs

from deltaexplore.errors import MissingDependencyError, StorageError
from deltaexplore.storage.base import FileInfo, Storage, check_relative, tree_table
from deltaexplore.storage.concurrency import DEFAULT_MAX_CONCURRENCY, in_background, map_bounded
from deltaexplore.storage.credentials import redact, secret_values
from deltaexplore.storage.local import LocalStorage, walk_local
from deltaexplore.storage.retries import is_transient, with_retries
from deltaexplore.storage.s3_requests import S3Client, s3_client_for

__all__ = ["FsspecStorage"]

_EXTRAS = {"s3": "s3", "s3a": "s3", "gs": "gcs", "gcs": "gcs", "az": "azure", "abfs": "azure", "abfss": "azure"}
#: protocols whose `pipe_file(mode="create")` is verified to be atomic: a conditional PUT
#: (`If-None-Match: *`, s3fs) or a check and set with no I/O in between (memory). fsspec's
#: generic `pipe_file` checks `exists()` and then writes: two writers could both "create" a
#: commit, so commits elsewhere are refused unless the storage option
#: `allow_unsafe_commits=True` says only one writer ever commits to the table.
ATOMIC_CREATE = frozenset({"s3", "s3a", "memory"})
UNSAFE_OPTION = "allow_unsafe_commits"
#: storage option: requests kept in flight at once (`Storage.max_concurrency`)
CONCURRENCY_OPTION = "max_concurrency"
#: a parquet file (checkpoint part, sidecar) at most this big, of a size the listing gave, is
#: fetched in one request: pyarrow would make three (footer length, footer, columns), each a
#: round trip
WHOLE_READ_BYTES = 32 << 20
#: whole files kept for a second open (a checkpoint is opened for its protocol and metadata,
#: then for its file actions): the newest ones, this many bytes at most
WHOLE_CACHE_BYTES = 64 << 20


def _mtime_ms(info: dict[str, Any]) -> int:
    for key in ("LastModified", "mtime", "last_modified", "updated", "created"):
        value = info.get(key)
        if value is None:
            continue
        if isinstance(value, dt.datetime):
            if value.tzinfo is None:
                value = value.replace(tzinfo=dt.UTC)
            return int(value.timestamp() * 1000)
        if isinstance(value, (int, float)):
            return int(value * 1000) if value < 1e11 else int(value)
        if isinstance(value, str):
            try:
                parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError:
                continue
            if parsed.tzinfo is None:
                parsed = parsed.replace(tzinfo=dt.UTC)
            return int(parsed.timestamp() * 1000)
    return 0


def _concurrency(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise StorageError(f"storage option {CONCURRENCY_OPTION} must be a positive integer, got {value!r}")
    return value


def _once(fn: Callable[[], bytes]) -> Callable[[], bytes]:
    """`fn`, called on the first call only (its result kept)."""
    box: list[bytes] = []
    lock = threading.Lock()

    def call() -> bytes:
        with lock:
            if not box:
                box.append(fn())
            return box[0]

    return call


def _under_skipped(path: str, rel: str, skip_dir: Callable[[str], bool], memo: dict[str, bool]) -> bool:
    """Whether a directory of `path` (below the listed `rel`) is one `skip_dir` keeps out
    (answers per directory kept in `memo`)."""
    directory = path.rpartition("/")[0]
    if not directory or directory == rel:
        return False
    known = memo.get(directory)
    if known is None:
        known = memo[directory] = _under_skipped(directory, rel, skip_dir, memo) or skip_dir(directory)
    return known


class FsspecStorage(Storage):
    """A table on an fsspec filesystem, addressed by URI."""

    def __init__(self, uri: str, storage_options: dict[str, Any] | None = None) -> None:
        scheme = uri.split("://", 1)[0].lower()
        options = dict(storage_options or {})
        self._secrets = secret_values(options)
        #: the options the table was opened with: maintenance hands them on to other engines
        #: (Spark executors open their own filesystem)
        self.storage_options: dict[str, Any] = dict(options)
        self.unsafe_commits_allowed = bool(options.pop(UNSAFE_OPTION, False))
        self.max_concurrency = _concurrency(options.pop(CONCURRENCY_OPTION, DEFAULT_MAX_CONCURRENCY))
        if scheme in ("s3", "s3a") and isinstance(options.get("config_kwargs") or {}, dict):
            # botocore keeps 10 connections: more requests in flight would wait for one
            config = dict(options.get("config_kwargs") or {})
            config.setdefault("max_pool_connections", self.max_concurrency)
            options["config_kwargs"] = config
        #: sizes of the files listed or stat'ed (log files do not change once written)
        self._sizes: dict[str, int] = {}
        #: whole small files fetched or being fetched (`prefetch`, `open_input`), newest last
        self._whole: OrderedDict[str, Callable[[], bytes]] = OrderedDict()
        self._whole_lock = threading.Lock()
        #: on S3 with options it understands, reads, stats and listings go through plain signed
        #: requests (`storage.s3_requests`): s3fs is imported only when something else is asked
        self._s3: S3Client | None = s3_client_for(options) if scheme in ("s3", "s3a") else None
        self._options = options
        self._fs: Any = None
        self._fs_lock = threading.Lock()
        if self._s3 is None:
            path = self._make_fs(uri)
        else:
            path = uri.split("://", 1)[1]
        self.scheme = scheme
        self._root_path = path.rstrip("/")
        self.root = uri.rstrip("/")

    @property
    def fs(self) -> Any:
        """The fsspec filesystem (made on first use where reads go through `storage.s3_requests`)."""
        if self._fs is None:
            with self._fs_lock:
                if self._fs is None:
                    self._make_fs(self.root)
        return self._fs

    def _make_fs(self, uri: str) -> str:
        """Make the fsspec filesystem of `uri` (kept as `fs`); its path in the filesystem."""
        scheme = uri.split("://", 1)[0].lower()
        try:
            fs, path = fsspec.core.url_to_fs(uri, **self._options)
        except ImportError as exc:
            extra = _EXTRAS.get(scheme, scheme)
            raise MissingDependencyError(
                f"reading {scheme}:// tables needs an fsspec driver: pip install 'deltaexplore[{extra}]' ({exc})",
                extra=extra,
            ) from exc
        except Exception as exc:  # a driver refusing its options: never echo their values  # noqa: BLE001 - drivers raise anything: re-raised typed, credentials cut out
            raise self._error(f"cannot open {uri!r} with these storage options", exc, uri) from self._cause(exc)
        self._fs = fs
        return str(path)

    def __repr__(self) -> str:
        return f"FsspecStorage({self.root!r})"

    def _error(self, message: str, exc: BaseException, path: str) -> StorageError:
        """A `StorageError` for a failure of the driver: `message: <its text>` with the values
        of credential options cut out (raise it `from self._cause(exc)`)."""
        return StorageError(redact(f"{message}: {exc}", self._secrets), path=path)

    def _cause(self, exc: BaseException) -> BaseException | None:
        """`exc`, or None when a credential appears anywhere in its chain (the traceback would
        print it)."""
        texts: list[str] = []
        cause: BaseException | None = exc
        while cause is not None and len(texts) < 8:
            texts.append(f"{type(cause).__name__} {cause} {cause.args!r}")
            cause = cause.__cause__ or cause.__context__
        return None if any(redact(t, self._secrets) != t for t in texts) else exc

    def _full(self, path: str) -> str:
        if "://" in path and self._s3 is not None:
            scheme, _, rest = path.partition("://")
            if scheme.lower() not in ("s3", "s3a"):
                raise StorageError(f"cannot read {path!r} through a {self.scheme}:// table", path=path)
            return rest
        if "://" in path:
            scheme = path.split("://", 1)[0]
            if scheme.lower() not in (
                self.scheme,
                *(self.fs.protocol if isinstance(self.fs.protocol, tuple) else (self.fs.protocol,)),
            ):
                raise StorageError(f"cannot read {path!r} through a {self.scheme}:// table", path=path)
            return self.fs._strip_protocol(path)
        if path.startswith("/") and self.scheme not in ("file", "local"):
            raise StorageError(f"absolute local path {path!r} in a {self.scheme}:// table", path=path)
        return posixpath.join(self._root_path, path) if path else self._root_path

    def list_dir(self, rel_dir: str, *, start_after: str | None = None) -> list[FileInfo]:
        if self._s3 is not None:
            return self.list_dir_split(rel_dir, [], start_after=start_after)
        directory = self._full(rel_dir)
        prefix = rel_dir.rstrip("/") + "/" if rel_dir else ""
        try:
            entries = with_retries(
                lambda: (
                    self.fs.ls(directory, detail=True, refresh=True)
                    if self._supports_refresh()
                    else self.fs.ls(directory, detail=True)
                )
            )
        except FileNotFoundError:
            raise
        except Exception as exc:  # noqa: BLE001 - drivers raise anything: re-raised typed, credentials cut out
            raise self._error(f"cannot list {self.scheme}://{directory}", exc, directory) from self._cause(exc)
        out = []
        for info in entries:
            if info.get("type") != "file":
                continue
            name = info["name"].rstrip("/").rsplit("/", 1)[-1]
            if start_after is not None and name <= start_after:
                continue
            out.append(FileInfo(prefix + name, int(info.get("size") or 0), _mtime_ms(info)))
            self._sizes[out[-1].path] = out[-1].size
        if not out and not entries and not self.fs.exists(directory):
            raise FileNotFoundError(f"no such directory: {self.scheme}://{directory}")
        out.sort(key=lambda f: f.path)
        return out

    def list_dir_split(
        self, rel_dir: str, boundaries: list[str], *, start_after: str | None = None, stop_before: str | None = None
    ) -> list[FileInfo]:
        """`list_dir`; on S3 (`storage.s3_requests`) the ranges of names between `boundaries`
        are listed at once, each from its first name on (ListObjectsV2 `start-after`), the
        last one up to `stop_before`."""
        if self._s3 is None:
            return super().list_dir_split(rel_dir, boundaries, start_after=start_after, stop_before=stop_before)
        s3 = self._s3
        directory = self._full(rel_dir).rstrip("/")
        bucket, _, key_dir = directory.partition("/")
        prefix = rel_dir.rstrip("/") + "/" if rel_dir else ""
        key_prefix = key_dir + "/" if key_dir else ""
        cuts = sorted(
            {b for b in boundaries if (start_after is None or b > start_after) and (stop_before is None or b < stop_before)}
        )
        lows: list[str | None] = [start_after, *cuts]
        highs: list[str | None] = [*cuts, stop_before]

        def one_range(bounds: tuple[str | None, str | None]) -> list[Any]:
            low, high = bounds
            return with_retries(
                lambda: s3.list(
                    bucket,
                    key_prefix,
                    start_after=None if low is None else key_prefix + low,
                    stop_after=None if high is None else key_prefix + high,
                )
            )

        try:
            ranges = map_bounded(one_range, list(zip(lows, highs, strict=True)), self.max_concurrency)
        except Exception as exc:  # noqa: BLE001 - re-raised typed, credentials cut out
            raise self._error(f"cannot list {self.scheme}://{directory}", exc, directory) from self._cause(exc)
        out = []
        for found in ranges:
            for obj in found:
                info = FileInfo(prefix + obj.key[len(key_prefix) :], obj.size, obj.modification_time)
                if stop_before is not None and info.name >= stop_before:
                    continue
                out.append(info)
                self._sizes[info.path] = info.size
        if not out and start_after is None and not boundaries and stop_before is None:
            # S3 has no directories: nothing under the prefix (not even below it) is no directory
            try:
                below, _ = with_retries(lambda: s3.list_page(bucket, key_prefix, delimiter=""))
            except Exception as exc:  # noqa: BLE001 - re-raised typed, credentials cut out
                raise self._error(f"cannot list {self.scheme}://{directory}", exc, directory) from self._cause(exc)
            if not below:
                raise FileNotFoundError(f"no such directory: {self.scheme}://{directory}")
        return out

    def list_dir_head(self, rel_dir: str) -> tuple[list[FileInfo], str | None]:
        """On S3 the first page of ListObjectsV2 (an empty one: `list_dir`, which tells a
        missing directory from an empty range); elsewhere `list_dir`."""
        if self._s3 is None:
            return super().list_dir_head(rel_dir)
        s3 = self._s3
        directory = self._full(rel_dir).rstrip("/")
        bucket, _, key_dir = directory.partition("/")
        prefix = rel_dir.rstrip("/") + "/" if rel_dir else ""
        key_prefix = key_dir + "/" if key_dir else ""
        try:
            page, token = with_retries(lambda: s3.list_page(bucket, key_prefix))
        except Exception as exc:  # noqa: BLE001 - re-raised typed, credentials cut out
            raise self._error(f"cannot list {self.scheme}://{directory}", exc, directory) from self._cause(exc)
        if not page:
            return self.list_dir(rel_dir), None
        out = [FileInfo(prefix + obj.key[len(key_prefix) :], obj.size, obj.modification_time) for obj in page]
        for info in out:
            self._sizes[info.path] = info.size
        return out, None if token is None else out[-1].name

    def list_tree(self, rel_dir: str = "", *, skip_dir: Callable[[str], bool] | None = None) -> pa.Table:
        rel = check_relative(rel_dir, self.root) if rel_dir else ""
        top = posixpath.join(self._root_path, rel) if rel else self._root_path
        if self._is_local():
            # a local filesystem has directory symlinks: walk it without following them
            table = walk_local(top, None if skip_dir is None else (lambda p: skip_dir(f"{rel}/{p}" if rel else p)))
            if rel and table.num_rows:
                table = table.set_column(0, "path", pc.binary_join_element_wise(rel, table.column("path"), "/"))
            return table
        try:
            if self._supports_refresh():
                self.fs.invalidate_cache(top)
            found = with_retries(lambda: self.fs.find(top, detail=True, withdirs=False))
        except FileNotFoundError:
            return tree_table([], [], [])
        except Exception as exc:  # noqa: BLE001 - drivers raise anything: re-raised typed, credentials cut out
            raise self._error(f"cannot list {self.scheme}://{top}", exc, top) from self._cause(exc)
        cut = len(self._root_path) + 1
        paths: list[str] = []
        sizes: list[int] = []
        mtimes: list[int | None] = []
        memo: dict[str, bool] = {}
        for name, info in found.items():
            name = name.rstrip("/")
            if info.get("type", "file") != "file" or info.get("islink") or not name.startswith(self._root_path + "/"):
                continue
            path = name[cut:]
            if skip_dir is not None and _under_skipped(path, rel, skip_dir, memo):
                continue
            paths.append(path)
            sizes.append(int(info.get("size") or 0))
            mtimes.append(_mtime_ms(info) or None)
        return tree_table(paths, sizes, mtimes)

    def contains(self, path: str) -> bool:
        if "://" in path:
            try:
                full = self._full(path)
            except StorageError:
                return False
            if not full.startswith(self._root_path + "/"):
                return False
            path = full[len(self._root_path) + 1 :]
        if not super().contains(path):
            return False
        if self._is_local():
            return LocalStorage(self._root_path).contains(path)
        return True

    def _is_local(self) -> bool:
        if self._s3 is not None:
            return False
        protocol = self.fs.protocol if isinstance(self.fs.protocol, tuple) else (self.fs.protocol,)
        return bool({"file", "local"} & set(protocol))

    def _supports_refresh(self) -> bool:
        return hasattr(self.fs, "invalidate_cache") and self.scheme not in ("memory",)

    def read_bytes(self, path: str) -> bytes:
        full = self._full(path)
        try:
            if self._s3 is not None:
                s3, (bucket, _, key) = self._s3, full.partition("/")
                return with_retries(lambda: s3.get(bucket, key))
            return bytes(with_retries(lambda: self.fs.cat_file(full)))
        except FileNotFoundError as exc:
            raise FileNotFoundError(f"no such file: {self.scheme}://{full}") from exc
        except Exception as exc:  # noqa: BLE001 - drivers raise anything: re-raised typed, credentials cut out
            raise self._error(f"cannot read {self.scheme}://{full}", exc, full) from self._cause(exc)

    def read_many(self, paths: list[str]) -> list[bytes]:
        """`read_bytes` of each path, in order, `max_concurrency` requests at a time; on S3
        (`storage.s3_requests`) from one thread on asyncio, a read that failed for now
        (`retries.is_transient`) then repeated as `read_bytes` repeats it."""
        if self._s3 is None or len(paths) <= 1:
            return super().read_many(paths)
        s3 = self._s3
        fulls = [self._full(p) for p in paths]
        by_bucket: dict[str, list[int]] = {}
        for i, full in enumerate(fulls):
            by_bucket.setdefault(full.partition("/")[0], []).append(i)
        out: list[bytes | Exception] = [b""] * len(paths)
        for bucket, rows in by_bucket.items():
            try:
                got = s3.get_many(bucket, [fulls[i].partition("/")[2] for i in rows], self.max_concurrency)
            except Exception as exc:  # noqa: BLE001 - the event loop failing: each read as `read_bytes` does it
                got = [exc] * len(rows)
            for i, value in zip(rows, got, strict=True):
                out[i] = value
        failures = [(i, v) for i, v in enumerate(out) if isinstance(v, Exception)]
        retried = map_bounded(lambda i: self.read_bytes(paths[i]), [i for i, v in failures if is_transient(v)], 8)
        for i, data in zip([i for i, v in failures if is_transient(v)], retried, strict=True):
            out[i] = data
        for i, value in failures:
            if is_transient(value):
                continue
            if isinstance(value, FileNotFoundError):
                missing = FileNotFoundError(f"no such file: {self.scheme}://{fulls[i]}")
                missing.filename = paths[i]
                raise missing from value
            raise self._error(f"cannot read {self.scheme}://{fulls[i]}", value, fulls[i]) from self._cause(value)
        return [v for v in out if isinstance(v, bytes)]

    def read_range(self, path: str, start: int, length: int) -> bytes:
        full = self._full(path)
        try:
            if self._s3 is not None:
                s3, (bucket, _, key) = self._s3, full.partition("/")
                return with_retries(lambda: s3.get(bucket, key, start, start + length))
            return bytes(with_retries(lambda: self.fs.cat_file(full, start=start, end=start + length)))
        except FileNotFoundError as exc:
            raise FileNotFoundError(f"no such file: {self.scheme}://{full}") from exc
        except Exception as exc:  # noqa: BLE001 - drivers raise anything: re-raised typed, credentials cut out
            raise self._error(f"cannot read {self.scheme}://{full}", exc, full) from self._cause(exc)

    def head(self, path: str) -> FileInfo | None:
        full = self._full(path)
        if self._s3 is not None:
            s3, (bucket, _, key) = self._s3, full.partition("/")
            try:
                found = with_retries(lambda: s3.head(bucket, key))
            except Exception as exc:  # noqa: BLE001 - re-raised typed, credentials cut out
                raise self._error(f"cannot stat {self.scheme}://{full}", exc, full) from self._cause(exc)
            if found is None:
                return None
            self._sizes[path] = found.size
            return FileInfo(path, found.size, found.modification_time)
        try:
            info = with_retries(lambda: self.fs.info(full))
        except FileNotFoundError:
            return None
        except Exception as exc:  # noqa: BLE001 - drivers raise anything: re-raised typed, credentials cut out
            raise self._error(f"cannot stat {self.scheme}://{full}", exc, full) from self._cause(exc)
        if info.get("type") != "file":
            return None
        self._sizes[path] = int(info.get("size") or 0)
        return FileInfo(path, self._sizes[path], _mtime_ms(info))

    def arrow_filesystem(self) -> tuple[pafs.FileSystem, str]:
        return pafs.PyFileSystem(pafs.FSSpecHandler(self.fs)), self._root_path

    def _small(self, path: str) -> bool:
        size = self._sizes.get(path)
        return size is not None and size <= WHOLE_READ_BYTES

    def _whole_read(self, path: str, *, background: bool) -> Callable[[], bytes]:
        """The fetch of a whole small file: the one started before, else a new one (started on
        its own thread when `background`); the newest fetches are kept up to `WHOLE_CACHE_BYTES`."""
        with self._whole_lock:
            fetch = self._whole.get(path)
            if fetch is None:
                fetch = in_background(lambda: self.read_bytes(path)) if background else _once(lambda: self.read_bytes(path))
                self._whole[path] = fetch
                kept, total = [], 0
                for p in reversed(self._whole):
                    total += self._sizes.get(p, 0)
                    if total > WHOLE_CACHE_BYTES:
                        kept.append(p)
                for p in kept:
                    del self._whole[p]
            self._whole.move_to_end(path)
        return fetch

    def prefetch(self, paths: list[str], sizes: dict[str, int] | None = None) -> None:
        """Start fetching the small files among `paths` (parquet checkpoint parts, sidecars)
        in the background, so that `open_input` finds them fetched: they overlap the commit
        reads and one another. A size in `sizes` counts until a listing or stat gives one."""
        for path, size in (sizes or {}).items():
            self._sizes.setdefault(path, size)
        for path in paths:
            if self._small(path):
                self._whole_read(path, background=True)

    def open_input(self, path: str) -> pa.NativeFile:
        """A random-access file for parquet reads: a file listed or stat'ed at most
        `WHOLE_READ_BYTES` is fetched whole in one request (retried like every read; kept for
        the next open), a bigger or unknown one is read with range requests."""
        if not self._small(path):
            return super().open_input(path)
        try:
            return pa.BufferReader(self._whole_read(path, background=False)())
        except BaseException:
            with self._whole_lock:  # a failed fetch is not kept: the next open fetches again
                self._whole.pop(path, None)
            raise

    def location(self, path: str) -> str:
        return self._full(path)

    def uri(self, path: str = "") -> str:
        if "://" in path:
            return path
        return f"{self.root}/{path}" if path else self.root

    def _write_full(self, rel_path: str) -> str:
        """The store path to create, replace or delete `rel_path` at (confined to the root; on a
        local filesystem its directory must not resolve outside through a symlink)."""
        rel = check_relative(rel_path, self.root)
        if self._is_local():
            LocalStorage(self._root_path)._write_path(rel)
        return posixpath.join(self._root_path, rel)

    def check_commit_safety(self) -> None:
        if self.scheme in ATOMIC_CREATE or self.unsafe_commits_allowed:
            return
        raise StorageError(
            f"cannot commit to {self.root}: creating a file on {self.scheme}:// is not known to be atomic here "
            f"(fsspec checks that it is absent, then writes), so a concurrent writer's commit could be overwritten. "
            f"Commits are supported on {', '.join(sorted(ATOMIC_CREATE))}; if only one writer ever commits to this "
            f"table, pass storage_options={{'{UNSAFE_OPTION}': True}}",
            path=self.root,
        )

    def put_if_absent(self, rel_path: str, data: bytes) -> bool:
        full = self._write_full(rel_path)
        try:
            self.fs.pipe_file(full, data, mode="create")
        except FileExistsError:
            return False
        except Exception as exc:  # noqa: BLE001 - drivers raise anything: re-raised typed, credentials cut out
            text = str(exc)
            if "PreconditionFailed" in text or "412" in text or "ConditionalRequestConflict" in text:
                return False
            raise self._error(f"cannot create {self.scheme}://{full}", exc, full) from self._cause(exc)
        return True

    def write(self, rel_path: str, data: bytes) -> None:
        full = self._write_full(rel_path)
        try:
            self.fs.pipe_file(full, data)
        except Exception as exc:  # noqa: BLE001 - drivers raise anything: re-raised typed, credentials cut out
            raise self._error(f"cannot write {self.scheme}://{full}", exc, full) from self._cause(exc)

    def delete(self, rel_path: str) -> None:
        full = self._write_full(rel_path)
        try:
            self.fs.rm_file(full)
        except FileNotFoundError:
            pass
        except Exception as exc:  # noqa: BLE001 - drivers raise anything: re-raised typed, credentials cut out
            raise self._error(f"cannot delete {self.scheme}://{full}", exc, full) from self._cause(exc)
