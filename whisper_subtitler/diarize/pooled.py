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
import torch.nn.functional as F

BLOCK_WINDOWS = 4.0  # block length in windows: blocks of 40 s every 30 s (tuning set: DER 4.0 %, 5.4 % with 2)
BLOCKS_PER_GROUP = 2  # blocks computed together, one per worker on 2 cores: CAM++'s first layers hold
# 32 channels x 80 bins x frames, 40 MB per 40 s block and layer, so larger groups only fill the memory


def weighted_stats(frames: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """pyannote's ``StatsPool`` of one sequence under many weightings, as two matrix products.

    ``frames`` ``(channels, n_frames)``, ``weights`` ``(rows, n_frames)`` -> ``(rows, 2 * channels)``: the weighted
    mean and the weighted standard deviation with pyannote's bias correction (``v1 - v2 / v1``), computed in the
    dtype given (float64 here: the sums of squares then lose nothing to cancellation). A row of zero weights gives
    NaN, as in pyannote.
    """
    v1 = weights.sum(dim=1, keepdim=True)  # (rows, 1)
    v2 = weights.square().sum(dim=1, keepdim=True)
    mean = weights @ frames.T / v1  # (rows, channels)
    square = weights @ frames.square().T / v1
    var = (square - mean.square()) * v1 / (v1 - v2 / v1)
    return torch.cat([mean, var.clamp_min(0).sqrt()], dim=1)


def pooled_embeddings(
    model,
    waveform: torch.Tensor,
    sample_rate: int,
    binary_segmentations,
    masks: np.ndarray,
    block_windows: float = BLOCK_WINDOWS,
    batch_size: int | None = None,
    hook: Callable[..., None] | None = None,
) -> np.ndarray:
    """Embeddings ``(num_chunks, local_speakers, dimension)`` of each window's local speakers.

    ``model`` is a :class:`~.campplus.CAMPPlusEmbedding` (``frames`` and ``embed_stats``); ``waveform``
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
    batch_size = batch_size or max(BLOCKS_PER_GROUP, torch.get_num_threads())
    device = next(model.parameters()).device

    embeddings = np.full((num_chunks, num_speakers, model.dimension), np.nan, dtype=np.float32)
    total = max(1, math.ceil(len(active_blocks) / batch_size))
    if hook is not None:
        hook("embeddings", None, total=total, completed=0)
    for done, first in enumerate(range(0, len(active_blocks), batch_size), 1):
        group = active_blocks[first : first + batch_size]
        batch = torch.zeros(len(group), 1, block_samples)
        for i, b in enumerate(group):
            piece = waveform[0, b * step_samples : b * step_samples + block_samples]
            batch[i, 0, : piece.shape[-1]] = piece
        frames = model.frames(batch.to(device))  # (blocks, channels, block frames)
        fps = frames.shape[-1] / (block_samples / sample_rate)  # frames per second
        window_frames = int(round(chunks.duration * fps))
        for i, b in enumerate(group):
            owned = [c for c in np.nonzero((owner == b) & active_windows)[0]]
            rows = [(c, s) for c in owned for s in range(num_speakers) if masks[c, :, s].any()]
            if not rows:
                continue
            # each row's mask, resized to the window's frames (nearest, as StatsPool does) and placed on the block
            resized = F.interpolate(
                torch.from_numpy(masks[owned].transpose(0, 2, 1).copy()), size=window_frames, mode="nearest"
            )  # (windows, speakers, window frames)
            weights = torch.zeros(len(rows), frames.shape[-1], dtype=torch.float64)
            where = {c: k for k, c in enumerate(owned)}
            for r, (c, s) in enumerate(rows):
                offset = min(int(round((starts[c] - b * block_step) * fps)), frames.shape[-1] - window_frames)
                weights[r, offset : offset + window_frames] = resized[where[c], s]
            stats = weighted_stats(frames[i].to(torch.float64).cpu(), weights)
            with torch.inference_mode():
                out = model.embed_stats(stats.to(device=device, dtype=frames.dtype))
            for (c, s), e in zip(rows, out.cpu().numpy()):
                embeddings[c, s] = e
        if hook is not None:
            hook("embeddings", None, total=total, completed=done)
    return embeddings
