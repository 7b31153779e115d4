"""Reading the transcript to align: plain text, SRT, WebVTT, or JSON (ours, openai-whisper's, whisperX's).

Everything becomes a ``Script``: lines of text in order, each with the times and speaker the file gives (SRT, WebVTT
and JSON have times; plain text has none). Markup is removed so that only spoken words are aligned: HTML-style
tags (``<i>``, ``<v Alice>``, WebVTT timestamps), ASS override blocks (``{\\an8}``), character entities
(``&amp;``) and dialogue dashes at the start of a line; a WebVTT voice (``<v Alice>``) and a JSON ``speaker``
become the line's speaker. SRT is read by the ``srt`` library, WebVTT by ``webvtt-py``, JSON by
``writers.read_transcript``.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from pathlib import Path

from whisper_subtitler.errors import InputError

EXTENSIONS = ("txt", "srt", "vtt", "json")
_TAG = re.compile(r"<[^>]*>")
_OVERRIDE = re.compile(r"\{\\[^}]*\}")
_DASH = re.compile(r"(?m)^\s*[-\u2010-\u2015]\s+")


@dataclass(frozen=True, slots=True)
class Line:
    """One line of the transcript: its ``text`` (markup removed), and the ``start``/``end`` (seconds) and
    ``speaker`` the file gives, ``None`` when it gives none."""

    text: str
    start: float | None = None
    end: float | None = None
    speaker: str | None = None


@dataclass(frozen=True)
class Script:
    """A transcript to align: its ``lines`` in order, the ``language`` it declares (ISO 639-1, ``None`` when it
    declares none) and the file it came from."""

    lines: tuple[Line, ...]
    language: str | None
    source: Path

    @property
    def timed(self) -> bool:
        """Whether every line has times (SRT, WebVTT, JSON)."""
        return all(line.start is not None for line in self.lines)


def clean(text: str) -> str:
    """Spoken text of a subtitle: no tags, override blocks, entities or leading dialogue dashes; one space between
    words."""
    text = _OVERRIDE.sub("", text).replace("\\N", "\n").replace("\\n", "\n")
    text = html.unescape(_TAG.sub("", text))
    return " ".join(_DASH.sub("", text).split())


def _srt(text: str) -> list[Line]:
    import srt

    return [Line(clean(s.content), s.start.total_seconds(), s.end.total_seconds()) for s in srt.parse(text)]


def _timestamp(value: str) -> float:
    h, m, s = ([0, 0] + value.split(":"))[-3:]
    return int(h) * 3600 + int(m) * 60 + float(s)


def _vtt(path: Path) -> list[Line]:
    import webvtt

    return [
        Line(clean(c.raw_text), _timestamp(c.start), _timestamp(c.end), getattr(c, "voice", None) or None)
        for c in webvtt.read(str(path)).captions
    ]


def _json(path: Path) -> tuple[list[Line], str | None]:
    from whisper_subtitler.writers import read_transcript

    transcript = read_transcript(path)
    lines = [Line(clean(s.text), s.start, s.end, s.speaker) for s in transcript.segments]
    return lines, transcript.language or None


def read_script(path: Path) -> Script:
    """Read the transcript ``path``; the format comes from its extension (``.txt``, ``.srt``, ``.vtt``, ``.json``).

    Raises ``InputError`` naming the file for a missing or unreadable file, an unknown extension, a file the parser
    rejects, and a transcript without words.
    """
    path = Path(path)
    ext = path.suffix.lower().lstrip(".")
    if ext not in EXTENSIONS:
        raise InputError(
            f"{path}: unknown transcript format {path.suffix or '(no extension)'!r}; "
            f"use {', '.join('.' + e for e in EXTENSIONS)}"
        )
    language = None
    try:
        if ext == "json":
            lines, language = _json(path)
        elif ext == "vtt":
            lines = _vtt(path)
        else:
            text = path.read_text(encoding="utf-8-sig")
            lines = _srt(text) if ext == "srt" else [Line(" ".join(ln.split())) for ln in text.splitlines()]
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except InputError:
        raise
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"{path}: cannot read ({e})") from None
    except Exception as e:  # srt.SRTParseError, webvtt's MalformedFileError / MalformedCaptionError
        raise InputError(f"{path}: not a valid {ext.upper()} file ({type(e).__name__}: {e})") from None
    lines = [line for line in lines if line.text]
    if not lines:
        raise InputError(f"{path}: the transcript has no words")
    return Script(tuple(lines), language, path)
