"""Voice activity detection on real speech: the same regions as silero-vad's own function, for any settings, with
the network run once per audio."""

from __future__ import annotations

import numpy as np
import pytest

from tests import media
from whisper_subtitler import vad


@pytest.fixture(scope="module")
def sample():
    from whisper_subtitler.audio import stream_audio

    return next(stream_audio(media.SAMPLE_WAV, piece_seconds=None)).samples


@pytest.mark.parametrize(
    "options",
    [
        vad.VadOptions(),
        vad.VadOptions(min_silence_duration_ms=100, speech_pad_ms=30, threshold=0.6),
        vad.VadOptions(min_silence_duration_ms=100, speech_pad_ms=30, neg_threshold=0.5),
    ],
)
def test_regions_are_silero_vads_own(sample, options):
    from silero_vad import get_speech_timestamps_sequence, load_silero_vad

    stamps = get_speech_timestamps_sequence(
        sample,
        load_silero_vad(sequence=True),
        threshold=options.threshold,
        sampling_rate=16_000,
        min_speech_duration_ms=options.min_speech_duration_ms,
        min_silence_duration_ms=options.min_silence_duration_ms,
        speech_pad_ms=options.speech_pad_ms,
        neg_threshold=options.neg_threshold,
    )
    expected = tuple((s["start"] / 16_000, s["end"] / 16_000) for s in stamps)
    assert len(expected) >= 1
    assert vad.speech_regions(sample, options) == expected


def test_an_end_threshold_as_high_as_the_start_ends_regions_sooner(sample):
    tight = vad.VadOptions(min_silence_duration_ms=100, speech_pad_ms=30)
    ends = vad.speech_regions(sample, tight)
    no_hysteresis = vad.speech_regions(
        sample, vad.VadOptions(min_silence_duration_ms=100, speech_pad_ms=30, neg_threshold=0.5)
    )
    assert sum(b - a for a, b in no_hysteresis) < sum(b - a for a, b in ends)


def test_the_network_runs_once_per_audio(sample, monkeypatch):
    """Two settings on the same samples (the transcription's and the diarization's) run silero once; other audio
    in between (the next file, prefetched) does not evict the first."""
    model, _ = vad._load_model()
    calls = []
    real = model.audio_forward

    def counted(samples, *args, **kwargs):
        calls.append(len(samples))
        return real(samples, *args, **kwargs)

    monkeypatch.setattr(model, "audio_forward", counted)
    monkeypatch.setattr(vad, "_kept", type(vad._kept)())
    monkeypatch.setattr(vad, "_kept_arrays", {})
    loose = vad.speech_regions(sample)
    other = np.ascontiguousarray(sample[::-1])
    vad.speech_regions(other)
    tight = vad.speech_regions(sample, vad.VadOptions(min_silence_duration_ms=100, speech_pad_ms=30))
    assert calls == [len(sample), len(sample)]
    assert len(tight) > len(loose)  # the tight settings split where the loose ones bridge short pauses
    vad.speech_regions(sample[:-1].copy())  # other samples: computed again
    assert len(calls) == 3


def test_a_piece_cut_from_audio_reuses_its_probabilities(sample, monkeypatch):
    """The pipeline cuts a piece at a pause after its VAD and finds the language units on the cut: a view of the
    start of audio already seen is not run again, and gets the probabilities the network gives the cut itself
    (silero-vad is causal) but for the last, partial frame, which keeps the whole audio's."""
    monkeypatch.setattr(vad, "_kept", type(vad._kept)())
    monkeypatch.setattr(vad, "_kept_arrays", {})
    whole = np.ascontiguousarray(sample, dtype=np.float32)
    full = vad.speech_probabilities(whole)
    n = len(whole) * 2 // 3 + 100
    model, _ = vad._load_model()
    calls = []
    real = model.audio_forward
    monkeypatch.setattr(model, "audio_forward", lambda x, *a, **k: calls.append(len(x)) or real(x, *a, **k))
    reused = vad.speech_probabilities(whole[:n])
    assert calls == []
    own = real(whole[:n].copy(), sampling_rate=16_000)
    assert reused.shape == own.shape
    np.testing.assert_array_equal(reused[:-1], own[:-1])
    assert reused[-1] == full[len(reused) - 1]
