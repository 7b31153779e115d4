"""The line length and reading speed that each language's subtitle guide asks for.

The defaults of ``CueOptions`` (42 columns, 17 characters per second) are Netflix's English template's. Languages
written with wide characters have their own guides, which count full-width characters; a full-width character
takes two display columns (UAX #11, ``cues.width``), so a limit of N full-width characters is 2N columns, and the
guides' half-width characters (Latin letters, digits, spaces), which count 0.5, take one:

- Japanese: at most 13 full-width characters per horizontal line (26 columns); reading speed 4 characters per
  second for adult programmes (Netflix, "Japanese Timed Text Style Guide").
- Chinese (Simplified and Traditional, Cantonese): 16 characters per line (32 columns); 9 characters per second for
  adults (Netflix, "Simplified Chinese (PRC) Timed Text Style Guide", and the Traditional Chinese guides).
- Korean: 16 characters per line, Latin characters, spaces and punctuation counting 0.5 (32 columns) (Netflix,
  "Korean Timed Text Style Guide"); its reading speed is left at the default.

Dialogue cues (two speakers, one line each) start each line with a hyphen and a space (``cues.labels``); Hebrew's
guide asks for a hyphen without a space before the second speaker's line only (Netflix, "Hebrew Timed Text Style
Guide", "Dual Speakers"): ``dialogue_dashes``.

A guide's figure replaces an option only while that option is at the English default (``for_language``): a value
given on purpose (``--max-line-width 30``) applies to every language, and ``CueOptions(language_guides=False)``
keeps the English figures for all.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, replace

from whisper_subtitler.cues.labels import DIALOGUE_DASH
from whisper_subtitler.cues.options import CueOptions

DEFAULTS = CueOptions()  # the English template's figures, which a language's guide replaces


@dataclass(frozen=True)
class Guide:
    """One language's figures: ``columns`` per line (display columns, a full-width character counting 2), the reading
    speed ``cps`` in characters per second (``None``: the default's), and the ``source`` they come from."""

    columns: int
    cps: float | None
    source: str


_CHINESE = Guide(32, 9.0, "Netflix Simplified Chinese (PRC) and Traditional Chinese Timed Text Style Guides")

GUIDES: dict[str, Guide] = {
    "ja": Guide(26, 4.0, "Netflix Japanese Timed Text Style Guide"),
    "zh": _CHINESE,
    "yue": _CHINESE,
    "ko": Guide(32, None, "Netflix Korean Timed Text Style Guide"),
}


def guide_of(language: str | None) -> Guide | None:
    """The guide of ``language`` (ISO 639-1 or Whisper's code, a region such as ``zh-TW`` allowed), or ``None``."""
    if not language:
        return None
    return GUIDES.get(language.lower().replace("_", "-").split("-")[0])


def script_language(text: str) -> str | None:
    """The language whose guide applies to ``text`` of unknown language, told by its script: ``ja`` when it has kana,
    ``ko`` when it has Hangul, ``zh`` when most of its letters are Han ideographs; ``None`` otherwise."""
    names = [unicodedata.name(c, "") for c in text if c.isalpha()]
    if not names:
        return None
    if any(n.startswith(("HIRAGANA", "KATAKANA")) for n in names):
        return "ja"
    if any(n.startswith("HANGUL") for n in names):
        return "ko"
    return "zh" if sum(n.startswith("CJK UNIFIED") for n in names) > len(names) / 2 else None


def for_language(options: CueOptions, language: str | None) -> CueOptions:
    """``options`` with the line width and reading speed of ``language``'s guide (``GUIDES``) in place of the English
    defaults; ``options`` unchanged for a language without a guide, with ``language_guides`` off, or where a value
    differs from the default (it was chosen)."""
    guide = guide_of(language)
    if guide is None or not options.language_guides:
        return options
    changes: dict[str, float | int] = {}
    if options.max_line_width == DEFAULTS.max_line_width:
        changes["max_line_width"] = guide.columns
    if guide.cps is not None and options.max_cps == DEFAULTS.max_cps:
        changes["max_cps"] = guide.cps
    return replace(options, **changes) if changes else options  # type: ignore[arg-type]


# The dashes of a dialogue cue's (first, second) line where a language's guide differs from the English template's.
DASHES: dict[str, tuple[str, str]] = {"he": ("", "-")}  # Netflix Hebrew guide: "-" before the second speaker only


def dialogue_dashes(language: str | None) -> tuple[str, str]:
    """What starts the first and the second line of a dialogue cue in ``language`` (ISO 639-1, a region allowed):
    ``DIALOGUE_DASH`` on both by default, a language's own in ``DASHES``."""
    code = (language or "").lower().replace("_", "-").split("-")[0]
    return DASHES.get(code, (DIALOGUE_DASH, DIALOGUE_DASH))
