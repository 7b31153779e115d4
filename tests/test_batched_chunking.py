"""VAD-first chunking and temperature fallback rules: pure logic, milliseconds."""

from __future__ import annotations

import pytest

from whisper_subtitler.decoding.chunking import (
    MAX_NEW_TOKENS,
    Chunk,
    decoding_order,
    join_regions,
    plan_chunks,
    split_region,
    token_budget,
)
from whisper_subtitler.decoding.quality import (
    Decoded,
    Thresholds,
    best_attempt,
    is_silence,
    needs_fallback,
    stopped_early,
)


def test_regions_fill_windows_of_at_most_30_s_pauses_kept():
    regions = [(0.0, 10.0), (12.0, 22.0), (40.0, 49.0), (50.0, 55.0), (100.0, 101.0)]
    chunks = plan_chunks(regions)
    assert [(c.start, c.end) for c in chunks] == [(0.0, 22.0), (40.0, 55.0), (100.0, 101.0)]
    # inside a window, a pause under 2 s joins regions (one segment each); the 2 s pause at 10 s does not
    assert [c.regions for c in chunks] == [((0.0, 10.0), (12.0, 22.0)), ((40.0, 55.0),), ((100.0, 101.0),)]
    assert [c.duration for c in chunks] == pytest.approx([22.0, 15.0, 1.0])
    assert [c.speech for c in chunks] == pytest.approx([20.0, 15.0, 1.0])  # a joined pause counts
    assert [c.index for c in chunks] == [0, 1, 2]
    assert [c.index for c in plan_chunks(regions, first_index=7)] == [7, 8, 9]


def test_a_window_closes_when_the_next_region_would_end_past_30_s():
    chunks = plan_chunks([(0.0, 10.0), (11.0, 21.0), (21.5, 30.5), (31.0, 36.0)], merge_gap=0.0)
    assert [(c.start, c.end) for c in chunks] == [(0.0, 21.0), (21.5, 36.0)]
    assert all(c.duration <= 30.0 for c in chunks)
    assert chunks[0].regions == ((0.0, 10.0), (11.0, 21.0))  # merge_gap 0: nothing joined


def test_word_times_find_their_region():
    chunk = Chunk(0, 10.0, 40.0, ((10.0, 12.0), (20.0, 25.0), (39.0, 40.0)))
    assert chunk.region_at(11.0) == 0 and chunk.region_at(24.9) == 1
    assert chunk.region_at(13.0) == 0  # in a pause: the nearest region
    assert chunk.region_at(30.0) == 1 and chunk.region_at(35.0) == 2
    assert chunk.region_at(99.0) == 2


def test_join_regions():
    assert join_regions([(0.0, 1.0), (1.5, 2.0), (5.0, 6.0), (6.0, 6.0)], gap=2.0) == [(0.0, 2.0), (5.0, 6.0)]
    assert join_regions([(0.0, 1.0), (3.0, 4.0)], gap=2.0) == [(0.0, 1.0), (3.0, 4.0)]  # a 2 s pause is not short


def test_a_region_of_exactly_30_s_fills_one_chunk():
    assert [c.regions for c in plan_chunks([(5.0, 35.0), (38.0, 39.0)])] == [((5.0, 35.0),), ((38.0, 39.0),)]


def test_a_long_region_is_split_and_its_last_piece_shares_a_window():
    chunks = plan_chunks([(0.0, 50.0), (52.0, 55.0)])
    assert [(c.start, c.end) for c in chunks] == [(0.0, 25.0), (25.0, 55.0)]
    assert chunks[1].regions == ((25.0, 50.0), (52.0, 55.0))


def test_no_regions_no_chunks_and_empty_regions_are_skipped():
    assert plan_chunks([]) == []
    assert plan_chunks([(3.0, 3.0)]) == []


def test_unsorted_or_overlapping_regions_are_refused():
    with pytest.raises(ValueError):
        plan_chunks([(10.0, 12.0), (5.0, 6.0)])
    with pytest.raises(ValueError):
        plan_chunks([(0.0, 12.0), (11.0, 13.0)])


def test_long_region_is_cut_into_balanced_pieces_of_at_most_30_s():
    pieces = split_region((0.0, 70.0))
    assert len(pieces) == 3
    assert pieces[0][0] == 0.0 and pieces[-1][1] == 70.0
    assert all(b - a <= 30.0 for a, b in pieces)
    assert all(b - a == pytest.approx(70.0 / 3) for a, b in pieces)
    assert all(pieces[i][1] == pieces[i + 1][0] for i in range(len(pieces) - 1))  # no audio lost or doubled


def test_long_region_cut_goes_to_the_quiet_moment_the_callback_finds():
    asked = []

    def quietest(a: float, b: float) -> float:
        asked.append((a, b))
        return b - 1.25

    pieces = split_region((0.0, 50.0), quietest=quietest)
    assert asked == [(20.0, 25.0)]  # ideal cut 25 s, searched 5 s before it
    assert pieces == [(0.0, 23.75), (23.75, 50.0)]


def test_a_quiet_point_outside_the_window_is_clamped():
    pieces = split_region((0.0, 50.0), quietest=lambda a, b: -100.0)
    assert pieces[0] == (0.0, 20.0)
    assert all(b - a <= 30.0 for a, b in pieces)


def test_token_budget_grows_with_duration_and_is_capped():
    assert token_budget(1.0) < token_budget(5.0) < token_budget(10.0)
    assert token_budget(0.0) >= 1
    assert token_budget(30.0) == MAX_NEW_TOKENS
    # fast English speech is about 4 words (5-6 tokens) per second: the budget must leave room for it
    assert token_budget(10.0) >= 10 * 8


def test_decoding_order_is_most_speech_first_then_time_order():
    chunks = [
        Chunk(0, 0.0, 5.0, ((0.0, 5.0),)),
        Chunk(1, 6.0, 30.0, ((6.0, 30.0),)),
        Chunk(2, 31.0, 60.0, ((31.0, 33.0), (56.0, 59.0))),
    ]
    assert [c.index for c in decoding_order(chunks)] == [1, 0, 2]


def decoded(avg=-0.3, ratio=1.5, no_speech=0.01, truncated=False, t=0.0, text="x") -> Decoded:
    return Decoded((1,), text, avg, ratio, no_speech, t, truncated)


def test_fallback_rules_follow_whisper_transcribe():
    assert not needs_fallback(decoded())
    assert needs_fallback(decoded(ratio=2.5))  # repetitive
    assert needs_fallback(decoded(avg=-1.2))  # unsure
    assert needs_fallback(decoded(truncated=True))  # ran out of tokens: looped
    assert not needs_fallback(decoded(avg=-1.2, no_speech=0.9))  # unsure over silence: silence, not a failure
    assert is_silence(decoded(avg=-1.2, no_speech=0.9))
    assert not is_silence(decoded(avg=-0.5, no_speech=0.9))  # confident text wins over the no-speech token
    assert not needs_fallback(decoded(ratio=9.0), Thresholds(compression_ratio=None))


def test_best_attempt_is_the_first_pass_else_the_most_probable_calm_one():
    first_ok = [decoded(avg=-1.5, t=0.0), decoded(avg=-0.5, t=0.2), decoded(avg=-0.1, t=0.4)]
    assert best_attempt(first_ok).temperature == 0.2
    all_fail = [decoded(avg=-1.1, ratio=3.0, t=0.0), decoded(avg=-1.4, t=0.2), decoded(avg=-1.2, t=0.4)]
    assert best_attempt(all_fail).temperature == 0.4  # the repetitive one is avoided though most probable
    all_loop = [decoded(avg=-2.0, ratio=3.0), decoded(avg=-1.5, ratio=4.0, t=0.2)]
    assert best_attempt(all_loop).temperature == 0.2
    with pytest.raises(ValueError):
        best_attempt([])


def test_a_decoding_with_far_too_few_tokens_for_its_speech_stopped_early():
    assert stopped_early(_with(4), speech_s=6.95)  # "Ciao, monde !" over three clips
    assert not stopped_early(_with(18), speech_s=6.64)  # 2.7 tokens a second: real speech
    assert not stopped_early(_with(3), speech_s=0.97)  # "Hello world." over its own second
    assert not stopped_early(_with(0), speech_s=10.0)  # no text: silence or nothing said, not an early end
    assert not stopped_early(_with(4, truncated=True), speech_s=10.0)  # stopped at its budget: a loop
    assert not stopped_early(_with(4, no_speech_prob=0.9, avg_logprob=-1.5), speech_s=10.0)  # Whisper's silence


def _with(n: int, **kw) -> Decoded:
    fields = {"text": "x", "avg_logprob": -0.3, "compression_ratio": 1.0, "no_speech_prob": 0.0, "temperature": 0.0}
    return Decoded(tokens=tuple(range(n)), **{**fields, **kw})


def test_speech_units_without_words_are_decoded_again_as_runs():
    # A window whose decoder passed over a clip in its middle (no word's middle lies in two units of it) and wrote
    # its end token before the last unit: the two empty runs are decoded again, in one batch, and their segments
    # added in time order; a run under MIN_TAIL_S of speech is left alone.
    from whisper_subtitler.decoding.chunking import Chunk
    from whisper_subtitler.transcription.assembly import MIN_TAIL_S
    from whisper_subtitler.transcription.chunk_transcriber import ChunkTranscriber
    from whisper_subtitler.types import Segment, Word

    def segment(start: float, end: float, text: str) -> Segment:
        return Segment(start=start, end=end, text=" " + text, words=(Word(" " + text, start, end),), language="en")

    transcriber = object.__new__(ChunkTranscriber)
    transcriber.units = [(0.0, 2.0), (2.3, 3.0), (3.2, 4.5), (5.0, 6.0), (6.5, 6.9), (7.2, 8.5)]
    asked: list[list[tuple[float, float]]] = []

    def decode_group(group, source, language):
        asked.append([(c.start, c.end) for c in group])
        return [(segment(c.start + 0.1, c.end - 0.1, f"found{k}"),) for k, c in enumerate(group)]

    transcriber._decode_group = decode_group
    chunk = Chunk(0, 0.0, 8.5, ((0.0, 8.5),))
    words = (segment(0.2, 1.8, "one"), segment(5.1, 5.9, "two"), segment(6.5, 6.9, "three"))
    out = transcriber._with_gaps(chunk, None, "en", words)
    assert MIN_TAIL_S <= 1.3  # each empty run holds at least 1.3 s of speech
    assert asked == [[(2.3, 4.5), (7.2, 8.5)]]  # one call; (6.5, 6.9) has a word, and no run under MIN_TAIL_S
    assert [s.text for s in out] == [" one", " found0", " two", " three", " found1"]
    # One segment for the whole region (its words pass over the stretch): the words found go among its words.
    (whole,) = transcriber._with_gaps(
        chunk, None, "en", (Segment(0.2, 8.5, " x", words=sum((w.words for w in words), ())),)
    )
    assert whole.text == " one found0 two three found1"
    assert [w.start for w in whole.words] == sorted(w.start for w in whole.words)
    assert whole.end == 8.5
    # A window none of whose units holds a word, and one without any word, are left alone.
    assert transcriber._with_gaps(chunk, None, "en", (segment(8.6, 8.7, "x"),)) == (segment(8.6, 8.7, "x"),)
    assert transcriber._with_gaps(chunk, None, "en", ()) == ()
    assert len(asked) == 2
    # A short empty unit alone is left; a word whose middle lies in the pause between two empty units cuts them into
    # two runs (decoding them as one would decode that word again); found text without words is added as it is.
    transcriber.units = [(0.0, 2.0), (2.3, 2.6), (2.8, 3.0), (3.2, 4.5), (5.0, 6.2), (6.5, 8.0)]
    asked.clear()

    def text_only(group, source, language):
        asked.append([(c.start, c.end) for c in group])
        return [(Segment(start=c.start, end=c.end, text=" text"),) for c in group]

    transcriber._decode_group = text_only
    words = (segment(0.2, 1.8, "one"), segment(2.8, 3.0, "x"), segment(4.55, 4.95, "two"))
    out = transcriber._with_gaps(Chunk(0, 0.0, 8.0, ((0.0, 8.0),)), None, "en", words)
    assert asked == [[(3.2, 4.5), (5.0, 8.0)]]  # (2.3, 2.6) is too short; "two" lies between 4.5 and 5.0
    texts = [(s.start, s.text) for s in out]
    assert texts == [(0.2, " one"), (2.8, " x"), (3.2, " text"), (4.55, " two"), (5.0, " text")]


def test_found_text_without_words_is_not_merged_into_a_segment():
    from whisper_subtitler.transcription.assembly import merged as _merged
    from whisper_subtitler.types import Segment, Word

    region = Segment(0.0, 8.0, " a b", words=(Word(" a", 0.5, 1.0), Word(" b", 6.0, 6.5)))
    text_only = Segment(3.0, 4.0, " text")
    assert _merged((region,), (text_only,)) == (region, text_only)
    with_words = Segment(3.0, 4.0, " c", words=(Word(" c", 3.1, 3.5),))
    (merged,) = _merged((region,), (with_words,))
    assert merged.text == " a c b" and (merged.start, merged.end) == (0.0, 8.0)
