"""The ``check`` command: ``whisper-subtitler check FILE...``, a quality report of subtitle files.

Registered on the application in ``cli.app``. The report (text, or ``--json``) is the command's data and goes to
stdout; an unreadable file is one line on stderr and the other files are still checked. Rules: ``docs/check.md``.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from whisper_subtitler.cli.console import err, fail, setup_logging
from whisper_subtitler.cli.options import Fps, MaxCps, MaxLines, MaxLineWidth, Verbose
from whisper_subtitler.errors import ExitCode, InputError, SubtitlerError
from whisper_subtitler.quality.read import EXTENSIONS

if TYPE_CHECKING:
    from whisper_subtitler.cues.options import CueOptions

CHECK_EXIT_CODES = (
    "Exit codes: 0 no file has an error or a warning (info faults, which nothing could avoid, do not count); "
    "1 a file has one (missing_words with --transcript included); 2 a file could not be read, or a usage error; "
    "3 --against needs subtitle-edit-rate."
)


def check(
    files: Annotated[
        list[str],
        typer.Argument(
            help="Subtitle files (.srt, .vtt, .ass), folders (searched for them at any depth) or quoted globs.",
            show_default=False,
        ),
    ],
    json_output: Annotated[
        bool, typer.Option("--json", help="Print the reports as JSON on stdout (docs/check.md).")
    ] = False,
    against: Annotated[
        Path | None,
        typer.Option(
            "--against",
            help="A reference subtitle file (.srt, .vtt, .ass): add the SubER score and the timing offsets.",
            show_default=False,
        ),
    ] = None,
    transcript_path: Annotated[
        Path | None,
        typer.Option(
            "--transcript",
            help="The JSON transcript the files were made from (--format json): report its words that no cue "
            "shows and no hallucination guard removed (its 'removed' record) as missing_words errors; without --video "
            "or --shot-changes, the shot changes it keeps are checked too.",
            show_default=False,
        ),
    ] = None,
    language: Annotated[
        str | None,
        typer.Option(
            "--language",
            "-l",
            help="Language of the subtitles (ISO 639-1): the line-break word rules are English ones and apply to "
            "en or an unknown language; ja, zh, ... are checked as written without spaces. "
            "Default: the file's (WebVTT Language header), else unknown.",
            show_default=False,
        ),
    ] = None,
    video: Annotated[
        Path | None,
        typer.Option(
            "--video",
            help="The video the files go with: also report cues that cross or flash across its shot changes (found "
            "by ffmpeg), or start or end near one without being on it (docs/shot-changes.md); its frame rate "
            "replaces --fps.",
            show_default=False,
        ),
    ] = None,
    shot_changes: Annotated[
        Path | None,
        typer.Option(
            "--shot-changes",
            help="A file of shot-change times, one per line in seconds (as Subtitle Edit saves them), to check the "
            "files against as --video does (with --video, these times at the video's frame rate).",
            show_default=False,
        ),
    ] = None,
    max_line_width: MaxLineWidth = 42,
    max_lines: MaxLines = 2,
    max_cps: MaxCps = 17.0,
    fps: Fps = 24.0,
    verbose: Verbose = 0,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the files that fail.")] = False,
) -> None:
    """Report the faults of subtitle FILES against the readability rules transcribe follows."""
    from whisper_subtitler.cues.shots import saved_shot_changes, used_shot_changes
    from whisper_subtitler.inputs import expand_inputs
    from whisper_subtitler.options import CueOptions
    from whisper_subtitler.quality import read_subtitles, report_of
    from whisper_subtitler.quality.against import compare
    from whisper_subtitler.quality.shots import shot_faults
    from whisper_subtitler.quality.transcript import missing_words
    from whisper_subtitler.writers.json import read_transcript

    setup_logging(verbose, quiet=False)
    try:
        options = CueOptions(max_line_width=max_line_width, max_lines=max_lines, max_cps=max_cps, fps=fps)
        reference = read_subtitles(against).cues if against is not None else None
        transcript = read_transcript(transcript_path) if transcript_path is not None else None
        shots, options = _shot_changes(video, shot_changes, options)
        if shots is None and transcript is not None:  # the shot changes its cues were timed by, if it keeps any
            options = saved_shot_changes(transcript, options)
            shots = used_shot_changes(options) or None
    except InputError as e:  # an unreadable reference: unreadable input, exit 2
        fail(e)
        raise typer.Exit(int(ExitCode.USAGE)) from None
    except SubtitlerError as e:
        raise fail(e) from None
    sources = expand_inputs(files, recursive=True, extensions=EXTENSIONS, stdin=sys.stdin)
    reports: list[dict[str, Any]] = []
    errors: list[dict[str, str]] = []
    failed = False
    for source in sources:
        try:
            sub = read_subtitles(source)
            report = report_of(
                str(source), sub.format, sub.cues, options, language=language or sub.language, resolution=sub.resolution
            )
            if reference is not None:
                report = replace(report, against=compare(sub.cues, reference))
            if transcript is not None:
                faults = sorted((*report.faults, *missing_words(sub.cues, transcript)), key=lambda f: f.index)
                report = replace(report, faults=tuple(faults))
            if shots is not None:
                faults = sorted((*report.faults, *shot_faults(sub.cues, shots, options)), key=lambda f: f.index)
                report = replace(report, faults=tuple(faults))
        except InputError as e:
            err.print(f"[red]error:[/red] {e.message}", markup=True, highlight=False, soft_wrap=True)
            errors.append({"path": str(source), "error": e.message})
            continue
        except SubtitlerError as e:
            raise fail(e) from None
        failed = failed or report.failed
        if json_output:
            reports.append(report.as_dict())
        elif report.failed or not quiet:
            _print(report.as_dict())
    if json_output:
        typer.echo(json.dumps({"files": reports, "unreadable": errors}, ensure_ascii=False, indent=2))
    if not sources:
        err.print("[red]error:[/red] no subtitle file given", markup=True, highlight=False)
    code = ExitCode.USAGE if errors or not sources else (ExitCode.FAILED if failed else ExitCode.OK)
    raise typer.Exit(int(code))


def _shot_changes(
    video: Path | None, shot_file: Path | None, options: CueOptions
) -> tuple[tuple[float, ...] | None, CueOptions]:
    """The shot changes to check against (``None``: neither ``--video`` nor ``--shot-changes``) and ``options`` at the
    video's frame rate. Raises ``InputError`` for a video ffprobe or ffmpeg cannot read or without a video stream,
    ``UsageError`` for a malformed shot-change file."""
    if video is None and shot_file is None:
        return None, options
    from whisper_subtitler.cues.shot_list import read_shot_changes
    from whisper_subtitler.video.shots import detect_shot_changes, video_info

    fps = options.fps
    if video is not None:
        info = video_info(video)
        if info is None:
            raise InputError(f"{video}: no video stream to find the shot changes in")
        fps = info.fps or fps
        shots = read_shot_changes(shot_file) if shot_file is not None else detect_shot_changes(video, info)
    else:
        assert shot_file is not None
        shots = read_shot_changes(shot_file)
    return shots, replace(options, fps=fps)


def _clock(seconds: float) -> str:
    ms = round(seconds * 1000)
    return f"{ms // 3_600_000:02d}:{ms // 60_000 % 60:02d}:{ms // 1000 % 60:02d}.{ms % 1000:03d}"


def _print(report: dict[str, Any]) -> None:
    """The text report of one file on stdout: a line per fault, then the summary."""
    for fault in report["faults"]:
        typer.echo(
            f"{report['path']}:{fault['index']} {_clock(fault['start'])} {fault['severity']:7} "
            f"{fault['kind']}: {fault['message']}"
        )
    kinds = ", ".join(f"{kind} {n}" for kind, n in report["faults_by_kind"].items()) or "none"
    sev = report["faults_by_severity"]
    typer.echo(
        f"{report['path']}: {report['cues']} cues; {sev['error']} errors, {sev['warning']} warnings, "
        f"{sev['info']} unavoidable; faults: {kinds}; CPS mean {report['mean_cps']:g}, max {report['max_cps']:g}; "
        f"CPL mean {report['mean_cpl']:g}, max {report['max_cpl']}"
    )
    if (against := report.get("against")) is not None:
        typer.echo(
            f"{report['path']}: SubER {against['suber']:g} %; {against['paired_cues']} of "
            f"{against['reference_cues']} reference cues paired; start offset median {against['start_offset_median']} s"
            f" (mean |.| {against['start_offset_mean_abs']} s), end offset median {against['end_offset_median']} s"
            f" (mean |.| {against['end_offset_mean_abs']} s)"
        )
