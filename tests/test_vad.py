"""Voice activity detection on real speech: the same regions as silero-vad's own function, for any settings, with
the network run once per audio."""

from __future__ import annotations

import os
import time

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


@pytest.fixture(scope="module")
def long_sample(sample):
    """Three minutes of real speech (the sample six times, cut to end inside a frame): eleven encoder blocks, more
    than the two per thread that the split keeps in flight."""
    return np.ascontiguousarray(np.tile(sample, 6)[:-100], dtype=np.float32)


ROUNDING = 1e-4  # the matrix-product encoder's probabilities differ from the stock model's by about 3e-5 at most


def _regions(probabilities: np.ndarray, n: int) -> list:
    return [vad._timestamps(probabilities, n, options) for options in (vad.VadOptions(), vad.PAUSE_VAD)]


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_the_split_network_gives_the_stock_models_probabilities_and_regions(long_sample, tmp_path, threads):
    from whisper_subtitler import vad_network

    stock = vad_network.silero().load_silero_vad(sequence=True).audio_forward(long_sample, sampling_rate=16_000)
    model = vad_network.load(threads, tmp_path)
    assert isinstance(model, vad_network.SplitSileroVad)
    assert model.encoder.get_modelmeta().graph_name == "silero_vad_encoder_matmul"  # the faster form was kept
    got = model.audio_forward(long_sample)
    assert got.shape == (-(-len(long_sample) // 512),) == stock.shape
    np.testing.assert_allclose(got, stock, rtol=0, atol=ROUNDING)
    assert not np.array_equal(got, stock)  # another computation, not the stock model's run again
    assert _regions(got, len(long_sample)) == _regions(stock, len(long_sample))
    assert 0.2 < float(np.mean(got > 0.5)) < 0.95  # speech and pauses, not a constant
    assert model.audio_forward(long_sample[:0]).shape == (0,)
    with pytest.raises(ValueError, match="16000"):
        model.audio_forward(long_sample, sampling_rate=8000)


def test_an_encoder_that_disagrees_with_the_stock_one_is_not_kept(sample, tmp_path, monkeypatch, caplog):
    """The matrix-product encoder is checked against the exported one on a probe block when the cut is made; when
    the check fails (here: no difference at all allowed) the exported encoder runs, and its numbers are the stock
    model's bit for bit."""
    import logging

    from whisper_subtitler import vad_network

    monkeypatch.setattr(vad_network, "PROBE_TOLERANCE", 0.0)
    with caplog.at_level(logging.INFO, logger="whisper_subtitler.vad_network"):
        model = vad_network.load(2, tmp_path)
    assert "matrix-product form was not kept (its output differs" in caplog.text
    assert model.encoder.get_modelmeta().graph_name != "silero_vad_encoder_matmul"
    stock = vad_network.silero().load_silero_vad(sequence=True).audio_forward(sample, sampling_rate=16_000)
    np.testing.assert_array_equal(model.audio_forward(sample), stock)


def test_a_graph_that_is_not_silero_vads_keeps_the_exported_encoder(caplog):
    import logging

    from whisper_subtitler import vad_network

    data = vad_network.sequence_model_path().read_bytes()
    encoder, recurrent = vad_network.cut(data)
    with pytest.raises(KeyError):
        vad_network.matmul_encoder(recurrent)  # no STFT in the recurrent half
    with caplog.at_level(logging.INFO, logger="whisper_subtitler.vad_network"):
        assert vad_network._faster_encoder(recurrent, encoder) == encoder
    assert "KeyError" in caplog.text


def test_the_cut_is_kept_and_reused_and_a_damaged_one_is_made_again(sample, tmp_path, monkeypatch):
    from whisper_subtitler import vad_network

    first = vad_network.load(2, tmp_path).audio_forward(sample)
    kept = sorted(p.name for p in tmp_path.iterdir())
    assert len(kept) == 2 and all(name.startswith("silero-vad-") for name in kept)
    cuts = []
    real_cut = vad_network.cut
    monkeypatch.setattr(vad_network, "cut", lambda data: cuts.append(1) or real_cut(data))
    again = vad_network.load(2, tmp_path)
    assert isinstance(again, vad_network.SplitSileroVad) and cuts == []  # read from the cache, not cut again
    np.testing.assert_array_equal(again.audio_forward(sample), first)
    damaged = next(p for p in tmp_path.iterdir() if "encoder" in p.name)
    damaged.write_bytes(b"not a model")
    remade = vad_network.load(2, tmp_path)
    assert cuts == [1] and damaged.stat().st_size > 1000
    np.testing.assert_array_equal(remade.audio_forward(sample), first)


def test_without_onnx_or_a_writable_cache_the_numbers_stay(sample, tmp_path, monkeypatch, caplog):
    import logging
    import sys

    from whisper_subtitler import vad_network

    expected = vad_network.load(1, tmp_path / "first").audio_forward(sample)
    unwritable = tmp_path / "a-file"  # a cache folder under a file cannot be made, not even by root
    unwritable.write_bytes(b"")
    with caplog.at_level(logging.INFO, logger="whisper_subtitler.cache"):
        split = vad_network.load(2, unwritable / "models")
    assert isinstance(split, vad_network.SplitSileroVad)  # kept in memory
    np.testing.assert_array_equal(split.audio_forward(sample), expected)
    assert "cannot keep the split Silero VAD" in caplog.text
    monkeypatch.setitem(sys.modules, "onnx", None)  # import onnx raises ImportError
    with caplog.at_level(logging.INFO, logger="whisper_subtitler.vad_network"):
        stock = vad_network.load(2, tmp_path / "empty")
    assert not isinstance(stock, vad_network.SplitSileroVad)
    assert "runs on one thread" in caplog.text
    np.testing.assert_allclose(stock.audio_forward(sample, sampling_rate=16_000), expected, rtol=0, atol=ROUNDING)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_forked_child_runs_the_split_network_with_its_own_threads(sample, tmp_path):
    """A child forked after the encoder threads started has none of them; it must not wait for them forever."""
    from whisper_subtitler import vad_network

    model = vad_network.load(2, tmp_path)
    expected = model.audio_forward(sample)
    pid = os.fork()
    if pid == 0:  # the child: exit 0 only with the same numbers
        try:
            os._exit(0 if np.array_equal(model.audio_forward(sample), expected) else 1)
        finally:
            os._exit(2)
    deadline = time.monotonic() + 60
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            pytest.fail("the forked child hung on the encoder's thread pool")
        time.sleep(0.05)
    assert os.waitstatus_to_exitcode(status) == 0
