"""`Background`: the explorer's work ahead of the user, which always gives way to the user.

One thread runs queued jobs (the next tabs, the previous version) one after the other. The user
comes first:

- while a user's request is served (`user()`, entered by the explorer around what a click or a
  slider move asks for), no queued job starts, and a running job stops at its next `pause()`
  (jobs call it between their stages) until the request is answered;
- a job the user now waits for (`result`) is never paused: it is the user's request;
- jobs for a version the user left are dropped (`cancel`): a queued one never runs, a running
  one ends at its next `pause()` (`Abandoned`), its result never computed.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Hashable, Iterator
from concurrent.futures import CancelledError, Future
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Abandoned", "Background"]

THREAD_PREFIX = "deltaexplore-prepare"


class Abandoned(Exception):
    """Raised in a background job at `pause()` once the job was cancelled."""


@dataclass(eq=False)
class _Job:
    key: Hashable
    fn: Callable[[], Any]
    future: Future[Any] = field(default_factory=Future)
    abandoned: bool = False
    wanted: bool = False


class Background:
    """One background thread whose queued and running jobs yield to user requests."""

    def __init__(self, name: str = THREAD_PREFIX) -> None:
        self.name = name
        self._lock = threading.Condition()
        self._queue: deque[_Job] = deque()
        self._jobs: dict[Hashable, _Job] = {}
        self._running: _Job | None = None
        self._users = 0
        self._thread: threading.Thread | None = None
        self._local = threading.local()
        self._closed = False

    # -- the explorer's side -----------------------------------------------------------------
    def submit(self, key: Hashable, fn: Callable[[], Any]) -> Future[Any]:
        """Queue `fn` (the last in line); its future holds the result."""
        job = _Job(key, fn)
        with self._lock:
            self._queue.append(job)
            self._jobs[key] = job
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
                self._thread.start()
            self._lock.notify_all()
        return job.future

    @contextmanager
    def user(self) -> Iterator[None]:
        """Serve a user's request: no job starts, and a running one pauses, until it is done."""
        with self._lock:
            self._users += 1
        try:
            yield
        finally:
            with self._lock:
                self._users -= 1
                self._lock.notify_all()

    def result(self, future: Future[Any]) -> Any:
        """Wait for a job the user now needs: it runs on (never paused) and its result is returned."""
        with self._lock:
            for job in self._jobs.values():
                if job.future is future:
                    job.wanted = True
            self._lock.notify_all()
        return future.result()

    def cancel(self, keep: Callable[[Hashable], bool]) -> list[Hashable]:
        """Drop every queued or running job whose key `keep` refuses; the keys dropped."""
        dropped = []
        with self._lock:
            for key, job in list(self._jobs.items()):
                if keep(key):
                    continue
                dropped.append(key)
                job.abandoned = True
                del self._jobs[key]
                if job is not self._running:
                    self._queue.remove(job)
                    job.future.cancel()
            self._lock.notify_all()
        return dropped

    def close(self) -> None:
        """Drop every job and end the thread (after the running job's next `pause()`)."""
        self.cancel(lambda _key: False)
        with self._lock:
            self._closed = True
            self._lock.notify_all()

    @property
    def busy(self) -> bool:
        """Whether a job runs or waits."""
        with self._lock:
            return self._running is not None or bool(self._queue)

    # -- the job's side ----------------------------------------------------------------------
    def pause(self) -> None:
        """Called by a running job between its stages: waits while a user's request is served
        (unless the user waits for this job), raises `Abandoned` once the job was cancelled.
        A no-op outside this object's thread."""
        job: _Job | None = getattr(self._local, "job", None)
        if job is None:
            return
        with self._lock:
            while self._users and not job.wanted and not job.abandoned:
                self._lock.wait()
            if job.abandoned:
                raise Abandoned(f"background job {job.key!r} was cancelled")

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._closed and (not self._queue or (self._users and not self._queue[0].wanted)):
                    self._lock.wait()
                if self._closed:
                    return
                job = self._queue.popleft()
                self._running = job
            self._local.job = job
            try:
                if job.future.set_running_or_notify_cancel():
                    try:
                        result = job.fn()
                    except Abandoned:
                        job.future.set_exception(CancelledError(f"background job {job.key!r} was cancelled"))
                    except BaseException as exc:  # noqa: BLE001 - handed to whoever waits for it
                        job.future.set_exception(exc)
                    else:
                        job.future.set_result(result)
            finally:
                self._local.job = None
                with self._lock:
                    self._running = None
                    if self._jobs.get(job.key) is job:
                        del self._jobs[job.key]
                    self._lock.notify_all()
