"""The library commands: ``whisper-subtitler watch DIR...`` and ``whisper-subtitler queue [add PATH...]``, and the
options ``transcribe`` shares with them (``--skip-existing``, ``--resume``, ``--state-dir``).

``watch`` takes every option of ``transcribe`` that makes sense for a folder (its signature is ``transcribe``'s,
less the inputs, ``--recursive``, ``--dry-run``, ``--shard`` and the Ray options, plus its own), so that the two never
drift apart; the loop itself is ``library.watch``.
"""

from __future__ import annotations

import inspect
import json
import signal
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from whisper_subtitler.cli.console import err, fail, setup_logging
from whisper_subtitler.cli.options import ExecutorName, ProgressMode
from whisper_subtitler.errors import SubtitlerError, UsageError
from whisper_subtitler.interrupts import ending_on_signals, exit_code

if TYPE_CHECKING:
    from whisper_subtitler.cli.args import TranscribeArgs

# Typer reads these annotations at run time: Optional[...] keeps them readable by every supported Typer version.
# ruff: noqa: UP045

STATE_ENV = "WHISPER_SUBTITLER_STATE_DIR"

SkipExisting = Annotated[
    Optional[str],
    typer.Option(
        "--skip-existing",
        help="Skip a file that already has subtitles in one of these languages (e.g. en or en,de): a sidecar file "
        "named as media servers read them (Movie.en.srt, Movie.eng.forced.srt) or an embedded subtitle stream "
        "tagged with it. Movie.srt has no language: it counts only for 'und' (--skip-existing en,und).",
        show_default=False,
    ),
]
Resume = Annotated[
    bool,
    typer.Option(
        "--resume",
        help="Keep checkpoints of long files under --state-dir and continue a file stopped part-way from its last "
        "finished batch (same output bytes as an uninterrupted run). watch always does.",
    ),
]
StateDir = Annotated[
    Optional[Path],
    typer.Option(
        "--state-dir",
        envvar=STATE_ENV,
        help="The queue, lock and checkpoints (default: $XDG_STATE_HOME/whisper-subtitler, else "
        "~/.local/state/whisper-subtitler).",
        show_default=False,
        file_okay=False,
    ),
]
Folders = Annotated[list[Path], typer.Argument(help="Folders of the media library, watched recursively.")]
Settle = Annotated[
    float,
    typer.Option("--settle", min=0, help="Seconds a file's size and mtime must stay unchanged before it is taken."),
]
Once = Annotated[
    bool, typer.Option("--once", help="Process the files there now (and those settling), then exit (cron, timers).")
]
MaxAttempts = Annotated[
    int, typer.Option("--max-attempts", min=1, help="Failures after which a file stays failed (until --retry-failed).")
]
RetryFailed = Annotated[bool, typer.Option("--retry-failed", help="Queue the failed files again first.")]
RescanInterval = Annotated[
    float,
    typer.Option(
        "--rescan-interval", min=1, help="Seconds between scans of the folders (network shares send no events)."
    ),
]
QueueJson = Annotated[bool, typer.Option("--json", help="Print the rows as a JSON array on stdout.")]
Paths = Annotated[list[Path], typer.Argument(help="Media files (or folders, taken recursively) to queue.")]

# transcribe's parameters watch leaves out, with the values watch runs with
NOT_IN_WATCH: dict[str, Any] = {
    "inputs": [],
    "recursive": True,
    "dry_run": False,
    "shard": None,
    "executor": ExecutorName.LOCAL,
    "ray_address": None,
    "devices": None,
    "cpus_per_worker": None,
    "resume": True,
}
WATCH_DEFAULTS = {"settle": 30.0, "once": False, "max_attempts": 3, "retry_failed": False, "rescan_interval": 300.0}


def state_dir_of(value: Path | None) -> Path:
    """``--state-dir``, else the XDG default (``queue.default_state_dir``)."""
    from whisper_subtitler.library.queue import default_state_dir

    return value if value is not None else default_state_dir()


def apply_library_options(args: TranscribeArgs, pipeline: Any) -> None:
    """Give ``pipeline`` the library options of ``args``: ``--skip-existing`` (languages parsed: ``UsageError``
    for an unknown one) and ``--resume`` (checkpoints under the state directory)."""
    from dataclasses import replace

    from whisper_subtitler.library.skip import parse_languages

    skip = parse_languages(args.skip_existing) if args.skip_existing is not None else ()
    resume_dir = state_dir_of(args.state_dir) if args.resume else None
    pipeline.options = replace(pipeline.options, skip_existing=skip, resume_dir=resume_dir)


def make_watch(
    transcribe: Callable[..., None],
    report: Callable[[Any, bool], None],
    finish: Callable[[Any, bool], typer.Exit],
) -> Callable[..., None]:
    """The ``watch`` command: ``transcribe``'s options (less ``NOT_IN_WATCH``) and its own; ``report`` and
    ``finish`` are the ``transcribe`` command's (one line per result; the exit and the ``--json`` summary)."""
    base = inspect.signature(transcribe, eval_str=True)
    own = [
        inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=annotation, default=default)
        for name, annotation, default in (
            ("settle", Settle, WATCH_DEFAULTS["settle"]),
            ("once", Once, False),
            ("max_attempts", MaxAttempts, 3),
            ("retry_failed", RetryFailed, False),
            ("rescan_interval", RescanInterval, 300.0),
        )
    ]
    folders = inspect.Parameter("folders", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Folders)
    params = list(base.parameters.values())
    kept = [p for p in params[1:] if p.name not in NOT_IN_WATCH]  # params[0] is ctx

    def watch(**values: Any) -> None:
        """Subtitle a media library: every media file under FOLDERS now and as it arrives (settled: size and mtime
        unchanged for --settle seconds), through a durable queue (whisper-subtitler queue) that survives restarts;
        takes transcribe's options."""
        run_watch(values, report, finish)

    signature = base.replace(parameters=[params[0], folders, *own, *kept])
    watch.__signature__ = signature  # type: ignore[attr-defined]
    watch.__annotations__ = {p.name: p.annotation for p in signature.parameters.values()}
    return watch


def run_watch(values: dict[str, Any], report: Callable[[Any, bool], None], finish: Callable[..., typer.Exit]) -> None:
    """The ``watch`` command once its options are read."""
    from whisper_subtitler.cli.args import TranscribeArgs
    from whisper_subtitler.inputs import parse_extensions
    from whisper_subtitler.library.watch import WatchOptions, watch
    from whisper_subtitler.progress import JsonProgress, ProgressDisplay
    from whisper_subtitler.runner import BatchProgress, BatchSummary

    values.pop("ctx", None)
    folders: list[Path] = values.pop("folders")
    own = {name: values.pop(name) for name in WATCH_DEFAULTS}
    args = TranscribeArgs(**{**NOT_IN_WATCH, **values, "inputs": [str(f) for f in folders]})
    setup_logging(args.verbose, args.quiet)
    pipeline = None
    with ending_on_signals():
        try:
            if missing := [str(f) for f in folders if not f.is_dir()]:
                raise UsageError(f"not a folder: {', '.join(missing)}")
            state = state_dir_of(args.state_dir)
            options = WatchOptions(
                folders=tuple(f.absolute() for f in folders),
                state_dir=state,
                settle=own["settle"],
                once=own["once"],
                max_attempts=own["max_attempts"],
                retry_failed=own["retry_failed"],
                rescan_interval=own["rescan_interval"],
                extensions=parse_extensions(args.extensions),
                output_dir=args.output_dir,
            )
            pipeline = args.subtitler().pipeline
            apply_library_options(args, pipeline)
            display: ProgressDisplay = (
                JsonProgress(0) if args.progress is ProgressMode.JSON else BatchProgress(err, 0, enabled=False)
            )

            def started(path: Path) -> None:
                if not args.quiet:
                    err.print(f"subtitling {path}", highlight=False, soft_wrap=True)

            summary = watch(options, pipeline.process, display, lambda r: report(r, args.quiet), started)
        except SubtitlerError as e:
            raise fail(e) from None
        except KeyboardInterrupt as stop:  # before the loop started (loading models): nothing was written
            err.print(f"interrupted ({signal.Signals(exit_code(stop) - 128).name})", highlight=False)
            raise typer.Exit(exit_code(stop)) from None
        finally:
            if pipeline is not None:
                pipeline.close()
    results = tuple(summary.results)
    signum = signal.SIGTERM if summary.interrupted else signal.SIGINT
    raise finish(BatchSummary(results, summary.interrupted, signum=int(signum)), args.json_summary)


queue_app = typer.Typer(
    name="queue",
    help="The queue of watch: list its files and their states, or add files (Sonarr/Radarr, cron).",
    no_args_is_help=False,
)


@queue_app.callback(invoke_without_command=True)
def queue_list(ctx: typer.Context, state_dir: StateDir = None, json_output: QueueJson = False) -> None:
    """List the queue's files: state, attempts, last error (--json: every field)."""
    if ctx.invoked_subcommand is not None:
        ctx.obj = state_dir
        return
    from whisper_subtitler.library.queue import Queue

    try:
        with Queue.open(state_dir_of(state_dir)) as queue:
            rows = queue.rows()
    except SubtitlerError as e:
        raise fail(e) from None
    if json_output:
        typer.echo(json.dumps([row.to_json() for row in rows], ensure_ascii=False, indent=2))
        return
    for row in rows:
        extra = f"  {row.error}" if row.error else ""
        typer.echo(f"{row.status:9} {row.attempts}  {row.path}{extra}")


@queue_app.command("add")
def queue_add(ctx: typer.Context, paths: Paths, state_dir: StateDir = None) -> None:
    """Queue PATHS for watch (a folder: its media files, recursively); a file already done is queued again only
    when it changed. Exit 1 when a path does not exist (the others are queued)."""
    from whisper_subtitler.library.queue import Queue
    from whisper_subtitler.library.scan import media_files

    state = state_dir_of(state_dir if state_dir is not None else ctx.obj)
    failed = False
    try:
        with Queue.open(state) as queue:
            for path in paths:
                if path.is_dir():
                    found = media_files([path])
                elif path.is_file():
                    found = [path]
                else:
                    err.print(f"[red]error:[/red] {path}: no such file", highlight=False, soft_wrap=True)
                    failed = True
                    continue
                for media in found:
                    row = queue.add(media, origin="queue add")
                    err.print(f"{row.status}: {row.path}", highlight=False, soft_wrap=True)
    except SubtitlerError as e:
        raise fail(e) from None
    raise typer.Exit(1 if failed else 0)
