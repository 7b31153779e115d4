"""Language per speech region: smoothing the detections over the file and planning chunks of one language each.

Pure logic on seconds and probabilities, no numpy or torch. With ``--language`` absent, Whisper's language detection
runs on every speech region (``language_id.region_probabilities``); one region's detection is noisy when the region
is short (a one-word "okay" can come out Welsh), so the languages are chosen for the whole file at once, as the
most likely sequence under a simple model (Viterbi decoding of a two-parameter hidden Markov model):

    score(sequence) = sum over regions r of  w(r) * log max(p_r(language_r), PROBABILITY_FLOOR)
                      - SWITCH_COST * (number of changes of language between consecutive regions)
    w(r) = min(1, duration(r) / FULL_WEIGHT_S)

A region as long as ``FULL_WEIGHT_S`` counts its own detection fully; a shorter one counts for less, so a short
region whose detection is unsure (or wrong) takes the language of its neighbours, while a sentence or a clip in
another language outweighs the cost of switching into it and back (``2 * SWITCH_COST``). A region whose detection is
at least ``SURE_P`` sure keeps its language whatever its neighbours (a quoted sentence in another language). The
constants were chosen on a tuning set of concatenated clips and an English-only file, and checked on held-out files
that no tuning step saw (docs/multilingual.md).

A window of Whisper must be decoded with one language token, so a chunk (``chunking.Chunk``) whose regions got
different languages is cut into runs of consecutive regions of one language (``split_by_language``), each decoded
on its own with its language.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from whisper_subtitler.decoding.chunking import Chunk, join_regions

SWITCH_COST = 1.5  # nats: the log-probability evidence a change of language must outweigh
FULL_WEIGHT_S = 1.0  # seconds: regions this long or longer count their own detection fully
SURE_P = 0.9  # a region whose detection gives one language at least this keeps it, whatever its neighbours
PROBABILITY_FLOOR = 1e-4  # no language is impossible: a floor on every probability (log 1e-4 = -9.2 nats)
CANDIDATE_P = 0.05  # languages at least this likely in some region compete in the smoothing


@dataclass(frozen=True, slots=True)
class RegionLanguage:
    """Whisper's language detection on one speech region from ``start`` to ``end`` (seconds): ``probabilities``
    maps ISO 639-1 codes (Whisper's language tokens) to probabilities that sum to 1 over the languages allowed."""

    start: float
    end: float
    probabilities: Mapping[str, float]

    @property
    def duration(self) -> float:
        """Seconds of speech, ``end - start``."""
        return self.end - self.start

    @property
    def best(self) -> str:
        """The most likely language of the region alone."""
        return max(self.probabilities, key=lambda k: self.probabilities[k])


def restrict(probabilities: Mapping[str, float], allowed: Sequence[str] | None) -> dict[str, float]:
    """``probabilities`` (language -> p) kept to the ``allowed`` languages and scaled to sum to 1 (all of them
    when ``allowed`` is ``None`` or empty). A language allowed but absent gets probability 0 before scaling; when
    all the allowed ones are 0, they are equally likely. Raises ``ValueError`` when nothing is left."""
    if not allowed:
        kept = dict(probabilities)
    else:
        kept = {language: float(probabilities.get(language, 0.0)) for language in allowed}
    if not kept:
        raise ValueError("no language to choose from")
    total = sum(kept.values())
    if total <= 0:
        return {language: 1.0 / len(kept) for language in kept}
    return {language: p / total for language, p in kept.items()}


def smooth_languages(
    regions: Sequence[RegionLanguage],
    *,
    switch_cost: float = SWITCH_COST,
    full_weight_s: float = FULL_WEIGHT_S,
    sure_p: float = SURE_P,
) -> list[str]:
    """The language of each of ``regions`` (in time order): the most likely sequence under the model of the module
    docstring (Viterbi; ties keep the earlier language, then the alphabetically first), where a region at least
    ``sure_p`` sure of its best language keeps it. Only languages at least ``CANDIDATE_P`` likely in some region, or
    the best of some region, compete. Raises ``ValueError`` for
    ``full_weight_s <= 0`` or a negative ``switch_cost``."""
    if full_weight_s <= 0 or switch_cost < 0:
        raise ValueError("full_weight_s must be positive and switch_cost not negative")
    if not regions:
        return []
    candidates = sorted(
        {r.best for r in regions} | {k for r in regions for k, p in r.probabilities.items() if p >= CANDIDATE_P}
    )

    rank = {k: -i for i, k in enumerate(candidates)}  # ties keep the earlier language in ``candidates``

    def emissions(r: RegionLanguage) -> dict[str, float]:
        best = r.best
        sure = r.probabilities[best] >= sure_p
        weight = min(1.0, max(r.duration, 0.0) / full_weight_s)
        return {
            k: -math.inf
            if sure and k != best
            else weight * math.log(max(float(r.probabilities.get(k, 0.0)), PROBABILITY_FLOOR))
            for k in candidates
        }

    score = emissions(regions[0])
    back: list[dict[str, str]] = []
    for r in regions[1:]:
        leader = max(candidates, key=lambda k: (score[k], rank[k]))
        emission = emissions(r)
        pointers, new = {}, {}
        for k in candidates:
            stay, switch = score[k], score[leader] - switch_cost
            pointers[k] = k if stay >= switch else leader
            new[k] = max(stay, switch) + emission[k]
        back.append(pointers)
        score = new
    last = max(candidates, key=lambda k: (score[k], rank[k]))
    path = [last]
    for pointers in reversed(back):
        path.append(pointers[path[-1]])
    return path[::-1]


def to_check(regions: Sequence[RegionLanguage], languages: Sequence[str], check_p: float) -> list[int]:
    """The indices of the ``regions`` whose smoothed ``languages`` overruled their own detection, and whose own
    detection is at least ``check_p`` sure of its best language: the regions to decode in both languages
    (``language_plan``). A region shorter than ``FULL_WEIGHT_S`` is left out when its own best language is nowhere the
    smoothed language of a region at least ``FULL_WEIGHT_S`` long: Whisper's detection and scores say least on a
    word or two, and a language heard nowhere else is more likely a misheard "Hello?" (real telephone speech
    detected as Korean, Japanese or Chinese) than one word in a language the file never speaks at length."""
    heard = heard_at_length(regions, languages)
    return [
        k
        for k, (r, language) in enumerate(zip(regions, languages))
        if r.best != language
        and r.probabilities[r.best] >= check_p
        and (r.duration >= FULL_WEIGHT_S or r.best in heard)
    ]


def heard_at_length(regions: Sequence[RegionLanguage], languages: Sequence[str]) -> set[str]:
    """The smoothed ``languages`` of the ``regions`` at least ``FULL_WEIGHT_S`` long: the languages the file speaks
    for a second at a time somewhere."""
    return {language for r, language in zip(regions, languages) if r.duration >= FULL_WEIGHT_S}


def in_other_languages(regions: Sequence[RegionLanguage], languages: Sequence[str]) -> tuple[str | None, list[int]]:
    """The file's main language (the smoothed language of the most seconds of ``regions``; the first on a tie) and
    the indices of the regions whose smoothed ``languages`` is another: the regions whose own transcript must hold up
    (``language_plan``). On real English telephone speech, under music or noise, Whisper detected one-word answers
    ("okay", "then", "hello") as Thai, Korean or Chinese 0.6-0.9 sure, and a whole utterance as Hawaiian; the
    smoothing kept them, as it keeps a real clip in another language, and most of their transcripts in that
    language then failed (a mean token log-probability under Whisper's own threshold, or Latin letters for Chinese),
    where the clips did not. ``(None, [])`` without regions."""
    main = main_language((language, r.duration) for r, language in zip(regions, languages))
    if main is None:
        return None, []
    return main, [k for k, language in enumerate(languages) if language != main]


# Whisper's languages that are not written in the Latin alphabet (Chinese, Japanese, Korean, Thai, Cyrillic, Arabic,
# Hebrew, Greek, Indic and other scripts): a transcript "in" one of them written in Latin letters is not in it.
NON_LATIN = frozenset(
    "am ar as ba be bg bn bo el fa gu he hi hy ja ka kk km kn ko lo mk ml mn mr my ne pa ps ru sa sd si ta te tg th "
    "tt uk ur yi yue zh".split()
)


def in_its_script(text: str, language: str) -> bool:
    """False when ``language`` (ISO 639-1) is one of :data:`NON_LATIN` and most letters of ``text`` are Latin (a-z,
    A-Z): Whisper decoding English speech with the Chinese token wrote "我 Didn't know you were there". True
    otherwise, and for text without letters."""
    letters = [c for c in text if c.isalpha()]
    if language not in NON_LATIN or not letters:
        return True
    return sum(c.isascii() for c in letters) * 2 <= len(letters)


def regions_in(chunk: Chunk, speech: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """The speech regions (seconds, sorted, disjoint) that lie in ``chunk``, cut to its bounds: the units of language
    detection, finer than ``chunk.regions``, which are joined across pauses shorter than ``chunking.MERGE_GAP_S``."""
    inside = [(max(a, chunk.start), min(b, chunk.end)) for a, b in speech if b > chunk.start and a < chunk.end]
    return [(a, b) for a, b in inside if b > a] or list(chunk.regions)


def split_by_language(
    chunk: Chunk, regions: Sequence[tuple[float, float]], languages: Sequence[str]
) -> list[tuple[Chunk, str]]:
    """``chunk`` cut into runs of consecutive speech ``regions`` (``regions_in(chunk, ...)``) of one language
    (``languages``, one per region): ``[(chunk, language)]`` when all agree, else one chunk per run, from its first
    region's start to its last one's end, its regions joined as ``chunking.plan_chunks`` joins them, with the
    chunk's index (the runs stay in time order). Raises ``ValueError`` when the lengths differ or are 0."""
    if len(languages) != len(regions) or not regions:
        raise ValueError(f"{len(languages)} languages for {len(regions)} regions")
    runs: list[tuple[list[tuple[float, float]], str]] = []
    for region, language in zip(regions, languages):
        if runs and runs[-1][1] == language:
            runs[-1][0].append(region)
        else:
            runs.append(([region], language))
    if len(runs) == 1:
        return [(chunk, runs[0][1])]
    return [(Chunk(chunk.index, rs[0][0], rs[-1][1], tuple(join_regions(rs))), language) for rs, language in runs]


def main_language(spans: Iterable[tuple[str | None, float]]) -> str | None:
    """The language spoken longest: ``spans`` are ``(language, seconds)`` pairs (segments, regions); the first
    language wins a tie; ``None`` without any."""
    totals: dict[str, float] = {}
    for language, seconds in spans:
        if language:
            totals[language] = totals.get(language, 0.0) + max(seconds, 0.0)
    return max(totals, key=lambda k: totals[k]) if totals else None


WINDOW_SURE_P = 0.9  # a window's own detection at least this sure of one language speaks for its agreeing regions
SLICE_SURE_P = 0.5  # in a window less sure, a region's sliced detection must be this sure of the window's language


def screened(
    window: Mapping[str, float],
    sliced: Sequence[Mapping[str, float]],
    quiet: Sequence[Mapping[str, float]] | None = None,
) -> list[Mapping[str, float] | None]:
    """The detection each region of one window takes without being encoded alone, or ``None`` where it must be.

    ``window``: the window's own detection (language -> p); ``sliced``: each region's detection with the
    cross-attention limited to its frames (``language_id.sliced_probabilities``), one per region, empty for a
    window of one region (whose detection is the window's: ``[window]``); ``quiet``: the same with one second of
    encoded silence after the frames (``quiet_spans``), one per region, or ``None`` (``screened_windows`` gives it
    only where every window names one language).

    - A region whose sliced detection names the window's language takes the window's detection when the window is
      at least ``WINDOW_SURE_P`` sure; in a window less sure, it takes its sliced detection when that is at least
      ``SLICE_SURE_P`` sure, and is examined alone otherwise (a French clip heard as French 0.26 by the slice was
      smoothed into its Japanese neighbours; alone it is French 1.00).
    - A region whose sliced detection names another language is examined alone (``None``), however sure the window:
      an Italian clip in a window 0.97 sure of Portuguese still gave Portuguese 0.08, no less than synthetic English
      that the slice hears as Finnish gave English (0.06-0.2), so no threshold on that probability tells them apart
      (docs/multilingual.md). Unless nothing but that slice speaks for the other language: the window's own
      detection gives it less than ``CANDIDATE_P``, and the quiet slice names the window's language; the region is
      then judged by its quiet slice as above. Whisper's detection expects silence after the speech, which a slice
      lacks: English telephone speech sliced out of windows 0.99 sure of English was heard as Korean, Hawaiian or
      Malayalam, languages those windows give less than 0.001, and heard as English with the silence. On the tuning
      files (clips in five languages, one clip inside an English conversation, English only) the rule spares no
      region in another language than its window's (``bench/language_screen.py``)."""
    if not sliced:
        return [window]
    language = _best(window)
    sure = window[language] >= WINDOW_SURE_P

    def agreeing(p: Mapping[str, float]) -> Mapping[str, float] | None:
        if sure:
            return window
        return p if p[language] >= SLICE_SURE_P else None

    out: list[Mapping[str, float] | None] = []
    for k, p in enumerate(sliced):
        heard = _best(p)
        if heard == language:
            out.append(agreeing(p))
        elif quiet is not None and window.get(heard, 0.0) < CANDIDATE_P and _best(quiet[k]) == language:
            out.append(agreeing(quiet[k]))
        else:
            out.append(None)
    return out


class Screens(NamedTuple):
    """One window's screen (``language_id.sliced_probabilities``): its own detection, each region's slice, and each
    region's quiet slice (the slice with encoded silence), one per region; both lists empty for a window of one
    region."""

    window: Mapping[str, float]
    sliced: Sequence[Mapping[str, float]]
    quiet: Sequence[Mapping[str, float]]


def screened_windows(
    windows: Sequence[Screens], file: FileLanguage | None = None
) -> list[list[Mapping[str, float] | None]]:
    """``screened`` for every window planned together, one list per window; ``screened_in`` instead when ``file``
    (``file_language`` of the windows) is sure. The quiet slices count only when every
    window names the same language: where the windows name several, a short clip's quiet slice can take its window's
    language (a 1-s "hola mundo" inside a French window, Spanish counting inside an Italian one, on held-out files
    of clips in five languages), while in a file in one language a dissent that only the slice without silence
    hears is no evidence of another language."""
    if file is not None and file.sure:
        return [screened_in(file, w.window, w.sliced, w.quiet) for w in windows]
    one_language = len({_best(w.window) for w in windows}) == 1
    return [screened(w.window, w.sliced, w.quiet if one_language else None) for w in windows]


FILE_SURE_P = 0.75  # the windows' detections, averaged over their speech, this sure of one language: the file's


class FileLanguage(NamedTuple):
    """The language of a whole file (or of a piece of one transcribed in pieces) from its windows' own detections:
    ``probabilities`` (language -> p) are the windows' detections averaged with each window weighted by its
    seconds of speech, ``language`` the most likely one and ``probability`` its share."""

    language: str
    probability: float
    probabilities: Mapping[str, float]

    @property
    def sure(self) -> bool:
        """Whether the windows agree enough (``FILE_SURE_P``) for the file's language to be the prior that every
        region must overcome with strong evidence (``screened_in``, ``held_to_file``)."""
        return self.probability >= FILE_SURE_P

    def hears(self, language: str) -> bool:
        """Whether the windows themselves give ``language`` some weight (``CANDIDATE_P``, the smoothing's bar for a
        language to compete): a language the file may switch into, whose regions keep their own evidence."""
        return self.probabilities.get(language, 0.0) >= CANDIDATE_P


def file_language(windows: Sequence[tuple[float, Mapping[str, float]]]) -> FileLanguage | None:
    """The file's language from ``windows``: ``(seconds of speech, language -> p)`` per 30-s window, Whisper's own
    detection on each (the most reliable detection Whisper makes: a whole window of context). ``None`` without
    speech. This is the decision faster-whisper's batched pipeline and openai-whisper's CLI make once per file (on
    the first window only); here it is the prior of the per-region decision, not the decision itself."""
    total = sum(max(seconds, 0.0) for seconds, _ in windows)
    if total <= 0:
        return None
    mean: dict[str, float] = {}
    for seconds, p in windows:
        for language, q in p.items():
            mean[language] = mean.get(language, 0.0) + max(seconds, 0.0) / total * float(q)
    best = max(mean, key=lambda k: (mean[k], k))
    return FileLanguage(best, mean[best], mean)


def screened_in(
    file: FileLanguage,
    window: Mapping[str, float],
    sliced: Sequence[Mapping[str, float]],
    quiet: Sequence[Mapping[str, float]] = (),
) -> list[Mapping[str, float] | None]:
    """``screened`` for a window of a file whose language is sure (``FileLanguage.sure``): a region is examined
    alone (``None``) only when its slice, with or without silence after it, names a language other than the file's
    that the windows themselves hear (``FileLanguage.hears``) or that the slice is at least ``SLICE_SURE_P`` sure of;
    every other region takes the window's detection when the window names the file's language, else the file's. A
    region examined alone keeps a language the windows do not hear only when that detection is sure of it
    (``held_to_file``). Ten seconds of English before forty of Spanish: the windows give English its share, and the
    English regions keep their own detections (the smoothing then keeps them English together).
    Why: on real acted Dutch, regions encoded alone were heard as German, Albanian,
    Swahili, Chinese or Greek (0.4-0.86 sure) inside windows 0.79-0.98 sure of Dutch, and every such region kept
    its language and was decoded alone in it; a clip of another language inside a file in one language is still
    heard alone as surely as before (French 1.00 alone, where its slice said 0.26)."""
    own = window if _best(window) == file.language else file.probabilities
    if not sliced:  # a window of one region: the region's own detection, with a whole window of context
        return [held_to_file(file, window)]
    out: list[Mapping[str, float] | None] = []
    for k, p in enumerate(sliced):
        heard = [q for q in (p, quiet[k] if k < len(quiet) else None) if q is not None]
        other = [
            q for q in heard if _best(q) != file.language and (q[_best(q)] >= SLICE_SURE_P or file.hears(_best(q)))
        ]
        out.append(None if len(other) == len(heard) else own)
    return out


def held_to_file(file: FileLanguage | None, probabilities: Mapping[str, float]) -> Mapping[str, float]:
    """A region's detection (``probabilities``) as the file's prior lets it stand: in a file whose language is sure,
    a region that names a language the windows do not hear (``FileLanguage.hears``) less than ``SURE_P`` sure takes
    the file's detection instead (a region must beat the file's language with strong evidence); unchanged
    otherwise."""
    if file is None or not file.sure:
        return probabilities
    best = _best(probabilities)
    if best == file.language or probabilities[best] >= SURE_P or file.hears(best):
        return probabilities
    return file.probabilities


def _best(p: Mapping[str, float]) -> str:
    return max(p, key=lambda c: p[c])
