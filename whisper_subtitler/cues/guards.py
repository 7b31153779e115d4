"""Hallucination guards that matter for subtitles: no cue over silence, no run of repeated text.

Whisper invents text over silence and music ("Thanks for watching", "you you you") and can loop on a
phrase (Radford et al. 2022, section 4.5; openai/whisper discussions #679 and #1783). The guards here work
on words and word groups, before cue timing:

- ``drop_silent_segments``: Whisper's own rule (``whisper/transcribe.py``): a segment with
  ``no_speech_prob`` > 0.6 and ``avg_logprob`` < -1 is silence.
- ``drop_unvoiced``: words that overlap no VAD speech region (padded) are dropped.
- ``collapse_loops``: a word or phrase repeated more than ``max_repeats`` times in a row is cut back.
- ``drop_improbable``: a word group whose mean word probability is below a threshold is dropped.
- ``drop_repeats``: a group whose text equals the previous group's text is dropped.
"""

from __future__ import annotations

import bisect
import logging
import re
from collections.abc import Sequence

from whisper_subtitler.types import Segment, Word

logger = logging.getLogger(__name__)

NO_SPEECH_THRESHOLD = 0.6  # whisper.transcribe default
LOGPROB_THRESHOLD = -1.0  # whisper.transcribe default
MAX_LOOP_NGRAM = 4  # words in the longest phrase checked for loops


def _norm(text: str) -> str:
    return re.sub(r"[\W_]+", " ", text.lower()).strip()


def drop_silent_segments(segments: Sequence[Segment]) -> tuple[Segment, ...]:
    """Segments without those Whisper itself would call silence (no_speech_prob > 0.6 and avg_logprob < -1)."""
    kept = tuple(
        s for s in segments if not (s.no_speech_prob > NO_SPEECH_THRESHOLD and s.avg_logprob < LOGPROB_THRESHOLD)
    )
    if len(kept) < len(segments):
        logger.info("dropped %d segments that Whisper scored as silence", len(segments) - len(kept))
    return kept


def drop_unvoiced(
    words: Sequence[Word], speech: Sequence[tuple[float, float]] | None, pad: float
) -> tuple[Word, ...]:
    """Words that overlap a VAD speech region widened by ``pad`` seconds on each side.

    ``speech`` is a sequence of (start, end) seconds, e.g. from silero-vad; ``None`` means no VAD ran and
    keeps every word. An empty sequence means the VAD found no speech: every word is dropped.
    """
    if speech is None:
        return tuple(words)
    regions = sorted((s - pad, e + pad) for s, e in speech)
    merged: list[list[float]] = []
    for s, e in regions:
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    starts = [r[0] for r in merged]
    kept = []
    for w in words:
        i = bisect.bisect_right(starts, max(w.end, w.start)) - 1
        if i >= 0 and merged[i][1] >= w.start:
            kept.append(w)
    if len(kept) < len(words):
        logger.info("dropped %d words outside VAD speech regions", len(words) - len(kept))
    return tuple(kept)


def collapse_loops(words: Sequence[Word], max_repeats: int) -> tuple[Word, ...]:
    """Cut a phrase of 1 to 4 words repeated more than ``max_repeats`` times in a row back to ``max_repeats``.

    Repetition is compared on lowercased text without punctuation; the first occurrences are kept.
    """
    out = list(words)
    keys = [_norm(w.text) for w in out]
    removed = 0
    for n in range(1, MAX_LOOP_NGRAM + 1):
        i = 0
        while i + n <= len(out):
            phrase = keys[i : i + n]
            reps = 1
            while keys[i + reps * n : i + (reps + 1) * n] == phrase:
                reps += 1
            if reps > max_repeats and any(phrase):
                cut_from, cut_to = i + max_repeats * n, i + reps * n
                del out[cut_from:cut_to], keys[cut_from:cut_to]
                removed += cut_to - cut_from
            i += 1
    if removed:
        logger.info("removed %d words of repetition loops", removed)
    return tuple(out)


def drop_improbable(groups: Sequence[Sequence[Word]], min_probability: float) -> list[Sequence[Word]]:
    """Word groups whose mean word probability is at least ``min_probability``."""
    kept = [g for g in groups if g and sum(w.probability for w in g) / len(g) >= min_probability]
    if len(kept) < len(groups):
        logger.info("dropped %d cues with mean word probability < %.2f", len(groups) - len(kept), min_probability)
    return kept


def drop_repeats(groups: Sequence[Sequence[Word]]) -> list[Sequence[Word]]:
    """Word groups without those that repeat the previous group's text and speaker (a run of identical cues)."""
    kept: list[Sequence[Word]] = []
    last = None
    for g in groups:
        key = (g[0].speaker, _norm("".join(w.text for w in g))) if g else None
        if key and key[1] and key == last:
            continue
        kept.append(g)
        last = key
    if len(kept) < len(groups):
        logger.info("dropped %d cues repeating the previous cue", len(groups) - len(kept))
    return kept
