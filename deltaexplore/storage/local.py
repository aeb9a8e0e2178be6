"""Local filesystem storage: plain `os` calls, atomic create via hard links."""

from __future__ import annotations

import os
import stat
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlparse

import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.errors import StorageError
from deltaexplore.storage.base import FileInfo, Storage, check_relative, tree_table

if TYPE_CHECKING:
    import pyarrow.fs as pafs

__all__ = ["LocalStorage", "local_path_of", "walk_local"]


def local_path_of(uri: str) -> str | None:
    """The local filesystem path of a `file:` URI or absolute path; None for other schemes."""
    if uri.startswith("file:"):
        parsed = urlparse(uri)
        if parsed.netloc not in ("", "localhost"):
            return None
        return unquote(parsed.path)
    if uri.startswith("/"):
        return uri
    if len(uri) > 2 and uri[1] == ":" and uri[2] in "\\/":  # windows drive
        return uri
    return None


def walk_local(top: str, skip_dir: Callable[[str], bool] | None = None) -> pa.Table:
    """Every file under the local directory `top` (`TREE_FIELDS`, paths relative to `top`).

    Directory symlinks are not followed (nor listed); file symlinks are listed with their own
    `lstat`. A missing `top` gives an empty table.

    Raises:
        StorageError: a directory cannot be read.
    """
    paths: list[str] = []
    sizes: list[int] = []
    mtimes: list[int | None] = []
    stack = [""]
    while stack:
        rel_dir = stack.pop()
        directory = os.path.join(top, rel_dir) if rel_dir else top
        try:
            it = os.scandir(directory)
        except (FileNotFoundError, NotADirectoryError):
            continue  # removed while listing (or `top` is missing)
        except OSError as exc:
            raise StorageError(f"cannot list {directory}: {exc}", path=directory) from exc
        with it:
            for entry in it:
                rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
                try:
                    st = entry.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue
                if stat.S_ISDIR(st.st_mode):
                    if skip_dir is None or not skip_dir(rel):
                        stack.append(rel)
                    continue
                if stat.S_ISLNK(st.st_mode):
                    try:
                        target_is_dir = entry.is_dir(follow_symlinks=True)
                    except OSError:
                        target_is_dir = False
                    if target_is_dir:
                        continue  # a directory symlink: never followed
                elif not stat.S_ISREG(st.st_mode):
                    continue  # fifos, sockets, devices
                paths.append(rel)
                sizes.append(st.st_size)
                mtimes.append(st.st_mtime_ns // 1_000_000)
    return tree_table(paths, sizes, mtimes)


class LocalStorage(Storage):
    """A table on the local disk."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        root_s = os.fspath(root)
        local = local_path_of(root_s) if root_s.startswith("file:") else root_s
        if local is None:
            raise StorageError(f"not a local path: {root_s}", path=root_s)
        self._root = Path(os.path.abspath(local))
        self.root = str(self._root)

    def __repr__(self) -> str:
        return f"LocalStorage({self.root!r})"

    @property
    def local_root(self) -> str:
        return self.root

    def _abs(self, path: str) -> str:
        if "://" in path or path.startswith(("/", "file:")):
            local = local_path_of(path)
            if local is None:
                raise StorageError(f"cannot read {path!r} from a local table: unsupported URI scheme", path=path)
            return local
        return os.path.join(self.root, path)

    def _write_path(self, rel_path: str) -> str:
        """The local path to create, replace or delete `rel_path` at, after checking that its
        directory (the deepest part that exists, symlinks resolved) is inside the root: a
        directory symlink must not carry a write or a delete out of the table."""
        target = os.path.join(self.root, check_relative(rel_path, self.root))
        if not self._inside(os.path.dirname(target)):
            raise StorageError(
                f"{rel_path!r} resolves outside the table root {self.root} (through a symbolic link): not written or deleted",
                path=rel_path,
            )
        return target

    def _inside(self, local: str) -> bool:
        """Whether `local`, symlinks resolved (the part that exists), is the root or below it."""
        real_root = os.path.realpath(self.root)
        real = os.path.realpath(local)
        return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)

    def contains(self, path: str) -> bool:
        local = local_path_of(path) if ("://" in path or path.startswith(("/", "file:"))) else None
        if local is None:
            if not super().contains(path):
                return False
            local = os.path.join(self.root, path)
        return self._inside(local)

    def list_tree(self, rel_dir: str = "", *, skip_dir: Callable[[str], bool] | None = None) -> pa.Table:
        rel = check_relative(rel_dir, self.root) if rel_dir else ""
        top = os.path.join(self.root, rel) if rel else self.root
        if rel and not self._inside(top):
            return tree_table([], [], [])  # a directory symlink out of the table: never followed
        table = walk_local(top, None if skip_dir is None else (lambda p: skip_dir(f"{rel}/{p}" if rel else p)))
        if rel and table.num_rows:
            table = table.set_column(0, "path", pc.binary_join_element_wise(rel, table.column("path"), "/"))
        return table

    def list_dir(self, rel_dir: str, *, start_after: str | None = None) -> list[FileInfo]:
        directory = self._abs(rel_dir) if rel_dir else self.root
        prefix = rel_dir.rstrip("/") + "/" if rel_dir else ""
        out = []
        try:
            with os.scandir(directory) as it:
                for entry in it:
                    if start_after is not None and entry.name <= start_after:
                        continue
                    try:
                        if not entry.is_file():
                            continue
                        st = entry.stat()
                    except FileNotFoundError:  # deleted while listing
                        continue
                    out.append(FileInfo(prefix + entry.name, st.st_size, st.st_mtime_ns // 1_000_000))
        except FileNotFoundError:
            raise
        except NotADirectoryError as exc:
            raise FileNotFoundError(str(exc)) from exc
        except OSError as exc:
            raise StorageError(f"cannot list {directory}: {exc}", path=directory) from exc
        out.sort(key=lambda f: f.path)
        return out

    def read_bytes(self, path: str) -> bytes:
        full = self._abs(path)
        try:
            with open(full, "rb") as fh:
                return fh.read()
        except (FileNotFoundError, IsADirectoryError) as exc:
            raise FileNotFoundError(f"no such file: {full}") from exc
        except OSError as exc:
            raise StorageError(f"cannot read {full}: {exc}", path=full) from exc

    def read_range(self, path: str, start: int, length: int) -> bytes:
        full = self._abs(path)
        try:
            with open(full, "rb") as fh:
                fh.seek(start)
                return fh.read(length)
        except FileNotFoundError as exc:
            raise FileNotFoundError(f"no such file: {full}") from exc
        except OSError as exc:
            raise StorageError(f"cannot read {full}: {exc}", path=full) from exc

    def head(self, path: str) -> FileInfo | None:
        try:
            st = os.stat(self._abs(path))
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            raise StorageError(f"cannot stat {path}: {exc}", path=path) from exc
        if not os.path.isfile(self._abs(path)):
            return None
        return FileInfo(path, st.st_size, st.st_mtime_ns // 1_000_000)

    def arrow_filesystem(self) -> tuple[pafs.FileSystem, str]:
        import pyarrow.fs as pafs  # opening a table needs no Arrow filesystem (~20 ms of import with pyarrow.parquet)

        return pafs.LocalFileSystem(), self.root

    def open_input(self, path: str) -> pa.NativeFile:
        """A plain file (not memory-mapped: mapped pages count as the process's memory, and
        parquet reads with a buffered stream are as fast)."""
        full = self._abs(path)
        try:
            return pa.OSFile(full)
        except FileNotFoundError:
            raise
        except OSError as exc:
            if not os.path.exists(full):
                raise FileNotFoundError(f"no such file: {full}") from exc
            raise StorageError(f"cannot open {full}: {exc}", path=full) from exc

    def location(self, path: str) -> str:
        return self._abs(path)

    def uri(self, path: str = "") -> str:
        return Path(self._abs(path) if path else self.root).as_uri()

    def put_if_absent(self, rel_path: str, data: bytes) -> bool:
        target = self._write_path(rel_path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        tmp = os.path.join(os.path.dirname(target), f".{os.path.basename(target)}.{uuid.uuid4().hex}.tmp")
        try:
            with open(tmp, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            try:
                os.link(tmp, target)  # atomic, fails if target exists, never shows partial content
            except FileExistsError:
                return False
            except OSError:  # filesystem without hard links: exclusive create
                try:
                    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                except FileExistsError:
                    return False
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
            return True
        finally:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass

    def write(self, rel_path: str, data: bytes) -> None:
        target = self._write_path(rel_path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        tmp = os.path.join(os.path.dirname(target), f".{os.path.basename(target)}.{uuid.uuid4().hex}.tmp")
        try:
            with open(tmp, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, target)
        except OSError as exc:
            raise StorageError(f"cannot write {target}: {exc}", path=target) from exc
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)

    def delete(self, rel_path: str) -> None:
        target = self._write_path(rel_path)
        try:
            os.unlink(target)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise StorageError(f"cannot delete {target}: {exc}", path=target) from exc
