"""Audio of a chunk -> the log-mel window Whisper's encoder takes, and quiet points for cutting long regions.

A chunk's audio (``chunking.Chunk``, pauses included) is zero-padded to 30 s and turned into a log-mel
spectrogram of shape ``(n_mels, 3000)`` by ``whisper.log_mel_spectrogram``, one window at a time: its dynamic-range
floor (``max - 8`` in log10 units) is taken over the whole tensor, so a batched call would couple the rows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from whisper_subtitler.decoding.chunking import Chunk, Quietest
from whisper_subtitler.types import SAMPLE_RATE

QUIET_FRAME_S = 0.1  # seconds per energy frame when looking for a pause inside a long speech region

SampleSource = Callable[[float, float], np.ndarray]  # (start, end) seconds -> float32 samples at 16 kHz


def array_source(samples: np.ndarray, sample_rate: int = SAMPLE_RATE) -> SampleSource:
    """A ``SampleSource`` over an in-memory array of shape ``(n,)``: slices are views, nothing is copied."""

    def source(start: float, end: float) -> np.ndarray:
        return samples[max(0, round(start * sample_rate)) : max(0, round(end * sample_rate))]

    return source


def chunk_samples(chunk: Chunk, source: SampleSource) -> np.ndarray:
    """The chunk's audio: float32 samples of shape ``(round(duration * 16000),)`` at most."""
    return np.ascontiguousarray(source(chunk.start, chunk.end), dtype=np.float32)


def log_mel_windows(pieces: Sequence[np.ndarray], n_mels: int, device=None):
    """Stack of 30-second log-mel windows for a batch of sample arrays (each at most 30 s at 16 kHz).

    Returns a float32 tensor of shape ``(len(pieces), n_mels, 3000)`` on ``device``.
    """
    import torch
    import whisper

    mels = [
        whisper.log_mel_spectrogram(whisper.pad_or_trim(torch.from_numpy(p)), n_mels, device=device) for p in pieces
    ]
    return torch.stack(mels)


def encode_windows(model, pieces: Sequence[np.ndarray]):
    """The encoder output ``(len(pieces), n_audio_ctx, n_audio_state)`` of ``log_mel_windows(pieces)`` on the model's
    device, in the dtype of the model's weights (float16, bfloat16 or float32; float32 for an int8 model, whose
    convolutions are not quantized). Call under ``torch.no_grad``."""
    mel = log_mel_windows(pieces, model.dims.n_mels, device=model.device)
    return model.encoder(mel.to(model.encoder.conv1.weight.dtype))


def quietest_point(source: SampleSource, frame_s: float = QUIET_FRAME_S) -> Quietest:
    """A ``chunking.Quietest`` for ``source``: the middle of the ``frame_s`` frame with the least energy between
    two times (seconds), the likeliest pause between words in speech the VAD did not split."""

    def quietest(start: float, end: float) -> float:
        x = source(start, end)
        frame = max(1, round(frame_s * SAMPLE_RATE))
        n = len(x) // frame
        if n < 2:
            return (start + end) / 2
        energy = np.square(x[: n * frame].reshape(n, frame), dtype=np.float64).sum(axis=1)
        return start + (int(np.argmin(energy)) + 0.5) * frame / SAMPLE_RATE

    return quietest
