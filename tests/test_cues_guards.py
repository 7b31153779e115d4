"""Hallucination guards: no cue over silence, no loops, no run of repeated cues."""

from dataclasses import replace

from tests.cue_helpers import transcript_of, words_of
from whisper_subtitler.cues import build_cues
from whisper_subtitler.cues.guards import collapse_loops, drop_repeats, drop_unvoiced
from whisper_subtitler.types import Segment, Transcript


def texts(words):
    return [w.text.strip() for w in words]


def test_words_outside_vad_speech_are_dropped():
    speech = words_of("This is real speech.", 1.0)
    ghost = words_of("Thanks for watching!", 20.0)
    cues = build_cues(transcript_of(speech, ghost), speech=[(0.9, speech[-1].end + 0.1)])
    assert [c.lines for c in cues] == [("This is real speech.",)]


def test_without_vad_every_word_is_kept_and_empty_vad_drops_all():
    words = words_of("Some speech.")
    assert drop_unvoiced(words, None, 0.3) == tuple(words)
    assert drop_unvoiced(words, [], 0.3) == ()


def test_word_touching_a_padded_region_is_kept():
    words = words_of("edge", 5.2)
    assert drop_unvoiced(words, [(1.0, 5.0)], 0.3) == tuple(words)
    assert drop_unvoiced(words, [(1.0, 4.8)], 0.3) == ()


def test_repetition_loops_are_cut_back():
    words = words_of("you " * 12 + "are here")
    out = collapse_loops(words, 3)
    assert texts(out) == ["you", "you", "you", "are", "here"]
    phrase = words_of("thank you so much " * 6)
    assert texts(collapse_loops(phrase, 3)) == "thank you so much".split() * 3


def test_short_genuine_repetition_is_kept():
    words = words_of("no, no, no, I said it was fine")
    assert collapse_loops(words, 3) == tuple(words)


def test_low_probability_cue_over_silence_is_dropped():
    real = words_of("We are recording now.", 0.0)
    ghost = [replace(w, probability=0.05) for w in words_of("Subtitles by the community", 10.0)]
    cues = build_cues(transcript_of(real, ghost))
    assert [c.lines for c in cues] == [("We are recording now.",)]


def test_run_of_identical_cues_keeps_one():
    parts = [words_of("Thank you.", 3.0 * k) for k in range(4)]
    cues = build_cues(transcript_of(*parts))
    assert [c.lines for c in cues] == [("Thank you.",)]


def test_identical_text_of_two_speakers_is_not_a_repeat():
    a = words_of("Yes.", 0.0, speaker="SPEAKER_00")
    b = words_of("Yes.", 2.0, speaker="SPEAKER_01")
    assert len(drop_repeats([a, b])) == 2


def test_segment_whisper_scores_as_silence_is_dropped():
    ok = words_of("Hello there.")
    silent = words_of("Bye.", 5.0)
    t = transcript_of(ok)
    t = Transcript((*t.segments, Segment(5.0, 5.5, " Bye.", tuple(silent), no_speech_prob=0.9, avg_logprob=-1.5)),
                   "en", 8.0)
    assert [c.lines for c in build_cues(t)] == [("Hello there.",)]
