"""The words of a transcript, as the Whisper tokenizer splits them, grouped in sentences.

Each line is encoded with a leading space (as Whisper's own text starts) and split into words by openai-whisper's
``Tokenizer.split_to_word_tokens`` (at spaces, or at Unicode boundaries for languages written without them), then
punctuation is joined to its word by ``whisper.timing.merge_punctuations`` with openai-whisper's default
punctuation sets, exactly as word timestamps are made when transcribing: ``" meeting."`` is one word whose times
are those of ``" meeting"``. The words are the transcript's own text, so that the output prints what the transcript
says. A sentence (split after ``.``, ``?``, ``!``, ``…`` and their CJK forms, ``cues.width.ends_sentence``) is the unit
that is kept or reported as not found in the audio.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from whisper_subtitler.align.script import Script
from whisper_subtitler.cues.width import ends_sentence
from whisper_subtitler.decoding.alignment import APPEND_PUNCTUATIONS, PREPEND_PUNCTUATIONS


@dataclass(frozen=True, slots=True)
class ScriptWord:
    """One word of the transcript: ``text`` as printed (with Whisper's leading space where the language has
    spaces), its ``tokens`` and the index of its ``sentence``."""

    text: str
    tokens: tuple[int, ...]
    sentence: int


@dataclass(frozen=True, slots=True)
class Sentence:
    """One sentence: words ``first`` to ``last`` (inclusive indices into the word list) of transcript ``line``,
    with the line's ``speaker`` (``None`` when the transcript names none)."""

    first: int
    last: int
    line: int
    speaker: str | None = None


def is_punctuation(text: str) -> bool:
    """Whether a word is punctuation only (it then takes no time of its own)."""
    stripped = text.strip()
    return bool(stripped) and all(not ch.isalnum() for ch in stripped)


def script_words(script: Script, tokenizer) -> tuple[tuple[ScriptWord, ...], tuple[Sentence, ...]]:
    """The words and sentences of ``script`` for ``tokenizer`` (openai-whisper's, of the model and language)."""
    from whisper.timing import WordTiming, merge_punctuations

    words: list[ScriptWord] = []
    sentences: list[Sentence] = []
    for number, line in enumerate(script.lines):
        text = line.text if line.text[:1].isspace() else " " + line.text
        parts, part_tokens = tokenizer.split_to_word_tokens(tokenizer.encode(text))
        timings = [WordTiming(w, list(t), 0.0, 0.0, 1.0) for w, t in zip(parts, part_tokens)]
        merge_punctuations(timings, PREPEND_PUNCTUATIONS, APPEND_PUNCTUATIONS)
        merged = [t for t in timings if t.word]
        first = len(words)
        for k, timing in enumerate(merged):
            words.append(ScriptWord(timing.word, tuple(timing.tokens), len(sentences)))
            if ends_sentence(timing.word) or k == len(merged) - 1:
                sentences.append(Sentence(first, len(words) - 1, number, line.speaker))
                first = len(words)
    return tuple(words), tuple(sentences)


def sentence_text(words: Sequence[ScriptWord], sentence: Sentence) -> str:
    """The text of ``sentence``, without the leading space."""
    return "".join(w.text for w in words[sentence.first : sentence.last + 1]).strip()
