"""Stage 1: audio extraction with ffmpeg (through ffmpeg-python).

Any input ffmpeg can read becomes mono float32 samples at 16 kHz, the rate Whisper, silero-vad and pyannote
expect. As openai-whisper's ``whisper/audio.py load_audio`` does: an argument list (never a shell), ``-nostdin``,
raw PCM on stdout, and one error that carries the reason ffmpeg gave.

Hardening against files from strangers: only regular files are opened (a FIFO would hang), the input is passed
as ``file:<absolute path>`` so names starting with ``-`` or containing ``:`` are read as files, and a protocol
whitelist of ``file`` keeps a crafted playlist from reaching the network.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from whisper_subtitler.errors import InputError, MissingRequirementError
from whisper_subtitler.types import SAMPLE_RATE, Audio

log = logging.getLogger(__name__)

PROBE_TIMEOUT_S = 60.0  # seconds for ffprobe to read a header
DECODE_TIMEOUT_S = 3600.0  # seconds for ffmpeg to decode one input (a 3-hour file takes about a minute)
TRUNCATION_TOLERANCE = 0.95  # decoded / declared duration below this means a truncated file


@dataclass(frozen=True)
class MediaInfo:
    """What ffprobe says of an input: the number of audio streams, the declared duration of the first audio stream
    (else of the container) and of each audio stream, in seconds (``None`` when unknown)."""

    audio_streams: int
    duration: float | None
    stream_durations: tuple[float | None, ...] = ()


def ffmpeg_binary(name: str = "ffmpeg") -> str:
    """Path of ``ffmpeg`` or ``ffprobe``; raises ``MissingRequirementError`` (exit 3) with the fix when absent."""
    found = shutil.which(name)
    if found is None:
        raise MissingRequirementError(
            f"{name} not found on PATH",
            hint="install ffmpeg (Debian/Ubuntu: apt install ffmpeg; macOS: brew install ffmpeg; Windows: winget install ffmpeg)",
        )
    return found


def check_input(path: Path) -> Path:
    """Refuse what cannot be a media file before ffmpeg sees it; returns the absolute path.

    Raises ``InputError`` for a missing file, a dangling symlink or loop, a directory, a FIFO or device,
    an unreadable file and a zero-byte file.
    """
    try:
        st = path.stat()  # follows symlinks: a dangling link or a loop fails here
    except FileNotFoundError:
        reason = "dangling symbolic link" if path.is_symlink() else "no such file"
        raise InputError(f"{path}: {reason}") from None
    except OSError as e:  # ELOOP, EACCES on a parent, ...
        raise InputError(f"{path}: {e.strerror or e}") from None
    if stat.S_ISDIR(st.st_mode):
        raise InputError(f"{path}: is a directory (use --recursive to process the files in it)")
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"{path}: not a regular file (FIFO, socket or device)")
    if st.st_size == 0:
        raise InputError(f"{path}: empty file (0 bytes)")
    if not os.access(path, os.R_OK):
        raise InputError(f"{path}: permission denied")
    return path.absolute()


def _ffmpeg_url(path: Path) -> str:
    # "file:" makes ffmpeg read the name as a file path even if it starts with "-" or contains ":" (like "http:x").
    return f"file:{path}"


def _last_error_line(stderr: bytes) -> str:
    lines = [ln.strip() for ln in stderr.decode("utf-8", "replace").splitlines() if ln.strip()]
    return lines[-1] if lines else "unknown error"


def probe(path: Path) -> MediaInfo:
    """Read the stream list and declared duration of ``path`` with ffprobe.

    Raises ``InputError`` when ffprobe cannot read the file (not media, corrupt header) and
    ``MissingRequirementError`` when ffprobe is not installed.
    """
    info = _probe_json(path)
    audio = [s for s in info.get("streams", []) if s.get("codec_type") == "audio"]
    # The audio stream's own duration: the container's may include a longer video stream.
    durations = [_seconds(s.get("duration") or s.get("tags", {}).get("DURATION")) for s in audio] or [None]
    declared = durations[0] if durations[0] is not None else _seconds(info.get("format", {}).get("duration"))
    return MediaInfo(audio_streams=len(audio), duration=declared, stream_durations=tuple(durations))


def _seconds(value) -> float | None:
    """ffprobe's ``"12.5"`` or Matroska's ``"00:00:12.500000000"`` tag -> 12.5; ``None`` when absent or unreadable."""
    if value in (None, "N/A"):
        return None
    try:
        h, m, sec = (["0", "0"] + str(value).split(":"))[-3:]
        return int(h) * 3600 + int(m) * 60 + float(sec)
    except (TypeError, ValueError):
        return None


def _probe_json(path: Path) -> dict:
    cmd = [
        ffmpeg_binary("ffprobe"), "-v", "error", "-protocol_whitelist", "file",
        "-show_streams", "-show_format", "-of", "json", _ffmpeg_url(path),
    ]
    try:
        proc = subprocess.run(cmd, capture_output=True, stdin=subprocess.DEVNULL, timeout=PROBE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise InputError(f"{path}: ffprobe timed out after {PROBE_TIMEOUT_S:.0f} s") from None
    if proc.returncode != 0:
        raise InputError(f"{path}: not a readable media file ({_last_error_line(proc.stderr)})")
    return json.loads(proc.stdout or b"{}")


def extract_audio(path: Path, *, audio_track: int = 0) -> Audio:
    """Decode audio stream ``audio_track`` (0 = first) of ``path`` to 16 kHz mono float32.

    Returns an ``Audio`` with ``samples`` of shape ``(n,)``. Raises ``InputError`` for a missing, unreadable or
    non-media file, an input without that audio stream, a decode failure, and a file that decodes to less than
    ``TRUNCATION_TOLERANCE`` of its declared duration (truncated); ``MissingRequirementError`` without ffmpeg.
    """
    import ffmpeg

    path = Path(path)
    absolute = check_input(path)
    info = probe(absolute)
    if info.audio_streams == 0:
        raise InputError(f"{path}: no audio stream")
    if audio_track >= info.audio_streams:
        raise InputError(f"{path}: no audio track {audio_track} (the file has {info.audio_streams})")
    cmd = (
        ffmpeg.input(_ffmpeg_url(absolute), protocol_whitelist="file")
        .output("pipe:", map=f"0:a:{audio_track}", format="f32le", acodec="pcm_f32le", ac=1, ar=SAMPLE_RATE)
        .global_args("-nostdin", "-hide_banner", "-loglevel", "error")
        .compile(cmd=ffmpeg_binary("ffmpeg"))
    )
    try:
        proc = subprocess.run(cmd, capture_output=True, stdin=subprocess.DEVNULL, timeout=DECODE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise InputError(f"{path}: ffmpeg timed out after {DECODE_TIMEOUT_S:.0f} s") from None
    if proc.returncode != 0:
        raise InputError(f"{path}: ffmpeg could not decode the audio ({_last_error_line(proc.stderr)})")
    samples = np.frombuffer(proc.stdout, dtype=np.float32).copy()  # writable, as torch wants
    declared = info.stream_durations[audio_track] if audio_track < len(info.stream_durations) else None
    declared = declared if declared is not None else info.duration
    audio = Audio(samples=samples, sample_rate=SAMPLE_RATE, source=path, container_duration=declared)
    if declared and declared > 1.0 and audio.duration < TRUNCATION_TOLERANCE * declared:
        raise InputError(
            f"{path}: truncated or damaged: decoded {audio.duration:.1f} s of the {declared:.1f} s the file declares"
        )
    if proc.stderr.strip():
        log.warning("%s: ffmpeg reported: %s", path, _last_error_line(proc.stderr))
    return audio
