"""Arrow string arrays seen as numpy: each string's byte offsets and the bytes they index.

Vectorized code that reads text in place (stats JSON, log lines) starts from these instead of
copying the strings out.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

__all__ = ["text_buffers"]


def text_buffers(strings: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(int64 offsets of the n strings: n + 1 of them, uint8 data buffer) of a string, binary
    or their large variant, without copying the data."""
    n = len(strings)
    wide = pa.types.is_large_string(strings.type) or pa.types.is_large_binary(strings.type)
    raw = np.frombuffer(strings.buffers()[1], dtype=np.int64 if wide else np.int32)
    offsets = raw[strings.offset : strings.offset + n + 1].astype(np.int64)
    buf = strings.buffers()[2]
    data = np.frombuffer(buf, dtype=np.uint8) if buf is not None else np.zeros(0, np.uint8)
    return offsets, data
