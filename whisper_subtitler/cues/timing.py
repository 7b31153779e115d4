"""Cue timing: from the speech time of each cue's words to its display time.

Rules (Netflix Timed Text Style Guide; ``docs/speakers-in-subtitles.md``): a cue starts with its first word and ends with
its last; it is extended towards the minimum duration (5/6 s) and towards the time its text needs at the
maximum reading speed, never past the maximum duration (7 s) and never closer than the minimum gap
(2 frames) to the next cue. Gaps shorter than ``chain_frames`` (12 frames, 0.5 s at 24 fps) are closed down
to the minimum gap ("chaining"), so cues do not flicker off and on. The last cue is treated like every other:
the end of the audio is its "next cue", so it is extended towards its reading time up to the end of the audio,
and chained to it when less than ``chain_frames`` remain.

A cue of more than one word stays at least ``MIN_MULTIWORD`` seconds (0.3 s): several words shown for less are
unreadable, so the next cue starts later when it has to (by at most that much). Shorter cues come from squashed
word timestamps, which the guards drop before timing (``guards.drop_squashed``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from whisper_subtitler.cues.options import CueOptions

MIN_MULTIWORD = 0.3  # seconds: the shortest display time of a cue with more than one word


@dataclass(frozen=True, slots=True)
class Span:
    """The speech of one cue: first word start, last word end (seconds), its text length in characters and its
    number of words."""

    start: float
    end: float
    chars: int
    words: int = 1

    @property
    def shortest(self) -> float:
        """The shortest display time (seconds) before any rule: ``MIN_MULTIWORD`` for several words, else 0."""
        return MIN_MULTIWORD if self.words > 1 else 0.0


def needed_duration(chars: int, options: CueOptions) -> float:
    """Seconds a cue of ``chars`` characters needs on screen: the minimum duration or the reading time."""
    return min(options.max_duration, max(options.min_duration, chars / options.max_cps))


def time_cues(spans: Sequence[Span], options: CueOptions, duration: float = 0.0) -> list[tuple[float, float]]:
    """Display (start, end) in seconds for each span, in order.

    Guarantees, for spans in time order: every end is at least one frame after its start, and a span of several
    words lasts at least ``MIN_MULTIWORD`` (0.3 s) unless the audio ends sooner; every start is at least
    ``options.min_gap`` after the previous end; no cue lasts longer than ``options.max_duration``.
    ``duration`` (seconds, <= 0 for unknown) is the end of the audio: the ends are capped there where the speech
    allows, and the last cue is extended and chained up to it like any cue to the next one.
    """
    frame, gap = options.frame, options.min_gap
    starts: list[float] = []
    for k, sp in enumerate(spans):  # leave room for the previous cue: at least one frame (0.3 s for words), the gap
        floor = starts[-1] + max(frame, spans[k - 1].shortest) + gap if starts else 0.0
        starts.append(max(sp.start, floor))
    times: list[tuple[float, float]] = []
    for i, sp in enumerate(spans):
        start = starts[i]
        end = max(sp.end, start + needed_duration(sp.chars, options), start + sp.shortest)
        end = min(end, start + options.max_duration)
        if i + 1 < len(starts):
            limit = starts[i + 1] - gap
        elif duration > 0:
            limit = max(duration, sp.end)
        else:
            limit = None
        if limit is not None:
            if limit - end < options.chain_gap and limit - start <= options.max_duration:
                end = limit  # chain: close a short gap down to the minimum gap (the end of the audio: none)
            end = min(end, limit)
        end = max(end, start + frame)
        times.append((start, end))
    return times
