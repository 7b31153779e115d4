"""Stage 2: transcription with openai-whisper, with word timestamps.

Decoding covers only the speech the VAD found (``vad.speech_regions``), in the same windows of at most 30 s as the
batched path (``decoding.chunking.plan_chunks``), given to openai-whisper's ``transcribe()`` as ``clip_timestamps``
and decoded one after another: decoding starts at the speech onset, so the first timestamp is not forced
to 0 over leading silence (the repetition loops seen on pyannote's sample), and nothing is decoded over silence.
Word timestamps come from Whisper's cross-attention alignment (``word_timestamps=True``); segment timestamps alone
are whole seconds on our clips (../shared/MODELS.md).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from whisper_subtitler.types import SAMPLE_RATE, Audio, Segment, Transcript, Word

log = logging.getLogger(__name__)

LANGUAGE_PROBE_S = 30.0  # seconds of speech, from the first onset, used to detect the language


@dataclass(frozen=True)
class TranscribeOptions:
    """What to decode: ``language`` (ISO 639-1 code, ``None`` = detect), ``task`` (``transcribe`` or ``translate``
    to English), ``temperatures`` for openai-whisper's fallback, ``fp16`` for half-precision decoding, ``seed`` for
    the fallback's sampling (``--seed``: same input and options, same output files)."""

    language: str | None = None
    task: str = "transcribe"
    temperatures: tuple[float, ...] = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
    fp16: bool = False
    initial_prompt: str | None = None
    seed: int = 0


def detect_language(model, samples: np.ndarray, onset: float) -> tuple[str, float]:
    """Detect the spoken language from up to 30 s of ``samples`` (16 kHz mono) from ``onset`` seconds.

    Returns ``(ISO code, probability)``. English-only models always answer ``("en", 1.0)``.
    """
    import whisper

    if not model.is_multilingual:
        return "en", 1.0
    first = int(onset * SAMPLE_RATE)
    piece = whisper.pad_or_trim(samples[first : first + int(LANGUAGE_PROBE_S * SAMPLE_RATE)])
    mel = whisper.log_mel_spectrogram(piece, model.dims.n_mels).to(model.device)
    _, probs = model.detect_language(mel)
    language = max(probs, key=probs.get)
    return language, float(probs[language])


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
    """openai-whisper's ``transcribe()`` over ``clips`` ((start, end) seconds) of ``audio``, with word timestamps."""
    return whisper.transcribe(
        model,
        audio.samples,
        language=language,
        task=options.task,
        temperature=options.temperatures,
        word_timestamps=True,
        condition_on_previous_text=False,  # conditioning made base loop on real audio
        clip_timestamps=[t for clip in clips for t in clip],
        fp16=options.fp16,
        initial_prompt=options.initial_prompt,
        verbose=None,  # None: no printing to stdout and no progress bar
    )


def transcribe_sequential(
    model,
    audio: Audio,
    speech: Sequence[tuple[float, float]],
    options: TranscribeOptions,
    model_name: str = "",
) -> Transcript:
    """Transcribe ``audio`` with openai-whisper's ``transcribe()`` over the VAD ``speech`` regions (seconds).

    Returns a ``Transcript`` whose words carry word timestamps in seconds from the start of the audio.
    Audio without speech gives a transcript without segments (no model call).

    openai-whisper's temperature fallback samples with torch's global random number generator; it is seeded here
    from ``options.seed`` and the first clip's first sample in the file (``decoding.budgeted.sampling_seed``), inside
    ``torch.random.fork_rng`` so the caller's generator is left as it was: the same audio and options give the same
    transcript, whatever ran before. (Unlike the batched path, a chunk's draws here depend on the chunks before it
    in the same call.)
    """
    import torch
    import whisper

    from whisper_subtitler.decoding.budgeted import sampling_seed
    from whisper_subtitler.decoding.chunking import plan_chunks

    clips = [(c.start, c.end) for c in plan_chunks(speech)]
    if not clips:
        return Transcript(segments=(), language=options.language or "", duration=audio.duration,
                          model=model_name, source=str(audio.source), task=options.task)
    language = options.language
    if language is None:
        language, probability = detect_language(model, audio.samples, clips[0][0])
        log.info("%s: detected language %s (p=%.2f)", audio.source, language, probability)
    started = time.perf_counter()
    first_sample = round((audio.offset + clips[0][0]) * SAMPLE_RATE)
    cuda = [model.device.index or 0] if model.device.type == "cuda" else []
    with torch.random.fork_rng(devices=cuda):
        torch.manual_seed(sampling_seed(options.seed, first_sample, 0.0))
        result = _transcribe_clips(whisper, model, audio, clips, language, options)
    segments = tuple(_segment(s) for s in result["segments"] if s.get("words"))
    log.debug("%s: decoded %d segments in %.1f s", audio.source, len(segments), time.perf_counter() - started)
    return Transcript(
        segments=segments,
        language=language,
        duration=audio.duration,
        model=model_name,
        source=str(audio.source),
        task=options.task,
    )
