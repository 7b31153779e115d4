"""``whisper-subtitler watch``: a media library that subtitles itself.

    scan the folders (``scan.media_files``)  +  file system events (``watchdog``)
      -> a file settled (size and mtime unchanged for ``settle`` seconds, ``scan.Settling``)
      -> a row in the durable queue (``queue.Queue.add``: new or changed files only)
      -> claimed, processed (``process``: the pipeline, with checkpoints, ``checkpoints``), finished
         (done, skipped, or failed with its error; retried up to ``max_attempts`` times)

Events come from the operating system where ``watchdog`` has an observer (inotify on Linux, FSEvents on macOS,
ReadDirectoryChangesW on Windows); network shares (SMB, NFS) deliver none, so the folders are also scanned again
every ``rescan_interval`` seconds. ``once`` processes what is there (waiting for files still being copied to settle)
and returns: for cron and systemd timers.

One ``watch`` per state directory (``queue.StateLock``). At start it queues again the rows a killed run left
``running`` and removes the temporary files that run left beside their outputs (``outputs.TEMP_PREFIX``) and in the
checkpoint folder: with the atomic writes of ``outputs`` and the checkpoints, a run killed at any moment (SIGKILL
included) and started again does nothing twice, loses nothing and leaves no partial file.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from whisper_subtitler.errors import SubtitlerError
from whisper_subtitler.inputs import MEDIA_EXTENSIONS
from whisper_subtitler.library.checkpoints import sweep_temporary
from whisper_subtitler.library.queue import DEFAULT_MAX_ATTEMPTS, Queue, Row, StateLock, Status
from whisper_subtitler.library.scan import Settling, is_media, media_files
from whisper_subtitler.outputs import TEMP_PREFIX
from whisper_subtitler.progress import JsonProgress, ProgressDisplay
from whisper_subtitler.results import FileResult, FileStatus
from whisper_subtitler.stages import Stage

log = logging.getLogger(__name__)

WORKER = "watch"
ORIGINS = ("watch", "queue add")  # the rows watch runs: those it found and those `queue add` gave it
POLL_S = 1.0  # seconds between looks while files settle or nothing happens (events wake it sooner)
PROGRESS_EVERY_S = 2.0  # seconds between progress writes to the queue

Process = Callable[..., FileResult]  # process(path, on_stage=...) -> FileResult (pipeline.Pipeline.process)


@dataclass(frozen=True)
class WatchOptions:
    """What ``watch`` watches and how: ``folders`` (scanned recursively), ``state_dir`` (queue, lock and
    checkpoints), ``settle`` (seconds a file's size and mtime must stay unchanged), ``once`` (the backlog, then
    return), ``max_attempts`` (failures before a file stays failed), ``retry_failed`` (queue the failed ones again
    first), ``rescan_interval`` (seconds between scans), ``extensions`` (of the media files), ``output_dir`` (where
    outputs go, ``None``: beside each input; for the temporary files a killed run left)."""

    folders: tuple[Path, ...]
    state_dir: Path
    settle: float = 30.0
    once: bool = False
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    retry_failed: bool = False
    rescan_interval: float = 300.0
    extensions: tuple[str, ...] = MEDIA_EXTENSIONS
    output_dir: Path | None = None


@dataclass
class WatchSummary:
    """What one ``watch`` run did: the results of the files it processed, in order; ``interrupted`` by a signal."""

    results: list[FileResult] = field(default_factory=list)
    interrupted: bool = False


class _Events:
    """Paths the file system reported as created, modified or moved in, for the loop's next look."""

    def __init__(self) -> None:
        self.paths: set[Path] = set()
        self.lock = threading.Lock()
        self.wake = threading.Event()

    def add(self, *paths: Any) -> None:
        with self.lock:
            self.paths.update(Path(p if isinstance(p, str) else p.decode()) for p in paths if p)
        self.wake.set()

    def take(self) -> set[Path]:
        with self.lock:
            found, self.paths = self.paths, set()
        self.wake.clear()
        return found


def _observe(folders: Sequence[Path], events: _Events) -> Any:
    """A started ``watchdog`` observer feeding ``events``, or ``None`` (with a warning) where it cannot run: then
    the periodic scan alone finds new files."""
    try:
        from watchdog.events import FileSystemEvent, FileSystemEventHandler
        from watchdog.observers import Observer
    except ImportError:
        log.warning("watchdog is not installed: new files are found by the periodic scan only")
        return None

    class Handler(FileSystemEventHandler):
        def on_any_event(self, event: FileSystemEvent) -> None:
            if not event.is_directory and event.event_type in ("created", "modified", "moved", "closed"):
                events.add(event.src_path, getattr(event, "dest_path", ""))

    observer = Observer()
    try:
        for folder in folders:
            observer.schedule(Handler(), str(folder), recursive=True)
        observer.daemon = True
        observer.start()
    except OSError as e:  # inotify watch limit, a folder that cannot be watched
        log.warning("file system events unavailable (%s): new files are found by the periodic scan only", e)
        return None
    return observer


def sweep_outputs(rows: Sequence[Row], output_dir: Path | None) -> int:
    """Remove the temporary files (``outputs.TEMP_PREFIX``) in the output folders of ``rows``, the files a killed
    run was processing. Returns how many."""
    folders = {output_dir} if output_dir is not None else {Path(row.path).parent for row in rows}
    removed = 0
    for folder in folders if rows else ():
        for tmp in folder.glob(f"{TEMP_PREFIX}*"):
            tmp.unlink(missing_ok=True)
            removed += 1
    return removed


def watch(
    options: WatchOptions,
    process: Process,
    display: ProgressDisplay,
    report: Callable[[FileResult], None] = lambda result: None,
    on_start: Callable[[Path], None] = lambda path: None,
) -> WatchSummary:
    """Run the library (see the module's docstring) until ``options.once`` finds nothing left, or a signal
    (``KeyboardInterrupt``: Ctrl-C, or SIGTERM within ``interrupts.ending_on_signals``) ends it: the file in
    progress goes back to the queue (its checkpoint kept), the summary says ``interrupted``. ``process(path,
    on_stage=...)`` turns one file into subtitles (``pipeline.Pipeline.process``); ``display`` hears each file's
    start, stages and end; ``report`` gets each result, ``on_start`` each file as it starts.

    Raises ``StateBusyError`` when another process holds the state directory, and a ``SubtitlerError`` that
    ``ends_batch`` (a missing model or ffmpeg: no file could succeed), after putting its file back in the queue.
    """
    summary = WatchSummary()
    with StateLock(options.state_dir, WORKER), Queue.open(options.state_dir) as queue:
        left = queue.rows(Status.RUNNING)
        swept = sweep_outputs([r for r in left if r.worker == WORKER], options.output_dir)
        swept += sweep_temporary(options.state_dir)
        if n := queue.requeue_running(WORKER):
            log.warning("%d file(s) a stopped watch left running queued again (%d temporary files removed)", n, swept)
        if options.retry_failed and (n := queue.retry_failed()):
            log.warning("%d failed file(s) queued again (--retry-failed)", n)
        events = _Events()
        observer = None if options.once else _observe(options.folders, events)
        settling = Settling(options.settle)
        candidates: set[Path] = set()
        made: set[Path] = set()
        next_scan = 0.0
        try:
            with display:
                while True:
                    if time.monotonic() >= next_scan:
                        candidates.update(media_files(options.folders, options.extensions))
                        next_scan = time.monotonic() + options.rescan_interval
                        made = {Path(o) for r in queue.rows() for o in r.outputs}  # video copies are not inputs
                    candidates.update(p for p in events.take() if is_media(p, options.extensions))
                    candidates -= made
                    for path in sorted(candidates):
                        if (stat := settling.settled(path)) is not None:
                            queue.add(path, origin=WORKER, size=stat[0], mtime=stat[1])
                            settling.forget(path)
                            candidates.discard(path)
                        elif not path.exists():
                            candidates.discard(path)
                    row = queue.claim(WORKER, ORIGINS)
                    if row is not None:
                        total = len(summary.results) + len(queue.rows(Status.QUEUED)) + 1
                        result = _run(queue, row, process, display, on_start, options.max_attempts, total)
                        summary.results.append(result)
                        report(result)
                        continue
                    if options.once and not candidates:
                        break
                    events.wake.wait(POLL_S)
        except KeyboardInterrupt:
            summary.interrupted = True
            queue.requeue_running(WORKER)
        finally:
            if observer is not None:
                observer.stop()
    return summary


def _run(
    queue: Queue,
    row: Row,
    process: Process,
    display: ProgressDisplay,
    on_start: Callable[[Path], None],
    max_attempts: int,
    total: int,
) -> FileResult:
    """Process the claimed ``row`` and finish it with its result; returns the result. A ``SubtitlerError`` that
    ends the batch puts the row back in the queue and propagates."""
    path = Path(row.path)
    if isinstance(display, JsonProgress):  # JSON lines' total: the files this run processed and has to do
        display.total = total
    on_start(path)
    display.start_file(path)
    last = [0.0]

    def on_stage(stage: Stage, fraction: float | None = None) -> None:
        display.stage(stage, fraction)
        if fraction is not None and time.monotonic() - last[0] >= PROGRESS_EVERY_S:
            last[0] = time.monotonic()
            queue.progress(row.id, fraction)

    try:
        result = process(path, on_stage=on_stage)
    except SubtitlerError as error:
        if error.ends_batch:
            queue.requeue_running(WORKER)
            raise
        result = FileResult.failed(path, error)
    status = {FileStatus.DONE: Status.DONE, FileStatus.SKIPPED: Status.SKIPPED}.get(result.status, Status.FAILED)
    outputs = result.outputs
    if status is Status.SKIPPED and result.skip_reason is None and row.interruptions:
        # every output exists after an attempt that was killed: that attempt wrote them between its last write and
        # recording it (the one gap atomic files and a database cannot close); the file is done, and was subtitled
        status, outputs = Status.DONE, result.skipped_outputs
    queue.finish(row.id, status, error=result.error, outputs=outputs, max_attempts=max_attempts)
    display.end_file(result)
    return result
