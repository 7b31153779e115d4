"""Speaker assignment: which speaker says each word, from diarization speaker turns; and speaker renaming.

Pure logic on the frozen types (no torch, no numpy); every function returns a new ``Transcript``.

Rule (as whisperX's ``assign_word_speakers``): a word gets the speaker whose turns overlap it the longest
(overlaps of several turns of one speaker add up); a word that no turn overlaps gets the speaker of the
nearest turn. Segments are split where the speaker changes, so each segment (and each cue built from it)
has one speaker. Turns are looked up with sorted start times and ``bisect``: a word only looks at turns that
start before it ends and no earlier than the longest turn before it starts.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import replace

from whisper_subtitler.errors import UsageError
from whisper_subtitler.types import Segment, SpeakerTurn, Transcript, Word


class TurnIndex:
    """Speaker turns indexed for interval queries; times in seconds.

    ``speaker_for(start, end)`` answers in O(log n + k) for k overlapping turns.
    """

    def __init__(self, turns: Sequence[SpeakerTurn]) -> None:
        self.turns = tuple(sorted((t for t in turns if t.end > t.start), key=lambda t: (t.start, t.end)))
        self._starts = [t.start for t in self.turns]
        self._longest = max((t.end - t.start for t in self.turns), default=0.0)
        by_end = sorted(self.turns, key=lambda t: t.end)
        self._ends_sorted = [t.end for t in by_end]
        self._by_end = by_end

    def __bool__(self) -> bool:
        return bool(self.turns)

    def overlaps(self, start: float, end: float) -> dict[str, float]:
        """Seconds of overlap of [start, end] with each speaker's turns (speakers with none left out)."""
        lo = bisect.bisect_left(self._starts, start - self._longest)
        hi = bisect.bisect_left(self._starts, end)
        totals: dict[str, float] = {}
        for turn in self.turns[lo:hi]:
            overlap = min(end, turn.end) - max(start, turn.start)
            if overlap > 0:
                totals[turn.speaker] = totals.get(turn.speaker, 0.0) + overlap
        return totals

    def nearest(self, start: float, end: float) -> str:
        """The speaker of the turn nearest to [start, end] (which no turn overlaps); ties go to the earlier turn."""
        i = bisect.bisect_right(self._ends_sorted, start)  # turns ending at or before the word starts
        before = self._by_end[i - 1] if i > 0 else None
        j = bisect.bisect_left(self._starts, end)  # turns starting at or after the word ends
        after = self.turns[j] if j < len(self.turns) else None
        if after is None or (before is not None and start - before.end <= after.start - end):
            return before.speaker  # type: ignore[union-attr]  # one of them exists: the index is not empty
        return after.speaker

    def speaker_for(self, start: float, end: float) -> str | None:
        """The speaker of [start, end]: longest total overlap (ties: the speaker who spoke first), else the
        nearest turn; ``None`` without turns. A zero-length interval is treated as one of 1 ms."""
        if not self.turns:
            return None
        if end <= start:
            end = start + 0.001
        totals = self.overlaps(start, end)
        if totals:
            return max(totals, key=totals.__getitem__)  # dicts keep turn order: ties go to the first
        return self.nearest(start, end)


def assign_speakers(
    transcript: Transcript, turns: Sequence[SpeakerTurn], exclusive: Sequence[SpeakerTurn] | None = None
) -> Transcript:
    """A copy of ``transcript`` with ``Word.speaker`` and ``Segment.speaker`` set from ``turns`` and
    ``Transcript.turns`` set to them (sorted by start).

    ``exclusive`` is the same diarization with one speaker at a time (``Diarization.exclusive_turns``); when
    given, words are assigned from it, and ``turns`` (which may overlap) are what the transcript keeps.

    Each segment is split where its words' speaker changes: the pieces keep the decoding statistics, their
    text is their words' text, the first keeps the segment's start and the last its end. A segment without
    words gets the speaker of its own interval. Without turns, speakers are left ``None``.
    """
    index = TurnIndex(exclusive if exclusive else turns)
    segments: list[Segment] = []
    for segment in transcript.segments:
        if not segment.words:
            segments.append(replace(segment, speaker=index.speaker_for(segment.start, segment.end)))
            continue
        words = [replace(w, speaker=index.speaker_for(w.start, w.end)) for w in segment.words]
        segments.extend(_split_by_speaker(segment, words))
    kept = tuple(sorted((t for t in turns if t.end > t.start), key=lambda t: (t.start, t.end)))
    return replace(transcript, segments=tuple(segments), turns=kept)


def _split_by_speaker(segment: Segment, words: list[Word]) -> list[Segment]:
    runs: list[list[Word]] = []
    for word in words:
        if runs and runs[-1][-1].speaker == word.speaker:
            runs[-1].append(word)
        else:
            runs.append([word])
    if len(runs) == 1:
        return [replace(segment, words=tuple(words), speaker=words[0].speaker)]
    pieces = []
    for k, run in enumerate(runs):
        start = segment.start if k == 0 else run[0].start
        end = segment.end if k == len(runs) - 1 else run[-1].end
        text = "".join(w.text for w in run)
        pieces.append(replace(segment, start=min(start, run[0].start), end=max(end, run[-1].end), text=text,
                              words=tuple(run), speaker=run[0].speaker))
    return pieces


def parse_speaker_names(spec: str) -> tuple[str, ...]:
    """``"Alice, Bob"`` -> ``("Alice", "Bob")``: comma-separated, trimmed.

    Raises UsageError for an empty name or a name given twice (two speakers would become one).
    """
    names = tuple(part.strip() for part in spec.split(","))
    if not names or any(not n for n in names):
        raise UsageError(f"--speaker-names has an empty name: {spec!r}", hint='give names as "Alice,Bob"')
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise UsageError(f"--speaker-names gives {', '.join(duplicates)} more than once")
    return names


def rename_speakers(transcript: Transcript, names: Sequence[str]) -> Transcript:
    """A copy of ``transcript`` whose speaker labels are replaced by ``names`` in order of first appearance
    (``Transcript.speakers``: in words, then in turns), in words, segments and turns.

    Labels beyond the names keep their label; names beyond the labels are unused. Raises UsageError when a
    name equals a kept label of another speaker (the two would merge).
    """
    labels = transcript.speakers
    mapping = dict(zip(labels, names))
    kept = set(labels[len(mapping):])
    clash = sorted(kept & set(mapping.values()))
    if clash:
        raise UsageError(f"speaker name {clash[0]!r} is also the label of another speaker")

    def rename(label: str | None) -> str | None:
        return mapping.get(label, label) if label is not None else None

    segments = tuple(
        replace(s, speaker=rename(s.speaker), words=tuple(replace(w, speaker=rename(w.speaker)) for w in s.words))
        for s in transcript.segments
    )
    turns = tuple(replace(t, speaker=rename(t.speaker)) for t in transcript.turns)
    return replace(transcript, segments=segments, turns=turns)


def without_single_speaker(transcript: Transcript) -> Transcript:
    """``transcript`` without speaker labels on its words and segments when they name one speaker only.

    Diarization is on by default, and a label that never changes says nothing (a monologue, a lecture): such a
    file gets no labels in any subtitle format. The speaker turns are kept (JSON, RTTM).
    """
    speakers = {w.speaker for w in transcript.words if w.speaker is not None}
    speakers |= {s.speaker for s in transcript.segments if s.speaker is not None}
    if len(speakers) > 1:
        return transcript
    segments = tuple(
        replace(s, speaker=None, words=tuple(replace(w, speaker=None) for w in s.words)) for s in transcript.segments
    )
    return replace(transcript, segments=segments)
