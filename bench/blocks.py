"""Audio as a stream of blocks, for the bounded-memory benchmark: ffmpeg decodes to 16 kHz mono float32 on a pipe
and the reader yields fixed-size blocks, so a 3-hour file never sits in memory whole.

This is what ``transcribe_stream`` needs from ``whisper_subtitler.audio``: the same ffmpeg command and hardening
as ``extract_audio`` (``file:`` URL, protocol whitelist, ``-nostdin``), read from ``stdout`` in blocks instead of
all at once, with ffmpeg's error reported after the last block. Until ``audio.py`` offers it, it lives here.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import numpy as np

SAMPLE_RATE = 16_000  # Hz
BLOCK_S = 300.0  # seconds per block: 19 MB of float32


def read_blocks(path: Path, block_s: float = BLOCK_S) -> Iterator[np.ndarray]:
    """Float32 mono 16 kHz blocks of ``block_s`` seconds (the last one shorter) of ``path``'s first audio stream.

    Raises ``RuntimeError`` with ffmpeg's last error line when decoding fails.
    """
    cmd = ["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-protocol_whitelist", "file",
           "-i", f"file:{Path(path).absolute()}", "-map", "0:a:0", "-f", "f32le", "-acodec", "pcm_f32le",
           "-ac", "1", "-ar", str(SAMPLE_RATE), "pipe:"]
    block_bytes = int(block_s * SAMPLE_RATE) * 4
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL) as proc:
        while True:
            data = proc.stdout.read(block_bytes)
            if not data:
                break
            yield np.frombuffer(data[: len(data) // 4 * 4], dtype=np.float32).copy()
        stderr = proc.stderr.read()
        if proc.wait() != 0:
            lines = stderr.decode("utf-8", "replace").strip().splitlines()
            raise RuntimeError(f"{path}: ffmpeg failed: {lines[-1] if lines else 'unknown error'}")
