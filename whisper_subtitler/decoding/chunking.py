"""VAD-first chunking: speech regions merged into windows of at most 30 s for batched decoding.

Pure logic on seconds, no numpy or torch. Whisper decodes 30-second windows (``whisper.audio.CHUNK_LENGTH``), and
its encoder costs the same for 5 s of speech as for 30 s, so windows are filled: consecutive VAD regions are merged,
in time order, while the span from the first region's start to the last one's end stays within ``MAX_CHUNK_S``,
the pauses between them kept in the audio (whisperX's ``merge_chunks``, faster-whisper's batched pipeline). A region
longer than ``MAX_CHUNK_S`` is first cut into balanced pieces; the cut goes to the quietest moment near the ideal
cut point when the caller supplies ``quietest`` (``features.quietest_point`` looks at the signal energy), else to
the ideal point itself.

Inside a window, regions closer than ``MERGE_GAP_S`` are joined (``join_regions``); the transcript gets one
segment per joined region, so no segment spans a longer pause.

Filling windows takes a third fewer windows than one window per joined region, with the same WER; concatenating the
regions without the pauses between them (faster-whisper's ``collect_chunks``) moved the words further from the
sequential path's, so the pauses stay (docs/performance.md, "Filling 30-second windows").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

MAX_CHUNK_S = 30.0  # seconds: whisper.audio.CHUNK_LENGTH, one encoder window
MERGE_GAP_S = 2.0  # seconds: shorter pauses join speech regions into one segment
SPLIT_SEARCH_S = 5.0  # seconds: how far before the ideal cut of a long region to look for a quiet moment
TOKENS_PER_S = 12.0  # tokens per second of speech: about twice the fastest English speech, punctuation included
TOKEN_SLACK = 16  # tokens added to every budget (short chunks, numbers spelled out)
MAX_NEW_TOKENS = 224  # whisper's default sample_len: n_text_ctx // 2

Region = tuple[float, float]  # (start, end) in seconds
Quietest = Callable[[float, float], float]  # (from, to) seconds -> the quietest time in between


@dataclass(frozen=True, slots=True)
class Chunk:
    """One decoding window: the audio from ``start`` to ``end`` (seconds, at most ``MAX_CHUNK_S`` apart), pauses
    included; ``regions`` are the speech regions inside it, joined across short pauses, in time order, disjoint;
    ``index`` is the chunk's position in time order."""

    index: int
    start: float
    end: float
    regions: tuple[Region, ...]

    @property
    def duration(self) -> float:
        """Seconds of audio in the window, ``end - start``."""
        return self.end - self.start

    @property
    def speech(self) -> float:
        """Seconds of speech in the window, the sum of its regions."""
        return sum(e - s for s, e in self.regions)

    def region_at(self, t: float) -> int:
        """Index of the region that holds audio time ``t`` (seconds), else of the nearest one."""
        return min(range(len(self.regions)), key=lambda i: max(self.regions[i][0] - t, t - self.regions[i][1], 0.0))


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
) -> list[Chunk]:
    """Merge speech ``regions`` (sorted, disjoint, seconds) in time order into windows of at most ``max_s`` seconds.

    Regions longer than ``max_s`` are split first (``split_region``); a window takes the next region while the span
    from its start to the region's end stays within ``max_s``. Inside a window, regions closer than ``merge_gap``
    seconds are joined (``join_regions``). Chunk indices count from ``first_index``. Raises ``ValueError`` for
    regions out of order or overlapping.
    """
    checked = join_regions(regions, 0.0)  # joins nothing: refuses regions out of order, drops empty ones
    pieces = [p for region in checked for p in split_region(region, max_s, quietest)]
    windows: list[list[Region]] = []
    for start, end in pieces:
        if windows and end - windows[-1][0][0] <= max_s + 1e-9:
            windows[-1].append((start, end))
        else:
            windows.append([(start, end)])
    return [Chunk(first_index + i, w[0][0], w[-1][1], tuple(join_regions(w, merge_gap))) for i, w in enumerate(windows)]


def token_budget(duration: float, limit: int = MAX_NEW_TOKENS) -> int:
    """Most tokens worth sampling for ``duration`` seconds of speech: ``TOKENS_PER_S`` per second plus
    ``TOKEN_SLACK``, at most ``limit``. A row that reaches it has almost surely looped (one looping row stalls its
    whole batch in ``whisper.decode``: docs/performance.md)."""
    return max(1, min(limit, math.ceil(duration * TOKENS_PER_S) + TOKEN_SLACK))


def decoding_order(chunks: Sequence[Chunk]) -> list[Chunk]:
    """Chunks with the most speech first (ties in time order), so that consecutive rows of a batch need similar
    token budgets and a batch finishes together (it made batches faster: docs/performance.md)."""
    return sorted(chunks, key=lambda c: (-c.speech, c.index))
