"""Window decoding for the batched transcriber (``batched.BatchedTranscriber``): chunks of at most 30 s decoded with
one Whisper model in batches, each chunk a window of its own.

    chunks -> log-mel windows -> encoder, one pass per batch (or the language plan's features, reused)
    -> greedy decoding with token budgets (``decode``, ``budgeted``), beams when asked
    -> chunks that fail the compression-ratio or log-probability checks decoded again at the next temperature,
       only those, sampling seeded per chunk (``quality``, ``budgeted.sampling_seed``)
    -> word timestamps from the same audio features (``alignment``) -> segments (``assembly``)
    -> windows that ended early decoded again unit by unit, stretches without words decoded again on their own

Without a language and with a multilingual model, the language is found per speech region first and chunks that hold
several are cut where it changes (``language_plan``). Batches run through ``backoff.BatchRunner`` (an out-of-memory
error halves the batch, down to 1, then moves the model to the CPU). Times are in seconds.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from whisper_subtitler.decoding.backoff import BatchRunner, is_out_of_memory
from whisper_subtitler.decoding.chunking import Chunk, join_regions, token_budget
from whisper_subtitler.decoding.code_switching import FileLanguage, regions_in
from whisper_subtitler.decoding.features import SampleSource, chunk_samples, encode_windows
from whisper_subtitler.decoding.quality import (
    Decoded,
    Thresholds,
    best_attempt,
    is_silence,
    needs_fallback,
    stopped_early,
)
from whisper_subtitler.platform.batch_advice import CPU_BATCH  # the batch size after an out-of-memory move to the CPU
from whisper_subtitler.transcription import batch_log
from whisper_subtitler.transcription.assembly import merged, runs_without_words, window_segments, word_count
from whisper_subtitler.transcription.protocol import Region, TranscribeOptions, detect_language
from whisper_subtitler.types import SAMPLE_RATE, Segment

log = logging.getLogger(__name__)


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
        self.file_language: FileLanguage | None = None  # the windows' verdict on the file (language_plan.LanguagePlan)
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
        with the share of the chunks' audio decoded (0 to 1). Inside ``batch_log.recording(journal)`` the chunks
        the journal holds are not decoded again and each batch decoded is recorded in it (``--resume``).
        """
        if self.language is None and not self.model.is_multilingual:
            self.language = "en"
        self.units = speech
        cached: dict[int, Any] = {}
        cached_cross: dict[int, list[tuple]] = {}
        if self.language is None:
            plan = self._plan(chunks, source, speech or [r for c in chunks for r in c.regions])
            items, cached, cached_cross = plan.items, plan.features, plan.cross
            self.file_language = plan.file
        else:
            items = [(c, self.language) for c in chunks]
        order = {id(c): k for k, (c, _) in enumerate(items)}
        ordered = sorted(items, key=lambda item: (item[1], -item[0].speech, order[id(item[0])]))
        total, done = sum(c.duration for c, _ in items) or 1.0, 0.0
        journal = batch_log.active()  # a run that resumes a file: the batches finished before it was stopped
        finished = journal.resume(batch_log.fingerprint(ordered)) if journal is not None else []
        done += sum(c.duration for c, _ in ordered[: len(finished)])

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
            results = [out[id(c)] for c, _ in group]
            if journal is not None:
                journal.record(results)  # saved before the progress announces the batch
            done += sum(c.duration for c, _ in group)
            if progress is not None:
                progress(min(1.0, done / total))
            return results

        results = finished + self.runner.run(ordered[len(finished) :], decode)
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
            results = [window_segments(c, d, t, language) if k else () for c, d, t, k in zip(group, best, timed, kept)]
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
        again), and a run of less than ``assembly.MIN_TAIL_S`` of speech (``assembly.runs_without_words``). Runs are
        decoded in one batch."""
        runs = runs_without_words(regions_in(chunk, self.units), segments)
        if not runs:
            return segments
        rests = [Chunk(chunk.index, run[0][0], run[-1][1], tuple(join_regions(run))) for run in runs]
        found = tuple(s for part in self._decode_group(rests, source, language) for s in part)
        if found:
            log.debug(
                "%.2f-%.2f s: %d runs of speech units without words (%.1f s) gave %d words",
                chunk.start, chunk.end, len(runs), sum(r.speech for r in rests), word_count(found),
            )  # fmt: skip
        return merged(segments, found)

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
        if word_count(found) <= word_count(segments):
            return segments
        log.debug(
            "%.2f-%.2f s: decoding ended early (%d words); decoded again in %d units: %d words",
            chunk.start, chunk.end, word_count(segments), len(units), word_count(found),
        )  # fmt: skip
        return found
