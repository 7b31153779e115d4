"""Hallucination guards that matter for subtitles: no cue over silence, no run of repeated text.

Whisper invents text over silence and music ("Thanks for watching", "you you you") and can loop on a
phrase (Radford et al. 2022, section 4.5; openai/whisper discussions #679 and #1783). The guards here work
on words and word groups, before cue timing:

- ``drop_silent_segments``: Whisper's own rule (``whisper/transcribe.py``): a segment with
  ``no_speech_prob`` > 0.6 and ``avg_logprob`` < -1 is silence.
- ``drop_unvoiced``: words that overlap no VAD speech region (padded) are dropped, unless they end a sentence
  begun on speech (the VAD loses the ends of utterances under loud music).
- ``collapse_loops``: a word or phrase repeated more than ``max_repeats`` times in a row is cut back.
- ``drop_repeated_sentences``: a sentence that repeats the sentence just before it word for word, across a
  segment (chunk) boundary, is dropped: decoding two windows, or the temperature fallback, can give the same
  sentence twice ("I'm in New Jersey now though. I'm in New Jersey now though.", the second in 42 ms).
- ``drop_squashed``: words whose word timestamps are squashed (``SQUASHED_WORDS`` or more words in under
  ``SQUASHED_SECONDS``, or read at more than ``SQUASHED_CPS_FACTOR`` times the maximum reading speed) are an
  alignment or decoding failure: the alignment found no audio for them (Whisper's DTW packs tokens it cannot place
  into the last frames). They are never printed: they are dropped, with a warning.
- ``drop_improbable``: a word group whose mean word probability is below a threshold is dropped.
- ``drop_repeats``: a group whose text, speaker and language equal the previous group's is dropped when it
  follows without a pause or is squashed, or when it is the third or later of such a run (a loop); said once
  again after a pause, it is kept.

``clean_transcript`` applies the two word-level guards to a transcript (the pipeline does so before speaker
assignment, so JSON output and cues agree).

Nothing is removed silently: every word a guard removes is recorded as a ``types.Removal`` with its reason (a key
of ``REASONS``), time span and text (``removals``, ``removed_groups``), kept in ``Transcript.removed`` and written to
the JSON transcript. ``unaccounted`` finds the words of a transcript that are neither in a cue nor recorded as
removed: there must be none.
"""

from __future__ import annotations

import bisect
import logging
import re
from collections.abc import Sequence
from dataclasses import replace

from whisper_subtitler.cues.width import ends_sentence, is_spaceless_char
from whisper_subtitler.types import Removal, Segment, Transcript, Word

logger = logging.getLogger(__name__)

NO_SPEECH_THRESHOLD = 0.6  # whisper.transcribe default
LOGPROB_THRESHOLD = -1.0  # whisper.transcribe default
MAX_LOOP_NGRAM = 4  # words in the longest phrase checked for loops
SQUASHED_WORDS = 3  # this many words or more ...
SQUASHED_SECONDS = 0.2  # ... within this many seconds (first start to last end) are squashed
SQUASHED_CPS_FACTOR = 3.0  # a run of SQUASHED_WORDS words read faster than this times max_cps is squashed
MIN_REPEATED_WORDS = 3  # a repeated sentence of fewer words can be real ("Hello? Hello?") and is kept

REASONS = {
    "silence": "a segment Whisper itself scored as silence (no_speech_prob > 0.6 and avg_logprob < -1)",
    "unvoiced": "words outside every speech region the VAD found (a sentence begun on speech is kept to its end)",
    "loop": "a phrase repeated more times in a row than --max-repeats allows",
    "repeated_sentence": "a sentence repeating the one before it across decoding windows, or squashed",
    "squashed": "words the alignment packed into too little time to be heard",
    "improbable": "a cue whose mean word probability is under --min-cue-probability",
    "repeated_cue": "a cue repeating the cue before it (same speaker, language, text) without a pause, or a third time",
}


def removals(before: Sequence[Word], kept: Sequence[Word], reason: str, stage: str = "cues") -> list[Removal]:
    """The words of ``before`` that are not in ``kept`` (compared by identity: the guards keep the objects they
    keep), one ``Removal`` per run of consecutive removed words, in the order of ``before``."""
    alive = {id(w) for w in kept}
    out: list[Removal] = []
    run: list[Word] = []
    for w in [*before, None]:
        if w is not None and id(w) not in alive:
            run.append(w)
            continue
        if run:
            out.append(Removal(reason, run[0].start, run[-1].end, "".join(x.text for x in run).strip(), stage))
            run = []
    return out


def removed_groups(
    before: Sequence[Sequence[Word]], kept: Sequence[Sequence[Word]], reason: str, stage: str = "cues"
) -> list[Removal]:
    """One ``Removal`` per word group of ``before`` that is not in ``kept`` (compared by identity)."""
    alive = {id(g) for g in kept}
    return [
        Removal(reason, g[0].start, g[-1].end, "".join(w.text for w in g).strip(), stage)
        for g in before
        if g and id(g) not in alive
    ]


def _tokens(text: str) -> list[str]:
    """Words of ``text`` without case or punctuation; a word in a script written without spaces (a character two
    columns wide) is taken character by character."""
    out: list[str] = []
    for token in _norm(text).split():
        out.extend(token if any(is_spaceless_char(c) for c in token) else (token,))
    return out


def shown_words(words: Sequence[Word], removed: Sequence[Removal]) -> list[Word]:
    """``words`` without those a ``Removal`` of stage ``"cues"`` accounts for (its span holds the word, its text has
    it): the words the subtitle files show, in order."""
    spans = sorted((r.start, r.end, _tokens(r.text)) for r in removed if r.stage == "cues")
    if not spans:
        return list(words)
    starts = [a for a, _, _ in spans]
    longest = max(b - a for a, b, _ in spans)  # a span starting earlier than this before a word cannot hold it

    def is_removed(w: Word) -> bool:
        keys = _tokens(w.text)
        for k in range(bisect.bisect_right(starts, w.start + 1e-6) - 1, -1, -1):
            a, b, text = spans[k]
            if a < w.start - longest - 1e-6:
                break
            if w.end <= b + 1e-6 and all(key in text for key in keys):
                return True
        return False

    return [w for w in words if not is_removed(w)]


def unaccounted(words: Sequence[Word], shown: Sequence[str], removed: Sequence[Removal] = ()) -> list[Word]:
    """The words of ``words`` (a transcript's, in time order) that are neither in the ``shown`` text (the cues'
    lines, in order, speaker labels and dashes stripped) nor recorded in ``removed`` (a removal of stage ``"cues"``
    whose span holds the word and whose text has it: ``shown_words``). Empty when nothing was lost: cue building
    checks it on every file.

    Text is compared without case, punctuation or spaces, so that line breaks and words cut in pieces compare
    alike; where the two differ, the words missing are found by ``difflib.SequenceMatcher`` over words (characters
    in scripts written without spaces)."""
    import difflib

    kept = shown_words(words, removed)
    if "".join(_norm(w.text).replace(" ", "") for w in kept) == "".join(_norm(t).replace(" ", "") for t in shown):
        return []
    said = [(k, w) for w in kept for k in _tokens(w.text)]
    seen = [k for text in shown for k in _tokens(text)]
    found = [False] * len(said)
    matcher = difflib.SequenceMatcher(None, [k for k, _ in said], seen, autojunk=False)
    for block in matcher.get_matching_blocks():
        found[block.a : block.a + block.size] = [True] * block.size
    lost: list[Word] = []
    for (_, w), ok in zip(said, found):
        if not ok and (not lost or lost[-1] is not w):
            lost.append(w)
    return lost


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
    words: Sequence[Word], speech: Sequence[tuple[float, float]] | None, pad: float, pause: float = 1.0
) -> tuple[Word, ...]:
    """Words that overlap a VAD speech region widened by ``pad`` seconds on each side, and the rest of each sentence
    such a word starts.

    ``speech`` is a sequence of (start, end) seconds, e.g. from silero-vad; ``None`` means no VAD ran and
    keeps every word. An empty sequence means the VAD found no speech: every word is dropped.

    A sentence that starts on speech the VAD heard is kept to its end (``cues.width.ends_sentence``) as long as no
    pause of ``pause`` seconds or more parts its words: under loud music the VAD loses the end of an utterance
    ("I'm in New Jersey now though." heard up to "New"), while what Whisper invents over silence or music is whole
    sentences of their own ("Thanks for watching!"), which are dropped.
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
    kept: list[Word] = []
    carried = 0
    in_sentence = False  # the previous word was kept and did not end its sentence
    for w in words:
        i = bisect.bisect_right(starts, max(w.end, w.start)) - 1
        if i >= 0 and merged[i][1] >= w.start:
            kept.append(w)
        elif in_sentence and w.start - kept[-1].end < pause:
            kept.append(w)
            carried += 1
        else:
            in_sentence = False
            continue
        in_sentence = not ends_sentence(w.text)
    if len(kept) < len(words):
        logger.info("dropped %d words outside VAD speech regions", len(words) - len(kept))
    if carried:
        logger.info("kept %d words past the VAD's speech regions: the end of a sentence begun on speech", carried)
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


MAX_SAID_AGAIN = 2  # a cue said again after a pause is real ("Hello? ... Hello?"); a third time in a row is a loop


def drop_repeats(groups: Sequence[Sequence[Word]], pause: float = 1.0, max_cps: float = 17.0) -> list[Sequence[Word]]:
    """Word groups without the repeats of a loop. Groups repeat each other when they have the same speaker, the
    same language (``Word.language``: the same digits counted in two languages are no repeat) and the same text
    (case and punctuation ignored). Of a run of repeats, the first is kept; a second one is kept when it follows
    after a pause of ``pause`` seconds or more and is not squashed (``_squashed_span`` with ``max_cps``): the same
    words said again. A run of more than ``MAX_SAID_AGAIN`` is a loop (Whisper repeating a line window after window
    over music): only its first group is kept."""

    def key(g: Sequence[Word]) -> tuple[str | None, str | None, str] | None:
        text = _norm("".join(w.text for w in g)) if g else ""
        return (g[0].speaker, g[0].language, text) if text else None

    runs: list[list[Sequence[Word]]] = []
    for g in groups:
        if runs and key(g) is not None and key(g) == key(runs[-1][0]):
            runs[-1].append(g)
        else:
            runs.append([g])
    kept: list[Sequence[Word]] = []
    for run in runs:
        kept.append(run[0])
        if len(run) == MAX_SAID_AGAIN:
            again = run[1]
            if again[0].start - run[0][-1].end >= pause and not _squashed_span(again, max_cps):
                kept.append(again)
    if len(kept) < len(groups):
        logger.info("dropped %d cues repeating the previous cue", len(groups) - len(kept))
    return kept


def _sentences(words: Sequence[Word]) -> list[tuple[int, int]]:
    """``(first, end)`` index ranges of the sentences of ``words``: cut after every sentence end."""
    out, first = [], 0
    for i, w in enumerate(words):
        if ends_sentence(w.text):
            out.append((first, i + 1))
            first = i + 1
    if first < len(words):
        out.append((first, len(words)))
    return out


def drop_repeated_sentences(
    words: Sequence[Word], segment_of: Sequence[int] | None = None, max_cps: float = 17.0
) -> tuple[Word, ...]:
    """``words`` without each sentence that repeats the sentence right before it (same words, case and punctuation
    ignored, at least ``MIN_REPEATED_WORDS`` words) when the two come from different segments (``segment_of[i]``:
    the segment of word ``i``; ``None``: every word from its own decoding, so any repeat counts) or when the repeat is
    squashed (``drop_squashed``'s test with ``max_cps``), and both are in the same language (``Word.language``).
    The first occurrence is kept. A speaker who really says a sentence twice in a row
    does so inside one segment, with normal timing, and is kept.
    """
    out = list(words)
    seg = list(segment_of) if segment_of is not None else list(range(len(out)))
    removed = 0
    changed = True
    while changed:  # a sentence said three times: drop the repeats one after the other
        changed = False
        spans = _sentences(out)
        for (a0, a1), (b0, b1) in zip(spans, spans[1:]):
            first = [_norm(w.text) for w in out[a0:a1]]
            second = [_norm(w.text) for w in out[b0:b1]]
            if first != second or len([k for k in first if k]) < MIN_REPEATED_WORDS:
                continue
            if out[a0].language != out[b0].language:  # "1, 2, 3" counted in two languages is no loop
                continue
            if seg[a0] == seg[b1 - 1] and not _squashed_span(out[b0:b1], max_cps):
                continue
            del out[b0:b1], seg[b0:b1]
            removed += b1 - b0
            changed = True
            break
    if removed:
        logger.warning("removed %d words of a sentence repeated across decoding windows", removed)
    return tuple(out)


def _squashed_span(words: Sequence[Word], max_cps: float = 17.0) -> bool:
    """Whether ``words`` (at least ``SQUASHED_WORDS``) are timed in under ``SQUASHED_SECONDS`` or read faster than
    ``SQUASHED_CPS_FACTOR`` x ``max_cps`` characters per second (spaces not counted)."""
    if len(words) < SQUASHED_WORDS:
        return False
    span = words[-1].end - words[0].start
    chars = sum(len(w.text.strip()) for w in words)
    return span < SQUASHED_SECONDS or chars > SQUASHED_CPS_FACTOR * max_cps * span


def drop_squashed(words: Sequence[Word], max_cps: float) -> tuple[Word, ...]:
    """``words`` without runs of squashed word timestamps: every ``SQUASHED_WORDS`` consecutive words that together
    last under ``SQUASHED_SECONDS`` seconds or hold more than ``SQUASHED_CPS_FACTOR`` x ``max_cps`` characters per
    second of their span (the words of the next such windows that overlap it too). Normal speech peaks at about
    20 characters per second; 3 x 17 = 51 is an alignment that found no audio for the words.
    """
    n = SQUASHED_WORDS
    bad = [False] * len(words)
    for i in range(len(words) - n + 1):
        if _squashed_span(words[i : i + n], max_cps):
            for k in range(i, i + n):
                bad[k] = True
    kept = tuple(w for w, b in zip(words, bad) if not b)
    if len(kept) < len(words):
        logger.warning(
            "dropped %d words with squashed word timestamps (%s)",
            len(words) - len(kept),
            " ".join(w.text.strip() for w, b in zip(words, bad) if b)[:80],
        )
    return kept


def clean_transcript(transcript: Transcript, max_cps: float = 17.0, stage: str = "transcript") -> Transcript:
    """A copy of ``transcript`` without repeated sentences across segments (``drop_repeated_sentences``) and without
    squashed words (``drop_squashed``); segments left without words are dropped, the others get their remaining
    words' text and times. Segments without words (text only) are kept as they are. What was removed is added to
    ``removed`` (``Removal`` with ``stage``), in time order."""
    words = [w for s in transcript.segments for w in s.words]
    owner = [k for k, s in enumerate(transcript.segments) for _ in s.words]
    unrepeated = drop_repeated_sentences(words, owner, max_cps)
    kept = drop_squashed(unrepeated, max_cps)
    if len(kept) == len(words):
        return transcript
    record = removals(words, unrepeated, "repeated_sentence", stage) + removals(unrepeated, kept, "squashed", stage)
    alive = {id(w) for w in kept}
    segments = []
    for s in transcript.segments:
        if not s.words:
            segments.append(s)
            continue
        ws = tuple(w for w in s.words if id(w) in alive)
        if not ws:
            continue
        if len(ws) == len(s.words):
            segments.append(s)
            continue
        start = s.start if ws[0] is s.words[0] else ws[0].start
        end = s.end if ws[-1] is s.words[-1] else ws[-1].end
        segments.append(replace(s, start=start, end=end, text="".join(w.text for w in ws), words=ws))
    removed = tuple(sorted((*transcript.removed, *record), key=lambda r: (r.start, r.end)))
    return replace(transcript, segments=tuple(segments), removed=removed)


def with_removals(transcript: Transcript, removed: Sequence[Removal]) -> Transcript:
    """``transcript`` with the cue stage's ``removed`` (``build_cues``) as its record of stage ``"cues"``, replacing
    any earlier one (a transcript read back and laid out anew), beside its ``"transcript"`` stage record; all in time
    order."""
    earlier = [r for r in transcript.removed if r.stage != "cues"]
    merged = tuple(sorted((*earlier, *removed), key=lambda r: (r.start, r.end)))
    return transcript if merged == transcript.removed else replace(transcript, removed=merged)


def log_removals(name: str, removed: Sequence[Removal]) -> None:
    """One ``-v`` (INFO) line per removal of ``name``'s transcript: reason, span in seconds and text."""
    for r in removed:
        logger.info("%s: removed %.2f-%.2f s (%s): %s", name, r.start, r.end, r.reason, r.text[:120])
