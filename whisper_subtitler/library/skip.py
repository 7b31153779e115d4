"""Skipping files that already have subtitles in a language (``--skip-existing LANG[,LANG]``).

A file has subtitles in a language when it has

* a sidecar subtitle file named the way Jellyfin, Plex, Emby and Kodi read them: in the same folder, the media
  file's name without its extension, then dot-separated flags and a language, then a subtitle extension:
  ``Movie.en.srt``, ``Movie.eng.srt``, ``Movie.en.forced.srt``, ``Movie.English.sdh.srt``, ``Movie.de.default.ass``
  (Jellyfin's "External files" naming, Plex's "Local Files for Subtitles", Kodi's ``<name>.<language>.<ext>``).
  The language is the last part that is an ISO 639-1 or 639-2 code or an English language name; the flags
  (``forced``, ``sdh``, ``cc``, ``hi``, ``default``, ...) do not matter. A sidecar with no language part
  (``Movie.srt``, or only flags) is in an **unknown language**, which we write ``und`` (ISO 639-2's
  "undetermined"): it does not count as any language, so ``--skip-existing en`` transcribes a file that has only
  ``Movie.srt``; ``--skip-existing en,und`` counts it (for a library whose untagged subtitles are in English);
* or an embedded subtitle stream whose ``language`` tag names the language (ffprobe; Matroska and MP4 use ISO
  639-2, ``eng``, ``ger``); an untagged stream is ``und`` likewise.

Codes are compared as languages (``languages.normalize``): ``de``, ``ger``, ``deu`` and ``German`` are the same.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from whisper_subtitler.errors import SubtitlerError, UsageError
from whisper_subtitler.languages import UNDEFINED, normalize, whisper_code

# The subtitle files media servers read beside a video (Jellyfin, Plex, Emby, Kodi; lower case, without dot).
SUBTITLE_EXTENSIONS = ("srt", "vtt", "ass", "ssa", "sub", "idx", "sup", "smi", "ttml")
# The flags of a sidecar's name that are not languages (Jellyfin, Plex, Kodi); ``sdh`` is also an ISO 639-3 code and
# ``hi`` Hindi's: ``hi`` counts as Hindi only when no other part names a language (``Movie.en.hi.srt`` is English).
FLAGS = frozenset({"forced", "foreign", "default", "sdh", "cc", "full", "signs", "songs", "commentary"})


def parse_languages(value: str) -> tuple[str, ...]:
    """``--skip-existing``'s value, ``"en,ger"`` -> ``("en", "de")``: ISO 639-1 codes (639-3 where there is none),
    ``und`` kept for untagged subtitles. Raises ``UsageError`` (exit 2) for an empty list or an unknown language."""
    codes: list[str] = []
    for part in (p.strip() for p in value.split(",")):
        if not part:
            continue
        code = UNDEFINED if part.lower() == UNDEFINED else language_of(part)
        if code is None:
            raise UsageError(f"--skip-existing: {part!r} is not a language", "give ISO codes such as en,de or eng,ger")
        codes.append(code)
    if not codes:
        raise UsageError("--skip-existing needs at least one language, e.g. --skip-existing en")
    return tuple(dict.fromkeys(codes))


def language_of(text: str) -> str | None:
    """The ISO 639-1 code (639-3 where there is none) of a code or an English name (``eng``, ``de``, ``German``),
    or ``None``. Two- and three-letter words are read as codes only."""
    if len(text) in (2, 3) and text.isalpha():
        return normalize(text)
    named = whisper_code(text)
    return normalize(named) if named else None


def sidecar_language(media: Path, subtitle: Path) -> str | None:
    """The language of ``subtitle`` as a sidecar of ``media`` (see the module's docstring): an ISO 639-1 code,
    ``und`` when it names none; ``None`` when ``subtitle`` is not a sidecar of ``media`` (another name or
    extension)."""
    name, stem = subtitle.name, media.stem
    extension = subtitle.suffix.lower().lstrip(".")
    if extension not in SUBTITLE_EXTENSIONS or not name.lower().startswith(stem.lower() + "."):
        return None
    middle = name[len(stem) + 1 : len(name) - len(subtitle.suffix)]
    named = [(part.lower(), language_of(part)) for part in middle.split(".") if part and part.lower() not in FLAGS]
    codes = [code for part, code in named if code is not None and part != "hi"]
    codes = codes or [code for _, code in named if code is not None]
    return codes[-1] if codes else UNDEFINED


def sidecars(media: Path) -> dict[Path, str]:
    """Every sidecar subtitle file of ``media`` in its folder with its language (``sidecar_language``), by name."""
    try:
        names = sorted(media.parent.iterdir())
    except OSError:
        return {}
    found = {}
    for path in names:
        if path != media and (code := sidecar_language(media, path)) is not None and path.is_file():
            found[path] = code
    return found


def embedded_languages(media: Path) -> list[str]:
    """The language of each subtitle stream in ``media`` (ffprobe; ``und`` when untagged), in file order; none
    when ffprobe cannot read it (the run then fails on it with its reason)."""
    from whisper_subtitler.streams import probe_streams

    try:
        streams = probe_streams(media).of_kind("subtitle")
    except SubtitlerError:
        return []
    return [normalize(s.language) or UNDEFINED for s in streams]


def existing_subtitles(media: Path, languages: Iterable[str]) -> list[Path]:
    """What makes ``media`` skipped for ``languages`` (ISO 639-1 codes or ``und``, ``parse_languages``): its
    sidecar files in one of them, and ``media`` itself when one of its subtitle streams is; empty when it has none
    (then it is transcribed)."""
    wanted = set(languages)
    found = [path for path, code in sidecars(media).items() if code in wanted]
    if any(code in wanted for code in embedded_languages(media)):
        found.append(media)
    return found
