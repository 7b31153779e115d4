"""openai-whisper's tokenizer, set up once the model is loaded (``platform.prepare_model`` calls
:func:`prepare_tokenizer`): its vocabulary read before the first file, and its ``encode`` without tiktoken's scan
for special-token text."""

from __future__ import annotations

from typing import Any

from whisper_subtitler.compat import whisper as whisper_compat


def prepare_tokenizer(model: Any) -> None:
    """Build the tokenizer of ``model`` (a ``whisper.model.Whisper``, or anything with its ``is_multilingual`` and
    ``num_languages``; ``whisper.tokenizer.get_tokenizer`` keeps it for the process) and make its encoding's
    ``encode`` take special-token text (``<|endoftext|>``, ...) as plain text instead of scanning every text for it.

    tiktoken's ``Encoding.encode`` looks for every special token in each text by default
    (``disallowed_special="all"``), with one regular expression of all of them compiled on first use: 1,800
    alternatives in Whisper's vocabularies, 0.17 s of every process's first file on a 2-core CPU (0.7 s under a
    profiler; docs/performance.md), spent computing the non-speech tokens that decoding suppresses. Whisper's
    decoding encodes fixed symbols, a space and the user's prompt; the scan would only turn a prompt that contains
    such text into a ``ValueError``. The tokens of any other text are the same. Idempotent; the replaced method
    stays reachable as ``_whispers`` (``compat.whisper.skip_special_token_scan``); on an openai-whisper version that
    ``compat.whisper`` does not know, the tokenizer is only built.

    Reading the vocabulary (about 50,000 base64 lines) also moves here, out of the first file, as numba's DTW does in
    ``platform.word_timing``."""
    from whisper.tokenizer import get_tokenizer

    encoding = get_tokenizer(model.is_multilingual, num_languages=model.num_languages).encoding
    whisper_compat.skip_special_token_scan(encoding)
