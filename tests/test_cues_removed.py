"""Every word of a transcript reaches a cue or is recorded as removed on purpose, with its reason, span and text."""

from dataclasses import replace

import pytest

from tests.cue_helpers import transcript_of, words_of
from whisper_subtitler.cues import CueOptions, build_cues
from whisper_subtitler.cues.guards import REASONS, clean_transcript, drop_repeats, unaccounted, with_removals
from whisper_subtitler.types import Removal, Segment, Transcript
from whisper_subtitler.writers.json import transcript_from_dict, transcript_to_dict


def in_language(words, language):
    return [replace(w, language=language) for w in words]


def built(transcript, **kwargs):
    removed: list[Removal] = []
    cues = build_cues(transcript, removed=removed, **kwargs)
    return cues, removed


def shown(cues):
    return [line for c in cues for line in c.lines]


def test_a_count_in_two_languages_reaches_two_cues():
    english = in_language(words_of("1, 2, 3, 4, 5, 6, 7, 8, 9, 10.", 0.5), "en")
    spanish = in_language(words_of("1, 2, 3, 4, 5, 6, 7, 8, 9, 10.", english[-1].end + 1.5), "es")
    cues, removed = built(transcript_of(english, spanish))
    assert [c.language for c in cues] == ["en", "es"] and removed == []


def test_the_same_words_said_again_after_a_pause_are_kept_a_loop_is_not():
    first = words_of("We have to go now.", 0.0)
    again = words_of("We have to go now.", first[-1].end + 1.2)
    assert len(drop_repeats([first, again], pause=1.0)) == 2
    at_once = words_of("We have to go now.", first[-1].end + 0.05)
    assert drop_repeats([first, at_once], pause=1.0) == [first]
    loop = [words_of("We have to go now.", 3.0 * k) for k in range(3)]
    assert drop_repeats(loop, pause=1.0) == [loop[0]]


def test_each_guard_records_what_it_removed():
    real = words_of("We are recording now.", 0.0)
    ghost = [replace(w, probability=0.05) for w in words_of("Subtitles by the community", 10.0)]
    over_silence = words_of("Thanks for watching!", 20.0)
    loop = words_of("you " * 8, 30.0)
    speech = [(0.0, 2.0), (9.9, 12.5), (29.9, 33.0)]
    t = transcript_of(real, ghost, over_silence, loop)
    cues, removed = built(t, speech=speech)
    reasons = {r.reason: r for r in removed}
    assert set(reasons) == {"improbable", "unvoiced", "loop"} <= set(REASONS)
    assert reasons["improbable"].text == "Subtitles by the community"
    assert (reasons["unvoiced"].start, reasons["unvoiced"].end) == (over_silence[0].start, over_silence[-1].end)
    assert reasons["loop"].text == "you you you you you" and all(r.stage == "cues" for r in removed)
    assert unaccounted(t.words, shown(cues), removed) == []
    assert unaccounted(t.words, shown(cues), []) != []  # the removals are what accounts for them


def test_whispers_silent_segment_is_recorded():
    ok = words_of("Hello there.")
    t = transcript_of(ok)
    silent = Segment(5.0, 5.5, " Bye.", tuple(words_of("Bye.", 5.0)), no_speech_prob=0.9, avg_logprob=-1.5)
    t = Transcript((*t.segments, silent), "en", 8.0)
    cues, removed = built(t)
    assert [(r.reason, r.text) for r in removed] == [("silence", "Bye.")]
    assert unaccounted(t.words, shown(cues), removed) == []


def test_the_transcript_stage_keeps_its_own_record():
    said = words_of("I'm in New Jersey now though.", 1.0)
    again = words_of("I'm in New Jersey now though.", said[-1].end + 0.3)
    cleaned = clean_transcript(transcript_of(said, again))
    assert [(r.reason, r.stage, r.text) for r in cleaned.removed] == [
        ("repeated_sentence", "transcript", "I'm in New Jersey now though.")
    ]
    cues, removed = built(cleaned)
    assert removed == [] and with_removals(cleaned, removed).removed == cleaned.removed


def test_a_word_in_no_cue_is_found_in_any_script():
    words = words_of("one two three four", 0.0)
    assert unaccounted(words, ["one two", "three four"]) == []
    assert [w.text for w in unaccounted(words, ["one", "four"])] == [" two", " three"]
    kana = words_of("こんにちは世界", 0.0, spaceless=True)
    assert unaccounted(kana, ["こんにちは", "世界"]) == []
    assert [w.text for w in unaccounted(kana, ["こんにちは"])] == ["世", "界"]


@pytest.mark.parametrize("stage", ["cues", "transcript"])
def test_removals_travel_through_the_json_transcript(stage):
    t = replace(transcript_of(words_of("Hello.")), removed=(Removal("loop", 1.0, 2.5, "you you", stage),))
    assert transcript_from_dict(transcript_to_dict(t)).removed == t.removed


def test_laying_out_a_read_transcript_again_replaces_the_cue_stage_record():
    t = replace(
        transcript_of(words_of("Hello there.")),
        removed=(Removal("loop", 9.0, 9.5, "old", "cues"), Removal("squashed", 3.0, 3.1, "a b c", "transcript")),
    )
    cues, removed = built(t, options=CueOptions())
    assert with_removals(t, removed).removed == (Removal("squashed", 3.0, 3.1, "a b c", "transcript"),)


def test_the_plain_text_leaves_out_what_the_cues_leave_out():
    from whisper_subtitler.writers import WriterOptions
    from whisper_subtitler.writers.txt import TxtWriter

    real = words_of("We are recording now.", 0.0)
    over_silence = words_of("Thanks for watching!", 20.0)
    t = transcript_of(real + over_silence)  # one segment holding both
    cues, removed = built(t, speech=[(0.0, 2.0)])
    text = TxtWriter().render(with_removals(t, removed), cues, WriterOptions())
    assert text == "We are recording now.\n"
