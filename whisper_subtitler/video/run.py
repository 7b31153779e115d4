"""Running ffmpeg for the video outputs, with the hardening of ``audio.py``: an argument list built by ffmpeg-python
(never a shell), ``-nostdin``, inputs as ``file:`` URLs behind a ``file``-only protocol whitelist, stderr captured
in a file (a full pipe cannot block ffmpeg) and turned into one error line, and a watchdog that stops an ffmpeg
that reports no progress for ``STALL_TIMEOUT_S`` seconds (a whole-file timeout would fail long films).
"""

from __future__ import annotations

import logging
import shutil
import subprocess
import tempfile
import threading
from functools import lru_cache
from pathlib import Path

from whisper_subtitler.audio import ffmpeg_binary, last_error_line
from whisper_subtitler.errors import ExitCode, InputError, SubtitlerError

log = logging.getLogger(__name__)

STALL_TIMEOUT_S = 300.0  # seconds ffmpeg may go without a progress report before it is stopped
FILTERS_TIMEOUT_S = 30.0  # seconds for ``ffmpeg -filters``
SUBTITLE_FILTERS = ("ass", "subtitles")  # libass filters: either renders our ASS file


class FilterUnavailableError(SubtitlerError):
    """ffmpeg lacks a filter a requested output needs (``--burn-in`` without libass). It fails the file, not the
    batch: the subtitle files are still written for the others; exit code 3 (a requirement is missing)."""

    exit_code = ExitCode.MISSING_REQUIREMENT


@lru_cache(maxsize=4)
def _filters(ffmpeg: str) -> frozenset[str]:
    try:
        proc = subprocess.run(
            [ffmpeg, "-hide_banner", "-filters"],
            capture_output=True,
            stdin=subprocess.DEVNULL,
            timeout=FILTERS_TIMEOUT_S,
        )
    except (OSError, subprocess.TimeoutExpired):
        return frozenset()
    # Lines look like " ... ass               V->V       Render ASS subtitles onto input video using ..."
    return frozenset(
        parts[1]
        for parts in (ln.split() for ln in proc.stdout.decode("utf-8", "replace").splitlines())
        if len(parts) >= 3 and "->" in parts[2]
    )


def require_subtitle_filter(source: Path) -> str:
    """The name of ffmpeg's libass filter (``ass``) for burning subtitles in.

    Raises ``FilterUnavailableError`` naming ``source`` when this ffmpeg was built without libass (neither ``ass``
    nor ``subtitles`` in ``ffmpeg -filters``), ``MissingRequirementError`` without ffmpeg. The filter list is read
    once per ffmpeg binary.
    """
    binary = ffmpeg_binary("ffmpeg")
    available = _filters(shutil.which(binary) or binary)
    for name in SUBTITLE_FILTERS:
        if name in available:
            return name
    raise FilterUnavailableError(
        f"{source}: --burn-in needs ffmpeg's 'ass' or 'subtitles' filter, and this ffmpeg ({binary}) has neither",
        hint="install an ffmpeg built with libass (--enable-libass; Debian/Ubuntu and Homebrew builds have it)",
    )


def _stop(stalled: threading.Event, proc: subprocess.Popen) -> None:
    """The watchdog's action: mark the run as stalled and kill ffmpeg."""
    stalled.set()
    proc.kill()


def run_ffmpeg(cmd: list[str], source: Path, what: str, cwd: Path | None = None) -> None:
    """Run the ffmpeg command ``cmd`` (from ffmpeg-python's ``compile``), with progress reports on stdout so that a
    stalled ffmpeg is stopped after ``STALL_TIMEOUT_S`` seconds without one; ``cwd`` is its working folder.

    Raises ``InputError`` naming ``source`` and saying what failed (``what``: "embed the subtitles", ...) with
    ffmpeg's last error line. ffmpeg is stopped when the caller is interrupted (Ctrl-C).
    """
    full = [*cmd, "-progress", "pipe:1", "-nostats", "-nostdin", "-hide_banner", "-loglevel", "error", "-y"]
    with tempfile.TemporaryFile() as errors:
        proc = subprocess.Popen(full, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=errors, cwd=cwd)
        assert proc.stdout is not None  # stdout=PIPE
        try:
            while True:
                stalled = threading.Event()
                watchdog = threading.Timer(STALL_TIMEOUT_S, _stop, (stalled, proc))
                watchdog.start()
                try:
                    line = proc.stdout.readline()
                finally:
                    watchdog.cancel()
                if stalled.is_set():
                    raise InputError(
                        f"{source}: ffmpeg stopped: no progress for {STALL_TIMEOUT_S:.0f} s while trying to {what}"
                    )
                if not line:
                    break
            if proc.wait() != 0:
                errors.seek(0)
                raise InputError(f"{source}: ffmpeg could not {what} ({last_error_line(errors.read())})")
            errors.seek(0)
            warning = errors.read().strip()
            if warning:
                log.warning("%s: ffmpeg reported: %s", source, last_error_line(warning))
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            proc.stdout.close()
