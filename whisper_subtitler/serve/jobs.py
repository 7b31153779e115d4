"""The server's job queue: a fixed set of workers, each running one job at a time in its own thread.

A worker is whatever the jobs need (a ``Subtitler`` with its models loaded: Whisper's decoding is not safe to run
twice at once on one model, so each worker owns its models). Requests wait for a free worker in arrival order
(``asyncio.Queue`` wakes its getters first-in, first-out; a request that arrives at the instant a worker is freed
can still take it before the waiter woken for it, which then waits for the next one) and none is dropped; a
request whose client goes away leaves the queue, or, when its job runs, the job is told to stop (``Cancelled`` at
its next check). ``close`` ends the waiting (``ShuttingDown``) and lets the running jobs finish;
``cancel_running`` asks them to stop.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

W = TypeVar("W")
T = TypeVar("T")


class Cancelled(Exception):
    """The job was stopped: its client went away, or the server is stopping."""


class ShuttingDown(Exception):
    """The server is stopping and takes no more jobs."""


class NothingToDo(Exception):
    """Raised by a job that found no work (an asynchronous-job dispatcher's look at an empty durable queue): it
    held a worker for a moment and is not counted in ``Counts``."""


@dataclass
class Counts:
    """What the queue holds and has done, for ``GET /health``: requests ``waiting`` for a worker, jobs
    ``running``, and jobs ended ``done`` (answered), ``failed`` (an error answered) and ``cancelled``. A job that
    raised ``NothingToDo`` is in none of the ended counts."""

    waiting: int = 0
    running: int = 0
    done: int = 0
    failed: int = 0
    cancelled: int = 0


class JobQueue(Generic[W]):
    """``workers`` taking jobs in arrival order; call from the event loop's thread (``run``, ``close``).

    ``job(worker, cancel)`` runs in a thread with a worker to itself; it should check ``cancel`` (a
    ``threading.Event``) now and then and raise ``Cancelled`` when it is set."""

    def __init__(self, workers: Sequence[W]) -> None:
        if not workers:
            raise ValueError("a job queue needs at least one worker")
        self.workers = tuple(workers)
        self.counts = Counts()
        self.closing = False
        self._idle: asyncio.Queue[W] = asyncio.Queue()
        for worker in self.workers:
            self._idle.put_nowait(worker)
        self._closed = asyncio.Event()
        self._cancels: set[threading.Event] = set()
        self._threads = ThreadPoolExecutor(max_workers=len(self.workers), thread_name_prefix="whisper-subtitler-job")

    async def run(self, job: Callable[[W, threading.Event], T], gone: Awaitable[None]) -> T:
        """The result of ``job`` once a worker has run it; ``gone`` completes when the client disconnects.

        Raises ``ShuttingDown`` when the queue is closed before the job starts, ``Cancelled`` when the client went
        away (while waiting, or running: the job was told to stop and has ended), and what ``job`` raises."""
        if self.closing:
            raise ShuttingDown
        watch = asyncio.ensure_future(gone)
        try:
            worker = await self._take(watch)
            cancel = threading.Event()
            self._cancels.add(cancel)
            self.counts.running += 1
            future = asyncio.wrap_future(self._threads.submit(job, worker, cancel))
            future.add_done_callback(lambda _: self._finished(worker, cancel))  # the worker is free when it ends
            try:
                either: set[asyncio.Future[Any]] = {future, watch}
                await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
                if not future.done():  # the client went away: stop the job, and wait for its thread to end
                    cancel.set()
                    await asyncio.wait({future})
                    if not future.cancelled() and future.exception() is None:
                        self.counts.cancelled += 1  # it ended before it saw the request to stop
                        raise Cancelled
                return self._outcome(future)
            except asyncio.CancelledError:  # the server stops without waiting (a second signal)
                cancel.set()
                raise
        finally:
            watch.cancel()

    def _outcome(self, future: asyncio.Future[T]) -> T:
        try:
            result = future.result()
        except NothingToDo:
            raise
        except Cancelled:
            self.counts.cancelled += 1
            raise
        except BaseException:
            self.counts.failed += 1
            raise
        self.counts.done += 1
        return result

    async def _take(self, watch: asyncio.Future[None]) -> W:
        """A free worker, waiting in line; raises ``Cancelled`` when ``watch`` completes first, ``ShuttingDown``
        when the queue closes first."""
        self.counts.waiting += 1
        getter = asyncio.ensure_future(self._idle.get())
        closed = asyncio.ensure_future(self._closed.wait())
        try:
            first: set[asyncio.Future[Any]] = {getter, watch, closed}
            await asyncio.wait(first, return_when=asyncio.FIRST_COMPLETED)
        finally:
            self.counts.waiting -= 1
            closed.cancel()
            if not getter.done():
                getter.cancel()  # asyncio.Queue hands an item it was about to give to the next getter
        if getter.done() and not getter.cancelled():
            worker = getter.result()
            if not self.closing and not watch.done():
                return worker
            self._idle.put_nowait(worker)
        if self.closing:
            raise ShuttingDown
        self.counts.cancelled += 1
        raise Cancelled

    def _finished(self, worker: W, cancel: threading.Event) -> None:
        self._cancels.discard(cancel)
        self.counts.running -= 1
        self._idle.put_nowait(worker)

    def close(self) -> None:
        """Take no more jobs: the waiting requests end with ``ShuttingDown``; running jobs go on."""
        self.closing = True
        self._closed.set()

    def cancel_running(self) -> None:
        """Ask every running job to stop (safe from any thread)."""
        for cancel in list(self._cancels):
            cancel.set()

    def shutdown(self) -> None:
        """Wait for the job threads to end (after ``close``; with ``cancel_running`` they end soon)."""
        self._threads.shutdown(wait=True)


def check_cancel(cancel: threading.Event) -> Callable[..., None]:
    """A progress callback (``api.ProgressCallback``) that raises ``Cancelled`` once ``cancel`` is set: the job
    stops at its next stage or batch, its ffmpeg process stopped and nothing written."""

    def progress(*_: object) -> None:
        if cancel.is_set():
            raise Cancelled

    return progress
