"""The command line: ``whisper-subtitler transcribe``, ``format`` and ``doctor``.

Commands stay thin: they validate options, build the frozen option objects and call the pipeline. Expected
failures (``SubtitlerError``) are caught here, once, and printed as one line on stderr; data goes to stdout only.
"""

from __future__ import annotations

import logging
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.logging import RichHandler

from whisper_subtitler import __version__
from whisper_subtitler.errors import ExitCode, SubtitlerError, UsageError

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
    inputs: Annotated[list[Path], typer.Argument(help="Video or audio files (anything ffmpeg reads).", show_default=False)],
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
    output_format: Annotated[
        str, typer.Option("--format", "-f", help="Comma-separated output formats, or all.")
    ] = "srt,vtt",
    output_dir: Annotated[
        Optional[Path], typer.Option("--output-dir", "-o", help="Folder for the outputs. Default: beside each input.",
                                     file_okay=False)
    ] = None,
    overwrite: Annotated[bool, typer.Option(help="Replace existing output files (they are kept by default).")] = False,
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
    verbose: Annotated[int, typer.Option("--verbose", "-v", count=True, help="More log output (-vv for debug).")] = 0,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Only errors on stderr.")] = False,
) -> None:
    """Transcribe INPUTS and write subtitles for each (by default <input stem>.srt and .vtt beside it)."""
    from whisper_subtitler import platform
    from whisper_subtitler.pipeline import Pipeline, RunOptions
    from whisper_subtitler.transcribe import TranscribeOptions

    setup_logging(verbose, quiet)
    try:
        formats = parse_formats(output_format)
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
                language=parse_language(language), task=task.value, fp16=selection.dtype == "float16"
            ),
            formats=formats,
            output_dir=output_dir,
            overwrite=overwrite,
        )
        pipeline = Pipeline(options, selection)
        failed = 0
        for source in inputs:
            result = pipeline.process(source)
            if result.status == "failed":
                failed += 1
                err.print(f"[red]failed:[/red] {result.error}", highlight=False, soft_wrap=True)
            elif not quiet:
                for out in result.outputs:
                    err.print(f"wrote {out}", highlight=False, soft_wrap=True)
                for out in result.skipped_outputs:
                    err.print(f"kept existing {out} (use --overwrite to replace it)", highlight=False, soft_wrap=True)
    except SubtitlerError as e:
        raise fail(e) from None
    except KeyboardInterrupt:
        err.print("interrupted", highlight=False)
        raise typer.Exit(int(ExitCode.INTERRUPTED)) from None
    if failed:
        raise typer.Exit(int(ExitCode.FAILED))


@app.command(epilog=EXIT_CODES_HELP)
def doctor(
    json_output: Annotated[bool, typer.Option("--json", help="Print the report as JSON on stdout "
                                              "(schema: docs/doctor-schema.json).")] = False,
    gpu_backend: Annotated[
        Optional[GpuBackend], typer.Option("--gpu-backend", help="Show the choice for this backend request.",
                                           show_default=False),
    ] = None,
    env_file: Annotated[
        Optional[Path], typer.Option("--env-file", help="Read settings from this file, as transcribe would.",
                                     exists=True, dir_okay=False, show_default=False)
    ] = None,
    verbose: Annotated[int, typer.Option("--verbose", "-v", count=True, help="More log output (-vv for debug).")] = 0,
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


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    sys.exit(main())
