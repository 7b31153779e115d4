"""Turn edges pulled in to the speech's energy (whisper_subtitler/diarize/edges.py), on synthetic signals (fast).

On real speech under a music bed, with noise and clean: tests/test_diarize_real_world.py (slow), whose DER bounds
fail if the rule is lost.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from whisper_subtitler.diarize import pyannote_compat  # noqa: F401  (prepares torchaudio before pyannote.audio)
from whisper_subtitler.diarize.edges import (
    ABOVE_BACKGROUND_DB,
    MAX_TRIM,
    background_level,
    frame_energy_db,
    frame_index,
    trim_to_energy,
    trimmed_edges,
)

RATE = 16_000


def levels(*spans: tuple[float, float, float], seconds: float = 5.0, floor: float = -60.0) -> np.ndarray:
    """Energy in dB per 10-ms frame: ``floor`` everywhere, ``(start, end, dB)`` spans over it."""
    energy = np.full(round(seconds * 100), floor)
    for start, end, db in spans:
        energy[round(start * 100) : round(end * 100)] = db
    return energy


def test_frame_energy_is_the_mean_power_of_each_10_ms_frame_in_db():
    t = np.arange(round(1.005 * RATE)) / RATE
    sine = 0.5 * np.sin(2 * np.pi * 500 * t)  # five whole periods per frame, mean power 0.125: -9.03 dB
    energy = frame_energy_db(sine, RATE)
    assert energy.shape == (100,)  # the last 5 ms (half a frame) dropped
    np.testing.assert_allclose(energy, 10 * np.log10(0.125), atol=0.05)
    assert frame_energy_db(np.zeros(RATE), RATE).max() == pytest.approx(-100.0)


def test_a_time_a_rounding_error_below_a_frame_start_is_in_that_frame():
    assert [frame_index(t) for t in (0.29, 0.3, 0.305, 1.0, 2.57)] == [29, 30, 30, 100, 257]


def test_edges_move_in_to_the_loud_frames_keeping_one_frame_after_the_end():
    energy = levels((1.0, 2.0, -20.0))
    threshold = -60.0 + ABOVE_BACKGROUND_DB
    ((start, end),) = trimmed_edges([(0.88, 2.11)], energy, threshold)
    assert (start, end) == pytest.approx((1.0, 2.01))
    # a turn already inside the speech keeps its edges
    assert trimmed_edges([(1.2, 1.8)], energy, threshold) == [(1.2, 1.8)]


def test_an_edge_moves_at_most_max_trim_and_a_quiet_turn_keeps_its_edges():
    energy = levels((1.0, 2.0, -20.0))
    threshold = -60.0 + ABOVE_BACKGROUND_DB
    ((start, end),) = trimmed_edges([(0.5, 2.5)], energy, threshold)
    assert start == pytest.approx(0.5 + MAX_TRIM) and end == pytest.approx(2.5 - MAX_TRIM + 0.01)
    # nothing loud in it: a short turn would shrink below MIN_TURN and keeps its edges, a longer one loses MAX_TRIM
    # at each end (the rule only moves edges; removing turns is not its business)
    assert trimmed_edges([(3.0, 3.3)], energy, threshold) == [(3.0, 3.3)]
    ((start, end),) = trimmed_edges([(3.0, 4.0)], energy, threshold)
    assert (start, end) == pytest.approx((3.0 + MAX_TRIM, 4.0 - MAX_TRIM + 0.01))
    assert trimmed_edges([(1.0, 1.03)], energy, threshold) == [(1.0, 1.03)]  # shorter than 5 frames


def test_speech_a_little_over_the_background_stays():
    """A music bed at -30 dB and a speaker only 4 dB over it: still over the threshold (background + 3 dB)."""
    energy = levels((1.0, 2.0, -26.0), floor=-30.0)
    ((start, end),) = trimmed_edges([(0.9, 2.1)], energy, -30.0 + ABOVE_BACKGROUND_DB)
    assert (start, end) == pytest.approx((1.0, 2.01))
    energy = levels((1.0, 2.0, -28.0), floor=-30.0)  # 2 dB over it: taken for the background, within MAX_TRIM
    ((start, end),) = trimmed_edges([(0.9, 2.1)], energy, -30.0 + ABOVE_BACKGROUND_DB)
    assert start == pytest.approx(0.9 + MAX_TRIM)


def test_the_background_is_the_median_outside_the_turns_and_needs_half_a_second():
    energy = levels((1.0, 2.0, -20.0), (3.0, 4.0, -40.0))  # -40 dB for 1 s of the 4 s outside the turn
    assert background_level([(1.0, 2.0)], energy) == pytest.approx(-60.0)
    assert background_level([(0.0, 4.6)], energy) is None  # 0.4 s outside
    assert background_level([(0.0, 4.5)], energy) == pytest.approx(-60.0)  # 0.5 s


def test_the_turns_are_trimmed_with_their_labels_and_the_exclusive_turns_keep_their_edges():
    from pyannote.audio.pipelines.speaker_diarization import DiarizeOutput
    from pyannote.core import Annotation, Segment

    rng = np.random.default_rng(0)
    samples = rng.normal(0.0, 0.003, 5 * RATE).astype(np.float32)  # noise about -50 dB
    for start, end in ((1.0, 2.0), (2.5, 3.5)):
        samples[round(start * RATE) : round(end * RATE)] += rng.normal(0.0, 0.1, round((end - start) * RATE))

    def annotation(turns):
        result = Annotation(uri="edges")
        for k, (start, end, label) in enumerate(turns):
            result[Segment(start, end), str(k)] = label
        return result

    turns = [(0.85, 2.12, "A"), (2.4, 3.6, "B")]
    output = DiarizeOutput(
        speaker_diarization=annotation(turns),
        exclusive_speaker_diarization=annotation(turns),
        speaker_embeddings=np.eye(2),
    )
    trimmed = trim_to_energy(output, torch.from_numpy(samples[None, :]), RATE)  # the pipeline's (1, n) tensor
    tracks = trimmed.speaker_diarization.itertracks(yield_label=True)
    got = [(round(s.start, 2), round(s.end, 2), label) for s, _, label in tracks]
    assert got == [(1.0, 2.01, "A"), (2.5, 3.51, "B")]
    assert trimmed.exclusive_speaker_diarization is output.exclusive_speaker_diarization  # the words' evidence
    assert trimmed.speaker_embeddings is output.speaker_embeddings
    # no audio outside the turns to measure the background on: nothing moves
    whole = DiarizeOutput(annotation([(0.0, 5.0, "A")]), annotation([(0.0, 5.0, "A")]), np.eye(1))
    assert trim_to_energy(whole, samples[None, :], RATE) is whole
