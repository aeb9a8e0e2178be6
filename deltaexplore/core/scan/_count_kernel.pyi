"""Typing of the compiled add/remove counts (`_count_kernel.c`); see `action_counts`."""

from typing_extensions import Buffer

def scan(
    data: Buffer, starts: Buffer, ends: Buffer, flags: Buffer, size: Buffer, records: Buffer, cardinality: Buffer
) -> None: ...
