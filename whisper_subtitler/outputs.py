"""Where outputs go, and writing them so that no user's file is ever half-written or clobbered.

A write goes to a temporary file in the target folder, is flushed and fsync'ed, then linked into place: ``os.link``
fails if the target exists, so without ``overwrite`` an existing file is never replaced, even by a race; with
``overwrite`` ``os.replace`` swaps it atomically. A crash or Ctrl-C leaves neither a partial target nor the
temporary file (it is removed on every exception, ``KeyboardInterrupt`` included).
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from whisper_subtitler.errors import InputError, UsageError
from whisper_subtitler.types import Cue, Transcript

if TYPE_CHECKING:
    from whisper_subtitler.writers import WriterOptions

log = logging.getLogger(__name__)

TEMP_PREFIX = ".whisper-subtitler-"  # temporary files start with this, so a stray one is easy to recognise


LANGUAGE_FIELDS = ("lang", "lang3")  # --name-template's fields known only once the language is


def needs_language(template: str) -> bool:
    """Whether ``template`` uses ``{lang}`` or ``{lang3}``."""
    import string

    try:
        return any(field in LANGUAGE_FIELDS for _, field, _, _ in string.Formatter().parse(template) if field)
    except ValueError:
        return False


def language_template(template: str, language: str | None) -> str:
    """``template`` with ``{lang}`` and ``{lang3}`` filled in for ``language`` (``output_path``), the other fields
    left as they are."""
    if not needs_language(template):
        return template
    lang, lang3 = _language_fields(language)
    return template.replace("{lang}", lang).replace("{lang3}", lang3)


def without_language(template: str) -> str:
    """``template`` without its ``{lang}`` and ``{lang3}`` parts (and the separator before each): for files that
    name the language themselves (``narratives``: ``Movie.en.forced.srt`` from ``{stem}.{lang}``)."""
    for field in LANGUAGE_FIELDS:
        for separator in (".", "-", "_", " ", ""):
            template = template.replace(separator + "{" + field + "}", "")
    return template or "{stem}"


def _language_fields(language: str | None) -> tuple[str, str]:
    """``({lang}, {lang3})`` for ``language``: ISO 639-1 and ISO 639-2/B (``de`` -> ``de``, ``ger``; Whisper's own
    codes for languages 639-1 lacks, such as ``haw`` and ``yue``, stay as they are); ``und`` for both when it is
    unknown (ISO 639-2's code for an undetermined language); the placeholders themselves when ``None``."""
    from whisper_subtitler.languages import UNDEFINED, iso639_2b, normalize

    if language is None:
        return "{lang}", "{lang3}"
    code = normalize(language) or ""
    if not code:
        return UNDEFINED, UNDEFINED
    return code, iso639_2b(code)


def output_path(
    source: Path, output_dir: Path | None, extension: str, template: str = "{stem}", language: str | None = None
) -> Path:
    """The output file for ``source``: ``<output_dir or source folder>/<template>.<extension>``.

    ``template`` may use ``{stem}`` (file name without extension), ``{name}`` (file name), ``{ext}`` (the input's
    extension without dot), ``{parent}`` (the name of the input's folder), ``{lang}`` and ``{lang3}`` (the
    subtitles' ``language``, ISO 639-1 and 639-2/B: ``Movie.en.srt``, ``Movie.eng.srt``, the media servers' sidecar
    names; ``und`` when it is ``""``, unknown; left as ``{lang}`` when ``None``, not known yet). Raises
    ``InputError`` when the template has an unknown field or a path separator.
    """
    lang, lang3 = _language_fields(language)
    try:
        base = template.format(
            stem=source.stem,
            name=source.name,
            ext=source.suffix.lstrip("."),
            parent=source.absolute().parent.name,
            lang=lang,
            lang3=lang3,
        )
    except (KeyError, IndexError, ValueError) as e:
        raise InputError(
            f"output name template {template!r} is invalid ({e}); "
            "use {stem}, {name}, {ext}, {parent}, {lang}, {lang3}"
        ) from None
    if "/" in base or os.sep in base or base in ("", ".", ".."):
        raise InputError(f"output name template {template!r} gives {base!r}, which is not a file name")
    folder = output_dir if output_dir is not None else source.parent
    return folder / f"{base}.{extension.lstrip('.')}"


def check_collisions(sources: Iterable[Path], targets: Callable[[Path], Iterable[Path]]) -> None:
    """Raise ``UsageError`` (exit 2) naming both inputs when two of ``sources`` would write the same file
    (``targets(source)``: the files one input writes). Run before any work: otherwise the second input finds the
    first one's output, keeps it and is reported as skipped, and nothing is written for it. An input whose names
    cannot be made (an invalid template) is left to fail on its own."""
    owners: dict[str, Path] = {}
    for source in sources:
        try:
            paths = list(targets(source))
        except InputError:
            continue
        for path in paths:
            owner = owners.setdefault(os.path.normcase(os.path.abspath(path)), source)
            if owner != source:
                raise UsageError(
                    f"{owner} and {source} would both write {path}",
                    "give --name-template a field that tells them apart: {parent} (the input's folder), "
                    "{ext} or {name}, e.g. --name-template '{parent}-{stem}'",
                )


def write_atomic(path: Path, data: bytes, *, overwrite: bool = False) -> None:
    """Write ``data`` to ``path`` atomically, with the permissions of a normally created file (0666 & ~umask).

    Raises ``FileExistsError`` when ``path`` exists and ``overwrite`` is false (the file is left untouched),
    ``OSError`` for an unwritable folder.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=TEMP_PREFIX, suffix=".tmp")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        publish(tmp, path, overwrite=overwrite)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def temporary_beside(path: Path) -> Path:
    """A new empty temporary file in ``path``'s folder (created, ``TEMP_PREFIX`` name, ``path``'s extension), for a
    writer that needs a file name, such as ffmpeg; ``publish`` moves it into place. Raises ``OSError``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=TEMP_PREFIX, suffix=".tmp" + path.suffix)
    os.close(fd)
    return Path(tmp_name)


def publish(tmp: Path, path: Path, *, overwrite: bool = False) -> None:
    """Move the complete file ``tmp`` (in ``path``'s folder) to ``path`` atomically, with the permissions of a
    normally created file; ``tmp`` is gone afterwards unless an error is raised. Raises ``FileExistsError`` when
    ``path`` exists and ``overwrite`` is false (it is left untouched)."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)
    if overwrite:
        os.replace(tmp, path)
        return
    try:
        os.link(tmp, path)  # atomic create-if-absent: FileExistsError if a file appeared meanwhile
    except OSError as error:  # else: a file system without hard links (FAT, some network shares)
        if isinstance(error, FileExistsError) or path.exists():
            raise FileExistsError(path) from None
        os.rename(tmp, path)
    tmp.unlink(missing_ok=True)


def write_subtitles(
    transcript: Transcript,
    cues: Sequence[Cue],
    targets: Sequence[tuple[str, Path]],
    writer_options: WriterOptions,
    *,
    overwrite: bool = False,
) -> tuple[list[Path], list[Path]]:
    """Render ``transcript``/``cues`` in each ``(format, target)`` and write it atomically (``write_files``).

    Returns ``(written, kept)``: a target that exists (or appears meanwhile) is kept untouched unless ``overwrite``.
    Raises ``InputError`` when a target cannot be written (the files written before it stay complete).
    """
    return write_files(render_subtitles(transcript, cues, targets, writer_options), overwrite=overwrite)


def render_subtitles(
    transcript: Transcript, cues: Sequence[Cue], targets: Sequence[tuple[str, Path]], writer_options: WriterOptions
) -> list[tuple[Path, bytes]]:
    """Each ``(format, target)`` as ``(target, the file's bytes)``, nothing written."""
    from whisper_subtitler.writers import encode, render

    return [
        (target, encode(render(fmt, transcript, cues, writer_options), fmt, writer_options)) for fmt, target in targets
    ]


def write_files(files: Sequence[tuple[Path, bytes]], *, overwrite: bool = False) -> tuple[list[Path], list[Path]]:
    """Write each ``(target, bytes)`` atomically (``write_atomic``), in order.

    Returns ``(written, kept)``: a target that exists (or appears meanwhile) is kept untouched unless ``overwrite``.
    Raises ``InputError`` when a target cannot be written (the files written before it stay complete).
    """
    written: list[Path] = []
    kept: list[Path] = []
    for target, data in files:
        if target.exists() and not overwrite:
            log.warning("%s exists, left untouched (use --overwrite to replace it)", target)
            kept.append(target)
            continue
        try:
            write_atomic(target, data, overwrite=overwrite)
        except FileExistsError:
            log.warning("%s appeared meanwhile, left untouched", target)
            kept.append(target)
            continue
        except OSError as e:
            raise InputError(f"{target}: cannot write ({e.strerror or e})") from None
        written.append(target)
    return written, kept
