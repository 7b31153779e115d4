"""Right-to-left lines (Arabic, Hebrew, Persian, Urdu, ...): direction marks so that players put punctuation right.

A player lays out each subtitle line with the Unicode Bidirectional Algorithm (UAX #9): the paragraph's direction is
that of its first strong character (rules P2, P3: a web browser showing WebVTT), or left-to-right when the renderer
fixes it so (most SRT players; VSFilter; libass unless the style's ``Encoding`` is -1). A right-to-left line that
starts with a Latin word (``GPS``), or one laid out left-to-right, then shows its sentence punctuation and numbers on
the wrong side (``GPS לא עובד?`` with the question mark on the right). Each right-to-left line is therefore written as
RIGHT-TO-LEFT MARK (U+200F), RIGHT-TO-LEFT EMBEDDING (U+202B), the line, POP DIRECTIONAL FORMATTING (U+202C): the
embedding lays the whole line out right to left inside any paragraph (rules X2, X7), and the mark makes a paragraph
that takes its direction from the text right-to-left (so that ``align:start`` starts on the right), the Unicode
control characters that subtitle tools add to fix right-to-left lines. Checked with python-bidi in the tests: every
marked line shows as its right-to-left paragraph under a left-to-right, a right-to-left and a first-strong base
direction alike. The marks take no room on screen (zero width, ``cues.width``) and are not read (``quality`` leaves
them out of line widths and reading speeds).

A line is marked when its cue's language (``Cue.language``, else the file's) is written right to left (``RTL``), or,
the language unknown, when most of its strong letters are right-to-left. A translation (``--task translate``) is
English and is never marked.
"""

from __future__ import annotations

import unicodedata

from whisper_subtitler.types import Cue, Transcript

RLM = "\u200f"  # RIGHT-TO-LEFT MARK
RLE = "\u202b"  # RIGHT-TO-LEFT EMBEDDING
PDF = "\u202c"  # POP DIRECTIONAL FORMATTING
OPEN = RLM + RLE  # what a right-to-left line starts with
# Whisper's languages written right to left: Arabic, Hebrew, Persian, Urdu, Pashto, Sindhi, Yiddish, Uyghur.
RTL = frozenset({"ar", "he", "fa", "ur", "ps", "sd", "yi", "ug"})


def is_rtl_language(language: str | None) -> bool:
    """Whether ``language`` (ISO 639-1 or Whisper's code, a region allowed: ``ar-EG``) is written right to left."""
    return bool(language) and str(language).lower().replace("_", "-").split("-")[0] in RTL


def mostly_rtl(text: str) -> bool:
    """Whether most strong characters of ``text`` are right-to-left (bidi class R or AL)."""
    classes = [unicodedata.bidirectional(c) for c in text]
    rtl = sum(c in ("R", "AL") for c in classes)
    return rtl > 0 and rtl >= sum(c == "L" for c in classes)


def cue_is_rtl(cue: Cue, transcript: Transcript) -> bool:
    """Whether ``cue``'s lines are right-to-left text: by its language, else the file's, else by its letters."""
    if transcript.task == "translate":
        return False
    language = cue.language or transcript.language or None
    if language:
        return is_rtl_language(language)
    return mostly_rtl("".join(cue.lines))


def mark(line: str) -> str:
    """``line`` as a right-to-left line: ``OPEN`` + ``line`` + ``PDF`` (once: a line already marked is returned as it
    is); an empty line stays empty."""
    if not line or (line.startswith(OPEN) and line.endswith(PDF)):
        return line
    return OPEN + line + PDF
