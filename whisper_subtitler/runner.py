"""Running a batch: every input through the pipeline, progress on stderr, one summary for scripts.

One bad file never stops the batch: its ``FileResult`` says why, and the exit code says that something failed. An
error that would fail every file alike (``SubtitlerError.ends_batch``: ffmpeg or a model missing) ends the batch.
Ctrl-C stops after cleaning up (no partial output, no temporary file) with exit code 130; SIGTERM and SIGHUP do the
same with 143 and 129 (``interrupts``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from whisper_subtitler.errors import ExitCode, SubtitlerError
from whisper_subtitler.interrupts import signal_number
from whisper_subtitler.progress import ProgressDisplay
from whisper_subtitler.results import FileResult, FileStatus
from whisper_subtitler.stages import Stage
from whisper_subtitler.version import __version__


@dataclass(frozen=True)
class BatchSummary:
    """The results of a batch, in input order; ``interrupted`` when a signal ended it early: ``signum``, SIGINT
    (Ctrl-C), SIGTERM or SIGHUP (``interrupts``)."""

    results: tuple[FileResult, ...]
    interrupted: bool = False
    wall_seconds: float = 0.0
    signum: int = 2  # SIGINT

    @property
    def exit_code(self) -> ExitCode:
        """128 + the signal when interrupted (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP); when files failed, the highest of
        their errors' codes (1; 2 for a usage error such as an --audio-language no stream has; 3 for a missing
        requirement such as libass); else 0."""
        if self.interrupted:
            return ExitCode(128 + self.signum)
        failed = [r for r in self.results if r.status is FileStatus.FAILED]
        return ExitCode(max(r.exit_code or ExitCode.FAILED for r in failed)) if failed else ExitCode.OK

    def to_json(self) -> dict:
        """The documented ``--json`` object (README, "Scripting")."""
        return {
            "version": __version__,
            "exit_code": int(self.exit_code),
            "interrupted": self.interrupted,
            "wall_seconds": round(self.wall_seconds, 3),
            "counts": {s.value: sum(r.status is s for r in self.results) for s in FileStatus},
            "files": [
                {
                    "input": str(r.source),
                    "status": r.status.value,
                    "outputs": [str(p) for p in r.outputs],
                    "skipped_outputs": [str(p) for p in r.skipped_outputs],
                    "duration": r.duration,
                    "language": r.language,
                    "speakers": list(r.speakers),
                    "audio_channel": {"used": r.channel.used, "reason": r.channel.reason} if r.channel else None,
                    "unheard_speech": [list(stretch) for stretch in r.unheard_speech],
                    "removed_count": len(r.removed),
                    "removed": [
                        {"reason": x.reason, "start": x.start, "end": x.end, "stage": x.stage} for x in r.removed
                    ],
                    "shot_changes": list(r.shot_changes),
                    "timings": r.timings,
                    "forced_cues": r.forced_cues,
                    "error": r.error,
                }
                for r in self.results
            ],
        }


class BatchProgress:
    """A Rich progress display on stderr: the batch (files, elapsed, ETA) and the current file's stage.

    It turns itself off when stderr is not a terminal (scripts, cron, CI) or when ``enabled`` is false.
    """

    def __init__(self, console: Console, total: int, enabled: bool = True) -> None:
        self.enabled = enabled and console.is_terminal
        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.completed}/{task.total}"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=console,
            transient=True,
        )
        self._batch = self._progress.add_task("files", total=total)  # shown only once started
        self._current = None

    def __enter__(self) -> BatchProgress:
        if self.enabled:
            self._progress.start()
        return self

    def __exit__(self, *exc) -> None:
        if self.enabled:
            self._progress.stop()

    def start_file(self, source: Path) -> None:
        if self.enabled:
            self._name = source.name
            self._progress.update(self._batch, description=f"{source.name}: starting")

    def stage(self, stage: Stage, fraction: float | None = None) -> None:
        if self.enabled:
            done = f" {fraction:.0%}" if fraction is not None else ""
            self._progress.update(self._batch, description=f"{self._name}: {stage.value}{done}")

    def end_file(self, result: FileResult | None = None) -> None:
        if self.enabled:
            self._progress.advance(self._batch)


class Executor(Protocol):
    """Runs a batch's files elsewhere than one after another in this process (``executors.ray_executor``)."""

    def results(self, sources: Sequence[Path], progress: ProgressDisplay) -> Iterator[FileResult]:
        """Each source's result as its file ends, in any order, its outputs written; a ``SubtitlerError`` that
        ``ends_batch`` propagates."""
        ...


def run_batch(
    process: Callable[..., FileResult],
    sources: Sequence[Path],
    progress: ProgressDisplay,
    report: Callable[[FileResult], None] = lambda r: None,
    prefetch: Callable[[Path], None] | None = None,
    executor: Executor | None = None,
) -> BatchSummary:
    """Run ``process(source, on_stage=...)`` for every source; ``report`` is called with each result as it comes.
    ``prefetch(next source)``, when given, is called once the current file reaches its ``transcribe`` stage, so
    that the next file's audio is prepared while the model works (``Pipeline.prefetch``). ``executor``, when given,
    runs the files instead (``--executor ray``); the summary keeps the input order.

    A ``SubtitlerError`` raised for one file becomes its ``failed`` result, unless its class ``ends_batch``: then
    it propagates, as do bugs. ``KeyboardInterrupt`` (Ctrl-C, or SIGTERM and SIGHUP within
    ``interrupts.ending_on_signals``) ends the batch: the summary then holds the finished files, ``interrupted=True``
    and the signal.
    """
    started = time.perf_counter()
    results: list[FileResult] = []
    interrupted, signum = False, 2
    with progress:
        try:
            ended = (
                _in_turn(process, sources, progress, prefetch)
                if executor is None
                else executor.results(sources, progress)
            )
            for result in ended:
                results.append(result)
                report(result)
                progress.end_file(result)
        except KeyboardInterrupt as stop:
            interrupted, signum = True, signal_number(stop)
    if executor is not None:
        position = {source: i for i, source in enumerate(sources)}
        results.sort(key=lambda result: position[result.source])
    wall = time.perf_counter() - started
    return BatchSummary(results=tuple(results), interrupted=interrupted, wall_seconds=wall, signum=signum)


def _in_turn(
    process: Callable[..., FileResult],
    sources: Sequence[Path],
    progress: ProgressDisplay,
    prefetch: Callable[[Path], None] | None,
) -> Iterator[FileResult]:
    """The local executor: each source through ``process`` in this process, one after another."""
    for i, source in enumerate(sources):
        progress.start_file(source)
        following = sources[i + 1] if i + 1 < len(sources) else None
        try:
            result = process(source, on_stage=_on_stage(progress, prefetch, following))
        except SubtitlerError as error:
            if error.ends_batch:
                raise
            result = FileResult.failed(source, error)
        yield result


def _on_stage(
    progress: ProgressDisplay, prefetch: Callable[[Path], None] | None, following: Path | None
) -> Callable[..., None]:
    """One file's stage callback (``stages.OnStage``): the progress display, and ``prefetch(following)`` once, when
    the file reaches its ``transcribe`` stage."""
    pending = [following] if prefetch is not None and following is not None else []

    def on_stage(stage: Stage, fraction: float | None = None) -> None:
        progress.stage(stage, fraction)
        if stage is Stage.TRANSCRIBE and pending and prefetch is not None:
            prefetch(pending.pop())

    return on_stage
