"""VAD-first chunking: speech regions packed into chunks of at most 30 s for batched decoding.

Pure logic on seconds, no numpy or torch. Whisper decodes 30-second windows (``whisper.audio.CHUNK_LENGTH``), so
speech regions are first joined across pauses shorter than ``MERGE_GAP_S`` (the pause stays in the audio, as in the
sequential path's ``transcribe.merge_regions``); each joined region is one chunk, cut into balanced pieces when it
is longer than ``MAX_CHUNK_S`` (whisperX's ``merge_chunks`` idea: VAD-guided windows of contiguous audio).

With ``pack=True``, joined regions are also packed, in time order, into chunks of at most ``MAX_CHUNK_S`` seconds,
the longer silences between them left out and the pieces concatenated, as faster-whisper's batched pipeline does
(``faster_whisper/vad.py`` ``collect_chunks`` and ``SpeechTimestampsMap``); ``Chunk.to_global`` maps a time in the
concatenated chunk back to the time in the audio. It is off by default: on 24 espeak-ng sentences (tiny.en) packing
made the words differ from the sequential path's by WER 0.029 instead of 0.012 at the same speed, and
concatenating every VAD region back to back, without joining, by 0.060.

A region longer than ``MAX_CHUNK_S`` is cut into balanced pieces; the cut goes to the quietest moment near the
ideal cut point when the caller supplies ``quietest`` (``features.quietest_point`` looks at the signal energy),
else to the ideal point itself.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

MAX_CHUNK_S = 30.0  # seconds: whisper.audio.CHUNK_LENGTH, one encoder window
MERGE_GAP_S = 2.0  # seconds: shorter pauses between speech regions stay in the chunk (transcribe.CLIP_MERGE_GAP_S)
SPLIT_SEARCH_S = 5.0  # seconds: how far before the ideal cut of a long region to look for a quiet moment
TOKENS_PER_S = 12.0  # tokens per second of speech: about twice the fastest English speech, punctuation included
TOKEN_SLACK = 16  # tokens added to every budget (short chunks, numbers spelled out)
MAX_NEW_TOKENS = 224  # whisper's default sample_len: n_text_ctx // 2

Region = tuple[float, float]  # (start, end) in seconds
Quietest = Callable[[float, float], float]  # (from, to) seconds -> the quietest time in between


@dataclass(frozen=True, slots=True)
class Chunk:
    """One decoding window: ``pieces`` are ``(start, end)`` seconds of the audio, in time order, disjoint,
    concatenated without the silence between them; ``index`` is the chunk's position in time order."""

    index: int
    pieces: tuple[Region, ...]

    @property
    def start(self) -> float:
        """Start of the first piece, seconds."""
        return self.pieces[0][0]

    @property
    def end(self) -> float:
        """End of the last piece, seconds."""
        return self.pieces[-1][1]

    @property
    def duration(self) -> float:
        """Seconds of audio in the chunk (the sum of its pieces), at most ``MAX_CHUNK_S``."""
        return sum(e - s for s, e in self.pieces)

    def offsets(self) -> tuple[float, ...]:
        """Start of each piece inside the concatenated chunk, seconds (the first is 0)."""
        out, t = [], 0.0
        for s, e in self.pieces:
            out.append(t)
            t += e - s
        return tuple(out)

    def piece_at(self, t: float) -> int:
        """Index of the piece that holds chunk time ``t`` (seconds); times past the end belong to the last piece."""
        return max(0, bisect.bisect_right(self.offsets(), t) - 1)

    def to_global(self, t: float) -> float:
        """Chunk time ``t`` (seconds from the start of the concatenated chunk) -> seconds in the audio.

        A time inside a piece maps into that piece; a time past the end of the chunk is clamped to its end.
        """
        i = self.piece_at(t)
        start, end = self.pieces[i]
        return min(start + max(t - self.offsets()[i], 0.0), end)


def split_region(region: Region, max_s: float = MAX_CHUNK_S, quietest: Quietest | None = None) -> list[Region]:
    """Cut ``region`` (seconds) into pieces of at most ``max_s`` seconds; a shorter region is returned whole.

    The region is cut into ``ceil(length / max_s)`` pieces of nearly equal length; each cut goes to
    ``quietest(ideal - SPLIT_SEARCH_S, ideal)`` when given (a pause between words), else to the ideal point.
    Raises ``ValueError`` for ``max_s <= 0``.
    """
    if max_s <= 0:
        raise ValueError("max_s must be positive")
    start, end = region
    pieces: list[Region] = []
    while end - start > max_s:
        n = math.ceil((end - start) / max_s)
        ideal = start + (end - start) / n
        cut = ideal
        if quietest is not None:
            low = max(start + max_s / 2, ideal - SPLIT_SEARCH_S)
            cut = min(max(quietest(low, ideal), low), ideal)
        pieces.append((start, cut))
        start = cut
    pieces.append((start, end))
    return pieces


def join_regions(regions: Iterable[Region], gap: float = MERGE_GAP_S) -> list[Region]:
    """Join sorted, disjoint ``regions`` (seconds) whose pause is shorter than ``gap`` seconds; empty ones are
    dropped. Raises ``ValueError`` for regions out of order or overlapping."""
    joined: list[Region] = []
    previous_end = -math.inf
    for start, end in regions:
        if start < previous_end - 1e-9:
            raise ValueError(f"speech regions must be sorted and disjoint: {(start, end)} starts before {previous_end}")
        previous_end = end
        if end <= start:
            continue
        if joined and start - joined[-1][1] < gap:
            joined[-1] = (joined[-1][0], end)
        else:
            joined.append((start, end))
    return joined


def plan_chunks(
    regions: Iterable[Region],
    max_s: float = MAX_CHUNK_S,
    quietest: Quietest | None = None,
    first_index: int = 0,
    merge_gap: float = MERGE_GAP_S,
    pack: bool = False,
) -> list[Chunk]:
    """Pack speech ``regions`` (sorted, disjoint, seconds) in time order into chunks of at most ``max_s`` seconds.

    Regions closer than ``merge_gap`` seconds are joined first (``join_regions``) and each starts a new chunk,
    as the sequential path decodes each merged clip in windows of its own; pieces longer than ``max_s`` are split
    (``split_region``). With ``pack``, a joined region goes into the current chunk while the chunk stays within
    ``max_s`` (see the module docstring). Chunk indices count from ``first_index``. Raises ``ValueError`` for regions out
    of order or overlapping.
    """
    chunks: list[Chunk] = []
    current: list[Region] = []
    used = 0.0
    for start, end in join_regions(regions, merge_gap):
        if current and not pack:
            chunks.append(Chunk(first_index + len(chunks), tuple(current)))
            current, used = [], 0.0
        for piece in split_region((start, end), max_s, quietest):
            length = piece[1] - piece[0]
            if current and used + length > max_s + 1e-9:
                chunks.append(Chunk(first_index + len(chunks), tuple(current)))
                current, used = [], 0.0
            current.append(piece)
            used += length
    if current:
        chunks.append(Chunk(first_index + len(chunks), tuple(current)))
    return chunks


def token_budget(duration: float, limit: int = MAX_NEW_TOKENS) -> int:
    """Most tokens worth sampling for ``duration`` seconds of speech: ``TOKENS_PER_S`` per second plus
    ``TOKEN_SLACK``, at most ``limit``. A row that reaches it has almost surely looped (PERFORMANCE.md: one
    looping row stalls its whole batch in ``whisper.decode``)."""
    return max(1, min(limit, math.ceil(duration * TOKENS_PER_S) + TOKEN_SLACK))


def decoding_order(chunks: Sequence[Chunk]) -> list[Chunk]:
    """Chunks longest first (ties in time order), so that consecutive rows of a batch need similar token budgets
    and a batch finishes together (PERFORMANCE.md: sorting chunks by length made batches faster)."""
    return sorted(chunks, key=lambda c: (-c.duration, c.index))
