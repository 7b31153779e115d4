"""Dialogue cues: two short utterances of two speakers in one cue, one line each, each after a dash.

Netflix Timed Text Style Guide (English template), dual speakers: when two speakers share a cue, a hyphen
followed by a space starts each speaker's line; at most one line per speaker; each line is a self-contained
sentence that does not run into the cue before or after. A quick exchange (``- Hello?`` / ``- Hi.``) then
stays on screen long enough to read, instead of two cues that flash by.

Two adjacent runs of words (``builder``: a run has one speaker and no long pause) become one dialogue cue
when all of these hold:

- they are spoken by two different, known speakers, and the speaker style forms dialogue cues;
- each run ends a sentence, and the first one starts one (the word before it ends a sentence);
- each run fits on one line of ``max_line_width`` columns after the dash, and the cue has room for 2 lines;
- the silence between them is shorter than ``pause`` (a longer pause always ends a cue);
- the whole exchange lasts at most ``max_duration``, and its text can be read at ``max_cps`` before the next
  cue must start.

Runs are paired greedily from the start; a run belongs to at most one dialogue cue.
"""

from __future__ import annotations

from collections.abc import Sequence

from whisper_subtitler.cues.labels import DIALOGUE_DASH
from whisper_subtitler.cues.linebreak import layout, tokenize
from whisper_subtitler.cues.options import CueOptions
from whisper_subtitler.cues.timing import needed_duration
from whisper_subtitler.cues.width import display_width, ends_sentence
from whisper_subtitler.types import Word


def one_line(words: Sequence[Word], options: CueOptions, spaceless: bool, english: bool) -> str | None:
    """The text of ``words`` as one dialogue line (without its dash), or ``None`` when it does not fit."""
    lay = layout(
        tokenize([w.text for w in words], spaceless),
        max_width=options.max_line_width,
        max_lines=1,
        first_line_indent=display_width(DIALOGUE_DASH),
        spaceless=spaceless,
        english=english,
    )
    return lay.lines[0] if lay is not None else None


def can_pair(
    first: Sequence[Word],
    second: Sequence[Word],
    before: Word | None,
    limit_end: float,
    options: CueOptions,
    spaceless: bool,
    english: bool,
) -> bool:
    """Whether the runs ``first`` and ``second`` (in this order, adjacent) make one dialogue cue.

    ``before`` is the word spoken just before ``first`` (``None`` at the start), ``limit_end`` the latest
    time (seconds) the cue may stay on screen: the next cue's start minus the minimum gap, or the end of the
    audio. The rules are those of the module docstring.
    """
    a, b = first[0].speaker, second[0].speaker
    if a is None or b is None or a == b or options.max_lines < 2:
        return False
    if not (ends_sentence(first[-1].text) and ends_sentence(second[-1].text)):
        return False
    if before is not None and not ends_sentence(before.text):
        return False
    if second[0].start - first[-1].end >= options.pause:
        return False
    if second[-1].end - first[0].start > options.max_duration:
        return False
    lines = [one_line(first, options, spaceless, english), one_line(second, options, spaceless, english)]
    if lines[0] is None or lines[1] is None:
        return False
    chars = sum(len(line) for line in lines) + (0 if spaceless else 1)
    available = min(options.max_duration, limit_end - first[0].start)
    return needed_duration(chars, options) <= available


def pair_runs(
    runs: Sequence[Sequence[Word]],
    limit_ends: Sequence[float],
    options: CueOptions,
    spaceless: bool,
    english: bool,
) -> list[int]:
    """Indices ``k`` of the runs that open a dialogue cue with run ``k + 1``, in order.

    ``limit_ends[k]`` is the latest time run ``k``'s last cue may stay on screen (see ``can_pair``).
    """
    starts: list[int] = []
    k = 0
    while k + 1 < len(runs):
        before = runs[k - 1][-1] if k > 0 else None
        if can_pair(runs[k], runs[k + 1], before, limit_ends[k + 1], options, spaceless, english):
            starts.append(k)
            k += 2
        else:
            k += 1
    return starts
