"""whisper-subtitler: video and audio to subtitles with Whisper, pyannote and ffmpeg.

The Python API (``docs/api.md``)::

    from whisper_subtitler import Subtitler
    sub = Subtitler(model="base", diarize=True)
    sub.run("talk.mp4").write("talk.srt")

Its names are imported on first use, so that ``import whisper_subtitler`` stays light (no torch).
"""

from __future__ import annotations

import logging
from importlib import import_module
from typing import TYPE_CHECKING, Any

from whisper_subtitler.version import __version__

# A library logger with no handler of its own: the application decides (the CLI logs to stderr through Rich).
logging.getLogger(__name__).addHandler(logging.NullHandler())

if TYPE_CHECKING:
    from whisper_subtitler.api import ProgressCallback, Result, Subtitler
    from whisper_subtitler.errors import (
        AudioLanguageError,
        BackendUnavailableError,
        InputError,
        MissingRequirementError,
        ModelError,
        ModelNotFoundError,
        SubtitlerError,
        UsageError,
    )
    from whisper_subtitler.options import (
        AudioOptions,
        CueOptions,
        DecodingOptions,
        DeviceOptions,
        OutputOptions,
        SpeakerOptions,
    )
    from whisper_subtitler.types import Cue, Segment, SpeakerTurn, Transcript, Word

_EXPORTS = {
    "whisper_subtitler.api": ("ProgressCallback", "Result", "Subtitler"),
    "whisper_subtitler.options": (
        "AudioOptions",
        "CueOptions",
        "DecodingOptions",
        "DeviceOptions",
        "OutputOptions",
        "SpeakerOptions",
    ),
    "whisper_subtitler.errors": (
        "AudioLanguageError",
        "BackendUnavailableError",
        "InputError",
        "MissingRequirementError",
        "ModelError",
        "ModelNotFoundError",
        "SubtitlerError",
        "UsageError",
    ),
    "whisper_subtitler.types": ("Cue", "Segment", "SpeakerTurn", "Transcript", "Word"),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = [
    "AudioLanguageError",
    "AudioOptions",
    "BackendUnavailableError",
    "Cue",
    "CueOptions",
    "DecodingOptions",
    "DeviceOptions",
    "InputError",
    "MissingRequirementError",
    "ModelError",
    "ModelNotFoundError",
    "OutputOptions",
    "ProgressCallback",
    "Result",
    "Segment",
    "SpeakerOptions",
    "SpeakerTurn",
    "Subtitler",
    "SubtitlerError",
    "Transcript",
    "UsageError",
    "Word",
    "__version__",
]


def __getattr__(name: str) -> Any:
    """The public names, imported from their modules on first use (PEP 562)."""
    if name in _MODULE_OF:
        return getattr(import_module(_MODULE_OF[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
