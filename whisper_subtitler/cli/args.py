"""The commands' options as given, and what they become: the option objects of ``whisper_subtitler.options`` and a
``Subtitler`` (``whisper_subtitler.api``), the same ones a Python caller builds. Nothing is checked here that those
do not check themselves; only the flags' text (``--temperature 0,0.2``, ``--speaker-names "A,B"``) is parsed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from whisper_subtitler.cli.options import ExecutorName, ProgressMode
from whisper_subtitler.cues.labels import SpeakerStyle
from whisper_subtitler.errors import UsageError
from whisper_subtitler.options import (
    AudioOptions,
    ComputeType,
    CueOptions,
    DecodingOptions,
    DeviceOptions,
    OutputOptions,
    SpeakerOptions,
    Task,
    parse_temperatures,
    subtitle_options,
)
from whisper_subtitler.platform.machine import BackendName

if TYPE_CHECKING:
    from whisper_subtitler.api import Subtitler
    from whisper_subtitler.executors.ray_executor import RayExecutor
    from whisper_subtitler.pipeline import Pipeline
    from whisper_subtitler.writers import WriterOptions


class SubtitlerOptions(NamedTuple):
    """The option objects a ``Subtitler`` takes, by its keyword names (``Subtitler(**options._asdict())``)."""

    decoding: DecodingOptions
    speakers: SpeakerOptions
    device: DeviceOptions
    cues: CueOptions
    output: OutputOptions
    audio: AudioOptions


@dataclass(frozen=True)
class SubtitleArgs:
    """The subtitle options of a command, as given (``transcribe`` and ``format`` share them)."""

    max_line_width: int
    max_lines: int
    max_cps: float
    fps: float
    word_level: bool
    bom: bool
    crlf: bool
    speaker_style: SpeakerStyle
    output_format: str
    output_dir: Path | None
    overwrite: bool
    name_template: str
    verbose: int
    quiet: bool

    def subtitles(self) -> tuple[CueOptions, WriterOptions]:
        """``options.subtitle_options`` of these values."""
        return subtitle_options(
            max_line_width=self.max_line_width,
            max_lines=self.max_lines,
            max_cps=self.max_cps,
            fps=self.fps,
            word_level=self.word_level,
            bom=self.bom,
            crlf=self.crlf,
            speaker_style=self.speaker_style,
        )

    def targets(self, source: Path) -> list[Path]:
        """The subtitle files ``source`` gets, one per format of ``--format``. Raises ``UsageError`` for an unknown
        format, ``InputError`` for a template that gives no file name."""
        from whisper_subtitler.outputs import output_path
        from whisper_subtitler.writers import FORMATS, resolve_formats

        return [
            output_path(source, self.output_dir, FORMATS[fmt].extension, self.name_template)
            for fmt in resolve_formats(self.output_format)
        ]

    def check_outputs(self, sources: Sequence[Path]) -> None:
        """Raise ``UsageError`` (exit 2) when two of ``sources`` would write the same file
        (``outputs.check_collisions``), before any model is loaded."""
        from whisper_subtitler.outputs import check_collisions

        check_collisions(sources, self.targets)


@dataclass(frozen=True)
class FormatArgs(SubtitleArgs):
    """The ``format`` command's options, as given (``FormatArgs(**ctx.params)``)."""

    transcripts: list[Path]
    shot_changes: str


@dataclass(frozen=True)
class TranscribeArgs(SubtitleArgs):
    """The ``transcribe`` command's options, as given (``TranscribeArgs(**ctx.params)``: a new option is an alias
    in ``cli.options``, a parameter of the command and a field here)."""

    inputs: list[str]
    model: str | None
    language: str | None
    task: Task
    recursive: bool
    extensions: str | None
    audio_track: int
    audio_language: str | None
    channels: str
    embed: bool
    burn_in: bool
    shot_changes: str
    forced: bool
    dry_run: bool
    json_summary: bool
    skip_existing: str | None
    resume: bool
    state_dir: Path | None
    diarize: bool | None
    num_speakers: int | None
    min_speakers: int | None
    max_speakers: int | None
    diarization_model: str | None
    speaker_names: str | None
    voices: bool
    voices_dir: Path | None
    gpu_backend: BackendName | None
    optimization_level: int | None
    no_fallback: bool
    env_file: Path | None
    batch_size: int | None
    no_batch: bool
    seed: int
    initial_prompt: str | None
    beam_size: int | None
    best_of: int | None
    patience: float | None
    temperature: str
    compression_ratio_threshold: float
    logprob_threshold: float
    no_speech_threshold: float
    suppress_tokens: str
    condition_on_previous_text: bool
    compute_type: ComputeType
    threads: int | None
    progress: ProgressMode
    executor: ExecutorName
    ray_address: str | None
    devices: str | None
    cpus_per_worker: int | None
    shard: str | None

    def targets(self, source: Path) -> list[Path]:
        """The subtitle files and video copies (``--embed``, ``--burn-in``) ``source`` gets."""
        from whisper_subtitler.video import video_targets

        videos = video_targets(source, self.output_dir, self.name_template, embed=self.embed, burn_in=self.burn_in)
        return super().targets(source) + [target for _, target in videos]

    def subtitler(self) -> Subtitler:
        """The run's ``Subtitler``, models not loaded yet (``Pipeline.load`` loads them unless every output exists);
        with ``--dry-run`` the diarization pipeline is not checked. Raises ``UsageError`` (exit 2) for invalid values,
        ``MissingRequirementError`` (exit 3) for a diarization pipeline that cannot be loaded when asked for,
        ``BackendUnavailableError`` (exit 4)."""
        from whisper_subtitler.api import Subtitler

        return Subtitler(**self.subtitler_options()._asdict(), load=False, check_speakers=not self.dry_run)

    def subtitler_options(self) -> SubtitlerOptions:
        """The option objects of the run's ``Subtitler``, each checked on construction: raises ``UsageError`` (exit 2)
        for an invalid value or combination, before any device is probed or model loaded."""
        output = self.output_options()  # an unknown format: a usage error before anything is loaded
        cues = replace(self.subtitles()[0], shot_changes=self.shot_changes)  # a file is read (and checked) here
        audio = AudioOptions(self.audio_track, self.audio_language, self.channels)  # before any model or device
        return SubtitlerOptions(
            decoding=self.decoding_options(),
            speakers=self.speaker_options(),
            device=self.device_options(),
            cues=cues,
            output=output,
            audio=audio,
        )

    def output_options(self) -> OutputOptions:
        """``--format`` (as given), ``--output-dir``, ``--name-template``, ``--overwrite``, the encoding flags and the
        video copies."""
        return OutputOptions(
            formats=(self.output_format,),
            output_dir=self.output_dir,
            name_template=self.name_template,
            overwrite=self.overwrite,
            bom=self.bom,
            crlf=self.crlf,
            word_level=self.word_level,
            embed=self.embed,
            burn_in=self.burn_in,
            forced=self.forced,
        )

    def decoding_options(self) -> DecodingOptions:
        """The model and decoding flags; raises ``UsageError`` for a bad value or combination."""
        return DecodingOptions(
            model=self.model,
            batched=not self.no_batch,
            batch_size=self.batch_size,
            compute_type=self.compute_type.value,
            language=self.language,
            task=self.task.value,
            temperatures=parse_temperatures(self.temperature),
            initial_prompt=self.initial_prompt,
            seed=self.seed,
            beam_size=self.beam_size,
            best_of=self.best_of,
            patience=self.patience,
            suppress_tokens=self.suppress_tokens,
            compression_ratio_threshold=self.compression_ratio_threshold,
            logprob_threshold=self.logprob_threshold,
            no_speech_threshold=self.no_speech_threshold,
            condition_on_previous_text=self.condition_on_previous_text,
        )

    def speaker_options(self) -> SpeakerOptions:
        """``--diarize``/``--no-diarize`` and the speaker flags (``--speaker-names "Alice,Bob"`` parsed)."""
        from whisper_subtitler.speakers import parse_speaker_names

        return SpeakerOptions(
            diarize=self.diarize,
            num_speakers=self.num_speakers,
            min_speakers=self.min_speakers,
            max_speakers=self.max_speakers,
            model=self.diarization_model,
            names=parse_speaker_names(self.speaker_names) if self.speaker_names is not None else (),
            voices=self.voices,
            voices_dir=self.voices_dir,
        )

    def device_options(self) -> DeviceOptions:
        """``--gpu-backend``, ``--optimization-level``, ``--no-fallback``, ``--env-file``, ``--threads``."""
        return DeviceOptions(
            backend=self.gpu_backend.value if self.gpu_backend is not None else None,
            optimization_level=self.optimization_level,
            fallback=not self.no_fallback,
            env_file=self.env_file,
            threads=self.threads,
        )

    def sources(self) -> list[Path]:
        """The input files (``inputs.expand_inputs``); ``UsageError`` when there are none."""
        import sys

        from whisper_subtitler.inputs import expand_inputs, parse_extensions

        sources = expand_inputs(
            self.inputs, recursive=self.recursive, extensions=parse_extensions(self.extensions), stdin=sys.stdin
        )
        if not sources:
            raise UsageError("no input files (a folder needs --recursive; check the extension filter)")
        if self.shard is not None:
            from whisper_subtitler.inputs import parse_shard, take_shard

            return take_shard(sources, *parse_shard(self.shard))  # may be empty: nothing to do, exit 0
        return sources

    def ray_executor(self, pipeline: Pipeline) -> RayExecutor | None:
        """``--executor ray``: the executor that runs ``pipeline``'s files on Ray workers; ``None`` for the local
        executor. Raises ``UsageError`` (exit 2) for Ray options without it, ``--devices`` that are not GPU numbers
        or come with ``--ray-address``, and video copies, which Ray workers do not make; ``MissingRequirementError``
        (exit 3) when Ray is not installed."""
        ray_options = {
            "--ray-address": self.ray_address,
            "--devices": self.devices,
            "--cpus-per-worker": self.cpus_per_worker,
        }
        if self.executor is ExecutorName.LOCAL:
            if given := [name for name, value in ray_options.items() if value is not None]:
                raise UsageError(f"{', '.join(given)} needs --executor ray")
            return None
        import importlib.util

        from whisper_subtitler.errors import MissingRequirementError
        from whisper_subtitler.executors.ray_executor import DEFAULT_CPUS_PER_WORKER, RayExecutor, RayOptions
        from whisper_subtitler.executors.ray_worker import PlatformArgs

        if importlib.util.find_spec("ray") is None:
            raise MissingRequirementError("--executor ray needs Ray", hint='pip install "whisper-subtitler[ray]"')
        if self.embed or self.burn_in or self.forced:
            raise UsageError("--embed, --burn-in and --forced are not available with --executor ray yet; run locally")
        if self.devices is not None and self.ray_address is not None:
            raise UsageError("--devices chooses the GPUs of a local Ray cluster; a joined cluster uses its own")
        options = RayOptions(
            address=self.ray_address,
            devices=parse_devices(self.devices) if self.devices is not None else None,
            cpus_per_worker=self.cpus_per_worker or DEFAULT_CPUS_PER_WORKER,
            use_gpus=pipeline.selection.requested != BackendName.CPU,
            log_to_driver=self.verbose > 0,
        )
        platform_args = PlatformArgs(
            self.gpu_backend,
            self.optimization_level,
            self.no_fallback,
            self.env_file,
            compute_type=self.compute_type.value,
            threads=self.threads,
        )
        return RayExecutor(pipeline, options, platform_args)


def parse_devices(value: str) -> tuple[int, ...]:
    """``"0,1"`` -> ``(0, 1)``: GPU numbers, each once; raises ``UsageError`` otherwise."""
    parts = [part.strip() for part in value.split(",")]
    if not all(part.isdigit() for part in parts) or len(set(parts)) != len(parts):
        raise UsageError(f"--devices {value!r} is not a list of GPU numbers such as 0,1")
    return tuple(int(part) for part in parts)
