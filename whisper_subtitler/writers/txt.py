"""Plain text transcript: one line per segment (as openai-whisper's ``WriteTXT``), not cue-based.

With speakers, a segment is cut where the speaker changes and each line starts with ``[SPEAKER_00]: ``.
"""

from __future__ import annotations

from collections.abc import Sequence

from whisper_subtitler.cues.labels import speaker_label
from whisper_subtitler.types import Cue, Segment, Transcript
from whisper_subtitler.writers.base import Writer, WriterOptions


def speaker_runs(segment: Segment) -> list[tuple[str | None, str]]:
    """(speaker, text) runs of a segment: its words grouped by speaker, or the whole segment text."""
    if not segment.words or all(w.speaker is None for w in segment.words):
        return [(segment.speaker, segment.text)]
    runs: list[tuple[str | None, str]] = []
    for w in segment.words:
        if runs and runs[-1][0] == w.speaker:
            runs[-1] = (w.speaker, runs[-1][1] + w.text)
        else:
            runs.append((w.speaker, w.text))
    return runs


class TxtWriter(Writer):
    """The transcript text, one line per segment (per speaker run when there are speakers)."""

    name = "txt"
    extension = "txt"
    cue_based = False

    def render(self, transcript: Transcript, cues: Sequence[Cue], options: WriterOptions) -> str:
        lines = []
        for seg in transcript.segments:
            for speaker, text in speaker_runs(seg):
                text = " ".join(text.split())
                if text:
                    lines.append((speaker_label(speaker) if speaker is not None else "") + text)
        return "".join(line + "\n" for line in lines)
