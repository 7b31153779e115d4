"""Forced alignment of known words, one window at a time, with openai-whisper's word-timestamp method.

The words are the transcript's; their times come from Whisper's cross-attention alignment on exactly those
tokens: ``whisper.timing.find_alignment`` (dynamic time warping over the alignment heads' cross-attention weights,
the method openai-whisper uses for ``word_timestamps=True``, and stable-ts's ``align``), which also gives each
token's probability under the model. ``decoding/alignment.py`` computes the same alignment for decoded batches; here
each window starts where the previous one's words ended, so there is nothing to batch, and the token
probabilities of the given text come from the same model pass.

Distributing the text over windows (after stable-ts's ``Aligner``): a window is given the words that follow the last
placed one, more than it can hold. DTW must reach the end of the text at the end of the audio, so the words the
window does not hold are packed into its last frames, with no duration or into the silence after its last speech;
they are carried to the next window (a word that starts less than ``END_MARGIN`` before the window's speech ends
is carried too), as is the last word when the window is cut in speech and the word runs to the cut.
When every word given had a duration, the text
was too short for the window and it is aligned again with twice as many tokens. A window none of whose words gets
a duration places nothing and the next one starts after it. Memory holds one window of audio features and one text
of at most ``MAX_TEXT_TOKENS`` tokens, whatever the duration.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from whisper_subtitler.align import windows
from whisper_subtitler.align.windows import next_window
from whisper_subtitler.align.words import ScriptWord, is_punctuation
from whisper_subtitler.types import SAMPLE_RATE

log = logging.getLogger(__name__)

MAX_TEXT_TOKENS = 440  # the decoder's 448 positions less the start-of-transcript sequence and the end token
TOKENS_PER_SECOND = 8.0  # first guess of the text a second of audio holds (fast English speech: about 4.5)
BASE_TOKENS = 32  # ... plus this many
END_MARGIN = 0.1  # seconds: a word ending this close to the window's end may be cut, and is aligned again
MEDFILT_WIDTH = 7  # frames, whisper.timing.find_alignment default
QK_SCALE = 1.0  # whisper.timing.find_alignment default


@dataclass(frozen=True, slots=True)
class Timed:
    """A word's alignment: ``start`` and ``end`` in seconds, the mean ``probability`` of its tokens given the
    audio and the words before it."""

    start: float
    end: float
    probability: float

    @property
    def duration(self) -> float:
        return self.end - self.start


def align_window(model, tokenizer, samples: np.ndarray, words: Sequence[ScriptWord]) -> list[Timed]:
    """Times of ``words`` in ``samples`` (16 kHz mono, at most 30 s), in seconds from its start.

    One encoder and one decoder pass (``whisper.timing.find_alignment``). The split words it returns are mapped back
    to ``words`` by their tokens; a word's times are those of its parts that are not punctuation, as
    ``merge_punctuations`` keeps them.
    """
    import torch
    import whisper
    from whisper.audio import HOP_LENGTH
    from whisper.timing import find_alignment

    tokens = [t for w in words for t in w.tokens]
    dtype = next(model.parameters()).dtype
    mel = whisper.log_mel_spectrogram(
        whisper.pad_or_trim(torch.from_numpy(np.ascontiguousarray(samples))), model.dims.n_mels, device=model.device
    ).to(dtype)
    parts = find_alignment(
        model, tokenizer, tokens, mel, len(samples) // HOP_LENGTH, medfilt_width=MEDFILT_WIDTH, qk_scale=QK_SCALE
    )
    spans, k = [], 0
    for part in parts:
        spans.append((k, k + len(part.tokens), part))
        k += len(part.tokens)
    out, k, j = [], 0, 0
    for word in words:
        a, b = k, k + len(word.tokens)
        k = b
        while j < len(spans) and spans[j][1] <= a:
            j += 1
        covering = [p for s, e, p in spans[j:] if s < b and e > a] if j < len(spans) else []
        core = [p for p in covering if not is_punctuation(p.word)] or covering
        if not core:
            out.append(Timed(0.0, 0.0, 0.0))
            continue
        out.append(
            Timed(
                float(min(p.start for p in core)),
                float(max(p.end for p in core)),
                float(np.mean([p.probability for p in core])),
            )
        )
    return out


def placed_count(times: Sequence[Timed], window_seconds: float, speech_end: float, more_text: bool) -> int:
    """How many of a window's words (a prefix) it places (see the module docstring): up to the last one with a
    duration that starts before the window's speech ends (``speech_end``, seconds from the window's start; the
    window's end when it is cut in speech), less that one when the window is cut in speech, text follows and the
    word runs to the cut. The last word of the transcript may start after the speech (its end is snapped later)."""
    ends_in_speech = speech_end >= window_seconds - 1e-6
    nonzero = [
        i
        for i, t in enumerate(times)
        if t.duration > 0 and (t.start < speech_end - END_MARGIN or (i == len(times) - 1 and not more_text))
    ]
    if not nonzero:
        return 0
    last = nonzero[-1]
    follows = more_text or last < len(times) - 1
    if ends_in_speech and follows and len(nonzero) > 1 and times[last].end >= window_seconds - END_MARGIN:
        last = nonzero[-2]
    return last + 1


class WindowAligner:
    """Places ``words`` in audio given piece by piece (``align_piece``), window after window; ``times[i]`` is
    word ``i``'s alignment in seconds from the start of the file, ``None`` while it is not placed."""

    def __init__(self, model, tokenizer, words: Sequence[ScriptWord]) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.words = list(words)
        self.times: list[Timed | None] = [None] * len(self.words)
        self.position = 0  # the first word not placed yet
        self.seek = 0.0  # seconds: where the next window may start
        self.windows = 0
        self._carry: tuple[np.ndarray, float, list[tuple[float, float]]] | None = None

    @property
    def done(self) -> bool:
        """Whether every word was given a place."""
        return self.position >= len(self.words)

    def _batch(self, budget: int) -> int:
        """The number of words from ``position`` whose tokens fit ``budget`` (at least one)."""
        total, n = 0, 0
        for word in self.words[self.position :]:
            if n and total + len(word.tokens) > budget:
                break
            total += len(word.tokens)
            n += 1
        return n

    def align_piece(
        self, samples: np.ndarray, offset: float, regions: Sequence[tuple[float, float]], last: bool = True
    ) -> None:
        """Place words in this piece of audio: ``samples`` (16 kHz mono) starting ``offset`` seconds into the file,
        with its VAD speech ``regions`` in seconds from the start of the file; ``last``: no piece follows.

        A window is aligned only when the audio at hand holds its whole ``WINDOW_S`` seconds (or no piece follows):
        the audio from the last placed word on (about a window's worth) is kept and aligned with the next piece, so
        the cuts between pieces do not change the windows."""
        if self._carry is not None:
            kept, kept_offset, kept_regions = self._carry
            samples, offset = np.concatenate([kept, samples]), kept_offset
            regions = [*kept_regions, *regions]
            self._carry = None
        limit = offset + len(samples) / SAMPLE_RATE
        seek = max(self.seek, offset)
        while not self.done:
            window = next_window(regions, seek, limit)
            if window is None:
                break
            start, end = window
            if not last and start + windows.WINDOW_S > limit:
                break  # the piece may end before this window would: aligned with the next piece
            chunk = samples[max(0, round((start - offset) * SAMPLE_RATE)) : round((end - offset) * SAMPLE_RATE)]
            budget = min(MAX_TEXT_TOKENS, BASE_TOKENS + math.ceil(TOKENS_PER_SECOND * (end - start)))
            while True:
                n = self._batch(budget)
                times = align_window(self.model, self.tokenizer, chunk, self.words[self.position : self.position + n])
                more = self.position + n < len(self.words)
                if more and budget < MAX_TEXT_TOKENS and all(t.duration > 0 for t in times[-2:]):
                    budget = min(MAX_TEXT_TOKENS, budget * 2)  # the text ran out before the audio did
                    continue
                break
            self.windows += 1
            speech_end = max((min(b, end) for a, b in regions if a < end and b > start), default=end)
            count = placed_count(times, end - start, speech_end - start, more)
            log.debug("window %.2f-%.2f s: %d words given, %d placed", start, end, n, count)
            if count == 0:
                seek = end
                continue
            for i, t in enumerate(times[:count]):
                self.times[self.position + i] = Timed(start + t.start, start + t.end, t.probability)
            self.position += count
            seek = start + times[count - 1].end
        if not last and not self.done:
            k = min(len(samples), max(0, round((seek - offset) * SAMPLE_RATE)))
            self._carry = (samples[k:], offset + k / SAMPLE_RATE, [(a, b) for a, b in regions if b > seek])
        self.seek = seek
