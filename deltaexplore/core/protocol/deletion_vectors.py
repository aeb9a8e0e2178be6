"""Deletion vectors: descriptors, Z85, the DV file format and 64-bit roaring bitmaps.

A DV is stored inline (`i`: Z85 text), in a file named from a UUID relative to the table
(`u`: optional directory prefix + 20 Z85 chars of the UUID) or at an absolute path (`p`). On
disk a DV file is a version byte (1) followed, at the descriptor's offset, by a 4-byte
big-endian size, the bitmap bytes and a 4-byte big-endian CRC-32 of those bytes. The bitmap
bytes are a little-endian magic number (1681511377) and a portable 64-bit roaring bitmap.
"""

from __future__ import annotations

import struct
import uuid
import zlib
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

import numpy as np
from pyroaring import BitMap64

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

DV_MAGIC = 1681511377
_Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
_Z85_INDEX = {c: i for i, c in enumerate(_Z85)}


def z85_decode(text: str) -> bytes:
    """Decode Z85 text (length a multiple of 5) into bytes.

    Two padding conventions exist for data that is not a multiple of 4 bytes: Delta's codec
    pads the last block (the caller cuts the result to `sizeInBytes`), while delta-rs/kernel-rs
    (the `z85` crate) start the last block with one `#` per missing byte. A block cannot
    otherwise start with `#` (84 * 85**4 > 2**32), so both are recognised.

    Raises:
        DeletionVectorError: bad length or character.
    """
    if len(text) % 5:
        raise DeletionVectorError(f"Z85 text length {len(text)} is not a multiple of 5")
    out = bytearray()
    try:
        for i in range(0, len(text), 5):
            block = text[i : i + 5]
            missing = len(block) - len(block.lstrip("#"))
            if missing:
                if missing > 3 or i + 5 != len(text):
                    raise DeletionVectorError(f"invalid Z85 padding in block {block!r}")
                block = "0" * missing + block[missing:]
            value = 0
            for c in block:
                value = value * 85 + _Z85_INDEX[c]
            # Delta's codec keeps the low 32 bits of an overlong (padded) last block.
            chunk = (value & 0xFFFFFFFF).to_bytes(4, "big")
            out += chunk[missing:]
    except KeyError as exc:
        raise DeletionVectorError(f"invalid Z85 character {exc.args[0]!r}") from None
    return bytes(out)


def z85_encode(data: bytes) -> str:
    """Encode bytes (length a multiple of 4) as Z85."""
    if len(data) % 4:
        raise ValueError("Z85 input length must be a multiple of 4")
    out = []
    for i in range(0, len(data), 4):
        value = int.from_bytes(data[i : i + 4], "big")
        chunk = []
        for _ in range(5):
            value, r = divmod(value, 85)
            chunk.append(_Z85[r])
        out.append("".join(reversed(chunk)))
    return "".join(out)


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
            dv_uuid = uuid.UUID(bytes=raw)
            name = f"deletion_vector_{dv_uuid}.bin"
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
    if len(data) < 4:
        raise DeletionVectorError(f"deletion vector{where} is {len(data)} bytes: too short for the magic number")
    magic = struct.unpack_from("<I", data, 0)[0]
    if magic != DV_MAGIC:
        raise DeletionVectorError(f"deletion vector{where} has magic number {magic}, expected {DV_MAGIC}")
    try:
        bitmap = BitMap64.deserialize(bytes(data[4:]))
    except Exception as exc:
        raise DeletionVectorError(f"deletion vector{where}: cannot decode the roaring bitmap: {exc}") from exc
    return np.frombuffer(bitmap.to_array(), dtype=np.uint64) if len(bitmap) else np.zeros(0, dtype=np.uint64)


def encode_bitmap(rows: np.ndarray | list[int]) -> bytes:
    """Serialize row indexes as magic + portable 64-bit roaring bitmap."""
    bitmap = BitMap64(np.asarray(rows, dtype=np.uint64).tolist())
    bitmap.run_optimize()
    return struct.pack("<I", DV_MAGIC) + bitmap.serialize()


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
        if head[:1] != b"\x01":
            raise DeletionVectorError(f"deletion vector file {path} has format version {head[:1]!r}, expected 1", path=path)
        if len(blob) < 8 + dv.size_in_bytes:
            raise DeletionVectorError(
                f"deletion vector file {path} is truncated: expected {dv.size_in_bytes} bytes at offset {offset}", path=path
            )
        size = struct.unpack_from(">I", blob, 0)[0]
        if size != dv.size_in_bytes:
            raise DeletionVectorError(
                f"deletion vector in {path} at offset {offset} is {size} bytes, descriptor says {dv.size_in_bytes}", path=path
            )
        data = blob[4 : 4 + size]
        expected_crc = struct.unpack_from(">I", blob, 4 + size)[0]
        actual_crc = zlib.crc32(data) & 0xFFFFFFFF
        if actual_crc != expected_crc:
            raise DeletionVectorError(
                f"deletion vector in {path} at offset {offset} fails its CRC-32 check "
                f"(stored {expected_crc:08x}, computed {actual_crc:08x})",
                path=path,
            )
        rows = decode_bitmap(data, where=f" in {path}")
    if len(rows) != dv.cardinality:
        raise DeletionVectorError(f"deletion vector{where} holds {len(rows)} rows, descriptor says cardinality {dv.cardinality}")
    return rows


def dv_file_bytes(bitmaps: list[bytes]) -> tuple[bytes, list[int]]:
    """A DV file holding `bitmaps` and the offset of each (for writers)."""
    out = bytearray(b"\x01")
    offsets = []
    for data in bitmaps:
        offsets.append(len(out))
        out += struct.pack(">I", len(data)) + data + struct.pack(">I", zlib.crc32(data) & 0xFFFFFFFF)
    return bytes(out), offsets
