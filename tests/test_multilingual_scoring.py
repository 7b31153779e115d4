"""The scoring of the multilingual evaluation (``tests/media_multilingual.py``): numbers written as digits compare
with the clips' texts, which spell them out."""

from __future__ import annotations

from tests.media_multilingual import cer, cjk_numerals, normalized


def test_cjk_numerals_write_numbers_as_chinese_and_japanese_spell_them():
    assert [cjk_numerals(d) for d in ("0", "7", "10", "12", "20", "21", "99")] == [
        "〇",
        "七",
        "十",
        "十二",
        "二十",
        "二十一",
        "九十九",
    ]
    assert cjk_numerals("1234567890") == "一二三四五六七八九〇"  # a count written without separators


def test_a_count_written_in_digits_scores_against_the_spelled_out_text():
    # Whisper base on the Chinese and Japanese counting clips: one character off ("0" for 十).
    for language in ("zh", "ja"):
        assert cer(normalized("一二三四五六七八九十。", language), normalized("1234567890", language)) == 0.1
        assert normalized("1, 2, 3, ... 10", language) == "一二三十"
    assert normalized("1, 2, 3.", "es") == "uno dos tres"
    assert normalized("Un 2, 3.", "fr") == "un deux trois"
