"""The speaker label printed before cue text in SRT and TXT (whisperX style, ``SUBTITLES.md``)."""

from __future__ import annotations


def speaker_label(speaker: str) -> str:
    """``"[SPEAKER_00]: "`` for ``"SPEAKER_00"``: the prefix of a cue's first line in SRT and TXT."""
    return f"[{speaker}]: "
