"""The old path of `deltaexplore.core.protocol.deletion_vectors`, kept for existing imports."""

from deltaexplore.core.protocol.deletion_vectors import (
    DV_MAGIC,
    DeletionVectorDescriptor,
    decode_bitmap,
    dv_file_bytes,
    encode_bitmap,
    read_deletion_vector,
    z85_decode,
    z85_encode,
)

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
