"""The stages of one file, as progress displays and the ``--json`` summary name them, and their wall-clock timer."""

from __future__ import annotations

import time
from collections.abc import Callable

from whisper_subtitler.types import StrEnum


class Stage(StrEnum):
    """A stage of the pipeline, in the order a file goes through them (``vad`` to ``transcribe`` once per piece)."""

    AUDIO = "audio"  # ffmpeg decoding
    VAD = "vad"  # speech regions
    MODEL_LOAD = "model_load"  # Whisper (again) on the device, when it is not there
    TRANSCRIBE = "transcribe"
    DIARIZE = "diarize"
    CUES = "cues"
    WRITE = "write"
    VIDEO = "video"  # --embed, --burn-in: the video copies


OnStage = Callable[..., None]  # on_stage(stage) when a stage starts; on_stage(stage, fraction) as a file advances


class StageTimer:
    """Wall seconds per stage of one file: ``start(stage)`` ends the running stage and announces ``stage`` to
    ``on_stage`` (a progress display); a stage started again adds to its time. ``stop()`` ends the last one.
    ``advance(fraction)`` tells ``on_stage`` how much of the file is done, as ``on_stage(stage, fraction)``."""

    def __init__(self, on_stage: OnStage = lambda stage, fraction=None: None) -> None:
        self.timings: dict[str, float] = {}
        self._on_stage = on_stage
        self._current: Stage | None = None
        self._clock = time.perf_counter()

    def start(self, stage: Stage) -> None:
        """End the running stage and begin ``stage``."""
        self._close()
        self._current = stage
        self._on_stage(stage)

    def advance(self, fraction: float) -> None:
        """Announce that ``fraction`` (0 to 1) of the file is done, in the running stage."""
        if self._current is not None:
            self._on_stage(self._current, fraction)

    def stop(self) -> dict[str, float]:
        """End the running stage; returns the timings (stage name -> seconds, rounded to milliseconds)."""
        self._close()
        self._current = None
        return dict(self.timings)

    def _close(self) -> None:
        now = time.perf_counter()
        if self._current is not None:
            name = self._current.value
            self.timings[name] = round(self.timings.get(name, 0.0) + now - self._clock, 3)
        self._clock = now
