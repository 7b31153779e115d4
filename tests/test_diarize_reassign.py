"""Short speech regions re-assigned by a direct speaker embedding (whisper_subtitler/diarize/reassign.py).

- the decision on synthetic embeddings: nearest reference by cosine similarity, only with a clear margin, and only
  for the regions that the diarization splits between speakers (one given wholly to a speaker keeps it);
- the references: each speaker's longest exclusive turns, cut to their middle;
- relabelling keeps the diarized time and gives a region to one speaker, in both diarizations;
- the whole step on a synthetic "model" whose embedding is the audio's sign;
- real speech: the first "Hello?" of pyannote's sample.wav (Diane, 6.68-7.16 s) ends up as Diane's speaker, the
  one of her "This is Diane in New Jersey" (12.54-14.18 s), and the DER on the sample does not rise.
"""

from __future__ import annotations

import numpy as np
import pytest

from whisper_subtitler.diarize.reassign import (
    Settings,
    decide,
    nearest_clear,
    reassign_short_regions,
    reference_turns,
    relabel,
    short_regions,
)

A = np.array([1.0, 0.0, 0.0])
B = np.array([0.0, 1.0, 0.0])


def annotation(turns):
    from pyannote.core import Annotation, Segment

    result = Annotation(uri="test")
    for k, (start, end, label) in enumerate(turns):
        result[Segment(start, end), str(k)] = label
    return result


def as_list(annotation):
    return [(round(s.start, 3), round(s.end, 3), label) for s, _, label in annotation.itertracks(yield_label=True)]


def test_nearest_reference_is_chosen_only_with_a_clear_margin():
    centroids = np.stack([A, B])
    embeddings = np.stack(
        [
            2.0 * A + 0.1 * B,  # clearly A (the norm does not matter)
            0.2 * A + 1.0 * B,  # clearly B
            A + 0.95 * B,  # A by a hair: cos 0.725 against 0.689
            np.array([0.0, 0.0, 1.0]),  # neither
        ]
    )
    assert nearest_clear(embeddings, centroids, margin=0.05).tolist() == [0, 1, -1, -1]
    assert nearest_clear(embeddings, centroids, margin=0.0).tolist()[:3] == [0, 1, 0]
    assert nearest_clear(embeddings, centroids[:1], margin=0.0).tolist() == [-1, -1, -1, -1]  # one speaker only
    assert nearest_clear(np.zeros((0, 3)), centroids, margin=0.05).shape == (0,)
    with pytest.raises(ValueError, match="expected"):
        nearest_clear(embeddings, np.zeros((2, 4)), margin=0.05)


def test_short_regions_are_those_from_a_quarter_second_to_max_region():
    speech = [(0.0, 0.2), (1.0, 1.5), (2.0, 3.6), (4.0, 5.0)]
    assert short_regions(speech, max_region=1.5) == [(1.0, 1.5), (4.0, 5.0)]


def test_references_are_the_longest_exclusive_turns_cut_to_their_middle():
    exclusive = annotation(
        [(0, 2, "A"), (3, 13, "A"), (14, 15, "A"), (16, 20, "A"), (21, 23.5, "A"), (24, 27, "B"), (28, 29, "C")]
    )
    turns = reference_turns(exclusive, Settings(max_region=1.5, max_turns=3, max_turn_seconds=3.0))
    assert turns == {"A": [(6.5, 9.5), (16.5, 19.5), (21.0, 23.5)], "B": [(24.0, 27.0)]}  # C: no turn over 1.5 s


def test_relabel_gives_the_region_to_one_speaker_and_keeps_its_time():
    diarization = annotation([(0, 5, "A"), (6.0, 6.3, "B"), (6.3, 6.6, "A"), (6.4, 6.5, "B"), (7, 9, "B")])
    result = relabel(diarization, (5.9, 6.7), "A")
    assert as_list(result) == [(0, 5, "A"), (6.0, 6.6, "A"), (7, 9, "B")]
    assert as_list(relabel(diarization, (10, 11), "A")) == as_list(diarization)  # nothing inside: unchanged


TRUTH = [(0, 4, "A"), (4.5, 8.5, "B"), (9, 9.5, "A"), (10, 10.5, "B"), (11, 11.5, "A"), (12, 12.5, "?"), (13, 17, "A")]


def fake_embed(spans):
    """The embedding of who truly speaks in each span (TRUTH); "?" is a voice halfway between A and B."""
    voices = {"A": A + 0.1, "B": B + 0.1, "?": (A + B) / 2}
    rows = []
    for start, end in spans:
        (label,) = {t for s, e, t in TRUTH if s < end and start < e}
        rows.append(voices[label])
    return np.stack(rows)


def test_split_short_regions_go_whole_to_the_clearly_nearest_speaker():
    speech = [(s, e) for s, e, _ in TRUTH]
    diarization = annotation(
        [
            (0, 4, "A"),
            (4.5, 8.5, "B"),
            (9, 9.2, "B"),  # A's short region split mid-word -> A
            (9.2, 9.5, "A"),
            (10, 10.3, "B"),  # B's, split with A -> B
            (10.3, 10.5, "A"),
            (11, 11.5, "B"),  # A's, given wholly to B: the clustering's whole decision stands
            (12, 12.3, "B"),  # nobody clearly: unchanged
            (12.3, 12.5, "A"),
            (13, 17, "A"),
        ]
    )
    changes = decide(diarization, diarization, speech, fake_embed, Settings())
    assert changes == [((9, 9.5), "A"), ((10, 10.5), "B")]
    # a region holding a speaker with no reference (no turn over max_region) is left alone
    from pyannote.core import Segment

    with_c = diarization.copy()
    with_c[Segment(9.3, 9.4), "c"] = "C"
    assert decide(with_c, with_c, speech, fake_embed, Settings()) == [((10, 10.5), "B")]
    # one speaker with a reference: nothing to compare
    only_a = annotation([(0, 4, "A"), (9, 9.2, "B"), (9.2, 9.5, "A")])
    assert decide(only_a, only_a, speech, fake_embed, Settings()) == []


class SignModel:
    """A stand-in for CAM++: the embedding of a waveform is (positive share, negative share), so speaker A is
    written as +0.5 samples and speaker B as -0.5 samples."""

    dimension = 2

    class audio:  # noqa: N801 - pyannote's Model.audio.sample_rate
        sample_rate = 16_000

    def __init__(self):
        import torch

        self.calls: list[tuple[int, ...]] = []
        self._parameter = torch.zeros(1)

    def parameters(self):
        return iter([self._parameter])

    def frames(self, waveforms):
        """``(batch, 1, samples)`` -> one "frame" of 2 channels: the share of positive samples and the rest."""
        import torch

        self.calls.append(tuple(waveforms.shape))
        positive = (waveforms > 0).float().mean(dim=-1)
        return torch.cat([positive, 1 - positive], dim=-1).unsqueeze(-1)

    def frames_of_many(self, batches):
        """:meth:`frames` of each batch (CAM++'s interface for batches of several lengths at once)."""
        return [self.frames(batch) for batch in batches]

    def embed_frames(self, frames, weights):
        return frames[..., 0]


def test_the_whole_step_relabels_both_diarizations_and_drops_a_vanished_speakers_centroid():
    import torch

    from whisper_subtitler.diarize import pyannote_compat  # noqa: F401  (prepares torchaudio before pyannote.audio)

    from pyannote.audio.pipelines.speaker_diarization import DiarizeOutput

    sample_rate = 16_000
    truth = [(0.0, 3.0, 0.5), (3.5, 6.5, -0.5), (7.0, 7.5, 0.5), (8.0, 11.0, 0.5)]  # A, B, A (short), A
    samples = np.zeros(12 * sample_rate, dtype=np.float32)
    for start, end, value in truth:
        samples[int(start * sample_rate) : int(end * sample_rate)] = value
    speech = [(s, e) for s, e, _ in truth]
    with_s2 = [(0, 3, "S0"), (3.5, 6.5, "S1"), (7.0, 7.2, "S2"), (7.2, 7.5, "S0"), (8, 11, "S0")]
    centroids = np.array([[0.0], [1.0], [2.0]])  # rows for S0, S1, S2
    output = DiarizeOutput(annotation(with_s2), annotation(with_s2), centroids)
    # S2 has no reference (no long turn): the region it shares stays
    assert reassign_short_regions(output, torch.from_numpy(samples)[None], sample_rate, speech, SignModel()) is output

    split = [(0, 3, "S0"), (3.5, 6.5, "S1"), (7.0, 7.2, "S1"), (7.2, 7.4, "S0"), (8, 11, "S0")]
    output = DiarizeOutput(annotation(split), annotation(split), centroids[:2])
    model = SignModel()
    new = reassign_short_regions(output, torch.from_numpy(samples)[None], sample_rate, speech, model)
    expected = [(0, 3, "S0"), (3.5, 6.5, "S1"), (7.0, 7.4, "S0"), (8, 11, "S0")]
    assert as_list(new.speaker_diarization) == as_list(new.exclusive_speaker_diarization) == expected
    assert new.speaker_embeddings.tolist() == [[0.0], [1.0]]  # both speakers still there
    assert all(shape[1] == 1 for shape in model.calls)  # (batch, 1, samples)

    with pytest.raises(ValueError, match="Hz"):
        reassign_short_regions(output, torch.from_numpy(samples)[None], 8_000, speech, SignModel())


# Real speech ------------------------------------------------------------------------------------------------------

HELLO = (6.68, 7.16)  # Diane's first "Hello?" (sample.stm)
DIANE = (12.542, 14.184)  # "This is Diane in New Jersey."


@pytest.fixture(scope="module")
def sample_outputs():
    """The embedded pipeline's output on sample.wav with the VAD's speech regions, with and without the step."""
    import torch

    from tests import media
    from tests.media_speech import read_wav
    from whisper_subtitler.diarize import pyannote_compat
    from whisper_subtitler.diarize.embedded import OfflineSpeakerDiarization
    from whisper_subtitler.vad import speech_regions

    samples = read_wav(media.SAMPLE_WAV)
    file = {"waveform": torch.from_numpy(samples).unsqueeze(0), "sample_rate": 16_000, "uri": "sample"}
    file["speech"] = speech_regions(samples)
    pipeline = OfflineSpeakerDiarization()
    with pyannote_compat.quiet_pyannote_warnings():
        with_step = pipeline(file)
        pipeline.reassign = False
        without = pipeline(file)
    return with_step, without


def speakers_in(annotation, span):
    from pyannote.core import Segment

    inside = annotation.crop(Segment(*span))
    return {label: inside.label_duration(label) for label in inside.labels()}


@pytest.mark.slow
def test_first_hello_of_the_sample_is_dianes(sample_outputs):
    with_step, _ = sample_outputs
    for diarization in (with_step.speaker_diarization, with_step.exclusive_speaker_diarization):
        diane = speakers_in(diarization, DIANE)
        diane_label = max(diane, key=diane.get)
        hello = speakers_in(diarization, HELLO)
        assert set(hello) == {diane_label}, (hello, diane)
        assert sum(hello.values()) >= 0.3  # the word is there, not cut away


@pytest.mark.slow
def test_sample_der_does_not_rise(sample_outputs):
    from pyannote.core import Segment
    from pyannote.database.util import load_rttm
    from pyannote.metrics.diarization import DiarizationErrorRate

    from tests import media

    reference = load_rttm(str(media.SAMPLE_RTTM))["sample"]

    def der(hypothesis):
        return DiarizationErrorRate(collar=0.0, skip_overlap=False)(reference, hypothesis, uem=Segment(0, 30))

    with_step, without = sample_outputs
    assert der(with_step.speaker_diarization) <= der(without.speaker_diarization)
    assert der(with_step.speaker_diarization) <= 0.045  # 4.0 % measured (5.2 % without the step)
