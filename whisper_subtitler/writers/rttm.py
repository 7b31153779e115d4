"""RTTM (Rich Transcription Time Marked, NIST RT-09 evaluation plan, appendix A): the exchange format of
speaker diarization, one ``SPEAKER`` line per speaker turn, as pyannote.metrics and dscore read it::

    SPEAKER <uri> 1 <start> <duration> <NA> <NA> <speaker> <NA> <NA>

Times in seconds with millisecond precision; fields are separated by single spaces, so spaces inside the
file name (``uri``) or a speaker name become ``_``. Lines come from ``Transcript.turns`` (overlapping turns
included), sorted by start; without diarization there are none and the file is empty.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import PurePath

from whisper_subtitler.types import Cue, Transcript
from whisper_subtitler.writers.base import Writer, WriterOptions, to_milliseconds

logger = logging.getLogger(__name__)


def rttm_field(text: str, empty: str = "<NA>") -> str:
    """``text`` as one RTTM field: whitespace runs become ``_``; an empty field is ``<NA>``."""
    return "_".join(text.split()) or empty


class RttmWriter(Writer):
    """Speaker turns as RTTM ``SPEAKER`` lines (not cue based)."""

    name = "rttm"
    extension = "rttm"
    cue_based = False
    allows_bom = False  # a BOM would become part of the first line's type field

    def render(self, transcript: Transcript, cues: Sequence[Cue], options: WriterOptions) -> str:
        uri = rttm_field(PurePath(transcript.source).stem if transcript.source else "", empty="audio")
        if not transcript.turns:
            logger.warning("no speaker turns for %s: the RTTM file is empty (use --diarize)", uri)
        lines = []
        for turn in sorted(transcript.turns, key=lambda t: (t.start, t.end)):
            start, end = to_milliseconds(max(turn.start, 0.0)), to_milliseconds(max(turn.end, 0.0))
            if end <= start:
                continue
            lines.append(
                f"SPEAKER {uri} 1 {start / 1000:.3f} {(end - start) / 1000:.3f} <NA> <NA> "
                f"{rttm_field(turn.speaker)} <NA> <NA>\n"
            )
        return "".join(lines)
