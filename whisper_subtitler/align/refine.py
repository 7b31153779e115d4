"""From raw alignment times to word timestamps: sentences that were not found in the audio, and word boundaries
moved onto the pauses the VAD heard.

Not found: DTW has to give every token of the text some frames, so a sentence that is not in the audio is packed
into a few frames between its neighbours (most of its words without duration), or laid over silence. A sentence
is reported as not found, and left out of the subtitles, when at least half of its words have no duration and the
model found them unlikely (mean word probability under ``MAX_PROBABILITY``; real speech that DTW squeezed, such as
overlapped speech, keeps a high one), or when ``MOSTLY_SQUEEZED`` of its words have none; when it would be read
faster than ``MAX_CPS`` characters per second (twice the fastest speech); or when less than ``MIN_VOICED`` of its
time is speech. Words of a sentence that was never reached (the audio ended) are reported
too. Nothing is invented for them.

Pauses (after stable-ts's silence suppression, ``suppress_silence``): DTW tends to let a word run into the pause
after it, or start late after one (the punctuation before it takes the pause). A pause the VAD found within
``SNAP_TOLERANCE`` seconds of the boundary between two words becomes that boundary: the first word ends where the
pause starts and the next starts where it ends (each pause serves one boundary, the nearest). Then a word that
still starts inside a pause starts at its end, and one that ends inside a pause ends at its start.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from whisper_subtitler.align.forced import Timed
from whisper_subtitler.align.words import ScriptWord, Sentence, sentence_text

MAX_CPS = 50.0  # characters per second no speech reaches (fast speech: about 20-25)
MIN_CHARS_FOR_CPS = 10  # the reading-speed test applies to sentences at least this long
MAX_PROBABILITY = 0.5  # mean word probability below which a half-squeezed sentence is not in the audio
MOSTLY_SQUEEZED = 0.8  # a sentence with this share of its words without duration is not in the audio
MIN_VOICED = 0.25  # a sentence with less of its time in speech regions was laid over silence
SNAP_TOLERANCE = 0.4  # seconds between a word boundary and a pause that becomes it


def _voiced(start: float, end: float, regions: Sequence[tuple[float, float]]) -> float:
    """The part of ``[start, end]`` that lies in ``regions`` (0..1; 1 for an empty span inside a region)."""
    if end <= start:
        return 1.0 if any(a <= start <= b for a, b in regions) else 0.0
    i = max(0, bisect.bisect_right([a for a, _ in regions], start) - 1)
    covered = 0.0
    for a, b in regions[i:]:
        if a >= end:
            break
        covered += max(0.0, min(b, end) - max(a, start))
    return covered / (end - start)


def not_found(
    words: Sequence[ScriptWord],
    sentences: Sequence[Sentence],
    times: Sequence[Timed | None],
    regions: Sequence[tuple[float, float]],
) -> list[int]:
    """Indices of the sentences the audio does not hold (module docstring), from the raw alignment ``times``."""
    missing = []
    for k, s in enumerate(sentences):
        timed = times[s.first : s.last + 1]
        if any(t is None for t in timed):
            missing.append(k)
            continue
        zero = sum(t.duration <= 0 for t in timed) / len(timed)
        chars = len(sentence_text(words, s))
        span = timed[-1].end - timed[0].start
        too_fast = chars >= MIN_CHARS_FOR_CPS and chars > MAX_CPS * span
        probability = sum(t.probability for t in timed) / len(timed)
        squeezed = zero >= MOSTLY_SQUEEZED or (zero >= 0.5 and probability < MAX_PROBABILITY)
        if squeezed or too_fast or _voiced(timed[0].start, timed[-1].end, regions) < MIN_VOICED:
            missing.append(k)
    return missing


def snap_to_pauses(
    times: Sequence[tuple[float, float]], gaps: Sequence[tuple[float, float]]
) -> list[tuple[float, float]]:
    """Word times ``(start, end)`` (seconds, in order) moved onto the pauses ``gaps`` (module docstring)."""
    out = [list(t) for t in times]
    starts = [a for a, _ in gaps]
    candidates = []
    for i in range(1, len(out)):
        left, right = out[i - 1][1], out[i][0]
        lo = bisect.bisect_left(starts, left - SNAP_TOLERANCE - 60.0)  # pauses are shorter than a minute or so
        for p in range(max(0, lo), bisect.bisect_right(starts, right + SNAP_TOLERANCE)):
            a, b = gaps[p]
            distance = max(0.0, a - right, left - b)
            if distance <= SNAP_TOLERANCE:
                candidates.append((distance, -(b - a), i, p))
    used_boundaries, used_pauses = set(), set()
    for _, _, i, p in sorted(candidates):
        if i in used_boundaries or p in used_pauses:
            continue
        a, b = gaps[p]
        if out[i - 1][0] < a and b < out[i][1]:  # both words keep some duration
            out[i - 1][1], out[i][0] = a, b
            used_boundaries.add(i)
            used_pauses.add(p)
    for word in out:
        for a, b in gaps[max(0, bisect.bisect_right(starts, word[0]) - 1) :]:
            if a > word[1]:
                break
            if a < word[0] < b < word[1]:
                word[0] = b
            if word[0] < a < word[1] < b:
                word[1] = a
    for k in range(1, len(out)):  # in order, as DTW gives them (a safeguard: the moves above keep it)
        out[k][0] = max(out[k][0], out[k - 1][1])
        out[k][1] = max(out[k][1], out[k][0])
    return [(a, b) for a, b in out]
