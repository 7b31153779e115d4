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
from dataclasses import dataclass, replace
from typing import Any

from whisper_subtitler.compat import whisper as whisper_compat
from whisper_subtitler.decoding.code_switching import main_language
from whisper_subtitler.transcription.protocol import (
    Region,
    TranscribeOptions,
    check_options,
    new_transcript,
)
from whisper_subtitler.types import SAMPLE_RATE, Audio, LanguageDetection, Segment, Transcript, Word

log = logging.getLogger(__name__)


def _segment(raw: dict, language: str | None = None) -> Segment:
    words = tuple(
        Word(w["word"], float(w["start"]), float(w["end"]), float(w["probability"]), language=language)
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
        language=language,
    )


def _transcribe_clips(whisper, model, audio: Audio, clips, language: str | None, options: TranscribeOptions) -> dict:
    """openai-whisper's ``transcribe()`` over ``clips`` ((start, end) seconds) of ``audio``, with word timestamps and
    the decoding options of ``options`` under their own names. The initial prompt is carried into every window
    (``carry_initial_prompt``), as the batched path gives it to every chunk. ``language`` None: openai-whisper detects
    it on the first window (its result's ``language``).

    Each clip ends at the audio's last mel frame at the latest: openai-whisper 20250625 decodes a clip that reaches
    past the end of the audio forever (its window there has no frames, so its seek never moves; openai/whisper pull
    request 2005), and a speech region's padding can reach past the end."""
    per_second = whisper.audio.FRAMES_PER_SECOND
    last = len(audio.samples) // whisper.audio.HOP_LENGTH / per_second  # openai-whisper's content frames, in seconds
    clips = [(a, min(b, last)) for a, b in clips if round(a * per_second) < round(min(b, last) * per_second)]
    if not clips:
        return {"segments": []}
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
        chunks = plan_chunks(speech)
        if not chunks:
            return new_transcript(audio.source, audio.duration, options, self.model_name, language=language)
        language = language or options.language or (None if model.is_multilingual else "en")
        detection = None
        runs: Sequence[tuple[str | None, list[Region]]]
        if language is not None:
            runs = [(language, [(c.start, c.end) for c in chunks])]
        elif not whisper_compat.known():  # openai-whisper's own detection, not the language plan (compat.whisper)
            runs = [(None, [(c.start, c.end) for c in chunks])]
        else:
            runs, detection = self._language_runs(audio, chunks, speech)
        started = time.perf_counter()
        segments: list[Segment] = []
        for run_language, clips in runs:
            first_sample = round((audio.offset + clips[0][0]) * SAMPLE_RATE)
            cuda = [model.device.index or 0] if model.device.type == "cuda" else []
            with torch.random.fork_rng(devices=cuda):
                torch.manual_seed(sampling_seed(options.seed, first_sample, 0.0))
                result = _transcribe_clips(whisper, model, audio, clips, run_language, options)
            run_language = run_language or result.get("language")
            segments.extend(_segment(s, run_language) for s in result["segments"] if s.get("words"))
        segments.sort(key=lambda s: s.start)
        if progress is not None:
            progress(1.0)
        log.debug("%s: decoded %d segments in %.1f s", audio.source, len(segments), time.perf_counter() - started)
        main = main_language((s.language, s.end - s.start) for s in segments) or runs[0][0]
        transcript = new_transcript(audio.source, audio.duration, options, self.model_name, segments, main)
        return replace(transcript, language_detection=detection)

    def _language_runs(
        self, audio: Audio, chunks, speech: Sequence[Region]
    ) -> tuple[list[tuple[str, list[Region]]], LanguageDetection | None]:
        """The clips ((start, end) seconds) to decode in each language, found per speech region as the batched
        path finds them (``decoding.language_plan``), languages in order of their first clip; and how sure the
        detection of the file's language was."""
        import torch

        from whisper_subtitler.decoding.features import array_source, chunk_samples, encode_windows
        from whisper_subtitler.decoding.language_plan import language_units, plan_languages
        from whisper_subtitler.platform.batch_advice import CPU_BATCH

        source = array_source(audio.samples, audio.sample_rate)
        with torch.no_grad():
            plan = plan_languages(
                self.model,
                chunks,
                language_units(audio.samples) or speech,
                source,
                encode=lambda group: encode_windows(self.model, [chunk_samples(c, source) for c in group]),
                batch_size=CPU_BATCH,
                allowed=self.options.languages,
                fp16=bool(self.options.fp16) and self.model.device.type != "cpu",
            )
        runs: dict[str, list[Region]] = {}
        for chunk, language in plan.items:
            runs.setdefault(language, []).append((chunk.start, chunk.end))
        file = plan.file
        return list(runs.items()), None if file is None else LanguageDetection(round(file.probability, 3), file.sure)
