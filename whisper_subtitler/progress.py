"""Progress of a batch for programs that wrap the tool (``--progress json``): one JSON object per line on stderr.

Each line is one event of one file, with these keys (stable; README, "Scripting"):

    file      the input, as given
    index     its place in the batch, from 1; total: the number of inputs
    stage     start, a pipeline stage (stages.Stage: audio, vad, model_load, transcribe, diarize, cues, write,
              video), then the file's status once it is over: done, skipped or failed
    fraction  the share of the file's audio transcribed, 0 to 1, never decreasing; 1.0 on the last line of a file
    elapsed   seconds since the file started

A file whose last line is not done, skipped or failed was abandoned (the run was interrupted). Other lines on
stderr (warnings, ``wrote ...``) do not start with ``{``.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TextIO

if TYPE_CHECKING:
    from whisper_subtitler.results import FileResult
    from whisper_subtitler.stages import Stage


class ProgressDisplay(Protocol):
    """What ``runner.run_batch`` tells a progress display (``runner.BatchProgress``, ``JsonProgress``); used as a
    context manager around the batch."""

    def __enter__(self) -> ProgressDisplay: ...

    def __exit__(self, *exc: object) -> None: ...

    def start_file(self, source: Path) -> None:
        """``source`` begins."""

    def stage(self, stage: Stage, fraction: float | None = None) -> None:
        """The current file entered ``stage``, or (``fraction``) has that share of its audio transcribed."""

    def end_file(self, result: FileResult) -> None:
        """The current file is over, with ``result``."""


class JsonProgress:
    """``--progress json``: the events above as JSON lines on ``stream`` (stderr), flushed one by one."""

    def __init__(self, total: int, stream: TextIO | None = None) -> None:
        self.total = total
        self.stream = stream if stream is not None else sys.stderr
        self._index = 0
        self._file = ""
        self._fraction = 0.0
        self._started = time.perf_counter()

    def __enter__(self) -> JsonProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def start_file(self, source: Path) -> None:
        self._index += 1
        self._file, self._fraction, self._started = str(source), 0.0, time.perf_counter()
        self._emit("start")

    def stage(self, stage: Stage, fraction: float | None = None) -> None:
        if fraction is not None:
            before = round(self._fraction, 4)
            self._fraction = max(self._fraction, min(1.0, fraction))
            if round(self._fraction, 4) == before:
                return  # nothing new to say
        self._emit(stage.value)

    def end_file(self, result: FileResult) -> None:
        self._fraction = 1.0
        self._emit(result.status.value)

    def _emit(self, stage: str) -> None:
        line = {
            "file": self._file,
            "index": self._index,
            "total": self.total,
            "stage": stage,
            "fraction": round(self._fraction, 4),
            "elapsed": round(time.perf_counter() - self._started, 3),
        }
        self.stream.write(json.dumps(line, ensure_ascii=False) + "\n")
        self.stream.flush()
