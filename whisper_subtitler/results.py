"""What a run reports for each input file: done, skipped or failed, with its outputs and figures."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from whisper_subtitler.errors import SubtitlerError
from whisper_subtitler.types import ChannelUse, Removal, StrEnum


class FileStatus(StrEnum):
    """The outcome of one input, as the ``--json`` summary and the exit code report it."""

    DONE = "done"
    SKIPPED = "skipped"  # every output existed (and --overwrite was off)
    FAILED = "failed"


@dataclass(frozen=True)
class FileResult:
    """The outcome for one input: ``outputs`` written, ``skipped_outputs`` kept as they were, ``error`` the one-line
    reason of a failure; ``duration`` in audio seconds, ``timings`` wall seconds per stage (``stages.Stage``);
    ``unheard_speech`` the stretches ``(start, end)`` (seconds) where the VAD heard speech and the subtitles have no
    word (``quality.coverage.unheard_speech``); ``removed`` the words the hallucination guards removed on purpose
    (``types.Removal``), which the ``--json`` summary counts and lists; ``forced_cues`` with ``--forced``, the cues
    in another language than the main one that went to the forced files (``narratives``; 0: none, no file written)."""

    source: Path
    status: FileStatus
    outputs: tuple[Path, ...] = ()
    skipped_outputs: tuple[Path, ...] = ()
    error: str | None = None
    exit_code: int = 0  # of a failed file: its error's documented exit code (1, 2 or 3)
    skip_reason: str | None = None  # a file skipped for another reason than its outputs existing (--skip-existing)
    duration: float | None = None
    language: str | None = None
    speakers: tuple[str, ...] = ()
    channel: ChannelUse | None = None  # the audio channel transcribed, and why (channels.choose_channel)
    unheard_speech: tuple[tuple[float, float], ...] = ()
    removed: tuple[Removal, ...] = ()
    shot_changes: tuple[float, ...] = ()  # seconds: the shot changes the cues were timed by (video.shots)
    timings: dict[str, float] = field(default_factory=dict)
    forced_cues: int | None = None  # --forced: the cues in another language than the main one (None: not asked)

    @classmethod
    def failed(cls, source: Path, error: SubtitlerError) -> FileResult:
        """``source`` failed with ``error`` (its message and hint become ``error``)."""
        return cls(source=source, status=FileStatus.FAILED, error=str(error), exit_code=int(error.exit_code))
