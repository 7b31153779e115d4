"""Display width of text and the scripts written without spaces.

Width follows Unicode East Asian Width (UAX #11, through ``unicodedata.east_asian_width``): wide (W) and
fullwidth (F) characters take two columns, combining marks and format characters (Cf: direction marks) none,
everything else one.
"""

from __future__ import annotations

import unicodedata

# Whisper language codes of languages written without spaces between words.
SPACELESS_LANGUAGES = frozenset({"ja", "zh", "yue", "th", "lo", "km", "my", "bo"})

# Sentence-final and clause punctuation: Latin, CJK, Arabic script (question mark U+061F, Urdu full stop U+06D4,
# comma U+060C, semicolon U+061B) and Devanagari (danda U+0964, double danda U+0965).
SENTENCE_END = frozenset(".?!…。？！\u061f\u06d4\u0964\u0965")
CLAUSE_END = frozenset(",;:–—、，；：\u060c\u061b")


def char_width(char: str) -> int:
    """Columns one character takes: 2 for East Asian wide/fullwidth, 0 for combining marks and invisible format
    characters (category Cf: the direction marks of right-to-left lines, ``writers.bidi``), else 1."""
    if unicodedata.combining(char) or unicodedata.category(char) == "Cf":
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def display_width(text: str) -> int:
    """Columns ``text`` takes on screen (UAX #11). ``display_width("日本") == 4``."""
    if text.isascii():  # every ASCII character is narrow or neutral and none combines: one column each
        return len(text)
    return sum(char_width(c) for c in text)


def is_spaceless_char(char: str) -> bool:
    """Whether ``char`` belongs to a script written without spaces between words (CJK, kana, Thai, ...)."""
    name = unicodedata.name(char, "")
    return name.startswith(("CJK UNIFIED", "HIRAGANA", "KATAKANA", "THAI", "LAO", "KHMER", "MYANMAR", "TIBETAN"))


def is_spaceless(language: str | None, text: str) -> bool:
    """Whether ``text`` is written without spaces: by the language code, else by its letters.

    Without a known language, the text counts as spaceless when most of its letters are CJK, kana,
    Thai, Lao, Khmer, Myanmar or Tibetan characters.
    """
    if language:
        return language.lower().split("-")[0] in SPACELESS_LANGUAGES
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return False
    return sum(is_spaceless_char(c) for c in letters) > len(letters) / 2


def ends_sentence(text: str) -> bool:
    """Whether a word ends a sentence (``.``, ``?``, ``!``, ``…`` and their CJK, Arabic and Devanagari forms, before
    closing quotes)."""
    stripped = text.rstrip().rstrip("\"'”’»)]」』")
    return bool(stripped) and stripped[-1] in SENTENCE_END


def ends_clause(text: str) -> bool:
    """Whether a word ends with clause punctuation (comma, semicolon, colon, dash and CJK forms)."""
    stripped = text.rstrip().rstrip("\"'”’»)]」』")
    return bool(stripped) and stripped[-1] in CLAUSE_END
