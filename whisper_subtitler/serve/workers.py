"""Worker processes: each holds a ``Subtitler`` with its own loaded models and runs one job at a time.

Processes, not threads: openai-whisper keeps process-wide state that a job changes while it runs (word timestamps
switch ``MultiHeadAttention.use_sdpa`` off and on again, ``whisper.model.disable_sdpa``), so two jobs in one process
would disturb each other's attention and could change each other's words. A process also contains a crash: a
worker that dies (out of memory, a fault in native code) fails its job with a 500 and is started again.

The parent talks to a worker over a pipe: ``("asr", path, name, changes, output)`` -> the subtitle bytes,
``("language", path)`` -> ``(code, probability)``, ``("job", path, name, changes, folder, sidecar)`` -> the files
written (``job_files``; ``("progress", stage, fraction)`` messages come before the reply), ``None`` -> exit. A job
is cancelled through an event the child's progress callback checks (``jobs.check_cancel``). Workers ignore SIGINT
and SIGTERM: the parent decides when they stop (a terminal's Ctrl-C and systemd's SIGTERM reach every process of
the group).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import multiprocessing
import os
import resource
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Any

from whisper_subtitler import errors
from whisper_subtitler.errors import SubtitlerError
from whisper_subtitler.options import DecodingOptions, DeviceOptions, SpeakerOptions
from whisper_subtitler.serve.jobs import Cancelled, check_cancel

if TYPE_CHECKING:
    from whisper_subtitler.api import Result

log = logging.getLogger(__name__)

PROGRESS_STEP = 0.01  # the least growth of a job's fraction done that is sent to the parent (0-1)
POLL_S = 0.1  # seconds between looks at the client's cancel request and the worker's life while a job runs
STOP_S = 30.0  # seconds a worker has to exit when told to, before it is killed


@dataclass(frozen=True)
class WorkerSettings:
    """What a worker loads: the ``Subtitler``'s decoding, speaker and device options; ``check_speakers``: check that
    diarization left to its default can run (the first worker does; the others follow its answer)."""

    decoding: DecodingOptions
    speakers: SpeakerOptions
    device: DeviceOptions
    check_speakers: bool = True
    log_level: int = logging.WARNING


class WorkerDied(SubtitlerError):
    """A worker process ended during a job (answered with 500; the worker is started again)."""


def peak_rss_mb() -> float:
    """This process's peak resident memory in MiB: ``VmHWM`` of ``/proc/self/status`` on Linux (kB), else
    ``getrusage`` (bytes on macOS). Not ``getrusage`` on Linux: its ``ru_maxrss`` survives ``execve`` (the kernel
    keeps the old memory's high-water mark), so a server started by a large process (a test runner at 5 GB)
    would report its parent's peak as its own."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024, 1)


def _serve_jobs(conn: Connection, settings: WorkerSettings, cancel: Any) -> None:
    """A worker's life: load, say ``("ready", info)`` (or ``("error", ...)``), then answer jobs until ``None``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s worker: %(message)s")
    logging.getLogger("whisper_subtitler").setLevel(settings.log_level)
    from whisper_subtitler.api import Subtitler

    try:
        sub = Subtitler(
            decoding=settings.decoding,
            speakers=settings.speakers,
            device=settings.device,
            check_speakers=settings.check_speakers,
        )
        models = sub.pipeline.models
        if sub.diarizing and not models.exclusive:  # else loaded per job, after Whisper has left the device
            with models.diarizer():
                pass
        info = {"model": models.model_name, "device": sub.selection.device, "diarize": sub.diarizing}
    except SubtitlerError as e:
        conn.send(("error", type(e).__name__, e.message, e.hint))
        return
    conn.send(("ready", info, peak_rss_mb()))
    parent = os.getppid()
    while True:
        try:
            request = conn.recv()
        except EOFError:  # the parent is gone
            return
        if request is None:
            return
        progress = stop_check(cancel, parent)
        try:
            if request[0] == "job":
                _, path, name, changes, folder, sidecar = request
                result = sub.replace(**changes).run(Path(path), progress=reporting(conn, progress))
                named = dataclasses.replace(result, transcript=dataclasses.replace(result.transcript, source=name))
                value: Any = job_files(named, Path(path), Path(folder), sidecar)
            elif request[0] == "asr":
                _, path, name, changes, output = request
                result = sub.replace(**changes).run(Path(path), progress=progress)
                named_transcript = dataclasses.replace(result.transcript, source=name)
                value = dataclasses.replace(result, transcript=named_transcript).to_bytes(output)
            else:
                _, path = request
                value = sub.detect_language(Path(path))
            reply: tuple = ("ok", value)
        except Cancelled:
            reply = ("cancelled",)
        except SubtitlerError as e:
            reply = ("error", type(e).__name__, e.message, e.hint)
        except Exception as e:  # a bug: the job fails, the worker goes on
            log.exception("job failed")
            reply = ("bug", f"{type(e).__name__}: {e}")
        try:
            conn.send((*reply, peak_rss_mb()))
        except OSError:  # the parent is gone
            return


def stop_check(cancel: Any, parent: int) -> Callable[[str, float | None], None]:
    """``jobs.check_cancel`` of ``cancel``, which also raises ``Cancelled`` once the server process ``parent`` is gone
    (``os.getppid`` changes): a worker whose server was killed (SIGKILL, the OOM killer) stops at its next stage or
    batch, writing nothing, instead of finishing a job nobody will read."""
    cancelled = check_cancel(cancel)

    def progress(stage: str, fraction: float | None = None) -> None:
        if os.getppid() != parent:
            raise Cancelled
        cancelled(stage, fraction)

    return progress


def reporting(conn: Connection, check: Callable[[str, float | None], None]) -> Callable[[str, float | None], None]:
    """A progress callback that runs ``check`` (``jobs.check_cancel``), then sends ``("progress", stage, fraction)``
    to the parent when the stage changes or the fraction grows by ``PROGRESS_STEP`` (0-1), not more often."""
    last: list[Any] = [None, -1.0]

    def progress(stage: str, fraction: float | None = None) -> None:
        check(stage, fraction)
        if stage != last[0] or (fraction is not None and fraction - last[1] >= PROGRESS_STEP):
            last[:] = [stage, fraction if fraction is not None else 0.0]
            conn.send(("progress", stage, fraction))

    return progress


def job_files(result: Result, media: Path, folder: Path, sidecar: str | None) -> dict[str, Any]:
    """Write an asynchronous job's subtitles: every format ``result`` can give into ``folder`` as
    ``result.<extension>`` (``GET /jobs/{id}/result`` reads them; rttm only with speakers), and with ``sidecar`` (a
    ``--name-template`` such as ``{stem}.{lang}``) an SRT beside ``media`` as the media servers name it, never over
    an existing file. Returns ``{"language", "formats", "sidecars", "kept"}`` (the paths as strings). Raises
    ``InputError`` when a file cannot be written."""
    from whisper_subtitler.errors import UsageError
    from whisper_subtitler.outputs import output_path, write_files
    from whisper_subtitler.writers import FORMATS

    files = []
    for fmt, writer in FORMATS.items():
        if fmt == "rttm" and not result.turns:
            continue  # speaker turns only: without diarization it would be empty
        try:
            files.append((folder / f"result.{writer.extension}", result.to_bytes(fmt)))
        except UsageError:  # a format this result cannot give
            continue
    folder.mkdir(parents=True, exist_ok=True)
    write_files(files, overwrite=True)
    written: list[Path] = []
    kept: list[Path] = []
    if sidecar is not None:
        target = output_path(media, None, FORMATS["srt"].extension, sidecar, language=result.language)
        written, kept = write_files([(target, result.to_bytes("srt"))])
    return {
        "language": result.language,
        "formats": [fmt for fmt, writer in FORMATS.items() if (folder / f"result.{writer.extension}").exists()],
        "sidecars": [str(p) for p in written],
        "kept": [str(p) for p in kept],
    }


class Worker:
    """The parent's handle on one worker process (``start``, then ``call`` from one thread at a time)."""

    def __init__(self, settings: WorkerSettings) -> None:
        self.settings = settings
        self.info: dict[str, Any] = {}
        self.peak_rss_mb = 0.0
        self._context = multiprocessing.get_context("spawn")  # no fork of a process with threads and torch
        self._lock = threading.Lock()

    def start(self) -> None:
        """Start the process (it loads its models); ``ready`` waits for it."""
        self._cancel = self._context.Event()
        self._conn, child = self._context.Pipe()
        self._process = self._context.Process(
            target=_serve_jobs, args=(child, self.settings, self._cancel), name="whisper-subtitler-worker"
        )
        self._process.start()
        child.close()

    def ready(self) -> dict[str, Any]:
        """Wait until the worker has loaded its models; returns ``info`` (model, device, diarize). Raises the
        worker's ``SubtitlerError`` (a bad model, a missing requirement) or ``WorkerDied``."""
        try:
            reply = self._conn.recv()
        except EOFError:
            raise WorkerDied(f"a worker ended while loading its models (exit code {self._process.exitcode})") from None
        if reply[0] == "error":
            raise _error(*reply[1:])
        self.info, self.peak_rss_mb = reply[1], reply[2]
        return self.info

    def call(
        self, request: tuple, cancel: threading.Event, on_progress: Callable[[str, float | None], None] | None = None
    ) -> Any:
        """Run ``request`` on the worker and return its value; ``cancel`` set stops it; ``on_progress(stage,
        fraction)`` gets a job's progress messages. Raises ``Cancelled``, the job's ``SubtitlerError``,
        ``WorkerDied`` (the worker is started again first)."""
        with self._lock:
            self._cancel.clear()
            self._conn.send(request)
            while True:
                while not self._conn.poll(POLL_S):
                    if cancel.is_set():
                        self._cancel.set()
                    if not self._process.is_alive():
                        code = self._process.exitcode
                        self._restart()
                        raise WorkerDied(f"the worker ended during the job (exit code {code}); it was started again")
                reply = self._conn.recv()
                if reply[0] != "progress":
                    break
                if on_progress is not None:
                    on_progress(reply[1], reply[2])
        self.peak_rss_mb = max(self.peak_rss_mb, reply[-1])
        kind = reply[0]
        if kind == "ok":
            return reply[1]
        if kind == "cancelled":
            raise Cancelled
        if kind == "error":
            raise _error(*reply[1:4])
        raise RuntimeError(reply[1])

    def _restart(self) -> None:
        self.stop()
        self.settings = dataclasses.replace(self.settings, check_speakers=False)
        self.start()
        self.ready()

    def stop(self) -> None:
        """Ask the worker to exit; kill it when it does not within ``STOP_S``."""
        if not hasattr(self, "_process"):
            return
        with contextlib.suppress(OSError, ValueError):  # the pipe is already closed: the worker has ended
            self._conn.send(None)
        self._process.join(STOP_S)
        if self._process.is_alive():
            self._process.kill()
            self._process.join()
        self._conn.close()


def _error(name: str, message: str, hint: str | None) -> SubtitlerError:
    """The worker's exception again, by its class name in ``errors``."""
    cls = getattr(errors, name, SubtitlerError)
    return cls(message, hint) if isinstance(cls, type) and issubclass(cls, SubtitlerError) else SubtitlerError(message)


def start_workers(count: int, settings: WorkerSettings) -> list[Worker]:
    """``count`` workers, loading their models side by side; returns when all are ready. Diarization left to its
    default (``speakers.diarize`` ``None``) is checked by the first alone, and the others follow its answer. Raises
    what loading raises (after stopping the workers)."""
    workers = [Worker(settings)]
    try:
        if settings.speakers.diarize is None:
            workers[0].start()
            diarize = workers[0].ready()["diarize"]
            settings = dataclasses.replace(settings, speakers=dataclasses.replace(settings.speakers, diarize=diarize))
        settings = dataclasses.replace(settings, check_speakers=False)
        workers += [Worker(settings) for _ in range(count - 1)]
        for worker in workers:
            if not worker.info:
                worker.start()
        for worker in workers:
            if not worker.info:
                worker.ready()
    except BaseException:
        for worker in workers:
            worker.stop()
        raise
    return workers
