"""Storage on any fsspec filesystem (s3://, gs://, az://, memory://, ...)."""

from __future__ import annotations

import datetime as dt
import posixpath
from typing import TYPE_CHECKING, Any

from deltaexplore.errors import MissingDependencyError, StorageError
from deltaexplore.storage.base import FileInfo, Storage, check_relative

if TYPE_CHECKING:
    import pyarrow.fs as pafs

__all__ = ["FsspecStorage"]

_EXTRAS = {"s3": "s3", "s3a": "s3", "gs": "gcs", "gcs": "gcs", "az": "azure", "abfs": "azure", "abfss": "azure"}
#: protocols whose `pipe_file(mode="create")` is verified to be atomic: a conditional PUT
#: (`If-None-Match: *`, s3fs) or a check and set with no I/O in between (memory). fsspec's
#: generic `pipe_file` checks `exists()` and then writes: two writers could both "create" a
#: commit, so commits elsewhere are refused unless the storage option
#: `allow_unsafe_commits=True` says only one writer ever commits to the table.
ATOMIC_CREATE = frozenset({"s3", "s3a", "memory"})
UNSAFE_OPTION = "allow_unsafe_commits"


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


class FsspecStorage(Storage):
    """A table on an fsspec filesystem, addressed by URI."""

    def __init__(self, uri: str, storage_options: dict[str, Any] | None = None) -> None:
        try:
            import fsspec
        except ImportError as exc:  # pragma: no cover - fsspec is a core dependency
            raise MissingDependencyError("fsspec is required for URIs", extra="core") from exc
        scheme = uri.split("://", 1)[0].lower()
        options = dict(storage_options or {})
        #: the options the table was opened with: maintenance hands them on to other engines
        #: (Spark executors open their own filesystem)
        self.storage_options: dict[str, Any] = dict(options)
        self.unsafe_commits_allowed = bool(options.pop(UNSAFE_OPTION, False))
        try:
            fs, path = fsspec.core.url_to_fs(uri, **options)
        except ImportError as exc:
            extra = _EXTRAS.get(scheme, scheme)
            raise MissingDependencyError(
                f"reading {scheme}:// tables needs an fsspec driver: pip install 'deltaexplore[{extra}]' ({exc})",
                extra=extra,
            ) from exc
        except ValueError as exc:
            raise StorageError(f"unsupported URI {uri!r}: {exc}", path=uri) from exc
        self.fs = fs
        self.scheme = scheme
        self._root_path = path.rstrip("/")
        self.root = uri.rstrip("/")

    def __repr__(self) -> str:
        return f"FsspecStorage({self.root!r})"

    def _full(self, path: str) -> str:
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
        directory = self._full(rel_dir)
        prefix = rel_dir.rstrip("/") + "/" if rel_dir else ""
        try:
            entries = (
                self.fs.ls(directory, detail=True, refresh=True)
                if self._supports_refresh()
                else self.fs.ls(directory, detail=True)
            )
        except FileNotFoundError:
            raise
        except Exception as exc:
            raise StorageError(f"cannot list {self.scheme}://{directory}: {exc}", path=directory) from exc
        out = []
        for info in entries:
            if info.get("type") != "file":
                continue
            name = info["name"].rstrip("/").rsplit("/", 1)[-1]
            if start_after is not None and name <= start_after:
                continue
            out.append(FileInfo(prefix + name, int(info.get("size") or 0), _mtime_ms(info)))
        if not out and not entries and not self.fs.exists(directory):
            raise FileNotFoundError(f"no such directory: {self.scheme}://{directory}")
        out.sort(key=lambda f: f.path)
        return out

    def _supports_refresh(self) -> bool:
        return hasattr(self.fs, "invalidate_cache") and self.scheme not in ("memory",)

    def read_bytes(self, path: str) -> bytes:
        full = self._full(path)
        try:
            return bytes(self.fs.cat_file(full))
        except FileNotFoundError as exc:
            raise FileNotFoundError(f"no such file: {self.scheme}://{full}") from exc
        except Exception as exc:
            raise StorageError(f"cannot read {self.scheme}://{full}: {exc}", path=full) from exc

    def read_range(self, path: str, start: int, length: int) -> bytes:
        full = self._full(path)
        try:
            return bytes(self.fs.cat_file(full, start=start, end=start + length))
        except FileNotFoundError as exc:
            raise FileNotFoundError(f"no such file: {self.scheme}://{full}") from exc
        except Exception as exc:
            raise StorageError(f"cannot read {self.scheme}://{full}: {exc}", path=full) from exc

    def head(self, path: str) -> FileInfo | None:
        full = self._full(path)
        try:
            info = self.fs.info(full)
        except FileNotFoundError:
            return None
        except Exception as exc:
            raise StorageError(f"cannot stat {self.scheme}://{full}: {exc}", path=full) from exc
        if info.get("type") != "file":
            return None
        return FileInfo(path, int(info.get("size") or 0), _mtime_ms(info))

    def arrow_filesystem(self) -> tuple[pafs.FileSystem, str]:
        import pyarrow.fs as pafs

        return pafs.PyFileSystem(pafs.FSSpecHandler(self.fs)), self._root_path

    def location(self, path: str) -> str:
        return self._full(path)

    def uri(self, path: str = "") -> str:
        if "://" in path:
            return path
        return f"{self.root}/{path}" if path else self.root

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
        full = posixpath.join(self._root_path, check_relative(rel_path, self.root))
        try:
            self.fs.pipe_file(full, data, mode="create")
        except FileExistsError:
            return False
        except Exception as exc:
            text = str(exc)
            if "PreconditionFailed" in text or "412" in text or "ConditionalRequestConflict" in text:
                return False
            raise StorageError(f"cannot create {self.scheme}://{full}: {exc}", path=full) from exc
        return True

    def write(self, rel_path: str, data: bytes) -> None:
        full = posixpath.join(self._root_path, check_relative(rel_path, self.root))
        try:
            self.fs.pipe_file(full, data)
        except Exception as exc:
            raise StorageError(f"cannot write {self.scheme}://{full}: {exc}", path=full) from exc

    def delete(self, rel_path: str) -> None:
        full = posixpath.join(self._root_path, check_relative(rel_path, self.root))
        try:
            self.fs.rm_file(full)
        except FileNotFoundError:
            pass
        except Exception as exc:
            raise StorageError(f"cannot delete {self.scheme}://{full}: {exc}", path=full) from exc
