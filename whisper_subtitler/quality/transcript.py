"""A subtitle file against the transcript it was made from: the words no cue shows (``check --transcript``).

Every word of a transcript's segments must be shown by a cue, except the words a hallucination guard removed on
purpose, which the transcript records (``removed`` in the JSON, ``types.Removal``). The words compared are
``cues.guards.unaccounted``'s: text without case, punctuation or spaces, speaker labels and dialogue dashes
stripped from the lines.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from whisper_subtitler.cues.guards import unaccounted
from whisper_subtitler.quality.read import SubtitleCue
from whisper_subtitler.quality.rules import Fault, Severity, strip_prefix
from whisper_subtitler.types import Transcript, Word

GAP_S = 1.0  # seconds: missing words further apart than this are reported as two stretches


def missing_words(cues: Sequence[SubtitleCue], transcript: Transcript) -> tuple[Fault, ...]:
    """One ``missing_words`` error per stretch of ``transcript``'s words that ``cues`` do not show and no
    ``Removal`` accounts for; the fault's ``index`` is the cue shown at or before the stretch (1-based, 0 when
    none), ``start`` the first missing word's start in seconds, the message its time span and text."""
    shown = [strip_prefix(line)[1] for cue in cues for line in cue.lines]
    lost = unaccounted(transcript.words, shown, transcript.removed)
    runs: list[list[Word]] = []
    for w in lost:
        if runs and w.start - runs[-1][-1].end <= GAP_S:
            runs[-1].append(w)
        else:
            runs.append([w])
    starts = [c.start for c in cues]
    faults = []
    for run in runs:
        k = bisect.bisect_right(starts, run[0].start)
        index = cues[k - 1].index if k else 0
        text = "".join(w.text for w in run).strip()
        faults.append(
            Fault(
                "missing_words",
                Severity.error,
                index,
                run[0].start,
                f"{len(run)} words of the transcript in no cue, {run[0].start:.2f}-{run[-1].end:.2f} s: {text[:120]}",
            )
        )
    return tuple(faults)
