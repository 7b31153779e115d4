"""Word timestamps across pauses: a word whose timestamp spans a whole pause starts after it.

Whisper times words by dynamic time warping over cross-attention weights (``whisper/timing.py``), and every frame
goes to some token: the frames of a pause go to the word after it, which then starts where the speech before it
ended (openai-whisper's ``add_word_timestamps`` shortens such a first word after a pause when it is over twice the
median word length; ``cues.words`` does the same for absurd lengths). When a speaker change falls in that pause,
the new speaker's first word reaches back over the pause into the previous speaker's turn and is counted as
theirs; a cue that opens with it shows the text before it is said. The VAD hears the pause: a word's timestamp
that holds a whole pause (``vad.pauses``: a gap of at least ``vad.MIN_PAUSE`` before, between or after the speech
regions found with no padding, ``vad.PAUSE_VAD``) cannot be one word said on both sides of a silence, and the word
starts where that pause ends (the last one, when it holds several). Words that merely start or end inside a pause
are left as they are, and so are the ends: in the spirit of stable-ts's silence suppression (``suppress_silence``),
kept to the one case the speaker set showed (``docs/speaker-attribution.md``, "Words across pauses").
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import replace

from whisper_subtitler.types import Segment, Word


def start_after_pauses(segments: Sequence[Segment], gaps: Sequence[tuple[float, float]]) -> list[Segment]:
    """``segments`` with every word whose ``[start, end]`` holds a whole pause of ``gaps`` (``(start, end)``
    seconds, sorted, disjoint, on the segments' time axis) starting at the end of the last such pause; a segment
    whose first word moved starts with it (a pause that starts where the word starts counts as held). Other words
    and segments are returned unchanged. O(words log gaps + the pauses inside words)."""
    starts = [a for a, _ in gaps]

    def moved(word: Word) -> Word:
        k = bisect.bisect_left(starts, word.start)
        start = word.start
        while k < len(gaps) and gaps[k][0] < word.end:
            if gaps[k][1] < word.end:
                start = gaps[k][1]
            k += 1
        return word if start == word.start else replace(word, start=start)

    out = []
    for segment in segments:
        words = tuple(moved(w) for w in segment.words)
        if words == segment.words:
            out.append(segment)
            continue
        start = max(segment.start, words[0].start) if words[0] is not segment.words[0] else segment.start
        out.append(replace(segment, words=words, start=start))
    return out
