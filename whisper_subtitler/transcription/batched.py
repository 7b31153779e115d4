"""Stage 2, batched: VAD-first chunking and batched decoding with openai-whisper's models, with word timestamps.

    speech regions (VAD) -> joined across short pauses, one chunk each, <= 30 s (chunking) -> log-mel windows
    -> encoder, one pass per batch -> greedy decoding with token budgets, finished rows dropped (budgeted)
    -> chunks that fail the compression-ratio or log-probability checks decoded again at the next temperature,
       only those, sampling seeded per chunk (quality, budgeted.sampling_seed) -> word timestamps from the same audio
       features (alignment) -> global times

Batches run through ``backoff.BatchRunner``: an out-of-memory error halves the batch, down to 1, then moves the
model to the CPU, and no chunk is lost. The sequential path (``transcription.sequential.SequentialTranscriber``,
``--no-batch``) stays for comparison and for audio on which this one fails.

Memory: chunks are read as views of the audio array and one batch of windows, features and key/value caches is
alive at a time, so apart from the audio itself memory does not grow with the duration; the pipeline bounds the
audio too, by decoding and transcribing the file in pieces (``audio.stream_audio``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from whisper_subtitler.decoding.backoff import BatchRunner, is_out_of_memory
from whisper_subtitler.decoding.chunking import Chunk, join_regions, plan_chunks, token_budget
from whisper_subtitler.decoding.code_switching import main_language, regions_in
from whisper_subtitler.decoding.features import (
    SampleSource,
    array_source,
    chunk_samples,
    encode_windows,
    quietest_point,
)
from whisper_subtitler.decoding.quality import (
    Decoded,
    Thresholds,
    best_attempt,
    is_silence,
    needs_fallback,
    stopped_early,
)
from whisper_subtitler.platform.batch_advice import CPU_BATCH  # the batch size after an out-of-memory move to the CPU
from whisper_subtitler.transcription.protocol import (
    Region,
    TranscribeOptions,
    check_options,
    detect_language,
    new_transcript,
)
from whisper_subtitler.transcription.tuning import DecodingSettings, choose_settings
from whisper_subtitler.types import SAMPLE_RATE, Audio, Segment, Transcript, Word

if TYPE_CHECKING:
    from whisper_subtitler.decoding.alignment import TimedWord

log = logging.getLogger(__name__)

# Seconds of speech in a run of units without words below which it is not decoded again (``_with_gaps``): a sliver
# there is more likely a breath or the end of the last word than a skipped clip, and decoded alone Whisper invents
# words on it (a 0.2-s sliver after a region of silence came out "morgue.").
MIN_TAIL_S = 1.0


def _merged(segments: Sequence[Segment], found: Sequence[Segment]) -> tuple[Segment, ...]:
    """``segments`` with the segments ``found`` in stretches of them that had no words: a found segment with words
    that starts inside one of ``segments`` with words (one segment per speech region: a region's words may pass over
    a stretch) has its words put among that segment's in time order, its text rebuilt from them; the others (text
    without alignable words among them) are added as they are. Time order."""
    out = list(segments)
    for f in found:
        k = next((i for i, s in enumerate(out) if f.words and s.words and s.start <= f.start < s.end), None)
        if k is None:
            out.append(f)
            continue
        words = tuple(sorted(out[k].words + f.words, key=lambda w: (w.start, w.end)))
        out[k] = replace(out[k], end=max(out[k].end, f.end), text="".join(w.text for w in words), words=words)
    return tuple(sorted(out, key=lambda s: (s.start, s.end)))


def _word_count(segments: Sequence[Segment]) -> int:
    return sum(len(s.words) for s in segments)


def thresholds_of(options: TranscribeOptions) -> Thresholds:
    """The temperature fallback's thresholds asked for in ``options`` (``--compression-ratio-threshold``, ...)."""
    return Thresholds(options.compression_ratio_threshold, options.logprob_threshold, options.no_speech_threshold)


def _cross_rows(model, features, cross: Sequence[list[tuple] | None] | None) -> list[tuple] | None:
    """The cross-attention keys and values of a decoding batch (``language_id.cross_keys_values`` of ``features``
    ``(B, n_audio_ctx, n_audio_state)``): the rows of ``cross`` that have them as they are, the others projected
    here; ``None`` when no row has them (decoding projects them all itself)."""
    import torch

    from whisper_subtitler.decoding.language_id import cross_keys_values

    if not cross or all(row is None for row in cross):
        return None
    missing = [i for i, row in enumerate(cross) if row is None]
    projected = cross_keys_values(model, features[missing]) if missing else []
    where = {i: j for j, i in enumerate(missing)}
    out = []
    for block in range(len(model.decoder.blocks)):
        keys = [projected[block][0][where[i]] if row is None else row[block][0] for i, row in enumerate(cross)]
        values = [projected[block][1][where[i]] if row is None else row[block][1] for i, row in enumerate(cross)]
        out.append((torch.stack(keys), torch.stack(values)))
    return out


def _pending(keys_values: list[tuple] | None, rows: list[int] | None) -> list[tuple] | None:
    """``keys_values`` (``_cross_rows``) kept to ``rows`` (all when ``None``)."""
    if keys_values is None or rows is None:
        return keys_values
    return [(k[rows], v[rows]) for k, v in keys_values]


class ChunkTranscriber:
    """Decodes chunks with one Whisper model in batches of ``batch_size``; keeps the language once known.

    ``model`` is an openai-whisper ``Whisper`` already on its device and in its dtype (``platform.prepare_model``);
    ``options.fp16`` decodes in half precision (ignored on the CPU, as ``whisper.transcribe`` does).
    ``decoder_kernels``: see ``_set_kernels``; ``compiled_decoder``: each decoding step through ``torch.compile``
    (``compiled``; off unless level 2 measured it faster); ``attention``: the SDPA kernel pinned for the encoder and
    the decoding loop (``kernels.attention_kernel``; ``None``, PyTorch's choice, unless level 2 measured another).
    If a batch fails with either of these on (a compiler gone since level 2 measured it, a kernel that cannot serve
    some shape), both are turned off with a warning and the batch is decoded again. ``cpu_fallback``: after an
    out-of-memory error at batch 1, move the model to the CPU (``backoff.BatchRunner``); without it, re-raise.
    ``offset``: where the audio the chunks come from starts in the file (seconds), so that each chunk's sampling
    seed (``budgeted.sampling_seed`` of ``options.seed`` and the chunk's first sample in the file) does not depend on
    how the file was cut into pieces. ``sampled`` counts the chunk decodings at a temperature above 0.
    """

    def __init__(
        self,
        model,
        options: TranscribeOptions,
        *,
        batch_size: int,
        thresholds: Thresholds | None = None,
        decoder_kernels: bool | None = None,
        compiled_decoder: bool = False,
        attention: str | None = None,
        cpu_fallback: bool = True,
        offset: float = 0.0,
    ) -> None:
        self.model = model
        self.offset = offset
        self.sampled = 0
        self.units: Sequence[Region] = ()  # transcribe's speech units: what the re-decoding rules cut a chunk into
        self.options = options
        self.thresholds = thresholds or thresholds_of(options)
        self.language = options.language
        self.fp16 = bool(options.fp16) and model.device.type != "cpu"
        self.runner = BatchRunner(batch_size, to_cpu=self._to_cpu if cpu_fallback else None, release=self._release)
        self._tokenizers: dict[str | None, Any] = {}
        self.decoder_kernels = decoder_kernels
        self.compiled_decoder = compiled_decoder
        self.attention = attention
        self._set_kernels()

    def _set_kernels(self) -> None:
        """The decoder kernels (``kernels``): as asked, else on for the CPU, where they were measured faster
        (docs/performance.md, "Decoder kernels"), and off elsewhere."""
        from whisper_subtitler.decoding.kernels import set_decoder_kernels

        on = self.decoder_kernels if self.decoder_kernels is not None else self.model.device.type == "cpu"
        set_decoder_kernels(self.model, on)

    @property
    def batch_size(self) -> int:
        """The batch size in use (smaller than asked after an out-of-memory error)."""
        return self.runner.batch_size

    @property
    def moved_to_cpu(self) -> bool:
        """Whether an out-of-memory error at batch 1 moved the model to the CPU (``cpu_fallback``)."""
        return self.runner.on_cpu

    def _to_cpu(self) -> int:
        self.model.float().to("cpu")  # nn.Module.to works in place: every holder of the model sees the move
        self.fp16 = False
        self.decoder_kernels = None  # the CPU's default
        self.compiled_decoder = False  # graphs compiled for the GPU do not serve the CPU
        self.attention = None  # nor the attention kernel measured there
        self._set_kernels()
        return CPU_BATCH

    def _release(self) -> None:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()

    def _encode(self, samples: Sequence[np.ndarray]):
        return encode_windows(self.model, samples)

    def ensure_language(self, first: Chunk, source: SampleSource) -> str:
        """The language to decode in: the one given, ``en`` for English-only models, else detected once on the
        ``first`` chunk (``transcription.detect_language`` on its audio features). ``transcribe`` does this by
        itself on the first batch's features, without an encoder pass of its own."""
        if self.language is None:
            import torch

            with torch.no_grad():
                features = self._encode([chunk_samples(first, source)]) if self.model.is_multilingual else None
                self.language = detect_language(self.model, features)
        return self.language

    def tokenizer(self, language: str | None = None):
        """openai-whisper's tokenizer for the model, task and ``language`` (default: the one decoded in)."""
        language = language or self.language
        if language not in self._tokenizers:
            from whisper.tokenizer import get_tokenizer

            self._tokenizers[language] = get_tokenizer(
                self.model.is_multilingual,
                num_languages=self.model.num_languages,
                language=language,
                task=self.options.task,
            )
        return self._tokenizers[language]

    def transcribe(
        self,
        chunks: Sequence[Chunk],
        source: SampleSource,
        progress: Callable[[float], None] | None = None,
        speech: Sequence[Region] = (),
    ) -> list[Segment]:
        """Segments of all ``chunks`` in time order (one segment per speech region of a chunk that holds words),
        each with the language it was decoded in.

        Chunks are decoded in batches, those with the most speech first. Without a language and with a multilingual
        model, the language is found per speech region (``speech``: ``language_plan.language_units``; the chunks'
        own regions when empty) and chunks that hold several languages are cut where it changes
        (``language_plan``), only among ``options.languages`` when given. ``progress`` is called after each batch
        with the share of the chunks' audio decoded (0 to 1).
        """
        if self.language is None and not self.model.is_multilingual:
            self.language = "en"
        self.units = speech
        cached: dict[int, Any] = {}
        cached_cross: dict[int, list[tuple]] = {}
        if self.language is None:
            plan = self._plan(chunks, source, speech or [r for c in chunks for r in c.regions])
            items, cached, cached_cross = plan.items, plan.features, plan.cross
        else:
            items = [(c, self.language) for c in chunks]
        order = {id(c): k for k, (c, _) in enumerate(items)}
        ordered = sorted(items, key=lambda item: (item[1], -item[0].speech, order[id(item[0])]))
        total, done = sum(c.duration for c, _ in items) or 1.0, 0.0

        def decode(group: list[tuple[Chunk, str]]) -> list[tuple[Segment, ...]]:
            nonlocal done
            out: dict[int, tuple[Segment, ...]] = {}
            for language in dict.fromkeys(language for _, language in group):
                rows = [c for c, lang in group if lang == language]
                found = [cached.pop(c.index, None) for c in rows]
                features = found if any(f is not None for f in found) else None
                cross = [cached_cross.pop(c.index, None) for c in rows]
                decoded = self._decode_group_or_eager(rows, source, language, features, cross)
                for c, segments in zip(rows, decoded):
                    out[id(c)] = segments
            done += sum(c.duration for c, _ in group)
            if progress is not None:
                progress(min(1.0, done / total))
            return [out[id(c)] for c, _ in group]

        results = self.runner.run(ordered, decode)
        by_item = {id(c): segments for (c, _), segments in zip(ordered, results)}
        return [s for c, _ in items for s in by_item[id(c)]]

    def _plan(self, chunks: Sequence[Chunk], source: SampleSource, speech: Sequence[Region]):
        """The language of each speech region and the chunks to decode with each (``language_plan``)."""
        import torch

        from whisper_subtitler.decoding.kernels import attention_kernel
        from whisper_subtitler.decoding.language_plan import plan_languages

        def encode(group: list[Chunk]):
            return self._encode([chunk_samples(c, source) for c in group])

        with torch.no_grad(), attention_kernel(self.attention):
            return plan_languages(
                self.model,
                chunks,
                speech,
                source,
                encode=encode,
                batch_size=self.batch_size,
                allowed=self.options.languages,
                fp16=self.fp16,
            )

    def _features(self, samples: Sequence[np.ndarray], cached: Sequence[Any | None] | None):
        """The encoder output ``(len(samples), n_audio_ctx, n_audio_state)`` of one decoding batch: the ``cached``
        rows as they are, the others encoded (in one encoder call)."""
        import torch

        if cached is None:
            return self._encode(samples)
        rows: list[Any] = list(cached)
        missing = [i for i, row in enumerate(rows) if row is None]
        if missing:
            for i, row in zip(missing, self._encode([samples[i] for i in missing])):
                rows[i] = row
        return torch.stack(rows)

    def _decode_group_or_eager(
        self, group: list[Chunk], source: SampleSource, language: str, features: Any = None, cross: Any = None
    ) -> list[tuple[Segment, ...]]:
        try:
            return self._decode_group(group, source, language, features, cross)
        except Exception as error:  # noqa: BLE001 - re-raised unless the level-2 extras can be dropped
            if is_out_of_memory(error) or not (self.compiled_decoder or self.attention):
                raise
            extras = [
                name
                for name, on in (
                    ("the compiled decoder step", self.compiled_decoder),
                    (f"attention kernel {self.attention}", self.attention),
                )
                if on
            ]
            cause = (str(error).strip().splitlines() or [type(error).__name__])[0]
            log.warning("decoding with %s failed (%s); decoding without from here on", " and ".join(extras), cause)
            self.compiled_decoder, self.attention = False, None
            return self._decode_group(group, source, language, features, cross)

    def _decode_group(
        self,
        group: list[Chunk],
        source: SampleSource,
        language: str,
        cached: Sequence[Any | None] | None = None,
        cross: Sequence[list[tuple] | None] | None = None,
    ) -> list[tuple[Segment, ...]]:
        """Decode ``group`` in ``language``; ``cached``: each chunk's encoder output when already computed (``None``
        for a chunk to encode: only those are encoded); ``cross``: each chunk's cross-attention keys and values when
        already computed (``language_plan.LanguagePlan.cross``; the others are projected as decoding does)."""
        import torch

        from whisper_subtitler.decoding import budgeted, decode
        from whisper_subtitler.decoding.alignment import align_batch
        from whisper_subtitler.decoding.kernels import attention_kernel

        with torch.no_grad(), attention_kernel(self.attention):
            samples = [chunk_samples(c, source) for c in group]
            features = self._features(samples, cached)
            keys_values = _cross_rows(self.model, features, cross)
            budgets = [token_budget(c.speech) for c in group]
            attempts: list[list[Decoded]] = [[] for _ in group]
            pending = list(range(len(group)))
            first_samples = [round((self.offset + c.start) * SAMPLE_RATE) for c in group]
            suppressed = self.options.suppressed()
            for temperature in self.options.temperatures:
                whole = len(pending) == len(group)
                rows = features if whole else features[pending]
                decoded = decode.decode_features(
                    self.model,
                    rows,
                    [budgets[i] for i in pending],
                    language=language,
                    task=self.options.task,
                    temperature=temperature,
                    fp16=self.fp16,
                    prompt=self.options.initial_prompt,
                    compiled=self.compiled_decoder,
                    seeds=[budgeted.sampling_seed(self.options.seed, first_samples[i], temperature) for i in pending],
                    suppress_tokens=suppressed,
                    beam_size=self.options.beam_size,
                    patience=self.options.patience,
                    best_of=self.options.best_of,
                    cross=_pending(keys_values, None if whole else pending),
                )
                if temperature > 0:
                    self.sampled += len(pending)
                for i, d in zip(pending, decoded):
                    attempts[i].append(d)
                pending = [i for i in pending if needs_fallback(attempts[i][-1], self.thresholds)]
                if not pending:
                    break
                log.debug("%d of %d chunks decoded again above temperature %.1f", len(pending), len(group), temperature)
            best = [best_attempt(a, self.thresholds) for a in attempts]
            kept = [() if is_silence(d, self.thresholds) or not d.text.strip() else d.tokens for d in best]
            timed = align_batch(
                self.model,
                self.tokenizer(language),
                kept,
                [d.token_probs for d in best],
                features,
                [len(x) for x in samples],
            )
            results = [self._segments(c, d, t, language) if k else () for c, d, t, k in zip(group, best, timed, kept)]
        for i, chunk in enumerate(group):
            if stopped_early(best[i], chunk.speech, self.thresholds):
                results[i] = self._unit_by_unit(chunk, source, language, results[i])
            else:
                results[i] = self._with_gaps(chunk, source, language, results[i])
        return results

    def _with_gaps(
        self, chunk: Chunk, source: SampleSource, language: str, segments: tuple[Segment, ...]
    ) -> tuple[Segment, ...]:
        """``segments`` of ``chunk`` and, where some of its speech units hold no word (no word's middle lies in them:
        the decoder skipped them, or wrote its end token before the last ones), each run of such consecutive units
        decoded as a window of its own, and their segments added in time order: what openai-whisper's ``transcribe``
        does when a window's last timestamp falls short of its end (it seeks there and decodes on), and for the
        stretches that text-only decoding passes over inside a window. Left as they are: a chunk without any word
        (silence, or nothing Whisper could write), a chunk whose every unit is empty of words (the same window
        again), and a run of less than :data:`MIN_TAIL_S` of speech. Runs are decoded in one batch."""
        middles = [(w.start + w.end) / 2 for s in segments for w in s.words]
        if not middles:
            return segments
        units = regions_in(chunk, self.units)
        empty = [not any(a <= m <= b for m in middles) for a, b in units]
        if all(empty):
            return segments
        runs: list[list[Region]] = []
        for k, (a, b) in enumerate(units):
            if not empty[k]:
                continue
            # A run goes on over consecutive empty units, unless a word's middle lies in the pause between them.
            if k and empty[k - 1] and not any(units[k - 1][1] < m < a for m in middles):
                runs[-1].append((a, b))
            else:
                runs.append([(a, b)])
        runs = [run for run in runs if sum(b - a for a, b in run) >= MIN_TAIL_S]
        if not runs:
            return segments
        rests = [Chunk(chunk.index, run[0][0], run[-1][1], tuple(join_regions(run))) for run in runs]
        found = tuple(s for part in self._decode_group(rests, source, language) for s in part)
        if found:
            log.debug(
                "%.2f-%.2f s: %d runs of speech units without words (%.1f s) gave %d words",
                chunk.start, chunk.end, len(runs), sum(r.speech for r in rests), _word_count(found),
            )  # fmt: skip
        return _merged(segments, found)

    def _unit_by_unit(
        self, chunk: Chunk, source: SampleSource, language: str, segments: tuple[Segment, ...]
    ) -> tuple[Segment, ...]:
        """``chunk``, whose decoding ended early (``quality.stopped_early``), decoded again one speech unit at a time
        (the units of ``transcribe``'s ``speech`` inside it: ``code_switching.regions_in``), each unit a window of its
        own; the units' segments replace ``segments`` when they hold more words. A chunk of one unit stays as it is."""
        units = regions_in(chunk, self.units)
        if len(units) < 2:
            return segments
        again = self._decode_group([Chunk(chunk.index, a, b, ((a, b),)) for a, b in units], source, language)
        found = tuple(s for part in again for s in part)
        if _word_count(found) <= _word_count(segments):
            return segments
        log.debug(
            "%.2f-%.2f s: decoding ended early (%d words); decoded again in %d units: %d words",
            chunk.start, chunk.end, _word_count(segments), len(units), _word_count(found),
        )  # fmt: skip
        return found

    def _segments(self, chunk: Chunk, decoded: Decoded, timed: list[TimedWord], language: str) -> tuple[Segment, ...]:
        def segment(start: float, end: float, text: str, words: tuple[Word, ...] = ()) -> Segment:
            return Segment(
                start=start,
                end=end,
                text=text,
                words=words,
                avg_logprob=decoded.avg_logprob,
                compression_ratio=decoded.compression_ratio,
                no_speech_prob=decoded.no_speech_prob,
                language=language,
            )

        if not timed:  # text without alignable words: keep the text over the chunk
            return (segment(chunk.start, chunk.end, " " + decoded.text.strip()),)
        groups: dict[int, list[Word]] = {}
        for w in timed:
            # A word belongs to the speech region that holds its middle (or the nearest one), inside the window.
            a = min(max(chunk.start + w.start, chunk.start), chunk.end)
            b = min(max(chunk.start + w.end, a), chunk.end)
            word = Word(w.text, round(a, 3), round(b, 3), w.probability, language=language)
            groups.setdefault(chunk.region_at((a + b) / 2), []).append(word)
        return tuple(
            segment(ws[0].start, ws[-1].end, "".join(w.text for w in ws), tuple(ws)) for _, ws in sorted(groups.items())
        )


@dataclass(frozen=True)
class BatchedDecoding:
    """The default decoding: VAD chunks in batches. ``batch_size``: ``--batch-size``; ``None`` takes the platform's
    advice, or at optimization level 2 the fastest size measured (``tuning.choose_settings``)."""

    batch_size: int | None = None

    def transcriber(
        self, model: Any, options: TranscribeOptions, selection: Any, model_name: str
    ) -> BatchedTranscriber:
        """A ``BatchedTranscriber`` for ``model`` (loaded, on ``selection``'s device). Raises ``UsageError`` for
        options the model cannot decode with (``transcription.check_options``)."""
        check_options(options, model)
        return BatchedTranscriber(
            model, options, model_name=model_name, selection=selection, batch_size=self.batch_size
        )


class BatchedTranscriber:
    """The batched ``Transcriber``: the VAD ``speech`` regions of audio in chunks of at most 30 s, decoded in batches.

    ``model`` is an openai-whisper ``Whisper`` already on its device and in its dtype (``platform.prepare_model``);
    this transcriber owns it from then on, device included. The decoding settings come from
    ``tuning.choose_settings`` for ``selection`` (a ``platform.Selection``: ``batch_size`` when given, else the
    advice, else at level 2 the settings measured) until an out-of-memory error at batch 1 moves the model to the
    CPU (``ChunkTranscriber``): from then on the CPU's defaults (``DecodingSettings()``), since the GPU's batch size and
    level-2 winners do not hold there. Without ``selection``: ``DecodingSettings(batch_size or CPU_BATCH)``.
    """

    def __init__(
        self,
        model: Any,
        options: TranscribeOptions,
        *,
        model_name: str = "",
        selection: Any = None,
        batch_size: int | None = None,
        thresholds: Thresholds | None = None,
    ) -> None:
        self.model = model
        self.options = options
        self.model_name = model_name
        self.selection = selection
        self.batch_size = batch_size
        self.thresholds = thresholds or thresholds_of(options)
        self.on_cpu = False  # moved to the CPU after running out of memory

    def settings(self, audio: Audio, speech: Sequence[Region], options: TranscribeOptions) -> DecodingSettings:
        """How to decode ``speech`` of ``audio`` on the model's device now (see the class docstring)."""
        if self.on_cpu:
            return DecodingSettings()
        if self.selection is None:
            return DecodingSettings(self.batch_size or CPU_BATCH)
        return choose_settings(
            self.model,
            audio,
            speech,
            options,
            self.selection,
            model_name=self.model_name,
            requested=self.batch_size,
            trial=ChunkTranscriber,
        )

    def transcribe(
        self,
        audio: Audio,
        speech: Sequence[Region],
        language: str | None = None,
        progress: Callable[[float], None] | None = None,
    ) -> Transcript:
        """See ``transcription.Transcriber``: word timestamps in seconds from the start of ``audio``; audio without
        speech gives a transcript without segments (no model call). Raises ``ValueError`` for regions out of
        order; out-of-memory errors are handled (``backoff.BatchRunner``), other torch errors propagate."""
        options = replace(self.options, language=language or self.options.language)
        source = array_source(audio.samples, audio.sample_rate)
        chunks = plan_chunks(speech, quietest=quietest_point(source))
        if not chunks:
            return new_transcript(audio.source, audio.duration, options, self.model_name)
        settings = self.settings(audio, speech, options)
        started = time.perf_counter()
        transcriber = ChunkTranscriber(
            self.model,
            options,
            batch_size=settings.batch_size,
            thresholds=self.thresholds,
            decoder_kernels=settings.decoder_kernels,
            compiled_decoder=settings.compiled_decoder,
            attention=settings.attention,
            offset=audio.offset,
        )
        # The units of the language plan and of the re-decoding rules (``_with_gaps``, ``_unit_by_unit``), the same
        # with or without ``--language``, so that a file in one language gets the same words either way.
        from whisper_subtitler.decoding.language_plan import language_units

        units: Sequence[Region] = language_units(audio.samples) or speech
        segments = transcriber.transcribe(chunks, source, progress, units)
        self.on_cpu = self.on_cpu or transcriber.moved_to_cpu
        log.debug(
            "%s: %d chunks, %d segments in %.1f s (batch %d, %d chunk decodings sampled)",
            audio.source,
            len(chunks),
            len(segments),
            time.perf_counter() - started,
            transcriber.batch_size,
            transcriber.sampled,
        )
        language = main_language((s.language, s.end - s.start) for s in segments) or transcriber.language
        return new_transcript(audio.source, audio.duration, options, self.model_name, segments, language)
