"""What the user asked of speaker diarization (``--diarize`` and its options), validated. Pure: no torch."""

from __future__ import annotations

from dataclasses import dataclass

from whisper_subtitler.errors import UsageError


@dataclass(frozen=True, slots=True)
class DiarizationOptions:
    """Options of the speaker diarization stage.

    ``model``: ``None`` for the embedded offline pipeline, else a local pipeline folder or ``config.yaml``, or a
    Hugging Face pipeline id such as ``pyannote/speaker-diarization-community-1`` (see :mod:`.load`).
    ``num_speakers`` fixes the number of speakers; ``min_speakers``/``max_speakers`` bound it (pyannote's
    ``SpeakerDiarization.apply`` arguments; ``num_speakers`` wins over the bounds there).

    Raises :class:`~whisper_subtitler.errors.UsageError` (exit 2) for a count below 1, ``min_speakers >
    max_speakers``, or a ``num_speakers`` outside the bounds given with it.
    """

    model: str | None = None
    num_speakers: int | None = None
    min_speakers: int | None = None
    max_speakers: int | None = None
    required: bool = True

    def __post_init__(self) -> None:
        for name in ("num_speakers", "min_speakers", "max_speakers"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise UsageError(f"--{name.replace('_', '-')} must be a whole number of at least 1, not {value!r}")
        lo, hi, n = self.min_speakers, self.max_speakers, self.num_speakers
        if lo is not None and hi is not None and lo > hi:
            raise UsageError(
                f"--min-speakers ({lo}) is greater than --max-speakers ({hi})",
                hint="give a minimum that is at most the maximum",
            )
        if n is not None and ((lo is not None and n < lo) or (hi is not None and n > hi)):
            raise UsageError(
                f"--num-speakers ({n}) is outside --min-speakers/--max-speakers ({lo or 1}..{hi or 'any'})",
                hint="give either --num-speakers or the bounds",
            )
        if self.model is not None and not self.model.strip():
            raise UsageError("--diarization-model is empty", hint="leave it out for the offline default")

    def speaker_counts(self) -> dict[str, int]:
        """The counts that were given, as keyword arguments of pyannote's ``SpeakerDiarization.apply``."""
        counts = {
            "num_speakers": self.num_speakers,
            "min_speakers": self.min_speakers,
            "max_speakers": self.max_speakers,
        }
        return {k: v for k, v in counts.items() if v is not None}


def options_from_cli(
    *,
    diarize: bool | None,
    num_speakers: int | None = None,
    min_speakers: int | None = None,
    max_speakers: int | None = None,
    model: str | None = None,
    speaker_names: str | None = None,
    formats: tuple[str, ...] = (),
) -> tuple[DiarizationOptions | None, tuple[str, ...]]:
    """The CLI's speaker options -> ``(DiarizationOptions or None, speaker names)``.

    ``diarize`` is ``--diarize`` (True), ``--no-diarize`` (False) or neither (None: on by default, not required).
    Any speaker option implies ``--diarize`` (a count or name given without it would otherwise be ignored), and
    contradicts ``--no-diarize`` (UsageError).
    ``formats`` are the format names as the user gave them (``all`` is not a request for RTTM).
    Raises UsageError for invalid counts or names (see :class:`DiarizationOptions`,
    :func:`whisper_subtitler.speakers.parse_speaker_names`), and for ``--format rttm`` without diarization.
    """
    from whisper_subtitler.speakers import parse_speaker_names

    names = parse_speaker_names(speaker_names) if speaker_names is not None else ()
    asked = any(v is not None for v in (num_speakers, min_speakers, max_speakers, model, speaker_names))
    if diarize is False:
        if asked:
            raise UsageError("speaker options were given with --no-diarize", hint="leave out --no-diarize")
        if "rttm" in formats:
            raise UsageError("--format rttm needs speaker turns", hint="leave out --no-diarize")
        return None, names
    options = DiarizationOptions(
        model=model,
        num_speakers=num_speakers,
        min_speakers=min_speakers,
        max_speakers=max_speakers,
        required=bool(diarize) or asked,
    )
    return options, names
