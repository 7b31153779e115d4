"""Hallucination guards: no cue over silence, no loops, no run of repeated cues."""

from dataclasses import replace

from tests.cue_helpers import transcript_of, words_of
from whisper_subtitler.cues import build_cues
from whisper_subtitler.cues.guards import (
    clean_transcript,
    collapse_loops,
    drop_repeated_sentences,
    drop_repeats,
    drop_squashed,
    drop_unvoiced,
)
from whisper_subtitler.types import Segment, Transcript, Word


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
    t = Transcript(
        (*t.segments, Segment(5.0, 5.5, " Bye.", tuple(silent), no_speech_prob=0.9, avg_logprob=-1.5)), "en", 8.0
    )
    assert [c.lines for c in build_cues(t)] == [("Hello there.",)]


def squashed(text: str, start: float, seconds: float) -> list[Word]:
    """The words of ``text`` packed into ``seconds`` from ``start``, as a failed alignment times them."""
    pieces = [" " + w for w in text.split()]
    step = seconds / len(pieces)
    return [Word(p, round(start + k * step, 3), round(start + (k + 1) * step, 3), 0.9) for k, p in enumerate(pieces)]


def test_sentence_repeated_in_42_ms_is_dropped_from_transcript_and_cues():
    # Seen on real speech: the repeat of the sentence before it, packed into 42 ms by the alignment.
    said = words_of("I'm in New Jersey now though.", 20.14)
    repeat = squashed("I'm in New Jersey now though.", said[-1].end + 0.02, 0.042)
    after = words_of("Well, there isn't that much difference.", said[-1].end + 0.6)
    t = transcript_of(said, repeat, after)
    cleaned = clean_transcript(t)
    assert texts(cleaned.words) == texts(said) + texts(after)
    assert [s.text for s in cleaned.segments] == [t.segments[0].text, t.segments[2].text]
    assert " ".join(texts(said)) == "I'm in New Jersey now though."
    cues = build_cues(t)
    assert [w for c in cues for w in c.words] == said + after


def test_sentence_repeated_across_segments_with_normal_timing_is_dropped():
    first = words_of("I'm in New Jersey now though.", 1.0)
    again = words_of("I'm in New Jersey now though.", first[-1].end + 0.3)
    assert texts(drop_repeated_sentences(first + again, [0] * len(first) + [1] * len(again))) == texts(first)


def test_repeat_inside_one_segment_and_short_repeats_are_kept():
    # One decoding window: the speaker said it twice; "Hello. Hello." is two people answering the phone.
    twice = words_of("We have to go now. We have to go now.", 0.0)
    assert drop_repeated_sentences(twice, [0] * len(twice)) == tuple(twice)
    hello = words_of("Hello.", 0.0) + words_of("Hello.", 1.0)
    assert drop_repeated_sentences(hello, [0, 1]) == tuple(hello)


def test_squashed_words_are_never_shown():
    before = words_of("This is real speech.", 0.0)
    packed = squashed("and then some words", before[-1].end + 0.1, 0.15)  # four words in 0.15 s
    after = words_of("More real speech.", packed[-1].end + 0.5)
    out = drop_squashed(before + packed + after, max_cps=17.0)
    assert texts(out) == texts(before) + texts(after)
    cues = build_cues(transcript_of(before, packed, after))
    assert all(w not in packed for c in cues for w in c.words)


def test_reading_speed_far_above_the_maximum_is_squashed_fast_speech_is_not():
    fast = squashed("absolutely wonderful performances", 0.0, 0.5)  # 32 characters in 0.5 s: 64 cps > 3 x 17
    assert drop_squashed(fast, max_cps=17.0) == ()
    brisk = squashed("absolutely wonderful performances", 0.0, 1.4)  # 23 cps: fast, but people talk so
    assert drop_squashed(brisk, max_cps=17.0) == tuple(brisk)
    two = squashed("I heard", 0.0, 0.1)  # two words, one of them "I": not "several"
    assert drop_squashed(two, max_cps=17.0) == tuple(two)


def test_the_same_words_in_two_languages_are_no_repeat():
    # Counting "1, 2, 3, 4, 5" in English, then in Spanish: Whisper writes digits for both.
    from dataclasses import replace

    english = [replace(w, language="en") for w in words_of("1, 2, 3, 4, 5.", 0.0)]
    spanish = [replace(w, language="es") for w in words_of("1, 2, 3, 4, 5.", english[-1].end + 0.5)]
    segment_of = [0] * len(english) + [1] * len(spanish)
    assert drop_repeated_sentences(english + spanish, segment_of) == tuple(english + spanish)
    same = [replace(w, language="en") for w in spanish]
    assert texts(drop_repeated_sentences(english + same, segment_of)) == texts(english)


def test_a_sentence_begun_on_speech_is_kept_to_its_end_a_sentence_outside_is_not():
    # Under music 5 dB under the speech, the VAD heard "I'm in New" and lost "Jersey now though.".
    said = words_of("I'm in New Jersey now though.", 20.0)
    ghost = words_of("Thanks for watching!", said[-1].end + 0.1)
    speech = [(19.9, said[2].end)]
    assert texts(drop_unvoiced(said + ghost, speech, 0.0)) == texts(said)
    late = words_of("Jersey now though.", said[-1].end + 1.5)  # after a pause: not the same utterance
    assert texts(drop_unvoiced(said[:3] + late, speech, 0.0)) == texts(said[:3])
