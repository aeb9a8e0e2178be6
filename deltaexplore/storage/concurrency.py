"""Requests to a store overlapped: many reads or stats at once, never more than a bound in flight.

An object store answers each request after a round trip (20-100 ms); a table's open makes
hundreds (commits, checkpoint parts, sidecars, deletion vectors). Issued one after the other
they cost a round trip each; `map_bounded` runs them on a pool of at most `max_workers`
threads, so they cost about `n / max_workers` round trips, with a bound that keeps the store's
connection pool and rate limits in reach.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

__all__ = ["DEFAULT_MAX_CONCURRENCY", "in_background", "map_bounded"]

#: requests in flight at once on an object store unless the storage option `max_concurrency`
#: says otherwise: at 100 ms a round trip, the 1,000 commits of a log without a checkpoint are
#: 4 round trips (16 with 64 in flight). Many reads on S3 go out from one thread on asyncio
#: (`s3_requests.S3Client.get_many`); elsewhere a pool has at most one thread per request
DEFAULT_MAX_CONCURRENCY = 256

T = TypeVar("T")
R = TypeVar("R")


def map_bounded(fn: Callable[[T], R], items: Sequence[T], max_workers: int) -> list[R]:
    """`[fn(x) for x in items]`, at most `max_workers` calls at a time, results in order.

    The first exception is raised once every call has ended (nothing runs on behind the
    caller's back); with one worker or one item the calls run in the caller's thread.
    """
    if max_workers <= 1 or len(items) <= 1:
        return [fn(x) for x in items]
    with ThreadPoolExecutor(max_workers=min(max_workers, len(items)), thread_name_prefix="deltaexplore-io") as pool:
        futures = [pool.submit(fn, x) for x in items]
    return [f.result() for f in futures]


def in_background(fn: Callable[[], R]) -> Callable[[], R]:
    """Start `fn()` on its own thread now; the returned function waits for its result (or
    raises its exception). For a request that can overlap another one in flight."""
    box: list[tuple[bool, object]] = []

    def run() -> None:
        try:
            box.append((True, fn()))
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting caller
            box.append((False, exc))

    thread = threading.Thread(target=run, name="deltaexplore-io", daemon=True)
    thread.start()

    def result() -> R:
        thread.join()
        ok, value = box[0]
        if not ok:
            raise value  # type: ignore[misc]
        return value  # type: ignore[return-value]

    return result
