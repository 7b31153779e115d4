"""Where models are kept on disk: openai-whisper's download folder and ours for converted checkpoints and exports.

A bottom-layer module (standard library only), so that every stage that caches a model can ask it.
"""

from __future__ import annotations

import os
from pathlib import Path


def whisper_cache_dir() -> Path:
    """openai-whisper's download folder: ``$XDG_CACHE_HOME/whisper``, default ``~/.cache/whisper``."""
    return Path(os.getenv("XDG_CACHE_HOME", Path.home() / ".cache")) / "whisper"


def converted_cache_dir() -> Path:
    """Where converted checkpoints live: ``$XDG_CACHE_HOME/whisper-subtitler/models``."""
    return Path(os.getenv("XDG_CACHE_HOME", Path.home() / ".cache")) / "whisper-subtitler" / "models"
