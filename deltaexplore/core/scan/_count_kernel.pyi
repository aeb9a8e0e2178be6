"""Typing of the compiled add/remove counts (`_count_kernel.c`); see `action_counts`."""

from typing_extensions import Buffer

def scan(
    data: Buffer, starts: Buffer, ends: Buffer, flags: Buffer, size: Buffer, records: Buffer, cardinality: Buffer
) -> None: ...
def count_files(paths: list[bytes]) -> tuple[bytes, bytes, bytes, bytes]:
    """Per commit file: (sums int64[n, 2, 6], status int32[n] (0 or an errno), the lines not
    counted, their index int64[m, 3]: file, line number, end offset in those lines)."""

def action_rows(paths: list[bytes]) -> tuple[Buffer, ...]:
    """Per add/remove line read: rows, keys, partition texts (see `scan.action_rows`); eleven
    read-only buffers owning the kernel's memory."""

def hash_strings(offsets: Buffer, data: Buffer, out: Buffer) -> None: ...
