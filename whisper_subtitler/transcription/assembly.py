"""Word timing assembly for the batched transcriber (``chunk_transcriber.ChunkTranscriber``): a decoded window's timed
words into segments, the stretches of a window that came out without words, and their segments merged back in.

Times are in seconds: the timed words of a window (``alignment.TimedWord``) from the window's start, everything else
from the start of the audio the chunks come from. Nothing here imports torch or numpy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from whisper_subtitler.transcription.protocol import Region
from whisper_subtitler.types import Segment, Word

if TYPE_CHECKING:
    from whisper_subtitler.decoding.alignment import TimedWord
    from whisper_subtitler.decoding.chunking import Chunk
    from whisper_subtitler.decoding.quality import Decoded

# Seconds of speech in a run of units without words below which it is not decoded again (``runs_without_words``): a
# sliver there is more likely a breath or the end of the last word than a skipped clip, and decoded alone Whisper
# invents words on it (a 0.2-s sliver after a region of silence came out "morgue.").
MIN_TAIL_S = 1.0


def window_segments(chunk: Chunk, decoded: Decoded, timed: list[TimedWord], language: str) -> tuple[Segment, ...]:
    """The segments of ``chunk`` decoded as ``decoded`` in ``language``, with its ``timed`` words (seconds from the
    chunk's start): one segment per speech region of the chunk that holds words, each word in the region that holds
    its middle (or the nearest one) and clipped to the chunk, times rounded to the millisecond; without timed words
    (text without alignable words), one segment over the whole chunk with the text. Every segment carries
    ``decoded``'s quality figures (average log-probability, compression ratio, no-speech probability)."""

    def segment(start: float, end: float, text: str, words: tuple[Word, ...] = ()) -> Segment:
        return Segment(
            start=start,
            end=end,
            text=text,
            words=words,
            avg_logprob=decoded.avg_logprob,
            compression_ratio=decoded.compression_ratio,
            no_speech_prob=decoded.no_speech_prob,
            language=language,
        )

    if not timed:  # text without alignable words: keep the text over the chunk
        return (segment(chunk.start, chunk.end, " " + decoded.text.strip()),)
    groups: dict[int, list[Word]] = {}
    for w in timed:
        # A word belongs to the speech region that holds its middle (or the nearest one), inside the window.
        a = min(max(chunk.start + w.start, chunk.start), chunk.end)
        b = min(max(chunk.start + w.end, a), chunk.end)
        word = Word(w.text, round(a, 3), round(b, 3), w.probability, language=language)
        groups.setdefault(chunk.region_at((a + b) / 2), []).append(word)
    return tuple(
        segment(ws[0].start, ws[-1].end, "".join(w.text for w in ws), tuple(ws)) for _, ws in sorted(groups.items())
    )


def runs_without_words(units: Sequence[Region], segments: Sequence[Segment]) -> list[list[Region]]:
    """The runs of consecutive speech ``units`` (of one chunk, in time order, seconds) in which no word of
    ``segments`` has its middle, each with at least :data:`MIN_TAIL_S` of speech: the stretches to decode again.
    A run goes on over consecutive empty units unless a word's middle lies in the pause between them. None when
    ``segments`` hold no word (silence, or nothing Whisper could write) or when every unit is empty of words
    (decoded again, it would be the same window)."""
    middles = [(w.start + w.end) / 2 for s in segments for w in s.words]
    if not middles:
        return []
    empty = [not any(a <= m <= b for m in middles) for a, b in units]
    if all(empty):
        return []
    runs: list[list[Region]] = []
    for k, (a, b) in enumerate(units):
        if not empty[k]:
            continue
        # A run goes on over consecutive empty units, unless a word's middle lies in the pause between them.
        if k and empty[k - 1] and not any(units[k - 1][1] < m < a for m in middles):
            runs[-1].append((a, b))
        else:
            runs.append([(a, b)])
    return [run for run in runs if sum(b - a for a, b in run) >= MIN_TAIL_S]


def merged(segments: Sequence[Segment], found: Sequence[Segment]) -> tuple[Segment, ...]:
    """``segments`` with the segments ``found`` in stretches of them that had no words: a found segment with words
    that starts inside one of ``segments`` with words (one segment per speech region: a region's words may pass over
    a stretch) has its words put among that segment's in time order, its text rebuilt from them; the others (text
    without alignable words among them) are added as they are. Time order."""
    out = list(segments)
    for f in found:
        k = next((i for i, s in enumerate(out) if f.words and s.words and s.start <= f.start < s.end), None)
        if k is None:
            out.append(f)
            continue
        words = tuple(sorted(out[k].words + f.words, key=lambda w: (w.start, w.end)))
        out[k] = replace(out[k], end=max(out[k].end, f.end), text="".join(w.text for w in words), words=words)
    return tuple(sorted(out, key=lambda s: (s.start, s.end)))


def word_count(segments: Sequence[Segment]) -> int:
    """The number of words in ``segments``."""
    return sum(len(s.words) for s in segments)
