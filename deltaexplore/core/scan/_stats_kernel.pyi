"""Typing of the compiled stats search (`_stats_kernel.c`); see `stats_search._locate`."""

from typing_extensions import Buffer

def locate(
    data: Buffer,
    starts: Buffer,
    limits: Buffer,
    has: Buffer,
    needle: bytes,
    depth: int,
    first: Buffer,
    length: Buffer,
    quoted: Buffer,
    unsure: Buffer,
    head: Buffer,
    at: Buffer,
    redo: Buffer,
) -> None: ...
def leading_records(data: Buffer, starts: Buffer, limits: Buffer, has: Buffer, values: Buffer, found: Buffer) -> None: ...
