"""The language of every speech region of a file, and the chunks to decode with each language (``--language``
absent, or a list of languages, with a multilingual model).

    chunks encoded in batches (the encoder output kept for decoding, up to FEATURE_CACHE_BYTES)
      -> each window's own detection, and each region's detection sliced from the window (language_id)
      -> regions of windows that are not sure of one language: encoded alone, detected alone
      -> the languages smoothed over the file (code_switching.smooth_languages)
      -> regions whose own detection the smoothing overruled: decoded alone in both languages, the one Whisper
         decodes with the higher mean log-probability kept
      -> chunks cut where the language changes (code_switching.split_by_language)

On a file in one language whose windows are sure of it, the cost is the detections (one decoder step per window and
per region); the encoder output of the windows is reused for decoding. Windows that are unsure (synthetic voices,
noise) cost the encoding of their regions alone, and overruled regions two more decodings each: on the English
benchmark clip the whole run took 1.62x as long as with ``--language en`` (docs/multilingual.md).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from whisper_subtitler.decoding.chunking import Chunk, decoding_order
from whisper_subtitler.decoding.code_switching import (
    RegionLanguage,
    regions_in,
    settled_by_window,
    smooth_languages,
    split_by_language,
)
from whisper_subtitler.decoding.features import SampleSource, chunk_samples

log = logging.getLogger(__name__)

LANGUAGE_VAD_SILENCE_MS = 200  # ms: pauses this long separate the units of language detection (the VAD's own: 500)
LANGUAGE_VAD_PAD_MS = 100  # ms of padding around each unit (the VAD's own: 200)
FEATURE_CACHE_BYTES = 512 * 2**20  # encoder output kept between detection and decoding; the rest is encoded again
ALONE_BATCH = 8  # regions encoded alone per encoder call


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
    stayed whole (``features``: chunk index -> ``(n_audio_ctx, n_audio_state)`` tensor) and the file's
    ``regions`` with their smoothed ``languages`` (for the log and the main language)."""

    items: list[tuple[Chunk, str]]
    features: dict[int, Any] = field(default_factory=dict)
    regions: list[RegionLanguage] = field(default_factory=list)
    languages: list[str] = field(default_factory=list)


@dataclass
class Detections:
    """Each speech region's language probabilities (``regions``, time order), the regions of each chunk
    (``per_chunk``: chunk index -> regions in seconds) and the encoder output kept for decoding (``features``)."""

    regions: list[RegionLanguage]
    per_chunk: dict[int, list[tuple[float, float]]]
    features: dict[int, Any]
    encoded_alone: int = 0


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
    features: dict[int, Any] = {}
    kept_bytes = 0
    for i in range(0, len(ordered), batch_size):
        group = list(ordered[i : i + batch_size])
        encoded = encode(group)
        windows = language_id.features_probabilities(model, encoded, allowed_list)
        for row, (chunk, window) in enumerate(zip(group, windows)):
            regions = regions_in(chunk, speech)
            per_chunk[chunk.index] = regions
            spans = [(a - chunk.start, b - chunk.start) for a, b in regions]
            sliced = (
                language_id.sliced_probabilities(model, encoded[row], spans, allowed_list) if len(spans) > 1 else []
            )
            if settled_by_window(window, sliced):
                probabilities.update({region: window for region in regions})
            else:
                alone.extend(regions)
            size = encoded[row].numel() * encoded[row].element_size()
            if kept_bytes + size <= FEATURE_CACHE_BYTES:
                features[chunk.index] = encoded[row]
                kept_bytes += size
    probabilities.update(_detect_alone(model, alone, source, allowed_list))
    found = [RegionLanguage(a, b, probabilities[(a, b)]) for k in sorted(per_chunk) for a, b in per_chunk[k]]
    return Detections(found, per_chunk, features, len(alone))


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
    arguments as ``detect_regions``; ``fp16``: decode in half precision (the overruled regions' check). Call under
    ``torch.no_grad``."""
    found = detect_regions(model, chunks, speech, source, encode=encode, batch_size=batch_size, allowed=allowed)
    languages = smooth_languages(found.regions)
    overruled = [k for k, (r, language) in enumerate(zip(found.regions, languages)) if r.best != language]
    for start in range(0, len(overruled), batch_size):
        rows = overruled[start : start + batch_size]
        candidates = [(languages[k], found.regions[k].best) for k in rows]
        for k, best in zip(rows, _most_likely(model, [found.regions[k] for k in rows], candidates, encode, fp16)):
            if best != languages[k]:
                r = found.regions[k]
                log.debug(
                    "%.2f-%.2f s: %s decodes better than %s, the neighbours' language",
                    r.start,
                    r.end,
                    best,
                    languages[k],
                )
            languages[k] = best
    by_region = {(r.start, r.end): language for r, language in zip(found.regions, languages)}
    items: list[tuple[Chunk, str]] = []
    features = found.features
    for chunk in sorted(chunks, key=lambda c: c.index):
        regions_here = found.per_chunk[chunk.index]
        parts = split_by_language(chunk, regions_here, [by_region[r] for r in regions_here])
        if len(parts) > 1:
            features.pop(chunk.index, None)
        items.extend(parts)
    log.info(
        "language per speech region: %d regions (%d encoded alone, %d checked by decoding), %s; %d chunks -> %d",
        len(found.regions),
        found.encoded_alone,
        len(overruled),
        ", ".join(f"{k} {v:.0f} s" for k, v in _seconds_by_language(found.regions, languages).items()),
        len(chunks),
        len(items),
    )
    return LanguagePlan(items, features, found.regions, languages)


def _seconds_by_language(regions: Sequence[RegionLanguage], languages: Sequence[str]) -> dict[str, float]:
    out: dict[str, float] = {}
    for r, language in zip(regions, languages):
        out[language] = out.get(language, 0.0) + r.duration
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def _most_likely(
    model,
    regions: Sequence[RegionLanguage],
    candidates: Sequence[tuple[str, str]],
    encode: Callable[[list[Chunk]], Any],
    fp16: bool,
) -> list[str]:
    """For each of ``regions``, the one of its two ``candidates`` (the smoothed language first) whose greedy
    transcript Whisper scores higher (mean token log-probability), the region encoded alone in a 30-s window as any
    chunk; the first wins a tie, and a language whose transcript is empty or loops loses. On the regions where
    smoothing and detection disagreed, this chose right in every case measured (docs/multilingual.md)."""
    from whisper_subtitler.decoding import decode
    from whisper_subtitler.decoding.chunking import token_budget

    features = encode([Chunk(0, r.start, r.end, ((r.start, r.end),)) for r in regions])
    budgets = [token_budget(r.duration) for r in regions]
    scores: list[dict[str, float]] = [{} for _ in regions]
    for position in (0, 1):
        for language in dict.fromkeys(c[position] for c in candidates):
            rows = [i for i, c in enumerate(candidates) if c[position] == language and language not in scores[i]]
            if not rows:
                continue
            index = rows if len(rows) < len(regions) else slice(None)
            decoded = decode.decode_features(
                model, features[index], [budgets[i] for i in rows], language=language, fp16=fp16
            )
            for i, d in zip(rows, decoded):
                usable = d.text.strip() and not d.truncated
                scores[i][language] = d.avg_logprob if usable else float("-inf")
    return [max(c, key=lambda language: scores[i][language]) for i, c in enumerate(candidates)]


def _detect_alone(
    model, regions: Sequence[tuple[float, float]], source: SampleSource, allowed: list[str] | None
) -> dict[tuple[float, float], dict[str, float]]:
    """The detection of each of ``regions`` (seconds) encoded alone (``language_id.encode_regions``), in batches of
    similar length (sorted by length, so a row is padded by little): region -> language probabilities."""
    from whisper_subtitler.decoding import language_id
    from whisper_subtitler.decoding.chunking import MAX_CHUNK_S

    out: dict[tuple[float, float], dict[str, float]] = {}
    by_length = sorted(regions, key=lambda r: r[1] - r[0])
    for i in range(0, len(by_length), ALONE_BATCH):
        group = by_length[i : i + ALONE_BATCH]
        pieces = [chunk_samples(Chunk(0, a, min(b, a + MAX_CHUNK_S), ((a, b),)), source) for a, b in group]
        # Whole rows, the batch's padding included: cut to the region's own frames, the encoder output lost the
        # silence after the speech that Whisper's detection expects (a clip went from en 0.97 to ja 0.47).
        encoded = language_id.encode_regions(model, pieces)
        out.update(zip(group, language_id.features_probabilities(model, encoded, allowed)))
    return out
