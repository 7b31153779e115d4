"""Plain text transcript: one line per segment (as openai-whisper's ``WriteTXT``), not cue-based.

It shows the words the subtitle files show: a segment's words that a hallucination guard removed (the transcript's
``removed`` record of stage ``cues``, ``cues.guards.shown_words``) are left out of its line, as they are of the cues.

With speakers, a segment is cut where the speaker changes; what starts a line follows the speaker style
(``WriterOptions.speaker_style``, ``cues.labels.line_prefixes``): ``change`` puts the label ``[SPEAKER_00]: ``
on the first line and at each speaker change only, ``label`` on every line (whisperX), ``dash`` a dash
``- `` at each speaker change, ``none`` nothing. With fewer than two speakers no line carries anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from whisper_subtitler.cues.guards import shown_words
from whisper_subtitler.cues.labels import line_prefixes
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
        lines: list[tuple[str | None, str]] = []
        alive = {id(w) for w in shown_words(transcript.words, transcript.removed)}
        for seg in transcript.segments:
            if not all(id(w) in alive for w in seg.words):
                words = tuple(w for w in seg.words if id(w) in alive)
                seg = replace(seg, words=words, text="".join(w.text for w in words))
            for speaker, text in speaker_runs(seg):
                text = " ".join(text.split())
                if text:
                    lines.append((speaker, text))
        prefixes = line_prefixes([speaker for speaker, _ in lines], options.speaker_style)
        return "".join(prefix + text + "\n" for prefix, (_, text) in zip(prefixes, lines))
