"""Stage 2, batched: VAD-first chunking and batched decoding with openai-whisper's models, with word timestamps.

    speech regions (VAD) -> chunks of <= 30 s of speech (chunking) -> log-mel windows (features)
    -> encoder, one pass per batch -> greedy decoding with token budgets, finished rows dropped (batch)
    -> chunks that fail the compression-ratio or log-probability checks decoded again at the next temperature,
       only those (quality) -> word timestamps from the same audio features (alignment) -> global times

Batches run through ``backoff.BatchRunner``: an out-of-memory error halves the batch, down to 1, then moves the
model to the CPU, and no chunk is lost. The sequential path (``whisper_subtitler.transcribe.transcribe_sequential``,
``--no-batch``) stays for comparison and for audio on which this one fails.

Memory: the audio is read through a ``SampleSource`` (views of an array, or a rolling buffer in
``transcribe_stream``); one batch of windows, features and key/value caches is alive at a time, so apart from the
audio itself, memory does not grow with the duration.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence

import numpy as np

from whisper_subtitler.decoding.backoff import BatchRunner
from whisper_subtitler.decoding.chunking import SPLIT_SEARCH_S, Chunk, decoding_order, plan_chunks, token_budget
from whisper_subtitler.decoding.features import SampleSource, array_source, chunk_samples, log_mel_windows, quietest_point
from whisper_subtitler.decoding.quality import Decoded, Thresholds, best_attempt, is_silence, needs_fallback
from whisper_subtitler.transcribe import TranscribeOptions
from whisper_subtitler.types import SAMPLE_RATE, Audio, Segment, Transcript, Word

log = logging.getLogger(__name__)

CPU_BATCH = 8  # batch size after an out-of-memory move to the CPU (platform.batch.CPU_BATCH)
STREAM_HOLD_S = 2.0  # seconds at the end of a stream buffer in which a speech region may still grow
STREAM_MAX_CARRY_S = 60.0  # seconds of open speech carried to the next buffer before it is cut at a pause

Vad = Callable[[np.ndarray], Sequence[tuple[float, float]]]  # 16 kHz samples -> speech regions in seconds


class ChunkTranscriber:
    """Decodes chunks with one Whisper model in batches of ``batch_size``; keeps the language once known.

    ``model`` is an openai-whisper ``Whisper`` already on its device and in its dtype (``platform.prepare_model``);
    ``options.fp16`` decodes in half precision (ignored on the CPU, as ``whisper.transcribe`` does).
    """

    def __init__(
        self, model, options: TranscribeOptions, *, batch_size: int, thresholds: Thresholds = Thresholds()
    ) -> None:
        self.model = model
        self.options = options
        self.thresholds = thresholds
        self.language = options.language
        self.fp16 = bool(options.fp16) and model.device.type != "cpu"
        self.runner = BatchRunner(batch_size, to_cpu=self._to_cpu, release=self._release)
        self._tokenizer = None

    @property
    def batch_size(self) -> int:
        """The batch size in use (smaller than asked after an out-of-memory error)."""
        return self.runner.batch_size

    def _to_cpu(self) -> int:
        self.model.float().to("cpu")  # nn.Module.to works in place: every holder of the model sees the move
        self.fp16 = False
        return CPU_BATCH

    def _release(self) -> None:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()

    def _encode(self, pieces: Sequence[np.ndarray]):
        mel = log_mel_windows(pieces, self.model.dims.n_mels, device=self.model.device)
        return self.model.encoder(mel.half() if self.fp16 else mel)

    def ensure_language(self, first: Chunk, source: SampleSource) -> str:
        """The language to decode in: the one given, ``en`` for English-only models, else detected once on the
        ``first`` chunk (``whisper.decoding.detect_language`` on its audio features)."""
        if self.language is None:
            if not self.model.is_multilingual:
                self.language = "en"
            else:
                import torch

                with torch.no_grad():
                    features = self._encode([chunk_samples(first, source)])
                    _, probs = self.model.detect_language(features)
                self.language = max(probs[0], key=probs[0].get)
                log.info("detected language %s (p=%.2f)", self.language, probs[0][self.language])
        return self.language

    def tokenizer(self):
        """openai-whisper's tokenizer for the model, language and task."""
        if self._tokenizer is None:
            from whisper.tokenizer import get_tokenizer

            self._tokenizer = get_tokenizer(
                self.model.is_multilingual, num_languages=self.model.num_languages,
                language=self.language, task=self.options.task,
            )
        return self._tokenizer

    def transcribe(self, chunks: Sequence[Chunk], source: SampleSource) -> list[Segment]:
        """Segments of all ``chunks`` in time order (one segment per piece of a chunk that holds words).

        Chunks are decoded longest first in batches; ``ensure_language`` must have run, else ``RuntimeError``.
        """
        if self.language is None:
            raise RuntimeError("ensure_language() must run before transcribe()")
        ordered = decoding_order(chunks)
        results = self.runner.run(ordered, lambda group: self._decode_group(group, source))
        by_index = {c.index: segments for c, segments in zip(ordered, results)}
        return [s for c in sorted(chunks, key=lambda c: c.index) for s in by_index[c.index]]

    def _decode_group(self, group: list[Chunk], source: SampleSource) -> list[tuple[Segment, ...]]:
        import torch

        from whisper_subtitler.decoding.batch import decode_features

        with torch.no_grad():
            pieces = [chunk_samples(c, source) for c in group]
            features = self._encode(pieces)
            budgets = [token_budget(c.duration) for c in group]
            attempts: list[list[Decoded]] = [[] for _ in group]
            pending = list(range(len(group)))
            for temperature in self.options.temperatures:
                rows = features if len(pending) == len(group) else features[pending]
                decoded = decode_features(
                    self.model, rows, [budgets[i] for i in pending], language=self.language,
                    task=self.options.task, temperature=temperature, fp16=self.fp16,
                    prompt=self.options.initial_prompt,
                )
                for i, d in zip(pending, decoded):
                    attempts[i].append(d)
                pending = [i for i in pending if needs_fallback(attempts[i][-1], self.thresholds)]
                if not pending:
                    break
                log.debug("%d of %d chunks decoded again above temperature %.1f", len(pending), len(group), temperature)
            out = []
            for i, chunk in enumerate(group):
                best = best_attempt(attempts[i], self.thresholds)
                out.append(self._segments(chunk, best, features[i], len(pieces[i])))
            return out

    def _segments(self, chunk: Chunk, decoded: Decoded, features, n_samples: int) -> tuple[Segment, ...]:
        from whisper_subtitler.decoding.alignment import align_words

        if is_silence(decoded, self.thresholds) or not decoded.text.strip():
            return ()
        stats = dict(
            avg_logprob=decoded.avg_logprob,
            compression_ratio=decoded.compression_ratio,
            no_speech_prob=decoded.no_speech_prob,
        )
        timed = align_words(self.model, self.tokenizer(), decoded.tokens, features, n_samples)
        if not timed:  # text without alignable words: keep the text over the chunk
            return (Segment(start=chunk.start, end=chunk.end, text=" " + decoded.text.strip(), **stats),)
        groups: dict[int, list[Word]] = {}
        offsets = chunk.offsets()
        for w in timed:
            # A word belongs to the piece that holds its middle, and stays inside it.
            i = chunk.piece_at((w.start + w.end) / 2)
            start, end = chunk.pieces[i]
            a = min(max(start + w.start - offsets[i], start), end)
            b = min(max(start + w.end - offsets[i], a), end)
            groups.setdefault(i, []).append(Word(w.text, round(a, 3), round(b, 3), w.probability))
        return tuple(
            Segment(start=ws[0].start, end=ws[-1].end, text="".join(w.text for w in ws), words=tuple(ws), **stats)
            for _, ws in sorted(groups.items())
        )


def transcribe_batched(
    model,
    audio: Audio,
    speech: Sequence[tuple[float, float]],
    options: TranscribeOptions,
    *,
    batch_size: int = CPU_BATCH,
    model_name: str = "",
    thresholds: Thresholds = Thresholds(),
) -> Transcript:
    """Transcribe the VAD ``speech`` regions (seconds) of ``audio`` in batches of ``batch_size`` chunks.

    Returns a ``Transcript`` whose words carry word timestamps in seconds from the start of the audio; audio
    without speech gives a transcript without segments (no model call). Raises ``ValueError`` for regions out of
    order; out-of-memory errors are handled (``backoff.BatchRunner``), other torch errors propagate.
    """
    source = array_source(audio.samples, audio.sample_rate)
    chunks = plan_chunks(speech, quietest=quietest_point(source))
    empty = Transcript(segments=(), language=options.language or "", duration=audio.duration, model=model_name,
                       source=str(audio.source), task=options.task)
    if not chunks:
        return empty
    started = time.perf_counter()
    transcriber = ChunkTranscriber(model, options, batch_size=batch_size, thresholds=thresholds)
    language = transcriber.ensure_language(chunks[0], source)
    segments = transcriber.transcribe(chunks, source)
    log.debug("%s: %d chunks, %d segments in %.1f s (batch %d)", audio.source, len(chunks), len(segments),
              time.perf_counter() - started, transcriber.batch_size)
    return Transcript(segments=tuple(segments), language=language, duration=audio.duration, model=model_name,
                      source=str(audio.source), task=options.task)


class _StreamBuffer:
    """The samples of a stream from ``start`` seconds on: new blocks are appended, old audio is dropped."""

    def __init__(self) -> None:
        self.start = 0.0
        self.samples = np.zeros(0, dtype=np.float32)

    @property
    def end(self) -> float:
        return self.start + len(self.samples) / SAMPLE_RATE

    def append(self, block: np.ndarray) -> None:
        self.samples = np.concatenate([self.samples, np.asarray(block, dtype=np.float32)])

    def drop_before(self, t: float) -> None:
        cut = max(0, min(len(self.samples), round((t - self.start) * SAMPLE_RATE)))
        self.samples = self.samples[cut:].copy()  # a copy, so the dropped audio is freed
        self.start += cut / SAMPLE_RATE

    def source(self) -> SampleSource:
        return lambda a, b: self.samples[max(0, round((a - self.start) * SAMPLE_RATE)) : max(0, round((b - self.start) * SAMPLE_RATE))]


def closed_regions(
    regions: Sequence[tuple[float, float]], end: float, final: bool, quietest=None,
    hold: float = STREAM_HOLD_S, max_carry: float = STREAM_MAX_CARRY_S,
) -> tuple[list[tuple[float, float]], float]:
    """Split the speech ``regions`` (seconds) of a stream buffer ending at ``end`` seconds into the regions that
    can no longer change and the time from which audio must be kept for the next buffer.

    A region is closed when it ends at least ``hold`` seconds before ``end`` (the VAD needs that much silence to
    end a region), or when ``final`` (the stream ended). An open region that began more than ``max_carry``
    seconds before ``end`` is cut at ``quietest(from, to)`` in the ``SPLIT_SEARCH_S`` seconds before ``end - hold``,
    so that the carried audio stays bounded. Returns ``(closed regions, keep_from)``.
    """
    if final:
        return list(regions), end
    keep_from = end - hold
    closed: list[tuple[float, float]] = []
    for start, stop in regions:
        if stop <= keep_from:
            closed.append((start, stop))
        elif start < keep_from:
            if end - start > max_carry:
                low = max(start, keep_from - SPLIT_SEARCH_S)
                cut = min(max(quietest(low, keep_from), low), keep_from) if quietest is not None else keep_from
                closed.append((start, cut))
                keep_from = cut
            else:
                keep_from = start
            break
        else:
            break
    return closed, keep_from


def transcribe_stream(
    model,
    blocks: Iterable[np.ndarray],
    options: TranscribeOptions,
    *,
    vad: Vad,
    batch_size: int = CPU_BATCH,
    model_name: str = "",
    source_name: str = "",
    thresholds: Thresholds = Thresholds(),
) -> Transcript:
    """Transcribe audio that arrives as ``blocks`` of 16 kHz mono float32 samples (any length, in order), holding
    only the current block and the open speech carried over (at most ``STREAM_MAX_CARRY_S`` seconds) in memory.

    ``vad`` maps samples to speech regions in seconds (``vad.speech_regions``); it runs on each buffer, and
    regions still open at the buffer's end are decided with the next block (``closed_regions``). Same output as
    ``transcribe_batched``, except that chunks do not span two buffers.
    """
    buffer = _StreamBuffer()
    transcriber = ChunkTranscriber(model, options, batch_size=batch_size, thresholds=thresholds)
    segments: list[Segment] = []
    next_index = 0
    iterator = iter(blocks)
    block = next(iterator, None)
    while block is not None:
        buffer.append(block)
        block = next(iterator, None)
        final = block is None
        regions = [(buffer.start + s, buffer.start + e) for s, e in vad(buffer.samples)]
        source = buffer.source()
        closed, keep_from = closed_regions(regions, buffer.end, final, quietest_point(source))
        chunks = plan_chunks(closed, quietest=quietest_point(source), first_index=next_index)
        if chunks:
            next_index = chunks[-1].index + 1
            transcriber.ensure_language(chunks[0], source)
            segments.extend(transcriber.transcribe(chunks, source))
        buffer.drop_before(keep_from)
    duration = buffer.end
    return Transcript(segments=tuple(segments), language=transcriber.language or options.language or "",
                      duration=duration, model=model_name, source=source_name, task=options.task)
