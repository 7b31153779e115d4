"""Speech that got no words: the stretches where the VAD heard someone speak and Whisper wrote nothing.

Whisper can end a window early, hear a language it cannot write, or take speech for silence; the subtitles then
have a hole and nothing says so. The transcription already decodes such stretches again
(``transcription.batched.ChunkTranscriber``); what is still without words after that is reported, so that a user
running hundreds of files learns which ones lost speech (a line on stderr, and ``unheard_speech`` in the
``--json`` summary) instead of finding out from a viewer. Words the hallucination guards removed count as none:
what matters is what the subtitles show.

Pure logic on seconds: no audio, no model.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from whisper_subtitler.types import Transcript

WORD_REACH_S = 0.5  # seconds: a word timestamp accounts for speech this far on each side (timestamps smear)
UNHEARD_MIN_S = 1.0  # seconds: shorter stretches without words are breaths, laughs and the VAD's padding

Region = tuple[float, float]


def unheard_speech(
    speech: Sequence[Region],
    words: Iterable[Region],
    reach: float = WORD_REACH_S,
    min_length: float = UNHEARD_MIN_S,
) -> tuple[Region, ...]:
    """The parts of the ``speech`` regions ``(start, end)`` (seconds, sorted, disjoint; the VAD's) that no word
    ``(start, end)`` reaches (each word widened by ``reach`` seconds on both sides), of at least ``min_length``
    seconds each, in time order, rounded to milliseconds. The defaults and their false alarms on real speech:
    docs/multilingual.md, "Speech without words"."""
    spans = sorted((start - reach, end + reach) for start, end in words)
    out: list[Region] = []
    k = 0
    for start, end in speech:
        while k < len(spans) and spans[k][1] <= start:  # words wholly before this region
            k += 1
        position, j = start, k
        while j < len(spans) and spans[j][0] < end:
            if spans[j][0] - position >= min_length:
                out.append((round(position, 3), round(spans[j][0], 3)))
            position = max(position, spans[j][1])
            j += 1
        if end - position >= min_length:
            out.append((round(position, 3), round(end, 3)))
    return tuple(out)


def unheard_in(transcript: Transcript, speech: Sequence[Region]) -> tuple[Region, ...]:
    """:func:`unheard_speech` of ``transcript``'s words in the VAD's ``speech`` regions (seconds)."""
    return unheard_speech(speech, ((w.start, w.end) for w in transcript.words))


def clock(seconds: float) -> str:
    """``seconds`` as ``M:SS.s`` (``H:MM:SS.s`` from an hour): how a player shows a position."""
    minutes, rest = divmod(round(max(0.0, seconds), 1), 60.0)  # rounded first: 59.96 s is 1:00.0, not 0:60.0
    hours, minutes = divmod(int(minutes), 60)
    return f"{hours}:{minutes:02d}:{rest:04.1f}" if hours else f"{minutes}:{rest:04.1f}"


def describe(stretches: Sequence[Region], shown: int = 3) -> str:
    """One line about ``stretches`` of speech without words: how many, how long in all, and where the first
    ``shown`` of them are."""
    total = sum(end - start for start, end in stretches)
    where = ", ".join(f"{clock(a)}-{clock(b)}" for a, b in stretches[:shown])
    more = f" and {len(stretches) - shown} more" if len(stretches) > shown else ""
    noun = "stretch" if len(stretches) == 1 else "stretches"
    return f"{len(stretches)} {noun} of speech ({total:.1f} s) got no words, at {where}{more}"
