"""Reading subtitle files into cues as a viewer sees them: times in seconds, the lines shown, markup removed.

SRT is read by ``srt`` (the strictest SRT parser: a malformed block or timestamp makes the file unreadable), WebVTT
by ``webvtt-py``, ASS/SSA by ``pysubs2`` (override blocks removed, ``\\N`` a line break, comment events skipped,
events in time order since ASS order carries no meaning). HTML-style tags (``<i>``, ``<v Alice>``, WebVTT
timestamps) and ``{\\...}`` blocks are removed and character entities (``&amp;``) decoded. Speaker labels
(``[SPEAKER_00]: ``) and dialogue dashes stay: they are shown and take room on the line.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from whisper_subtitler.errors import InputError
from whisper_subtitler.types import Cue
from whisper_subtitler.writers.base import to_milliseconds

FORMATS = {"srt": "srt", "vtt": "vtt", "ass": "ass", "ssa": "ass"}  # extension -> format
EXTENSIONS = tuple(FORMATS)
# Time resolution of each format, in seconds: the tolerance of every time comparison (a time rounded to it).
RESOLUTION = {"srt": 0.001, "vtt": 0.001, "ass": 0.01}

_TAG = re.compile(r"<[^>\n]*>")
_OVERRIDE = re.compile(r"\{\\[^}]*\}")


@dataclass(frozen=True, slots=True)
class SubtitleCue:
    """One cue as shown: ``index`` its position in the file (1-based, after ASS events are put in time order),
    ``start``/``end`` in seconds, ``lines`` the text lines shown (markup removed; labels and dashes kept)."""

    index: int
    start: float
    end: float
    lines: tuple[str, ...]


@dataclass(frozen=True)
class SubtitleFile:
    """A subtitle file read: its ``path``, ``format`` (``srt``, ``vtt``, ``ass``), ``cues`` and the ``language``
    it declares (WebVTT ``Language:`` header; ``None`` when none)."""

    path: Path
    format: str
    cues: tuple[SubtitleCue, ...]
    language: str | None = None

    @property
    def resolution(self) -> float:
        """The format's time resolution in seconds (1 ms for SRT and WebVTT, 10 ms for ASS)."""
        return RESOLUTION[self.format]


def _lines(text: str) -> tuple[str, ...]:
    """Shown lines of cue text: tags and override blocks removed, entities decoded, blank edges dropped."""
    text = html.unescape(_TAG.sub("", _OVERRIDE.sub("", text)))
    lines = [line.strip() for line in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    while lines and not lines[0]:
        lines.pop(0)
    return tuple(lines)


def _vtt_seconds(value: str) -> float:
    h, m, s = ([0, 0] + value.split(":"))[-3:]
    return int(h) * 3600 + int(m) * 60 + float(s)


def _srt(path: Path) -> tuple[list[SubtitleCue], str | None]:
    import srt

    text = path.read_text(encoding="utf-8-sig")
    return [
        SubtitleCue(k, s.start.total_seconds(), s.end.total_seconds(), _lines(s.content))
        for k, s in enumerate(srt.parse(text), 1)
    ], None


def _vtt(path: Path) -> tuple[list[SubtitleCue], str | None]:
    import webvtt

    vtt = webvtt.read(str(path))
    language = None
    for line in getattr(vtt, "header_comments", None) or []:
        if line.lower().startswith("language:"):
            language = line.split(":", 1)[1].strip() or None
    if language is None:
        head = path.read_text(encoding="utf-8-sig").split("\n\n", 1)[0]
        found = re.search(r"(?mi)^language:\s*(\S+)", head)
        language = found.group(1) if found else None
    cues = [
        SubtitleCue(k, _vtt_seconds(c.start), _vtt_seconds(c.end), _lines(c.raw_text))
        for k, c in enumerate(vtt.captions, 1)
    ]
    return cues, language


def _ass(path: Path) -> tuple[list[SubtitleCue], str | None]:
    import pysubs2

    subs = pysubs2.load(str(path), encoding="utf-8-sig", format_="ass")
    events = sorted((e for e in subs if not e.is_comment), key=lambda e: e.start)
    return [SubtitleCue(k, e.start / 1000, e.end / 1000, _lines(e.plaintext)) for k, e in enumerate(events, 1)], None


def read_subtitles(path: Path) -> SubtitleFile:
    """Read the subtitle file ``path``; its format comes from the extension (``.srt``, ``.vtt``, ``.ass``, ``.ssa``).

    Raises ``InputError`` naming the file for a missing or unreadable file, an unknown extension, or a file its
    parser rejects (for SRT, a timestamp that cannot be read).
    """
    path = Path(path)
    fmt = FORMATS.get(path.suffix.lower().lstrip("."))
    if fmt is None:
        raise InputError(
            f"{path}: unknown subtitle format {path.suffix or '(no extension)'!r}; "
            f"use {', '.join('.' + e for e in EXTENSIONS)}"
        )
    if path.is_dir():
        raise InputError(f"{path}: is a folder")
    reader = {"srt": _srt, "vtt": _vtt, "ass": _ass}[fmt]
    try:
        cues, language = reader(path)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"{path}: cannot read ({e})") from None
    except Exception as e:  # srt.SRTParseError, webvtt's MalformedFileError, pysubs2's parse errors
        detail = " ".join(str(e).split())[:200]
        raise InputError(f"{path}: not a valid {fmt.upper()} file ({type(e).__name__}: {detail})") from None
    return SubtitleFile(path, fmt, tuple(cues), language)


def shown_cues(cues: Sequence[Cue]) -> tuple[SubtitleCue, ...]:
    """Built cues as an SRT or WebVTT file shows them: times in whole milliseconds, lines with their labels and
    dashes (``Cue.shown_lines``). What ``transcribe`` checks after writing."""
    return tuple(
        SubtitleCue(k, to_milliseconds(c.start) / 1000, to_milliseconds(c.end) / 1000, c.shown_lines)
        for k, c in enumerate(cues, 1)
    )
