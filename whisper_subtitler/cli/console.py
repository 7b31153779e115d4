"""The command line's stderr: one Rich console for logs, progress and error lines (stdout carries data only)."""

from __future__ import annotations

import logging

import typer
from rich.console import Console
from rich.logging import RichHandler

from whisper_subtitler.errors import SubtitlerError

err = Console(stderr=True)
log = logging.getLogger("whisper_subtitler")


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
