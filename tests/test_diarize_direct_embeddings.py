"""Direct CAM++ embeddings of stretches of real speech (the speaker re-count's and the short-region re-assignment's):
computed together over every core (issue 48), they equal, bit for bit, the ones computed one batch at a time."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def model():
    from whisper_subtitler.diarize.campplus import CAMPPlusEmbedding

    return CAMPPlusEmbedding.from_checkpoint()


@pytest.fixture(scope="module")
def sample():
    import torch

    from tests import media
    from tests.media_speech import read_wav

    return torch.from_numpy(read_wav(media.SAMPLE_WAV))  # 30 s of two real speakers, 16 kHz


def test_frames_of_many_equal_frames_of_each_batch(model, sample):
    """Batches of different lengths and sizes (one stretch, three of one length) through ``frames_of_many`` give
    exactly what ``frames`` gives for each batch alone, on two threads and on one."""
    import torch

    starts = [(1.0, 2.5), (5.0, 3.25), (9.0, 1.95), (20.0, 4.0)]
    batches = [sample[int(a * 16_000) : int(a * 16_000) + int(n * 16_000)].reshape(1, 1, -1) for a, n in starts]
    batches.append(torch.stack([sample[k * 16_000 : k * 16_000 + 24_000] for k in (0, 2, 4)]).unsqueeze(1))
    threads = torch.get_num_threads()
    try:
        for count in (2, 1):
            torch.set_num_threads(count)
            together = model.frames_of_many(batches)
            assert torch.get_num_threads() == count  # restored
            assert len(together) == len(batches)
            for batch, frames in zip(batches, together):
                alone = model.frames(batch)
                assert frames.shape == alone.shape == (len(batch), 512, (2 + (batch.shape[-1] - 400) // 160) // 2)
                assert torch.equal(frames, alone)
    finally:
        torch.set_num_threads(threads)
    assert model.frames_of_many([]) == []


def test_embedder_equals_one_batch_at_a_time(model, sample):
    """``reassign.embedder`` (the batches of all lengths computed together) gives, for stretches of many lengths (two
    of the same length), exactly what it gave when it computed one length's batch at a time; a stretch embedded once
    is not embedded again."""
    import torch

    from whisper_subtitler.diarize.reassign import LENGTH_STEP, embedder

    spans = [(0.4, 1.3), (6.7, 7.2), (10.0, 14.0), (15.2, 18.9), (21.0, 21.8), (24.1, 25.0), (26.0, 29.5)]
    embed = embedder(sample.unsqueeze(0), 16_000, model)
    got = embed(spans)
    assert got.shape == (len(spans), 192) and np.isfinite(got).all()

    step = int(LENGTH_STEP * 16_000)
    cuts = []
    for start, end in spans:
        first, last = int(round(start * 16_000)), int(round(end * 16_000))
        length = (last - first) // step * step
        cuts.append((first + (last - first - length) // 2, length))
    expected = {}
    for length in sorted({n for _, n in cuts}):  # the earlier loop: one length's batch at a time
        rows = sorted(c for c in cuts if c[1] == length)
        pieces = torch.stack([sample[first : first + n] for first, n in rows]).unsqueeze(1)
        with torch.inference_mode():
            frames = model.frames(pieces)
            vectors = model.embed_frames(frames, torch.ones(frames.shape[0], frames.shape[-1])).float().numpy()
        expected.update(zip(rows, vectors))
    assert len(expected) == len(spans) and len({n for _, n in cuts}) == len(spans) - 1  # two of one length
    np.testing.assert_array_equal(got, np.stack([expected[c] for c in cuts]))

    calls = []
    real = model.frames_of_many
    model.frames_of_many = lambda batches: calls.append(len(batches)) or real(batches)
    try:
        again = embed([spans[2], (1.0, 2.0)])
    finally:
        del model.frames_of_many
    assert calls == [1]  # only the new stretch
    np.testing.assert_array_equal(again[0], got[2])
