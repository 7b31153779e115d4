"""Video copies that carry the subtitles: soft tracks muxed in (``--embed``, ``embed``) or rendered into the picture
(``--burn-in``, ``burn``). The input is never modified.

Names: ``--name-template`` as for every output, then a suffix and the container's extension:
``<name>.subtitled.<ext>`` for ``--embed`` (``.mkv``, ``.mp4``, ``.m4v``, ``.mov`` and ``.webm`` keep their
container, anything else becomes ``.mkv``) and ``<name>.burned.<ext>`` for ``--burn-in`` (MP4 and QuickTime keep
theirs, anything else becomes ``.mkv``). ffmpeg writes a temporary file beside the target, which is then moved
into place atomically; an existing file is kept unless ``--overwrite`` (``outputs.publish``). Inputs with an audio
extension are never copied; an input that turns out to have no video stream is skipped with a warning.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Sequence
from pathlib import Path

from whisper_subtitler.errors import InputError
from whisper_subtitler.languages import iso639_2b, language_name
from whisper_subtitler.outputs import output_path, publish, temporary_beside
from whisper_subtitler.types import Cue, Transcript

log = logging.getLogger(__name__)

EMBED, BURN_IN = "embed", "burn-in"
SUFFIX = {EMBED: "subtitled", BURN_IN: "burned"}
EMBED_CONTAINERS = {"mkv": "matroska", "mp4": "mp4", "m4v": "mp4", "mov": "mov", "webm": "webm"}  # ext -> muxer
BURN_CONTAINERS = {"mp4": "mp4", "m4v": "mp4", "mov": "mov"}
AUDIO_EXTENSIONS = frozenset({"wav", "mp3", "flac", "m4a", "aac", "ogg", "oga", "opus", "wma", "aiff", "aif", "amr"})


def _container(source: Path, kind: str) -> tuple[str, str]:
    """``(extension, ffmpeg muxer)`` of the ``kind`` copy of ``source``."""
    ext = source.suffix.lower().lstrip(".")
    table = EMBED_CONTAINERS if kind == EMBED else BURN_CONTAINERS
    return (ext, table[ext]) if ext in table else ("mkv", "matroska")


def video_targets(
    source: Path, output_dir: Path | None, template: str, *, embed: bool, burn_in: bool
) -> list[tuple[str, Path]]:
    """``(kind, target)`` of each video copy ``source`` gets (none for an audio file). Raises ``InputError`` for an
    invalid name template."""
    if source.suffix.lower().lstrip(".") in AUDIO_EXTENSIONS:
        return []
    kinds = [k for k, on in ((EMBED, embed), (BURN_IN, burn_in)) if on]
    return [(k, output_path(source, output_dir, f"{SUFFIX[k]}.{_container(source, k)[0]}", template)) for k in kinds]


def write_video_copies(
    source: Path,
    transcript: Transcript,
    cues: Sequence[Cue],
    targets: Sequence[tuple[str, Path]],
    writer_options,
    formats: Sequence[str] = (),
    *,
    overwrite: bool = False,
) -> tuple[list[Path], list[Path]]:
    """Write each ``(kind, target)`` copy of ``source`` with ``cues`` (rendered by our writers with
    ``writer_options``; ``formats`` decides whether Matroska also gets an ASS track). Returns ``(written, kept)``.

    Raises ``InputError`` when ffmpeg fails, a target would be the input itself or cannot be written (no partial
    file is left), ``FilterUnavailableError`` (``--burn-in`` without libass).
    """
    from dataclasses import replace

    from whisper_subtitler.streams import probe_streams
    from whisper_subtitler.video.burn import burn_in, fit_canvas
    from whisper_subtitler.video.embed import Track, embed, track_formats
    from whisper_subtitler.video.run import require_subtitle_filter
    from whisper_subtitler.writers import render

    written: list[Path] = []
    kept: list[Path] = []
    todo = []
    for kind, target in targets:
        if target.absolute() == source.absolute() or (target.exists() and target.samefile(source)):
            raise InputError(f"{target}: the video copy would replace its input; choose another --name-template")
        if target.exists() and not overwrite:
            log.warning("%s exists, left untouched (use --overwrite to replace it)", target)
            kept.append(target)
        else:
            todo.append((kind, target))
    if not todo:
        return written, kept
    if not cues:
        log.warning("%s: no subtitles (no speech found): no video copy written", source)
        return written, kept
    streams = probe_streams(source)
    if streams.video is None:
        log.warning("%s: no video stream: %s skipped", source, " and ".join(f"--{k}" for k, _ in todo))
        return written, kept
    options = replace(writer_options, bom=False, crlf=False)  # what ffmpeg's text demuxers read
    # The track's language is its text's: the file's main spoken language, or English for a translation.
    language = "en" if transcript.task == "translate" else transcript.language or ""
    with tempfile.TemporaryDirectory(prefix="whisper-subtitler-") as work:
        workdir = Path(work)
        for kind, target in todo:
            ext, muxer = _container(source, kind)
            if kind == EMBED:
                tracks = []
                for j, (fmt, codec) in enumerate(track_formats(muxer, formats)):
                    name = f"track{j}.{fmt}"
                    (workdir / name).write_text(render(fmt, transcript, cues, options), encoding="utf-8")
                    title = language_name(language) if language else "Subtitles"
                    tracks.append(
                        Track(
                            fmt,
                            name,
                            codec,
                            iso639_2b(language),
                            title + (" (ASS, speaker colours)" if fmt == "ass" else ""),
                        )
                    )
            else:
                filter_name = require_subtitle_filter(source)
                video = streams.video
                text = fit_canvas(render("ass", transcript, cues, options), video.width, video.height)
                (workdir / "burn.ass").write_text(text, encoding="utf-8")
            try:
                tmp = temporary_beside(target)
            except OSError as e:
                raise InputError(f"{target}: cannot write ({e.strerror or e})") from None
            try:
                if kind == EMBED:
                    embed(source, streams, tracks, muxer, tmp, workdir)
                else:
                    burn_in(source, streams, "burn.ass", filter_name, muxer, tmp, workdir)
                publish(tmp, target, overwrite=overwrite)
                written.append(target)
            except FileExistsError:
                log.warning("%s appeared meanwhile, left untouched", target)
                kept.append(target)
            except OSError as e:
                raise InputError(f"{target}: cannot write ({e.strerror or e})") from None
            finally:
                tmp.unlink(missing_ok=True)
    return written, kept
