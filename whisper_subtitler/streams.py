"""The streams of an input as ffprobe lists them, and choosing the audio stream by its language tag.

``--audio-track N`` picks the N-th audio stream; ``--audio-language CODE`` picks the first audio stream whose
``language`` tag (ISO 639-2 in Matroska and MP4, ``eng``, ``ger``/``deu``; sometimes ISO 639-1) names the same
language as CODE (``languages.same_language``). The probe goes through ``audio.probe_json`` (protocol whitelist,
timeout).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from whisper_subtitler.audio import probe_json
from whisper_subtitler.errors import AudioLanguageError, UsageError
from whisper_subtitler.languages import UNDEFINED, normalize, same_language

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Stream:
    """One stream: its ``index`` in the file, its ``kind`` (``video``, ``audio``, ``subtitle``, ...), its number
    ``position`` among the streams of its kind (what ``0:a:N`` selects), ``codec`` name, ``language`` tag
    (``und`` when absent), ``title`` tag, and for video the frame size in pixels (0 otherwise) and whether it is a
    cover picture (an attached picture, not a video)."""

    index: int
    kind: str
    position: int
    codec: str
    language: str = UNDEFINED
    title: str = ""
    width: int = 0
    height: int = 0
    attached_picture: bool = False


@dataclass(frozen=True)
class StreamList:
    """The streams of one input, in file order; ``duration`` in seconds (``None`` when unknown); ``format_name``
    is ffprobe's container name list (``"mov,mp4,m4a,3gp,3g2,mj2"``, ``"matroska,webm"``)."""

    streams: tuple[Stream, ...]
    duration: float | None
    format_name: str = ""

    def of_kind(self, kind: str) -> tuple[Stream, ...]:
        """The streams of ``kind`` (``video`` leaves out cover pictures), in file order."""
        return tuple(s for s in self.streams if s.kind == kind and not (kind == "video" and s.attached_picture))

    @property
    def video(self) -> Stream | None:
        """The first real video stream, or ``None`` (an audio file, or one with only a cover picture)."""
        found = self.of_kind("video")
        return found[0] if found else None


def probe_streams(path: Path) -> StreamList:
    """The streams of ``path``. Raises ``InputError`` for a missing, unreadable or non-media file,
    ``MissingRequirementError`` without ffprobe."""
    info = probe_json(Path(path))
    counts: dict[str, int] = {}
    streams: list[Stream] = []
    for raw in info.get("streams", []):
        kind = str(raw.get("codec_type") or "data")
        tags = {str(k).lower(): str(v) for k, v in (raw.get("tags") or {}).items()}
        streams.append(
            Stream(
                index=int(raw.get("index", len(streams))),
                kind=kind,
                position=counts.get(kind, 0),
                codec=str(raw.get("codec_name") or ""),
                language=tags.get("language") or UNDEFINED,
                title=tags.get("title", ""),
                width=int(raw.get("width") or 0),
                height=int(raw.get("height") or 0),
                attached_picture=bool((raw.get("disposition") or {}).get("attached_pic")),
            )
        )
        counts[kind] = counts.get(kind, 0) + 1
    fmt = info.get("format") or {}
    try:
        duration = float(fmt["duration"])
    except (KeyError, TypeError, ValueError):
        duration = None
    return StreamList(tuple(streams), duration, str(fmt.get("format_name") or ""))


def check_language_code(code: str) -> str:
    """``code`` when it is an ISO 639-1 or 639-2 code (``en``, ``eng``, ``ger``, ``deu``); raises ``UsageError``
    (exit 2) otherwise."""
    if normalize(code) is None:
        raise UsageError(
            f"--audio-language {code!r} is not an ISO 639-1 or 639-2 language code (e.g. en, eng, de, ger)"
        )
    return code


def pick_audio_track(path: Path, language: str) -> int:
    """The position (``0:a:N``) of the first audio stream of ``path`` tagged with ``language`` (ISO 639-1 or -2).

    Raises ``UsageError`` (exit 2) naming the file and listing the language tags of its audio streams when none
    matches, ``InputError`` for a file without audio streams or one ffprobe cannot read.
    """
    from whisper_subtitler.errors import InputError

    audio = probe_streams(path).of_kind("audio")
    if not audio:
        raise InputError(f"{path}: no audio stream")
    matches = [s for s in audio if same_language(s.language, language)]
    if not matches:
        present = ", ".join(f"{s.position}: {s.language}" for s in audio)
        raise AudioLanguageError(
            f"{path}: no audio stream in language {language!r} (audio streams by language tag: {present}; "
            "--audio-track N picks one by number)"
        )
    if len(matches) > 1:
        log.info(
            "%s: %d audio streams in %s, using the first (audio track %d)",
            path,
            len(matches),
            language,
            matches[0].position,
        )
    return matches[0].position
