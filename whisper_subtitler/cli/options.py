"""The command line's options, declared once (Typer ``Annotated`` types), and the option objects built from them.

A command lists its options as ``name: Type = default``; a new option is one alias here and one parameter there.
Values are checked here (``UsageError``, exit 2) before any model is loaded.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from whisper_subtitler.cues.labels import SpeakerStyle
from whisper_subtitler.errors import UsageError
from whisper_subtitler.platform.machine import BackendName
from whisper_subtitler.types import StrEnum

if TYPE_CHECKING:
    from whisper_subtitler.cues import CueOptions
    from whisper_subtitler.diarize import DiarizationOptions
    from whisper_subtitler.executors.ray_executor import RayExecutor
    from whisper_subtitler.pipeline import Pipeline, RunOptions
    from whisper_subtitler.platform import Selection
    from whisper_subtitler.transcription import Decoding, TranscribeOptions
    from whisper_subtitler.writers import WriterOptions

# Typer reads these annotations at run time: Optional[...] keeps them readable by every supported Typer version.
# ruff: noqa: UP045


class ExecutorName(StrEnum):
    """``--executor``: where a batch's files run."""

    LOCAL = "local"
    RAY = "ray"


class Task(StrEnum):
    """``--task``: what Whisper does with the speech."""

    TRANSCRIBE = "transcribe"
    TRANSLATE = "translate"


class ComputeType(StrEnum):
    """``--compute-type`` (faster-whisper's name): the dtype Whisper computes in (``platform.select.forced_dtype``)."""

    AUTO = "auto"
    FLOAT32 = "float32"
    FLOAT16 = "float16"
    BFLOAT16 = "bfloat16"
    INT8 = "int8"


class ProgressMode(StrEnum):
    """``--progress``: the Rich display on a terminal (``auto``), JSON lines on stderr (``json``), or nothing."""

    AUTO = "auto"
    JSON = "json"
    NONE = "none"


# Inputs and outputs
Inputs = Annotated[
    list[str],
    typer.Argument(
        help="Video or audio files (anything ffmpeg reads), folders with --recursive, quoted globs, "
        "or - to read paths from stdin, one per line.",
        show_default=False,
    ),
]
Recursive = Annotated[bool, typer.Option("--recursive", "-r", help="Process the media files inside folders.")]
Extensions = Annotated[
    Optional[str],
    typer.Option(
        "--extensions",
        help="With --recursive: comma-separated extensions to pick (default: common video and audio extensions).",
        show_default=False,
    ),
]
AudioTrack = Annotated[int, typer.Option("--audio-track", min=0, help="Audio stream to use (0 = first).")]
AudioLanguage = Annotated[
    Optional[str],
    typer.Option(
        "--audio-language",
        help="Use the audio stream tagged with this language (ISO 639-1 or 639-2: en, eng, de, ger); "
        "a file without one fails with the tags it has (exit code 2). --audio-track picks by number.",
        show_default=False,
    ),
]
Embed = Annotated[
    bool,
    typer.Option(
        "--embed",
        rich_help_panel="Video",
        help="Also write a copy of each video with the subtitles as soft tracks, "
        "nothing re-encoded: <name>.subtitled.<ext> (MKV: SRT, plus ASS when asked; MP4/MOV: mov_text; WebM: WebVTT; "
        'other containers become .mkv), tagged with the language (README, "Subtitles in the video").',
    ),
]
BurnIn = Annotated[
    bool,
    typer.Option(
        "--burn-in",
        rich_help_panel="Video",
        help="Also write a copy of each video with the subtitles rendered into the "
        "picture (ffmpeg with libass, our ASS styles and speaker colours): <name>.burned.<mp4|mov|mkv>, "
        "H.264 (libx264) at CRF 20, preset medium, audio copied.",
    ),
]
OutputFormat = Annotated[str, typer.Option("--format", "-f", help="Comma-separated output formats, or all.")]
OutputDir = Annotated[
    Optional[Path],
    typer.Option("--output-dir", "-o", help="Folder for the outputs. Default: beside each input.", file_okay=False),
]
Overwrite = Annotated[bool, typer.Option(help="Replace existing output files (they are kept by default).")]
NameTemplate = Annotated[
    str,
    typer.Option(
        "--name-template",
        help="Output file name without extension: {stem}, {name}, {ext} of the input and {parent}, the name of its "
        "folder. Two inputs that would get the same output name are a usage error (exit 2), found before any work.",
    ),
]
DryRun = Annotated[bool, typer.Option("--dry-run", help="List what would be done (stdout) and exit.")]
JsonSummary = Annotated[
    bool, typer.Option("--json", help='Print one JSON summary of the batch on stdout (README, "Scripting").')
]
Transcripts = Annotated[
    list[Path],
    typer.Argument(
        help="Transcript JSON files (from --format json, openai-whisper or whisperX).",
        exists=True,
        dir_okay=False,
        show_default=False,
    ),
]
Verbose = Annotated[int, typer.Option("--verbose", "-v", count=True, help="More log output (-vv for debug).")]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="Only errors on stderr.")]
Progress = Annotated[
    ProgressMode,
    typer.Option(
        "--progress",
        case_sensitive=False,
        help="auto: a progress bar when stderr is a terminal; json: one JSON object per line on stderr for "
        'wrappers ({"file", "stage", "fraction", "elapsed", ...}; README, "Scripting"); none: no progress.',
    ),
]

# Whisper
Model = Annotated[
    Optional[str],
    typer.Option(
        "--model",
        "-m",
        help="Whisper model name (tiny, base, small, medium, large-v3, turbo, *.en) or a path to an "
        "openai-whisper .pt or a CTranslate2 (faster-whisper) folder. Default: base, embedded, works offline.",
    ),
]
Language = Annotated[
    Optional[str], typer.Option("--language", "-l", help="Spoken language (code or name); detected when absent.")
]
TaskOption = Annotated[Task, typer.Option(help="transcribe, or translate into English.")]
BatchSize = Annotated[
    Optional[int],
    typer.Option(
        "--batch-size",
        min=1,
        help="Speech chunks (<= 30 s) decoded together. Default: the one `doctor` recommends for "
        "the device and model (measured at --optimization-level 2).",
        show_default=False,
    ),
]
NoBatch = Annotated[
    bool,
    typer.Option(
        "--no-batch",
        help="Decode with openai-whisper's sequential transcribe() instead of VAD chunks in batches "
        "(slower; for comparison and odd audio).",
    ),
]
Seed = Annotated[
    int,
    typer.Option(
        "--seed",
        help="Seed of the temperature fallback's sampling: the same input and options give the same files "
        "byte for byte; another seed may give other words where the fallback samples.",
    ),
]

# Decoding (openai-whisper's names and meanings)
DEFAULT_TEMPERATURES = "0,0.2,0.4,0.6,0.8,1"
InitialPrompt = Annotated[
    Optional[str],
    typer.Option(
        "--initial-prompt",
        rich_help_panel="Decoding",
        show_default=False,
        help="Text Whisper reads as what came before each window: names, spellings and vocabulary "
        '(e.g. "Saoirse, Nguyen, Kubernetes."). Given to every chunk, and with --no-batch to every window.',
    ),
]
BeamSize = Annotated[
    Optional[int],
    typer.Option(
        "--beam-size",
        min=1,
        rich_help_panel="Decoding",
        show_default=False,
        help="Beam search with this many beams at temperature 0 (openai-whisper's CLI uses 5); default: greedy. "
        "The batched path searches the beams of a whole batch together; slower than greedy.",
    ),
]
BestOf = Annotated[
    Optional[int],
    typer.Option(
        "--best-of",
        min=1,
        rich_help_panel="Decoding",
        show_default=False,
        help="Candidates sampled at each fallback temperature above 0, the most probable kept; default 1.",
    ),
]
Patience = Annotated[
    Optional[float],
    typer.Option(
        "--patience",
        min=0.0,
        rich_help_panel="Decoding",
        show_default=False,
        help="Beam search patience (arXiv:2204.05424): finish after patience x beam size ended beams; "
        "default 1.0. Needs --beam-size.",
    ),
]
Temperature = Annotated[
    str,
    typer.Option(
        "--temperature",
        rich_help_panel="Decoding",
        help="Sampling temperature, or a comma-separated fallback schedule: a window whose text fails the "
        "thresholds below is decoded again at the next temperature. One value: no fallback.",
    ),
]
CompressionRatioThreshold = Annotated[
    float,
    typer.Option(
        "--compression-ratio-threshold",
        min=0.0,
        rich_help_panel="Decoding",
        help="Decode again at the next temperature when the text's gzip compression ratio is above this "
        "(repetitive text); inf turns the check off.",
    ),
]
LogprobThreshold = Annotated[
    float,
    typer.Option(
        "--logprob-threshold",
        rich_help_panel="Decoding",
        help="Decode again at the next temperature when the mean token log-probability is below this; "
        "-inf turns the check off.",
    ),
]
NoSpeechThreshold = Annotated[
    float,
    typer.Option(
        "--no-speech-threshold",
        min=0.0,
        max=1.0,
        rich_help_panel="Decoding",
        help="A window whose no-speech probability is above this and whose log-probability is below "
        "--logprob-threshold is silence: no text, no fallback. 1 turns the rule off.",
    ),
]
SuppressTokens = Annotated[
    str,
    typer.Option(
        "--suppress-tokens",
        rich_help_panel="Decoding",
        help="Comma-separated token ids never to sample; -1 stands for Whisper's non-speech symbols; an empty "
        'string ("") suppresses nothing.',
    ),
]
ConditionOnPreviousText = Annotated[
    bool,
    typer.Option(
        "--condition-on-previous-text",
        rich_help_panel="Decoding",
        help="With --no-batch only: give each window the previous window's text as its prompt (openai-whisper's "
        "default; off here, since it can make a model loop). The batched path decodes chunks independently.",
    ),
]
ComputeTypeOption = Annotated[
    ComputeType,
    typer.Option(
        "--compute-type",
        case_sensitive=False,
        help="auto (float16 on GPUs with fast fp16, else float32), float32, float16 (GPU), bfloat16 (CUDA 8.0+, "
        "ROCm CDNA, Apple M2+, CPU; batched path only) or int8 (CPU only: weights quantized to int8; "
        "the decoder only; 2 cores, 10-minute clip: tiny.en 1.3x as fast, WER +0.2 points; base 1.2x, same WER; "
        'README, "Speed").',
    ),
]
Threads = Annotated[
    Optional[int],
    typer.Option(
        "--threads",
        min=1,
        show_default=False,
        help="CPU threads for PyTorch (torch.set_num_threads). Default: the physical cores, or $OMP_NUM_THREADS.",
    ),
]

# Subtitle options shared by transcribe and format (rules: whisper_subtitler.cues, Netflix Timed Text Style Guide)
MaxLineWidth = Annotated[
    int,
    typer.Option(
        "--max-line-width",
        min=8,
        rich_help_panel="Subtitles",
        help="Characters per cue line, spaces counted (a wide CJK character counts 2).",
    ),
]
MaxLines = Annotated[int, typer.Option("--max-lines", min=1, rich_help_panel="Subtitles", help="Lines per cue.")]
MaxCps = Annotated[
    float,
    typer.Option(
        "--max-cps",
        min=1.0,
        rich_help_panel="Subtitles",
        help="Reading speed limit in characters per second (17 adults, 13 children).",
    ),
]
Fps = Annotated[
    float,
    typer.Option(
        "--fps", min=1.0, rich_help_panel="Subtitles", help="Frame rate of the video: cues are at least 2 frames apart."
    ),
]
WordLevel = Annotated[
    bool,
    typer.Option(
        "--word-level",
        rich_help_panel="Subtitles",
        help="Karaoke-style word highlighting in VTT (timestamp tags) and ASS (\\k).",
    ),
]
Bom = Annotated[
    bool,
    typer.Option(
        "--bom", rich_help_panel="Subtitles", help="Start text outputs with a UTF-8 BOM (some players and TVs need it)."
    ),
]
Crlf = Annotated[bool, typer.Option("--crlf", rich_help_panel="Subtitles", help="End lines with CR LF instead of LF.")]
SpeakerStyleOption = Annotated[
    SpeakerStyle,
    typer.Option(
        "--speaker-style",
        rich_help_panel="Speakers",
        case_sensitive=False,
        help="How subtitles show speakers: change = the label on the first cue after a speaker change, "
        "and two short lines of two speakers as one dialogue cue with dashes ('- '); dash = dialogue "
        "dashes only, never names; label = [SPEAKER_00]: on every cue (whisperX); none = nothing. "
        "With one speaker nothing is shown. WebVTT voices and ASS styles are kept in every style.",
    ),
]

# Speakers
Diarize = Annotated[
    Optional[bool],
    typer.Option(
        "--diarize/--no-diarize",
        rich_help_panel="Speakers",
        show_default=False,
        help="Label who speaks (pyannote.audio speaker diarization, offline). On by default when pyannote.audio is "
        'installed; on the CPU it adds about 70 % to a run with the base model (README, "Speakers"). One '
        "speaker: no labels. --no-diarize turns it off.",
    ),
]
NumSpeakers = Annotated[
    Optional[int],
    typer.Option(
        "--num-speakers",
        min=1,
        rich_help_panel="Speakers",
        help="Exact number of speakers, when known.",
        show_default=False,
    ),
]
MinSpeakers = Annotated[
    Optional[int],
    typer.Option(
        "--min-speakers", min=1, rich_help_panel="Speakers", help="At least this many speakers.", show_default=False
    ),
]
MaxSpeakers = Annotated[
    Optional[int],
    typer.Option(
        "--max-speakers", min=1, rich_help_panel="Speakers", help="At most this many speakers.", show_default=False
    ),
]
DiarizationModel = Annotated[
    Optional[str],
    typer.Option(
        "--diarization-model",
        rich_help_panel="Speakers",
        show_default=False,
        help="Hugging Face pipeline id (e.g. pyannote/speaker-diarization-community-1; token from HF_TOKEN or `hf auth "
        "login`) or a local pipeline folder or config.yaml. Default: the embedded offline pipeline.",
    ),
]
SpeakerNames = Annotated[
    Optional[str],
    typer.Option(
        "--speaker-names",
        rich_help_panel="Speakers",
        show_default=False,
        help='Names in order of first appearance, e.g. "Alice,Bob". Any speaker option implies --diarize.',
    ),
]

# Platform
GpuBackend = Annotated[
    Optional[BackendName],
    typer.Option(
        "--gpu-backend",
        show_default=False,
        help="Compute backend. Default: $GPU_BACKEND, else auto "
        "(cuda, rocm, mps, then cpu; legacy USE_CUDA=false forces cpu).",
    ),
]
OptimizationLevel = Annotated[
    Optional[int],
    typer.Option(
        "--optimization-level",
        min=0,
        max=2,
        show_default=False,
        help="0 safe, 1 hardware-specific (default), 2 benchmark-guided. Default: $OPTIMIZATION_LEVEL, else 1.",
    ),
]
NoFallback = Annotated[
    bool,
    typer.Option(
        "--no-fallback",
        help="Fail (exit 4) instead of falling back to the CPU when the requested backend is "
        "unavailable. Also $WHISPER_SUBTITLER_NO_FALLBACK=1.",
    ),
]
EnvFile = Annotated[
    Optional[Path],
    typer.Option(
        "--env-file",
        exists=True,
        dir_okay=False,
        show_default=False,
        help="Read GPU_BACKEND, USE_CUDA, "
        "OPTIMIZATION_LEVEL, ... from this file (real environment variables win). Default: ./.env when present.",
    ),
]

# Spreading a batch over machines (README, "Many files, many machines")
ExecutorOption = Annotated[
    ExecutorName,
    typer.Option(
        "--executor",
        rich_help_panel="Many machines",
        case_sensitive=False,
        help="local: the files one after another in this process. ray: spread over Ray workers, one per GPU or per "
        "--cpus-per-worker cores, each loading the models once; they read the inputs from storage they share with "
        "this process, which writes every output (extra [ray]).",
    ),
]
RayAddress = Annotated[
    Optional[str],
    typer.Option(
        "--ray-address",
        rich_help_panel="Many machines",
        show_default=False,
        help="With --executor ray: join this Ray cluster (host:port, or auto). Default: start a local one for the run.",
    ),
]
Devices = Annotated[
    Optional[str],
    typer.Option(
        "--devices",
        rich_help_panel="Many machines",
        show_default=False,
        help="With --executor ray and a local cluster: the GPUs of this machine to use, one worker each "
        "(e.g. 0,1). Default: all of them.",
    ),
]
CpusPerWorker = Annotated[
    Optional[int],
    typer.Option(
        "--cpus-per-worker",
        min=1,
        rich_help_panel="Many machines",
        show_default=False,
        help="With --executor ray and no GPU: cores per worker, one worker per this many cores. Default: 4.",
    ),
]
Shard = Annotated[
    Optional[str],
    typer.Option(
        "--shard",
        rich_help_panel="Many machines",
        show_default=False,
        help="K/N: only the K-th of N shares of the inputs (sorted by path, then every N-th from the K-th), so that "
        "N jobs (a Slurm job array, a Kubernetes indexed Job) cover every file once. An empty share exits 0.",
    ),
]


# doctor
DoctorJson = Annotated[
    bool,
    typer.Option("--json", help="Print the report as JSON on stdout (schema: whisper_subtitler/doctor_schema.json)."),
]
DoctorGpuBackend = Annotated[
    Optional[BackendName],
    typer.Option("--gpu-backend", help="Show the choice for this backend request.", show_default=False),
]
DoctorEnvFile = Annotated[
    Optional[Path],
    typer.Option(
        "--env-file",
        help="Read settings from this file, as transcribe would.",
        exists=True,
        dir_okay=False,
        show_default=False,
    ),
]


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
        """``subtitle_options`` of these values."""
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


@dataclass(frozen=True)
class TranscribeArgs(SubtitleArgs):
    """The ``transcribe`` command's options, as given (``TranscribeArgs(**ctx.params)``: a new option is an alias
    above, a parameter of the command and a field here)."""

    inputs: list[str]
    model: str | None
    language: str | None
    task: Task
    recursive: bool
    extensions: str | None
    audio_track: int
    audio_language: str | None
    embed: bool
    burn_in: bool
    dry_run: bool
    json_summary: bool
    diarize: bool | None
    num_speakers: int | None
    min_speakers: int | None
    max_speakers: int | None
    diarization_model: str | None
    speaker_names: str | None
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

    def run_options(self) -> tuple[RunOptions, Selection]:
        """The pipeline's options and the platform's device choice (``platform.configure``, optimizations applied).
        Raises ``UsageError`` (exit 2) for invalid values, ``MissingRequirementError`` (exit 3) for a diarization
        pipeline that cannot be loaded when asked for, ``BackendUnavailableError`` (exit 4)."""
        from whisper_subtitler import platform
        from whisper_subtitler.pipeline import RunOptions
        from whisper_subtitler.writers import resolve_formats

        formats = resolve_formats(self.output_format)  # an unknown format: a usage error before anything is loaded
        cues, writer = self.subtitles()
        audio_language = check_audio_options(self.audio_track, self.audio_language)  # before any model or device
        decoding = self.transcribe_options()
        diarization, names = self.speaker_options()
        selection = platform.configure(
            self.gpu_backend,
            self.optimization_level,
            self.no_fallback,
            self.env_file,
            self.model,
            compute_type=self.compute_type.value,
        )
        platform.apply_optimizations(selection)
        if self.threads is not None:
            platform.set_threads(self.threads)
        transcribe = replace(decoding, fp16=selection.dtype == "float16")
        options = RunOptions(
            model=self.model,
            transcribe=transcribe,
            decoding=self.decoding(),
            formats=output_formats(formats, diarization),
            output_dir=self.output_dir,
            name_template=self.name_template,
            overwrite=self.overwrite,
            audio_track=self.audio_track,
            audio_language=audio_language,
            embed=self.embed,
            burn_in=self.burn_in,
            cues=cues,
            writer=writer,
            diarization=diarization,
            speaker_names=names,
        )
        return options, selection

    def transcribe_options(self) -> TranscribeOptions:
        """The decoding options as given (``fp16`` follows the device, later). Raises ``UsageError`` (exit 2) for a
        bad value or combination, before any device or model is set up."""
        from whisper_subtitler.transcription import TranscribeOptions

        if self.patience is not None and self.beam_size is None:
            raise UsageError("--patience is the beam search's: it needs --beam-size")
        if self.patience is not None and self.beam_size is not None and round(self.beam_size * self.patience) < 1:
            raise UsageError(f"--patience {self.patience} with --beam-size {self.beam_size} waits for no beam")
        if self.condition_on_previous_text and not self.no_batch:
            raise UsageError(
                "--condition-on-previous-text applies to --no-batch only",
                "the batched path decodes each chunk on its own; add --no-batch",
            )
        if self.compute_type is ComputeType.BFLOAT16 and self.no_batch:
            raise UsageError("--compute-type bfloat16 runs on the batched path only (not with --no-batch)")
        options = TranscribeOptions(
            language=parse_language(self.language),
            task=self.task.value,
            temperatures=parse_temperatures(self.temperature),
            initial_prompt=(self.initial_prompt or "").strip() or None,
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
        try:
            options.suppressed()
        except ValueError:
            raise UsageError(
                f"--suppress-tokens {self.suppress_tokens!r} is not a list of token ids",
                'give comma-separated integers, -1 for the non-speech symbols, or "" for none',
            ) from None
        return options

    def decoding(self) -> Decoding:
        """``--no-batch``: the sequential decoding; else the batched one, with ``--batch-size``."""
        from whisper_subtitler.transcription.batched import BatchedDecoding
        from whisper_subtitler.transcription.sequential import SequentialDecoding

        return SequentialDecoding() if self.no_batch else BatchedDecoding(self.batch_size)

    def speaker_options(self) -> tuple[DiarizationOptions | None, tuple[str, ...]]:
        """``(DiarizationOptions or None, speaker names)`` (``diarize.options.options_from_cli``); unless
        ``--dry-run``, the diarization pipeline is checked before any file (``check_diarization``)."""
        from whisper_subtitler.diarize.options import options_from_cli

        diarization, names = options_from_cli(
            diarize=self.diarize,
            num_speakers=self.num_speakers,
            min_speakers=self.min_speakers,
            max_speakers=self.max_speakers,
            model=self.diarization_model,
            speaker_names=self.speaker_names,
            formats=tuple(f.strip().lower() for f in self.output_format.split(",")),  # as asked: "all" is not rttm
        )
        if diarization is not None and not self.dry_run:
            diarization = check_diarization(diarization)  # a missing extra, token or model fails now
        return diarization, names

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
        if self.embed or self.burn_in:
            raise UsageError("--embed and --burn-in are not available with --executor ray yet; run them locally")
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


def check_audio_options(audio_track: int, audio_language: str | None) -> str | None:
    """``audio_language`` when valid and not combined with ``--audio-track``; raises ``UsageError`` otherwise."""
    if audio_language is None:
        return None
    from whisper_subtitler.streams import check_language_code

    if audio_track:
        raise UsageError("--audio-track and --audio-language both choose the audio stream; give one")
    return check_language_code(audio_language)


def subtitle_options(
    *,
    max_line_width: int,
    max_lines: int,
    max_cps: float,
    fps: float,
    word_level: bool,
    bom: bool,
    crlf: bool,
    speaker_style: SpeakerStyle | str = SpeakerStyle.change,
) -> tuple[CueOptions, WriterOptions]:
    """The ``(CueOptions, WriterOptions)`` of the subtitle options; raises ``UsageError`` for invalid values."""
    from whisper_subtitler.cues import CueOptions
    from whisper_subtitler.writers import WriterOptions

    style = SpeakerStyle(speaker_style).value
    cue_options = CueOptions(
        max_line_width=max_line_width, max_lines=max_lines, max_cps=max_cps, fps=fps, speaker_style=style
    )
    return cue_options, WriterOptions(bom=bom, crlf=crlf, word_level=word_level, speaker_style=style)


def parse_temperatures(value: str) -> tuple[float, ...]:
    """``--temperature``: ``"0"`` -> ``(0.0,)``, ``"0,0.2,0.4"`` -> the fallback schedule, tried in order. Raises
    ``UsageError`` for an empty list, a value that is not a number, and a negative or infinite one."""
    try:
        values = tuple(float(v) for v in value.split(",") if v.strip())
    except ValueError:
        values = ()
    if not values or not all(0.0 <= v < float("inf") for v in values):
        raise UsageError(
            f"--temperature {value!r} is not a temperature or a list of them",
            'give numbers of at least 0, e.g. 0 or "0,0.2,0.4,0.6,0.8,1"',
        )
    return values


def parse_language(value: str | None) -> str | None:
    """A language name or code (``en``, ``English``, ``german``) -> ISO code; ``None``/``auto`` -> detect."""
    if value is None or value.lower() == "auto":
        return None
    from whisper.tokenizer import LANGUAGES, TO_LANGUAGE_CODE

    v = value.lower()
    if v in LANGUAGES:
        return v
    if v in TO_LANGUAGE_CODE:
        return str(TO_LANGUAGE_CODE[v])
    raise UsageError(f"unknown language {value!r}; use an ISO 639-1 code such as en, de, ja, or a name such as German")


def output_formats(formats: tuple[str, ...], diarization: DiarizationOptions | None) -> tuple[str, ...]:
    """``formats`` (``writers.resolve_formats`` of ``--format``) without RTTM when there is no diarization: ``all``
    would write an empty RTTM file (an explicit ``rttm`` is refused earlier, ``diarize.options``)."""
    return formats if diarization is not None else tuple(f for f in formats if f != "rttm")


def check_diarization(options: DiarizationOptions) -> DiarizationOptions | None:
    """``options`` when its pipeline can be loaded (``diarize.preflight``), before any file is transcribed.

    When diarization is only on by default (``options.required`` False) and pyannote.audio or the offline models
    are missing, returns None after one warning: the run goes on without speakers. Otherwise the failure is
    raised (MissingRequirementError, exit 3).
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
