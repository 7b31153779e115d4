"""Word timestamps for a decoded chunk, from the audio features the decoding already computed.

openai-whisper's ``whisper.timing.add_word_timestamps`` times words by dynamic time warping over the
cross-attention weights of the alignment heads (``find_alignment``), and then applies its rules for punctuation
and over-long words. ``find_alignment`` calls ``model(mel, tokens)``, which runs the encoder again; here it gets a
view of the model whose call takes the encoder output instead (``EncodedAudioModel``), so the same code gives the
same words with one decoder pass per chunk and no second encoder pass (a quarter of the cost, PERFORMANCE.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from whisper.audio import HOP_LENGTH, SAMPLE_RATE
from whisper.timing import add_word_timestamps


class EncodedAudioModel:
    """A Whisper model seen through ``__call__(audio_features, tokens)``: ``(B, n_audio_ctx, n_audio_state)``
    features and ``(B, T)`` tokens -> ``(B, T, n_vocab)`` logits. Every other attribute is the model's own."""

    def __init__(self, model) -> None:
        self._model = model

    def __getattr__(self, name: str):
        return getattr(self._model, name)

    def __call__(self, audio_features, tokens):
        return self._model.decoder(tokens, audio_features)


@dataclass(frozen=True, slots=True)
class TimedWord:
    """A word with start and end in seconds from the start of its chunk, and its mean token probability."""

    text: str
    start: float
    end: float
    probability: float


def align_words(
    model, tokenizer, tokens: Sequence[int], audio_features, n_samples: int
) -> list[TimedWord]:
    """Word timestamps for the text ``tokens`` of one chunk.

    ``audio_features``: the chunk's encoder output, shape ``(n_audio_ctx, n_audio_state)``; ``n_samples``: the
    chunk's length in samples at 16 kHz (the alignment only looks at frames that hold audio). Times are seconds
    from the chunk start, rounded to 10 ms as openai-whisper does. Empty for no text tokens.
    """
    text_tokens = [t for t in tokens if t < tokenizer.eot]
    if not text_tokens:
        return []
    segment = {"seek": 0, "start": 0.0, "end": n_samples / SAMPLE_RATE, "tokens": text_tokens}
    add_word_timestamps(
        segments=[segment],
        model=EncodedAudioModel(model),
        tokenizer=tokenizer,
        mel=audio_features,
        num_frames=n_samples // HOP_LENGTH,
        last_speech_timestamp=0.0,
    )
    return [
        TimedWord(w["word"], float(w["start"]), float(w["end"]), float(w["probability"]))
        for w in segment.get("words", [])
    ]
