"""The embedded offline diarization pipeline on real and synthetic speech, scored with pyannote.metrics
(diarization error rate, no collar, overlapped speech scored).

- pyannote's shipped sample.wav (30 s, two real speakers on a phone line) against its sample.rttm;
- a two-voice espeak-ng conversation with an exact reference (tests/media_speech.py);
- the speaker counts (num_speakers, max_speakers) are honoured.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import media
from tests.media_speech import read_wav, two_voice_clip
from whisper_subtitler.diarize import DiarizationOptions, load_diarizer
from whisper_subtitler.types import Audio, SpeakerTurn

pytestmark = pytest.mark.slow

MAX_DER = 0.10


def der(reference_rttm: Path, turns, uri: str) -> dict:
    """pyannote.metrics' detailed DER of ``turns`` against the RTTM reference, no collar, overlaps scored."""
    from pyannote.core import Annotation, Segment
    from pyannote.database.util import load_rttm
    from pyannote.metrics.diarization import DiarizationErrorRate

    reference = load_rttm(str(reference_rttm))[uri]
    hypothesis = Annotation(uri=uri)
    for turn in turns:
        hypothesis[Segment(turn.start, turn.end)] = turn.speaker
    extent = reference.get_timeline().extent() | hypothesis.get_timeline().extent()
    return DiarizationErrorRate(collar=0.0, skip_overlap=False)(reference, hypothesis, detailed=True, uem=extent)


@pytest.fixture(scope="module")
def diarizer():
    with load_diarizer(DiarizationOptions(), device="cpu") as d:
        yield d


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    return two_voice_clip(tmp_path_factory.mktemp("speech") / "two_voices.wav")


@pytest.fixture(scope="module")
def clip_audio(clip) -> Audio:
    return Audio(read_wav(clip.wav), 16_000, clip.wav)


def test_sample_wav_der_at_most_10_percent(diarizer):
    turns = diarizer(Audio(read_wav(media.SAMPLE_WAV), 16_000, media.SAMPLE_WAV))
    result = der(media.SAMPLE_RTTM, turns, "sample")
    assert result["diarization error rate"] <= MAX_DER, result
    assert {t.speaker for t in turns} == {"SPEAKER_00", "SPEAKER_01"}
    assert turns[0].speaker == "SPEAKER_00"  # labels in order of first appearance
    assert list(turns) == sorted(turns, key=lambda t: (t.start, t.end))
    assert all(isinstance(t, SpeakerTurn) and 0 <= t.start < t.end <= 30.0 for t in turns)


def test_two_voice_clip_der_at_most_10_percent(diarizer, clip, clip_audio):
    turns = diarizer(clip_audio)
    result = der(clip.rttm, turns, clip.wav.stem)
    assert result["diarization error rate"] <= MAX_DER, result
    assert len({t.speaker for t in turns}) == 2


@pytest.mark.parametrize(
    "options, expected",
    [
        (DiarizationOptions(num_speakers=1), 1),
        (DiarizationOptions(max_speakers=1), 1),
        (DiarizationOptions(num_speakers=3), 3),
    ],
)
def test_speaker_counts_are_honoured(diarizer, clip_audio, options, expected):
    turns = diarizer.with_options(options)(clip_audio)
    assert len({t.speaker for t in turns}) == expected


def test_audio_at_another_sample_rate_is_refused(diarizer):
    import numpy as np

    from whisper_subtitler.errors import SubtitlerError

    with pytest.raises(SubtitlerError, match="16000 Hz"):
        diarizer(Audio(np.zeros(8_000, dtype=np.float32), 8_000, Path("x.wav")))


def test_silence_gives_no_turns_and_the_thread_count_is_restored(diarizer):
    import numpy as np
    import torch

    threads = torch.get_num_threads()
    assert diarizer(Audio(np.zeros(5 * 16_000, dtype=np.float32), 16_000, Path("silence.wav"))) == ()
    assert diarizer(Audio(np.zeros(0, dtype=np.float32), 16_000, Path("empty.wav"))) == ()
    assert torch.get_num_threads() == threads  # segmentation runs on one thread, then gives the others back
