"""The language of every speech region of a file, and the chunks to decode with each language (``--language``
absent, or a list of languages, with a multilingual model).

    chunks encoded in batches (the encoder output kept for decoding, up to FEATURE_CACHE_BYTES)
      -> each window's own detection and each region's detection sliced from the window, one decoder step per
         window (language_id.sliced_probabilities)
      -> the file's language from the windows' own detections, averaged over their speech
         (code_switching.file_language); where they agree (FILE_SURE_P) and no languages are given, it is the prior
         of every region: a region is encoded alone only when its slice is fairly sure of another language, and
         keeps another language only when sure of it alone (code_switching.screened_in, held_to_file)
      -> otherwise the screen (code_switching.screened): regions heard in another language than their window's are
         encoded alone and detected alone, unless (where every window planned together names one language: the file, or
         each piece of a file transcribed in pieces) the window gives that language little weight and the
         region's slice followed by encoded silence (language_id.silence_keys_values) hears the window's language
      -> the languages smoothed over the file (code_switching.smooth_languages)
      -> regions whose own, fairly sure detection the smoothing overruled: decoded alone in both languages, the one
         Whisper decodes with the higher mean log-probability kept (not a region under a second whose language is
         heard nowhere else in the file: code_switching.to_check)
      -> the other regions in another language than the file's main one: decoded alone in it, and given the main
         language when that transcript does not hold up (empty, under Whisper's log-probability threshold, or not in
         the language's script; a loop does not count: code_switching.in_other_languages, in_its_script)
      -> chunks cut where the language changes (code_switching.split_by_language)

On a file in one language, the cost is one decoder step per window, the regions the screen sends on and a few
checks; the encoder output of the windows and the cross-attention keys and values the screen projects (up to
``CROSS_CACHE_BYTES``) are reused for decoding. Against ``--language en``, the whole run took
1.09-1.11x as long on the espeak-ng benchmark clip and 1.03x on 10 minutes of real telephone speech
(bench/notes/multilingual.md, "Quiet slices").
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from whisper_subtitler.decoding.chunking import Chunk, decoding_order
from whisper_subtitler.decoding.code_switching import (
    FILE_SURE_P,
    FileLanguage,
    RegionLanguage,
    Screens,
    file_language,
    held_to_file,
    in_its_script,
    in_other_languages,
    regions_in,
    screened_windows,
    smooth_languages,
    split_by_language,
    to_check,
)
from whisper_subtitler.decoding.features import SampleSource, chunk_samples

log = logging.getLogger(__name__)

LANGUAGE_VAD_SILENCE_MS = 200  # ms: pauses this long separate the units of language detection (the VAD's own: 500)
LANGUAGE_VAD_PAD_MS = 100  # ms of padding around each unit (the VAD's own: 200)
FEATURE_CACHE_BYTES = 512 * 2**20  # encoder output kept between detection and decoding; the rest is encoded again
CROSS_CACHE_BYTES = {"cpu": 2**30}  # cross-attention keys and values kept for decoding, by device type
CROSS_CACHE_BYTES_ELSE = 256 * 2**20  # on accelerators, where the memory is the batch's
ALONE_BATCH = 8  # regions encoded alone per encoder call
ALONE_MAX_S = 10.0  # seconds: a region encoded alone (detected, checked) is heard up to this far from its start
CHECK_P = 0.5  # a region the smoothing overruled is decoded in both languages when its own detection is this sure
# openai-whisper's ``logprob_threshold``: a transcript whose mean token log-probability is lower has failed (its
# ``transcribe`` decodes the window again); a region's transcript in a language must not fail to keep that language.
LOGPROB_THRESHOLD = -1.0
CHECK_TAIL_S = 1.0  # seconds of silence after a region decoded alone in its two candidate languages
WHOLE_WINDOW = (0.0, 30.0)  # seconds: a span that covers every frame of a window


def language_units(samples) -> tuple[tuple[float, float], ...]:
    """The speech regions of 16 kHz ``samples`` ``(n,)`` in which the language is detected (seconds): the VAD's
    regions (``vad.speech_regions``, same probabilities, no second network pass) cut at shorter pauses, since two
    people answering each other in two languages leave less than the VAD's half-second between them."""
    from whisper_subtitler.vad import VadOptions, speech_regions

    options = VadOptions(min_silence_duration_ms=LANGUAGE_VAD_SILENCE_MS, speech_pad_ms=LANGUAGE_VAD_PAD_MS)
    return speech_regions(samples, options)


@dataclass
class LanguagePlan:
    """The chunks to decode, each with its language (``items``, time order), the encoder output of the chunks that
    stayed whole (``features``: chunk index -> ``(n_audio_ctx, n_audio_state)`` tensor) and the decoder's
    cross-attention keys and values of some of them (``cross``: chunk index -> ``language_id.cross_keys_values`` of
    that window), and the file's ``regions`` with their smoothed ``languages`` (for the log and the main
    language)."""

    items: list[tuple[Chunk, str]]
    features: dict[int, Any] = field(default_factory=dict)
    regions: list[RegionLanguage] = field(default_factory=list)
    languages: list[str] = field(default_factory=list)
    cross: dict[int, list[tuple]] = field(default_factory=dict)
    file: FileLanguage | None = None


@dataclass
class Detections:
    """Each speech region's language probabilities (``regions``, time order), the regions of each chunk
    (``per_chunk``: chunk index -> regions in seconds) and the encoder output and cross-attention keys and values kept
    for decoding (``features``, ``cross``; see ``LanguagePlan``), and the file's language from the windows' own
    detections (``file``: ``code_switching.file_language``; ``None`` without speech)."""

    regions: list[RegionLanguage]
    per_chunk: dict[int, list[tuple[float, float]]]
    features: dict[int, Any]
    encoded_alone: int = 0
    cross: dict[int, list[tuple]] = field(default_factory=dict)
    file: FileLanguage | None = None


def detect_regions(
    model,
    chunks: Sequence[Chunk],
    speech: Sequence[tuple[float, float]],
    source: SampleSource,
    *,
    encode: Callable[[list[Chunk]], Any],
    batch_size: int,
    allowed: Sequence[str] = (),
) -> Detections:
    """The language probabilities of every speech region of ``chunks`` (the first three steps of the module
    docstring). ``speech``: the VAD regions (seconds, sorted, disjoint); ``encode``: the encoder output
    ``(B, n_audio_ctx, n_audio_state)`` of a batch of chunks; ``allowed``: the languages to choose from, all of the
    model's when empty. Call under ``torch.no_grad``."""
    from whisper_subtitler.decoding import language_id

    allowed_list = list(allowed) or None
    ordered = decoding_order(chunks)
    per_chunk: dict[int, list[tuple[float, float]]] = {}
    probabilities: dict[tuple[float, float], dict[str, float]] = {}
    alone: list[tuple[float, float]] = []
    windows: list[Screens] = []
    window_regions: list[list[tuple[float, float]]] = []
    features: dict[int, Any] = {}
    cross: dict[int, list[tuple]] = {}
    kept_bytes = cross_bytes = 0
    silence = language_id.silence_keys_values(model)
    for i in range(0, len(ordered), batch_size):
        group = list(ordered[i : i + batch_size])
        encoded = encode(group)
        keys_values = language_id.cross_keys_values(model, encoded)
        size = sum(t.numel() * t.element_size() for pair in keys_values for t in pair)
        keep_cross = cross_bytes + size <= CROSS_CACHE_BYTES.get(encoded.device.type, CROSS_CACHE_BYTES_ELSE)
        cross_bytes += size if keep_cross else 0
        for row, chunk in enumerate(group):
            row_keys_values = [(k[row], v[row]) for k, v in keys_values]
            if keep_cross:
                cross[chunk.index] = row_keys_values
            regions = regions_in(chunk, speech)
            per_chunk[chunk.index] = regions
            spans = [(a - chunk.start, b - chunk.start) for a, b in regions] if len(regions) > 1 else []
            # the whole window as the first span: Whisper's own detection, in the same decoder pass; then each region
            # without and with silence after it (code_switching.screened)
            window, *sliced = language_id.sliced_probabilities(
                model,
                encoded[row],
                [WHOLE_WINDOW, *spans],
                allowed_list,
                row_keys_values,
                quiet_spans=spans,
                silence=silence,
            )
            windows.append(Screens(window, sliced[: len(spans)], sliced[len(spans) :]))
            window_regions.append(regions)
            size = encoded[row].numel() * encoded[row].element_size()
            if kept_bytes + size <= FEATURE_CACHE_BYTES:
                features[chunk.index] = encoded[row]
                kept_bytes += size
    spoken = [sum(b - a for a, b in regions) for regions in window_regions]
    file = file_language(list(zip(spoken, (w.window for w in windows))))
    # The file's language is the prior of every region, unless the languages are given (``--language en,es``): the
    # user says the file mixes them, and one of them must not swallow the other.
    prior = None if allowed_list else file
    for regions, screens in zip(window_regions, screened_windows(windows, prior)):
        for region, screen in zip(regions, screens):
            if screen is None:
                alone.append(region)
            else:
                probabilities[region] = dict(screen)
    for region, p in _detect_alone(model, alone, source, allowed_list).items():
        probabilities[region] = dict(held_to_file(prior, p))
    regions_found = [RegionLanguage(a, b, probabilities[(a, b)]) for k in sorted(per_chunk) for a, b in per_chunk[k]]
    return Detections(regions_found, per_chunk, features, len(alone), cross, file)


def plan_languages(
    model,
    chunks: Sequence[Chunk],
    speech: Sequence[tuple[float, float]],
    source: SampleSource,
    *,
    encode: Callable[[list[Chunk]], Any],
    batch_size: int,
    allowed: Sequence[str] = (),
    fp16: bool = False,
) -> LanguagePlan:
    """Find the language of each speech region of ``chunks`` and plan their decoding (see the module docstring);
    arguments as ``detect_regions``; ``fp16``: decode in half precision (the regions decoded alone). Call under
    ``torch.no_grad``."""
    found = detect_regions(model, chunks, speech, source, encode=encode, batch_size=batch_size, allowed=allowed)
    languages = smooth_languages(found.regions)
    overruled = to_check(found.regions, languages, CHECK_P)
    main, others = in_other_languages(found.regions, languages)
    wanted: dict[int, tuple[str, ...]] = {k: (languages[k], found.regions[k].best) for k in overruled}
    wanted |= {k: (languages[k],) for k in others if k not in wanted}
    failed: list[int] = []
    for k, heard in _transcripts(model, found.regions, wanted, source, fp16, batch_size):
        if k in overruled:  # the better transcript; a tie keeps the smoothed language
            languages[k] = max(wanted[k], key=lambda language: heard[language].rank)
        elif not heard[languages[k]].holds:
            failed.append(k)
    # A region whose transcript in its own language does not hold takes the file's main language, unless Whisper
    # writes nothing in that one (a failing transcript still says more than none).
    if main is not None:
        for k, heard in _transcripts(model, found.regions, dict.fromkeys(failed, (main,)), source, fp16, batch_size):
            if heard[main].said:
                languages[k] = main
    for k in sorted(wanted):
        r = found.regions[k]
        log.debug("%.2f-%.2f s: %s (detected %s)", r.start, r.end, languages[k], r.best)
    by_region = {(r.start, r.end): language for r, language in zip(found.regions, languages)}
    items: list[tuple[Chunk, str]] = []
    features = found.features
    for chunk in sorted(chunks, key=lambda c: c.index):
        regions_here = found.per_chunk[chunk.index]
        parts = split_by_language(chunk, regions_here, [by_region[r] for r in regions_here])
        if len(parts) > 1:
            features.pop(chunk.index, None)
            found.cross.pop(chunk.index, None)
        items.extend(parts)
    log.info(
        "language per speech region: %d regions (%d encoded alone, %d checked by decoding), %s; %d chunks -> %d",
        len(found.regions),
        found.encoded_alone,
        len(wanted) + len(failed),
        ", ".join(f"{k} {v:.0f} s" for k, v in _seconds_by_language(found.regions, languages).items()),
        len(chunks),
        len(items),
    )
    if found.file is not None:
        log.info(
            "language of the file from its windows: %s (%s)%s",
            found.file.language,
            ", ".join(f"{k} {v:.2f}" for k, v in sorted(found.file.probabilities.items(), key=lambda kv: -kv[1])[:3]),
            "" if found.file.sure else f"; uncertain (under {FILE_SURE_P}): each region decided on its own evidence",
        )
    return LanguagePlan(items, features, found.regions, languages, found.cross, found.file)


def _seconds_by_language(regions: Sequence[RegionLanguage], languages: Sequence[str]) -> dict[str, float]:
    out: dict[str, float] = {}
    for r, language in zip(regions, languages):
        out[language] = out.get(language, 0.0) + r.duration
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


class Heard(NamedTuple):
    """A region's greedy transcript in one language, as the plan judges it: its mean token log-probability, whether
    it has any text (``said``), whether it reached its token budget (``looped``) and whether it is written in the
    language's script (``code_switching.in_its_script``)."""

    avg_logprob: float
    said: bool
    looped: bool
    in_script: bool

    @property
    def holds(self) -> bool:
        """Whether the transcript is in its language as far as Whisper can tell: some text, a mean token
        log-probability at least :data:`LOGPROB_THRESHOLD`, in the language's script. A loop does not count against
        it: a region decoded alone loops on confident words too ("Please bring the report with you." again and
        again at -0.08 in English), so it says nothing of the language."""
        return self.said and self.avg_logprob >= LOGPROB_THRESHOLD and self.in_script

    @property
    def usable(self) -> bool:
        """It holds and does not loop: what the check of an overruled region asks of each of its transcripts."""
        return self.holds and not self.looped

    @property
    def rank(self) -> tuple[bool, bool, float]:
        """The check's order: a usable transcript beats one that is not, then one that holds (looping) beats one that
        does not, then the higher mean log-probability wins ("hola mundo" between two French clips looped in both
        languages, Spanish at -0.14, French -0.31). A transcript that fails its language's own test never wins on
        log-probability alone: a 1.2-s English "This is Diane" heard as Russian looped at -0.24 in Latin letters and
        at -0.25 in English, and a first version of this order made it Russian."""
        return self.usable, self.holds, self.avg_logprob


def _transcripts(
    model,
    regions: Sequence[RegionLanguage],
    wanted: Mapping[int, Sequence[str]],
    source: SampleSource,
    fp16: bool,
    batch_size: int,
) -> Iterator[tuple[int, dict[str, Heard]]]:
    """``(k, {language: Heard})`` for each index ``k`` of ``wanted`` (in order): ``regions[k]`` decoded alone in each
    of ``wanted[k]``, ``batch_size`` regions at a time (:func:`_transcript_scores`)."""
    order = sorted(wanted)
    for start in range(0, len(order), batch_size):
        rows = order[start : start + batch_size]
        scored = _transcript_scores(model, [regions[k] for k in rows], [wanted[k] for k in rows], source, fp16)
        yield from zip(rows, scored)


def _transcript_scores(
    model,
    regions: Sequence[RegionLanguage],
    wanted: Sequence[Sequence[str]],
    source: SampleSource,
    fp16: bool,
) -> list[dict[str, Heard]]:
    """For each of ``regions``, its greedy transcript in each of its ``wanted`` languages, as :class:`Heard` (judged
    against :data:`LOGPROB_THRESHOLD`, openai-whisper's ``logprob_threshold``, under which its ``transcribe``
    decodes a window again, and the language's script). Each region is encoded alone
    (``language_id.encode_regions``) with ``CHECK_TAIL_S`` of silence after it: without it Whisper does not hear the
    speech end and loops on a short clip; with it a region costs a fraction of a 30-s window, and on real telephone
    speech it chose better than a 30-s window, which turned an English utterance Chinese (docs/multilingual.md).
    Call under ``torch.no_grad``."""
    import numpy as np

    from whisper_subtitler.decoding import decode, language_id
    from whisper_subtitler.decoding.chunking import token_budget

    tail = np.zeros(round(CHECK_TAIL_S * 16_000), dtype=np.float32)
    pieces = [
        np.concatenate(
            [chunk_samples(Chunk(0, r.start, min(r.end, r.start + ALONE_MAX_S), ((r.start, r.end),)), source), tail]
        )
        for r in regions
    ]
    features = language_id.encode_regions(model, pieces)
    budgets = [token_budget(min(r.duration, ALONE_MAX_S)) for r in regions]
    # Every (region, language) pair is a row of one batch, each row with its own language token: a decoding step
    # costs about as much for a few rows as for one, so the two languages of a check take the steps of the longer.
    pairs = [(i, language) for i, languages in enumerate(wanted) for language in dict.fromkeys(languages)]
    index = [i for i, _ in pairs]
    decoded = decode.decode_features(
        model,
        features[index],
        [budgets[i] for i in index],
        language=pairs[0][1],
        languages=[language for _, language in pairs],
        fp16=fp16,
    )
    scores: list[dict[str, Heard]] = [{} for _ in regions]
    for (i, language), d in zip(pairs, decoded):
        scores[i][language] = Heard(d.avg_logprob, bool(d.text.strip()), d.truncated, in_its_script(d.text, language))
    return scores


def _detect_alone(
    model, regions: Sequence[tuple[float, float]], source: SampleSource, allowed: list[str] | None
) -> dict[tuple[float, float], dict[str, float]]:
    """The detection of each of ``regions`` (seconds) encoded alone (``language_id.encode_regions``), in batches of
    similar length (sorted by length, so a row is padded by little): region -> language probabilities."""
    from whisper_subtitler.decoding import language_id

    out: dict[tuple[float, float], dict[str, float]] = {}
    by_length = sorted(regions, key=lambda r: r[1] - r[0])
    for i in range(0, len(by_length), ALONE_BATCH):
        group = by_length[i : i + ALONE_BATCH]
        pieces = [chunk_samples(Chunk(0, a, min(b, a + ALONE_MAX_S), ((a, b),)), source) for a, b in group]
        # Whole rows, the batch's padding included: cut to the region's own frames, the encoder output lost the
        # silence after the speech that Whisper's detection expects (a clip went from en 0.97 to ja 0.47).
        encoded = language_id.encode_regions(model, pieces)
        out.update(zip(group, language_id.features_probabilities(model, encoded, allowed)))
    return out
