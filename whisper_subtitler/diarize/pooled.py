"""Speaker embeddings for every (window, local speaker) from one pass of the frame-level network over the audio.

pyannote's ``SpeakerDiarization.get_embeddings`` embeds each 10 s segmentation window once per local speaker,
and windows start every second: every second of audio goes through the embedding network ten times (and three
times more for the local speakers, which :class:`~.campplus.CAMPPlusEmbedding` already shares). Here the
frame-level part of CAM++ (everything before statistics pooling) runs once over consecutive, non-overlapping
blocks as long as a window; the frames of each window are then read from the one or two blocks it straddles
and pooled with the window's segmentation mask of each local speaker, as pyannote pools them (weighted mean and
standard deviation, ``StatsPool``), before CAM++'s embedding layer. The work is that of the audio once, not ten
times; blocks where the segmentation finds nobody speaking are not computed at all (their frames get zero
weight in every mask).

What differs from embedding each window on its own: CAM++'s context-aware masking and the filterbank's mean
normalisation see the block, not the window. Blocks are as long as windows, so both still summarise 10 s of the
same recording; ``tests/test_diarize_pooled.py`` bounds the difference (speakers found, DER between the two).

Memory: blocks are computed for a group of windows at a time and released, so it does not grow with the duration
(about 1 MB of frames per block).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch

BLOCK_WINDOWS = 4.0  # block length in windows: blocks of 40 s every 30 s (tuning set: DER 4.0 %, 5.4 % with 2)
BLOCKS_PER_GROUP = 16  # blocks whose frames are computed (and held) together
EMBED_BATCH = 64  # (window, speaker) rows pooled per call


def pooled_embeddings(
    model,
    waveform: torch.Tensor,
    sample_rate: int,
    binary_segmentations,
    masks: np.ndarray,
    block_windows: float = BLOCK_WINDOWS,
    batch_size: int = BLOCKS_PER_GROUP,
    hook: Callable[..., None] | None = None,
) -> np.ndarray:
    """Embeddings ``(num_chunks, local_speakers, dimension)`` of each window's local speakers.

    ``model`` is a :class:`~.campplus.CAMPPlusEmbedding` (``frames`` and ``embed_frames``); ``waveform``
    ``(1, n_samples)`` at ``sample_rate`` Hz; ``binary_segmentations`` the pipeline's windows (their start, step
    and duration in seconds); ``masks`` ``(num_chunks, num_frames, local_speakers)`` the pooling weights (the
    binarized segmentation, or its overlap-free part, as pyannote chooses them). Blocks last ``block_windows``
    windows (``> 1``) and overlap by one window, so that every window lies inside one block; the frame-level
    network sees ``block_windows / (block_windows - 1)`` times the audio. Rows with an
    all-zero mask are NaN, as in pyannote. ``hook`` gets pyannote's progress calls (``embeddings``,
    ``completed``, ``total``).
    """
    chunks = binary_segmentations.sliding_window
    num_chunks, num_frames, num_speakers = masks.shape
    block_step = chunks.duration * (block_windows - 1)  # seconds between block starts
    step_samples = int(round(block_step * sample_rate))
    block_samples = int(round(chunks.duration * sample_rate)) + step_samples
    starts = chunks.start + np.arange(num_chunks) * chunks.step  # window starts, seconds
    owner = np.floor(starts / block_step + 1e-9).astype(np.int64)  # the block holding each window
    num_blocks = int(owner[-1]) + 1
    active_windows = masks.reshape(num_chunks, -1).any(axis=1)
    active_blocks = sorted(set(owner[active_windows].tolist()))
    device = next(model.parameters()).device

    embeddings = np.full((num_chunks, num_speakers, model.dimension), np.nan, dtype=np.float32)
    total = max(1, math.ceil(len(active_blocks) / batch_size))
    if hook is not None:
        hook("embeddings", None, total=total, completed=0)
    for done, first in enumerate(range(0, len(active_blocks), batch_size), 1):
        group = active_blocks[first: first + batch_size]
        batch = torch.zeros(len(group), 1, block_samples)
        for i, b in enumerate(group):
            piece = waveform[0, b * step_samples: b * step_samples + block_samples]
            batch[i, 0, : piece.shape[-1]] = piece
        frames = model.frames(batch.to(device))  # (blocks, channels, block frames)
        fps = frames.shape[-1] / (block_samples / sample_rate)  # frames per second
        window_frames = int(round(chunks.duration * fps))
        rows, pieces, weights = [], [], []
        for i, b in enumerate(group):
            for c in np.nonzero((owner == b) & active_windows)[0]:
                offset = min(int(round((starts[c] - b * block_step) * fps)), frames.shape[-1] - window_frames)
                for s in range(num_speakers):
                    if masks[c, :, s].any():
                        rows.append((c, s))
                        pieces.append(frames[i, :, offset: offset + window_frames])
                        weights.append(torch.from_numpy(np.ascontiguousarray(masks[c, :, s])))
        for k in range(0, len(rows), EMBED_BATCH):
            with torch.inference_mode():
                out = model.embed_frames(torch.stack(pieces[k: k + EMBED_BATCH]),
                                         torch.stack(weights[k: k + EMBED_BATCH]).to(device))
            for (c, s), e in zip(rows[k: k + EMBED_BATCH], out.cpu().numpy()):
                embeddings[c, s] = e
        if hook is not None:
            hook("embeddings", None, total=total, completed=done)
    del num_blocks
    return embeddings
