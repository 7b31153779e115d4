"""Cue timing: from the speech time of each cue's words to its display time.

Rules (Netflix Timed Text Style Guide, ``SUBTITLES.md``): a cue starts with its first word and ends with
its last; it is extended towards the minimum duration (5/6 s) and towards the time its text needs at the
maximum reading speed, never past the maximum duration (7 s) and never closer than the minimum gap
(2 frames) to the next cue. Gaps shorter than ``chain_frames`` (12 frames, 0.5 s at 24 fps) are closed down
to the minimum gap ("chaining"), so cues do not flicker off and on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from whisper_subtitler.cues.options import CueOptions


@dataclass(frozen=True, slots=True)
class Span:
    """The speech of one cue: first word start, last word end (seconds) and its text length in characters."""

    start: float
    end: float
    chars: int


def needed_duration(chars: int, options: CueOptions) -> float:
    """Seconds a cue of ``chars`` characters needs on screen: the minimum duration or the reading time."""
    return min(options.max_duration, max(options.min_duration, chars / options.max_cps))


def time_cues(spans: Sequence[Span], options: CueOptions, duration: float = 0.0) -> list[tuple[float, float]]:
    """Display (start, end) in seconds for each span, in order.

    Guarantees, for spans in time order: every end is at least one frame after its start; every start is
    at least ``options.min_gap`` after the previous end; no cue lasts longer than ``options.max_duration``.
    ``duration`` (seconds, <= 0 for unknown) caps the ends at the end of the audio where the speech allows.
    """
    frame, gap = options.frame, options.min_gap
    starts: list[float] = []
    for sp in spans:  # leave room for the previous cue: at least one frame, then the gap
        floor = starts[-1] + frame + gap if starts else 0.0
        starts.append(max(sp.start, floor))
    times: list[tuple[float, float]] = []
    for i, sp in enumerate(spans):
        start = starts[i]
        end = max(sp.end, start + needed_duration(sp.chars, options))
        end = min(end, start + options.max_duration)
        if duration > 0:
            end = min(end, max(duration, sp.end))
        if i + 1 < len(starts):
            nxt = starts[i + 1]
            limit = nxt - gap
            if limit - end < options.chain_gap and limit - start <= options.max_duration:
                end = limit  # chain: close a short gap down to the minimum gap
            end = min(end, limit)
        end = max(end, start + frame)
        times.append((start, end))
    return times
