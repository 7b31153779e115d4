"""The speaker count checked again after clustering (whisper_subtitler/diarize/recount.py), the segmentation masked
to speech and the overlap count (whisper_subtitler/diarize/embedded.py), on synthetic inputs (fast).

The same on real speech, under music and on a long file: tests/test_diarize_real_world.py (slow).
"""

from __future__ import annotations

import numpy as np
import pytest

from whisper_subtitler.diarize import pyannote_compat  # noqa: F401  (prepares torchaudio before pyannote.audio)
from whisper_subtitler.diarize.recount import MIN_SPEECH, merges, recount, relabel_all, speaker_stretches

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


def test_distinct_speakers_with_enough_speech_are_kept():
    assert merges({"x": 10.0, "y": 8.0}, {"x": np.stack([A, A]), "y": np.stack([B])}) == {}


def test_a_speaker_with_too_little_speech_joins_the_nearest():
    vectors = {"x": np.stack([A]), "y": np.stack([B]), "z": np.stack([0.9 * B + 0.3 * A])}
    assert merges({"x": 10.0, "y": 8.0, "z": MIN_SPEECH - 0.1}, vectors) == {"z": "y"}
    assert merges({"x": 10.0, "y": 8.0, "z": MIN_SPEECH + 0.1}, vectors) == {"z": "y"}  # alike (cos 0.95) all the same
    assert merges({"x": 10.0, "y": 8.0, "z": MIN_SPEECH + 0.1}, vectors, merge_similarity=1.0) == {}


def test_alike_speakers_merge_into_the_one_with_more_speech():
    vectors = {"x": np.stack([A]), "y": np.stack([B]), "z": np.stack([B + 0.1 * A])}
    assert merges({"x": 10.0, "y": 8.0, "z": 20.0}, vectors) == {"y": "z"}
    assert merges({"x": 10.0, "y": 8.0, "z": 20.0}, vectors, merge_similarity=1.0) == {}


def test_a_speaker_without_stretches_joins_the_one_with_most_speech():
    vectors = {"x": np.stack([A]), "y": np.stack([B]), "z": np.zeros((0, 3))}
    assert merges({"x": 5.0, "y": 8.0, "z": 1.0}, vectors) == {"z": "y"}


def test_a_speaker_heard_only_in_slivers_joins_the_nearest():
    """Plenty of speech, but no exclusive turn as long as MAX_REGION: the clustering's speaker of quick exchanges."""
    from whisper_subtitler.diarize.reassign import MAX_REGION

    vectors = {"x": np.stack([A]), "y": np.stack([B]), "z": np.stack([0.3 * A + B])}
    speech = {"x": 100.0, "y": 90.0, "z": 40.0}
    slivers = {"x": 6.0, "y": 5.0, "z": MAX_REGION - 0.1}
    assert merges(speech, vectors, merge_similarity=1.0, longest=slivers) == {"z": "y"}
    assert merges(speech, vectors, merge_similarity=1.0, longest={**slivers, "z": MAX_REGION + 0.1}) == {}
    assert merges(speech, vectors, merge_similarity=1.0) == {}  # without the turns' lengths: not checked
    assert merges(speech, vectors, merge_similarity=1.0, longest=slivers, min_speakers=3) == {}
    # nobody heard in a long turn (fast talk, or turns broken up by music): the speakers stay
    all_short = {"x": MAX_REGION - 0.1, "y": MAX_REGION - 0.2, "z": MAX_REGION - 0.3}
    assert merges(speech, vectors, merge_similarity=1.0, longest=all_short) == {}


def test_a_minor_speaker_joins_a_speaker_with_more_speech():
    """As the 10-minute repeated sample: the slivers' reference lies nearest a small speaker heard in one long turn
    (w, 3.5 s); joining it would make w a third voice of 17.5 s, so they join the nearest of the larger ones."""
    C = np.array([0.0, 0.0, 1.0])
    vectors = {"x": np.stack([A]), "y": np.stack([B]), "w": np.stack([C]), "z": np.stack([0.2 * A + C])}
    speech = {"x": 100.0, "y": 90.0, "w": MIN_SPEECH + 0.5, "z": 14.0}
    longest = {"x": 4.0, "y": 6.0, "w": 2.3, "z": 0.7}
    assert merges(speech, vectors, merge_similarity=1.0, longest=longest) == {"z": "x"}


def test_recount_merges_a_speaker_whose_turns_are_all_short():
    from pyannote.audio.pipelines.speaker_diarization import DiarizeOutput

    # z speaks 10 s in all, in 0.5-s turns between x's and y's long ones; its own embedding lies apart from both
    turns = [(0, 6, "x"), (7, 13, "y")] + [(20 + 2 * k, 20.5 + 2 * k, "z") for k in range(20)] + [(61, 67, "x")]
    output = DiarizeOutput(
        speaker_diarization=annotation(turns),
        exclusive_speaker_diarization=annotation(turns),
        speaker_embeddings=np.stack([A, B, np.array([0.0, 0.0, 1.0])]),
    )

    def embed(spans):  # z apart from both (cosine 0.28 and 0.19): rule 2 would keep it
        z = np.array([0.3, 0.2, 1.0])
        return np.stack([B if 7 <= start < 13 else (z if 20 <= start < 60 else A) for start, _ in spans])

    labels = {label for *_, label in as_list(recount(output, embed).speaker_diarization)}
    assert labels == {"x", "y"}


def test_flicker_turns_do_not_count_as_speech():
    """As the 3-hour repeated sample's fourth cluster: one 2.25-s turn and 180 turns of 0.02 s (6 s in all)."""
    from pyannote.audio.pipelines.speaker_diarization import DiarizeOutput

    flicker = [(100 + 0.5 * k, 100.02 + 0.5 * k, "w") for k in range(180)]
    turns = [(0, 6, "x"), (7, 13, "y"), (14, 16.25, "w"), (17, 23, "x"), (24, 30, "y")] + flicker
    assert sum(end - start for start, end, label in turns if label == "w") > MIN_SPEECH
    output = DiarizeOutput(
        speaker_diarization=annotation(turns),
        exclusive_speaker_diarization=annotation(turns),
        speaker_embeddings=np.stack([A, B, np.array([0.0, 0.0, 1.0])]),
    )

    def embed(spans):  # w's one turn lies apart from x and y: only rule 1 can merge it
        return np.stack(
            [
                np.array([0.3, 0.2, 1.0]) if 14 <= start < 17 else (B if 7 <= start % 17 < 13 else A)
                for start, _ in spans
            ]
        )

    labels = {label for *_, label in as_list(recount(output, embed).speaker_diarization)}
    assert labels == {"x", "y"}


def test_never_below_min_speakers():
    vectors = {"x": np.stack([A]), "y": np.stack([A])}
    assert merges({"x": 10.0, "y": 1.0}, vectors, min_speakers=2) == {}
    assert merges({"x": 10.0, "y": 1.0}, vectors) == {"y": "x"}


def test_stretches_are_the_longest_turns_cut_to_their_middle():
    exclusive = annotation([(0, 1, "x"), (2, 12, "x"), (12, 12.1, "y"), (13, 15, "y")])
    stretches = speaker_stretches(exclusive, max_turns=1, max_turn_seconds=4.0)
    assert stretches == {"x": [(5.0, 9.0)], "y": [(13.0, 15.0)]}  # y's 0.1 s turn is too short to embed


def test_recount_relabels_both_diarizations_and_joins_turns():
    from pyannote.audio.pipelines.speaker_diarization import DiarizeOutput

    turns = [(0, 5, "x"), (5, 6, "z"), (6, 12, "x"), (13, 20, "y")]
    output = DiarizeOutput(
        speaker_diarization=annotation(turns),
        exclusive_speaker_diarization=annotation(turns),
        speaker_embeddings=np.stack([A, B, A]),
    )

    def embed(spans):  # x and z alike, y apart; z has 1 s of speech
        return np.stack([B if start >= 13 else A for start, _ in spans])

    new = recount(output, embed)
    assert as_list(new.speaker_diarization) == [(0, 12, "x"), (13, 20, "y")]
    assert as_list(new.exclusive_speaker_diarization) == [(0, 12, "x"), (13, 20, "y")]
    assert new.speaker_embeddings.tolist() == [A.tolist(), B.tolist()]
    assert recount(output, embed, min_speakers=3) is output


def test_relabel_all_without_mapping_is_the_same_annotation():
    a = annotation([(0, 1, "x")])
    assert relabel_all(a, {}) is a


def test_mask_to_speech_silences_frames_outside_speech():
    from pyannote.core import SlidingWindow, SlidingWindowFeature

    from whisper_subtitler.diarize.embedded import mask_to_speech

    data = np.ones((3, 10, 2), dtype=np.float32)  # 3 chunks of 1 s every 0.5 s, 10 frames of 0.1 s
    features = SlidingWindowFeature(data, SlidingWindow(start=0.0, duration=1.0, step=0.5))
    frames = SlidingWindow(start=0.0, duration=0.1, step=0.1)
    masked = mask_to_speech(features, frames, [(0.2, 0.6), (1.45, 5.0)])
    middles = 0.5 * np.arange(3)[:, None] + 0.1 * np.arange(10)[None, :] + 0.05
    expected = ((middles >= 0.2) & (middles < 0.6)) | (middles >= 1.45)
    assert np.array_equal(masked.data[:, :, 0] > 0, expected)
    assert np.array_equal(masked.data[:, :, 1], masked.data[:, :, 0])
    assert mask_to_speech(features, frames, []).data.sum() == 0


@pytest.mark.parametrize("margin, expected", [(0.0, [0, 1, 2, 2, 1]), (0.2, [0, 1, 1, 2, 1])])
def test_overlap_needs_the_margin(monkeypatch, margin, expected):
    from pyannote.audio.core.inference import Inference
    from pyannote.core import SlidingWindow, SlidingWindowFeature

    from whisper_subtitler.diarize.embedded import OfflineSpeakerDiarization

    mean = np.array([[0.2], [1.1], [1.55], [1.8], [1.2]])  # mean count of active local speakers per frame
    monkeypatch.setattr(Inference, "trim", staticmethod(lambda s, warm_up: s))
    monkeypatch.setattr(
        Inference, "aggregate", staticmethod(lambda *a, **k: SlidingWindowFeature(mean.copy(), SlidingWindow()))
    )
    pipeline = object.__new__(OfflineSpeakerDiarization)  # no model needed for the count
    pipeline.fast, pipeline.overlap_margin = True, margin
    segmentations = SlidingWindowFeature(np.zeros((1, 5, 3)), SlidingWindow())
    count = OfflineSpeakerDiarization.speaker_count(pipeline, segmentations, SlidingWindow())
    if margin == 0.0:  # pyannote's own rounding
        expected = np.rint(mean).astype(int).ravel().tolist()
    assert count.data.ravel().tolist() == expected
