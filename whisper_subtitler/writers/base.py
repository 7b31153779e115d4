"""What every writer shares: options, the writer interface, timestamps, and text encoding.

As in openai-whisper's ``whisper/utils.py``, a writer only renders text; file handling (atomic writes, no
clobbering) lives in ``whisper_subtitler.outputs``. Times become text only here, rounded to whole
milliseconds once, in ``to_milliseconds``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from whisper_subtitler.types import Cue, Transcript, Word

BOM = "\ufeff"


@dataclass(frozen=True)
class WriterOptions:
    """How writers render and encode text.

    ``bom``: start the file with a UTF-8 byte order mark (some players and TVs need it; never for JSON).
    ``crlf``: end lines with CR LF instead of LF. ``word_level``: karaoke-style word highlighting in VTT
    (timestamp tags), ASS (``\\k`` tags) and LRC (enhanced word tags). ``speaker_style``: how the plain
    transcript (TXT) shows speakers (``cues.labels.SpeakerStyle``); cue-based formats print what their cues
    carry, which the cue builder decided from ``CueOptions.speaker_style``.
    """

    bom: bool = False
    crlf: bool = False
    word_level: bool = False
    speaker_style: str = "change"


class Writer(ABC):
    """One output format: renders a transcript and its cues as text.

    ``name`` is the format's name on the command line, ``extension`` the file suffix (without the dot),
    ``cue_based`` whether it renders cues (so the cue options apply) rather than the transcript itself,
    ``allows_bom`` whether ``WriterOptions.bom`` applies.
    """

    name: ClassVar[str]
    extension: ClassVar[str]
    cue_based: ClassVar[bool]
    allows_bom: ClassVar[bool] = True

    @abstractmethod
    def render(self, transcript: Transcript, cues: Sequence[Cue], options: WriterOptions) -> str:
        """The file's text, with ``\\n`` line ends (``encode`` applies CR LF and the BOM)."""

    def encode(self, text: str, options: WriterOptions) -> bytes:
        """``text`` as UTF-8 bytes, with CR LF line ends and a BOM when the options ask for them."""
        if options.crlf:
            text = text.replace("\r\n", "\n").replace("\n", "\r\n")
        if options.bom and self.allows_bom:
            text = BOM + text
        return text.encode("utf-8")


def to_milliseconds(seconds: float) -> int:
    """Seconds to whole milliseconds: the one place times are rounded (as ``whisper.utils.format_timestamp``).

    Raises ``ValueError`` for a negative time.
    """
    if seconds < 0:
        raise ValueError(f"negative timestamp: {seconds!r} s")
    return round(seconds * 1000.0)


def format_timestamp(seconds: float, always_include_hours: bool = True, decimal_marker: str = ".") -> str:
    """``HH:MM:SS.mmm`` (``decimal_marker`` "," for SRT); hours are left out only when not asked for and zero."""
    ms = to_milliseconds(seconds)
    hours, ms = divmod(ms, 3_600_000)
    minutes, ms = divmod(ms, 60_000)
    secs, ms = divmod(ms, 1_000)
    hours_marker = f"{hours:02d}:" if always_include_hours or hours > 0 else ""
    return f"{hours_marker}{minutes:02d}:{secs:02d}{decimal_marker}{ms:03d}"


def cue_text(cue: Cue, spaceless: bool = False) -> str:
    """A cue's text on one line: its words as Whisper spaced them, else its lines joined."""
    text = "".join(w.text for w in cue.words) if cue.words else ("" if spaceless else " ").join(cue.lines)
    return " ".join(text.split()) if not spaceless else "".join(text.split())


def words_by_line(cue: Cue) -> list[list[tuple[str, Word]]] | None:
    """The cue's words laid out on its lines: per line, (the text shown for it, the word).

    The text shown keeps the word's leading space except at a line start. Returns ``None`` when the lines
    cannot be matched to the words (a word hard-wrapped over two lines), so callers fall back to plain text.
    """
    if not cue.words:
        return None
    out: list[list[tuple[str, Word]]] = []
    words = list(cue.words)
    k = 0
    for line in cue.lines:
        pos, items = 0, []
        while pos < len(line) and k < len(words):
            bare = words[k].text.strip()
            if not bare:
                k += 1
                continue
            lead = ""
            while pos < len(line) and line[pos] == " ":
                lead += " "
                pos += 1
            if not line.startswith(bare, pos):
                return None
            items.append((lead + bare, words[k]))
            pos += len(bare)
            k += 1
        if pos != len(line) or not items:
            return None
        out.append(items)
    return out if k == len(words) else None
