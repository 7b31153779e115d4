"""Voice activity detection (VAD): where in the audio someone speaks.

Uses Silero VAD (silero-vad package, MIT; the model ships in the wheel) through its batched "sequence" ONNX
front-end, which gives the same speech timestamps as the stock streaming model with one ONNX call per block of
frames instead of a Python loop per 32 ms frame (silero-vad ``sequence_vad.py``, snakers4/silero-vad PR 784).
"""

from __future__ import annotations

import logging
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
        # ``import silero_vad`` calls torch.set_num_threads(1) for the whole process (PERFORMANCE.md, "Traps").
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
