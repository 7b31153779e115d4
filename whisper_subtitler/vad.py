"""Voice activity detection (VAD): where in the audio someone speaks.

Uses Silero VAD (silero-vad package, MIT; the model ships in the wheel) through its batched "sequence" ONNX
front-end, which gives the same speech timestamps as the stock streaming model with one ONNX call per block of
frames instead of a Python loop per 32 ms frame (silero-vad ``sequence_vad.py``, snakers4/silero-vad PR 784).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from whisper_subtitler.types import SAMPLE_RATE

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class VadOptions:
    """Silero VAD settings; names and defaults follow faster-whisper's ``VadOptions`` where they overlap.

    ``threshold`` is the speech probability above which a frame is speech; durations are in milliseconds.
    """

    threshold: float = 0.5
    min_speech_duration_ms: int = 250
    min_silence_duration_ms: int = 500
    speech_pad_ms: int = 200


@lru_cache(maxsize=1)
def _load_model():
    import torch

    threads = torch.get_num_threads()
    try:
        # ``import silero_vad`` calls torch.set_num_threads(1) for the whole process (docs/performance.md, "Traps").
        from silero_vad import get_speech_timestamps_sequence, load_silero_vad
    finally:
        torch.set_num_threads(threads)
    return load_silero_vad(sequence=True), get_speech_timestamps_sequence


def speech_regions(samples: np.ndarray, options: VadOptions = VadOptions()) -> tuple[tuple[float, float], ...]:
    """Speech regions of 16 kHz mono ``samples`` (shape ``(n,)``), as ``(start, end)`` seconds, sorted, disjoint."""
    if len(samples) < SAMPLE_RATE // 10:  # under 0.1 s: nothing a person could say
        return ()
    model, get_speech_timestamps_sequence = _load_model()
    stamps = get_speech_timestamps_sequence(
        np.ascontiguousarray(samples, dtype=np.float32),
        model,
        threshold=options.threshold,
        sampling_rate=SAMPLE_RATE,
        min_speech_duration_ms=options.min_speech_duration_ms,
        min_silence_duration_ms=options.min_silence_duration_ms,
        speech_pad_ms=options.speech_pad_ms,
    )
    return tuple((s["start"] / SAMPLE_RATE, s["end"] / SAMPLE_RATE) for s in stamps)


def split_at_pause(regions: Sequence[tuple[float, float]], duration: float, keep: float = 0.5) -> float:
    """Where to end a piece of ``duration`` seconds so that no speech region is cut: a time in seconds.

    The end of the piece when it ends in silence; else the middle of the last pause (the gap between two
    ``regions``) in the piece's last ``1 - keep`` part; else the start of the speech running into the end, if
    that leaves at least ``keep`` of the piece; else ``duration`` (speech with no pause: cut anyway).
    """
    if not regions or regions[-1][1] < duration - 0.1:
        return duration
    for (_, end), (start, _) in zip(reversed(regions[:-1]), reversed(regions[1:])):
        middle = (end + start) / 2
        if middle < keep * duration:
            break
        return middle
    return regions[-1][0] if regions[-1][0] >= keep * duration else duration
