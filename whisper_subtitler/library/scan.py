"""Finding the media files of a library and telling when one is complete (``watch``).

A scan walks the folders recursively for ``transcribe``'s media extensions (``inputs.MEDIA_EXTENSIONS``, or
``--extensions``; hidden files and folders left out, symlinked folders not followed: ``inputs.expand_inputs``).

A file being copied in grows, and its mtime moves, until the copy ends; a file is taken once it is **settled**: its
size and mtime have not changed for ``settle`` seconds. Two ways to know: the mtime itself is at least ``settle``
seconds old (a file that was there before ``watch`` started is taken at once), or ``Settling`` has seen the same
size and mtime for ``settle`` seconds of its own clock (a network share whose clock differs from ours, or a copy
that keeps the source's mtime).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from whisper_subtitler.inputs import MEDIA_EXTENSIONS, expand_inputs
from whisper_subtitler.library.queue import stat_of


def media_files(folders: Iterable[Path], extensions: Sequence[str] = MEDIA_EXTENSIONS) -> list[Path]:
    """The media files under ``folders`` (recursively), absolute, sorted by path within each folder."""
    found = expand_inputs([f for f in folders if f.is_dir()], recursive=True, extensions=extensions)
    return [path.absolute() for path in found if path.is_file()]


def is_media(path: Path, extensions: Sequence[str] = MEDIA_EXTENSIONS) -> bool:
    """Whether ``path``'s name is one a scan takes (a media extension, not hidden)."""
    name = path.name
    return not name.startswith(".") and "." in name and name.rsplit(".", 1)[-1].lower() in extensions


class Settling:
    """The files seen and since when each has had its current size and mtime (``time.monotonic`` seconds)."""

    def __init__(self, settle: float, clock=time.monotonic, wall=time.time) -> None:
        self.settle = settle
        self._clock, self._wall = clock, wall
        self._seen: dict[Path, tuple[tuple[int, float], float]] = {}

    def settled(self, path: Path) -> tuple[int, float] | None:
        """``(size in bytes, mtime)`` of ``path`` when it is settled (see the module's docstring), else ``None``
        (still changing, empty, or gone)."""
        stat = stat_of(path)
        if stat is None or stat[0] == 0:
            self._seen.pop(path, None)
            return None
        now = self._clock()
        seen = self._seen.get(path)
        if seen is None or seen[0] != stat:
            self._seen[path] = seen = (stat, now)
        if now - seen[1] >= self.settle or self._wall() - stat[1] >= self.settle:
            return stat
        return None

    def forget(self, path: Path) -> None:
        """Stop following ``path`` (taken, or removed)."""
        self._seen.pop(path, None)

    def waiting(self) -> list[Path]:
        """The files seen and not yet settled, for the next look."""
        return list(self._seen)
