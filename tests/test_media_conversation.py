"""The re-arranged conversation helper: real utterances of sample.wav in another order, exact references."""

from __future__ import annotations

import numpy as np

from tests.media import SAMPLE_WAV
from tests.media_conversation import read_stm, rearranged_conversation
from tests.media_speech import SAMPLE_RATE, read_wav


def test_rearranged_conversation_has_exact_references(tmp_path):
    conv = rearranged_conversation(tmp_path / "c.wav", seed=3)
    original = read_stm()
    assert sorted(u.text for u in conv.utterances) == sorted(u.text for u in original)
    assert [u.text for u in conv.utterances] != [u.text for u in original]
    assert conv.utterances[0].speaker != original[0].speaker
    gaps = [b.start - a.end for a, b in zip(conv.utterances, conv.utterances[1:])]
    assert all(0.2 - 1e-3 <= g <= 0.8 + 1e-3 for g in gaps)
    samples, source = read_wav(conv.wav), read_wav(SAMPLE_WAV)
    assert len(samples) / SAMPLE_RATE == conv.duration
    by_text = {(u.speaker, u.text): u for u in original}  # both say "Hello?"
    for u in conv.utterances:  # each utterance is the sample's audio at the new place, to the sample
        old = by_text[u.speaker, u.text]
        a, b = round(u.start * SAMPLE_RATE), round(old.start * SAMPLE_RATE)
        n = round(u.end * SAMPLE_RATE) - a
        assert np.array_equal(samples[a : a + n], np.round(source[b : b + n] * 32767) / 32768)  # 16-bit round trip
    assert read_stm(conv.stm) == tuple(
        sorted(
            (type(u)(u.speaker, round(u.start, 3), round(u.end, 3), u.text) for u in conv.utterances),
            key=lambda u: (u.start, u.end),
        )
    )
    assert len(conv.rttm.read_text().splitlines()) == len(original)


def test_same_seed_same_conversation(tmp_path):
    a = rearranged_conversation(tmp_path / "a.wav", seed=1)
    b = rearranged_conversation(tmp_path / "b.wav", seed=1)
    assert a.utterances == b.utterances and a.wav.read_bytes() == b.wav.read_bytes()
