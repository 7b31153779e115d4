"""Forced narrative subtitles (``--forced``): beside the full file, one with only the lines in another language.

A film in one language with a few lines in another needs a subtitle track that players show even when subtitles are
off: the forced track (Netflix Timed Text Style Guide, "Forced Narrative"). It holds the cues whose language
(``Cue.language``, from the per-segment language detection, ``decoding.code_switching``) differs from the file's main
language (``Transcript.language``, the one spoken longest); cues of unknown language are left out.

The file is named ``{name}.{language}.forced.{ext}`` beside the full ``{name}.{ext}``: the naming Jellyfin ("External
files": a language, then the ``forced`` flag), Plex ("Local subtitle files") and Kodi read as an external forced track.
The language in the name is the file's main language, not the other one: players pick the forced track whose language
matches the audio track's, so a forced track named after the film's language is the one shown (Kodi's VideoPlayer
chooses forced subtitles that way). The lines keep their own language in the text and, in WebVTT, in ``<lang>`` spans.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from whisper_subtitler.outputs import output_path
from whisper_subtitler.types import Cue, Transcript
from whisper_subtitler.writers import FORMATS

FLAG = "forced"  # the name flag Jellyfin, Plex and Kodi read


def foreign_cues(cues: Sequence[Cue], language: str | None) -> tuple[Cue, ...]:
    """The cues spoken in another language than ``language`` (ISO 639-1, the file's main language), in order; none
    when ``language`` is unknown (``None`` or ``""``). A cue of unknown language is not counted as another one."""
    if not language:
        return ()
    return tuple(c for c in cues if c.language and c.language != language)


def forced_targets(
    source: Path, formats: Sequence[str], language: str, output_dir: Path | None = None, template: str = "{stem}"
) -> list[tuple[str, Path]]:
    """``(format, path)`` of the forced file of each cue-based format of ``formats`` (``writers.FORMATS``; the
    transcript formats JSON, TXT and RTTM have none): ``<template>.<language>.forced.<ext>`` in ``output_dir``
    (beside ``source`` when ``None``), or ``<template>.forced.<ext>`` when the template names the language itself
    (``{lang}``, ``{lang3}``: ``Movie.en.forced.srt`` either way). Raises ``InputError`` for a template that gives
    no file name (``outputs.output_path``)."""
    flag = f"{language}.{FLAG}"
    if "{lang" in template:  # the name carries the language already ({lang}, {lang3}): only the flag is added
        from whisper_subtitler.languages import iso639_2b

        template = template.replace("{lang}", language).replace("{lang3}", iso639_2b(language) if language else "")
        flag = FLAG
    return [
        (fmt, output_path(source, output_dir, f"{flag}.{FORMATS[fmt].extension}", template))
        for fmt in formats
        if FORMATS[fmt].cue_based
    ]


@dataclass(frozen=True)
class Forced:
    """What ``--forced`` found for one file: the ``cues`` in another language than ``language`` (the main one),
    and the ``targets`` ``(format, path)`` they go to (none when there are no such cues)."""

    language: str
    cues: tuple[Cue, ...]
    targets: tuple[tuple[str, Path], ...]

    def message(self, source: Path) -> str:
        """One line for people: what was found, or that nothing was written and why."""
        if self.cues:
            others = ", ".join(sorted({c.language for c in self.cues if c.language}))
            return f"{source}: {len(self.cues)} forced cue(s) in {others} (the file is in {self.language or '?'})"
        if not self.language:
            return f"{source}: no forced subtitles written: the file's language is unknown"
        return f"{source}: no forced subtitles written: every cue is in {self.language}"


def plan(
    source: Path,
    transcript: Transcript,
    cues: Sequence[Cue],
    formats: Sequence[str],
    output_dir: Path | None = None,
    template: str = "{stem}",
) -> Forced:
    """The forced subtitles of ``source``: its ``foreign_cues`` and, when there are some, where they go
    (``forced_targets``). A translation (``--task translate``) is in English throughout, so its forced file holds
    the English of the lines spoken in another language than the main one, as a forced narrative does."""
    language = transcript.language
    found = foreign_cues(cues, language)
    targets = forced_targets(source, formats, language, output_dir, template) if found else []
    return Forced(language, found, tuple(targets))
