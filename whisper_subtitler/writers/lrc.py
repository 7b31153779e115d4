"""LRC, the lyrics format of music and audiobook players: one ``[mm:ss.xx]`` line per cue, words in enhanced LRC.

The format (LRC, "simple" and "enhanced" forms, as Wikipedia's "LRC (file format)" describes them and players such as
foobar2000, MusicBee, VLC and Jellyfin read them): ID tags first (``[ar:artist]``, ``[ti:title]``,
``[length:mm:ss.xx]``, ``[re:program]``, ``[ve:version]``), then time-tagged lines ``[mm:ss.xx]text`` in time order,
minutes zero-padded to two digits (more past 99 minutes), hundredths of a second. A line stays until the next one, so
a cue followed by a pause of ``CLEAR_GAP`` seconds or more gets an empty line ``[mm:ss.xx]`` at its end, which clears
it. A cue's lines are one LRC line (joined with a space, none in a language written without spaces), its speaker label
or dialogue dashes kept (``Cue.prefixes``). With ``word_level``, each word is preceded by an enhanced LRC word tag
``<mm:ss.xx>`` (its start, kept inside the cue's time and never going back; without word tags, a right-to-left line
is held in right-to-left marks, ``writers.bidi``), and a ``<`` or ``>`` of the text is
written ``‹`` or ``›``, which no reader takes for a tag.

``ar`` and ``ti`` come from the input's container tags (ffprobe's ``format.tags`` ``artist`` and ``title``), read
when the transcript's source is a file ffprobe can read; ``length`` is the audio's duration.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from pathlib import Path

from whisper_subtitler.cues.width import is_spaceless
from whisper_subtitler.types import Cue, Transcript
from whisper_subtitler.version import __version__
from whisper_subtitler.writers.base import Writer, WriterOptions, to_milliseconds, words_by_line
from whisper_subtitler.writers.bidi import cue_is_rtl, mark

log = logging.getLogger(__name__)

ANGLES = str.maketrans("<>", "\u2039\u203a")  # word-level text: < > would read as word tags, so ‹ › stand for them
CLEAR_GAP = 1.0  # seconds: a pause at least this long after a cue gets an empty line that clears it


def lrc_timestamp(seconds: float) -> str:
    """``mm:ss.xx`` from seconds (whole milliseconds, rounded to hundredths): ``lrc_timestamp(61.234) == "01:01.23"``.
    Raises ``ValueError`` for a negative time."""
    cs = (to_milliseconds(seconds) + 5) // 10
    minutes, cs = divmod(cs, 6000)
    secs, cs = divmod(cs, 100)
    return f"{minutes:02d}:{secs:02d}.{cs:02d}"


def _clean(text: str) -> str:
    """Text on one LRC line: no line breaks, no surrounding space."""
    return " ".join(text.split()) if text.strip() else ""


@functools.lru_cache(maxsize=8)
def media_tags(source: str) -> tuple[tuple[str, str], ...]:
    """The ``artist`` and ``title`` container tags of the media file ``source`` (ffprobe's ``format.tags``, any case),
    as ``(("ar", artist), ("ti", title))`` for those present; empty when ``source`` is not a readable media file."""
    path = Path(source) if source else None
    if path is None or not path.is_file():
        return ()
    from whisper_subtitler.audio import probe_json  # numpy and ffprobe only when a file is there to read
    from whisper_subtitler.errors import SubtitlerError

    try:
        tags = {str(k).lower(): str(v) for k, v in (probe_json(path).get("format", {}).get("tags") or {}).items()}
    except SubtitlerError as error:
        log.info("%s: no LRC tags read (%s)", source, error)
        return ()
    found = ((key, _clean(tags.get(name, ""))) for key, name in (("ar", "artist"), ("ti", "title")))
    return tuple((key, value) for key, value in found if value)


def shown_prefix(prefix: str) -> str:
    """A cue's line prefix as LRC shows it: a speaker label without its brackets (``SPEAKER_00: ``), since LRC readers
    take any ``[...]`` for a time or ID tag; a dialogue dash as it is."""
    if prefix.startswith("[") and "]" in prefix:
        return prefix[1:].replace("]", "", 1)
    return prefix


def _prefixes(cue: Cue) -> list[str]:
    return [shown_prefix(p) for p in cue.prefixes] + [""] * (len(cue.lines) - len(cue.prefixes))


def _word_tagged(cue: Cue, joiner: str) -> str | None:
    """The cue's text with a ``<mm:ss.xx>`` tag before each word (a line's prefix after its first word's tag);
    ``None`` when its lines do not match its words."""
    layout = words_by_line(cue)
    if layout is None:
        return None
    last = cue.start
    lines = []
    for prefix, items in zip(_prefixes(cue), layout):
        parts = []
        for n, (text, word) in enumerate(items):
            t = min(max(word.start, last), cue.end)
            last = t
            lead = " " if n and text[:1] == " " else ""
            bare = _clean(text).translate(ANGLES)
            parts.append(f"{lead}<{lrc_timestamp(t)}>{'' if n else prefix}{bare}")
        lines.append("".join(parts))
    return joiner.join(lines)


class LrcWriter(Writer):
    """LRC lyrics: ID tags, then one time-tagged line per cue; enhanced word tags with ``word_level``."""

    name = "lrc"
    extension = "lrc"
    cue_based = True

    def render(self, transcript: Transcript, cues: Sequence[Cue], options: WriterOptions) -> str:
        out = [f"[{key}:{value}]\n" for key, value in media_tags(transcript.source)]
        if transcript.duration > 0:
            out.append(f"[length:{lrc_timestamp(transcript.duration)}]\n")
        out += ["[re:whisper-subtitler]\n", f"[ve:{__version__}]\n", "\n"]
        shown = [c for c in cues if any(line.strip() for line in c.lines)]
        for k, cue in enumerate(shown):
            joiner = "" if is_spaceless(cue.language or transcript.language or None, "".join(cue.lines)) else " "
            text = _word_tagged(cue, joiner) if options.word_level else None
            if text is None:
                text = joiner.join(_clean(p + line) for p, line in zip(_prefixes(cue), cue.lines) if line.strip())
                text = mark(text) if cue_is_rtl(cue, transcript) else text  # right-to-left (writers.bidi)
            out.append(f"[{lrc_timestamp(cue.start)}]{text}\n")
            following = shown[k + 1].start if k + 1 < len(shown) else None
            if following is None or following - cue.end >= CLEAR_GAP:
                out.append(f"[{lrc_timestamp(cue.end)}]\n")
        return "".join(out)
