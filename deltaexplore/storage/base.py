"""The storage interface: every byte the core reads or writes goes through a `Storage`.

A `Storage` is rooted at a table directory. Paths given to it are either relative to that root
('/'-separated, already URL-decoded) or absolute URIs/paths (absolute `add` paths, `p` deletion
vectors). Writes and deletes are confined to the root.
"""

from __future__ import annotations

import posixpath
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import unquote

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from deltaexplore.errors import StorageError
from deltaexplore.storage.concurrency import map_bounded

if TYPE_CHECKING:
    import pyarrow.fs as pafs

__all__ = ["TREE_FIELDS", "FileInfo", "Storage", "check_relative", "tree_table"]

#: columns of `Storage.list_tree`: path (relative to the root), size (bytes), modification_time
#: (ms since the epoch; null when the store does not say)
TREE_FIELDS = ("path", "size", "modification_time")


@dataclass(frozen=True, slots=True)
class FileInfo:
    """One listed file: `path` relative to the storage root, size in bytes, mtime in ms."""

    path: str
    size: int
    modification_time: int

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]


def check_relative(path: str, root: str) -> str:
    """Normalise a root-relative path and refuse one that escapes the root.

    Raises:
        StorageError: when the path is absolute or climbs out of the root with `..`.
    """
    if not path or path.startswith("/") or "://" in path:
        raise StorageError(f"expected a path relative to the table root {root}, got {path!r}", path=path)
    norm = posixpath.normpath(path)
    if norm == ".." or norm.startswith("../"):
        raise StorageError(f"path {path!r} escapes the table root {root}", path=path)
    return norm


def tree_table(paths: list[str], sizes: list[int], mtimes: list[int | None]) -> pa.Table:
    """The `list_tree` table (`TREE_FIELDS`), sorted by path."""
    table = pa.table(
        {
            "path": pa.array(paths, pa.string()),
            "size": pa.array(sizes, pa.int64()),
            "modification_time": pa.array(mtimes, pa.int64()),
        }
    )
    return table.take(pc.sort_indices(table.column("path"))) if table.num_rows > 1 else table


class Storage(ABC):
    """Byte access to one table directory and the absolute locations its log refers to."""

    #: URI (or local path) of the table root, without a trailing slash.
    root: str
    #: requests `read_many` / `head_many` keep in flight at once (1: one after the other, as
    #: on a local disk, where threads only add overhead)
    max_concurrency: int = 1

    @property
    def local_root(self) -> str | None:
        """The table root as a directory of this machine's file system, when its files can be
        read with the operating system's own calls (None: an object store, read through this
        interface only)."""
        return None

    def check_commit_safety(self) -> None:
        """Raise `StorageError` when `put_if_absent` cannot be trusted to be atomic here, so
        that two writers could both "create" the same commit and one overwrite the other.
        Local files (atomic link) are safe: nothing to check."""
        return None

    # -- reading -------------------------------------------------------------------------
    @abstractmethod
    def list_dir(self, rel_dir: str, *, start_after: str | None = None) -> list[FileInfo]:
        """Files directly under `rel_dir` (not recursive), sorted by name.

        `start_after` (a file name) lets stores with ordered listing skip earlier names; every
        implementation must return only names greater than it.

        Raises:
            FileNotFoundError: the directory does not exist.
            StorageError: any other failure.
        """

    def list_dir_split(
        self, rel_dir: str, boundaries: list[str], *, start_after: str | None = None, stop_before: str | None = None
    ) -> list[FileInfo]:
        """`list_dir` (only the names before `stop_before` when given), where a store that
        lists names in order from a given name on may list the ranges between `boundaries`
        (names) at once, one round trip per page of each range instead of one after the other
        for them all. A directory with no names in the range is no error when `stop_before`
        is given (raises `FileNotFoundError` only when it does not exist at all)."""
        found = self.list_dir(rel_dir, start_after=start_after)
        return found if stop_before is None else [f for f in found if f.name < stop_before]

    def list_dir_head(self, rel_dir: str) -> tuple[list[FileInfo], str | None]:
        """The first names of `list_dir(rel_dir)`: on a store that lists in pages, one page
        (one round trip), and the name to go on after with `start_after` (None: these are all
        the names). Elsewhere every name, and None.

        Raises:
            FileNotFoundError: the directory does not exist.
            StorageError: any other failure.
        """
        return self.list_dir(rel_dir), None

    @abstractmethod
    def list_tree(self, rel_dir: str = "", *, skip_dir: Callable[[str], bool] | None = None) -> pa.Table:
        """Every file under `rel_dir`, recursively: `TREE_FIELDS` columns, sorted by path.

        Directory symlinks are neither followed nor listed (their targets may lie outside the
        table); a file symlink is listed as itself (size and time of the link), so deleting it
        removes only the link. `skip_dir(rel_path)` returning True keeps a directory (and all
        below it) out of the listing and, where the store has directories, unvisited. A
        missing `rel_dir` gives an empty table.

        Raises:
            StorageError: the listing failed.
        """

    def contains(self, path: str) -> bool:
        """Whether `path` (relative or absolute, as `read_bytes` takes it) lies under the table
        root once resolved (`..`, and on local disks symlinks). Maintenance uses it to leave
        files outside the table alone: it never copies from or deletes outside the root."""
        if "://" in path or path.startswith("/"):
            return False
        try:
            check_relative(path, self.root)
        except StorageError:
            return False
        return True

    def outside(self, paths: pa.Array | pa.ChunkedArray) -> np.ndarray:
        """Per log path (URL-encoded, as actions hold them), whether it lies outside the table
        root (`contains` is False for its directory): absolute paths and URIs elsewhere, `..`
        climbing out, directories a symlink leads out of. Decided once per distinct directory,
        so it stays cheap on a million files in a few hundred partitions."""
        arr = paths.combine_chunks() if isinstance(paths, pa.ChunkedArray) else paths
        if len(arr) == 0:
            return np.zeros(0, dtype=bool)
        dirs = pc.replace_substring_regex(arr.cast(pa.string()), "[^/]*$", "")  # with its trailing '/'
        encoded = pc.dictionary_encode(dirs)
        verdict = [not self.contains(unquote(d or "") + "_") for d in encoded.dictionary.to_pylist()]
        out = np.asarray(verdict, dtype=bool)[pc.fill_null(encoded.indices, 0).to_numpy(zero_copy_only=False)]
        out[arr.is_null().to_numpy(zero_copy_only=False)] = False
        return out

    @abstractmethod
    def read_bytes(self, path: str) -> bytes:
        """The whole content of a file (relative or absolute path).

        Raises:
            FileNotFoundError: the file does not exist.
            StorageError: any other failure.
        """

    def read_range(self, path: str, start: int, length: int) -> bytes:
        """`length` bytes at `start` of a file (short if the file is shorter)."""
        return self.read_bytes(path)[start : start + length]

    def read_many(self, paths: list[str]) -> list[bytes]:
        """`read_bytes` of each path, in order, `max_concurrency` requests at a time.

        Raises:
            FileNotFoundError: a file does not exist (its `filename` is the path asked for).
            StorageError: as `read_bytes`, once every read has ended.
        """

        def read(path: str) -> bytes:
            try:
                return self.read_bytes(path)
            except FileNotFoundError as exc:
                exc.filename = path
                raise

        return map_bounded(read, paths, self.max_concurrency)

    @abstractmethod
    def head(self, path: str) -> FileInfo | None:
        """Size and mtime of a file, or None when it does not exist."""

    def head_many(self, paths: list[str]) -> list[FileInfo | None]:
        """`head` of each path, in order, `max_concurrency` requests at a time."""
        return map_bounded(self.head, paths, self.max_concurrency)

    def exists(self, path: str) -> bool:
        return self.head(path) is not None

    @abstractmethod
    def arrow_filesystem(self) -> tuple[pafs.FileSystem, str]:
        """A pyarrow filesystem and the root path in its namespace, for parquet reads."""

    def open_input(self, path: str) -> pa.NativeFile:
        """A random-access pyarrow file for `path` (parquet reads).

        Raises:
            FileNotFoundError: the file does not exist.
        """
        fs, _ = self.arrow_filesystem()
        return fs.open_input_file(self.location(path))

    def prefetch(self, paths: list[str], sizes: dict[str, int] | None = None) -> None:
        """A hint: `paths` will be opened soon (`open_input`). An object store may start
        fetching them now; a local disk ignores it. `sizes`: what the log says the files
        not listed are (a sidecar action's `sizeInBytes`)."""
        return None

    @abstractmethod
    def location(self, path: str) -> str:
        """The full path of `path` in the `arrow_filesystem()` namespace."""

    @abstractmethod
    def uri(self, path: str = "") -> str:
        """A URI for `path` that other engines (Spark, delta-rs) understand."""

    # -- writing (confined to the root) -----------------------------------------------------
    @abstractmethod
    def put_if_absent(self, rel_path: str, data: bytes) -> bool:
        """Atomically create `rel_path` with `data`; False if it already exists (nothing written)."""

    @abstractmethod
    def write(self, rel_path: str, data: bytes) -> None:
        """Create or replace `rel_path` with `data` (readers see the old or the new content)."""

    @abstractmethod
    def delete(self, rel_path: str) -> None:
        """Delete a file under the root; a missing file is not an error."""
