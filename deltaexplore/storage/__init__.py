"""Storage behind one interface: local disks and fsspec URIs (object stores, memory)."""

from __future__ import annotations

import os
from typing import Any

from deltaexplore.storage.base import FileInfo, Storage, check_relative
from deltaexplore.storage.local import LocalStorage, local_path_of

__all__ = ["FileInfo", "LocalStorage", "Storage", "check_relative", "local_path_of", "storage_for"]


def storage_for(uri: str | os.PathLike[str] | Storage, storage_options: dict[str, Any] | None = None) -> Storage:
    """Choose the storage for a table location.

    An explicit `Storage` is used as is; local paths and `file:` URIs get `LocalStorage`
    (unless storage options are given); anything else with a scheme goes to fsspec.
    """
    if isinstance(uri, Storage):
        return uri
    text = os.fspath(uri)
    if "://" not in text or (text.startswith("file:") and not storage_options):
        return LocalStorage(text)
    from deltaexplore.storage.fsspec_store import FsspecStorage

    return FsspecStorage(text, storage_options)
