"""The options of a run, one frozen dataclass per concern, shared by the Python API and the command line.

    DeviceOptions     where Whisper runs: backend, optimization level, fallback, threads   (platform)
    DecodingOptions   which Whisper model and how it decodes                                (transcription)
    AudioOptions      which audio stream of a file, and which of its channels               (audio, streams)
    SpeakerOptions    speaker diarization and the speakers' names                           (diarize, speakers)
    CueOptions        the readability rules of cue building (``cues.options``, re-exported)  (cues)
    OutputOptions     formats, encoding and where files go                                  (writers, outputs)

Each validates itself on construction and raises ``UsageError`` (exit code 2 on the command line) for a bad value
or combination, before any model is loaded; the command line parses its flags into these and nothing else checks
them again. The error messages name the command-line flag, which is also the field's name with dashes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING

from whisper_subtitler.cues.options import CueOptions
from whisper_subtitler.errors import UsageError
from whisper_subtitler.platform.machine import BackendName
from whisper_subtitler.transcription.protocol import TranscribeOptions
from whisper_subtitler.types import StrEnum

if TYPE_CHECKING:
    from whisper_subtitler.diarize import DiarizationOptions
    from whisper_subtitler.platform import Selection
    from whisper_subtitler.transcription import Decoding
    from whisper_subtitler.voices import VoicesOptions
    from whisper_subtitler.writers import WriterOptions

__all__ = [
    "AudioOptions",
    "ComputeType",
    "CueOptions",
    "DecodingOptions",
    "DeviceOptions",
    "OutputOptions",
    "SpeakerOptions",
    "Task",
    "check_audio_options",
    "check_diarization",
    "parse_language",
    "parse_languages",
    "parse_temperatures",
    "subtitle_options",
]

DEFAULT_TEMPERATURES = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)  # openai-whisper's fallback schedule


class Task(StrEnum):
    """What Whisper does with the speech (``--task``)."""

    TRANSCRIBE = "transcribe"
    TRANSLATE = "translate"


class ComputeType(StrEnum):
    """The dtype Whisper computes in (``--compute-type``, faster-whisper's name; ``platform.select.forced_dtype``)."""

    AUTO = "auto"
    FLOAT32 = "float32"
    FLOAT16 = "float16"
    BFLOAT16 = "bfloat16"
    INT8 = "int8"


@dataclass(frozen=True)
class DeviceOptions:
    """Where Whisper and the diarization pipeline run (``platform``).

    ``backend``: ``cuda``, ``rocm``, ``mps``, ``cpu`` or ``auto`` (the first that works); ``None`` reads
    ``$GPU_BACKEND`` (else ``auto``), as the command line does without ``--gpu-backend``. ``optimization_level``:
    0 safe, 1 hardware-specific, 2 measured on the real audio (``None``: ``$OPTIMIZATION_LEVEL``, else 1).
    ``fallback``: use the CPU when the backend asked for does not work (else ``BackendUnavailableError``).
    ``env_file``: a ``.env`` file to read these settings from (``None``: ``./.env`` when present). ``threads``: CPU
    threads for PyTorch (``None``: the physical cores, or ``$OMP_NUM_THREADS``).
    """

    backend: str | None = None
    optimization_level: int | None = None
    fallback: bool = True
    env_file: Path | None = None
    threads: int | None = None

    def __post_init__(self) -> None:
        if self.backend is not None and self.backend not in {b.value for b in BackendName}:
            choices = ", ".join(b.value for b in BackendName)
            raise UsageError(f"--gpu-backend {self.backend!r} is not a backend", hint=f"choose from {choices}")
        if self.optimization_level is not None and self.optimization_level not in (0, 1, 2):
            raise UsageError(f"--optimization-level {self.optimization_level!r} is not 0, 1 or 2")
        if self.threads is not None and self.threads < 1:
            raise UsageError(f"--threads {self.threads!r} must be at least 1")

    def select(self, model: str | None, compute_type: str = "auto") -> Selection:
        """Detect the machine and choose the device and dtype for ``model`` (``platform.configure``), then apply the
        level's optimizations and ``threads``. Raises ``UsageError`` for an invalid environment setting,
        ``BackendUnavailableError`` when the backend does not work and ``fallback`` is off."""
        from whisper_subtitler import platform

        backend = BackendName(self.backend) if self.backend is not None else None
        selection = platform.configure(
            backend, self.optimization_level, not self.fallback, self.env_file, model, compute_type=compute_type
        )
        platform.apply_optimizations(selection)
        if self.threads is not None:
            platform.set_threads(self.threads)
        return selection


@dataclass(frozen=True)
class DecodingOptions(TranscribeOptions):
    """Which Whisper model, and how it decodes: ``TranscribeOptions``' fields (openai-whisper's names and meanings:
    ``language``, ``task``, ``temperatures``, ``initial_prompt``, ``seed``, ``beam_size``, ``best_of``, ``patience``,
    ``suppress_tokens``, the three thresholds, ``condition_on_previous_text``; ``fp16`` is ignored: it follows the
    device's dtype) and:

    ``model``: a Whisper name (``tiny``, ``base``, ``small``, ``large-v3``, ``turbo``, ``*.en``) or the path of an
    openai-whisper ``.pt`` or a CTranslate2 folder; ``None``: ``base``, embedded, offline. ``batched``: VAD chunks
    decoded in batches (``transcription.batched``); ``False``: openai-whisper's sequential ``transcribe()``
    (``transcription.sequential``). ``batch_size``: chunks per batch (``None``: the platform's advice).
    ``compute_type``: ``auto``, ``float32``, ``float16``, ``bfloat16`` or ``int8`` (``ComputeType``).

    ``language`` is normalized on construction: a code or an English name (``de``, ``German``) becomes the ISO 639-1
    code, forced for the whole file; ``auto`` becomes ``None`` (detected per speech region); a comma list
    (``"en,es"``) becomes ``languages``, the languages detection may choose from (as ``languages=("en", "es")``).
    Raises ``UsageError`` for an unknown language, an empty or negative temperature schedule, ``patience`` without
    ``beam_size``, ``condition_on_previous_text`` or ``bfloat16`` on the wrong path, and ``suppress_tokens`` that are
    not token ids.
    """

    model: str | None = None
    batched: bool = True
    batch_size: int | None = None
    compute_type: str = "auto"

    def __post_init__(self) -> None:
        if self.patience is not None and self.beam_size is None:
            raise UsageError("--patience is the beam search's: it needs --beam-size")
        if self.patience is not None and self.beam_size is not None and round(self.beam_size * self.patience) < 1:
            raise UsageError(f"--patience {self.patience} with --beam-size {self.beam_size} waits for no beam")
        if self.condition_on_previous_text and self.batched:
            raise UsageError(
                "--condition-on-previous-text applies to --no-batch only",
                "the batched path decodes each chunk on its own; add --no-batch",
            )
        if self.compute_type not in {c.value for c in ComputeType}:
            raise UsageError(f"--compute-type {self.compute_type!r} is not one of {', '.join(ComputeType)}")
        if self.compute_type == ComputeType.BFLOAT16 and not self.batched:
            raise UsageError("--compute-type bfloat16 runs on the batched path only (not with --no-batch)")
        if self.task not in {t.value for t in Task}:
            raise UsageError(f"--task {self.task!r} is not transcribe or translate")
        for name in ("batch_size", "beam_size", "best_of"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise UsageError(f"--{name.replace('_', '-')} {value!r} must be at least 1")
        language, languages = parse_languages(self.language)
        if language is None:  # a list given as "en,es" and one given as languages=("en", "es") are the same
            listed = tuple(dict.fromkeys(c for v in (*languages, *self.languages) if (c := parse_language(v))))
            language, languages = (listed[0], ()) if len(listed) == 1 else (None, listed)
        object.__setattr__(self, "language", language)
        object.__setattr__(self, "languages", languages if language is None else ())
        temperatures = tuple(float(t) for t in self.temperatures)
        if not temperatures or not all(0.0 <= t < math.inf for t in temperatures):
            raise UsageError(
                f"--temperature {','.join(map(str, self.temperatures))!r} is not a temperature or a list of them",
                'give numbers of at least 0, e.g. 0 or "0,0.2,0.4,0.6,0.8,1"',
            )
        object.__setattr__(self, "temperatures", temperatures)
        object.__setattr__(self, "initial_prompt", (self.initial_prompt or "").strip() or None)
        try:
            self.suppressed()
        except ValueError:
            raise UsageError(
                f"--suppress-tokens {self.suppress_tokens!r} is not a list of token ids",
                'give comma-separated integers, -1 for the non-speech symbols, or "" for none',
            ) from None

    def transcribe_options(self, fp16: bool = False) -> TranscribeOptions:
        """The stage's ``TranscribeOptions`` of these, ``fp16`` as the device's dtype says."""
        values = {f.name: getattr(self, f.name) for f in fields(TranscribeOptions)}
        return TranscribeOptions(**{**values, "fp16": fp16})

    def decoding(self) -> Decoding:
        """The way to decode: ``BatchedDecoding(batch_size)``, or ``SequentialDecoding()`` when not ``batched``."""
        from whisper_subtitler.transcription.batched import BatchedDecoding
        from whisper_subtitler.transcription.sequential import SequentialDecoding

        return BatchedDecoding(self.batch_size) if self.batched else SequentialDecoding()


@dataclass(frozen=True)
class AudioOptions:
    """Which audio stream of a file is transcribed: the ``track``-th (0 = first), or the first tagged with
    ``language`` (ISO 639-1 or 639-2: ``en``, ``eng``, ``de``, ``ger``); and which of its ``channels``: ``auto``
    (the front centre of a surround mix, where the dialogue is, else the downmix; ``channels.choose_channel``),
    ``downmix``, ``center``, ``left``, ``right`` or a channel number (0 = first). Raises ``UsageError`` for a
    negative track, an invalid code, both given, or another ``channels``."""

    track: int = 0
    language: str | None = None
    channels: str = "auto"

    def __post_init__(self) -> None:
        from whisper_subtitler.channels import check_channels

        if self.track < 0:
            raise UsageError(f"--audio-track {self.track} must be 0 or more")
        object.__setattr__(self, "language", check_audio_options(self.track, self.language))
        object.__setattr__(self, "channels", check_channels(self.channels))


@dataclass(frozen=True)
class SpeakerOptions:
    """Speaker diarization (pyannote.audio) and the speakers' names.

    ``diarize``: ``True`` on (a missing requirement is an error), ``False`` off, ``None`` on when pyannote.audio and
    the offline models are installed (else off, with one warning). Any other field set implies ``diarize``.
    ``num_speakers`` fixes the number of speakers, ``min_speakers``/``max_speakers`` bound it; ``model``: a Hugging
    Face pipeline id or a local pipeline folder or ``config.yaml`` (``None``: the embedded offline pipeline);
    ``names``: the speakers' names in order of first appearance. ``voices``: name speakers from the voice library
    (``whisper_subtitler.voices``) in ``voices_dir`` (``None``: the user's data folder; a folder implies ``voices``);
    ``voices_session``: label voices heard before in the batch but not enrolled ``SPEAKER_A``... alike across its
    files. ``names`` win over the library's. Raises ``UsageError`` for counts below 1 or out of their bounds, an
    empty or repeated name, and speaker options with ``diarize=False``.
    """

    diarize: bool | None = None
    num_speakers: int | None = None
    min_speakers: int | None = None
    max_speakers: int | None = None
    model: str | None = None
    names: tuple[str, ...] = ()
    voices: bool = False
    voices_dir: Path | None = None
    voices_session: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "names", tuple(self.names))
        if self.diarize is False and self.voices_options() is not None:
            raise UsageError("--voices needs speaker diarization", hint="leave out --no-diarize")
        if any("," in name for name in self.names):
            raise UsageError(f"--speaker-names: a name cannot hold a comma: {self.names!r}")
        self.diarization()

    def diarization(self, formats: Sequence[str] = ()) -> tuple[DiarizationOptions | None, tuple[str, ...]]:
        """``(DiarizationOptions or None, names)`` (``diarize.options.options_from_cli``); ``formats`` as asked
        (``all`` is not a request for RTTM): ``rttm`` without diarization is a ``UsageError``."""
        from whisper_subtitler.diarize.options import options_from_cli

        return options_from_cli(
            diarize=True if self.voices_options() is not None else self.diarize,
            num_speakers=self.num_speakers,
            min_speakers=self.min_speakers,
            max_speakers=self.max_speakers,
            model=self.model,
            speaker_names=",".join(self.names) if self.names else None,
            formats=tuple(f.strip().lower() for spec in formats for f in spec.split(",")),
        )

    def voices_options(self) -> VoicesOptions | None:
        """``--voices`` as ``voices.VoicesOptions``, ``None`` when not asked for."""
        if not self.voices and self.voices_dir is None:
            return None
        from whisper_subtitler.voices import VoicesOptions

        return VoicesOptions(directory=self.voices_dir, session=self.voices_session)


@dataclass(frozen=True)
class OutputOptions:
    """The files a run writes and how they are encoded (``writers``, ``outputs``).

    ``formats``: writer names (``srt``, ``vtt``, ``ass``, ``json``, ``txt``, ``tsv``, ``rttm``, ``lrc``) or ``all``,
    as asked; ``output_dir``: their folder (``None``: beside each input); ``name_template``: the file name without
    extension (``{stem}``, ``{name}``, ``{ext}``, ``{parent}``); ``overwrite``: replace existing files (else kept).
    ``bom``: a UTF-8 byte order mark; ``crlf``: CR LF line ends; ``word_level``: karaoke word timing in VTT and ASS
    (and enhanced LRC word tags). ``embed``/``burn_in``: also a copy of each video with the subtitles as soft tracks /
    in the picture (files only). ``forced``: also ``<name>.<language>.forced.<ext>`` beside each subtitle file, with
    only the cues in another language than the file's main one (forced narratives, ``narratives``; files only).
    Raises ``UsageError`` for an unknown or empty format list.
    """

    formats: tuple[str, ...] = ("srt", "vtt")
    output_dir: Path | None = None
    name_template: str = "{stem}"
    overwrite: bool = False
    bom: bool = False
    crlf: bool = False
    word_level: bool = False
    embed: bool = False
    burn_in: bool = False
    forced: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "formats", (self.formats,) if isinstance(self.formats, str) else tuple(self.formats))
        self.resolved()

    def resolved(self) -> tuple[str, ...]:
        """The format names, ``all`` expanded (``writers.resolve_formats``), in order, without duplicates."""
        from whisper_subtitler.writers import resolve_formats

        return resolve_formats(self.formats)

    def writer(self, speaker_style: str = "change") -> WriterOptions:
        """The writers' options; ``speaker_style`` is the cues' (``CueOptions.speaker_style``)."""
        from whisper_subtitler.writers import WriterOptions

        return WriterOptions(bom=self.bom, crlf=self.crlf, word_level=self.word_level, speaker_style=speaker_style)


def subtitle_options(
    *,
    max_line_width: int,
    max_lines: int,
    max_cps: float,
    fps: float,
    word_level: bool,
    bom: bool,
    crlf: bool,
    speaker_style: str = "change",
) -> tuple[CueOptions, WriterOptions]:
    """The ``(CueOptions, WriterOptions)`` of the subtitle flags; raises ``UsageError`` for invalid values."""
    from whisper_subtitler.cues.labels import SpeakerStyle

    style = SpeakerStyle(speaker_style).value
    cue_options = CueOptions(
        max_line_width=max_line_width, max_lines=max_lines, max_cps=max_cps, fps=fps, speaker_style=style
    )
    return cue_options, OutputOptions(bom=bom, crlf=crlf, word_level=word_level).writer(style)


def parse_temperatures(value: str) -> tuple[float, ...]:
    """``--temperature``: ``"0"`` -> ``(0.0,)``, ``"0,0.2,0.4"`` -> the fallback schedule, tried in order. Raises
    ``UsageError`` for an empty list, a value that is not a number, and a negative or infinite one."""
    try:
        values = tuple(float(v) for v in value.split(",") if v.strip())
    except ValueError:
        values = ()
    if not values or not all(0.0 <= v < math.inf for v in values):
        raise UsageError(
            f"--temperature {value!r} is not a temperature or a list of them",
            'give numbers of at least 0, e.g. 0 or "0,0.2,0.4,0.6,0.8,1"',
        )
    return values


def parse_language(value: str | None) -> str | None:
    """A language name or code (``en``, ``English``, ``german``) -> ISO code; ``None``/``auto`` -> detect. Raises
    ``UsageError`` for an unknown one."""
    if value is None or value.lower() == "auto":
        return None
    from whisper_subtitler.languages import whisper_code

    if (code := whisper_code(value)) is not None:
        return code
    raise UsageError(f"unknown language {value!r}; use an ISO 639-1 code such as en, de, ja, or a name such as German")


def parse_languages(value: str | None) -> tuple[str | None, tuple[str, ...]]:
    """``--language`` of ``transcribe``: ``(language, ())`` for one language, forced for the whole file;
    ``(None, codes)`` for a comma list (each speech region gets one of them); ``(None, ())`` to detect among all.
    Raises ``UsageError`` for an unknown language."""
    if value is None or "," not in value:
        return parse_language(value), ()
    codes = tuple(dict.fromkeys(c for p in value.split(",") if p.strip() and (c := parse_language(p.strip()))))
    if len(codes) == 1:
        return codes[0], ()
    return None, codes


def check_audio_options(audio_track: int, audio_language: str | None) -> str | None:
    """``audio_language`` when valid and not combined with ``--audio-track``; raises ``UsageError`` otherwise."""
    if audio_language is None:
        return None
    from whisper_subtitler.streams import check_language_code

    if audio_track:
        raise UsageError("--audio-track and --audio-language both choose the audio stream; give one")
    return check_language_code(audio_language)


def check_diarization(options: DiarizationOptions) -> DiarizationOptions | None:
    """``options`` when its pipeline can be loaded (``diarize.preflight``), before any file is transcribed.

    When diarization is only on by default (``options.required`` False) and pyannote.audio or the offline models
    are missing, returns None after one warning: the run goes on without speakers. Otherwise the failure is
    raised (``MissingRequirementError``, exit 3).
    """
    import logging

    from whisper_subtitler.diarize import preflight
    from whisper_subtitler.errors import MissingRequirementError

    try:
        preflight(options)
    except MissingRequirementError as e:
        if options.required:
            raise
        logging.getLogger("whisper_subtitler").warning(
            "speaker labels are off: %s (%s; --no-diarize silences this)", e, e.hint or "see README"
        )
        return None
    return options
