"""Cue building: from timed words (and their speakers) to subtitle cues that meet the readability rules.

Rules (Netflix Timed Text Style Guide, English template), options in ``CueOptions``:

- a cue never mixes two speakers, except a dialogue cue (``dialogue``: two short utterances of two
  speakers, one line each after a dash), and a pause of ``pause`` seconds or more always ends a cue;
- within such a run of words, cue boundaries are chosen by dynamic programming over word positions,
  minimising a cost made of: a fixed cost per cue (fewer, fuller cues), the reading-speed and minimum-duration
  shortfall (the time a cue needs against the time it can get before the next word), the line-break penalty
  of the boundary (after a sentence end is free, between article and noun is forbidden; ``linebreak``), a
  bonus for a pause at the boundary, and a cost for a sentence end left inside a cue;
- squashed words and sentences repeated across segments never reach a cue (``guards``); every word a guard
  removes is recorded (``types.Removal``), and every other word of the transcript is in a cue;
- hard limits: every cue fits ``max_lines`` lines of ``max_line_width`` columns, and its speech lasts at most
  ``max_duration`` (unless one word alone is longer);
- each cue takes its start from its first word and its end from its last word (``timing``), then moves to the
  shot changes of ``options.shot_changes`` when they are given as times (``shots``: Netflix's timing to the shot
  change);
- the speaker style (``labels``) decides which cues carry a speaker label: room for it is reserved on the
  first line of those cues only (in ``change`` style, the first cue after a speaker change).

Pure Python: no torch, no numpy, no ffmpeg. About 1 ms per 100 words.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import replace

from whisper_subtitler.cues.dialogue import one_line, pair_runs
from whisper_subtitler.cues.guards import (
    clean_transcript,
    collapse_loops,
    drop_improbable,
    drop_repeats,
    drop_silent_segments,
    drop_unvoiced,
    removals,
    removed_groups,
    unaccounted,
)
from whisper_subtitler.cues.guides import dialogue_dashes, for_language
from whisper_subtitler.cues.labels import (
    SpeakerStyle,
    forms_dialogue,
    several_speakers,
    shows_label,
    speaker_label,
)
from whisper_subtitler.cues.linebreak import Layout, Token, break_penalty, layout, tokenize
from whisper_subtitler.cues.options import CueOptions
from whisper_subtitler.cues.phrases import continuations
from whisper_subtitler.cues.shots import time_to_shots
from whisper_subtitler.cues.timing import Span, needed_duration, time_cues
from whisper_subtitler.cues.width import display_width, ends_sentence, is_spaceless
from whisper_subtitler.cues.words import repair_words
from whisper_subtitler.types import Cue, Removal, Transcript, Word

logger = logging.getLogger(__name__)

STRICT_ENV = "WHISPER_SUBTITLER_STRICT"  # set (the test suite does): a word lost between transcript and cues raises
CUE_COST = 4.0  # fixed cost of one more cue
SHORTFALL_COST = 40.0  # cost of a cue that gets none of the time it needs (scaled by the missing fraction)
PAUSE_BONUS = 4.0  # bonus of a boundary at a pause as long as ``pause``
INNER_SENTENCE_COST = 3.0  # cost of a sentence end inside a cue
LAYOUT_WEIGHT = 0.5  # weight of the cue's own line-break penalty
PRUNE_MARGIN = 1e-9  # a cue start is skipped only when its cost is sure to be higher by more than rounding


class _Context:
    """What every cost evaluation of one transcript needs."""

    def __init__(
        self,
        options: CueOptions,
        spaceless: bool,
        english: bool,
        style: SpeakerStyle,
        glue: frozenset[int] = frozenset(),
        language: str | None = None,
    ) -> None:
        self.options = options  # the rules of this language (cues.guides.for_language)
        self.spaceless = spaceless
        self.english = english
        self.style = style  # SpeakerStyle.none when the transcript has fewer than two speakers
        self.glue = glue  # ids of the words that continue the phrase before them (cues.phrases): no break before one
        self.dashes = dialogue_dashes(language)  # what starts each line of a dialogue cue (cues.guides)

    def joins(self, word: Word) -> bool:
        """Whether no line break or cue boundary may come before ``word`` (it continues a phrase or a word)."""
        return id(word) in self.glue if self.spaceless else not word.text[:1].isspace()

    def layout(self, words: Sequence[Word], labelled: bool = False) -> Layout | None:
        """Lines of a cue of ``words``; ``labelled``: its first line carries the speaker label."""
        return self.layout_tokens(self.tokens(words), words[0].speaker, labelled)

    def tokens(self, words: Sequence[Word]) -> list[Token]:
        """``linebreak.tokenize`` of ``words`` with this context's script and phrase glue."""
        return tokenize([w.text for w in words], self.spaceless, [id(w) in self.glue for w in words])

    def layout_tokens(self, tokens: Sequence[Token], speaker: str | None, labelled: bool) -> Layout | None:
        """``layout`` of the tokens of a cue whose first word is ``speaker``'s."""
        o = self.options
        return layout(
            tokens,
            max_width=o.max_line_width,
            max_lines=o.max_lines,
            first_line_indent=display_width(speaker_label(speaker)) if labelled and speaker is not None else 0,
            spaceless=self.spaceless,
            english=self.english,
        )

    def slicer(self, words: Sequence[Word]) -> Callable[[int, int], list[Token]]:
        """``tokens(words[i:j])`` for the boundaries ``i < j`` where a cue may start and end (no word of ``words``
        joins the one before it at ``i`` or ``j``), from one tokenization of ``words``: a token never spans such a
        boundary, so the slice's tokens are the whole run's between them, the first without its space. A run with a
        word of no text (which ``tokenize`` skips) is tokenized per slice."""
        if any(not w.text.strip() for w in words):
            return lambda i, j: self.tokens(words[i:j])
        first: list[int] = []  # first[k]: index of the token that holds word k
        tokens = tokenize([w.text for w in words], self.spaceless, [id(w) in self.glue for w in words], first)
        first.append(len(tokens))

        def tokens_of(i: int, j: int) -> list[Token]:
            part = tokens[first[i] : first[j]]
            if part and part[0].space_before:
                part[0] = Token(part[0].text, False)
            return part

        return tokens_of


def _chars(lines: Sequence[str], spaceless: bool) -> int:
    """Characters read in a cue (spaces count, line breaks count as a space where a space was)."""
    return sum(len(line) for line in lines) + (0 if spaceless else len(lines) - 1)


def _reading_chars(lines: Sequence[str], spaceless: bool, own: CueOptions, main: CueOptions) -> int:
    """The characters of a cue as the timing (at ``main.max_cps``) counts them so that it gets the reading time of its
    own language's speed (``own.max_cps``, ``cues.guides``): the same count when the two speeds are equal."""
    chars = _chars(lines, spaceless)
    return chars if own.max_cps == main.max_cps else math.ceil(chars * main.max_cps / own.max_cps)


def _phrase_glue(runs: Sequence[Sequence[Word]], language: str, spaceless: bool, forced: bool | None) -> frozenset[int]:
    """Ids of the words that continue the phrase before them (``phrases.continuations``), in the runs written without
    spaces (the main language's when ``spaceless``, a run's own otherwise; every run as ``forced`` says when set)."""
    glue: set[int] = set()
    for run in runs:
        own = run[0].language or language
        if not (forced if forced is not None else (spaceless if own == language else is_spaceless(own, ""))):
            continue
        glue.update(id(w) for w, joined in zip(run, continuations(own, [w.text for w in run])) if joined)
    return frozenset(glue)


def _split_giant_words(words: Sequence[Word], limit: int) -> list[Word]:
    """Words wider than a whole cue (``limit`` columns: a long URL) cut into pieces of ``limit`` columns,
    their time split evenly; each full piece fills a cue of its own. The one exception to "never break a word"."""
    out: list[Word] = []
    for w in words:
        text = w.text.strip()
        if display_width(text) <= limit:
            out.append(w)
            continue
        pieces, chunk = [], ""
        for char in text:
            if display_width(chunk + char) > limit:
                pieces.append(chunk)
                chunk = ""
            chunk += char
        pieces.append(chunk)
        step = (w.end - w.start) / len(pieces)
        for k, piece in enumerate(pieces):
            lead = w.text[: len(w.text) - len(w.text.lstrip())] if k == 0 else " "
            out.append(replace(w, text=lead + piece, start=w.start + k * step, end=w.start + (k + 1) * step))
    return out


def _split_runs(words: Sequence[Word], pause: float) -> list[list[Word]]:
    """Words cut at every speaker change, every change of language and every pause of ``pause`` seconds or more."""
    runs: list[list[Word]] = []
    for w in words:
        last = runs[-1][-1] if runs else None
        if last is not None and (w.speaker, w.language) == (last.speaker, last.language) and w.start - last.end < pause:
            runs[-1].append(w)
        else:
            runs.append([w])
    return runs


def _group_run(words: list[Word], limit_end: float, ctx: _Context, first_labelled: bool) -> list[list[Word]]:
    """Best cue boundaries for one run of words of one speaker, by dynamic programming.

    ``limit_end`` (seconds) is the latest time the run's last cue could stay on screen; ``first_labelled``
    whether the run's first cue carries the speaker label (every cue does in ``label`` style).
    """
    o = ctx.options
    n = len(words)
    spaceless = ctx.spaceless
    # Boundaries may fall before word k only where a line could break (not inside a word).
    can_cut = [True] + [not ctx.joins(w) for w in words[1:]] + [True]
    max_cols = o.max_line_width * o.max_lines
    cols = [0]
    for w in words:
        cols.append(cols[-1] + display_width(w.text))
    inf = float("inf")
    best = [inf] * (n + 1)
    back = [0] * (n + 1)
    best[0] = 0.0
    tokens_of = ctx.slicer(words)
    speaker = words[0].speaker
    labelled_all = ctx.style is SpeakerStyle.label
    # sentence_ends[k]: sentence ends among words[:k]; the penalty and the pause bonus of a boundary before word i
    sentence_ends = [0]
    for w in words:
        sentence_ends.append(sentence_ends[-1] + ends_sentence(w.text))
    penalties = [0.0] + [
        break_penalty(words[i - 1].text.strip(), words[i].text.strip(), spaceless, ctx.english) for i in range(1, n)
    ]
    bonuses = [0.0] + [PAUSE_BONUS * min(words[i].start - words[i - 1].end, o.pause) / o.pause for i in range(1, n)]
    for j in range(1, n + 1):
        if not can_cut[j]:
            continue
        avail_end = words[j].start - o.min_gap if j < n else limit_end
        starts = []  # the cue starts i that may end at j, found nearest first
        for i in range(j - 1, -1, -1):
            if not can_cut[i] or best[i] == inf:
                if cols[j] - cols[i] > max_cols + 1:
                    break
                continue
            if j - i > 1 and (cols[j] - cols[i] > max_cols + 1 or words[j - 1].end - words[i].start > o.max_duration):
                break
            starts.append(i)
        # Longest cue first, so that a good cost is known early and the shorter cues whose cost cannot be lower
        # (their cost without the layout and shortfall terms, both >= 0, already exceeds it) are never laid out.
        # Same result as trying them all: among equal costs the latest start wins (``<=``), as when the starts
        # were tried nearest first with ``<``.
        for i in reversed(starts):
            fixed = CUE_COST + INNER_SENTENCE_COST * (sentence_ends[j - 1] - sentence_ends[i])
            if i > 0:
                fixed += penalties[i] - bonuses[i]
            if best[i] + fixed > best[j] + PRUNE_MARGIN:
                continue
            lay = ctx.layout_tokens(tokens_of(i, j), speaker, (i == 0 and first_labelled) or labelled_all)
            if lay is None:
                continue
            need = needed_duration(_chars(lay.lines, spaceless), o)
            avail = min(o.max_duration, avail_end - words[i].start)
            cost = CUE_COST + LAYOUT_WEIGHT * lay.cost
            if need > avail:
                cost += SHORTFALL_COST * (need - max(avail, 0.0)) / need
            cost += INNER_SENTENCE_COST * (sentence_ends[j - 1] - sentence_ends[i])
            if i > 0:
                cost += penalties[i]
                cost -= bonuses[i]
            if best[i] + cost <= best[j]:
                best[j], back[j] = best[i] + cost, i
    if best[n] == inf:  # nothing fits (a word wider than two lines): one cue per word
        return [[w] for w in words]
    groups, j = [], n
    while j > 0:
        groups.append(words[back[j] : j])
        j = back[j]
    return groups[::-1]


def _cue_text(
    groups: Sequence[Sequence[Word]], context: Callable[[Sequence[Word]], _Context]
) -> list[tuple[tuple[str, ...], tuple[str, ...], tuple[str | None, ...]]]:
    """(lines, prefixes, line speakers) of each cue: its lines laid out, and what the speaker style shows.

    A group of two speakers is a dialogue cue: one line per speaker, each after a dialogue dash. Any other
    cue carries the label when ``shows_label`` says so for the speaker of the line shown before it.
    """
    out = []
    previous: str | None = None
    for k, g in enumerate(groups):
        ctx = context(g)
        speakers = tuple(dict.fromkeys(w.speaker for w in g))
        if len(speakers) == 2:
            cut = next(i for i, w in enumerate(g) if w.speaker != g[0].speaker)
            parts = (g[:cut], g[cut:])
            lines = tuple(
                one_line(p, ctx.options, ctx.spaceless, ctx.english)
                or ("" if ctx.spaceless else " ").join(w.text.strip() for w in p)
                for p in parts
            )
            out.append((lines, ctx.dashes, speakers))
        else:
            labelled = shows_label(ctx.style, g[0].speaker, previous, k == 0)
            # A label that no room was kept for (the cue before it was dropped by a guard) is still shown.
            lay = ctx.layout(g, labelled) or ctx.layout(g)
            lines = lay.lines if lay is not None else tuple(w.text.strip() for w in g)
            prefixes = (speaker_label(g[0].speaker),) if labelled and g[0].speaker is not None else ()
            out.append((lines, prefixes, ()))
        previous = g[-1].speaker
    return out


def build_cues(
    transcript: Transcript,
    options: CueOptions = CueOptions(),
    speech: Sequence[tuple[float, float]] | None = None,
    removed: list[Removal] | None = None,
) -> tuple[Cue, ...]:
    """Cues for ``transcript`` following the readability rules of ``options``.

    ``speech`` is an optional sequence of VAD speech regions (start, end seconds); words outside them are
    dropped (no cue over silence). Cues come out in time order, with ``start < end`` (at least one frame),
    at least ``options.min_gap`` seconds apart, each with one speaker (``Word.speaker``) or ``None`` (a
    dialogue cue: its first line's speaker, and ``line_speakers``), its lines (without speaker label), the
    label or dashes ``options.speaker_style`` shows (``Cue.prefixes``) and its words. With fewer than two
    speakers nothing is shown in any style. The transcript is not modified; an empty transcript gives no cues.

    ``removed``, when given, is extended with a ``Removal`` (stage ``"cues"``) for every run of words of the
    transcript's segments that a guard kept out of the cues. Every other word is in a cue; a word found in neither
    (``guards.unaccounted``) would be a bug: it is logged as an error, and raises ``AssertionError`` when the
    environment variable ``WHISPER_SUBTITLER_STRICT`` is set (the test suite sets it, so every file any test
    transcribes is held to the rule).
    """
    record: list[Removal] = []
    spaceless = options.spaceless
    if spaceless is None:
        spaceless = is_spaceless(transcript.language or None, transcript.text)
    language = (transcript.language or "en").lower()
    chosen, options = options, for_language(options, transcript.language or None)  # the main language's guide

    cleaned = clean_transcript(transcript, options.max_cps, stage="cues")
    record.extend(r for r in cleaned.removed if r not in transcript.removed)
    segments = drop_silent_segments(cleaned.segments)
    alive = {id(s) for s in segments}
    record.extend(Removal("silence", s.start, s.end, s.text.strip()) for s in cleaned.segments if id(s) not in alive)
    repaired = repair_words(
        segments, duration=transcript.duration, max_word_duration=options.max_word_duration, spaceless=spaceless
    )
    voiced = drop_unvoiced(repaired, speech, options.speech_pad, options.pause)
    words = collapse_loops(voiced, options.max_repeats)
    record += removals(repaired, voiced, "unvoiced") + removals(voiced, words, "loop")
    style = SpeakerStyle(options.speaker_style) if several_speakers(w.speaker for w in words) else SpeakerStyle.none
    glue = _phrase_glue(_split_runs(words, options.pause), language, spaceless, options.spaceless)
    ctx = _Context(options, spaceless, english=language.startswith("en"), style=style, glue=glue, language=language)
    contexts: dict[str | None, _Context] = {}

    def context(words: Sequence[Word]) -> _Context:
        """The context of a run or cue in one language: its own script, word lists and guide when it has one."""
        own = words[0].language if words else None
        if own is None or own == language or options.spaceless is not None:
            return ctx
        if own not in contexts:
            own_options = for_language(chosen, own)
            contexts[own] = _Context(own_options, is_spaceless(own, ""), own.startswith("en"), style, glue, own)
        return contexts[own]

    labels = style in (SpeakerStyle.change, SpeakerStyle.label)
    label = max((display_width(speaker_label(w.speaker)) for w in words if w.speaker), default=0) if labels else 0
    giant = options.max_line_width * options.max_lines - label
    runs = _split_runs(_split_giant_words(words, max(giant, 1)), options.pause)
    limit_ends: list[float] = []
    for k, run in enumerate(runs):
        if k + 1 < len(runs):
            limit_ends.append(runs[k + 1][0].start - options.min_gap)
        elif transcript.duration > 0:
            limit_ends.append(max(transcript.duration, run[-1].end))
        else:
            limit_ends.append(run[-1].end + options.max_duration)
    dialogue = set(pair_runs(runs, limit_ends, options, spaceless, ctx.english)) if forms_dialogue(style) else set()
    groups: list[list[Word]] = []
    for k, run in enumerate(runs):
        if k - 1 in dialogue:
            continue
        if k in dialogue:
            groups.append(run + runs[k + 1])
            continue
        previous = runs[k - 1][-1].speaker if k else None
        labelled = shows_label(style, run[0].speaker, previous, k == 0)
        groups.extend(_group_run(run, limit_ends[k], context(run), labelled))
    probable = drop_improbable(groups, options.min_cue_probability)
    kept = drop_repeats(probable, options.pause, options.max_cps)
    record += removed_groups(groups, probable, "improbable") + removed_groups(probable, kept, "repeated_cue")
    groups = kept

    texts = _cue_text(groups, context)
    spans = [
        Span(g[0].start, g[-1].end, _reading_chars(lines, context(g).spaceless, context(g).options, options), len(g))
        for g, (lines, _, _) in zip(groups, texts)
    ]
    times = time_cues(spans, options, transcript.duration)
    if not isinstance(options.shot_changes, str):  # times in seconds: the cues are timed by the shot changes
        times = time_to_shots(times, spans, options.shot_changes, options, transcript.duration)
    cues = tuple(
        Cue(start, end, lines, g[0].speaker, tuple(g), prefixes, line_speakers, g[0].language)
        for g, (lines, prefixes, line_speakers), (start, end) in zip(groups, texts, times)
    )
    record.sort(key=lambda r: (r.start, r.end))
    if lost := unaccounted(transcript.words, [line for c in cues for line in c.lines], record):
        message = f"words in no cue and removed by no guard: {''.join(w.text for w in lost)[:200]}"
        if os.environ.get(STRICT_ENV):
            raise AssertionError(message)
        logger.error(message)
    if removed is not None:
        removed.extend(record)
    return cues
