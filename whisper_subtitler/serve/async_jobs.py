"""Asynchronous jobs of ``serve`` (``POST /jobs``, the webhook): rows of the library's durable queue, run by the
server's workers, surviving a restart.

A job is a row of ``library.queue`` in the server's state directory (``--state-dir``, the one ``watch`` uses), with
``origin`` ``serve`` (``POST /jobs``: a path in a library folder, or an upload) or ``webhook`` (Sonarr, Radarr, a
plain ``{"path": ...}``). Its ``options`` are the request's parameters (JSON; ``None``: the server's defaults).
An upload is kept in ``<state dir>/uploads/`` until its job ends; the subtitles go to ``<state dir>/results/<id>/``
in every format (``result.srt``, ``result.vtt``, ...), and a webhook's also beside the media file as the media
servers name them (``--name-template``, default ``{stem}.{lang}``: ``Episode.en.srt``), never over an existing file.

The server holds ``StateLock(state_dir, "serve")`` while it runs: one server runs the jobs of a state directory
(a second one on the same state serves ``/asr`` and answers the job endpoints with 503). Its rows are claimed as
worker ``serve``; on start, rows a stopped or killed server left ``running`` are queued again
(``Queue.requeue_running``), so a job survives a restart and runs again from its start (``transcribe --resume``'s
checkpoints are not used by jobs yet). A stop signal interrupts the running jobs the same way.

Jobs take the workers in turn with ``/asr`` requests (``jobs.JobQueue``, arrival order); one dispatcher per worker
tries to claim a row when a request queued one (``wake``), after each job, at start and every ``RECHECK_S``, and
takes a worker for it only when a row is queued (``Queue.has_queued``); no scan of the queue (``watch``'s rows may
be many). A failed job stays ``failed`` with its error (one attempt:
``POST`` it again with ``"force": true``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from whisper_subtitler.errors import SubtitlerError
from whisper_subtitler.library.queue import FINAL, Queue, Row, StateBusyError, StateLock, Status
from whisper_subtitler.serve.jobs import Cancelled, NothingToDo, ShuttingDown

if TYPE_CHECKING:
    from whisper_subtitler.serve.jobs import JobQueue
    from whisper_subtitler.serve.upload import Upload
    from whisper_subtitler.serve.workers import Worker

log = logging.getLogger(__name__)

WORKER = "serve"  # the queue's worker name for the rows this server runs
ORIGINS = ("serve", "webhook")  # the rows it runs
RECHECK_S = 30.0  # seconds between looks for queued rows when no request woke the dispatchers
UPLOADS = "uploads"
RESULTS = "results"


class RowFailed(Exception):
    """A claimed row's job failed with an expected error (a ``SubtitlerError``), recorded in the row."""


class AsyncJobs:
    """The jobs of one state directory (see the module's docstring). ``changes_of(params)`` turns a job's
    parameters into ``Subtitler.replace`` keyword arguments (raising ``UsageError`` for bad ones);
    ``sidecar_template`` names a webhook's subtitles beside the media."""

    def __init__(
        self, state_dir: Path, changes_of: Callable[[dict[str, Any]], dict[str, Any]], sidecar_template: str
    ) -> None:
        self.state_dir = state_dir
        self.uploads = state_dir / UPLOADS
        self.results = state_dir / RESULTS
        self.changes_of = changes_of
        self.sidecar_template = sidecar_template
        self.stopping = False
        self._lock = StateLock(state_dir, WORKER)
        self._local = threading.local()
        self._cancels: dict[int, threading.Event] = {}
        self._stages: dict[int, str] = {}
        self._wake: asyncio.Event | None = None

    def start(self) -> int:
        """Take the state directory's lock, queue again the rows a stopped server left running, and remove uploads
        whose job is gone. Returns how many rows were queued again. Raises ``StateBusyError`` when another server
        holds the lock, ``SubtitlerError`` when the queue cannot be opened."""
        self._lock.acquire()
        try:
            requeued = self.queue.requeue_running(WORKER)
            kept = {Path(row.path).parent for row in self.queue.rows() if row.status not in FINAL}
            if self.uploads.is_dir():
                for folder in self.uploads.iterdir():
                    if folder not in kept:
                        shutil.rmtree(folder, ignore_errors=True)  # an upload cut short, or a job's left over
        except BaseException:
            self._lock.release()
            raise
        return requeued

    def stop(self) -> None:
        """After the workers stopped: queue again the rows still marked running, and let the lock go."""
        with contextlib.suppress(SubtitlerError):
            self.queue.requeue_running(WORKER)
        self._lock.release()

    @property
    def queue(self) -> Queue:
        """This thread's connection to the queue (one per thread, as ``Queue`` asks)."""
        queue = getattr(self._local, "queue", None)
        if queue is None:
            queue = self._local.queue = Queue.open(self.state_dir)
        return queue

    def wake(self) -> None:
        """Tell the dispatchers a row was queued (call from the event loop's thread)."""
        if self._wake is not None:
            self._wake.set()

    def add_path(self, path: Path, params: dict[str, Any] | None, origin: str, force: bool = False) -> Row:
        """Queue the library file ``path`` (checked by the caller) with ``params`` (``None``: the server's)."""
        row = self.queue.add(path, params, origin, force=force)
        self.wake()
        return row

    def add_upload(self, upload: Upload, params: dict[str, Any]) -> Row:
        """Queue an upload received into ``self.uploads`` (it is removed when its job ends)."""
        row = self.queue.add(upload.path, {**params, "name": upload.name}, "serve", force=True)
        self.wake()
        return row

    def describe(self, row: Row) -> dict[str, Any]:
        """A job as ``GET /jobs/{id}`` answers it: ``id``, ``state`` (``queued``, ``running``, ``done``,
        ``failed``, ``cancelled``, ``skipped``), ``progress`` (share of the audio transcribed, 0-1), ``stage``
        (while running), ``name``, ``path`` (a library file's; ``null`` for an upload), ``origin``, ``error``,
        times (Unix seconds), and once done the ``formats`` of ``result`` and the ``sidecars`` written."""
        options = row.options or {}
        upload = self.is_upload(row)
        folder = self.results / str(row.id)
        done = row.status is Status.DONE
        return {
            "id": row.id,
            "state": str(row.status),
            "progress": round(row.progress, 4),
            "stage": self._stages.get(row.id) if row.status is Status.RUNNING else None,
            "name": options.get("name") or Path(row.path).name,
            "path": None if upload else row.path,
            "origin": row.origin,
            "error": row.error,
            "cancel_requested": row.cancel_requested,
            "added": row.added,
            "started": row.started,
            "finished": row.finished,
            "formats": sorted(p.suffix.lstrip(".") for p in folder.glob("result.*")) if done else [],
            "sidecars": [p for p in row.outputs if not Path(p).is_relative_to(folder)] if done else [],
            "result": f"/jobs/{row.id}/result?output=srt" if done else None,
        }

    def is_upload(self, row: Row) -> bool:
        return Path(row.path).is_relative_to(self.uploads)

    def result_file(self, row: Row, extension: str) -> Path:
        return self.results / str(row.id) / f"result.{extension}"

    def cancel(self, row: Row) -> Row:
        """Cancel a queued or running job (a running one stops at its next stage or batch)."""
        row = self.queue.cancel(row.id)
        event = self._cancels.get(row.id)
        if event is not None:
            event.set()
        if row.status is Status.CANCELLED:
            self._discard_upload(row)
        return row

    def forget(self, row: Row) -> None:
        """Remove a finished job: its row, its results and its upload."""
        self.queue.remove(row.id)
        shutil.rmtree(self.results / str(row.id), ignore_errors=True)
        self._discard_upload(row)

    def _discard_upload(self, row: Row) -> None:
        if self.is_upload(row):
            shutil.rmtree(Path(row.path).parent, ignore_errors=True)

    def interrupt(self) -> None:
        """Stop the running jobs for a server stop (safe from any thread): they are queued again, not cancelled."""
        self.stopping = True
        for event in list(self._cancels.values()):
            event.set()

    async def dispatch(self, queue: JobQueue[Worker]) -> None:
        """Run queued rows on ``queue``'s workers until it closes; start one per worker."""
        if self._wake is None:
            self._wake = asyncio.Event()
        never = asyncio.Event()

        async def forever() -> None:  # nobody goes away: a job is cancelled by DELETE or a stop
            await never.wait()

        pending = True  # at start: the rows a stopped server left queued
        while not queue.closing:
            if not pending:
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), RECHECK_S)
            self._wake.clear()  # the attempt below sees every row queued before it; a later one sets it again
            if not pending and not self._has_queued():
                continue  # a look that finds nothing takes no worker from the /asr requests
            pending = False
            try:
                await queue.run(self._run_one, forever())
                pending = True  # a row ran: look for the next at once
            except NothingToDo:  # not a job: /health's counts leave it out
                pass
            except (RowFailed, Cancelled):  # recorded in the row and counted by the queue
                pending = True
            except ShuttingDown:
                continue
            except Exception:  # a bug in a job, or the queue unreadable: look again after RECHECK_S
                log.exception("an asynchronous job failed")

    def _has_queued(self) -> bool:
        """Whether a row of ours is queued; ``True`` when the queue cannot be read, so that the claim meets the fault
        and the dispatcher reports it."""
        try:
            return self.queue.has_queued(ORIGINS)
        except Exception:
            return True

    def _run_one(self, worker: Worker, cancel: threading.Event) -> None:
        """In a job thread, with ``worker`` to itself: claim the oldest queued row and run it. Raises
        ``NothingToDo`` when no row is queued, and ``Cancelled`` or ``RowFailed`` (from the job's
        ``SubtitlerError``) after recording them in the row, so that ``/health`` counts each row's end as the row's
        status says."""
        queue = self.queue
        row = queue.claim(WORKER, ORIGINS)
        if row is None:
            raise NothingToDo
        self._cancels[row.id] = cancel
        if row.cancel_requested:
            cancel.set()
        options = dict(row.options or {})
        name = options.pop("name", None) or Path(row.path).name
        sidecar = self.sidecar_template if row.origin == "webhook" else None

        def progress(stage: str, fraction: float | None) -> None:
            self._stages[row.id] = stage
            if fraction is not None:
                queue.progress(row.id, fraction)

        try:
            request = ("job", row.path, name, self.changes_of(options), str(self.results / str(row.id)), sidecar)
            value = worker.call(request, cancel, progress)
        except Cancelled:
            if not self.stopping:
                queue.finish(row.id, Status.CANCELLED)
                self._discard_upload(row)
            raise  # stopping: left running, queued again by ``stop`` (or ``start`` after a kill)
        except SubtitlerError as e:
            message = e.message.replace(row.path, name) if self.is_upload(row) else e.message
            queue.finish(row.id, Status.FAILED, error=message, max_attempts=1)
            self._discard_upload(row)
            raise RowFailed(message) from e
        except Exception as e:
            queue.finish(row.id, Status.FAILED, error=f"internal error: {type(e).__name__}: {e}", max_attempts=1)
            self._discard_upload(row)
            raise
        finally:
            self._cancels.pop(row.id, None)
            self._stages.pop(row.id, None)
        folder = self.results / str(row.id)
        outputs = [str(p) for p in sorted(folder.glob("result.*"))] + value["sidecars"]
        queue.finish(row.id, Status.DONE, outputs=outputs)
        self._discard_upload(row)


def open_jobs(
    state_dir: Path, changes_of: Callable[[dict[str, Any]], dict[str, Any]], sidecar_template: str
) -> AsyncJobs | None:
    """The started ``AsyncJobs`` of ``state_dir``, or ``None`` (with a warning: ``/asr`` still serves) when another
    server runs them or the state directory cannot be written."""
    jobs = AsyncJobs(state_dir, changes_of, sidecar_template)
    try:
        requeued = jobs.start()
    except StateBusyError as e:
        log.warning("%s: asynchronous jobs are off in this server (%s)", e.message, e.hint)
        return None
    except (SubtitlerError, OSError) as e:
        log.warning("%s: asynchronous jobs are off in this server (%s)", state_dir, getattr(e, "message", e))
        return None
    if requeued:
        log.warning("%d job(s) interrupted by the last stop queued again", requeued)
    return jobs
