"""Where a diarization's errors lie against a reference, and how its turn edges and the words that open utterances
sit against the reference's (``bench/speakers.py`` reports these per file and per group).

All on a 10-ms grid, times in seconds:

- ``false_alarm_before_s`` / ``false_alarm_after_s``: speech where the reference has none, nearer the next
  reference speech than the last (before an utterance starts) or not (after one ends);
- ``false_alarm_overlap_s``: a speaker more than the reference has, where it has one or more;
- ``missed_start_s`` / ``missed_end_s`` / ``missed_inside_s``: reference speech with no speaker, within 0.15 s of an
  utterance's start or end, or further inside;
- ``_onsets_ms`` / ``_offsets_ms``: per reference utterance, the nearest start (end) of the hypothesis' speech (any
  speaker; turns joined) minus the utterance's, when within 0.3 s (``_vad_offsets_ms``: the same for the VAD's
  regions the turns are cut to);
- ``_openers_s``: per utterance, the start of the first word whose middle lies at most 0.3 s before the utterance's
  start, minus that start.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

STEP = 0.01  # s: the grid
NEAR = 0.3  # s: an edge or word this close to an utterance's edge is its
EDGE = 0.15  # s: missed speech this close to an utterance's edge is missed at that edge

Span = tuple[float, float]


def _frames(spans: Sequence[Span], n: int) -> np.ndarray:
    counts = np.zeros(n, dtype=int)
    for a, b in spans:
        counts[int(a / STEP) : int(b / STEP)] += 1
    return counts


def _joined(spans: Sequence[Span]) -> list[Span]:
    out: list[list[float]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def _nearest(edges: Sequence[float], targets: Sequence[float]) -> list[float]:
    """For each target, the nearest edge minus the target in milliseconds, when within ``NEAR``."""
    out = []
    for t in targets:
        d = min((e - t for e in edges), key=abs, default=None)
        if d is not None and abs(d) <= NEAR:
            out.append(round(1000 * d, 1))
    return out


def edge_figures(
    reference: Sequence[Span], turns: Sequence[Span], vad: Sequence[Span], word_starts: Sequence[Span], duration: float
) -> dict:
    """The figures of the module docstring for one file: ``reference`` utterances, hypothesis ``turns`` (each
    speaker's, overlapping), ``vad`` regions and words as ``(start, middle)``, all in seconds."""
    n = int(duration / STEP) + 1
    ref, hyp = _frames(reference, n), _frames(turns, n)
    speech = np.flatnonzero(ref > 0)
    before = after = 0
    for i in np.flatnonzero((hyp > 0) & (ref == 0)):
        j = np.searchsorted(speech, i)
        to_next = speech[j] - i if j < len(speech) else n
        since_last = i - speech[j - 1] if j > 0 else n
        before, after = (before + 1, after) if to_next < since_last else (before, after + 1)
    starts = [int(a / STEP) for a, _ in reference]
    ends = [int(b / STEP) for _, b in reference]
    missed = {"start": 0, "end": 0, "inside": 0}
    for i in np.flatnonzero((ref > 0) & (hyp == 0)):
        to_start, to_end = min(abs(i - s) for s in starts), min(abs(i - e) for e in ends)
        where = "inside" if min(to_start, to_end) > EDGE / STEP else "start" if to_start <= to_end else "end"
        missed[where] += 1
    joined, regions = _joined(turns), _joined(vad)
    openers = []
    for a, b in reference:
        first = next((s for s, m in sorted(word_starts) if a - NEAR <= m < b), None)
        if first is not None:
            openers.append(round(first - a, 3))
    return {
        "false_alarm_before_s": round(before * STEP, 2),
        "false_alarm_after_s": round(after * STEP, 2),
        "false_alarm_overlap_s": round(float(np.clip(hyp - ref, 0, None)[ref > 0].sum()) * STEP, 2),
        **{f"missed_{k}_s": round(v * STEP, 2) for k, v in missed.items()},
        "_onsets_ms": _nearest([a for a, _ in joined], [a for a, _ in reference]),
        "_offsets_ms": _nearest([b for _, b in joined], [b for _, b in reference]),
        "_vad_offsets_ms": _nearest([b for _, b in regions], [b for _, b in reference]),
        "_openers_s": openers,
    }


def summary(rows: Sequence[dict]) -> dict:
    """Per-file means of the seconds, and medians and quartiles of the edges over the files' utterances."""

    def quartiles(key: str) -> list[float]:
        values = [v for r in rows for v in r[key]]
        return [round(float(q), 1) for q in np.percentile(values, [25, 50, 75])] if values else []

    seconds = [k for k in rows[0] if k.startswith(("false_alarm_", "missed_"))]
    openers = [v for r in rows for v in r["_openers_s"]]
    return {
        **{f"{k}_mean": round(sum(r[k] for r in rows) / len(rows), 2) for k in seconds},
        "onset_ms_quartiles": quartiles("_onsets_ms"),
        "offset_ms_quartiles": quartiles("_offsets_ms"),
        "vad_offset_ms_quartiles": quartiles("_vad_offsets_ms"),
        "opening_word_abs_error_median_s": round(float(np.median(np.abs(openers))), 3) if openers else None,
        "opening_words_early_by_0_3_s": sum(v < -NEAR for v in openers),
        "opening_words": len(openers),
    }
