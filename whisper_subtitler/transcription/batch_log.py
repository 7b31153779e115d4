"""A journal of the decoding batches finished in one piece of a file, so that a run killed part-way can go on from
its last finished batch (``transcribe --resume``, ``watch``; ``library.checkpoints`` keeps the journal on disk).

``ChunkTranscriber.transcribe`` orders a piece's chunks and decodes them in batches (``backoff.BatchRunner``). Each
chunk's segments depend only on its batch (sampling is seeded per chunk, ``budgeted.sampling_seed``), and the order
and batches are the same on every run with the same audio and options; so a run that takes the results of the first
k finished chunks from the journal and decodes the rest in the same batches writes the same bytes as a run that was
never stopped. The journal is active only inside ``recording`` (a ``ContextVar``, so nothing changes for anyone else).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any


@dataclass
class BatchJournal:
    """The finished chunks of one ``ChunkTranscriber.transcribe`` call: ``fingerprint`` names the call's ordered
    chunks and languages (a journal of another call is not used), ``results`` each finished chunk's segments in the
    call's decoding order; ``save(journal)`` is called after every batch."""

    save: Callable[[BatchJournal], None] = lambda journal: None
    fingerprint: str | None = None
    results: list[Any] = field(default_factory=list)

    def resume(self, fingerprint: str) -> list[Any]:
        """The results already finished for the call named ``fingerprint`` (none when the journal was another
        call's: it is started anew for this one)."""
        if fingerprint != self.fingerprint:
            self.fingerprint, self.results = fingerprint, []
        return list(self.results)

    def record(self, results: Sequence[Any]) -> None:
        """One more batch finished with ``results`` (one per chunk, in order); saved at once."""
        self.results.extend(results)
        self.save(self)


_ACTIVE: ContextVar[BatchJournal | None] = ContextVar("batch_journal", default=None)


def active() -> BatchJournal | None:
    """The journal in force here (``recording``), or ``None``: decode everything, record nothing."""
    return _ACTIVE.get()


@contextmanager
def recording(journal: BatchJournal | None) -> Iterator[None]:
    """Within: ``active()`` is ``journal``."""
    token = _ACTIVE.set(journal)
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def fingerprint(items: Sequence[tuple[Any, str]]) -> str:
    """A name for an ordered list of ``(chunk, language)``: the chunks' bounds (seconds) and languages, hashed."""
    text = ";".join(f"{c.start!r},{c.end!r},{c.regions!r},{language}" for c, language in items)
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()
