"""Stage 2, batched: VAD-first chunking and batched decoding with openai-whisper's models, with word timestamps.

    speech regions (VAD) -> joined across short pauses, one chunk each, <= 30 s (chunking) -> log-mel windows
    -> encoder, one pass per batch -> greedy decoding with token budgets, finished rows dropped (budgeted)
    -> chunks that fail the compression-ratio or log-probability checks decoded again at the next temperature,
       only those, sampling seeded per chunk (quality, budgeted.sampling_seed) -> word timestamps from the same audio
       features (alignment) -> global times

Here: the chunks planned and the decoding settings chosen. The chunks are decoded by
``chunk_transcriber.ChunkTranscriber`` (window decoding, re-exported here), their words assembled into segments by
``assembly``. Batches run through ``backoff.BatchRunner``: an out-of-memory error halves the batch, down to 1, then
moves the model to the CPU, and no chunk is lost. The sequential path
(``transcription.sequential.SequentialTranscriber``, ``--no-batch``) stays for comparison and for audio on which
this one fails.

Memory: chunks are read as views of the audio array and one batch of windows, features and key/value caches is
alive at a time, so apart from the audio itself memory does not grow with the duration; the pipeline bounds the
audio too, by decoding and transcribing the file in pieces (``audio.stream_audio``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from whisper_subtitler.decoding.chunking import plan_chunks
from whisper_subtitler.decoding.code_switching import main_language
from whisper_subtitler.decoding.features import array_source, quietest_point
from whisper_subtitler.decoding.quality import Thresholds
from whisper_subtitler.platform.batch_advice import CPU_BATCH  # the batch size after an out-of-memory move to the CPU
from whisper_subtitler.transcription.chunk_transcriber import ChunkTranscriber, thresholds_of
from whisper_subtitler.transcription.protocol import (
    Region,
    TranscribeOptions,
    Transcriber,
    check_options,
    new_transcript,
)
from whisper_subtitler.transcription.tuning import DecodingSettings, choose_settings
from whisper_subtitler.types import Audio, LanguageDetection, Transcript

__all__ = ["BatchedDecoding", "BatchedTranscriber", "ChunkTranscriber", "thresholds_of"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BatchedDecoding:
    """The default decoding: VAD chunks in batches. ``batch_size``: ``--batch-size``; ``None`` takes the platform's
    advice, or at optimization level 2 the fastest size measured (``tuning.choose_settings``)."""

    batch_size: int | None = None

    def transcriber(self, model: Any, options: TranscribeOptions, selection: Any, model_name: str) -> Transcriber:
        """A ``BatchedTranscriber`` for ``model`` (loaded, on ``selection``'s device). Raises ``UsageError`` for
        options the model cannot decode with (``transcription.check_options``).

        Batched decoding replaces openai-whisper's decoding loop (``compat.whisper.decoding_task``): on a version of
        openai-whisper that ``compat.whisper`` does not know, the sequential transcriber is returned instead, its
        ``transcribe()`` as it is (``--no-batch``), and ``compat.whisper`` has warned once."""
        from whisper_subtitler.compat import whisper as whisper_compat

        if not whisper_compat.known():
            from whisper_subtitler.transcription.sequential import SequentialDecoding

            if getattr(selection, "dtype", None) == "bfloat16":  # openai-whisper's decoding refuses bf16 features
                from whisper_subtitler.errors import UsageError

                raise UsageError(
                    "--compute-type bfloat16 needs the batched path, which this version of openai-whisper does not "
                    "run (see the warning above)",
                    hint="use --compute-type auto, or install openai-whisper==20250625",
                )
            return SequentialDecoding().transcriber(model, options, selection, model_name)
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
        transcript = new_transcript(audio.source, audio.duration, options, self.model_name, segments, language)
        file = transcriber.file_language
        if file is None:
            return transcript
        return replace(transcript, language_detection=LanguageDetection(round(file.probability, 3), file.sure))
