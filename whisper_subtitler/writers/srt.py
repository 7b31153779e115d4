"""SubRip (SRT): numbered blocks, ``HH:MM:SS,mmm --> HH:MM:SS,mmm``, text lines, a blank line.

There is no formal spec; the Python ``srt`` library is the strictest parser, and every
file written here round-trips through it unchanged (``srt.compose(srt.parse(x)) == x``). Text never
contains ``-->`` or a blank line. Speakers are shown as the cue carries them (``Cue.shown_lines``, chosen by
the speaker style): a label ``[SPEAKER_00]: `` (whisperX) before the first line, or a dialogue dash ``- ``
before each line of a dialogue cue (Netflix Timed Text Style Guide). A right-to-left line is held in right-to-left
marks (RLM, RLE ... PDF: ``writers.bidi``).
"""

from __future__ import annotations

from collections.abc import Sequence

from whisper_subtitler.types import Cue, Transcript
from whisper_subtitler.writers.base import Writer, WriterOptions, format_timestamp
from whisper_subtitler.writers.bidi import cue_is_rtl, mark


def sanitize_line(line: str) -> str:
    """A line safe in SRT: no ``-->`` (it would read as a timing line), no surrounding whitespace."""
    while "-->" in line:
        line = line.replace("-->", "->")
    return line.strip()


class SrtWriter(Writer):
    """SRT, one block per cue, numbered from 1, times rounded to milliseconds."""

    name = "srt"
    extension = "srt"
    cue_based = True

    def render(self, transcript: Transcript, cues: Sequence[Cue], options: WriterOptions) -> str:
        blocks: list[str] = []
        for cue in cues:
            if not any(sanitize_line(line) for line in cue.lines):
                continue
            lines = [sanitize_line(line) for line in cue.shown_lines]
            lines = [line for line in lines if line]
            if cue_is_rtl(cue, transcript):  # right-to-left: punctuation on the right side (writers.bidi)
                lines = [mark(line) for line in lines]
            start = format_timestamp(cue.start, True, ",")
            end = format_timestamp(cue.end, True, ",")
            blocks.append(f"{len(blocks) + 1}\n{start} --> {end}\n" + "\n".join(lines) + "\n\n")
        return "".join(blocks)
