"""Speaker assignment and renaming: pure logic on hand-made words and turns (milliseconds to run)."""

from __future__ import annotations

import random

import pytest

from whisper_subtitler.errors import ExitCode, UsageError
from whisper_subtitler.speakers import TurnIndex, assign_speakers, parse_speaker_names, rename_speakers
from whisper_subtitler.types import Segment, SpeakerTurn, Transcript, Word


def transcript(*segments: Segment) -> Transcript:
    return Transcript(segments=segments, language="en", duration=60.0, source="talk.wav")


def segment(*words: tuple[str, float, float], **kw) -> Segment:
    ws = tuple(Word(t, s, e) for t, s, e in words)
    return Segment(ws[0].start if ws else kw.pop("start"), ws[-1].end if ws else kw.pop("end"),
                   "".join(w.text for w in ws) or kw.pop("text", ""), ws, **kw)


A, B, C = "SPEAKER_00", "SPEAKER_01", "SPEAKER_02"


def speakers_of(t: Transcript) -> list[str | None]:
    return [w.speaker for w in t.words]


def test_word_inside_a_turn_gets_its_speaker():
    t = assign_speakers(transcript(segment((" Hello", 1.0, 1.4), (" there", 2.1, 2.5))),
                        [SpeakerTurn(0.5, 2.0, A), SpeakerTurn(2.0, 3.0, B)])
    assert speakers_of(t) == [A, B]


def test_largest_overlap_wins_and_turns_of_one_speaker_add_up():
    # [0, 1]: A overlaps 0.3 + 0.3 = 0.6 s in two turns, B 0.5 s in one (overlapping speech).
    turns = [SpeakerTurn(0.0, 0.3, A), SpeakerTurn(0.2, 0.7, B), SpeakerTurn(0.7, 1.0, A)]
    assert TurnIndex(turns).speaker_for(0.0, 1.0) == A
    # Only the word's interval counts: [0.25, 0.65] lies in B's turn almost entirely.
    assert TurnIndex(turns).speaker_for(0.25, 0.65) == B


def test_word_straddling_a_speaker_change_goes_to_the_longer_side():
    turns = [SpeakerTurn(0.0, 5.0, A), SpeakerTurn(5.0, 9.0, B)]
    t = assign_speakers(transcript(segment((" yes", 4.9, 5.3), (" no", 4.6, 5.1))), turns)
    assert speakers_of(t) == [B, A]


def test_word_outside_every_turn_gets_the_nearest_turn():
    turns = [SpeakerTurn(1.0, 2.0, A), SpeakerTurn(5.0, 6.0, B)]
    index = TurnIndex(turns)
    assert index.speaker_for(2.5, 2.9) == A  # 0.5 s after A, 2.1 s before B
    assert index.speaker_for(4.0, 4.6) == B  # 2.0 s after A, 0.4 s before B
    assert index.speaker_for(3.0, 4.0) == A  # tie: the earlier turn
    assert index.speaker_for(0.0, 0.5) == A  # before every turn
    assert index.speaker_for(7.0, 8.0) == B  # after every turn
    assert index.speaker_for(2.0, 2.4) == A  # touching the end of a turn, no overlap


def test_nearest_looks_at_turn_ends_not_starts():
    # A long turn that started long ago ends right before the word; B's short turn ended earlier.
    turns = [SpeakerTurn(0.0, 9.0, A), SpeakerTurn(5.0, 6.0, B)]
    assert TurnIndex(turns).speaker_for(9.5, 9.8) == A


def test_zero_length_word_is_assigned():
    assert TurnIndex([SpeakerTurn(1.0, 2.0, B)]).speaker_for(1.5, 1.5) == B


def test_segments_are_split_where_the_speaker_changes():
    seg = Segment(0.8, 4.2, " Hi Bob. Hi Ann, how are you?",
                  tuple(Word(t, s, e) for t, s, e in [(" Hi", 1.0, 1.2), (" Bob.", 1.3, 1.6), (" Hi", 2.0, 2.2),
                                                       (" Ann,", 2.3, 2.6), (" how", 3.0, 3.2), (" are", 3.3, 3.5),
                                                       (" you?", 3.6, 4.0)]),
                  avg_logprob=-0.3, compression_ratio=1.2, no_speech_prob=0.01)
    turns = [SpeakerTurn(0.9, 1.8, A), SpeakerTurn(1.9, 2.8, B), SpeakerTurn(2.9, 4.1, A)]
    out = assign_speakers(transcript(seg), turns)
    assert [(s.speaker, s.text, s.start, s.end) for s in out.segments] == [
        (A, " Hi Bob.", 0.8, 1.6), (B, " Hi Ann,", 2.0, 2.6), (A, " how are you?", 3.0, 4.2)]
    assert all(s.avg_logprob == -0.3 and s.compression_ratio == 1.2 for s in out.segments)
    assert out.text == transcript(seg).text
    assert all(w.speaker == s.speaker for s in out.segments for w in s.words)


def test_one_speaker_segment_keeps_its_text_and_times():
    seg = Segment(0.5, 3.0, " Hello, world.", (Word(" Hello,", 1.0, 1.5), Word(" world.", 1.6, 2.0)))
    out = assign_speakers(transcript(seg), [SpeakerTurn(0.0, 5.0, B)])
    assert out.segments == (Segment(0.5, 3.0, " Hello, world.", (Word(" Hello,", 1.0, 1.5, speaker=B),
                                                                  Word(" world.", 1.6, 2.0, speaker=B)), speaker=B),)


def test_input_is_not_modified_and_turns_are_stored_sorted():
    original = transcript(segment((" a", 0.0, 0.5)))
    turns = [SpeakerTurn(3.0, 4.0, B), SpeakerTurn(0.0, 1.0, A), SpeakerTurn(2.0, 2.0, C)]
    out = assign_speakers(original, turns)
    assert original.words[0].speaker is None and original.turns == ()
    assert out.turns == (SpeakerTurn(0.0, 1.0, A), SpeakerTurn(3.0, 4.0, B))  # the empty turn is dropped


def test_segment_without_words_gets_the_speaker_of_its_interval():
    out = assign_speakers(transcript(Segment(2.0, 3.0, " [music]")), [SpeakerTurn(0, 2.2, A), SpeakerTurn(2.2, 4, B)])
    assert out.segments[0].speaker == B


def test_without_turns_speakers_stay_unset():
    out = assign_speakers(transcript(segment((" a", 0.0, 0.5))), [])
    assert speakers_of(out) == [None] and out.segments[0].speaker is None and out.turns == ()


def brute_force(turns, start, end):
    """The rule written out directly, O(turns) per word: the reference for the indexed version."""
    totals: dict[str, float] = {}
    for t in sorted(turns, key=lambda t: (t.start, t.end)):
        overlap = min(end, t.end) - max(start, t.start)
        if overlap > 0:
            totals[t.speaker] = totals.get(t.speaker, 0.0) + overlap
    if totals:
        return max(totals, key=totals.__getitem__)
    gap = [(max(t.start - end, start - t.end), t.end > start, t) for t in turns]
    best = min(g for g, _, _ in gap)
    before = [t for g, after, t in gap if g == best and not after]
    return (max(before, key=lambda t: t.end) if before else min((t for g, _, t in gap if g == best),
                                                                key=lambda t: t.start)).speaker


def test_indexed_lookup_matches_brute_force_on_random_turns():
    rng = random.Random(3)
    for _ in range(200):
        turns = []
        for _ in range(rng.randint(1, 12)):
            start = round(rng.uniform(0, 60), 2)
            turns.append(SpeakerTurn(start, round(start + rng.uniform(0.05, 12), 2), rng.choice([A, B, C])))
        index = TurnIndex(turns)
        for _ in range(30):
            start = round(rng.uniform(-2, 75), 2)
            end = round(start + rng.uniform(0.01, 1.5), 2)
            assert index.speaker_for(start, end) == brute_force(turns, start, end), (turns, start, end)


def test_rename_follows_the_order_of_first_appearance():
    t = assign_speakers(transcript(segment((" one", 0.0, 0.5), (" two", 1.0, 1.5), (" three", 2.0, 2.5))),
                        [SpeakerTurn(0.0, 0.8, B), SpeakerTurn(0.9, 1.8, A), SpeakerTurn(1.9, 3.0, C)])
    out = rename_speakers(t, ["Alice", "Bob"])
    assert speakers_of(out) == ["Alice", "Bob", C]  # B spoke first; a third label without a name is kept
    assert [s.speaker for s in out.segments] == ["Alice", "Bob", C]
    assert [x.speaker for x in out.turns] == ["Alice", "Bob", C]
    assert out.speakers == ("Alice", "Bob", C)
    assert speakers_of(t) == [B, A, C]  # the input keeps its labels


def test_rename_reaches_speakers_that_only_have_turns():
    t = assign_speakers(transcript(segment((" hi", 0.0, 0.5))), [SpeakerTurn(0, 1, A), SpeakerTurn(5, 6, B)])
    assert [x.speaker for x in rename_speakers(t, ["Ann", "Ben"]).turns] == ["Ann", "Ben"]


def test_rename_refuses_a_name_that_is_another_speakers_label():
    t = assign_speakers(transcript(segment((" a", 0.0, 0.5), (" b", 1.0, 1.5))),
                        [SpeakerTurn(0, 0.8, A), SpeakerTurn(0.9, 2, B)])
    with pytest.raises(UsageError):
        rename_speakers(t, [B])


@pytest.mark.parametrize("spec, names", [("Alice,Bob", ("Alice", "Bob")), (" Alice , Dr. Bob Smith ", ("Alice", "Dr. Bob Smith"))])
def test_parse_speaker_names(spec, names):
    assert parse_speaker_names(spec) == names


@pytest.mark.parametrize("spec", ["", "Alice,,Bob", "Alice,Alice", " , "])
def test_parse_speaker_names_rejects_empty_and_duplicate_names(spec):
    with pytest.raises(UsageError) as e:
        parse_speaker_names(spec)
    assert e.value.exit_code == ExitCode.USAGE
