"""Word timestamp repair: missing, invalid and implausible times are fixed, not passed through."""

import math
from dataclasses import replace

import pytest

from tests.cue_helpers import words_of
from whisper_subtitler.cues.words import repair_words
from whisper_subtitler.types import Segment, Word


def seg(words, text=None, start=None, end=None):
    return Segment(
        words[0].start if start is None else start,
        words[-1].end if end is None else end,
        text or "".join(w.text for w in words),
        tuple(words),
    )


def repair(segments, duration=100.0, spaceless=False):
    return repair_words(segments, duration=duration, max_word_duration=2.5, spaceless=spaceless)


def test_good_words_pass_unchanged():
    words = words_of("all of these are fine")
    assert list(repair([seg(words)])) == words


def test_missing_times_are_interpolated_between_neighbours():
    words = words_of("one two three four")
    words[1] = replace(words[1], start=math.nan, end=math.nan)
    words[2] = replace(words[2], start=None, end=None)
    out = repair([seg(words)])
    assert out[0] == words[0] and out[3] == words[3]
    assert words[0].end <= out[1].start < out[1].end <= out[2].start < out[2].end <= words[3].start


def test_end_before_start_and_negative_times_are_repaired():
    words = words_of("one two three")
    words[1] = replace(words[1], end=words[1].start - 0.5)
    words[0] = replace(words[0], start=-3.0)
    out = repair([seg(words, start=0.0)])
    assert all(0 <= w.start <= w.end for w in out)


def test_absurdly_long_first_word_after_silence_loses_its_head():
    words = [Word(" Well", 1.0, 6.0), Word(" then.", 6.05, 6.4)]
    out = repair([seg(words)])
    assert out[0].end == 6.0 and out[0].start == pytest.approx(3.5)


def test_absurdly_long_last_word_loses_its_tail():
    words = [Word(" So", 1.0, 1.2), Word(" long.", 1.25, 9.0)]
    out = repair([seg(words)])
    assert out[1].start == 1.25 and out[1].end == pytest.approx(3.75)


def test_times_past_the_audio_end_are_clamped():
    words = [Word(" a", 9.0, 9.2), Word(" b", 9.3, 12.0), Word(" c", 15.0, 15.5)]
    out = repair([seg(words)], duration=10.0)
    assert all(w.end <= 10.0 for w in out)


def test_overlapping_words_are_made_monotonic():
    words = [Word(" a", 1.0, 2.0), Word(" b", 1.5, 2.5), Word(" c", 1.2, 1.4)]
    out = repair([seg(words)])
    for a, b in zip(out, out[1:]):
        assert b.start >= a.end and b.end >= b.start


def test_segment_without_words_gets_words_from_its_text():
    out = repair([Segment(2.0, 4.0, " Two words")])
    assert [w.text for w in out] == [" Two", " words"]
    assert out[0].start == 2.0 and out[-1].end == pytest.approx(4.0)


def test_spaceless_segment_without_words_is_split_by_characters():
    out = repair([Segment(0.0, 1.0, "日本語")], spaceless=True)
    assert [w.text for w in out] == ["日", "本", "語"]


def test_segment_start_gets_a_leading_space_so_segments_do_not_run_together():
    a = [Word(" end.", 0.0, 0.5)]
    b = [Word("Next", 1.0, 1.4)]
    out = repair([seg(a), seg(b)])
    assert out[1].text == " Next"


def test_empty_words_are_dropped():
    words = [Word(" a", 0.0, 0.2), Word(" ", 0.2, 0.3), Word(" b", 0.3, 0.5)]
    assert [w.text for w in repair([seg(words)])] == [" a", " b"]
