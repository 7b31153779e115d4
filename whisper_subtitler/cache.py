"""Where models are kept on disk: openai-whisper's download folder and ours for converted checkpoints and exports.

A bottom-layer module (standard library only), so that every stage that caches a model can ask it.
"""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path

log = logging.getLogger(__name__)


def whisper_cache_dir() -> Path:
    """openai-whisper's download folder: ``$XDG_CACHE_HOME/whisper``, default ``~/.cache/whisper``."""
    return Path(os.getenv("XDG_CACHE_HOME", Path.home() / ".cache")) / "whisper"


def converted_cache_dir() -> Path:
    """Where converted checkpoints live: ``$XDG_CACHE_HOME/whisper-subtitler/models``."""
    return Path(os.getenv("XDG_CACHE_HOME", Path.home() / ".cache")) / "whisper-subtitler" / "models"


def write_atomically(target: Path, data: bytes, what: str) -> bool:
    """Write ``data`` to ``target`` through a temporary file in its folder and ``os.replace``, so that a reader
    never sees half a file. A folder that cannot be written (a read-only cache) is logged, naming ``what`` was not
    kept, and is not an error. Returns whether the file was written."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as exc:
        log.info("cannot keep %s in %s (%s); it is kept in memory", what, target.parent, exc)
        return False
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, target)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        log.info("cannot keep %s in %s (%s); it is kept in memory", what, target.parent, exc)
        return False
    return True
