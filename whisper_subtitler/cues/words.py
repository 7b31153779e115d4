"""Word timestamp repair: every word that reaches cue building has a usable, ordered time.

Whisper's word timestamps come from cross-attention alignment (Radford et al. 2022, ``whisper/timing.py``)
and fail in known ways: a missing or non-finite time, an end before the start, a time past the end of the
audio, and an absurd duration (most often the first word after a silence, which starts where the previous
speech ended; or the last word of a segment, which runs on into the silence). Transcripts without word
timestamps have none at all. This module fixes each case instead of passing it through.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import replace

from whisper_subtitler.types import Segment, Word

logger = logging.getLogger(__name__)


def _usable(word: Word, duration: float) -> bool:
    s, e = word.start, word.end
    if not isinstance(s, (int, float)) or not isinstance(e, (int, float)):
        return False
    if not (math.isfinite(s) and math.isfinite(e)) or s < 0 or e < s:
        return False
    return not (duration > 0 and s > duration)


def _weight(text: str) -> int:
    return max(1, len(text.strip()))


def _spread(texts: Sequence[str], start: float, end: float) -> list[tuple[float, float]]:
    """Times for words spread over [start, end] in proportion to their character counts."""
    total = sum(_weight(t) for t in texts)
    span = max(0.0, end - start)
    times, t = [], start
    for text in texts:
        d = span * _weight(text) / total
        times.append((t, t + d))
        t += d
    return times


def _words_from_text(segment: Segment, spaceless: bool) -> tuple[Word, ...]:
    """Words for a segment that has none: split its text and spread them over the segment's time."""
    text = segment.text.strip()
    pieces = [c for c in text if not c.isspace()] if spaceless else [" " + w for w in text.split()]
    times = _spread(pieces, segment.start, segment.end)
    return tuple(Word(p, s, e, 1.0, segment.speaker) for p, (s, e) in zip(pieces, times))


def repair_words(
    segments: Sequence[Segment],
    *,
    duration: float,
    max_word_duration: float,
    spaceless: bool,
) -> tuple[Word, ...]:
    """All words of ``segments`` in time order, each with a usable time (seconds).

    - Segments without words get words from their text, spread over the segment by character count.
    - Words with no usable time (missing, non-finite, negative, end before start, after ``duration``)
      are interpolated between their usable neighbours (or the segment bounds) by character count.
    - A word longer than ``max_word_duration`` is shortened: the last word of a segment loses its tail,
      any other word its head (the usual alignment error after a silence).
    - Times are clamped to [0, ``duration``] (when ``duration`` > 0) and made monotonic: each word starts
      no earlier than the previous one ends.
    - Empty words are dropped; the first word of a segment gets a leading space (languages with spaces),
      so words of consecutive segments never run together.
    The input is not modified. ``duration`` <= 0 means unknown.
    """
    out: list[Word] = []
    fixed = 0
    for seg in sorted(segments, key=lambda s: s.start):
        words = [w for w in seg.words if w.text.strip()] or list(_words_from_text(seg, spaceless))
        if not words:
            continue
        if not spaceless and not words[0].text[:1].isspace():
            words[0] = replace(words[0], text=" " + words[0].text)
        ok = [_usable(w, duration) for w in words]
        i = 0
        while i < len(words):
            if ok[i]:
                i += 1
                continue
            j = i
            while j < len(words) and not ok[j]:
                j += 1
            lo = words[i - 1].end if i > 0 else seg.start
            hi = words[j].start if j < len(words) else max(seg.end, lo)
            if not (math.isfinite(lo) and math.isfinite(hi)):
                lo = hi = out[-1].end if out else 0.0
            times = _spread([w.text for w in words[i:j]], lo, max(lo, hi))
            for k, (s, e) in zip(range(i, j), times):
                words[k] = replace(words[k], start=s, end=e)
            fixed += j - i
            i = j
        for k, w in enumerate(words):
            s, e = w.start, w.end
            if e - s > max_word_duration:
                fixed += 1
                if k == len(words) - 1:
                    e = s + max_word_duration
                else:
                    s = e - max_word_duration
            if duration > 0:
                s, e = min(s, duration), min(e, duration)
            prev_end = out[-1].end if out else 0.0
            s = max(s, prev_end)
            e = max(e, s)
            if (s, e) != (w.start, w.end):
                w = replace(w, start=s, end=e)
            out.append(w)
    if fixed:
        logger.info("repaired %d word timestamps (missing, invalid or implausibly long)", fixed)
    return tuple(out)
