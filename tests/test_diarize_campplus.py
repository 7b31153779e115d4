"""The CAM++ embedding adapter on synthetic speech: same voice close, other voice far, masks honoured, and
the per-window deduplication gives exactly what one-by-one computation gives."""

from __future__ import annotations

import numpy as np
import pytest

from tests.media_speech import VOICE_A, VOICE_B, utterance


@pytest.fixture(scope="module")
def model():
    from whisper_subtitler.diarize.campplus import CAMPPlusEmbedding

    return CAMPPlusEmbedding.from_checkpoint()


@pytest.fixture(scope="module")
def voices(tmp_path_factory):
    work = tmp_path_factory.mktemp("campplus")
    n = 3 * 16_000  # every signal 3 s long (cut or padded), so batches need no padding

    def say(voice, text):
        speech = utterance(text, voice, work)[:n]
        return np.pad(speech, (0, n - len(speech)))

    return {
        "a1": say(VOICE_A, "The weather was lovely for the whole weekend at the lake."),
        "a2": say(VOICE_A, "Please bring the documents to the office before noon tomorrow."),
        "b1": say(VOICE_B, "The weather was lovely for the whole weekend at the lake."),
    }


def embed(model, *signals, weights=None):
    import torch

    n = max(len(s) for s in signals)
    batch = torch.stack([torch.from_numpy(np.pad(s, (0, n - len(s)))) for s in signals]).unsqueeze(1)
    with torch.inference_mode():
        return model(batch, weights=weights).numpy()


def cosine(x, y) -> float:
    return float(np.dot(x, y) / np.linalg.norm(x) / np.linalg.norm(y))


def test_same_voice_is_closer_than_another_voice_saying_the_same_words(model, voices):
    a1, a2, b1 = embed(model, voices["a1"], voices["a2"], voices["b1"])
    assert a1.shape == (192,)
    assert cosine(a1, a2) > cosine(a1, b1) + 0.1


def test_masks_select_the_speaker(model, voices):
    import torch

    both = np.concatenate([voices["a1"], voices["b1"]])
    frames = 100  # any frame rate: pyannote's StatsPool interpolates the weights
    first = torch.zeros(2, frames)
    first[0, : frames // 2] = 1  # row 0: the A half; row 1: the B half
    first[1, frames // 2 :] = 1
    ((on_a, on_b),) = [embed(model, both, both, weights=first)]
    a, b = embed(model, voices["a1"], voices["b1"])
    assert cosine(on_a, a) > cosine(on_a, b) and cosine(on_b, b) > cosine(on_b, a)


def test_repeated_windows_give_the_same_embeddings_as_one_by_one(model, voices):
    import torch

    a, b = voices["a1"], voices["b1"]
    weights = torch.rand(5, 50)
    batched = embed(model, a, a, a, b, b, weights=weights)
    one_by_one = np.vstack([embed(model, s, weights=weights[i : i + 1]) for i, s in enumerate([a, a, a, b, b])])
    np.testing.assert_allclose(batched, one_by_one, rtol=1e-4, atol=1e-4)
