"""The command line's options, declared once as Typer ``Annotated`` types.

A command lists its options as ``name: Type = default``; a new option is one alias here, one parameter of the command
and one field of its record in ``cli.args``, which turns the values into the option objects of
``whisper_subtitler.options`` (checked there: ``UsageError``, exit 2, before any model is loaded). The decoding
options (openai-whisper's ``--beam-size``, ``--temperature`` ...) are declared in ``cli.decoding_options`` and
re-exported here, so that every option is found in this module.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from whisper_subtitler.cli.decoding_options import (  # noqa: F401 - re-exported: the decoding options' home
    DEFAULT_TEMPERATURES,
    BeamSize,
    BestOf,
    CompressionRatioThreshold,
    ConditionOnPreviousText,
    InitialPrompt,
    LogprobThreshold,
    NoSpeechThreshold,
    Patience,
    SuppressTokens,
    Temperature,
)
from whisper_subtitler.cues.labels import SpeakerStyle
from whisper_subtitler.options import ComputeType, Task
from whisper_subtitler.platform.machine import BackendName
from whisper_subtitler.types import StrEnum

# Typer reads these annotations at run time: Optional[...] keeps them readable by every supported Typer version.
# ruff: noqa: UP045


class ExecutorName(StrEnum):
    """``--executor``: where a batch's files run."""

    LOCAL = "local"
    RAY = "ray"


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
Channels = Annotated[
    str,
    typer.Option(
        "--channels",
        help="Which channel of a multichannel audio stream: auto (the front centre of a surround mix, where films "
        "keep the dialogue, unless it carries no speech; of a stereo track whose channels differ, their phantom "
        "centre, what L and R have in common, unless it holds too little of the speech; mono and other stereo "
        "are downmixed), downmix, center, left, right, phantom (the phantom centre of a stereo track), or a "
        "channel number N (0 = first). A channel the stream lacks fails that file (exit code 2).",
        metavar="auto|downmix|center|left|right|phantom|N",
    ),
]
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
Forced = Annotated[
    bool,
    typer.Option(
        "--forced",
        help="Also write <name>.<lang>.forced.<ext> beside each subtitle file, holding only the lines spoken in "
        "another language than the file's main one <lang> (forced narratives, named as Jellyfin, Plex and Kodi read "
        "them); none when there are none (said on stderr and as forced_cues 0 in --json).",
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
        "folder; {lang} and {lang3}, the subtitles' language (en, eng: '{stem}.{lang}' gives Movie.en.srt, as media "
        "servers read it). Two inputs that would get the same output name are a usage error (exit 2), found before "
        "any work.",
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
    Optional[str],
    typer.Option(
        "--language",
        "-l",
        help="Spoken language (code or name), forced for the whole file; a comma list (en,es) lets each speech "
        "region take one of those; detected per speech region when absent.",
    ),
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

# Decoding (openai-whisper's names and meanings): cli.decoding_options, imported above

ComputeTypeOption = Annotated[
    ComputeType,
    typer.Option(
        "--compute-type",
        case_sensitive=False,
        help="auto (float32 with TF32 for tiny and base on NVIDIA GPUs of compute capability 8.0+, float16 on other "
        "GPUs and models, float32 on the CPU), float32, float16 (GPU), bfloat16 (CUDA 8.0+, "
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
        help="Characters per cue line, spaces counted (a wide CJK character counts 2). Default 42; at the default, "
        "Japanese gets 26 (13 full-width characters), Chinese and Korean 32 (Netflix's guides).",
    ),
]
MaxLines = Annotated[int, typer.Option("--max-lines", min=1, rich_help_panel="Subtitles", help="Lines per cue.")]
MaxCps = Annotated[
    float,
    typer.Option(
        "--max-cps",
        min=1.0,
        rich_help_panel="Subtitles",
        help="Reading speed limit in characters per second (17 adults, 13 children). At the default 17, Japanese "
        "gets 4 and Chinese 9 (Netflix's guides).",
    ),
]
Fps = Annotated[
    float,
    typer.Option(
        "--fps", min=1.0, rich_help_panel="Subtitles", help="Frame rate of the video: cues are at least 2 frames apart."
    ),
]
ShotChanges = Annotated[
    str,
    typer.Option(
        "--shot-changes",
        rich_help_panel="Subtitles",
        help="Time the cues by the shot changes (Netflix's timing to the shot change): auto (a video input's own, "
        "found by ffmpeg, at the video's frame rate), off, or a file of times, one per line in seconds (as Subtitle "
        "Edit saves them).",
    ),
]
FormatShotChanges = Annotated[
    str,
    typer.Option(
        "--shot-changes",
        rich_help_panel="Subtitles",
        help="Time the cues by shot changes: auto (the ones the transcript keeps, found in its video by transcribe, "
        "at the video's frame rate), off, or a file of times, one per line in seconds (as Subtitle Edit saves them).",
    ),
]
WordLevel = Annotated[
    bool,
    typer.Option(
        "--word-level",
        rich_help_panel="Subtitles",
        help="Karaoke-style word highlighting in VTT (timestamp tags), ASS (\\k) and LRC (enhanced <mm:ss.xx> tags).",
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
Voices = Annotated[
    bool,
    typer.Option(
        "--voices",
        rich_help_panel="Speakers",
        help="Name speakers from the voice library (whisper-subtitler voices add NAME CLIP): a speaker whose voice "
        "clearly matches an enrolled one gets its name; voices heard before in the batch but not enrolled get "
        "SPEAKER_A, SPEAKER_B... alike in every file. Implies --diarize; --speaker-names wins over it.",
    ),
]
VoicesDir = Annotated[
    Optional[Path],
    typer.Option(
        "--voices-dir",
        rich_help_panel="Speakers",
        show_default=False,
        file_okay=False,
        help="The voice library's folder (default: $XDG_DATA_HOME/whisper-subtitler/voices). Implies --voices.",
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
