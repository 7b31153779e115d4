"""Stage 2, the sequential implementation (``--no-batch``): openai-whisper's ``transcribe()``, word timestamps on.

Decoding covers only the speech the VAD found (``vad.speech_regions``), in the same windows of at most 30 s as the
batched path (``decoding.chunking.plan_chunks``), given to openai-whisper's ``transcribe()`` as ``clip_timestamps``
and decoded one after another: decoding starts at the speech onset, so the first timestamp is not forced
to 0 over leading silence (the repetition loops seen on pyannote's sample), and nothing is decoded over silence.
Word timestamps come from Whisper's cross-attention alignment (``word_timestamps=True``): segment timestamps alone
are too coarse for subtitles (docs/models.md, "Timestamps").
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from whisper_subtitler.transcription.protocol import (
    Region,
    TranscribeOptions,
    check_options,
    detect_language,
    new_transcript,
)
from whisper_subtitler.types import SAMPLE_RATE, Audio, Segment, Transcript, Word

log = logging.getLogger(__name__)

LANGUAGE_PROBE_S = 30.0  # seconds of audio, from the first speech onset, used to detect the language


def _segment(raw: dict) -> Segment:
    words = tuple(
        Word(text=w["word"], start=float(w["start"]), end=float(w["end"]), probability=float(w["probability"]))
        for w in raw.get("words", [])
    )
    return Segment(
        start=float(raw["start"]),
        end=float(raw["end"]),
        text=raw["text"],
        words=words,
        avg_logprob=float(raw.get("avg_logprob", 0.0)),
        compression_ratio=float(raw.get("compression_ratio", 1.0)),
        no_speech_prob=float(raw.get("no_speech_prob", 0.0)),
    )


def _transcribe_clips(whisper, model, audio: Audio, clips, language: str, options: TranscribeOptions) -> dict:
    """openai-whisper's ``transcribe()`` over ``clips`` ((start, end) seconds) of ``audio``, with word timestamps and
    the decoding options of ``options`` under their own names. The initial prompt is carried into every window
    (``carry_initial_prompt``), as the batched path gives it to every chunk."""
    return whisper.transcribe(
        model,
        audio.samples,
        language=language,
        task=options.task,
        temperature=options.temperatures,
        compression_ratio_threshold=options.compression_ratio_threshold,
        logprob_threshold=options.logprob_threshold,
        no_speech_threshold=options.no_speech_threshold,
        word_timestamps=True,
        condition_on_previous_text=options.condition_on_previous_text,  # off by default: base looped on real audio
        initial_prompt=options.initial_prompt,
        carry_initial_prompt=options.initial_prompt is not None,
        clip_timestamps=[t for clip in clips for t in clip],
        fp16=options.fp16,
        beam_size=options.beam_size,
        best_of=options.best_of,
        patience=options.patience,
        suppress_tokens=list(options.suppressed()),
        verbose=None,  # None: no printing to stdout and no progress bar
    )


@dataclass(frozen=True)
class SequentialDecoding:
    """``--no-batch``: decode with openai-whisper's ``transcribe()``, one window after another; no options of its
    own (the batch size and the level-2 settings are the batched path's)."""

    def transcriber(
        self, model: Any, options: TranscribeOptions, selection: Any, model_name: str
    ) -> SequentialTranscriber:
        """A ``SequentialTranscriber`` for ``model`` (loaded, on its device); ``selection`` is not needed. Raises
        ``UsageError`` for options the model cannot decode with (``transcription.check_options``)."""
        check_options(options, model)
        return SequentialTranscriber(model, options, model_name=model_name)


class SequentialTranscriber:
    """The sequential ``Transcriber``: openai-whisper's ``transcribe()`` over the VAD speech regions.

    ``model`` is an openai-whisper ``Whisper`` on its device; ``model_name`` is written into the transcripts.
    openai-whisper's temperature fallback samples with torch's global random number generator; it is seeded here
    from ``options.seed`` and the first clip's first sample in the file (``decoding.budgeted.sampling_seed``), inside
    ``torch.random.fork_rng`` so the caller's generator is left as it was: the same audio and options give the same
    transcript, whatever ran before. (Unlike the batched path, a chunk's draws here depend on the chunks before it
    in the same call.)
    """

    def __init__(self, model: Any, options: TranscribeOptions, *, model_name: str = "") -> None:
        self.model = model
        self.options = options
        self.model_name = model_name

    def transcribe(
        self,
        audio: Audio,
        speech: Sequence[Region],
        language: str | None = None,
        progress: Callable[[float], None] | None = None,
    ) -> Transcript:
        """See ``transcription.Transcriber``: word timestamps in seconds from the start of ``audio``. openai-whisper's
        ``transcribe()`` reports no progress of its own: ``progress`` is called once, at the end."""
        import torch
        import whisper

        from whisper_subtitler.decoding.budgeted import sampling_seed
        from whisper_subtitler.decoding.chunking import plan_chunks

        options, model = self.options, self.model
        clips = [(c.start, c.end) for c in plan_chunks(speech)]
        if not clips:
            return new_transcript(audio.source, audio.duration, options, self.model_name, language=language)
        language = language or options.language or self._detect_language(audio, clips[0][0])
        started = time.perf_counter()
        first_sample = round((audio.offset + clips[0][0]) * SAMPLE_RATE)
        cuda = [model.device.index or 0] if model.device.type == "cuda" else []
        with torch.random.fork_rng(devices=cuda):
            torch.manual_seed(sampling_seed(options.seed, first_sample, 0.0))
            result = _transcribe_clips(whisper, model, audio, clips, language, options)
        if progress is not None:
            progress(1.0)
        segments = tuple(_segment(s) for s in result["segments"] if s.get("words"))
        log.debug("%s: decoded %d segments in %.1f s", audio.source, len(segments), time.perf_counter() - started)
        return new_transcript(audio.source, audio.duration, options, self.model_name, segments, language)

    def _detect_language(self, audio: Audio, onset: float) -> str:
        """The language of the ``LANGUAGE_PROBE_S`` seconds of ``audio`` from ``onset`` (seconds)."""
        import torch

        from whisper_subtitler.decoding.features import encode_windows

        first = int(onset * SAMPLE_RATE)
        window = audio.samples[first : first + int(LANGUAGE_PROBE_S * SAMPLE_RATE)]
        with torch.no_grad():
            return detect_language(self.model, encode_windows(self.model, [window]))
