"""Deterministic decoding: the temperature fallback's sampling is seeded per chunk (``decoding.budgeted``).

The unit tests need no model; the slow ones run the embedded tiny.en model on three real utterances of pyannote's
``sample.wav`` (about a minute each on 2 busy CPU cores).
"""

from __future__ import annotations

import logging
import re

import pytest
import torch

from whisper_subtitler.decoding.budgeted import SeededSampler, sampling_seed


def test_sampling_seed_depends_on_seed_chunk_and_temperature_only():
    base = sampling_seed(0, 16_000, 0.2)
    assert base == sampling_seed(0, 16_000, 0.2)
    assert len({base, sampling_seed(1, 16_000, 0.2), sampling_seed(0, 16_001, 0.2), sampling_seed(0, 16_000, 0.4)}) == 4
    assert 0 <= base < 2**63


def test_each_row_draws_from_its_own_generator_whatever_the_batch():
    torch.manual_seed(0)
    logits = torch.randn(3, 50)
    tokens = torch.zeros(3, 1, dtype=torch.long)
    seeds = [11, 22, 33]

    def draws(rows: list[int], n: int = 20) -> list[list[int]]:
        sampler = SeededSampler(1.0, eot=49, seeds=[seeds[r] for r in rows])
        out = [[] for _ in rows]
        for _ in range(n):
            torch.rand(7)  # the global generator moves: the draws must not
            t, _ = sampler.update(tokens[rows], logits[rows], torch.zeros(len(rows)))
            for j, tok in enumerate(t[:, -1].tolist()):
                out[j].append(tok)
        return out

    together = draws([0, 1, 2])
    assert draws([1]) == [together[1]]  # row 1 alone or beside others: the same tokens
    assert draws([2, 0]) == [together[2], together[0]]
    assert together[0] != together[1]  # and the rows do differ (the test could fail)


def test_dropped_rows_keep_their_generators():
    logits = torch.randn(3, 50)
    tokens = torch.zeros(3, 1, dtype=torch.long)
    full = SeededSampler(1.0, eot=49, seeds=[5, 6, 7])
    first = [full.update(tokens, logits, torch.zeros(3))[0][:, -1].tolist() for _ in range(5)]
    reference = SeededSampler(1.0, eot=49, seeds=[7])
    expected = [reference.update(tokens[2:], logits[2:], torch.zeros(1))[0][:, -1].tolist() for _ in range(10)]
    full.rows = [2]  # rows 0 and 1 finished: the batch holds original row 2 only
    later = [full.update(tokens[2:], logits[2:], torch.zeros(1))[0][:, -1].tolist() for _ in range(5)]
    assert [r[2] for r in first] + [r[0] for r in later] == [e[0] for e in expected]


def test_temperature_zero_is_greedy():
    logits = torch.randn(2, 50)
    t, _ = SeededSampler(0.0, eot=49, seeds=[1, 2]).update(torch.zeros(2, 1, dtype=torch.long), logits, torch.zeros(2))
    assert t[:, -1].tolist() == logits.argmax(-1).tolist()


# Real speech, real model.


@pytest.fixture(scope="module")
def tiny():
    from whisper_subtitler.models import load_whisper, resolve_model

    return load_whisper(resolve_model("tiny.en"))


@pytest.fixture(scope="module")
def sample_audio():
    """Three real utterances of pyannote's ``sample.wav`` 31 s apart, so that each is a chunk of its own, and their
    speech regions (seconds)."""
    import numpy as np

    from tests.media import SAMPLE_WAV
    from tests.media_conversation import read_stm
    from tests.media_speech import read_wav
    from whisper_subtitler.types import SAMPLE_RATE, Audio

    source = read_wav(SAMPLE_WAV)
    utterances = [u for u in read_stm() if u.text.startswith(("I didn't", "And I'm", "Well,"))]
    pieces, speech, position = [], [], 0
    for u in utterances:
        samples = source[round(u.start * SAMPLE_RATE) : round(u.end * SAMPLE_RATE)]
        pieces += [np.zeros(SAMPLE_RATE, np.float32), samples, np.zeros(30 * SAMPLE_RATE, np.float32)]
        speech.append(((position + SAMPLE_RATE) / SAMPLE_RATE, (position + SAMPLE_RATE + len(samples)) / SAMPLE_RATE))
        position += sum(len(p) for p in pieces[-3:])
    return Audio(np.concatenate(pieces), SAMPLE_RATE, SAMPLE_WAV), tuple(speech)


def _files(model, audio, speech, options, thresholds, batch_size=4) -> tuple[bytes, bytes, int]:
    """SRT and JSON bytes of one batched transcription, and how many chunk decodings sampled."""
    from whisper_subtitler.cues import CueOptions, build_cues
    from whisper_subtitler.transcription.batched import BatchedTranscriber
    from whisper_subtitler.writers import FORMATS, WriterOptions

    records: list[str] = []

    class Catch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record.getMessage())

    logger = logging.getLogger("whisper_subtitler.transcription.batched")
    handler, level = Catch(level=logging.DEBUG), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        transcript = BatchedTranscriber(model, options, batch_size=batch_size, thresholds=thresholds).transcribe(
            audio, speech
        )
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    sampled = [int(m.group(1)) for r in records if (m := re.search(r"(\d+) chunk decodings sampled", r))]
    cues = build_cues(transcript, CueOptions(), speech=speech)
    srt = FORMATS["srt"].render(transcript, cues, WriterOptions()).encode()
    as_json = FORMATS["json"].render(transcript, cues, WriterOptions()).encode()
    return srt, as_json, sum(sampled)


@pytest.mark.slow
def test_three_runs_with_the_fallback_sampling_give_identical_files(tiny, sample_audio):
    from whisper_subtitler.decoding.quality import Thresholds
    from whisper_subtitler.transcription import TranscribeOptions

    audio, speech = sample_audio
    # Every chunk fails the log-probability check at every temperature: the fallback samples at 0.5 and 1.0 (two
    # sampling temperatures of the default six: each samples best_of 5 candidates per chunk).
    forced = Thresholds(logprob=-0.01)
    options = TranscribeOptions(language="en", temperatures=(0.0, 0.5, 1.0))
    runs = []
    for k in range(3):
        torch.manual_seed(1000 + k)  # whatever the global generator holds before a run
        runs.append(_files(tiny, audio, speech, options, forced))
    assert all(sampled == 3 * 2 for _, _, sampled in runs), [r[2] for r in runs]  # 3 chunks x 2 temperatures
    assert len({srt for srt, _, _ in runs}) == 1 and len({js for _, js, _ in runs}) == 1


@pytest.mark.slow
def test_the_seed_and_not_the_batch_decides_what_is_sampled(tiny, sample_audio):
    from whisper_subtitler.transcription import TranscribeOptions

    audio, speech = sample_audio
    hot = TranscribeOptions(language="en", temperatures=(1.0,))  # every chunk sampled at temperature 1
    from whisper_subtitler.decoding.quality import Thresholds

    srt_a, _, sampled = _files(tiny, audio, speech, hot, Thresholds(), batch_size=3)
    assert sampled == 3
    srt_b, _, _ = _files(tiny, audio, speech, hot, Thresholds(), batch_size=1)
    assert srt_a == srt_b  # one chunk per batch or four: the same draws
    other, _, _ = _files(
        tiny, audio, speech, TranscribeOptions(language="en", temperatures=(1.0,), seed=1), Thresholds(), batch_size=3
    )
    assert other != srt_a  # the seed reaches the sampling


@pytest.mark.slow
def test_no_batch_path_is_seeded_too(tiny, sample_audio):
    from whisper_subtitler.transcription import TranscribeOptions
    from whisper_subtitler.transcription.sequential import SequentialTranscriber

    audio, speech = sample_audio
    hot = TranscribeOptions(language="en", temperatures=(1.0,))  # openai-whisper samples every window

    def words(options):
        return [(w.text, w.start, w.end) for w in SequentialTranscriber(tiny, options).transcribe(audio, speech).words]

    torch.manual_seed(1)
    first = words(hot)
    torch.manual_seed(2)
    assert words(hot) == first  # whatever the global generator held
    torch.manual_seed(2)
    torch.rand(1)
    after_one = torch.rand(1)
    torch.manual_seed(2)
    torch.rand(1)
    words(hot)
    assert torch.rand(1) == after_one  # the caller's generator is left as it was
    assert words(TranscribeOptions(language="en", temperatures=(1.0,), seed=1)) != first
