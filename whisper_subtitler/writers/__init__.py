"""Output formats: a registry of writers that render a transcript and its cues as text.

    from whisper_subtitler.writers import FORMATS, WriterOptions, render, encode, resolve_formats
    text = render("srt", transcript, cues, WriterOptions(crlf=True))
    data = encode(text, "srt", WriterOptions(crlf=True))   # bytes for outputs.py to write

Writers only render; ``whisper_subtitler.outputs`` writes files. A new format is a ``Writer`` subclass
added with ``register``.
"""

from __future__ import annotations

from collections.abc import Sequence

from whisper_subtitler.errors import UsageError
from whisper_subtitler.types import Cue, Transcript
from whisper_subtitler.writers.ass import AssWriter
from whisper_subtitler.writers.base import Writer, WriterOptions, format_timestamp, to_milliseconds
from whisper_subtitler.writers.json import JsonWriter, read_transcript, transcript_from_dict, transcript_to_dict
from whisper_subtitler.writers.lrc import LrcWriter
from whisper_subtitler.writers.rttm import RttmWriter
from whisper_subtitler.writers.srt import SrtWriter
from whisper_subtitler.writers.tsv import TsvWriter
from whisper_subtitler.writers.txt import TxtWriter
from whisper_subtitler.writers.vtt import VttWriter

FORMATS: dict[str, Writer] = {}


def register(writer: Writer) -> Writer:
    """Add ``writer`` to ``FORMATS`` under ``writer.name`` (replacing one of the same name); returns it."""
    FORMATS[writer.name] = writer
    return writer


_WRITERS = (SrtWriter(), VttWriter(), TxtWriter(), TsvWriter(), JsonWriter(), AssWriter(), RttmWriter(), LrcWriter())
for _writer in _WRITERS:
    register(_writer)


def get_writer(fmt: str) -> Writer:
    """The writer of format ``fmt``. Raises ``UsageError`` naming the known formats when there is none."""
    try:
        return FORMATS[fmt]
    except KeyError:
        raise UsageError(f"unknown output format {fmt!r}", hint=f"choose from {', '.join(FORMATS)} or all") from None


def resolve_formats(spec: str | Sequence[str]) -> tuple[str, ...]:
    """Format names from ``"srt,vtt"``, ``["srt", "vtt"]`` or ``"all"`` (every registered format), in order,
    without duplicates. Raises ``UsageError`` for an unknown name or an empty list."""
    items = spec.split(",") if isinstance(spec, str) else [p for s in spec for p in s.split(",")]
    names: dict[str, None] = {}
    for item in (i.strip().lower() for i in items):
        if not item:
            continue
        if item == "all":
            names.update(dict.fromkeys(FORMATS))
        else:
            names[get_writer(item).name] = None
    if not names:
        raise UsageError("no output format given", hint=f"choose from {', '.join(FORMATS)} or all")
    return tuple(names)


def render(fmt: str, transcript: Transcript, cues: Sequence[Cue], options: WriterOptions = WriterOptions()) -> str:
    """The text of ``transcript`` (and its ``cues``, for cue-based formats) in format ``fmt``.

    Raises ``UsageError`` for an unknown format.
    """
    return get_writer(fmt).render(transcript, cues, options)


def encode(text: str, fmt: str, options: WriterOptions = WriterOptions()) -> bytes:
    """``text`` as the bytes of a ``fmt`` file: UTF-8, with a BOM and CR LF line ends when ``options`` ask
    (the BOM never for JSON, RFC 8259). Raises ``UsageError`` for an unknown format."""
    return get_writer(fmt).encode(text, options)


__all__ = [
    "FORMATS",
    "Writer",
    "WriterOptions",
    "encode",
    "format_timestamp",
    "get_writer",
    "read_transcript",
    "register",
    "render",
    "resolve_formats",
    "to_milliseconds",
    "transcript_from_dict",
    "transcript_to_dict",
]
