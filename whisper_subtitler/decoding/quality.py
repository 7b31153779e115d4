"""Temperature fallback rules: which decoded chunks are redone at the next temperature, which one is kept.

Pure logic, no torch. The thresholds and the silence rule are openai-whisper's (``whisper/transcribe.py``
``decode_with_fallback``: compression ratio above 2.4 means repetitive text, an average log-probability below -1
means an unsure decoding, and both are forgiven when the no-speech probability is above 0.6, because the window
is then silence). When every temperature fails, the attempt with the best average log-probability among those that
are not repetitive is kept, else the best of all (faster-whisper ``transcribe.py`` ``generate_with_fallback``).
A row that ran out of its token budget (``chunking.token_budget``) also counts as failed: it has looped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

COMPRESSION_RATIO_THRESHOLD = 2.4  # whisper.transcribe default (gzip ratio of the text)
LOGPROB_THRESHOLD = -1.0  # whisper.transcribe default (mean log-probability per token)
NO_SPEECH_THRESHOLD = 0.6  # whisper.transcribe default (probability of the no-speech token)


@dataclass(frozen=True, slots=True)
class Thresholds:
    """Fallback thresholds; ``None`` disables a check."""

    compression_ratio: float | None = COMPRESSION_RATIO_THRESHOLD
    logprob: float | None = LOGPROB_THRESHOLD
    no_speech: float | None = NO_SPEECH_THRESHOLD


@dataclass(frozen=True, slots=True)
class Decoded:
    """One decoding of one chunk: text ``tokens`` (no special tokens), ``text``, Whisper's statistics,
    the sampling ``temperature``, ``truncated`` when the row stopped at its token budget without an end token, and
    ``token_probs``, the probability of each token among the text tokens (softmax of the raw logits over the
    vocabulary before the end token, as ``whisper.timing.find_alignment`` computes it), one per token."""

    tokens: tuple[int, ...]
    text: str
    avg_logprob: float
    compression_ratio: float
    no_speech_prob: float
    temperature: float
    truncated: bool = False
    token_probs: tuple[float, ...] = ()


def is_silence(d: Decoded, t: Thresholds = Thresholds()) -> bool:
    """True when Whisper scores the window as silence: no-speech probability above the threshold and an unsure
    decoding (``whisper.transcribe``'s ``should_skip``). Such chunks give no words."""
    return (
        t.no_speech is not None
        and t.logprob is not None
        and d.no_speech_prob > t.no_speech
        and d.avg_logprob < t.logprob
    )


# Fewer text tokens than this per second of speech: the decoder ended the window early and skipped speech.
# On the tuning files (docs/multilingual.md, "A window that ends early") every chunk gave 2.6 tokens or more per
# second of speech (real telephone English, espeak-ng English, five languages of read speech), and the one that
# skipped two of its three clips gave 0.58.
MIN_TOKENS_PER_S = 1.0


def stopped_early(d: Decoded, speech_s: float, t: Thresholds = Thresholds()) -> bool:
    """True when ``d``, the decoding of a window holding ``speech_s`` seconds of speech, has some text but far too
    little for that speech (under :data:`MIN_TOKENS_PER_S` tokens per second) and ended with an end token: Whisper
    ended the window after its first words and the rest of the speech got none. openai-whisper's ``transcribe``
    catches this case with its timestamp tokens (it seeks to the last one and decodes on from there); decoding
    without timestamps has to count. A window Whisper scores as silence (:func:`is_silence`) has not stopped early."""
    return bool(d.tokens) and not d.truncated and not is_silence(d, t) and len(d.tokens) < MIN_TOKENS_PER_S * speech_s


def needs_fallback(d: Decoded, t: Thresholds = Thresholds()) -> bool:
    """True when ``d`` should be decoded again at the next temperature (see the module docstring)."""
    failed = d.truncated
    if t.compression_ratio is not None and d.compression_ratio > t.compression_ratio:
        failed = True
    if t.logprob is not None and d.avg_logprob < t.logprob:
        failed = True
    if is_silence(d, t):
        failed = False
    return failed


def best_attempt(attempts: Sequence[Decoded], t: Thresholds = Thresholds()) -> Decoded:
    """The decoding to keep for one chunk: the first that passes, else the most probable non-repetitive one,
    else the most probable of all. Raises ``ValueError`` for no attempts."""
    if not attempts:
        raise ValueError("no decoding attempts")
    for d in attempts:
        if not needs_fallback(d, t):
            return d
    calm = [
        d
        for d in attempts
        if not d.truncated and (t.compression_ratio is None or d.compression_ratio <= t.compression_ratio)
    ]
    return max(calm or attempts, key=lambda d: d.avg_logprob)
