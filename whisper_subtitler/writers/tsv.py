"""Tab-separated cues: ``start``, ``end`` (integer milliseconds, as openai-whisper's ``WriteTSV``),
``speaker`` (empty without) and ``text`` (the cue's lines on one line), with a header row.

Tabs and line breaks inside text become spaces, so every row has exactly four fields.
"""

from __future__ import annotations

from collections.abc import Sequence

from whisper_subtitler.cues.width import is_spaceless
from whisper_subtitler.types import Cue, Transcript
from whisper_subtitler.writers.base import Writer, WriterOptions, cue_text, to_milliseconds


def _field(text: str) -> str:
    return " ".join(text.replace("\t", " ").split())


class TsvWriter(Writer):
    """One row per cue: start and end in milliseconds, speaker, text."""

    name = "tsv"
    extension = "tsv"
    cue_based = True

    def render(self, transcript: Transcript, cues: Sequence[Cue], options: WriterOptions) -> str:
        spaceless = is_spaceless(transcript.language or None, transcript.text)
        rows = ["start\tend\tspeaker\ttext\n"]
        for cue in cues:
            text = _field(cue_text(cue, spaceless))
            if text:
                rows.append(
                    f"{to_milliseconds(cue.start)}\t{to_milliseconds(cue.end)}\t{_field(cue.speaker or '')}\t{text}\n"
                )
        return "".join(rows)
