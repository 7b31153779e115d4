"""Running ffmpeg for the video outputs, with the hardening of ``audio.py``: an argument list built by ffmpeg-python
(never a shell), ``-nostdin``, inputs as ``file:`` URLs behind a ``file``-only protocol whitelist, stderr captured
in a file (a full pipe cannot block ffmpeg) and turned into one error line, and a watchdog that stops an ffmpeg
that reports no progress for ``STALL_TIMEOUT_S`` seconds (a whole-file timeout would fail long films).
"""

from __future__ import annotations

import logging
import os
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
# libass's warning when fontconfig offers it no font at all (glyph 0: before any character is looked up): the
# burned video would be the picture unchanged. A font without some characters gets the line with their code point.
NO_FONT = "failed to find any fallback with glyph 0x0 "
FONT_PROBE_ASS = """[Script Info]
ScriptType: v4.00+
PlayResX: 64
PlayResY: 64

[Events]
Format: Layer, Start, End, Style, Name, MarginL, MarginR, MarginV, Effect, Text
Dialogue: 0,0:00:00.00,0:00:01.00,Default,,0,0,0,,Ag
"""


class FilterUnavailableError(SubtitlerError):
    """ffmpeg lacks what a requested output needs (``--burn-in`` without libass, or libass without a font to draw
    with). It fails the file, not the batch: the subtitle files are still written for the others; exit code 3 (a
    requirement is missing)."""

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


_FONT_FOUND: set[tuple[str, str, str | None, str | None]] = set()  # (ffmpeg, filter, fontconfig file, path)


def _finds_a_font(ffmpeg: str, filter_name: str) -> bool:
    """Whether libass, run by ``ffmpeg`` (an absolute path) through ``filter_name``, finds a font to draw a
    two-letter cue with (a tenth of a second of a 64 x 64 picture, ``NO_FONT`` looked for in its warnings). A font
    found is remembered per ffmpeg and fontconfig setting (``$FONTCONFIG_FILE``, ``$FONTCONFIG_PATH``); no font is
    probed again at the next file (fonts may be installed meanwhile, under a server). True when the probe itself
    cannot run: the burn then reports its own error."""
    key = (ffmpeg, filter_name, os.environ.get("FONTCONFIG_FILE"), os.environ.get("FONTCONFIG_PATH"))
    if key in _FONT_FOUND:
        return True
    with tempfile.TemporaryDirectory(prefix="whisper-subtitler-font-") as folder:
        Path(folder, "probe.ass").write_text(FONT_PROBE_ASS, encoding="utf-8")
        cmd = [ffmpeg, "-hide_banner", "-nostdin", "-loglevel", "warning", "-f", "lavfi", "-i"]
        cmd += ["color=c=black:s=64x64:d=0.1", "-vf", f"{filter_name}=probe.ass", "-f", "null", "-"]
        try:
            proc = subprocess.run(cmd, capture_output=True, stdin=subprocess.DEVNULL, cwd=folder, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            return True
    if NO_FONT in proc.stderr.decode("utf-8", "replace"):
        return False
    _FONT_FOUND.add(key)
    return True


def require_subtitle_filter(source: Path) -> str:
    """The name of ffmpeg's libass filter (``ass``) for burning subtitles in.

    Raises ``FilterUnavailableError`` naming ``source`` when this ffmpeg was built without libass (neither ``ass``
    nor ``subtitles`` in ``ffmpeg -filters``) or when libass finds no font (a static ffmpeg on a server without
    fonts writes the picture unchanged, without an error), ``MissingRequirementError`` without ffmpeg. The filter
    list is read once per ffmpeg binary; a font, until one is found (:func:`_finds_a_font`).
    """
    binary = ffmpeg_binary("ffmpeg")
    path = os.path.abspath(shutil.which(binary) or binary)  # the font probe runs in a folder of its own
    available = _filters(path)
    name = next((n for n in SUBTITLE_FILTERS if n in available), None)
    if name is None:
        raise FilterUnavailableError(
            f"{source}: --burn-in needs ffmpeg's 'ass' or 'subtitles' filter, and this ffmpeg ({binary}) has neither",
            hint="install an ffmpeg built with libass (--enable-libass; Debian/Ubuntu and Homebrew builds have it)",
        )
    if not _finds_a_font(path, name):
        raise FilterUnavailableError(
            f"{source}: --burn-in found no font: ffmpeg's libass ({binary}) has none to draw the subtitles with",
            hint="install a font (Debian and Ubuntu: fonts-dejavu-core), or name a fontconfig file that has one "
            "in $FONTCONFIG_FILE",
        )
    return name


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
