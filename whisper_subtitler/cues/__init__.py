"""Cue building: timed words to subtitle cues by the readability rules (Netflix Timed Text Style Guide).

    from whisper_subtitler.cues import CueOptions, build_cues
    cues = build_cues(transcript, CueOptions(max_line_width=37), speech=vad_regions)

Pure logic: no torch, numpy or ffmpeg import. The names below are imported from their submodules on first use
(PEP 562), so that a module that needs only ``cues.options`` or ``cues.labels`` (the command line's option types)
does not load the builder.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from whisper_subtitler.cues.builder import build_cues
    from whisper_subtitler.cues.labels import SpeakerStyle, speaker_label
    from whisper_subtitler.cues.options import CueOptions

_LAZY = {"build_cues": "builder", "SpeakerStyle": "labels", "speaker_label": "labels", "CueOptions": "options"}

__all__ = ["CueOptions", "SpeakerStyle", "build_cues", "speaker_label"]


def __getattr__(name: str) -> Any:
    """The names of ``_LAZY``, imported from their submodules on first use."""
    if name in _LAZY:
        return getattr(import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
