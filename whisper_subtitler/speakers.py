"""Speaker assignment: which speaker says each word, from diarization speaker turns; and speaker renaming.

Pure logic on the frozen types (no torch, no numpy); every function returns a new ``Transcript``.

Evidence per word (whisperX's ``assign_word_speakers``, the baseline): the seconds of the word's timestamp that
each speaker's turns overlap (turns of one speaker add up); a word that no turn overlaps leans to the speaker of
the nearest turn. whisperX gives each word the speaker with the longest overlap (``rule="overlap"`` here). That
rule trusts every word timestamp to the tenth of a second, and Whisper's are not that good: around a speaker
change the cross-attention alignment smears the first words of the new speaker back into the pause or the
previous turn (on pyannote's sample, "Oh, I don't" is timed 0.9 s before Diane says it), so sentences get cut
in two and their heads go to the previous speaker.

The default rule (``rule="boundaries"``) keeps the evidence and adds where speakers can change: it chooses the
sequence of speakers over all words (in time order) that minimises

    sum over words of   the word's seconds not covered by its speaker's turns (at least ``MIN_WORD`` seconds a word)
  + sum over changes of the cost of changing speaker between the two words

by dynamic programming (Viterbi over the speakers, O(words x speakers^2)). Changing costs nothing after a sentence
end (``.?!`` and CJK forms) or across a pause of ``PAUSE`` seconds or more; after clause punctuation (``,;:``) it
costs ``CLAUSE_COST``; anywhere else inside a sentence ``INSIDE_COST``; both fall linearly to zero as the pause
between the two words grows to ``PAUSE``. So a change that the diarization puts inside a sentence moves to the
nearest sentence or clause boundary or pause when the words in between are little evidence (a smeared timestamp,
less than the cost in seconds), and stays at the diarization's turn edge when the evidence is strong (an
interruption without punctuation that the turns cover for longer than the cost). Evidence comes from the exclusive
diarization (one speaker at a time, pyannote 4's ``exclusive_speaker_diarization``) when given, else from the
turns; with the exclusive turns, time where a speaker's overlapping turn goes on under the other speaker's
exclusive turn counts ``OVERLAP_SHARE`` (half) for them, because the exclusive diarization hands overlapped speech
to one speaker, often the one who starts talking over the other before the first has finished the sentence.

Measured with cpWER (CHiME-6's concatenated minimum-permutation WER) on pyannote's sample and on its utterances
re-arranged into other conversations (``bench/speakers.py``, cross-validated with ``--cv``; figures in
``docs/speaker-attribution.md``): with the reference speaker turns the rule adds no error on the conversations
(whisperX's: 0.007) and 1 in 81 words on the sample (whisperX's: 3); the errors left with a real diarization are
words the diarization puts well inside the wrong speaker's turn. The two change costs were chosen by 4-fold
cross-validation on the tuning split of ``bench/conversations.py`` (pyannote's sample and 20 conversations, clean,
under music beds and in noise; a grid of 180 points over the four constants, whose lowest costs, 0.25 and 0.1 s,
were not chosen); on the 20 held-out conversations, which no choice saw: 29 speaker errors in 1,620 words, against
35 with the costs chosen before by hand (1.0 and 0.4 s); ``docs/speaker-attribution.md``.

Segments are split where the speaker changes, so each segment (and each cue built from it) has one speaker.
Turns are looked up with sorted start times and ``bisect``: a word only looks at turns that start before it ends
and no earlier than the longest turn before it starts.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import replace

from whisper_subtitler.cues.width import ends_clause, ends_sentence
from whisper_subtitler.errors import UsageError
from whisper_subtitler.types import Segment, SpeakerTurn, Transcript, Word

PAUSE = 0.5  # seconds between two words from which changing speaker costs nothing
INSIDE_COST = 0.5  # seconds of evidence a change inside a sentence (no punctuation, no pause) must outweigh
CLAUSE_COST = 0.2  # the same after clause punctuation
MIN_WORD = 0.1  # seconds: a shorter word timestamp is widened to this, around its middle, to weigh its evidence
OVERLAP_SHARE = 0.5  # the part of a word in a speaker's overlapping turn, outside their exclusive turn, that counts
NEAREST_SHARE = 0.5  # the part of a word no turn overlaps that counts for the speaker of the nearest turn
RULES = ("boundaries", "overlap")


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
    transcript: Transcript,
    turns: Sequence[SpeakerTurn],
    exclusive: Sequence[SpeakerTurn] | None = None,
    *,
    rule: str = "boundaries",
) -> Transcript:
    """A copy of ``transcript`` with ``Word.speaker`` and ``Segment.speaker`` set from ``turns`` and
    ``Transcript.turns`` set to them (sorted by start). Times in seconds.

    ``exclusive`` is the same diarization with one speaker at a time (``Diarization.exclusive_turns``); when
    given, words are assigned from it, and ``turns`` (which may overlap) are what the transcript keeps.
    ``rule``: ``"boundaries"`` (default) moves speaker changes to sentence and clause boundaries and pauses where
    the evidence allows (module docstring); ``"overlap"`` is whisperX's ``assign_word_speakers``, each word on its
    own (longest overlap, else the nearest turn).

    Each segment is split where its words' speaker changes: the pieces keep the decoding statistics, their
    text is their words' text, the first keeps the segment's start and the last its end. A segment without
    words gets the speaker of its own interval. Without turns, speakers are left ``None``.
    Raises ``ValueError`` for an unknown ``rule``.
    """
    if rule not in RULES:
        raise ValueError(f"unknown speaker assignment rule {rule!r}; one of {', '.join(RULES)}")
    index = TurnIndex(exclusive if exclusive else turns)
    all_words = [w for segment in transcript.segments for w in segment.words]
    if rule == "overlap" or not index:
        speakers = [index.speaker_for(w.start, w.end) for w in all_words]
    else:
        speakers = follow_boundaries(all_words, index, TurnIndex(turns) if exclusive else None)
    segments: list[Segment] = []
    k = 0
    for segment in transcript.segments:
        if not segment.words:
            segments.append(replace(segment, speaker=index.speaker_for(segment.start, segment.end)))
            continue
        words = [replace(w, speaker=speakers[k + i]) for i, w in enumerate(segment.words)]
        k += len(words)
        segments.extend(_split_by_speaker(segment, words))
    kept = tuple(sorted((t for t in turns if t.end > t.start), key=lambda t: (t.start, t.end)))
    return replace(transcript, segments=tuple(segments), turns=kept)


def change_cost(before: Word, after: Word) -> float:
    """The cost (seconds of evidence) of a speaker change between two consecutive words: 0 after a sentence end
    or across a pause of ``PAUSE`` s or more, else ``CLAUSE_COST`` after clause punctuation or ``INSIDE_COST``,
    scaled down linearly with the pause between the words (``after.start - before.end``, seconds)."""
    if ends_sentence(before.text):
        return 0.0
    base = CLAUSE_COST if ends_clause(before.text) else INSIDE_COST
    gap = after.start - before.end
    return base * max(0.0, 1.0 - gap / PAUSE)


def _evidence(
    index: TurnIndex, word: Word, speakers: Sequence[str], overlapped: TurnIndex | None = None
) -> list[float]:
    """Per speaker, the seconds of ``word`` (widened to ``MIN_WORD``) not covered by that speaker's turns in
    ``index``; where ``overlapped`` (turns that may overlap) has the speaker and ``index`` not, ``OVERLAP_SHARE`` of
    that time counts as covered. A word that no turn overlaps is covered ``NEAREST_SHARE`` by the speaker of the
    nearest turn."""
    start, end = word.start, word.end
    if end - start < MIN_WORD:
        middle = (start + end) / 2
        start, end = middle - MIN_WORD / 2, middle + MIN_WORD / 2
    length = end - start
    overlaps = index.overlaps(start, end)
    if overlapped is not None and OVERLAP_SHARE > 0:
        for speaker, seconds in overlapped.overlaps(start, end).items():
            extra = max(0.0, seconds - overlaps.get(speaker, 0.0))
            if extra > 0:
                overlaps[speaker] = overlaps.get(speaker, 0.0) + OVERLAP_SHARE * extra
    if not overlaps:
        overlaps = {index.nearest(start, end): NEAREST_SHARE * length}
    return [length - min(length, overlaps.get(s, 0.0)) for s in speakers]


def follow_boundaries(words: Sequence[Word], index: TurnIndex, overlapped: TurnIndex | None = None) -> list[str]:
    """The speaker of each of ``words`` (in time order) by the boundary rule of the module docstring: the speaker
    sequence with the least uncovered speech plus change costs (``change_cost``), found by Viterbi. Ties go to
    staying with the same speaker, then to the speaker who spoke first. ``index`` must not be empty; ``overlapped``:
    the diarization's turns that may overlap, when ``index`` holds its exclusive turns (see ``_evidence``)."""
    if not words:
        return []
    speakers = list(dict.fromkeys(t.speaker for t in (overlapped or index).turns))
    n_spk = len(speakers)
    cost = _evidence(index, words[0], speakers, overlapped)
    back: list[list[int]] = []
    for prev, word in zip(words, words[1:]):
        change = change_cost(prev, word)
        best_any = min(range(n_spk), key=lambda s: (cost[s], s))
        evidence = _evidence(index, word, speakers, overlapped)
        row, new = [], []
        for s in range(n_spk):
            stay, switch = cost[s], cost[best_any] + change
            if stay <= switch:
                row.append(s)
                new.append(stay + evidence[s])
            else:
                row.append(best_any)
                new.append(switch + evidence[s])
        back.append(row)
        cost = new
    s = min(range(n_spk), key=lambda k: (cost[k], k))
    path = [s]
    for row in reversed(back):
        s = row[s]
        path.append(s)
    return [speakers[k] for k in reversed(path)]


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
        pieces.append(
            replace(
                segment,
                start=min(start, run[0].start),
                end=max(end, run[-1].end),
                text=text,
                words=tuple(run),
                speaker=run[0].speaker,
            )
        )
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
    kept = set(labels[len(mapping) :])
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
