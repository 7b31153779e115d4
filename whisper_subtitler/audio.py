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
import subprocess
import tempfile
import threading
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from whisper_subtitler.channels import AUTO, CHECK_TIMEOUT_S, PHANTOM, PhantomCentre, choose_channel
from whisper_subtitler.errors import InputError, MissingRequirementError
from whisper_subtitler.inputs import check_input
from whisper_subtitler.types import SAMPLE_RATE, Audio, ChannelUse

log = logging.getLogger(__name__)

PROBE_TIMEOUT_S = 60.0  # seconds for ffprobe to read a header
PROBE_CACHE_SIZE = 16  # files whose ffprobe answer is kept (probe_json)
TRUNCATION_TOLERANCE = 0.95  # decoded / declared duration below this means a truncated file
DECODE_TIMEOUT_S = 600.0  # seconds ffmpeg may take to deliver one piece (a 3-hour file decodes in about a minute)
STREAMED_WAV_SIZE = 0x7FFF0000  # a WAV data size this large is a placeholder, written when the length was unknown
PIECE_SECONDS = 600.0  # seconds of audio held in memory at once by stream_audio (38.4 MB of float32 samples)


@dataclass(frozen=True)
class MediaInfo:
    """What ffprobe says of an input: the number of audio streams, the declared duration of the first audio stream
    (else of the container) and of each audio stream, in seconds (``None`` when unknown); ``layouts``: each audio
    stream's ffprobe ``channel_layout`` (``""`` when it has none) and number of channels."""

    audio_streams: int
    duration: float | None
    stream_durations: tuple[float | None, ...] = ()
    layouts: tuple[tuple[str, int], ...] = ()


def ffmpeg_binary(name: str = "ffmpeg") -> str:
    """Path of ``ffmpeg`` or ``ffprobe``; raises ``MissingRequirementError`` (exit 3) with the fix when absent."""
    found = shutil.which(name)
    if found is None:
        raise MissingRequirementError(
            f"{name} not found on PATH",
            hint="install ffmpeg (Debian/Ubuntu: apt install ffmpeg; macOS: brew install ffmpeg; "
            "Windows: winget install ffmpeg)",
        )
    return found


def ffmpeg_url(path: Path) -> str:
    """``file:<path>`` for ffmpeg and ffprobe: the name is read as a file even when it starts with ``-``."""
    # "file:" makes ffmpeg read the name as a file path even if it starts with "-" or contains ":" (like "http:x").
    return f"file:{path}"


def last_error_line(stderr: bytes) -> str:
    """The last non-empty line of ffmpeg's ``stderr`` (where it says why it stopped), or ``unknown error``."""
    lines = [ln.strip() for ln in stderr.decode("utf-8", "replace").splitlines() if ln.strip()]
    return lines[-1] if lines else "unknown error"


def probe(path: Path) -> MediaInfo:
    """Read the stream list and declared duration of ``path`` with ffprobe.

    Raises ``InputError`` when ffprobe cannot read the file (not media, corrupt header) and
    ``MissingRequirementError`` when ffprobe is not installed.
    """
    info = probe_json(path)
    audio = [s for s in info.get("streams", []) if s.get("codec_type") == "audio"]
    # The audio stream's own duration: the container's may include a longer video stream.
    durations = [_seconds(s.get("duration") or s.get("tags", {}).get("DURATION")) for s in audio] or [None]
    declared = durations[0] if durations[0] is not None else _seconds(info.get("format", {}).get("duration"))
    layouts = tuple((str(s.get("channel_layout") or ""), int(s.get("channels") or 0)) for s in audio)
    return MediaInfo(audio_streams=len(audio), duration=declared, stream_durations=tuple(durations), layouts=layouts)


def _seconds(value) -> float | None:
    """ffprobe's ``"12.5"`` or Matroska's ``"00:00:12.500000000"`` tag -> 12.5; ``None`` when absent or unreadable."""
    if value in (None, "N/A"):
        return None
    try:
        h, m, sec = (["0", "0"] + str(value).split(":"))[-3:]
        return int(h) * 3600 + int(m) * 60 + float(sec)
    except (TypeError, ValueError):
        return None


def probe_json(path: Path) -> dict:
    """ffprobe's JSON (``-show_streams -show_format``) for ``path``, with the hardening above (a protocol whitelist
    of ``file``, a timeout), after ``check_input``'s ``stat`` (ffprobe would wait on a FIFO until its timeout).
    Raises ``InputError`` when the path is not a readable regular file or ffprobe cannot read it,
    ``MissingRequirementError`` without ffprobe.

    A file is probed once while it stays the same (its device, inode, size and modification and change times):
    a run asks for the streams of its input at least twice (the audio and the shot changes; with some options also
    the audio language, ``--skip-existing`` or LRC's tags), and each ffprobe process costs 0.13-0.15 s on two cores,
    nearly all of it the process's start. The caller gets its own copy."""
    checked = check_input(Path(path))
    st = checked.stat()
    key = (str(checked), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    with _PROBED_LOCK:
        known = _PROBED.get(key)
    if known is not None:
        return json.loads(known)
    text = _run_ffprobe(path, checked)
    with _PROBED_LOCK:
        _PROBED[key] = text
        while len(_PROBED) > PROBE_CACHE_SIZE:
            del _PROBED[next(iter(_PROBED))]
    return json.loads(text)


_PROBED: dict[tuple, bytes] = {}  # probe_json's answers, oldest first
_PROBED_LOCK = threading.Lock()  # the prefetch thread probes the next file while this one is transcribed


def _run_ffprobe(path: Path, checked: Path) -> bytes:
    """ffprobe's JSON output for the checked path ``checked`` (``path`` as the user gave it names it in errors)."""
    cmd = [
        ffmpeg_binary("ffprobe"),
        "-v",
        "error",
        "-protocol_whitelist",
        "file",
        "-show_streams",
        "-show_format",
        "-of",
        "json",
        ffmpeg_url(checked),
    ]
    try:
        proc = subprocess.run(cmd, capture_output=True, stdin=subprocess.DEVNULL, timeout=PROBE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise InputError(f"{path}: ffprobe timed out after {PROBE_TIMEOUT_S:.0f} s") from None
    if proc.returncode != 0:
        raise InputError(f"{path}: not a readable media file ({last_error_line(proc.stderr)})")
    return proc.stdout or b"{}"


def wav_declared_duration(path: Path) -> float | None:
    """The duration a RIFF WAV file's header declares: its ``data`` chunk size over the ``fmt `` chunk's byte rate,
    in seconds; ``None`` for another format, a WAV written to a pipe (size 0, or ``STREAMED_WAV_SIZE`` and above:
    ffmpeg writes 0xFFFFFFFF, sox about 0x7FFFF000) or a header that cannot be read.

    ffprobe reports the length of the data present in a WAV file, not the one its header declares, so a file cut
    short would pass as complete (AIFF and FLAC declare their frame count, which ffprobe reports)."""
    import struct

    try:
        with open(path, "rb") as f:
            if f.read(4) != b"RIFF" or f.read(8)[4:] != b"WAVE":
                return None
            byte_rate = 0
            while len(header := f.read(8)) == 8:
                chunk, size = header[:4], struct.unpack("<I", header[4:])[0]
                if chunk == b"fmt ":
                    byte_rate = struct.unpack("<I", f.read(16)[8:12])[0]
                    f.seek(size - 16 + (size & 1), os.SEEK_CUR)
                elif chunk == b"data":
                    return size / byte_rate if byte_rate and 0 < size < STREAMED_WAV_SIZE else None
                else:
                    f.seek(size + (size & 1), os.SEEK_CUR)
    except (OSError, struct.error):
        return None
    return None


def decode_window(path: Path, audio_track: int, count: int, start: float, length: float) -> np.ndarray:
    """``length`` seconds from ``start`` of stream ``0:a:audio_track`` of ``path`` (absolute, checked; ``count``
    channels), every channel kept, as 16 kHz float32 of shape ``(n, count)`` in the stream's channel order. (One
    ffmpeg graph giving the centre and the ``-ac 1`` downmix side by side, ``asplit`` + ``join``, loses the centre
    once ``-ss``/``-t`` trim the input: ffmpeg 5.1 then joins the downmix twice.) Raises ``InputError`` with
    ffmpeg's reason when it cannot decode."""
    cmd = [
        ffmpeg_binary("ffmpeg"),
        *("-nostdin", "-hide_banner", "-loglevel", "error", "-protocol_whitelist", "file"),
        *("-ss", f"{start:.3f}", "-t", f"{length:.3f}", "-i", ffmpeg_url(path)),
        *("-map", f"0:a:{audio_track}", "-ar", str(SAMPLE_RATE), "-f", "f32le", "-acodec", "pcm_f32le", "pipe:"),
    ]
    try:
        proc = subprocess.run(
            cmd, capture_output=True, stdin=subprocess.DEVNULL, timeout=min(CHECK_TIMEOUT_S, DECODE_TIMEOUT_S)
        )
    except subprocess.TimeoutExpired:
        raise InputError(f"{path}: ffmpeg timed out reading the channels") from None
    if proc.returncode != 0:
        raise InputError(f"{path}: ffmpeg could not decode the audio ({last_error_line(proc.stderr)})")
    frame = 4 * count
    usable = len(proc.stdout) - len(proc.stdout) % frame
    return np.frombuffer(proc.stdout[:usable], dtype=np.float32).reshape(-1, count)


def _open(path: Path, audio_track: int, channels: str = AUTO) -> tuple[float | None, list[str], ChannelUse]:
    """Check and probe ``path``; returns the declared duration, the ffmpeg command and the channel it takes
    (``channels.choose_channel`` with ``--channels channels``)."""
    absolute = check_input(path)
    info = probe(absolute)
    if info.audio_streams == 0:
        raise InputError(f"{path}: no audio stream")
    if audio_track >= info.audio_streams:
        raise InputError(f"{path}: no audio track {audio_track} (the file has {info.audio_streams})")
    declared = info.stream_durations[audio_track] if audio_track < len(info.stream_durations) else None
    declared = declared if declared is not None else info.duration
    if (header := wav_declared_duration(absolute)) is not None and header > (declared or 0.0):
        declared = header  # ffprobe measured the data present; the header says how much there should be
    layout, count = info.layouts[audio_track] if audio_track < len(info.layouts) else ("", 0)
    channel = choose_channel(
        path,
        lambda start, length: decode_window(absolute, audio_track, count, start, length),
        channels,
        layout,
        count,
        declared,
    )
    if channel.used == PHANTOM:  # both channels decoded, the centre taken from them here (_pieces)
        return declared, _decode_command(absolute, audio_track, None, stereo=True), channel
    return declared, _decode_command(absolute, audio_track, channel.pan), channel


def _decode_command(absolute: Path, audio_track: int, pan: str | None, *, stereo: bool = False) -> list[str]:
    """The ffmpeg command that writes audio track ``audio_track`` of ``absolute`` to stdout as 16 kHz mono float32:
    the downmix (``pan`` None) or ``pan``, an ffmpeg ``pan`` filter that keeps one channel; ``stereo``: both
    channels of a two-channel track, interleaved (L, R), for ``channels.PhantomCentre``."""
    import ffmpeg

    # The downmix keeps the command of every earlier version (-ac 1): mono and stereo outputs stay the same.
    mix: dict[str, object] = {"ac": 1} if pan is None else {"af": pan}
    if stereo:
        mix = {"ac": 2}
    return (
        ffmpeg.input(ffmpeg_url(absolute), protocol_whitelist="file")
        .output("pipe:", map=f"0:a:{audio_track}", format="f32le", acodec="pcm_f32le", **mix, ar=SAMPLE_RATE)
        .global_args("-nostdin", "-hide_banner", "-loglevel", "error")
        .compile(cmd=ffmpeg_binary("ffmpeg"))
    )


def _start_decoding(cmd: list[str], errors) -> subprocess.Popen:  # noqa: ANN001 - a binary file for stderr
    """Start ``cmd`` with its stdout as a pipe and its stderr into the file ``errors``."""
    return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=errors)


def _stop_decoding(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()


def _check_complete(path: Path, decoded: float, declared: float | None) -> None:
    if declared and declared > 1.0 and decoded < TRUNCATION_TOLERANCE * declared:
        raise InputError(
            f"{path}: truncated or damaged: decoded {decoded:.1f} s of the {declared:.1f} s the file declares"
        )


def extract_audio(path: Path, *, audio_track: int = 0, channels: str = AUTO) -> Audio:
    """Decode audio stream ``audio_track`` (0 = first) of ``path`` to 16 kHz mono float32, all at once; of a
    multichannel stream, the channel ``--channels channels`` chooses (``channels.choose_channel``; ``Audio.channel``).

    Returns an ``Audio`` with ``samples`` of shape ``(n,)``. Raises ``InputError`` for a missing, unreadable or
    non-media file, an input without that audio stream, a decode failure, and a file that decodes to less than
    ``TRUNCATION_TOLERANCE`` of its declared duration (truncated); ``ChannelError`` (exit 2) for a channel the
    stream lacks; ``MissingRequirementError`` without ffmpeg.
    ``stream_audio`` gives the same samples in pieces, with memory that does not grow with the duration.
    """
    pieces = list(stream_audio(path, audio_track=audio_track, piece_seconds=None, channels=channels))
    return pieces[0]


def stream_audio(
    path: Path, *, audio_track: int = 0, piece_seconds: float | None = PIECE_SECONDS, channels: str = AUTO
) -> Generator[Audio, None, None]:
    """Decode like ``extract_audio``, yielding consecutive pieces of at most ``piece_seconds`` (``None``: one piece).

    Each piece is an ``Audio`` whose ``offset`` is its start in the whole file (seconds); the last piece may be
    shorter, and a file with no samples gives one empty piece. ffmpeg writes into one buffer per piece, so
    memory holds one piece, not the whole file. The truncation check runs when the stream ends: a truncated
    file raises ``InputError`` after its last piece, before anything is written. ffmpeg is stopped when the
    caller stops early (``close()``, an exception, Ctrl-C).

    The downmix, what nearly every file gets, starts decoding while ffprobe reads the file: starting ffmpeg and
    ffprobe costs about 0.15 s each on two cores, more than decoding ten minutes of audio. When the probe decides
    on another command (one channel of a film mix) or fails, that process is stopped and its output dropped.
    """
    path = Path(path)
    bytes_per_piece = None if piece_seconds is None else int(piece_seconds * SAMPLE_RATE) * 4
    with tempfile.TemporaryFile() as errors:  # a file, not a pipe: ffmpeg cannot block on a full stderr pipe
        early = _start_decoding(_decode_command(check_input(path), audio_track, None), errors)
        try:
            declared, cmd, channel = _open(path, audio_track, channels)
        except BaseException:
            _stop_decoding(early)
            raise
        if cmd == early.args:
            yield from _pieces(path, early, errors, bytes_per_piece, declared, channel)
            return
        _stop_decoding(early)
    with tempfile.TemporaryFile() as errors:
        proc = _start_decoding(cmd, errors)
        yield from _pieces(path, proc, errors, bytes_per_piece, declared, channel)


def _pieces(
    path: Path,
    proc: subprocess.Popen,
    errors,  # noqa: ANN001 - the binary file that holds ffmpeg's stderr
    bytes_per_piece: int | None,
    declared: float | None,
    channel: ChannelUse,
) -> Generator[Audio, None, None]:
    """``stream_audio``'s pieces from the running ffmpeg ``proc``, which is stopped when the caller stops early.
    For ``channel`` ``phantom`` ffmpeg writes both channels (``_decode_command(stereo=True)``) and the pieces are
    their phantom centre (``channels.PhantomCentre``), of the lengths and times the downmix's would have."""
    stdout = proc.stdout
    assert stdout is not None  # stdout=PIPE

    def stop(timed_out: threading.Event) -> None:
        timed_out.set()
        proc.kill()

    def read(size: int | None) -> bytes:
        # A time limit on ffmpeg's own work: each read may wait at most DECODE_TIMEOUT_S for ffmpeg.
        timed_out = threading.Event()
        watchdog = threading.Timer(DECODE_TIMEOUT_S, stop, args=(timed_out,))
        watchdog.start()
        try:
            data = stdout.read(size) if size else stdout.read()
        finally:
            watchdog.cancel()
        if timed_out.is_set():
            raise InputError(f"{path}: ffmpeg timed out after {DECODE_TIMEOUT_S:.0f} s without output")
        return data

    def piece(samples: np.ndarray, offset_samples: int) -> Audio:
        return Audio(
            samples=samples,
            sample_rate=SAMPLE_RATE,
            source=path,
            container_duration=declared,
            offset=offset_samples / SAMPLE_RATE,
            channel=channel,
        )

    try:
        offset_samples = 0
        if channel.used == PHANTOM:
            for samples in _centre_samples(read, bytes_per_piece):
                yield piece(samples, offset_samples)
                offset_samples += len(samples)
        else:
            while True:
                data = read(bytes_per_piece)
                usable = len(data) - len(data) % 4
                if usable == 0 and offset_samples > 0:
                    break
                samples = np.frombuffer(data, dtype=np.float32, count=usable // 4).copy()  # writable, for torch
                del data
                yield piece(samples, offset_samples)
                offset_samples += len(samples)
                if bytes_per_piece is None or usable < bytes_per_piece:
                    break
        if proc.wait() != 0:
            errors.seek(0)
            raise InputError(f"{path}: ffmpeg could not decode the audio ({last_error_line(errors.read())})")
        _check_complete(path, offset_samples / SAMPLE_RATE, declared)
        errors.seek(0)
        warning = errors.read().strip()
        if warning:
            log.warning("%s: ffmpeg reported: %s", path, last_error_line(warning))
    finally:
        _stop_decoding(proc)


def _centre_samples(read: Callable[[int | None], bytes], bytes_per_piece: int | None) -> Iterator[np.ndarray]:
    """The phantom centre (``channels.PhantomCentre``) of the interleaved two-channel float32 that ``read(size)``
    gives (``size`` bytes at most, ``None``: all), in pieces of ``bytes_per_piece / 4`` samples (``None``: one
    piece), the last one shorter; one empty piece for an empty stream."""
    extractor = PhantomCentre()
    size = None if bytes_per_piece is None else bytes_per_piece // 4
    pending = np.zeros(0, dtype=np.float32)  # centre samples made and not yet given
    given = False
    while True:
        data = read(None if bytes_per_piece is None else 2 * bytes_per_piece)
        usable = len(data) - len(data) % 8
        end = bytes_per_piece is None or usable < 2 * bytes_per_piece
        made = extractor.push(np.frombuffer(data, dtype=np.float32, count=usable // 4).reshape(-1, 2))
        del data
        pending = np.concatenate([pending, made, extractor.finish() if end else made[:0]])
        while size is not None and len(pending) >= size:
            yield pending[:size].copy()
            given = True
            pending = pending[size:]
        if end:
            if len(pending) or not given:
                yield np.ascontiguousarray(pending, dtype=np.float32)
            return
