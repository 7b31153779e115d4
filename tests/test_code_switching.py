"""The language smoothing over speech regions and the planning of one-language chunks (pure logic)."""

from __future__ import annotations

import pytest

from whisper_subtitler.decoding.chunking import Chunk
from whisper_subtitler.decoding.code_switching import (
    FILE_SURE_P,
    SURE_P,
    FileLanguage,
    RegionLanguage,
    Screens,
    file_language,
    heard_at_length,
    held_to_file,
    in_its_script,
    in_other_languages,
    main_language,
    regions_in,
    restrict,
    screened,
    screened_in,
    screened_windows,
    smooth_languages,
    split_by_language,
    to_check,
)


def region(start: float, end: float, **p: float) -> RegionLanguage:
    rest = max(0.0, 1.0 - sum(p.values()))
    return RegionLanguage(start, end, {**p, "xx": rest} if rest > 0 else p)


def test_a_sure_region_keeps_its_language_between_others():
    regions = [region(0, 5, en=0.95), region(6, 9, es=0.9, en=0.05), region(10, 15, en=0.95)]
    assert smooth_languages(regions) == ["en", "es", "en"]


def test_a_short_unsure_region_borrows_its_neighbours_language():
    # A one-word "okay" inside Spanish, detected as English with little certainty: it stays Spanish.
    regions = [region(0, 5, es=0.95), region(5.5, 5.9, en=0.6, es=0.3), region(6.5, 12, es=0.95)]
    assert smooth_languages(regions) == ["es", "es", "es"]


def test_a_short_sure_region_between_different_languages_keeps_its_own():
    # "Hola mundo" between French and Italian clips: no neighbour to borrow from that the region supports.
    regions = [region(0, 3, fr=0.95), region(4, 5, es=0.8, fr=0.05), region(6, 9, it=0.95)]
    assert smooth_languages(regions) == ["fr", "es", "it"]


def test_a_long_unsure_stretch_is_decided_by_its_own_detection():
    regions = [region(0, 10, en=0.5, la=0.4), region(11, 20, en=0.55, la=0.35)]
    assert smooth_languages(regions) == ["en", "en"]


def test_no_switch_cost_keeps_each_regions_best():
    regions = [region(0, 1, en=0.6, es=0.4), region(1.5, 2, es=0.6, en=0.4), region(3, 4, en=0.6, es=0.4)]
    assert smooth_languages(regions, switch_cost=0.0) == ["en", "es", "en"]
    assert smooth_languages(regions, switch_cost=5.0) == ["en", "en", "en"]


def test_smoothing_refuses_bad_constants_and_takes_no_regions():
    assert smooth_languages([]) == []
    with pytest.raises(ValueError):
        smooth_languages([region(0, 1, en=1.0)], full_weight_s=0)
    with pytest.raises(ValueError):
        smooth_languages([region(0, 1, en=1.0)], switch_cost=-1)


def test_restrict_keeps_the_allowed_languages_and_scales_them():
    assert restrict({"en": 0.2, "fr": 0.6, "es": 0.2}, ["en", "es"]) == {"en": 0.5, "es": 0.5}
    assert restrict({"fr": 1.0}, ["en", "es"]) == {"en": 0.5, "es": 0.5}
    assert restrict({"en": 0.25, "fr": 0.75}, None) == {"en": 0.25, "fr": 0.75}
    with pytest.raises(ValueError):
        restrict({}, None)


def test_the_screen_sends_only_regions_heard_in_another_language_to_be_examined_alone():
    sure = {"pt": 0.97, "es": 0.03}
    agree, italian = {"pt": 0.6, "la": 0.4}, {"it": 0.67, "pt": 0.08, "la": 0.25}
    assert screened(sure, [agree, italian]) == [sure, None]  # a sure window speaks for its agreeing regions only
    unsure, weak = {"pt": 0.7, "es": 0.3}, {"pt": 0.3, "la": 0.25, "es": 0.25, "it": 0.2}
    assert screened(unsure, [agree, italian, weak]) == [agree, None, None]  # an unsure one lends them nothing
    assert screened({"en": 0.4, "es": 0.6}, []) == [{"en": 0.4, "es": 0.6}]  # one region: the window's is its own


def test_a_region_only_its_slice_hears_in_another_language_is_judged_with_silence_after_it():
    # Detections of real English telephone speech (a 0.65-s answer, bench/conversations.py's speech re-arranged)
    sure = {"en": 0.998, "cy": 0.001, "es": 0.001}
    korean = {"ko": 0.52, "en": 0.17, "zh": 0.11}  # sliced out of its window, no silence after it
    quiet = {"en": 0.71, "cy": 0.15, "ko": 0.04}  # the same frames followed by encoded silence
    assert screened(sure, [korean], [quiet]) == [sure]
    assert screened(sure, [korean]) == [None]  # without the quiet slice: examined alone
    assert screened(sure, [korean], [{"ko": 0.6, "en": 0.4}]) == [None]  # the quiet slice hears Korean too
    # The window itself gives the slice's language some weight (an Italian clip in a Portuguese window): alone,
    # whatever the quiet slice says.
    portuguese = {"pt": 0.93, "it": 0.07}
    assert screened(portuguese, [{"it": 0.67, "pt": 0.08}], [{"pt": 0.8, "it": 0.2}]) == [None]
    # In a window less sure than WINDOW_SURE_P the quiet slice must itself be SLICE_SURE_P sure.
    unsure = {"en": 0.7, "es": 0.3}
    assert screened(unsure, [korean], [{"en": 0.6, "cy": 0.4}]) == [{"en": 0.6, "cy": 0.4}]
    assert screened(unsure, [korean], [{"en": 0.4, "cy": 0.3, "ko": 0.3}]) == [None]
    assert screened(sure, [{"en": 0.6, "ko": 0.4}], [{"ko": 0.9, "en": 0.1}]) == [sure]  # agreeing: quiet unused


def test_quiet_slices_count_only_where_every_window_names_one_language():
    english = {"en": 0.998, "cy": 0.002}
    korean, quiet = {"ko": 0.52, "en": 0.17}, {"en": 0.71, "cy": 0.15}
    one_region = Screens({"en": 0.99, "es": 0.01}, [], [])
    same = [Screens(english, [korean, {"en": 0.8}], [quiet, {"en": 0.9}]), one_region]
    assert screened_windows(same) == [[english, english], [{"en": 0.99, "es": 0.01}]]
    # A window naming French: the file speaks two languages, so a dissenting slice sends its region alone, as a
    # 1-s "hola mundo" inside a French window must be (its quiet slice took French on held-out files).
    french = Screens({"fr": 0.95, "es": 0.04, "en": 0.01}, [], [])
    assert screened_windows([*same, french]) == [[None, english], [{"en": 0.99, "es": 0.01}], [french.window]]
    assert screened_windows([]) == []


def test_only_overruled_fairly_sure_regions_are_checked_and_a_short_one_only_in_a_language_heard_elsewhere():
    regions = [
        region(0, 5, en=0.95),
        region(5.5, 6.2, ko=0.52, en=0.3),  # a 0.7-s "Hello?" heard as Korean, in a file with no other Korean
        region(7, 12, en=0.95),
        region(13, 13.8, es=0.6, en=0.3),  # 0.8 s heard as Spanish: Spanish is spoken at length below
        region(14, 15.5, es=0.55, fr=0.45),  # 1.5 s: checked whatever else the file holds
        region(16, 16.5, es=0.4, en=0.35),  # unsure of its own language: takes the smoothed one
        region(17, 22, es=0.95),
    ]
    languages = ["en", "en", "en", "en", "en", "en", "es"]
    assert to_check(regions, languages, 0.5) == [3, 4]
    assert to_check(regions, [r.best for r in regions], 0.5) == []  # nothing overruled, nothing checked


def test_regions_in_another_language_than_the_main_one_are_the_ones_whose_transcript_must_hold_up():
    # English for 12 s with a one-word "okay" heard as Thai, then a Spanish clip: main English, two to decode.
    regions = [region(0, 5, en=1.0), region(5.5, 6.3, th=0.9), region(7, 14, en=1.0), region(15, 18, es=1.0)]
    assert in_other_languages(regions, ["en", "th", "en", "es"]) == ("en", [1, 3])
    # The main language is the one of the most seconds, not of the most regions.
    three = [region(0, 1, en=1.0), region(2, 3, en=1.0), region(4, 8, es=1.0), region(9, 10, en=1.0)]
    assert in_other_languages(three, ["en", "en", "es", "en"]) == ("es", [0, 1, 3])
    assert in_other_languages(regions, ["en"] * 4) == ("en", [])
    assert in_other_languages([], []) == (None, [])
    # Thai is heard only in the 0.8-s "okay": not a language the file speaks for a second anywhere.
    assert heard_at_length(regions, ["en", "th", "en", "es"]) == {"en", "es"}


def test_a_transcript_in_a_language_of_another_script_must_be_written_in_it():
    assert not in_its_script("我 Didn't know you were there", "zh")
    assert in_its_script("我很累了,我一直在玩", "zh")
    assert in_its_script("こんにちは世界。", "ja")
    assert in_its_script("Привет, мир", "ru")
    assert not in_its_script("Hello world", "ru")
    assert in_its_script("Hola mundo", "es")  # Latin-script languages are not judged
    assert in_its_script("1, 2, 3.", "zh")  # no letters: nothing to judge


def test_regions_in_cuts_the_speech_to_the_chunk():
    chunk = Chunk(0, 10.0, 30.0, ((10.0, 30.0),))
    speech = [(2.0, 4.0), (8.0, 12.0), (13.0, 15.0), (29.0, 35.0)]
    assert regions_in(chunk, speech) == [(10.0, 12.0), (13.0, 15.0), (29.0, 30.0)]
    assert regions_in(chunk, []) == [(10.0, 30.0)]


def test_a_chunk_of_one_language_stays_whole():
    chunk = Chunk(3, 0.0, 10.0, ((0.0, 10.0),))
    assert split_by_language(chunk, [(0.0, 4.0), (5.0, 10.0)], ["en", "en"]) == [(chunk, "en")]


def test_a_chunk_is_cut_where_the_language_changes():
    chunk = Chunk(3, 0.0, 20.0, ((0.0, 20.0),))
    regions = [(0.0, 4.0), (5.0, 8.0), (9.0, 12.0), (13.0, 20.0)]
    parts = split_by_language(chunk, regions, ["en", "en", "es", "en"])
    assert [(c.start, c.end, c.regions, lang) for c, lang in parts] == [
        (0.0, 8.0, ((0.0, 8.0),), "en"),  # joined across the 1-s pause, as plan_chunks joins regions
        (9.0, 12.0, ((9.0, 12.0),), "es"),
        (13.0, 20.0, ((13.0, 20.0),), "en"),
    ]
    assert {c.index for c, _ in parts} == {3}
    with pytest.raises(ValueError):
        split_by_language(chunk, regions, ["en"])


def test_main_language_is_the_one_spoken_longest():
    assert main_language([("en", 10.0), ("es", 25.0), ("en", 12.0)]) == "es"
    assert main_language([("en", 5.0), ("es", 5.0)]) == "en"
    assert main_language([(None, 5.0)]) is None
    assert main_language([]) is None


def test_the_check_prefers_a_transcript_that_holds_even_when_both_loop():
    from whisper_subtitler.decoding.language_plan import Heard

    # A 1.2-s English answer heard as Russian: both transcripts loop, the Russian one in Latin letters at a
    # slightly higher log-probability; the one that holds its language's test wins.
    english = Heard(avg_logprob=-0.25, said=True, looped=True, in_script=True)
    russian = Heard(avg_logprob=-0.24, said=True, looped=True, in_script=False)
    assert max([russian, english], key=lambda h: h.rank) is english
    # Both hold and loop ("hola mundo" between French clips): the log-probability decides.
    spanish = Heard(avg_logprob=-0.14, said=True, looped=True, in_script=True)
    french = Heard(avg_logprob=-0.31, said=True, looped=True, in_script=True)
    assert max([french, spanish], key=lambda h: h.rank) is spanish
    # A usable transcript beats a looping one, however probable.
    assert max([spanish, Heard(-0.6, True, False, True)], key=lambda h: h.rank).avg_logprob == -0.6
    # Under openai-whisper's log-probability threshold, a transcript does not hold.
    assert not Heard(-1.1, True, False, True).holds and not Heard(-0.2, False, False, True).holds


def test_the_files_language_is_the_windows_detections_weighted_by_their_speech():
    windows = [(20.0, {"nl": 0.96, "af": 0.04}), (20.0, {"nl": 0.79, "af": 0.21}), (5.0, {"de": 0.66, "nl": 0.34})]
    file = file_language(windows)
    assert file is not None and file.language == "nl"
    assert file.probability == pytest.approx((20 * 0.96 + 20 * 0.79 + 5 * 0.34) / 45)
    assert file.probabilities["de"] == pytest.approx(5 * 0.66 / 45)
    assert file.sure
    mixed = file_language([(10.0, {"fr": 0.9, "es": 0.1}), (10.0, {"es": 0.8, "fr": 0.2})])
    assert mixed is not None and not mixed.sure  # a file the windows disagree on: no prior
    assert file_language([]) is None and file_language([(0.0, {"en": 1.0})]) is None


def sure_file(language: str = "nl", p: float = 0.85) -> FileLanguage:
    assert p >= FILE_SURE_P
    return FileLanguage(language, p, {language: p, "af": 1 - p})


def test_in_a_sure_file_only_strong_evidence_sends_a_region_to_be_examined_alone():
    # Detections of real acted Dutch (bench/real_speech.py's tuning file): windows sure of Dutch, slices unsure.
    file = sure_file()
    window = {"nl": 0.96, "af": 0.04}
    german, albanian = {"de": 0.49, "yi": 0.28, "nl": 0.01}, {"sq": 0.86, "nl": 0.0}
    assert screened_in(file, window, [{"nl": 0.6}, german]) == [window, window]  # under SLICE_SURE_P: the window's
    assert screened_in(file, window, [albanian]) == [None]  # sure of another language: examined alone
    assert screened_in(file, window, [albanian], [{"nl": 0.7, "sq": 0.3}]) == [window]  # silence after: Dutch
    assert screened_in(file, window, [albanian], [{"sq": 0.6, "nl": 0.4}]) == [None]
    # A window naming another language lends its regions the file's detection, not its own.
    other = {"de": 0.67, "nl": 0.33}
    assert screened_in(file, other, [{"nl": 0.4, "de": 0.3}]) == [file.probabilities]
    # A window of one region is its region's detection: kept when sure, else the file's.
    assert screened_in(file, other, []) == [file.probabilities]
    assert screened_in(file, {"fr": 0.95, "nl": 0.05}, []) == [{"fr": 0.95, "nl": 0.05}]


def test_a_region_keeps_another_language_than_a_sure_files_only_when_sure_of_it():
    file = sure_file()
    assert held_to_file(file, {"sq": 0.86, "nl": 0.0}) == file.probabilities
    sure = {"fr": SURE_P, "nl": 1 - SURE_P}
    assert held_to_file(file, sure) == sure
    assert held_to_file(file, {"nl": 0.4, "de": 0.3, "af": 0.3}) == {"nl": 0.4, "de": 0.3, "af": 0.3}
    unsure_file = FileLanguage("nl", 0.5, {"nl": 0.5, "de": 0.5})
    assert held_to_file(unsure_file, {"sq": 0.86, "nl": 0.0}) == {"sq": 0.86, "nl": 0.0}
    assert held_to_file(None, {"sq": 0.86}) == {"sq": 0.86}


def test_screened_windows_takes_the_files_prior_only_when_it_is_sure():
    window = Screens({"nl": 0.9, "de": 0.1}, [{"de": 0.7, "nl": 0.3}, {"nl": 0.8}], [{"de": 0.6}, {"nl": 0.9}])
    assert screened_windows([window], sure_file()) == [[None, window.window]]
    unsure = FileLanguage("nl", 0.6, {"nl": 0.6, "de": 0.4})
    assert screened_windows([window], unsure) == screened_windows([window])


def test_a_language_the_windows_hear_keeps_its_regions_own_evidence():
    # Ten seconds of English before forty of Spanish: the windows give English its share, so a region heard as
    # English (even unsurely) is examined alone and keeps its detection; the smoothing decides among neighbours.
    file = FileLanguage("es", 0.8, {"es": 0.8, "en": 0.15, "la": 0.05 - 1e-9})
    assert file.hears("en") and not file.hears("la") and not file.hears("de")
    english = {"en": 0.6, "es": 0.3, "la": 0.1}
    assert screened_in(file, {"es": 0.9, "en": 0.1}, [english]) == [None]
    assert held_to_file(file, english) == english
    assert held_to_file(file, {"la": 0.7, "en": 0.2, "es": 0.1}) == file.probabilities
