"""Where a line may break in a language written without spaces: between phrases, never inside a word.

Whisper's words in Japanese, Chinese and Thai are token pieces (one or a few characters), not words, so breaking
between any two of them breaks words apart. BudouX (Google, Apache-2.0; ``budoux`` on PyPI, no dependencies) is the
line-breaking model browsers use for these languages (Chrome's ``word-break: auto-phrase``): it splits a sentence
into phrases, each a word with the particles and punctuation that belong to it (``今日は`` / ``天気ですね。``). A
Whisper word that starts inside a BudouX phrase is glued to the one before it (``continuations``), so that line
breaks and cue boundaries fall only between phrases; the line breaker still prefers the phrase ends after
punctuation (、。，！？; ``linebreak.break_penalty``). A phrase wider than a whole line is split by characters, the
last resort.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

# Whisper language -> BudouX model (``budoux.load_default_*_parser``).
MODELS = {"ja": "japanese", "zh": "simplified_chinese", "yue": "traditional_chinese", "th": "thai"}


@functools.cache
def _parser(language: str) -> Any | None:
    model = MODELS.get(language)
    if model is None:
        return None
    try:
        import budoux
    except ImportError:  # a dependency; without it, every Whisper word boundary is a break point, as before
        return None
    load = getattr(budoux, f"load_default_{model}_parser", None)
    return load() if load is not None else None


def continuations(language: str | None, texts: Sequence[str]) -> list[bool]:
    """For each of ``texts`` (Whisper's word texts, in order, of one run of ``language``), whether it continues the
    phrase of the word before it (so no line break or cue boundary may come before it). All ``False`` for a language
    without a BudouX model; the first is always ``False``. A word that starts with a space (Whisper wrote one) always
    starts a phrase."""
    out = [False] * len(texts)
    parser = _parser((language or "").lower().split("-")[0])
    if parser is None or len(texts) < 2:
        return out
    text = "".join(texts)
    phrases = parser.parse(text)
    if "".join(phrases) != text:  # not a split of the text: no phrase boundaries known
        return out
    starts: set[int] = set()
    position = 0
    for phrase in phrases:
        starts.add(position)
        position += len(phrase)
    position = len(texts[0])
    for k in range(1, len(texts)):
        text = texts[k]
        out[k] = position not in starts and not text[:1].isspace() and not texts[k - 1][-1:].isspace()
        position += len(text)
    return out
