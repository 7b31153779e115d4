"""``--embed``: a copy of the video with the subtitles as soft tracks; every stream is copied (``-c copy``), none is
re-encoded, so picture and sound are bit for bit the input's.

Which subtitle codec each container takes (Matroska specification, ISO/IEC 14496-30 for MP4, WebM's
subtitle guidelines): Matroska gets SubRip (``srt``) and, when the ASS format is asked, a second track in ASS
(speaker colours); MP4 and QuickTime get 3GPP timed text (``mov_text``), the only text codec their players
read; WebM gets WebVTT, the only one it allows. Each track is tagged with the ISO 639-2/B code of the language
(``languages.iso639_2b``) and a title; the first is the default track, and tracks the input already had lose
their default flag so that players pick ours. Data streams (timecode tracks) are left out: not every container
can carry them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from whisper_subtitler.audio import ffmpeg_binary, ffmpeg_url
from whisper_subtitler.streams import StreamList
from whisper_subtitler.video.run import run_ffmpeg


@dataclass(frozen=True, slots=True)
class Track:
    """One subtitle track to add: our ``fmt`` (writer name) in file ``path`` (relative to ffmpeg's working
    folder), stored with ffmpeg encoder ``codec``, tagged ``language`` (ISO 639-2) and ``title``."""

    fmt: str
    path: str
    codec: str
    language: str
    title: str


def track_formats(muxer: str, formats: Sequence[str]) -> list[tuple[str, str]]:
    """``(our format, ffmpeg subtitle encoder)`` of each track for the ffmpeg ``muxer``: see the module docstring."""
    if muxer in ("mp4", "mov"):
        return [("srt", "mov_text")]
    if muxer == "webm":
        return [("vtt", "webvtt")]
    return [("srt", "srt")] + ([("ass", "ass")] if "ass" in formats else [])


def with_options(cmd: list[str], pairs: Sequence[tuple[str, str]]) -> list[str]:
    """``cmd`` with ``-option value`` pairs added just before its output file (the last argument before the global
    options ffmpeg-python appends): ffmpeg-python takes one value per option name, and a track needs two
    ``-metadata:s:s:N`` values (language and title, and the handler name in MP4)."""
    output = max(i for i, arg in enumerate(cmd) if arg.startswith("file:"))
    extra = [x for option, value in pairs for x in (f"-{option}", value)]
    return cmd[:output] + extra + cmd[output:]


def embed(source: Path, streams: StreamList, tracks: Sequence[Track], muxer: str, target: Path, workdir: Path) -> None:
    """Write ``source`` with ``tracks`` added to ``target`` (a temporary file; the container ``muxer`` is given, not
    taken from its name). ``workdir`` holds the tracks' files. Raises ``InputError`` when ffmpeg fails,
    ``MissingRequirementError`` without ffmpeg."""
    import ffmpeg

    existing = len(streams.of_kind("subtitle"))
    inputs = [ffmpeg.input(ffmpeg_url(source.absolute()), protocol_whitelist="file")]
    inputs += [ffmpeg.input(t.path, protocol_whitelist="file") for t in tracks]
    options: dict[str, str] = {"c": "copy"}
    for k in range(existing):
        options[f"disposition:s:{k}"] = "0"
    pairs = []
    for j, track in enumerate(tracks):
        k = existing + j
        options[f"c:s:{k}"] = track.codec
        options[f"disposition:s:{k}"] = "default" if j == 0 else "0"
        pairs += [(f"metadata:s:s:{k}", f"language={track.language}"), (f"metadata:s:s:{k}", f"title={track.title}")]
        if muxer in ("mp4", "mov"):  # MP4 players show the handler name as the track's name
            pairs.append((f"metadata:s:s:{k}", f"handler_name={track.title}"))
    options["map"] = "-0:d?"  # after the "-map 0 -map 1 ..." of the inputs: no data streams
    cmd = ffmpeg.output(*inputs, ffmpeg_url(target.absolute()), f=muxer, **options).compile(cmd=ffmpeg_binary())
    run_ffmpeg(with_options(cmd, pairs), source, "embed the subtitles", cwd=workdir)
