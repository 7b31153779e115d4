"""The ``format`` command: re-render a saved transcript JSON with other cue rules, without any model.

    reformat(Path("talk.json"), formats=("srt", "vtt"), cue_options=CueOptions(max_line_width=37))

Reads the transcript (``writers.read_transcript``: our JSON, or openai-whisper's or whisperX's), builds cues,
renders each format and writes it with ``outputs.write_atomic`` (never half-written; an existing file is kept
unless ``overwrite``). Imports neither torch nor whisper: it runs in milliseconds on any machine.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from whisper_subtitler.cues import CueOptions, build_cues
from whisper_subtitler.errors import InputError
from whisper_subtitler.outputs import output_path, write_atomic
from whisper_subtitler.writers import WriterOptions, encode, get_writer, read_transcript, render, resolve_formats

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ReformatResult:
    """What one ``reformat`` call did: files written, and existing files kept (not overwritten)."""

    source: Path
    outputs: tuple[Path, ...] = ()
    kept: tuple[Path, ...] = ()
    cues: int = 0


def reformat(
    source: Path,
    *,
    formats: Sequence[str] | str = ("srt", "vtt"),
    cue_options: CueOptions = CueOptions(),
    writer_options: WriterOptions = WriterOptions(),
    output_dir: Path | None = None,
    overwrite: bool = False,
    name_template: str = "{stem}",
) -> ReformatResult:
    """Write ``formats`` for the transcript JSON ``source`` to ``output_dir`` (default: beside it).

    Output names follow ``outputs.output_path`` (``<stem>.<extension>``). A target that is ``source`` itself
    (``json`` beside the input) is skipped. Raises ``InputError`` for an unreadable or invalid transcript or
    an unwritable target, ``UsageError`` for an unknown format.
    """
    names = resolve_formats(formats)
    transcript = read_transcript(source)
    cues = build_cues(transcript, cue_options)
    written: list[Path] = []
    kept: list[Path] = []
    for fmt in names:
        writer = get_writer(fmt)
        target = output_path(source, output_dir, writer.extension, name_template)
        if target.resolve() == source.resolve():
            logger.info("%s is the input itself, not rewritten", target)
            continue
        if target.exists() and not overwrite:
            logger.warning("%s exists, left untouched (use --overwrite to replace it)", target)
            kept.append(target)
            continue
        data = encode(render(fmt, transcript, cues, writer_options), fmt, writer_options)
        try:
            write_atomic(target, data, overwrite=overwrite)
        except FileExistsError:
            logger.warning("%s appeared meanwhile, left untouched", target)
            kept.append(target)
            continue
        except OSError as e:
            raise InputError(f"{target}: cannot write ({e.strerror or e})") from None
        written.append(target)
    return ReformatResult(source=source, outputs=tuple(written), kept=tuple(kept), cues=len(cues))
