"""The Ray actor of ``--executor ray``: input files in, subtitle bytes out, with its models loaded once.

A worker reads its inputs from storage that it shares with the driver, at the same paths, and writes nothing: it
returns each file's rendered subtitles and the driver writes them (``outputs.write_files``). So a worker killed in
the middle of a file leaves no partial or temporary file behind, and the file can be tried again anywhere.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from whisper_subtitler.errors import ExitCode, SubtitlerError
from whisper_subtitler.outputs import render_subtitles
from whisper_subtitler.pipeline import Pipeline, RunOptions
from whisper_subtitler.results import FileResult
from whisper_subtitler.types import Cue, Transcript


@dataclass(frozen=True)
class PlatformArgs:
    """The command line's device options, for each worker to choose its own device (``platform.configure``)."""

    gpu_backend: str | None = None
    optimization_level: int | None = None
    no_fallback: bool = False
    env_file: Path | None = None
    compute_type: str = "auto"  # --compute-type
    threads: int | None = None  # --threads, over the worker's share of cores


@dataclass(frozen=True)
class Fatal:
    """An error that ends the batch (a missing model, an unavailable backend), as plain values that cross processes."""

    exit_code: int
    message: str
    hint: str | None

    @classmethod
    def of(cls, error: SubtitlerError) -> Fatal:
        return cls(int(error.exit_code), error.message, error.hint)

    def error(self) -> SubtitlerError:
        """The error to raise on the driver: same message, hint and exit code; it ends the batch."""
        error = SubtitlerError(self.message, self.hint)
        error.exit_code = ExitCode(self.exit_code)
        error.ends_batch = True
        return error


@dataclass(frozen=True)
class WorkerInfo:
    """A worker that has loaded its models (or failed to: ``fatal``): its process id and host, for the logs."""

    pid: int
    host: str
    fatal: Fatal | None = None


@dataclass(frozen=True)
class Rendered:
    """One file done by a worker: its result (status, duration, language, timings, or the failure) and, when done,
    the bytes of each output in ``RunOptions.formats`` order, for the driver to write."""

    result: FileResult
    files: tuple[bytes, ...] = ()


class RenderingPipeline(Pipeline):
    """The pipeline with its subtitle files rendered into ``rendered`` instead of written."""

    rendered: tuple[bytes, ...] = ()

    def write_subtitles(
        self, transcript: Transcript, cues: Sequence[Cue], targets: Sequence[tuple[str, Path]]
    ) -> tuple[list[Path], list[Path]]:
        self.rendered = tuple(data for _, data in render_subtitles(transcript, cues, targets, self.options.writer))
        return [target for _, target in targets], []


class FileWorker:
    """One worker: chooses its device, loads the models once, then renders one file per ``process`` call.

    ``options`` are the driver's run options; ``cwd`` the driver's folder, entered when this machine has it, so that
    relative paths mean the same file. An error that would end the batch is kept and returned by ``ready`` and
    ``process`` (``Fatal``) rather than raised, so that it reaches the driver as the same message and exit code.
    """

    def __init__(self, options: RunOptions, platform_args: PlatformArgs, cwd: str) -> None:
        from whisper_subtitler import platform

        if os.path.isdir(cwd):
            os.chdir(cwd)
        self.fatal: Fatal | None = None
        try:
            a = platform_args
            selection = platform.configure(
                a.gpu_backend,
                a.optimization_level,
                a.no_fallback,
                a.env_file,
                options.model,
                compute_type=a.compute_type,
            )
            platform.apply_optimizations(selection)
            if a.threads:
                platform.set_threads(a.threads)
            transcribe = replace(options.transcribe, fp16=selection.dtype == "float16")  # this worker's device
            # The driver decides what to skip and keeps existing files: here every output is rendered.
            self.pipeline = RenderingPipeline(replace(options, transcribe=transcribe, overwrite=True), selection)
            self.pipeline.load()
        except SubtitlerError as error:
            self.fatal = Fatal.of(error)

    def ready(self) -> WorkerInfo:
        """This worker's process and host, and the error that keeps it from working, if any."""
        return WorkerInfo(os.getpid(), socket.gethostname(), self.fatal)

    def process(self, source: str) -> Rendered | Fatal:
        """``source`` transcribed and rendered; a failure of this file alone is a ``failed`` result."""
        if self.fatal is not None:
            return self.fatal
        path = Path(source)
        self.pipeline.rendered = ()
        try:
            result = self.pipeline.process(path)
        except SubtitlerError as error:
            if error.ends_batch:
                return Fatal.of(error)
            return Rendered(FileResult.failed(path, error))
        return Rendered(result, self.pipeline.rendered)
