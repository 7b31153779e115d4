"""Cue timing by shot changes, and the faults of cues against it: the rules of Netflix's Timed Text Style Guide,
"Subtitle Timing Guidelines", section 2 ("Timing to the shot change"), with the BBC Subtitle Guidelines' "Shot
changes" (match subtitles to shots; a subtitle that has to hang over a cut must not leave too soon after it).

A shot change is the time (seconds) of the first frame of a new shot. The window is half a second in frames
(``window_frames``: 12 at 24 fps, as Netflix writes the rules, 15 at 30 fps; Netflix says to scale the 12 frames
with the frame rate, while the 2-frame gap stays 2 frames at every rate). "Within the window" means closer than
the window (at most 11 frames at 24 fps), so a time exactly 12 frames away is outside it.

- in-time: a cue that starts within the window of a shot change starts on it; when that would leave the cue too
  short for its text (minimum duration, reading speed), a cue whose speech starts just before the cut starts a whole
  window before it instead (Netflix's older "General Requirements", article 7, do the same for dialogue that
  starts 8 to 11 frames before the cut), so that it crosses the cut with a window on each side;
- out-time: a cue that ends within the window of a shot change ends 2 frames (the minimum gap) before it; when that
  would make it too short, a cue that crosses the cut ends a whole window after it instead;
- every move keeps the rules the cue builder applies (``cues.timing``): the minimum gap to the cues around it, the
  minimum duration and the reading speed of the cue's text (a move never makes a cue shorter than what its text
  needs, or than it already was when it was already shorter), the maximum duration, the end of the audio. A move
  that would break one of them is not made, and the cue keeps its time (``check`` then reports it).

On the frame as players show it: a time the rules put on a frame (a cut, 2 frames before it, a window before or
after it) is written as the last whole millisecond at or before that frame's presentation time (``on_frame``).
A player shows a cue from the first frame whose presentation time has reached the cue's start (libass under
ffmpeg's subtitles filter, our ``--burn-in``, truncates that time to the millisecond; mpv rounds it), and at 23.976,
29.97 or 59.94 fps a frame's time is rarely a whole millisecond: frame 100 at 30000/1001 fps is at 3336.667 ms. SRT
and VTT round times to the nearest millisecond, so a cue moved onto that cut was written 3.337 s and first shown on
frame 101, one frame late, and a cue ending 2 frames before it stayed on frame 98, leaving one blank frame; the last
millisecond at or before the frame's time (3.336 s) is after the frame before it, so the cue is shown from the cut's
frame in every player. At 24, 25 or 30 fps the frames' times are whole milliseconds and nothing changes.

Where the guides differ: the BBC asks for subtitles that end on the last frame of a shot and gives no number for the
overhang; Netflix asks for 2 frames before the cut and half a second on each side of it. We follow Netflix's
numbers. Shot changes from a file: ``cues.shot_list``.

Pure Python: no ffmpeg here (``video.shots`` finds the shot changes of a video).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from whisper_subtitler.cues.options import CueOptions
from whisper_subtitler.cues.timing import Span, needed_duration
from whisper_subtitler.types import Transcript

WINDOW_SECONDS = 0.5  # Netflix: "12 frames" at 24 fps, "half a second" at any frame rate
_EXACT = 1e-9  # seconds: rounding room in the duration and gap comparisons, which are exact


def on_frame(t: float) -> float:
    """``t`` (seconds, a frame's presentation time) as the last whole millisecond at or before it, the time SRT and VTT
    write (``writers.base.to_milliseconds``) for a cue to show from that frame on (module docstring): a player shows a
    cue from the first frame whose time, in milliseconds (truncated by libass under ffmpeg, rounded by mpv), has
    reached its start, and a frame's time at 30000/1001 fps, 3336.667 ms, rounded to 3337 ms is shown one frame late.
    The nanosecond added absorbs the floating-point error of a whole millisecond (4.004 s is 4.003999... in binary);
    frames' times are never that close below a whole millisecond (at 30000/1001 fps they are thirtieths of one)."""
    return math.floor(t * 1000 + 1e-6) / 1000


def window_frames(fps: float) -> int:
    """The shot-change window in frames: half a second, rounded (12 at 24 and 25 fps, 15 at 30, 30 at 60)."""
    return max(1, round(fps * WINDOW_SECONDS))


@dataclass(frozen=True, slots=True)
class ShotRules:
    """The numbers of the shot-change rules at one frame rate: ``frame``, ``window`` (``window_frames`` frames) and
    ``gap`` (the cue builder's minimum gap) in seconds, and ``tolerance`` (a quarter frame), below which two times
    are the same frame."""

    frame: float
    window: float
    gap: float
    tolerance: float

    @classmethod
    def of(cls, options: CueOptions) -> ShotRules:
        """The rules at ``options.fps`` with ``options.min_gap``."""
        frame = options.frame
        return cls(frame, window_frames(options.fps) * frame, options.min_gap, frame / 4)

    def near(self, shots: Sequence[float], t: float, on: bool = False) -> float | None:
        """The shot change of ``shots`` (sorted, seconds) nearest to ``t`` and within the window of it, not on it
        (within ``tolerance``) unless ``on``."""
        k = bisect.bisect_left(shots, t)
        low = -1.0 if on else self.tolerance
        found = [s for s in shots[max(0, k - 1) : k + 1] if low < abs(s - t) < self.window - self.tolerance]
        return min(found, key=lambda s: abs(s - t)) if found else None

    def before(self, shot: float) -> float:
        """The end of a cue 2 frames (the gap) before the cut ``shot`` as written (``on_frame``): the gap before the
        cue that starts on the cut, ``on_frame(shot)``, at least ``gap``, and the frame 2 before the cut not shown."""
        return on_frame(on_frame(shot) - self.gap)

    def crossed(self, shots: Sequence[float], start: float, end: float) -> list[float]:
        """The shot changes of ``shots`` (sorted) that fall inside the cue ``start``-``end`` (not on its edges)."""
        lo = bisect.bisect_right(shots, start + self.tolerance)
        hi = bisect.bisect_left(shots, end - self.tolerance)
        return list(shots[lo:hi])


def time_to_shots(
    times: Sequence[tuple[float, float]],
    spans: Sequence[Span],
    shots: Sequence[float],
    options: CueOptions,
    duration: float = 0.0,
) -> list[tuple[float, float]]:
    """``times`` (display ``(start, end)`` in seconds from ``timing.time_cues``, one per span of ``spans``) moved by
    the shot changes ``shots`` (seconds) at ``options.fps``, by the rules of the module docstring; ``duration``
    (seconds, <= 0 unknown) is the end of the audio, which no end passes. Returns new times, in the same order."""
    if not shots or not times:
        return list(times)
    shots = sorted(shots)
    rules = ShotRules.of(options)
    eps, gap = rules.tolerance, rules.gap
    out = list(times)
    # The shortest a cue may become: what its text needs, or what it already had when it had less.
    need = [min(max(needed_duration(sp.chars, options), sp.shortest), e - s) for sp, (s, e) in zip(spans, times)]
    for i in range(len(out)):  # in-times
        s, e = out[i]
        shot = rules.near(shots, s, on=True)  # a start within a quarter frame of the cut is written on it too
        if shot is None or s == on_frame(shot):
            continue
        cut = on_frame(shot)
        for c in [cut] if cut < s or abs(shot - s) <= eps else [cut, on_frame(shot - rules.window)]:
            if c < s:  # earlier: a longer cue, room needed before it
                if c < 0 or e - c > options.max_duration + _EXACT:
                    continue
                if i and c < out[i - 1][1] + gap - _EXACT:
                    ps, pe = out[i - 1]
                    end = rules.before(shot) if c == cut else on_frame(c - gap)
                    if end - ps < need[i - 1] - _EXACT:
                        continue
                    out[i - 1] = (ps, end)  # the cue before ends 2 frames before the cut: the out-time rule
            elif e - c < need[i] - _EXACT:  # later: a shorter cue
                continue
            out[i] = (c, e)
            break
    for i in range(len(out)):  # out-times
        s, e = out[i]
        shot = rules.near(shots, e)
        if shot is None or shot <= s + eps or e == rules.before(shot):
            continue
        limit = out[i + 1][0] - gap if i + 1 < len(out) else (duration if duration > 0 else math.inf)
        for c in [rules.before(shot)] + ([on_frame(shot + rules.window)] if e > shot else []):
            if c < e and c - s < need[i] - _EXACT:
                continue
            if c > e and (c - s > options.max_duration + _EXACT or c > limit + _EXACT):
                continue
            out[i] = (s, c)
            break
    return out


def used_shot_changes(options: CueOptions) -> tuple[float, ...]:
    """The shot changes (seconds) ``options`` times the cues by; empty for ``"auto"`` or ``"off"`` left unresolved."""
    return options.shot_changes if isinstance(options.shot_changes, tuple) else ()


def saved_shot_changes(transcript: Transcript, options: CueOptions) -> CueOptions:
    """``options`` with the shot changes and frame rate ``transcript`` keeps (the ones its cues were timed by when it
    was transcribed) where ``options.shot_changes`` is ``"auto"``; ``options`` unchanged for ``"off"``, for times
    given, and for a transcript without shot changes."""
    if options.shot_changes != "auto" or not transcript.shot_changes:
        return options
    return replace(options, shot_changes=transcript.shot_changes, fps=transcript.fps or options.fps)


def keeping_shot_changes(transcript: Transcript, options: CueOptions) -> Transcript:
    """``transcript`` saying which shot changes its cues were timed by under ``options`` (none: none kept), so
    that its JSON carries them (``Transcript.shot_changes``, ``Transcript.fps``)."""
    used = used_shot_changes(options)
    return replace(transcript, shot_changes=used, fps=options.fps if used else None)
