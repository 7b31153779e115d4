"""The faults of subtitle cues against the readability rules of cue building (``CueOptions``).

Each fault has a kind (``KINDS``), a severity and whether it was avoidable. ``error``: the file is broken (a cue
without text, a cue that ends before it starts or starts before the one before it). ``warning``: a readability
rule is broken where it could have been kept. ``info``: a rule is broken where nothing could keep it:

- reading speed and minimum duration: the cue already lasts until the next cue (less the minimum gap) or the end
  of the media, so it cannot stay longer: the speech itself is faster than the limit;
- line breaks (orphan word, unbalanced lines, a break after an article or inside a name): no layout of the
  cue's text within the width and line count keeps all these rules (``cues.linebreak.is_good``).

Rules and their sources: ``docs/check.md``. The line-break word lists are English; they apply when the language
is English or unknown. Speaker labels (``[SPEAKER_00]: ``) and dialogue dashes count in the line width (they are
shown) but not in the reading speed (as in cue building); a cue whose every line after the first starts with a dash
is a dialogue cue, one line per speaker, and is not checked for balance (the first line has a dash too, except in
Netflix's Hebrew style: ``cues.guides.dialogue_dashes``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from enum import Enum

from whisper_subtitler.cues.guides import for_language, script_language
from whisper_subtitler.cues.linebreak import (
    ARTICLES,
    NAME,
    balanced,
    break_penalty,
    is_word,
    layout,
    tokenize,
)
from whisper_subtitler.cues.options import CueOptions
from whisper_subtitler.cues.width import display_width, is_spaceless
from whisper_subtitler.quality.read import SubtitleCue

INVISIBLE = "\u200e\u200f\u202a\u202b\u202c\u202d\u202e"  # direction marks and embeddings: shown as nothing, not read
CPS_TOLERANCE = 0.05  # characters per second: a reading speed within this of the limit is within it
LABEL = re.compile(r"^\[[^\]\n]{1,64}\]:\s+")  # a speaker label as whisperX and cue building write it
# A dialogue dash: a hyphen (or dash) and a space, or a hyphen just before a letter (Netflix's Hebrew style).
DASH = re.compile(r"^[-\u2010-\u2015](?:\s+|(?=[^\W\d_]))")


class Severity(str, Enum):
    """How bad a fault is: ``error`` (broken file), ``warning`` (avoidable), ``info`` (unavoidable)."""

    error = "error"
    warning = "warning"
    info = "info"


# Every fault kind, in the order reports list them, with what it means.
KINDS: dict[str, str] = {
    "bad_timestamp": "ends at or before its start, or starts before the cue before it",
    "empty": "no text",
    "missing_words": "words of the transcript (check --transcript) that no cue shows and no guard removed",
    "overlap": "starts before the cue before it ends",
    "gap": "starts less than the minimum gap after the cue before it",
    "line_width": "a line wider than the maximum line width (CPL)",
    "line_count": "more lines than the maximum",
    "cps": "reading speed above the maximum characters per second",
    "short": "shown for less than the minimum duration",
    "long": "shown for more than the maximum duration",
    "orphan": "a line of a single word",
    "unbalanced": "a line under a third of the width of its neighbour",
    "break_after_article": "a line ends with an article (a, an, the)",
    "break_in_name": "a line break between first and last name (two capitalised words)",
    "shot_flash": "crosses a shot change with less than half a second (12 frames at 24 fps) on one side",
    "shot_in": "starts within 12 frames of a shot change, not on it (check --video, --shot-changes)",
    "shot_out": "ends within 12 frames of a shot change, not 2 frames before it",
    "shot_crossing": "crosses a shot change with at least 12 frames on each side (allowed: speech runs on)",
}


@dataclass(frozen=True)
class Fault:
    """One fault of one cue: ``kind`` (a key of ``KINDS``), ``severity``, the cue's ``index`` (1-based) and
    ``start`` (seconds), a one-line ``message`` and whether it was ``avoidable``."""

    kind: str
    severity: Severity
    index: int
    start: float
    message: str
    avoidable: bool = True

    def as_dict(self) -> dict[str, object]:
        d = asdict(self)
        d["severity"] = self.severity.value
        return d


def strip_prefix(line: str) -> tuple[str, str]:
    """``(prefix, text)`` of a shown line: a leading speaker label or dialogue dash, and the rest; the direction marks
    around a right-to-left line (``writers.bidi``), which are neither shown nor read, are left out of both."""
    line = line.strip(INVISIBLE)
    found = LABEL.match(line) or DASH.match(line)
    return (found.group(0), line[found.end() :]) if found else ("", line)


def reading_chars(lines: Sequence[str], spaceless: bool) -> int:
    """Characters read in a cue: its lines without labels or dashes, a line break counting as a space (none in a
    language written without spaces), as cue building counts them."""
    texts = [strip_prefix(line)[1] for line in lines]
    return sum(len(t) for t in texts) + (0 if spaceless else max(len(texts) - 1, 0))


def _break_faults(cue: SubtitleCue, options: CueOptions, spaceless: bool, english: bool) -> list[tuple[str, str]]:
    """``(kind, message)`` of the line-break faults of a cue of several lines (not a dialogue cue)."""
    lines = cue.lines
    texts = [strip_prefix(line)[1] for line in lines]
    widths = [display_width(line) for line in lines]
    found: list[tuple[str, str]] = []
    if not spaceless:
        words = [sum(is_word(w) for w in t.split()) for t in texts]
        if total := sum(words):
            lone = [k + 1 for k, n in enumerate(words) if n < 2]
            if lone and total > 1:
                found.append(("orphan", f"line {lone[0]} holds one word: {texts[lone[0] - 1]!r}"))
    if not found and not balanced(widths):
        found.append(("unbalanced", f"lines of {', '.join(map(str, widths))} columns"))
    if spaceless:
        return found
    for k, (left, right) in enumerate(zip(texts, texts[1:]), 1):
        last, first = (left.split() or [""])[-1], (right.split() or [""])[0]
        if not last or not first:
            continue
        if english and last.lower() in ARTICLES:
            found.append(("break_after_article", f"line {k} ends with the article {last!r}"))
        elif break_penalty(last, first, False, english) == NAME:
            found.append(("break_in_name", f"{last!r} and {first!r} split over lines {k} and {k + 1}"))
    return found


def _good_layout_exists(cue: SubtitleCue, options: CueOptions, spaceless: bool, english: bool) -> bool:
    """Whether the cue's text (label kept on the first line) has a good layout within the width and line count."""
    label = strip_prefix(cue.lines[0])[0] if cue.lines and LABEL.match(cue.lines[0]) else ""
    text = " ".join(strip_prefix(line)[1] for line in cue.lines)
    pieces = list(text.replace(" ", "")) if spaceless else [" " + w for w in text.split()]
    found = layout(
        tokenize(pieces, spaceless),
        max_width=options.max_line_width,
        max_lines=options.max_lines,
        first_line_indent=display_width(label),
        spaceless=spaceless,
        english=english,
    )
    return found is not None and found.good


def _cue_faults(
    cues: Sequence[SubtitleCue],
    k: int,
    options: CueOptions,
    end: float | None,
    tol: float,
    spaceless: bool,
    english: bool,
) -> list[tuple[str, str, Severity, bool]]:
    """``(kind, message, severity, avoidable)`` of each fault of ``cues[k]`` (see ``check_cues``)."""
    cue = cues[k]
    found: list[tuple[str, str, Severity, bool]] = []

    def add(kind: str, message: str, severity: Severity = Severity.warning, avoidable: bool = True) -> None:
        found.append((kind, message, severity if avoidable else Severity.info, avoidable))

    duration = cue.end - cue.start
    previous = cues[k - 1] if k else None
    if duration <= tol / 2:
        add("bad_timestamp", f"ends at {cue.end:.3f} s, not after its start {cue.start:.3f} s", Severity.error)
    if previous is not None and cue.start < previous.start - tol / 2:
        add("bad_timestamp", f"starts before cue {previous.index} ({previous.start:.3f} s)", Severity.error)
    texts = [strip_prefix(line)[1] for line in cue.lines]
    if not any(t.strip() for t in texts):
        add("empty", "no text", Severity.error)
    if previous is not None and previous.start - tol / 2 <= cue.start:
        gap = cue.start - previous.end
        if gap < -tol:
            add("overlap", f"overlaps cue {previous.index} by {-gap:.3f} s")
        elif gap < options.min_gap - tol:
            add("gap", f"{gap:.3f} s after cue {previous.index} (minimum {options.min_gap:.3f} s)")
    widths = [display_width(line) for line in cue.lines]
    if widths and max(widths) > options.max_line_width:
        wide = widths.index(max(widths))
        add("line_width", f"line {wide + 1} is {widths[wide]} columns (maximum {options.max_line_width})")
    if len(cue.lines) > options.max_lines:
        add("line_count", f"{len(cue.lines)} lines (maximum {options.max_lines})")
    following = cues[k + 1].start if k + 1 < len(cues) else end
    # No room to stay longer: the cue runs until the next one (less the minimum gap), the media's end, or its maximum.
    boxed = (following is not None and cue.end >= following - options.min_gap - tol) or (
        duration >= options.max_duration - tol
    )
    if duration > tol / 2 and any(texts):
        cps = reading_chars(cue.lines, spaceless) / duration
        if cps > options.max_cps + CPS_TOLERANCE:
            reason = "" if not boxed else ": no room to show it longer, the speech is faster"
            add("cps", f"{cps:.1f} characters per second (maximum {options.max_cps:g}){reason}", avoidable=not boxed)
        if duration < options.min_duration - tol:
            reason = "" if not boxed else ": no room to show it longer"
            add("short", f"{duration:.3f} s (minimum {options.min_duration:.3f} s){reason}", avoidable=not boxed)
    if duration > options.max_duration + tol:
        add("long", f"{duration:.3f} s (maximum {options.max_duration:g} s)")
    # A dialogue cue: every line after the first starts with a dash (the first too, except in Hebrew's style).
    dialogue = len(cue.lines) > 1 and all(DASH.match(line.strip(INVISIBLE)) for line in cue.lines[1:])
    if len(cue.lines) > 1 and not dialogue and any(texts):
        breaks = _break_faults(cue, options, spaceless, english)
        avoidable = bool(breaks) and _good_layout_exists(cue, options, spaceless, english)
        for kind, message in breaks:
            add(kind, message if avoidable else f"{message}: no better layout fits", avoidable=avoidable)
    return found


def check_cues(
    cues: Sequence[SubtitleCue],
    options: CueOptions = CueOptions(),
    *,
    language: str | None = None,
    end: float | None = None,
    resolution: float = 0.001,
) -> list[Fault]:
    """The faults of ``cues`` (in file order) against ``options``, cue by cue, in the order of ``KINDS``.

    ``language`` (ISO 639-1, ``None`` unknown) picks the word rules (English lists), whether the text is
    written without spaces and the line width and reading speed of its guide where ``options`` has the defaults
    (``cues.guides``; an unknown language is told by the script, ``guides.script_language``); ``end`` (seconds,
    ``None`` unknown) is the end of the media, which the last cue cannot pass; ``resolution`` (seconds) is the
    format's time step, the tolerance of every time comparison.
    """
    # Japanese, Chinese, Korean: their guides' width and speed (cues.guides); the language told by the script if unknown
    options = for_language(options, language or script_language(" ".join(line for c in cues for line in c.lines)))
    tol = resolution * 1.5
    english = language is None or language.lower().startswith("en")
    spaceless = is_spaceless(language, " ".join(line for c in cues for line in c.lines))
    order = list(KINDS)
    faults: list[Fault] = []
    for k, cue in enumerate(cues):
        found = _cue_faults(cues, k, options, end, tol, spaceless, english)
        for kind, message, severity, avoidable in sorted(found, key=lambda f: order.index(f[0])):
            faults.append(Fault(kind, severity, cue.index, cue.start, message, avoidable))
    return faults
