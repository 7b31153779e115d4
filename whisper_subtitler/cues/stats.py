"""Figures that show whether cues meet the readability rules (the acceptance figures of issue 5).

A cue "could not" meet the minimum duration or the reading speed when the next cue (or the end of the
audio) leaves no more room: its end is already at the next cue's start minus the minimum gap. Those cues
are excused in the "where speech allows" figures; the hard limits (line width, line count, order) are never
excused.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

from whisper_subtitler.cues.options import CueOptions
from whisper_subtitler.cues.width import display_width
from whisper_subtitler.types import Cue

EPS = 0.0015  # seconds: times are written in whole milliseconds


@dataclass(frozen=True)
class CueStats:
    """Counts and percentages over a cue list (percentages are 100.0 for an empty list)."""

    cues: int
    within_line_width_pct: float
    within_line_count_pct: float
    end_after_start_pct: float
    overlaps: int
    gaps_below_min: int
    within_cps_pct: float
    within_cps_where_possible_pct: float
    within_duration_pct: float
    within_duration_where_possible_pct: float
    max_line_width_seen: int
    max_cps_seen: float
    mean_duration: float

    def as_dict(self) -> dict[str, float | int]:
        return asdict(self)


def _pct(ok: int, total: int) -> float:
    return round(100.0 * ok / total, 2) if total else 100.0


def shown_lines(cue: Cue, options: CueOptions | None = None) -> tuple[str, ...]:
    """The cue's lines as SRT shows them: with the speaker label or dialogue dashes the cue carries
    (``Cue.shown_lines``; the speaker style was applied when the cue was built, ``options`` is not needed)."""
    return cue.shown_lines


def cue_stats(cues: Sequence[Cue], options: CueOptions = CueOptions(), duration: float = 0.0) -> CueStats:
    """Readability figures of ``cues`` against ``options``; ``duration`` (seconds, 0 unknown) is the audio's end."""
    n = len(cues)
    width_ok = count_ok = order_ok = cps_ok = cps_possible = dur_ok = dur_possible = 0
    overlaps = small_gaps = 0
    max_width, max_cps, total_dur = 0, 0.0, 0.0
    for i, cue in enumerate(cues):
        lines = shown_lines(cue, options)
        widths = [display_width(line) for line in lines]
        max_width = max([max_width, *widths])
        width_ok += all(w <= options.max_line_width for w in widths)
        count_ok += len(cue.lines) <= options.max_lines
        d = cue.end - cue.start
        total_dur += d
        order_ok += d > 0
        if i > 0:
            gap = cue.start - cues[i - 1].end
            overlaps += gap < -EPS
            small_gaps += gap < options.min_gap - EPS
        nxt = cues[i + 1].start if i + 1 < n else (duration if duration > 0 else float("inf"))
        boxed = cue.end >= nxt - options.min_gap - EPS  # no room left to extend
        chars = sum(len(line) for line in cue.lines) + len(cue.lines) - 1
        cps = chars / d if d > 0 else None  # a cue of no duration cannot be read at all
        max_cps = max(max_cps, cps or 0.0)
        c_ok = cps is not None and cps <= options.max_cps + 0.05
        cps_ok += c_ok
        cps_possible += c_ok or boxed
        d_ok = options.min_duration - EPS <= d <= options.max_duration + EPS
        dur_ok += d_ok
        dur_possible += d_ok or (d < options.min_duration and boxed)
    return CueStats(
        cues=n,
        within_line_width_pct=_pct(width_ok, n),
        within_line_count_pct=_pct(count_ok, n),
        end_after_start_pct=_pct(order_ok, n),
        overlaps=overlaps,
        gaps_below_min=small_gaps,
        within_cps_pct=_pct(cps_ok, n),
        within_cps_where_possible_pct=_pct(cps_possible, n),
        within_duration_pct=_pct(dur_ok, n),
        within_duration_where_possible_pct=_pct(dur_possible, n),
        max_line_width_seen=max_width,
        max_cps_seen=round(max_cps, 2) if n else 0.0,
        mean_duration=round(total_dur / n, 3) if n else 0.0,
    )
