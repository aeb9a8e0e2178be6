"""Deletion vectors: descriptors, and reading them from a table with typed errors.

A DV is stored inline (`i`: Z85 text), in a file named from a UUID relative to the table
(`u`: optional directory prefix + 20 Z85 chars of the UUID) or at an absolute path (`p`). The
bytes (Z85, the DV file format, 64-bit portable roaring bitmaps) are `dv_format`'s, the one
definition, which the Spark layer also runs on executors; here `DVFormatError` becomes
`DeletionVectorError` naming the file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

import numpy as np

from deltaexplore.core.protocol import dv_format
from deltaexplore.core.protocol.dv_format import DV_MAGIC, DVFormatError, dv_file_bytes, relative_dv_name
from deltaexplore.errors import DeletionVectorError, DeltaExploreError, StorageError
from deltaexplore.storage import Storage, check_relative

__all__ = [
    "DV_MAGIC",
    "DeletionVectorDescriptor",
    "decode_bitmap",
    "dv_file_bytes",
    "encode_bitmap",
    "read_deletion_vector",
    "z85_decode",
    "z85_encode",
]


def z85_decode(text: str) -> bytes:
    """Decode Z85 text (see `dv_format.z85_decode`).

    Raises:
        DeletionVectorError: bad length, character or padding.
    """
    try:
        return dv_format.z85_decode(text)
    except DVFormatError as exc:
        raise DeletionVectorError(str(exc)) from None


def z85_encode(data: bytes) -> str:
    """Encode bytes (length a multiple of 4) as Z85."""
    return dv_format.z85_encode(data)


@dataclass(frozen=True, slots=True)
class DeletionVectorDescriptor:
    """The `deletionVector` struct of an add/remove action."""

    storage_type: str
    path_or_inline_dv: str
    size_in_bytes: int
    cardinality: int
    offset: int | None = None

    @classmethod
    def from_dict(cls, obj: dict[str, Any]) -> DeletionVectorDescriptor:
        try:
            off = obj.get("offset")
            return cls(
                str(obj["storageType"]),
                str(obj["pathOrInlineDv"]),
                int(obj["sizeInBytes"]),
                int(obj["cardinality"]),
                int(off) if off is not None else None,
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise DeletionVectorError(f"malformed deletion vector descriptor {obj!r}: {exc}") from exc

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "storageType": self.storage_type,
            "pathOrInlineDv": self.path_or_inline_dv,
            "sizeInBytes": self.size_in_bytes,
            "cardinality": self.cardinality,
        }
        if self.offset is not None:
            out["offset"] = self.offset
        return out

    @property
    def unique_id(self) -> str:
        base = f"{self.storage_type}{self.path_or_inline_dv}"
        return base if self.offset is None else f"{base}@{self.offset}"

    def file_path(self) -> str | None:
        """Where the DV file is: table-relative for `u`, absolute for `p`, None when inline.

        Raises:
            DeletionVectorError: unknown storage type, or a malformed `u` path or one whose
                prefix leads out of the table (relative DVs live under the table root).
        """
        if self.storage_type == "i":
            return None
        if self.storage_type == "u":
            encoded = self.path_or_inline_dv
            if len(encoded) < 20:
                raise DeletionVectorError(f"relative DV path {encoded!r} is shorter than a Z85 UUID (20 chars)")
            prefix, uuid_z85 = encoded[:-20], encoded[-20:]
            raw = z85_decode(uuid_z85)
            if len(raw) != 16:
                raise DeletionVectorError(f"relative DV path {encoded!r} does not end in a Z85-encoded UUID")
            name = relative_dv_name(raw)
            path = f"{prefix}/{name}" if prefix else name
            if not prefix:
                return path
            try:
                return check_relative(path, "")
            except StorageError:
                raise DeletionVectorError(
                    f"relative deletion vector {encoded!r} has a prefix {prefix!r} that leads outside the table root",
                    path=path,
                ) from None
        if self.storage_type == "p":
            return unquote(self.path_or_inline_dv)
        raise DeletionVectorError(f"unknown deletion vector storage type {self.storage_type!r} (expected 'u', 'i' or 'p')")


def decode_bitmap(data: bytes, *, where: str = "") -> np.ndarray:
    """Row indexes (sorted uint64) of a serialized DV bitmap (magic + portable roaring64).

    Raises:
        DeletionVectorError: bad magic or undecodable bitmap.
    """
    try:
        return dv_format.decode_bitmap_rows(data)
    except DVFormatError as exc:
        raise DeletionVectorError(f"deletion vector{where}: {exc}") from None


def encode_bitmap(rows: np.ndarray | list[int]) -> bytes:
    """Serialize row indexes as magic + portable 64-bit roaring bitmap."""
    return dv_format.encode_bitmap_rows(np.asarray(rows, dtype=np.uint64))


def read_deletion_vector(storage: Storage, dv: DeletionVectorDescriptor, *, data_file: str = "") -> np.ndarray:
    """The deleted row indexes of a DV, validated against its descriptor.

    Raises:
        DeletionVectorError: missing file, bad version/size/checksum/magic, wrong cardinality.
    """
    where = f" of {data_file}" if data_file else ""
    if dv.storage_type == "i":
        raw = z85_decode(dv.path_or_inline_dv)
        if len(raw) < dv.size_in_bytes:
            raise DeletionVectorError(f"inline deletion vector{where} has {len(raw)} bytes, descriptor says {dv.size_in_bytes}")
        rows = decode_bitmap(raw[: dv.size_in_bytes], where=where)
    else:
        path = dv.file_path()
        assert path is not None
        offset = dv.offset if dv.offset is not None else 1
        try:
            head = storage.read_range(path, 0, 1) if offset != 0 else b"\x01"
            blob = storage.read_range(path, offset, 4 + dv.size_in_bytes + 4)
        except FileNotFoundError as exc:
            raise DeletionVectorError(f"deletion vector file {path}{where} is missing", path=path) from exc
        except DeltaExploreError as exc:
            raise DeletionVectorError(f"deletion vector file {path}{where} cannot be read: {exc}", path=path) from exc
        try:
            data = dv_format.read_dv_entry(head, blob, size=dv.size_in_bytes, offset=offset)
        except DVFormatError as exc:
            raise DeletionVectorError(f"deletion vector file {path}{where}: {exc}", path=path) from None
        rows = decode_bitmap(data, where=f" in {path}")
    if len(rows) != dv.cardinality:
        raise DeletionVectorError(f"deletion vector{where} holds {len(rows)} rows, descriptor says cardinality {dv.cardinality}")
    return rows
