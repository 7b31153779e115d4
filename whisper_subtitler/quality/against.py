"""A subtitle file against a reference: SubER and the timing offsets of matching cues.

SubER (Wilken et al., 2022, "SubER: A Metric for Automatic Evaluation of Subtitle Quality") is an edit rate, in
percent of the reference's words and breaks, of the edits that turn the hypothesis into the reference: word
edits, shifts of word blocks, and line and cue breaks inserted, deleted or moved; a word only matches a word of a
cue that overlaps it in time. Computed by the authors' package ``subtitle-edit-rate`` (``suber``) on normalised
text (case and punctuation ignored). Speaker labels and dialogue dashes are removed first: they are not words.

Timing offsets: each reference cue is paired with the hypothesis cue that overlaps it most in time, when that
hypothesis cue overlaps no other reference cue more (a one-to-one pairing); the offsets are the hypothesis's
start and end minus the reference's, in seconds.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from whisper_subtitler.errors import MissingRequirementError
from whisper_subtitler.quality.read import SubtitleCue
from whisper_subtitler.quality.rules import strip_prefix


def _suber_subtitles(cues: Sequence[SubtitleCue]) -> list[Any]:
    """Cues as ``suber`` subtitles: words with line and cue breaks, word times interpolated as its SRT reader does."""
    from suber.data_types import LineBreak, Subtitle, TimedWord
    from suber.utilities import set_approximate_word_times

    out = []
    for cue in cues:
        if cue.end < cue.start:
            continue
        words: list[Any] = []
        for line in cue.lines:
            line_words = [
                TimedWord(string=w, subtitle_start_time=cue.start, subtitle_end_time=cue.end)
                for w in strip_prefix(line)[1].split()
            ]
            if line_words:
                line_words[-1].line_break = LineBreak.END_OF_LINE
            words += line_words
        if words:
            words[-1].line_break = LineBreak.END_OF_BLOCK
            set_approximate_word_times(words, cue.start, cue.end)
        out.append(Subtitle(word_list=words, index=cue.index, start_time=cue.start, end_time=cue.end))
    return out


def suber(hypothesis: Sequence[SubtitleCue], reference: Sequence[SubtitleCue]) -> float:
    """SubER of ``hypothesis`` against ``reference``, in percent (0 is identical; it can exceed 100).

    Raises ``MissingRequirementError`` when the ``subtitle-edit-rate`` package is not installed.
    """
    try:
        from suber.metrics.suber import calculate_SubER
    except ImportError:
        raise MissingRequirementError(
            "--against needs the subtitle-edit-rate package (SubER)",
            "pip install 'whisper-subtitler[check]' or pip install subtitle-edit-rate",
        ) from None
    return round(float(calculate_SubER(_suber_subtitles(hypothesis), _suber_subtitles(reference))), 2)


def _overlap(a: SubtitleCue, b: SubtitleCue) -> float:
    return min(a.end, b.end) - max(a.start, b.start)


def timing_offsets(hypothesis: Sequence[SubtitleCue], reference: Sequence[SubtitleCue]) -> list[tuple[float, float]]:
    """``(start offset, end offset)`` in seconds (hypothesis minus reference) of each one-to-one pair of cues."""
    best_ref: dict[int, tuple[float, int]] = {}
    for h, hyp in enumerate(hypothesis):
        for r, ref in enumerate(reference):
            o = _overlap(hyp, ref)
            if o > 0 and o > best_ref.get(h, (0.0, -1))[0]:
                best_ref[h] = (o, r)
    pairs = []
    for r, ref in enumerate(reference):
        scored = [(_overlap(hyp, ref), h) for h, hyp in enumerate(hypothesis) if _overlap(hyp, ref) > 0]
        if not scored:
            continue
        _, h = max(scored)
        if best_ref.get(h, (0.0, -1))[1] == r:
            pairs.append((hypothesis[h].start - ref.start, hypothesis[h].end - ref.end))
    return pairs


def compare(hypothesis: Sequence[SubtitleCue], reference: Sequence[SubtitleCue]) -> dict[str, Any]:
    """The ``against`` object of ``check --json``: ``suber`` (percent), ``reference_cues``, ``paired_cues``, and the
    mean absolute and median start and end offsets (seconds; ``None`` without pairs)."""
    pairs = timing_offsets(hypothesis, reference)
    starts, ends = [p[0] for p in pairs], [p[1] for p in pairs]

    def mean_abs(values: list[float]) -> float | None:
        return round(sum(abs(v) for v in values) / len(values), 3) if values else None

    def median(values: list[float]) -> float | None:
        return round(statistics.median(values), 3) if values else None

    return {
        "suber": suber(hypothesis, reference),
        "reference_cues": len(reference),
        "paired_cues": len(pairs),
        "start_offset_mean_abs": mean_abs(starts),
        "start_offset_median": median(starts),
        "end_offset_mean_abs": mean_abs(ends),
        "end_offset_median": median(ends),
    }
