"""Overlap of work in a batch: while one file is transcribed, the next file's first audio piece is decoded (ffmpeg)
and its speech found (VAD) in a background thread, so the model does not wait for them.

The background thread runs exactly the code the pipeline would run later (``audio.stream_audio`` up to its first
piece, ``vad.speech_regions`` on it), so the result, and any error, is the same; an error is kept and raised when
the pipeline takes that file, so it is reported for the right file, in order. One file is prepared at a time,
holding at most one piece of audio (``audio.PIECE_SECONDS``).

It is meant for GPUs, where the CPU is idle while the model works; on a 2-core CPU it was neither faster nor slower
(docs/performance.md), so it stays on everywhere: one code path. The VAD's encoder, which a run in the foreground
spreads over every thread (:mod:`.vad_network`), stays on the background thread here.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Generator
from dataclasses import dataclass
from pathlib import Path

from whisper_subtitler.types import Audio


@dataclass
class Prepared:
    """A file's first audio piece, its VAD speech regions (seconds, in the piece) and the rest of its stream."""

    first: Audio
    regions: tuple[tuple[float, float], ...]
    rest: Generator[Audio, None, None]

    def close(self) -> None:
        """Stop the stream (ffmpeg) when the file will not be transcribed."""
        self.rest.close()


class Prefetcher:
    """Runs ``prepare(source)`` for one file at a time in a daemon thread; ``take`` hands the result over.

    ``prepare`` returns a ``Prepared`` or ``None`` (nothing to prepare, e.g. the outputs exist) and may raise.
    """

    def __init__(self, prepare: Callable[[Path], Prepared | None]) -> None:
        self._prepare = prepare
        self._source: Path | None = None
        self._thread: threading.Thread | None = None
        self._result: Prepared | None = None
        self._error: BaseException | None = None

    def start(self, source: Path) -> None:
        """Begin preparing ``source``; a prepared file that was not taken is dropped first."""
        self.close()
        self._source, self._result, self._error = source, None, None
        self._thread = threading.Thread(target=self._run, args=(source,), name="prefetch", daemon=True)
        self._thread.start()

    def _run(self, source: Path) -> None:
        from whisper_subtitler.vad_network import one_thread

        try:
            with one_thread():  # beside the model, which has the cores: the VAD stays on this thread
                self._result = self._prepare(source)
        except BaseException as e:  # kept for take(): raised in the pipeline's thread, for this file
            self._error = e

    def take(self, source: Path) -> Prepared | None:
        """The prepared ``source`` (waiting for the thread if needed), or ``None`` when another file (or none) was
        prepared. Raises what ``prepare`` raised."""
        if self._thread is None or source != self._source:
            return None
        self._thread.join()
        result, error = self._result, self._error
        self._thread, self._source, self._result, self._error = None, None, None, None
        if error is not None:
            raise error
        return result

    def close(self) -> None:
        """Wait for a running preparation (one piece at most) and stop what it left open."""
        if self._thread is not None:
            self._thread.join()
            if self._result is not None:
                self._result.close()
        self._thread, self._source, self._result, self._error = None, None, None, None
