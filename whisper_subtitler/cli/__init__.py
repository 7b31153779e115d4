"""The command line: ``app`` (the Typer application) and ``main`` (the console script)."""

from whisper_subtitler.cli.app import app, main, subtitle_options

__all__ = ["app", "main", "subtitle_options"]
