"""Word timestamps across pauses (``transcription.pauses``): pure logic, then the pieces' tight regions on real
speech."""

from __future__ import annotations

import math

import numpy as np
import pytest

from whisper_subtitler.transcription.pauses import start_after_pauses
from whisper_subtitler.types import Segment, Word


def seg(*words: tuple[str, float, float]) -> Segment:
    ws = tuple(Word(text, a, b, 0.9) for text, a, b in words)
    return Segment(ws[0].start, ws[-1].end, "".join(w.text for w in ws), ws)


def times(segments):
    return [[(w.text, w.start, w.end) for w in s.words] for s in segments]


def test_a_word_holding_a_whole_pause_starts_where_it_ends():
    # Whisper's "didn't" of a new speaker reaching back over the 0.42-s pause into the previous turn
    (out,) = start_after_pauses([seg((" I", 21.57, 22.01), (" didn't", 22.01, 23.27), (" know", 23.27, 23.4))],
                                [(22.59, 23.01)])  # fmt: skip
    assert times([out]) == [[(" I", 21.57, 22.01), (" didn't", 23.01, 23.27), (" know", 23.27, 23.4)]]


def test_a_pause_that_starts_where_the_word_starts_is_held_by_it():
    """Word times and pause edges fall on grids (milliseconds, 32-ms VAD frames) that can meet exactly."""
    (out,) = start_after_pauses([seg((" so", 0.59, 1.27))], [(0.59, 1.01)])
    assert times([out]) == [[(" so", 1.01, 1.27)]]
    (first,) = start_after_pauses([seg((" Hi", 0.0, 0.9))], [(0.0, 0.4)])  # the lead before a piece's first speech
    assert times([first]) == [[(" Hi", 0.4, 0.9)]]


def test_words_that_only_start_or_end_in_a_pause_or_hold_none_are_unchanged():
    segments = [seg((" a", 0.0, 1.05), (" b", 1.05, 2.0), (" c", 2.2, 2.9))]
    gaps = [(1.0, 1.1), (2.1, 2.3), (3.0, 4.0)]  # a ends in one, b starts in it; c starts in the second
    assert start_after_pauses(segments, gaps) == segments
    assert start_after_pauses(segments, []) == segments
    assert start_after_pauses(segments, gaps)[0] is segments[0]  # nothing moved: the same object


def test_the_last_of_several_pauses_inside_a_word_wins_and_the_segment_starts_with_its_first_word():
    (out,) = start_after_pauses([seg((" so", 1.0, 3.0), (" yes", 3.0, 3.2))], [(0.2, 0.5), (1.2, 1.4), (2.0, 2.5)])
    assert times([out]) == [[(" so", 2.5, 3.0), (" yes", 3.0, 3.2)]]
    assert out.start == 2.5
    (inner,) = start_after_pauses([seg((" a", 0.0, 0.4), (" b", 0.4, 1.5))], [(0.6, 0.9)])
    assert inner.start == 0.0 and times([inner]) == [[(" a", 0.0, 0.4), (" b", 0.9, 1.5)]]


def test_a_word_without_a_usable_time_is_left_for_the_cue_stage_to_repair():
    nan = Segment(0.0, 1.0, " x", (Word(" x", math.nan, math.nan, 0.5),))
    assert start_after_pauses([nan], [(0.2, 0.4)]) == [nan]


@pytest.mark.slow
def test_pieces_carry_the_tight_regions_of_their_own_samples(tmp_path):
    """Two espeak-ng sentences 0.6 s apart: the piece's tight regions are the VAD's with no padding on the same
    samples, and the pause between the sentences is one of ``vad.pauses``."""
    from tests import media
    from tests.media_speech import read_wav
    from whisper_subtitler.pieces import speech_pieces
    from whisper_subtitler.stages import StageTimer
    from whisper_subtitler.types import Audio
    from whisper_subtitler.vad import pauses, speech_regions, tight_regions

    one = read_wav(media.espeak("Good morning to everyone here.", tmp_path / "a.wav"))
    two = read_wav(media.espeak("Let us begin with the news.", tmp_path / "b.wav"))
    samples = np.concatenate([one, np.zeros(int(0.6 * 16_000), np.float32), two]).astype(np.float32)
    (piece,) = speech_pieces([Audio(samples, 16_000, tmp_path / "x.wav")], speech_regions, StageTimer(),
                             find_tight=tight_regions)  # fmt: skip
    assert piece.tight == tight_regions(samples) and len(piece.tight) >= 2
    gap_start, gap_end = len(one) / 16_000, len(one) / 16_000 + 0.6
    assert any(a <= gap_start + 0.15 and gap_end - 0.15 <= b for a, b in pauses(piece.tight, 0.0, piece.audio.duration))
