"""Transient failures of a store retried with exponential back-off; the rest raised at once.

Object stores shed load with `503 SlowDown` / `429`, drop connections and time out: such a
request is worth repeating after a pause. A missing file, a refused credential or a bad request
is not. Only reads, listings and stats are retried (a conditional PUT whose first attempt
landed would look like a lost race on the second).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TypeVar

__all__ = ["RETRY_ATTEMPTS", "is_transient", "with_retries"]

RETRY_ATTEMPTS = 5
BASE_DELAY_S = 0.05
MAX_DELAY_S = 2.0
_TRANSIENT_TEXT = (
    "SlowDown",
    "SLOW_DOWN",
    "Throttl",
    "TooManyRequests",
    "RequestTimeout",
    "InternalError",
    "ServiceUnavailable",
    "ServerBusy",
    "Connection reset",
    "Connection aborted",
    "timed out",
    " 429",
    " 500",
    " 502",
    " 503",
    " 504",
)

T = TypeVar("T")


def is_transient(exc: BaseException) -> bool:
    """Whether `exc` (or an exception in its chain) says the store failed for now, not for good."""
    seen = 0
    cause: BaseException | None = exc
    while cause is not None and seen < 8:
        if isinstance(cause, (FileNotFoundError, PermissionError, IsADirectoryError, NotADirectoryError)):
            return False
        if isinstance(cause, (ConnectionError, TimeoutError)):
            return True
        text = f" {type(cause).__name__} {cause}"
        if any(marker in text for marker in _TRANSIENT_TEXT):
            return True
        cause = cause.__cause__ or cause.__context__
        seen += 1
    return False


def with_retries(
    call: Callable[[], T],
    *,
    attempts: int = RETRY_ATTEMPTS,
    base_delay: float = BASE_DELAY_S,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """`call()`, repeated after a transient failure (`is_transient`) with exponential back-off
    and full jitter (`base_delay * 2**n`, at most `MAX_DELAY_S`), `attempts` times in all. The
    last failure, or the first one that is not transient, is raised as it is."""
    for attempt in range(attempts):
        try:
            return call()
        except Exception as exc:
            if attempt == attempts - 1 or not is_transient(exc):
                raise
            sleep(random.uniform(0, min(MAX_DELAY_S, base_delay * 2**attempt)))
    raise AssertionError("unreachable")  # pragma: no cover
