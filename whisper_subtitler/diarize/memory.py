"""GPU memory between the two large models of a run: Whisper, then the diarization pipeline.

whisperX's order: transcribe, free Whisper, then diarize, so only one large model is on the accelerator at a
time. Keeping both loaded saves reloading them for the next file of a batch; that is safe only with plenty
of accelerator memory (Whisper large-v3 in float16 with a batch of chunks takes several GiB, pyannote
community-1 about 1.5 GiB plus its batches). The CPU always keeps both (host RAM).
"""

from __future__ import annotations

import gc

PLENTY_OF_VRAM = 24 * 2**30  # bytes: at or above this, Whisper and the diarization pipeline stay loaded together


def one_model_at_a_time(device: str, total_memory: int | None) -> bool:
    """True when Whisper must leave ``device`` before diarization (and the diarizer after it).

    ``device`` is a torch device string (``cpu``, ``cuda``, ``cuda:1``, ``mps``); ``total_memory`` its memory
    in bytes, ``None`` when unknown (then: one at a time). Pure: no torch import.
    """
    if device == "cpu":
        return False
    return total_memory is None or total_memory < PLENTY_OF_VRAM


def release_accelerator_memory(device: str) -> None:
    """Collect garbage and return the cached blocks of ``device``'s allocator (CUDA/ROCm, MPS) to the driver."""
    gc.collect()
    if device == "cpu":
        return
    import torch

    if device.startswith("cuda") and torch.cuda.is_available():
        torch.cuda.empty_cache()
    elif device.startswith("mps") and torch.backends.mps.is_available():
        torch.mps.empty_cache()
