"""The command line: ``whisper-subtitler transcribe``, ``format`` and ``doctor``.

Commands stay thin: they validate options, build the frozen option objects and call the pipeline. Expected
failures (``SubtitlerError``) are caught here, once, and printed as one line on stderr; data goes to stdout only.
"""

from __future__ import annotations

import json
import logging
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.logging import RichHandler

from whisper_subtitler import __version__
from whisper_subtitler.cues.labels import SpeakerStyle
from whisper_subtitler.errors import ExitCode, SubtitlerError, UsageError
from whisper_subtitler.results import FileStatus

EXIT_CODES_HELP = (
    "Exit codes: 0 all done; 1 some files failed (each is named with its reason); 2 usage error; "
    "3 a requirement is missing (ffmpeg, a model, an optional extra, a token); "
    "4 the requested GPU backend is unavailable and --no-fallback is set; 130 interrupted."
)

app = typer.Typer(
    name="whisper-subtitler",
    help="Turn video and audio into subtitles (SRT, WebVTT, ...) with Whisper, on CUDA, ROCm, Apple MPS or the CPU.",
    epilog=EXIT_CODES_HELP,
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,  # a token must never be printed in a traceback
    add_completion=False,
)
err = Console(stderr=True)
log = logging.getLogger("whisper_subtitler")


class Task(str, Enum):
    transcribe = "transcribe"
    translate = "translate"


class GpuBackend(str, Enum):
    auto = "auto"
    cuda = "cuda"
    rocm = "rocm"
    mps = "mps"
    cpu = "cpu"


# Subtitle options shared by transcribe and format (rules: whisper_subtitler.cues, Netflix Timed Text Style Guide).
MaxLineWidth = Annotated[int, typer.Option("--max-line-width", min=8, rich_help_panel="Subtitles",
                                           help="Characters per cue line, spaces counted (a wide CJK character counts 2).")]
MaxLines = Annotated[int, typer.Option("--max-lines", min=1, rich_help_panel="Subtitles", help="Lines per cue.")]
MaxCps = Annotated[float, typer.Option("--max-cps", min=1.0, rich_help_panel="Subtitles",
                                       help="Reading speed limit in characters per second (17 adults, 13 children).")]
Fps = Annotated[float, typer.Option("--fps", min=1.0, rich_help_panel="Subtitles",
                                    help="Frame rate of the video: cues are at least 2 frames apart.")]
WordLevel = Annotated[bool, typer.Option("--word-level", rich_help_panel="Subtitles",
                                         help="Karaoke-style word highlighting in VTT (timestamp tags) and ASS (\\k).")]
Bom = Annotated[bool, typer.Option("--bom", rich_help_panel="Subtitles",
                                   help="Start text outputs with a UTF-8 BOM (some players and TVs need it).")]
Crlf = Annotated[bool, typer.Option("--crlf", rich_help_panel="Subtitles", help="End lines with CR LF instead of LF.")]


SpeakerStyleOption = Annotated[
    SpeakerStyle,
    typer.Option("--speaker-style", rich_help_panel="Speakers", case_sensitive=False,
                 help="How subtitles show speakers: change = the label on the first cue after a speaker change, "
                 "and two short lines of two speakers as one dialogue cue with dashes ('- '); dash = dialogue "
                 "dashes only, never names; label = [SPEAKER_00]: on every cue (whisperX); none = nothing. "
                 "With one speaker nothing is shown. WebVTT voices and ASS styles are kept in every style."),
]


def subtitle_options(*, max_line_width: int, max_lines: int, max_cps: float, fps: float, word_level: bool,
                     bom: bool, crlf: bool, speaker_style: SpeakerStyle | str = SpeakerStyle.change):
    """The ``(CueOptions, WriterOptions)`` of the subtitle options; raises ``UsageError`` for invalid values."""
    from whisper_subtitler.cues import CueOptions
    from whisper_subtitler.writers import WriterOptions

    style = SpeakerStyle(speaker_style).value
    cue_options = CueOptions(max_line_width=max_line_width, max_lines=max_lines, max_cps=max_cps, fps=fps,
                             speaker_style=style)
    return cue_options, WriterOptions(bom=bom, crlf=crlf, word_level=word_level, speaker_style=style)


# Options shared by the commands that write subtitle files.
OutputFormat = Annotated[str, typer.Option("--format", "-f", help="Comma-separated output formats, or all.")]
OutputDir = Annotated[
    Optional[Path],
    typer.Option("--output-dir", "-o", help="Folder for the outputs. Default: beside each input.", file_okay=False),
]
Overwrite = Annotated[bool, typer.Option(help="Replace existing output files (they are kept by default).")]
NameTemplate = Annotated[
    str, typer.Option("--name-template", help="Output file name without extension: {stem}, {name}, {ext} of the input.")
]
Verbose = Annotated[int, typer.Option("--verbose", "-v", count=True, help="More log output (-vv for debug).")]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="Only errors on stderr.")]


def _version(value: bool) -> None:
    if value:
        typer.echo(f"whisper-subtitler {__version__}")
        raise typer.Exit()


@app.callback()
def main_options(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Turn video and audio into subtitles with Whisper."""


def setup_logging(verbose: int, quiet: bool) -> None:
    """Log to stderr through Rich: warnings by default, INFO with -v, DEBUG with -vv, errors only with --quiet."""
    level = logging.ERROR if quiet else (logging.WARNING, logging.INFO, logging.DEBUG)[min(verbose, 2)]
    handler = RichHandler(console=err, show_path=False, show_time=False, markup=False, rich_tracebacks=False)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)
    log.setLevel(level)


def fail(error: SubtitlerError) -> typer.Exit:
    """Print ``error`` as one red line (and its hint) on stderr; returns the ``typer.Exit`` to raise."""
    err.print(f"[red]error:[/red] {error.message}", markup=True, highlight=False, soft_wrap=True)
    if error.hint:
        err.print(f"  hint: {error.hint}", highlight=False, soft_wrap=True)
    return typer.Exit(int(error.exit_code))


def parse_formats(value: str) -> tuple[str, ...]:
    """``"srt,vtt"`` -> ``("srt", "vtt")``; ``all`` means every format; raises ``UsageError`` for an unknown one."""
    from whisper_subtitler.writers import FORMATS

    names = [v.strip().lower() for v in value.split(",") if v.strip()]
    if "all" in names:
        return tuple(FORMATS)
    unknown = [n for n in names if n not in FORMATS]
    if unknown or not names:
        raise UsageError(f"unknown format {', '.join(unknown) or value!r}; choose from {', '.join(FORMATS)}, all")
    return tuple(dict.fromkeys(names))


def parse_language(value: str | None) -> str | None:
    """A language name or code (``en``, ``English``, ``german``) -> ISO code; ``None``/``auto`` -> detect."""
    if value is None or value.lower() == "auto":
        return None
    from whisper.tokenizer import LANGUAGES, TO_LANGUAGE_CODE

    v = value.lower()
    if v in LANGUAGES:
        return v
    if v in TO_LANGUAGE_CODE:
        return TO_LANGUAGE_CODE[v]
    raise UsageError(f"unknown language {value!r}; use an ISO 639-1 code such as en, de, ja, or a name such as German")


@app.command(epilog=EXIT_CODES_HELP)
def transcribe(
    inputs: Annotated[
        list[str],
        typer.Argument(help="Video or audio files (anything ffmpeg reads), folders with --recursive, quoted globs, "
                       "or - to read paths from stdin, one per line.", show_default=False),
    ],
    model: Annotated[
        Optional[str],
        typer.Option("--model", "-m", help="Whisper model name (tiny, base, small, medium, large-v3, turbo, *.en) "
                     "or a path to an openai-whisper .pt or a CTranslate2 (faster-whisper) folder. "
                     "Default: base, embedded, works offline."),
    ] = None,
    language: Annotated[
        Optional[str], typer.Option("--language", "-l", help="Spoken language (code or name); detected when absent.")
    ] = None,
    task: Annotated[Task, typer.Option(help="transcribe, or translate into English.")] = Task.transcribe,
    output_format: OutputFormat = "srt,vtt",
    output_dir: OutputDir = None,
    overwrite: Overwrite = False,
    name_template: NameTemplate = "{stem}",
    recursive: Annotated[bool, typer.Option("--recursive", "-r", help="Process the media files inside folders.")] = False,
    extensions: Annotated[
        Optional[str], typer.Option("--extensions", help="With --recursive: comma-separated extensions to pick "
                                    "(default: common video and audio extensions).", show_default=False)
    ] = None,
    audio_track: Annotated[int, typer.Option("--audio-track", min=0, help="Audio stream to use (0 = first).")] = 0,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="List what would be done (stdout) and exit.")] = False,
    json_summary: Annotated[
        bool, typer.Option("--json", help="Print one JSON summary of the batch on stdout (README, \"Scripting\").")
    ] = False,
    max_line_width: MaxLineWidth = 42,
    max_lines: MaxLines = 2,
    max_cps: MaxCps = 17.0,
    fps: Fps = 24.0,
    word_level: WordLevel = False,
    bom: Bom = False,
    crlf: Crlf = False,
    diarize: Annotated[Optional[bool], typer.Option(
        "--diarize/--no-diarize", rich_help_panel="Speakers", show_default=False,
        help="Label who speaks (pyannote.audio speaker diarization, offline). On by default when pyannote.audio is "
             "installed; on the CPU it adds about 70 % to a run with the base model (README, \"Speakers\"). One "
             "speaker: no "
             "labels. --no-diarize turns it off.")] = None,
    num_speakers: Annotated[Optional[int], typer.Option("--num-speakers", min=1, rich_help_panel="Speakers",
                            help="Exact number of speakers, when known.", show_default=False)] = None,
    min_speakers: Annotated[Optional[int], typer.Option("--min-speakers", min=1, rich_help_panel="Speakers",
                            help="At least this many speakers.", show_default=False)] = None,
    max_speakers: Annotated[Optional[int], typer.Option("--max-speakers", min=1, rich_help_panel="Speakers",
                            help="At most this many speakers.", show_default=False)] = None,
    diarization_model: Annotated[Optional[str], typer.Option("--diarization-model", rich_help_panel="Speakers",
                                 help="Hugging Face pipeline id (e.g. pyannote/speaker-diarization-community-1; token "
                                 "from HF_TOKEN or `hf auth login`) or a local pipeline folder or config.yaml. "
                                 "Default: the embedded offline pipeline.", show_default=False)] = None,
    speaker_names: Annotated[Optional[str], typer.Option("--speaker-names", rich_help_panel="Speakers",
                             help='Names in order of first appearance, e.g. "Alice,Bob". Any speaker option '
                             "implies --diarize.", show_default=False)] = None,
    speaker_style: SpeakerStyleOption = SpeakerStyle.change,
    gpu_backend: Annotated[
        Optional[GpuBackend],
        typer.Option("--gpu-backend", help="Compute backend. Default: $GPU_BACKEND, else auto "
                     "(cuda, rocm, mps, then cpu; legacy USE_CUDA=false forces cpu).", show_default=False),
    ] = None,
    optimization_level: Annotated[
        Optional[int],
        typer.Option("--optimization-level", min=0, max=2, help="0 safe, 1 hardware-specific (default), "
                     "2 benchmark-guided. Default: $OPTIMIZATION_LEVEL, else 1.", show_default=False),
    ] = None,
    no_fallback: Annotated[
        bool, typer.Option("--no-fallback", help="Fail (exit 4) instead of falling back to the CPU when the requested "
                           "backend is unavailable. Also $WHISPER_SUBTITLER_NO_FALLBACK=1.")
    ] = False,
    env_file: Annotated[
        Optional[Path], typer.Option("--env-file", help="Read GPU_BACKEND, USE_CUDA, OPTIMIZATION_LEVEL, ... from this "
                                     "file (real environment variables win). Default: ./.env when present.",
                                     exists=True, dir_okay=False, show_default=False)
    ] = None,
    batch_size: Annotated[
        Optional[int],
        typer.Option("--batch-size", min=1, help="Speech chunks (<= 30 s) decoded together. Default: the one "
                     "`doctor` recommends for the device and model (measured at --optimization-level 2).",
                     show_default=False),
    ] = None,
    no_batch: Annotated[
        bool, typer.Option("--no-batch", help="Decode with openai-whisper's sequential transcribe() instead of "
                           "VAD chunks in batches (slower; for comparison and odd audio).")
    ] = False,
    seed: Annotated[
        int, typer.Option("--seed", help="Seed of the temperature fallback's sampling: the same input and options "
                          "give the same files byte for byte; another seed may give other words where the fallback "
                          "samples.")
    ] = 0,
    verbose: Verbose = 0,
    quiet: Quiet = False,
) -> None:
    """Transcribe INPUTS and write subtitles for each (by default <input stem>.srt and .vtt beside it)."""
    from whisper_subtitler import platform
    from whisper_subtitler.inputs import expand_inputs, parse_extensions
    from whisper_subtitler.pipeline import Pipeline, RunOptions
    from whisper_subtitler.runner import BatchProgress, run_batch
    from whisper_subtitler.decoding.transcriber import BatchedDecoding
    from whisper_subtitler.transcribe import SequentialDecoding
    from whisper_subtitler.transcription import TranscribeOptions

    setup_logging(verbose, quiet)
    try:
        formats = parse_formats(output_format)
        cue_options, writer_options = subtitle_options(
            max_line_width=max_line_width, max_lines=max_lines, max_cps=max_cps, fps=fps, word_level=word_level,
            bom=bom, crlf=crlf, speaker_style=speaker_style,
        )
        from whisper_subtitler.diarize.options import options_from_cli

        diarization, names = options_from_cli(
            diarize=diarize, num_speakers=num_speakers, min_speakers=min_speakers, max_speakers=max_speakers,
            model=diarization_model, speaker_names=speaker_names,
            formats=tuple(f.strip().lower() for f in output_format.split(",")),  # as asked: "all" is not rttm
        )
        if diarization is not None and not dry_run:
            diarization = check_diarization(diarization)  # a missing extra, token or model fails now
        if diarization is None:  # "all" without diarization: RTTM would be an empty file
            formats = tuple(f for f in formats if f != "rttm")
        selection = platform.configure(
            gpu_backend=gpu_backend.value if gpu_backend else None,
            optimization_level=optimization_level,
            no_fallback=no_fallback,
            env_file=env_file,
            model=model,
        )
        platform.apply_optimizations(selection)
        options = RunOptions(
            model=model,
            transcribe=TranscribeOptions(
                language=parse_language(language), task=task.value, fp16=selection.dtype == "float16",
                seed=seed,
            ),
            formats=formats,
            output_dir=output_dir,
            name_template=name_template,
            overwrite=overwrite,
            audio_track=audio_track,
            cues=cue_options,
            writer=writer_options,
            decoding=SequentialDecoding() if no_batch else BatchedDecoding(batch_size),
            diarization=diarization,
            speaker_names=names,
        )
        pipeline = Pipeline(options, selection)
        sources = expand_inputs(inputs, recursive=recursive, extensions=parse_extensions(extensions), stdin=sys.stdin)
        if not sources:
            raise UsageError("no input files (a folder needs --recursive; check the extension filter)")
        if dry_run:
            print_plan(pipeline, sources, as_json=json_summary)
            return
        try:
            pipeline.load(sources)  # a bad --model ends the run here, once, before any file
            summary = run_batch(
                pipeline.process, sources, BatchProgress(err, len(sources), enabled=not quiet),
                report=lambda result: report_result(result, quiet), prefetch=pipeline.prefetch,
            )
        finally:
            pipeline.close()
    except SubtitlerError as e:
        raise fail(e) from None
    except KeyboardInterrupt:  # before the batch started (loading models): nothing was written
        err.print("interrupted", highlight=False)
        raise typer.Exit(int(ExitCode.INTERRUPTED)) from None
    if summary.interrupted:
        err.print("interrupted: no partial output was left", highlight=False)
    if json_summary:
        typer.echo(json.dumps(summary.to_json(), ensure_ascii=False, indent=2))
    raise typer.Exit(int(summary.exit_code))


def check_diarization(options):
    """``options`` when its pipeline can be loaded (``diarize.preflight``), before any file is transcribed.

    When diarization is only on by default (``options.required`` False) and pyannote.audio or the offline models
    are missing, returns None after one warning: the run goes on without speakers. Otherwise the failure is
    raised (MissingRequirementError, exit 3).
    """
    from whisper_subtitler.diarize import preflight
    from whisper_subtitler.errors import MissingRequirementError

    try:
        preflight(options)
    except MissingRequirementError as e:
        if options.required:
            raise
        logging.getLogger("whisper_subtitler").warning(
            "speaker labels are off: %s (%s; --no-diarize silences this)", e, e.hint or "see README")
        return None
    return options


def report_result(result, quiet: bool) -> None:
    """One line on stderr per file: what was written, kept, or why it failed."""
    if result.status is FileStatus.FAILED:
        err.print(f"[red]failed:[/red] {result.error}", highlight=False, soft_wrap=True)
    elif not quiet:
        for out in result.outputs:
            err.print(f"wrote {out}", highlight=False, soft_wrap=True)
        for out in result.skipped_outputs:
            err.print(f"kept existing {out} (use --overwrite to replace it)", highlight=False, soft_wrap=True)


def print_plan(pipeline, sources: list[Path], as_json: bool) -> None:
    """``--dry-run``: each input with each output and whether it would be written, kept or replaced (stdout)."""
    plan = []
    for source in sources:
        outputs = []
        for target in pipeline.outputs_for(source):
            action = "write" if not target.exists() else ("overwrite" if pipeline.options.overwrite else "keep")
            outputs.append({"path": str(target), "action": action})
        plan.append({"input": str(source), "outputs": outputs})
    if as_json:
        typer.echo(json.dumps({"dry_run": True, "files": plan}, ensure_ascii=False, indent=2))
        return
    for item in plan:
        typer.echo(item["input"])
        for out in item["outputs"]:
            typer.echo(f"  {out['action']:9} {out['path']}")


@app.command(epilog=EXIT_CODES_HELP)
def doctor(
    json_output: Annotated[bool, typer.Option("--json", help="Print the report as JSON on stdout "
                                              "(schema: whisper_subtitler/doctor_schema.json).")] = False,
    gpu_backend: Annotated[
        Optional[GpuBackend], typer.Option("--gpu-backend", help="Show the choice for this backend request.",
                                           show_default=False),
    ] = None,
    env_file: Annotated[
        Optional[Path], typer.Option("--env-file", help="Read settings from this file, as transcribe would.",
                                     exists=True, dir_okay=False, show_default=False)
    ] = None,
    verbose: Verbose = 0,
) -> None:
    """Report the backends, the device and settings transcribe would use, ffmpeg, models and tokens."""
    from whisper_subtitler.doctor import build_report, render_report

    setup_logging(verbose, quiet=json_output and not verbose)
    report = build_report(gpu_backend=gpu_backend.value if gpu_backend else None, env_file=env_file)
    if json_output:
        import json

        typer.echo(json.dumps(report, indent=2))
    else:
        render_report(report, Console())
    if report["exit_code"]:
        raise typer.Exit(report["exit_code"])


@app.command("format", epilog=EXIT_CODES_HELP)
def format_transcripts(
    transcripts: Annotated[
        list[Path], typer.Argument(help="Transcript JSON files (from --format json, openai-whisper or whisperX).",
                                   exists=True, dir_okay=False, show_default=False)
    ],
    output_format: OutputFormat = "srt,vtt",
    output_dir: OutputDir = None,
    overwrite: Overwrite = False,
    name_template: NameTemplate = "{stem}",
    max_line_width: MaxLineWidth = 42,
    max_lines: MaxLines = 2,
    max_cps: MaxCps = 17.0,
    fps: Fps = 24.0,
    word_level: WordLevel = False,
    bom: Bom = False,
    crlf: Crlf = False,
    speaker_style: SpeakerStyleOption = SpeakerStyle.change,
    verbose: Verbose = 0,
    quiet: Quiet = False,
) -> None:
    """Re-render saved TRANSCRIPTS with other subtitle rules or formats, without running any model."""
    from whisper_subtitler.reformat import reformat

    setup_logging(verbose, quiet)
    failed = 0
    try:
        formats = parse_formats(output_format)
        cue_options, writer_options = subtitle_options(
            max_line_width=max_line_width, max_lines=max_lines, max_cps=max_cps, fps=fps, word_level=word_level,
            bom=bom, crlf=crlf, speaker_style=speaker_style,
        )
        for source in transcripts:
            try:
                result = reformat(source, formats=formats, cue_options=cue_options, writer_options=writer_options,
                                  output_dir=output_dir, overwrite=overwrite, name_template=name_template)
            except UsageError:
                raise
            except SubtitlerError as e:
                failed += 1
                err.print(f"[red]failed:[/red] {e}", highlight=False, soft_wrap=True)
                continue
            if not quiet:
                for out in result.outputs:
                    err.print(f"wrote {out}", highlight=False, soft_wrap=True)
                for out in result.kept:
                    err.print(f"kept existing {out} (use --overwrite to replace it)", highlight=False, soft_wrap=True)
    except SubtitlerError as e:
        raise fail(e) from None
    if failed:
        raise typer.Exit(int(ExitCode.FAILED))


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    sys.exit(main())
