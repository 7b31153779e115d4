"""Stage 2, transcription: the speech regions of some audio in, a ``Transcript`` with word timestamps out.

One protocol, two implementations, chosen once per run (``RunOptions.decoding``, a ``Decoding``):

    transcription.batched.BatchedTranscriber        VAD chunks decoded in batches (the default)
    transcription.sequential.SequentialTranscriber  openai-whisper's transcribe() over the same chunks (--no-batch)

Both read the same ``TranscribeOptions``, find the language with the same ``detect_language`` and build their result
with ``new_transcript``. Nothing here imports torch.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from whisper_subtitler.types import Audio, Segment, Transcript

log = logging.getLogger(__name__)

Region = tuple[float, float]  # (start, end) of a speech region, in seconds


@dataclass(frozen=True)
class TranscribeOptions:
    """What to decode, with openai-whisper's names and meanings (``whisper.transcribe`` and ``DecodingOptions``).

    ``language``: ISO 639-1 code, forced for the whole file, ``None`` = detect per speech region
    (``decoding.language_plan``); ``languages``: with ``language`` ``None``, the languages detection may choose from
    (``--language en,es``), all of the model's when empty; ``task``: ``transcribe`` or ``translate`` to English;
    ``temperatures``: the fallback schedule, tried in order while a decoding fails the thresholds; ``fp16``:
    half-precision decoding; ``initial_prompt``: text given as the preceding context of every window (names,
    spellings); ``beam_size``: beams at temperature 0 (``None``: greedy); ``best_of``: candidates sampled at a
    temperature above 0 (``None``: one); ``patience``: beam search patience (arXiv:2204.05424; needs ``beam_size``);
    ``suppress_tokens``: comma-separated token ids never sampled, ``-1`` for Whisper's non-speech symbols, empty
    for none; the three thresholds: a decoding whose gzip compression ratio is above ``compression_ratio_threshold``
    or whose mean token log-probability is below ``logprob_threshold`` is decoded again at the next temperature,
    unless its no-speech probability is above ``no_speech_threshold`` (then the window is silence);
    ``condition_on_previous_text``: the previous window's text as the prompt of the next one (the sequential path
    only); ``seed``: the fallback's sampling (``--seed``: same input and options, same output files)."""

    language: str | None = None
    languages: tuple[str, ...] = ()
    task: str = "transcribe"
    temperatures: tuple[float, ...] = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
    fp16: bool = False
    initial_prompt: str | None = None
    seed: int = 0
    beam_size: int | None = None
    best_of: int | None = None
    patience: float | None = None
    suppress_tokens: str = "-1"
    compression_ratio_threshold: float = 2.4
    logprob_threshold: float = -1.0
    no_speech_threshold: float = 0.6
    condition_on_previous_text: bool = False

    def suppressed(self) -> tuple[int, ...]:
        """``suppress_tokens`` as integers (``-1`` kept: Whisper expands it); raises ``ValueError`` when it is not a
        comma-separated list of integers of at least -1."""
        ids = tuple(int(t) for t in self.suppress_tokens.split(",") if t.strip())
        if any(i < -1 for i in ids):
            raise ValueError(f"token ids are -1 or above: {self.suppress_tokens!r}")
        return ids


def check_options(options: TranscribeOptions, model: Any) -> None:
    """Refuse decoding options that ``model`` (an openai-whisper ``Whisper``) cannot decode with: a suppressed
    token id outside its vocabulary. Raises ``UsageError`` (exit 2), before the first file."""
    from whisper_subtitler.errors import UsageError

    outside = [i for i in options.suppressed() if i >= model.dims.n_vocab]
    if outside:
        last = model.dims.n_vocab - 1
        raise UsageError(f"--suppress-tokens {outside[0]} is not a token id of this model (0 to {last})")


class Transcriber(Protocol):
    """Turns speech regions of audio into a ``Transcript``; it owns its model, options and the model's device."""

    def transcribe(
        self,
        audio: Audio,
        speech: Sequence[Region],
        language: str | None = None,
        progress: Callable[[float], None] | None = None,
    ) -> Transcript:
        """The transcript of ``speech`` (regions in seconds from the start of ``audio``, sorted, disjoint): times in
        seconds from the start of ``audio``, no model call without speech. ``language``: a language forced for the
        whole file, else the options' language, else detected per speech region; each segment carries the language
        it was decoded in, and the transcript's is the one spoken longest. ``progress``, when given,
        is called with the share of ``speech`` decoded so far (0 to 1) as the work advances."""
        ...


class Decoding(Protocol):
    """How a run decodes, chosen once (``batched.BatchedDecoding``, ``sequential.SequentialDecoding``),
    with the options of that way: it makes the run's ``Transcriber`` once Whisper is loaded."""

    def transcriber(self, model: Any, options: TranscribeOptions, selection: Any, model_name: str) -> Transcriber:
        """The ``Transcriber`` for ``model`` (an openai-whisper ``Whisper`` on ``selection``'s device)."""
        ...


def detect_language(model: Any, features: Any) -> str:
    """The language spoken in one 30-s window: ``en`` for English-only models, else the most likely language
    token of Whisper's language detection (``whisper.decoding.detect_language``) on ``features``, the encoder
    output of shape ``(1, n_audio_ctx, n_audio_state)``, so that no second encoder pass is needed."""
    if not model.is_multilingual:
        return "en"
    _, probs = model.detect_language(features)
    language = str(max(probs[0], key=probs[0].get))
    log.info("detected language %s (p=%.2f)", language, probs[0][language])
    return language


def new_transcript(
    source: Path | str,
    duration: float,
    options: TranscribeOptions,
    model_name: str,
    segments: Iterable[Segment] = (),
    language: str | None = None,
) -> Transcript:
    """The ``Transcript`` of ``duration`` seconds of ``source``: empty without ``segments``; its language is
    ``language``, else the one asked for in ``options``, else ``""`` (nothing was detected)."""
    return Transcript(
        segments=tuple(segments),
        language=language or options.language or "",
        duration=duration,
        model=model_name,
        source=str(source),
        task=options.task,
    )
