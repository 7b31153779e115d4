"""Where the next alignment window goes: at most 30 s of audio (Whisper's window), starting at the speech that
follows the last placed word, ending in a pause where there is one.

A window starts at ``seek`` (the end of the last placed word) or, when that lies in a pause, ``PAD`` seconds before
the next speech region. It ends after the last speech region that fits (plus ``PAD``), at a pause of ``LONG_GAP``
seconds or more (text is not stretched over a long silence or music), or, when speech runs past 30 s, in the
middle of the last pause at least ``MIN_WINDOW`` seconds in; with no such pause, at 30 s.
"""

from __future__ import annotations

from collections.abc import Sequence

WINDOW_S = 30.0  # seconds: Whisper's input window
PAD = 0.2  # seconds of audio kept before and after the speech of a window
LONG_GAP = 3.0  # seconds: a pause this long ends a window
MIN_WINDOW = 10.0  # seconds: a window cut in a pause keeps at least this much


def next_window(regions: Sequence[tuple[float, float]], seek: float, limit: float) -> tuple[float, float] | None:
    """The next window ``(start, end)`` in seconds, or ``None`` when no speech is left after ``seek``.

    ``regions`` are the VAD speech regions (start, end seconds, sorted, disjoint), ``limit`` the end of the audio
    at hand; the window lies within ``[seek, limit]`` and is at most ``WINDOW_S`` long.
    """
    ahead = [(a, b) for a, b in regions if b > seek + 0.02 and a < limit]
    if not ahead:
        return None
    start = max(seek, ahead[0][0] - PAD)
    end_max = min(start + WINDOW_S, limit)
    inside = [(a, b) for a, b in ahead if a < end_max]
    for (_, b), (a2, _) in zip(inside, inside[1:]):
        if a2 - b >= LONG_GAP:
            return start, min(b + PAD, end_max)
    last_start, last_end = inside[-1]
    if last_end <= end_max - PAD:
        following = [a for a, _ in ahead if a >= last_end]
        end = min(last_end + PAD, end_max, following[0] if following else end_max)
        return start, max(end, min(start + 0.1, end_max))
    pauses = [((b + a2) / 2) for (_, b), (a2, _) in zip(inside, inside[1:]) if (b + a2) / 2 >= start + MIN_WINDOW]
    return start, (pauses[-1] if pauses else end_max)
