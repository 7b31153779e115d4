"""The ``format`` command: re-render a saved transcript JSON with other cue rules, without any model.

    reformat(Path("talk.json"), formats=("srt", "vtt"), cue_options=CueOptions(max_line_width=37))

Reads the transcript (``writers.read_transcript``: our JSON, or openai-whisper's or whisperX's), builds cues,
renders each format and writes it with ``outputs.write_atomic`` (never half-written; an existing file is kept
unless ``overwrite``). The cues are timed by the shot changes the transcript keeps
(``cues.shots.saved_shot_changes``) unless ``CueOptions.shot_changes`` says otherwise. Imports neither torch nor
whisper: it runs in milliseconds on any machine.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from whisper_subtitler.cues import CueOptions, build_cues
from whisper_subtitler.cues.guards import with_removals
from whisper_subtitler.cues.shots import keeping_shot_changes, saved_shot_changes
from whisper_subtitler.outputs import output_path, write_subtitles
from whisper_subtitler.results import FileResult, FileStatus
from whisper_subtitler.types import Removal
from whisper_subtitler.writers import WriterOptions, get_writer, read_transcript, resolve_formats

logger = logging.getLogger(__name__)


def reformat(
    source: Path,
    *,
    formats: Sequence[str] | str = ("srt", "vtt"),
    cue_options: CueOptions = CueOptions(),
    writer_options: WriterOptions = WriterOptions(),
    output_dir: Path | None = None,
    overwrite: bool = False,
    name_template: str = "{stem}",
) -> FileResult:
    """Write ``formats`` for the transcript JSON ``source`` to ``output_dir`` (default: beside it); the result
    lists the files written (``outputs``) and the existing ones kept (``skipped_outputs``).

    Output names follow ``outputs.output_path`` (``<stem>.<extension>``). A target that is ``source`` itself
    (``json`` beside the input) is skipped. Raises ``InputError`` for an unreadable or invalid transcript or
    an unwritable target, ``UsageError`` for an unknown format.
    """
    names = resolve_formats(formats)
    transcript = read_transcript(source)
    removed: list[Removal] = []
    cue_options = saved_shot_changes(transcript, cue_options)
    cues = build_cues(transcript, cue_options, removed=removed)
    transcript = keeping_shot_changes(with_removals(transcript, removed), cue_options)  # what the cues were timed by
    targets = []
    for fmt in names:
        target = output_path(source, output_dir, get_writer(fmt).extension, name_template)
        if target.resolve() == source.resolve():
            logger.info("%s is the input itself, not rewritten", target)
            continue
        targets.append((fmt, target))
    written, kept = write_subtitles(transcript, cues, targets, writer_options, overwrite=overwrite)
    return FileResult(
        source=source,
        status=FileStatus.DONE,
        outputs=tuple(written),
        skipped_outputs=tuple(kept),
        removed=transcript.removed,
    )
