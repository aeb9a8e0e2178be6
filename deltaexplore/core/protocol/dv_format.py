"""The bytes of a deletion vector: Z85 text, 64-bit portable roaring bitmaps, DV files.

Pure Python over numpy and the standard library, importing nothing of deltaexplore: the Spark
layer ships this module *by value* to executors that do not have deltaexplore installed
(`deltaexplore.spark.executor`), so DVs are encoded and decoded where the rows are. The core's
`deletion_vectors` module builds descriptors and checks on it; errors here are
`DVFormatError` (a `ValueError`), which the core turns into `DeletionVectorError`.

Formats (Delta protocol, "Deletion Vector Format"; RoaringFormatSpec for the bitmaps):

- a serialized DV is a little-endian magic number (1681511377) and a 64-bit roaring bitmap in
  the portable format: a uint64 count of 32-bit bitmaps, then for each its uint32 key (the high
  32 bits of the rows it holds) and a 32-bit portable roaring bitmap;
- a 32-bit portable bitmap is a cookie (12346: no run containers, then a uint32 container
  count; or 12347 | (count - 1) << 16, then a bitset of run containers), a (key, cardinality - 1)
  uint16 pair per container, container offsets (always without runs; with runs from 4
  containers), then the containers: run (uint16 count, (start, length - 1) pairs), array
  (cardinality <= 4096 sorted uint16 values) or bitmap (1024 little-endian uint64 words);
- a DV file is a version byte (1), then per DV a big-endian uint32 size, the serialized DV and
  its big-endian CRC-32.
"""

from __future__ import annotations

import struct
import zlib

import numpy as np

__all__ = [
    "DV_MAGIC",
    "DVFormatError",
    "decode_bitmap_rows",
    "decode_roaring64",
    "dv_file_bytes",
    "encode_bitmap_rows",
    "encode_roaring64",
    "read_dv_entry",
    "relative_dv_name",
    "sorted_unique",
    "z85_decode",
    "z85_encode",
]

DV_MAGIC = 1681511377
_Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
_Z85_INDEX = {c: i for i, c in enumerate(_Z85)}

_COOKIE_NO_RUNS = 12346
_COOKIE_RUNS = 12347
_NO_OFFSET_THRESHOLD = 4
_ARRAY_MAX = 4096
_BITMAP_BYTES = 8192


class DVFormatError(ValueError):
    """Bytes that are not a deletion vector in the protocol's format."""


# -- Z85 ------------------------------------------------------------------------------------


def z85_decode(text: str) -> bytes:
    """Decode Z85 text (length a multiple of 5) into bytes.

    Two padding conventions exist for data that is not a multiple of 4 bytes: Delta's codec
    pads the last block (the caller cuts the result to `sizeInBytes`), while delta-rs/kernel-rs
    (the `z85` crate) start the last block with one `#` per missing byte. A block cannot
    otherwise start with `#` (84 * 85**4 > 2**32), so both are recognised.
    """
    if len(text) % 5:
        raise DVFormatError(f"Z85 text length {len(text)} is not a multiple of 5")
    out = bytearray()
    try:
        for i in range(0, len(text), 5):
            block = text[i : i + 5]
            missing = len(block) - len(block.lstrip("#"))
            if missing:
                if missing > 3 or i + 5 != len(text):
                    raise DVFormatError(f"invalid Z85 padding in block {block!r}")
                block = "0" * missing + block[missing:]
            value = 0
            for c in block:
                value = value * 85 + _Z85_INDEX[c]
            # Delta's codec keeps the low 32 bits of an overlong (padded) last block.
            chunk = (value & 0xFFFFFFFF).to_bytes(4, "big")
            out += chunk[missing:]
    except KeyError as exc:
        raise DVFormatError(f"invalid Z85 character {exc.args[0]!r}") from None
    return bytes(out)


def z85_encode(data: bytes) -> str:
    """Encode bytes (length a multiple of 4) as Z85."""
    if len(data) % 4:
        raise DVFormatError("Z85 input length must be a multiple of 4")
    out = []
    for i in range(0, len(data), 4):
        value = int.from_bytes(data[i : i + 4], "big")
        chunk = []
        for _ in range(5):
            value, r = divmod(value, 85)
            chunk.append(_Z85[r])
        out.append("".join(reversed(chunk)))
    return "".join(out)


def relative_dv_name(uuid_bytes: bytes) -> str:
    """The file name of a relative (`u`) DV whose UUID is `uuid_bytes` (16 bytes)."""
    if len(uuid_bytes) != 16:
        raise DVFormatError(f"a DV UUID is 16 bytes, got {len(uuid_bytes)}")
    h = uuid_bytes.hex()
    return f"deletion_vector_{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}.bin"


# -- 32-bit portable roaring ----------------------------------------------------------------


def _decode_roaring32(buf: memoryview, start: int, high: int) -> tuple[list[np.ndarray], int]:
    """Rows (uint64, ``high << 32`` added) of the 32-bit bitmap at `start`; the end offset."""
    pos = start
    if len(buf) < pos + 4:
        raise DVFormatError("roaring bitmap truncated in its cookie")
    cookie = struct.unpack_from("<I", buf, pos)[0]
    pos += 4
    run_flags: np.ndarray | None = None
    if cookie & 0xFFFF == _COOKIE_RUNS:
        size = (cookie >> 16) + 1
        nbytes = (size + 7) // 8
        if len(buf) < pos + nbytes:
            raise DVFormatError("roaring bitmap truncated in its run bitset")
        run_flags = np.unpackbits(np.frombuffer(buf, np.uint8, nbytes, pos), bitorder="little")[:size].astype(bool)
        pos += nbytes
        has_offsets = size >= _NO_OFFSET_THRESHOLD
    elif cookie == _COOKIE_NO_RUNS:
        if len(buf) < pos + 4:
            raise DVFormatError("roaring bitmap truncated in its container count")
        size = struct.unpack_from("<I", buf, pos)[0]
        pos += 4
        has_offsets = True
    else:
        raise DVFormatError(f"roaring bitmap has cookie {cookie}, expected {_COOKIE_NO_RUNS} or {_COOKIE_RUNS}")
    if len(buf) < pos + 4 * size:
        raise DVFormatError(f"roaring bitmap truncated in the header of its {size} containers")
    header = np.frombuffer(buf, "<u2", 2 * size, pos).reshape(size, 2)
    keys = header[:, 0].astype(np.uint64)
    cards = header[:, 1].astype(np.int64) + 1
    pos += 4 * size
    if has_offsets:
        pos += 4 * size
    base = np.uint64(high) << np.uint64(32)
    out: list[np.ndarray] = []
    for i in range(size):
        low_base = base | (keys[i] << np.uint64(16))
        if run_flags is not None and run_flags[i]:
            if len(buf) < pos + 2:
                raise DVFormatError("roaring bitmap truncated in a run container")
            n_runs = struct.unpack_from("<H", buf, pos)[0]
            pos += 2
            if len(buf) < pos + 4 * n_runs:
                raise DVFormatError("roaring bitmap truncated in a run container")
            runs = np.frombuffer(buf, "<u2", 2 * n_runs, pos).reshape(n_runs, 2).astype(np.int64)
            pos += 4 * n_runs
            lengths = runs[:, 1] + 1
            total = int(lengths.sum())
            if total != cards[i]:
                raise DVFormatError(f"run container holds {total} values, its header says {cards[i]}")
            starts = np.repeat(runs[:, 0] - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths)
            values = starts + np.arange(total, dtype=np.int64)
            if values.size and (values.max() > 0xFFFF or np.any(np.diff(values) <= 0)):
                raise DVFormatError("run container runs overlap, are out of order or pass 65535")
            out.append(values.astype(np.uint64) | low_base)
        elif cards[i] <= _ARRAY_MAX:
            n = int(cards[i])
            if len(buf) < pos + 2 * n:
                raise DVFormatError("roaring bitmap truncated in an array container")
            values = np.frombuffer(buf, "<u2", n, pos)
            pos += 2 * n
            if n > 1 and np.any(np.diff(values.astype(np.int32)) <= 0):
                raise DVFormatError("array container values are not strictly increasing")
            out.append(values.astype(np.uint64) | low_base)
        else:
            if len(buf) < pos + _BITMAP_BYTES:
                raise DVFormatError("roaring bitmap truncated in a bitmap container")
            bits = np.unpackbits(np.frombuffer(buf, np.uint8, _BITMAP_BYTES, pos), bitorder="little")
            pos += _BITMAP_BYTES
            values = np.flatnonzero(bits).astype(np.uint64)
            if len(values) != cards[i]:
                raise DVFormatError(f"bitmap container holds {len(values)} values, its header says {cards[i]}")
            out.append(values | low_base)
    if size > 1 and np.any(np.diff(keys.astype(np.int64)) <= 0):
        raise DVFormatError("roaring bitmap container keys are not strictly increasing")
    return out, pos


def _groups(sorted_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(distinct keys, start, end) of the runs of equal values in `sorted_keys`."""
    starts = np.concatenate([[0], np.flatnonzero(sorted_keys[1:] != sorted_keys[:-1]) + 1]).astype(np.int64)
    ends = np.append(starts[1:], len(sorted_keys))
    return sorted_keys[starts], starts, ends


def sorted_unique(rows: np.ndarray) -> np.ndarray:
    """`rows` as sorted unique uint64 (no copy when they are already)."""
    values = np.asarray(rows, dtype=np.uint64)
    if len(values) > 1 and not bool(np.all(values[1:] > values[:-1])):
        values = np.sort(values)
        values = values[np.concatenate([[True], values[1:] != values[:-1]])]
    return values


def _encode_roaring32(low: np.ndarray) -> bytes:
    """A 32-bit portable bitmap of sorted unique `low` values (uint64 below 2**32)."""
    keys, starts, ends = _groups(low >> np.uint64(16))
    containers: list[bytes] = []
    is_run: list[bool] = []
    for s, e in zip(starts, ends):
        values = (low[s:e] & np.uint64(0xFFFF)).astype(np.int64)
        n = len(values)
        breaks = np.flatnonzero(np.diff(values) != 1) + 1
        run_starts = np.concatenate([[0], breaks])
        n_runs = len(run_starts)
        run_bytes = 2 + 4 * n_runs
        plain_bytes = 2 * n if n <= _ARRAY_MAX else _BITMAP_BYTES
        if run_bytes < plain_bytes:
            run_ends = np.append(breaks, n)
            pairs = np.empty((n_runs, 2), dtype="<u2")
            pairs[:, 0] = values[run_starts]
            pairs[:, 1] = run_ends - run_starts - 1
            containers.append(struct.pack("<H", n_runs) + pairs.tobytes())
            is_run.append(True)
        elif n <= _ARRAY_MAX:
            containers.append(values.astype("<u2").tobytes())
            is_run.append(False)
        else:
            bits = np.zeros(65536, dtype=bool)
            bits[values] = True
            containers.append(np.packbits(bits, bitorder="little").tobytes())
            is_run.append(False)
    size = len(containers)
    header = np.empty((size, 2), dtype="<u2")
    header[:, 0] = keys
    header[:, 1] = (ends - starts) - 1
    runs = any(is_run)
    if runs:
        head = struct.pack("<I", _COOKIE_RUNS | ((size - 1) << 16))
        head += np.packbits(np.array(is_run, dtype=bool), bitorder="little").tobytes()
        with_offsets = size >= _NO_OFFSET_THRESHOLD
    else:
        head = struct.pack("<II", _COOKIE_NO_RUNS, size)
        with_offsets = True
    head += header.tobytes()
    if with_offsets:
        first = len(head) + 4 * size
        sizes = np.array([len(c) for c in containers], dtype=np.int64)
        offsets = first + np.concatenate([[0], np.cumsum(sizes)[:-1]])
        head += offsets.astype("<u4").tobytes()
    return head + b"".join(containers)


# -- 64-bit bitmaps and serialized DVs ------------------------------------------------------


def decode_roaring64(data: bytes | memoryview) -> np.ndarray:
    """Rows (sorted uint64) of a portable 64-bit roaring bitmap."""
    buf = memoryview(data)
    if len(buf) < 8:
        raise DVFormatError("64-bit roaring bitmap is shorter than its bitmap count")
    count = struct.unpack_from("<Q", buf, 0)[0]
    pos = 8
    parts: list[np.ndarray] = []
    previous = -1
    for _ in range(count):
        if len(buf) < pos + 4:
            raise DVFormatError("64-bit roaring bitmap truncated in a bitmap key")
        high = struct.unpack_from("<I", buf, pos)[0]
        if high <= previous:
            raise DVFormatError("64-bit roaring bitmap keys are not strictly increasing")
        previous = high
        values, pos = _decode_roaring32(buf, pos + 4, high)
        parts.extend(values)
    if pos != len(buf):
        raise DVFormatError(f"64-bit roaring bitmap has {len(buf) - pos} bytes after its last bitmap")
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint64)


def encode_roaring64(rows: np.ndarray) -> bytes:
    """A portable 64-bit roaring bitmap of `rows` (any order, duplicates allowed)."""
    values = sorted_unique(rows)
    if len(values) == 0:
        return struct.pack("<Q", 0)
    highs, starts, ends = _groups(values >> np.uint64(32))
    out = [struct.pack("<Q", len(highs))]
    for h, s, e in zip(highs, starts, ends):
        out.append(struct.pack("<I", int(h)))
        out.append(_encode_roaring32(values[s:e] & np.uint64(0xFFFFFFFF)))
    return b"".join(out)


def decode_bitmap_rows(data: bytes | memoryview) -> np.ndarray:
    """Row indexes (sorted uint64) of a serialized DV (magic + portable 64-bit roaring)."""
    if len(data) < 4:
        raise DVFormatError(f"a serialized deletion vector is {len(data)} bytes: too short for the magic number")
    magic = struct.unpack_from("<I", data, 0)[0]
    if magic != DV_MAGIC:
        raise DVFormatError(f"deletion vector magic number is {magic}, expected {DV_MAGIC}")
    return decode_roaring64(memoryview(data)[4:])


def encode_bitmap_rows(rows: np.ndarray) -> bytes:
    """A serialized DV (magic + portable 64-bit roaring) of row indexes `rows`."""
    return struct.pack("<I", DV_MAGIC) + encode_roaring64(rows)


def read_dv_entry(head: bytes, blob: bytes, *, size: int, offset: int) -> bytes:
    """The serialized DV of a DV file's entry at `offset`, checked.

    Args:
        head: the file's first byte (its format version).
        blob: the file's bytes from `offset`: size, DV, CRC-32 (at least ``size + 8`` bytes).
        size: the descriptor's `sizeInBytes`.
    """
    if head[:1] != b"\x01":
        raise DVFormatError(f"deletion vector file has format version {head[:1]!r}, expected 1")
    if len(blob) < 8 + size:
        raise DVFormatError(f"deletion vector file is truncated: expected {size} bytes at offset {offset}")
    stored = struct.unpack_from(">I", blob, 0)[0]
    if stored != size:
        raise DVFormatError(f"deletion vector at offset {offset} is {stored} bytes, descriptor says {size}")
    data = blob[4 : 4 + size]
    expected_crc = struct.unpack_from(">I", blob, 4 + size)[0]
    actual_crc = zlib.crc32(data) & 0xFFFFFFFF
    if actual_crc != expected_crc:
        raise DVFormatError(
            f"deletion vector at offset {offset} fails its CRC-32 check (stored {expected_crc:08x}, computed {actual_crc:08x})"
        )
    return bytes(data)


def dv_file_bytes(bitmaps: list[bytes]) -> tuple[bytes, list[int]]:
    """A DV file holding the serialized DVs `bitmaps`, and the offset of each."""
    out = bytearray(b"\x01")
    offsets = []
    for data in bitmaps:
        offsets.append(len(out))
        out += struct.pack(">I", len(data)) + data + struct.pack(">I", zlib.crc32(data) & 0xFFFFFFFF)
    return bytes(out), offsets
