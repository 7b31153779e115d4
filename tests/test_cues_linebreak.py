"""Line breaking inside a cue: fit, fewest lines, best break by the rules, balance, wide characters."""

from whisper_subtitler.cues.linebreak import BAD_LAYOUT, NEVER, break_penalty, layout, tokenize
from whisper_subtitler.cues.width import display_width


def lay(text: str, width: int = 42, lines: int = 2, **kw):
    return layout(tokenize([" " + w for w in text.split()], False), max_width=width, max_lines=lines, **kw)


def test_short_text_stays_on_one_line():
    assert lay("I know what you mean.").lines == ("I know what you mean.",)


def test_every_line_fits_and_no_word_is_broken():
    text = "The line breaks are terrible and the timing is off by a second or more"
    result = lay(text)
    assert len(result.lines) == 2
    assert all(len(line) <= 42 for line in result.lines)
    assert " ".join(result.lines).split() == text.split()


def test_breaks_after_punctuation():
    assert lay("We tried everything we could, but nothing worked out for us in the end").lines[0].endswith(",")


def test_breaks_before_a_conjunction_rather_than_elsewhere():
    result = lay("I was going to call you yesterday because the meeting moved again")
    assert result.lines[1].startswith("because")


def test_never_between_article_and_noun():
    # The balanced break point falls between "the" and "documentation"; it must move.
    result = lay("Please read every word of the documentation before you start")
    assert not result.lines[0].endswith((" the", " a", " an"))
    assert break_penalty("the", "documentation") == NEVER


def test_keeps_first_and_last_name_together():
    result = lay("Yesterday afternoon I finally met John Smith at the station")
    assert not (result.lines[0].endswith("John") and result.lines[1].startswith("Smith"))


def test_lines_are_balanced():
    result = lay("one two three four five six seven eight nine ten eleven twelve")
    a, b = (len(x) for x in result.lines)
    assert abs(a - b) <= 12


def test_too_long_for_the_lines_gives_none():
    assert lay("word " * 30) is None


def test_three_lines_when_allowed():
    text = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa"
    result = lay(text, width=40, lines=3)
    assert len(result.lines) == 3 and all(len(x) <= 40 for x in result.lines)


def test_first_line_indent_is_reserved_for_the_label():
    text = "The line breaks are terrible and the timing is off by a second"
    result = lay(text, first_line_indent=14)
    assert len(result.lines[0]) + 14 <= 42


def test_word_longer_than_a_line_is_hard_wrapped_as_last_resort():
    result = lay("https://example.com/a/very/long/path/that/never/ends", width=30)
    assert result is not None and all(len(x) <= 30 for x in result.lines)


def test_japanese_breaks_by_characters_and_counts_wide_characters_double():
    text = "今日はとても良い天気ですね。散歩に行きましょうか、映画を見ますか。"
    result = layout(tokenize(list(text), True), max_width=42, max_lines=2, spaceless=True)
    assert result is not None and len(result.lines) == 2
    assert "".join(result.lines) == text  # no space added, nothing lost
    assert all(display_width(line) <= 42 for line in result.lines)
    assert result.lines[0].endswith("。")  # the sentence end is the best break
    assert not result.lines[1].startswith(("、", "。", "ー"))  # kinsoku: no line starts with these


def test_glued_word_pieces_stay_together():
    tokens = tokenize([" Hello", "-", "world", " again"], False)
    assert [t.text for t in tokens] == ["Hello-world", "again"]


def test_no_orphan_word_under_a_label_when_a_balanced_break_fits():
    # Issue 29: "[SPEAKER_00]: I'm in New Jersey now" over "though." (the label counted in the width).
    result = lay("I'm in New Jersey now though.", first_line_indent=len("[SPEAKER_00]: "))
    assert result.lines == ("I'm in New Jersey", "now though.")


def test_no_line_under_a_third_of_its_neighbour_when_a_balanced_break_fits():
    # Before a preposition (penalty 3) would leave "The road" (8 columns) over 35: under a third.
    result = lay("The road through the mountains is narrow and")
    assert result.lines == ("The road through the mountains", "is narrow and")


def test_an_unavoidable_orphan_is_kept_and_costs_more():
    # Two words that do not fit on one line: one word per line is the only layout.
    result = lay("Supercalifragilisticexpialidocious antidisestablishmentarianism", width=40)
    assert len(result.lines) == 2 and result.cost >= BAD_LAYOUT


def test_three_lines_avoid_an_orphan_when_they_can():
    text = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa"
    result = lay(text, width=40, lines=3)
    assert all(len(line.split()) >= 2 for line in result.lines)


def test_display_width_counts_columns_per_character_class():
    """ASCII (control characters included) one column each, as ``char_width`` says; wide CJK two; a combining
    accent none."""
    from whisper_subtitler.cues.width import char_width

    ascii_text = "".join(map(chr, range(128)))
    assert display_width(ascii_text) == sum(map(char_width, ascii_text)) == 128
    assert display_width("日本") == 4
    assert display_width("Cafe\u0301 日") == 7
