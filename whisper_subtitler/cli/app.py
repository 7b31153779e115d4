"""The command line: ``whisper-subtitler transcribe``, ``align`` (``cli.align``), ``format`` and ``doctor``.

Commands stay thin: their options are declared in ``cli.options``; ``cli.args`` turns them into the option objects
and the ``Subtitler`` of the Python API (``whisper_subtitler.api``), whose pipeline runs the batch
(``runner.run_batch``). Expected failures (``SubtitlerError``) are caught here, once, and printed as one line on
stderr (``cli.console``); data goes to stdout only.
"""

from __future__ import annotations

import json
import signal
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer
from rich.console import Console

from whisper_subtitler.cli import library as lib
from whisper_subtitler.cli import options as o
from whisper_subtitler.cli.align import align
from whisper_subtitler.cli.args import FormatArgs, TranscribeArgs
from whisper_subtitler.cli.check import CHECK_EXIT_CODES, check
from whisper_subtitler.cli.console import err, fail, setup_logging
from whisper_subtitler.cli.precheck import unreadable_batch
from whisper_subtitler.cli.serve import serve
from whisper_subtitler.cli.voices import voices_app
from whisper_subtitler.cues.labels import SpeakerStyle
from whisper_subtitler.errors import SubtitlerError
from whisper_subtitler.interrupts import ending_on_signals, exit_code, signal_number
from whisper_subtitler.options import subtitle_options
from whisper_subtitler.platform.machine import BackendName
from whisper_subtitler.results import FileResult, FileStatus
from whisper_subtitler.version import __version__
from whisper_subtitler.writers import resolve_formats

if TYPE_CHECKING:
    from whisper_subtitler.executors.ray_executor import RayExecutor
    from whisper_subtitler.runner import BatchSummary

__all__ = ["app", "main", "subtitle_options"]

EXIT_CODES_HELP = (
    "Exit codes: 0 all done; 1 some files failed (each is named with its reason); 2 usage error; "
    "3 a requirement is missing (ffmpeg, a model, an optional extra, a token, libass for --burn-in); "
    "4 the requested GPU backend is unavailable and --no-fallback is set; 130 interrupted (Ctrl-C); "
    "143 terminated (SIGTERM); 129 hung up (SIGHUP)."
)

app = typer.Typer(
    name="whisper-subtitler",
    help="Turn video and audio into subtitles (SRT, WebVTT, ...) with Whisper, on CUDA, ROCm, Apple MPS or the CPU.",
    epilog=EXIT_CODES_HELP,
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,  # a token must never be printed in a traceback
)


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


@app.command(epilog=EXIT_CODES_HELP)
def transcribe(
    ctx: typer.Context,
    inputs: o.Inputs,
    model: o.Model = None,
    language: o.Language = None,
    task: o.TaskOption = o.Task.TRANSCRIBE,
    output_format: o.OutputFormat = "srt,vtt",
    output_dir: o.OutputDir = None,
    overwrite: o.Overwrite = False,
    name_template: o.NameTemplate = "{stem}",
    recursive: o.Recursive = False,
    extensions: o.Extensions = None,
    audio_track: o.AudioTrack = 0,
    audio_language: o.AudioLanguage = None,
    channels: o.Channels = "auto",
    embed: o.Embed = False,
    burn_in: o.BurnIn = False,
    forced: o.Forced = False,
    dry_run: o.DryRun = False,
    json_summary: o.JsonSummary = False,
    skip_existing: lib.SkipExisting = None,
    resume: lib.Resume = False,
    state_dir: lib.StateDir = None,
    max_line_width: o.MaxLineWidth = 42,
    max_lines: o.MaxLines = 2,
    max_cps: o.MaxCps = 17.0,
    fps: o.Fps = 24.0,
    word_level: o.WordLevel = False,
    bom: o.Bom = False,
    crlf: o.Crlf = False,
    shot_changes: o.ShotChanges = "auto",
    diarize: o.Diarize = None,
    num_speakers: o.NumSpeakers = None,
    min_speakers: o.MinSpeakers = None,
    max_speakers: o.MaxSpeakers = None,
    diarization_model: o.DiarizationModel = None,
    speaker_names: o.SpeakerNames = None,
    voices: o.Voices = False,
    voices_dir: o.VoicesDir = None,
    speaker_style: o.SpeakerStyleOption = SpeakerStyle.change,
    gpu_backend: o.GpuBackend = None,
    optimization_level: o.OptimizationLevel = None,
    no_fallback: o.NoFallback = False,
    env_file: o.EnvFile = None,
    batch_size: o.BatchSize = None,
    no_batch: o.NoBatch = False,
    seed: o.Seed = 0,
    initial_prompt: o.InitialPrompt = None,
    beam_size: o.BeamSize = None,
    best_of: o.BestOf = None,
    patience: o.Patience = None,
    temperature: o.Temperature = o.DEFAULT_TEMPERATURES,
    compression_ratio_threshold: o.CompressionRatioThreshold = 2.4,
    logprob_threshold: o.LogprobThreshold = -1.0,
    no_speech_threshold: o.NoSpeechThreshold = 0.6,
    suppress_tokens: o.SuppressTokens = "-1",
    condition_on_previous_text: o.ConditionOnPreviousText = False,
    compute_type: o.ComputeTypeOption = o.ComputeType.AUTO,
    threads: o.Threads = None,
    progress: o.Progress = o.ProgressMode.AUTO,
    executor: o.ExecutorOption = o.ExecutorName.LOCAL,
    ray_address: o.RayAddress = None,
    devices: o.Devices = None,
    cpus_per_worker: o.CpusPerWorker = None,
    shard: o.Shard = None,
    verbose: o.Verbose = 0,
    quiet: o.Quiet = False,
) -> None:
    """Transcribe INPUTS and write subtitles for each (by default <input stem>.srt and .vtt beside it)."""
    args = TranscribeArgs(**ctx.params)
    setup_logging(verbose, quiet)
    with ending_on_signals():  # SIGTERM and SIGHUP end the batch as Ctrl-C does (exit 143, 129)
        try:
            done = transcribe_run(args, dry_run, json_summary, quiet)
        except KeyboardInterrupt as stop:  # a signal between the batch's end and here: nothing is half-written
            done = typer.Exit(exit_code(stop))
    raise done


def transcribe_run(args: TranscribeArgs, dry_run: bool, json_summary: bool, quiet: bool) -> typer.Exit:
    """The ``transcribe`` command once its options are read; returns the ``typer.Exit`` to raise."""
    try:
        sources = args.sources()
        args.check_outputs(sources)  # two inputs, one output file: a usage error before anything is set up
        if (unreadable := unreadable_batch(args, sources)) is not None:  # every input fails: no device, no model
            return finish(run_pipeline(unreadable, sources, quiet, args.progress), json_summary)
        pipeline = args.subtitler().pipeline
        lib.apply_library_options(args, pipeline)  # --skip-existing, --resume
        spread = args.ray_executor(pipeline)
        if dry_run:
            print_plan(pipeline, sources, as_json=json_summary)
            return typer.Exit(0)
        summary = run_pipeline(pipeline, sources, quiet, args.progress, spread)
    except SubtitlerError as e:
        return fail(e)
    except KeyboardInterrupt as stop:  # before the batch started (loading models): nothing was written
        err.print(f"interrupted ({signal_name(stop)})", highlight=False)
        return typer.Exit(exit_code(stop))
    return finish(summary, json_summary)


def signal_name(interrupt: KeyboardInterrupt) -> str:
    """``SIGINT``, ``SIGTERM`` or ``SIGHUP``: the signal behind ``interrupt``."""
    return signal.Signals(signal_number(interrupt)).name


def run_pipeline(
    pipeline: Any,
    sources: list[Path],
    quiet: bool,
    progress: o.ProgressMode = o.ProgressMode.AUTO,
    executor: RayExecutor | None = None,
) -> BatchSummary:
    """Load the models (a bad ``--model`` ends the run here, before any file), then run the batch with progress
    (``--progress``) and one report line per file on stderr. With an ``executor`` (``--executor ray``), its workers
    load the models and process the files."""
    from whisper_subtitler.progress import JsonProgress, ProgressDisplay
    from whisper_subtitler.runner import BatchProgress, run_batch

    display: ProgressDisplay = (
        JsonProgress(len(sources))
        if progress is o.ProgressMode.JSON
        else BatchProgress(err, len(sources), enabled=not quiet and progress is o.ProgressMode.AUTO)
    )
    try:
        if executor is None and sources:
            pipeline.load(sources)
        return run_batch(
            pipeline.process,
            sources,
            display,
            report=lambda result: report_result(result, quiet),
            prefetch=pipeline.prefetch,
            executor=executor,
        )
    finally:
        pipeline.close()
        if executor is not None:
            executor.close()


def finish(summary: BatchSummary, json_summary: bool) -> typer.Exit:
    """Say that the batch was interrupted, print the ``--json`` summary; returns the ``typer.Exit`` to raise."""
    if summary.interrupted:
        err.print(f"interrupted ({signal.Signals(summary.signum).name}): no partial output was left", highlight=False)
    if json_summary:
        typer.echo(json.dumps(summary.to_json(), ensure_ascii=False, indent=2))
    return typer.Exit(int(summary.exit_code))


def report_result(result: FileResult, quiet: bool) -> None:
    """One line on stderr per output and per failed file: what was written, kept, or why it failed; and one for
    speech that got no words (``quality.coverage``), here in the driver so that Ray's workers report it too."""
    if result.status is FileStatus.FAILED:
        err.print(f"[red]failed:[/red] {result.error}", highlight=False, soft_wrap=True)
    elif not quiet:
        if result.unheard_speech:
            from whisper_subtitler.quality.coverage import describe

            line = f"{result.source}: {describe(result.unheard_speech)} (no words there; a larger --model may hear it)"
            err.print(f"[yellow]warning:[/yellow] {line}", highlight=False, soft_wrap=True)
        if result.forced_cues == 0:
            line = f"{result.source}: no forced subtitles written: every cue is in {result.language or 'one language'}"
            err.print(line, highlight=False, soft_wrap=True)
        for out in result.outputs:
            err.print(f"wrote {out}", highlight=False, soft_wrap=True)
        if result.skip_reason:
            err.print(f"skipped {result.source}: {result.skip_reason}", highlight=False, soft_wrap=True)
            return
        for out in result.skipped_outputs:
            err.print(f"kept existing {out} (use --overwrite to replace it)", highlight=False, soft_wrap=True)


def print_plan(pipeline: Any, sources: list[Path], as_json: bool) -> None:
    """``--dry-run``: each input with the audio channel it would be transcribed from (``channel_plan``) and each
    output and whether it would be written, kept or replaced (stdout)."""
    plan: list[dict[str, Any]] = []
    for source in sources:
        outputs = []
        for target in pipeline.outputs_for(source):
            action = "write" if not target.exists() else ("overwrite" if pipeline.options.overwrite else "keep")
            outputs.append({"path": str(target), "action": action})
        plan.append({"input": str(source), "audio_channel": channel_plan(pipeline.options, source), "outputs": outputs})
    if as_json:
        typer.echo(json.dumps({"dry_run": True, "files": plan}, ensure_ascii=False, indent=2))
        return
    for item in plan:
        typer.echo(item["input"])
        channel = item["audio_channel"]
        if "error" in channel:
            typer.echo(f"  {'channel':9} none: {channel['error']}")
        else:
            typer.echo(f"  {'channel':9} {channel['used']} ({channel['reason']}; decided {channel['decided']})")
        for out in item["outputs"]:
            typer.echo(f"  {out['action']:9} {out['path']}")


def channel_plan(options: Any, source: Path) -> dict[str, str]:
    """``--dry-run``'s channel of ``source`` (``pieces.planned_channel``, ffprobe only): ``{"used", "reason",
    "decided"}``, ``decided`` being ``by the layout`` or, for ``auto``'s centre, ``when the file is read`` (the
    speech check); ``{"error"}`` with the line the run would fail the file with."""
    from whisper_subtitler.pieces import planned_channel

    try:
        use, decided = planned_channel(source, options.audio_track, options.audio_language, options.channels)
    except SubtitlerError as e:
        return {"error": str(e)}
    return {
        "used": use.used,
        "reason": use.reason if decided else f"{use.reason}, unless it carries little speech",
        "decided": "by the layout" if decided else "when the file is read",
    }


# doctor's options (Typer reads these annotations at run time: Optional[...] for every supported Typer version)
DoctorJson = Annotated[
    bool,
    typer.Option("--json", help="Print the report as JSON on stdout (schema: whisper_subtitler/doctor_schema.json)."),
]
DoctorGpuBackend = Annotated[
    Optional[BackendName],  # noqa: UP045
    typer.Option("--gpu-backend", help="Show the choice for this backend request.", show_default=False),
]
DoctorEnvFile = Annotated[
    Optional[Path],  # noqa: UP045
    typer.Option(
        "--env-file",
        help="Read settings from this file, as transcribe would.",
        exists=True,
        dir_okay=False,
        show_default=False,
    ),
]


@app.command(epilog=EXIT_CODES_HELP)
def doctor(
    json_output: DoctorJson = False,
    gpu_backend: DoctorGpuBackend = None,
    env_file: DoctorEnvFile = None,
    verbose: o.Verbose = 0,
) -> None:
    """Report the backends, the device and settings transcribe would use, ffmpeg, models and tokens."""
    from whisper_subtitler.doctor import build_report, render_report

    setup_logging(verbose, quiet=json_output and not verbose)
    report = build_report(gpu_backend=gpu_backend, env_file=env_file)
    if json_output:
        typer.echo(json.dumps(report, indent=2))
    else:
        render_report(report, Console())
    if report["exit_code"]:
        raise typer.Exit(report["exit_code"])


@app.command("format", epilog=EXIT_CODES_HELP)
def format_transcripts(
    ctx: typer.Context,
    transcripts: o.Transcripts,
    output_format: o.OutputFormat = "srt,vtt",
    output_dir: o.OutputDir = None,
    overwrite: o.Overwrite = False,
    name_template: o.NameTemplate = "{stem}",
    max_line_width: o.MaxLineWidth = 42,
    max_lines: o.MaxLines = 2,
    max_cps: o.MaxCps = 17.0,
    fps: o.Fps = 24.0,
    shot_changes: o.FormatShotChanges = "auto",
    word_level: o.WordLevel = False,
    bom: o.Bom = False,
    crlf: o.Crlf = False,
    speaker_style: o.SpeakerStyleOption = SpeakerStyle.change,
    verbose: o.Verbose = 0,
    quiet: o.Quiet = False,
) -> None:
    """Re-render saved TRANSCRIPTS with other subtitle rules or formats, without running any model."""
    from whisper_subtitler.reformat import reformat
    from whisper_subtitler.runner import BatchProgress, run_batch

    args = FormatArgs(**ctx.params)
    setup_logging(verbose, quiet)
    try:
        formats = resolve_formats(output_format)
        args.check_outputs(transcripts)
        cues, writer = args.subtitles()
        cues = replace(cues, shot_changes=shot_changes)  # a file is read (and checked) here
        summary = run_batch(
            lambda source, on_stage: reformat(
                source,
                formats=formats,
                cue_options=cues,
                writer_options=writer,
                output_dir=output_dir,
                overwrite=overwrite,
                name_template=name_template,
            ),
            transcripts,
            BatchProgress(err, len(transcripts), enabled=False),
            report=lambda result: report_result(result, quiet),
        )
    except SubtitlerError as e:
        raise fail(e) from None
    raise finish(summary, json_summary=False)


app.command("align", epilog=EXIT_CODES_HELP)(align)
app.command("check", epilog=CHECK_EXIT_CODES)(check)
app.command("serve", epilog=EXIT_CODES_HELP)(serve)
app.add_typer(voices_app)
app.command("watch", epilog=EXIT_CODES_HELP)(lib.make_watch(transcribe, report_result, finish))
app.add_typer(lib.queue_app)


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
