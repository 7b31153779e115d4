"""Cue timing: minimum and maximum duration, reading speed, 2-frame gaps, chaining."""

import pytest

from whisper_subtitler.cues import CueOptions
from whisper_subtitler.cues.timing import Span, needed_duration, time_cues

OPT = CueOptions()


def test_short_cue_is_extended_to_five_sixths_of_a_second():
    ((start, end),) = time_cues([Span(1.0, 1.2, 3)], OPT)
    assert (start, end) == (1.0, pytest.approx(1.0 + 5 / 6))


def test_reading_speed_extends_the_end():
    ((start, end),) = time_cues([Span(0.0, 1.0, 68)], OPT)  # 68 characters need 4 s at 17 cps
    assert end == pytest.approx(4.0)


def test_extension_stops_two_frames_before_the_next_cue():
    times = time_cues([Span(0.0, 0.3, 10), Span(0.5, 2.0, 20)], OPT)
    assert times[0][1] == pytest.approx(0.5 - 2 / 24)
    assert times[1][0] == 0.5


def test_contiguous_speech_keeps_a_two_frame_gap():
    times = time_cues([Span(0.0, 2.0, 30), Span(2.0, 4.0, 30)], OPT)
    assert times[1][0] - times[0][1] == pytest.approx(2 / 24)


def test_short_gaps_are_chained_and_long_gaps_kept():
    chained = time_cues([Span(0.0, 3.0, 30), Span(3.3, 5.0, 20)], OPT)
    assert chained[0][1] == pytest.approx(3.3 - 2 / 24)
    kept = time_cues([Span(0.0, 3.0, 30), Span(4.5, 6.0, 20)], OPT)
    assert kept[0][1] == pytest.approx(3.0)


def test_never_longer_than_the_maximum_duration():
    ((start, end),) = time_cues([Span(0.0, 9.5, 40)], OPT)
    assert end - start == pytest.approx(7.0)


def test_cues_at_the_same_instant_are_pushed_apart_and_keep_end_after_start():
    times = time_cues([Span(1.0, 1.0, 5)] * 4, OPT)
    for (s1, e1), (s2, _) in zip(times, times[1:]):
        assert e1 > s1 and s2 - e1 >= 2 / 24 - 1e-9
    assert times[-1][1] > times[-1][0]


def test_end_of_audio_caps_the_extension():
    ((_, end),) = time_cues([Span(9.5, 9.7, 30)], OPT, duration=10.0)
    assert end == 10.0


def test_needed_duration_is_bounded():
    assert needed_duration(1, OPT) == pytest.approx(5 / 6)
    assert needed_duration(10_000, OPT) == 7.0
    assert needed_duration(34, CueOptions(max_cps=17)) == pytest.approx(2.0)


def test_last_cue_is_chained_to_the_end_of_the_audio():
    # sample.wav: the last cue's words end at 29.82 s, 0.18 s before the end; it has its reading time already.
    times = time_cues([Span(23.98, 27.24, 50), Span(27.52, 29.82, 36)], OPT, duration=30.0)
    assert times[-1][1] == 30.0
    kept = time_cues([Span(27.52, 29.82, 36)], OPT, duration=31.0)  # a second of silence left: not chained
    assert kept[-1][1] == pytest.approx(29.82)
    assert time_cues([Span(27.52, 29.82, 36)], OPT)[-1][1] == pytest.approx(29.82)  # unknown duration


def test_last_cue_is_extended_towards_its_reading_time_up_to_the_end_of_audio():
    ((_, end),) = time_cues([Span(8.0, 8.5, 40)], OPT, duration=9.0)
    assert end == 9.0
    ((_, end),) = time_cues([Span(8.0, 8.5, 40)], OPT, duration=20.0)
    assert end == pytest.approx(8.0 + 40 / 17)


def test_several_words_stay_at_least_0_3_s_and_push_the_next_cue():
    times = time_cues([Span(1.0, 1.1, 8, words=2), Span(1.15, 2.0, 10)], OPT)
    assert times[0][1] - times[0][0] >= 0.3 - 1e-9
    assert times[1][0] - times[0][1] >= 2 / 24 - 1e-9
    one = time_cues([Span(1.0, 1.1, 4, words=1), Span(1.15, 2.0, 10)], OPT)
    assert one[1][0] == 1.15  # a single word may be short: the next cue keeps its start
