"""Japanese and Chinese cues: lines within the guides' width in display columns, no space the tool added, breaks at
punctuation and between BudouX phrases (never inside a word), the guides' reading speeds; and ``check`` holding
files to the same figures. Hand-made word timings (one Whisper word per character, the hardest case); the real
clips are transcribed in ``test_delivery_media.py``."""

from __future__ import annotations

import budoux
import pytest

from tests.cue_helpers import transcript_of, words_of
from whisper_subtitler.cues import CueOptions, build_cues
from whisper_subtitler.cues.guides import for_language, guide_of, script_language
from whisper_subtitler.cues.phrases import continuations
from whisper_subtitler.cues.width import display_width
from whisper_subtitler.quality import check_cues, shown_cues

JAPANESE = (
    "今日はとても良い天気ですね。散歩に行きましょうか、それとも家で映画を見ますか。駅の近くに新しい喫茶店ができたそうです！"
    "昨日の会議ですが、来週の月曜日に変更になりました。"
)
CHINESE = "你好世界。今天天气很好，我们去公园散步吧！明天我们一起去北京看看长城好不好？"
PARSERS = {"ja": budoux.load_default_japanese_parser(), "zh": budoux.load_default_simplified_chinese_parser()}


def cues_of(text: str, language: str, options: CueOptions = CueOptions()):
    transcript = transcript_of(words_of(text, 0.2, spaceless=True, char_seconds=0.1), language=language)
    return transcript, build_cues(transcript, options)


def phrase_ends(text: str, language: str) -> set[int]:
    """Character offsets where BudouX's phrases of ``text`` end."""
    ends, at = set(), 0
    for phrase in PARSERS[language].parse(text):
        at += len(phrase)
        ends.add(at)
    return ends


def test_the_guides_figures_replace_the_english_defaults_only():
    assert (for_language(CueOptions(), "ja").max_line_width, for_language(CueOptions(), "ja").max_cps) == (26, 4.0)
    assert (for_language(CueOptions(), "zh").max_line_width, for_language(CueOptions(), "zh").max_cps) == (32, 9.0)
    assert for_language(CueOptions(), "zh-TW").max_line_width == 32 and guide_of("yue") == guide_of("zh")
    assert for_language(CueOptions(), "ko").max_line_width == 32 and for_language(CueOptions(), "ko").max_cps == 17.0
    assert for_language(CueOptions(), "en") == CueOptions()
    chosen = CueOptions(max_line_width=30, max_cps=6.0)
    assert for_language(chosen, "ja") == chosen  # a value given on purpose wins
    assert for_language(CueOptions(language_guides=False), "ja").max_line_width == 42


@pytest.mark.parametrize(("language", "text"), [("ja", JAPANESE), ("zh", CHINESE)])
def test_lines_fit_the_guides_width_without_added_spaces_and_break_between_phrases(language, text):
    transcript, cues = cues_of(text, language)
    width = for_language(CueOptions(), language).max_line_width
    assert "".join(line for c in cues for line in c.lines) == text  # nothing lost, no space added
    ends = phrase_ends(text, language)
    at = 0
    for cue in cues:
        assert 1 <= len(cue.lines) <= 2
        for line in cue.lines:
            assert display_width(line) <= width, line
            at += len(line)
            assert at in ends, f"{line!r} ends inside a phrase"  # every line and cue ends at a phrase end


@pytest.mark.parametrize(("language", "text"), [("ja", JAPANESE), ("zh", CHINESE)])
def test_a_two_line_cue_breaks_after_punctuation_where_the_lines_fit_there(language, text):
    _, cues = cues_of(text, language)
    width = for_language(CueOptions(), language).max_line_width
    checked = 0
    for cue in (c for c in cues if len(c.lines) == 2):
        whole = "".join(cue.lines)
        fitting = [
            k for k in range(1, len(whole)) if whole[k - 1] in "、。，！？" and display_width(whole[:k]) <= width
        ]
        if fitting and display_width(whole[fitting[-1] :]) <= width:
            checked += 1
            assert cue.lines[0][-1] in "、。，！？", cue.lines
    assert checked


def test_reading_speed_follows_the_language_even_in_another_languages_file():
    # 30 characters of Japanese spoken in 1.5 s: at 4 characters per second it needs 7 s on screen (the maximum).
    _, (cue, *_) = cues_of("今日は天気です。", "ja")
    assert cue.end - cue.start == pytest.approx(min(7.0, 8 / 4.0), abs=0.01)
    japanese = words_of("今日は天気です。", 0.2, spaceless=True, char_seconds=0.1)
    japanese = [w.__class__(w.text, w.start, w.end, w.probability, None, "ja") for w in japanese]
    english = words_of("And that was the weather for today in Tokyo.", japanese[-1].end + 2.0)
    english = [w.__class__(w.text, w.start, w.end, w.probability, None, "en") for w in english]
    cues = build_cues(transcript_of(japanese, english, language="en"))
    assert cues[0].language == "ja" and cues[0].end - cues[0].start == pytest.approx(2.0, abs=0.01)


def test_whisper_words_inside_a_phrase_are_glued():
    texts = ["今", "日", "は", "天", "気", "です", "ね", "。"]
    glued = continuations("ja", texts)
    assert glued == [False, True, True, False, True, True, True, True]  # 今日は / 天気ですね。
    assert continuations("en", texts) == [False] * len(texts)
    assert continuations("ja", ["今日は", " 天気"]) == [False, False]  # a space Whisper wrote starts a phrase


def test_check_holds_japanese_to_its_guide():
    _, cues = cues_of(JAPANESE, "ja")
    faults = check_cues(shown_cues(cues), language="ja")
    assert not [f for f in faults if f.kind == "line_width"]
    wide = shown_cues(cues_of(JAPANESE, "ja", CueOptions(max_line_width=40))[1])
    for language in ("ja", None):  # the language given, or told by the script (kana)
        assert [f for f in check_cues(wide, language=language) if f.kind == "line_width"]  # 40 columns break 26


def test_the_script_tells_the_guide_of_a_file_of_unknown_language():
    assert script_language("今日はいい天気") == "ja" and script_language("你好世界") == "zh"
    assert script_language("안녕하세요 세계") == "ko" and script_language("Hello world") is None
