"""Test media, generated on the fly: real speech from pyannote's wheel, synthetic speech from espeak-ng,
containers and broken files from ffmpeg. Nothing here is committed or downloaded."""

from __future__ import annotations

import importlib.util
import re
import subprocess
from pathlib import Path

# Located without importing pyannote.audio (its import loads torchaudio's extension, see docs/models.md).
SAMPLE_DIR = Path(next(iter(importlib.util.find_spec("pyannote.audio").submodule_search_locations))) / "sample"
SAMPLE_WAV = SAMPLE_DIR / "sample.wav"  # 30 s, 16 kHz mono, two speakers on a phone line (real speech)
SAMPLE_RTTM = SAMPLE_DIR / "sample.rttm"
SAMPLE_STM = SAMPLE_DIR / "sample.stm"


def ffmpeg(*args: str) -> None:
    """Run ffmpeg quietly with ``args``; raises ``CalledProcessError`` on failure."""
    subprocess.run(["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y", *args], check=True)


def video_from_audio(audio: Path, target: Path, *, extra: tuple[str, ...] = ()) -> Path:
    """Mux ``audio`` under a test pattern into ``target`` (container from its extension)."""
    ffmpeg(
        "-f",
        "lavfi",
        "-i",
        "testsrc2=size=320x240:rate=10",
        "-i",
        str(audio),
        "-shortest",
        "-c:v",
        "libvpx" if target.suffix == ".webm" else "libx264" if target.suffix != ".avi" else "mpeg4",
        *(["-pix_fmt", "yuv420p"] if target.suffix != ".webm" else []),
        *extra,
        str(target),
    )
    return target


def video_without_audio(target: Path, seconds: float = 2.0) -> Path:
    ffmpeg(
        "-f",
        "lavfi",
        "-i",
        f"testsrc2=size=320x240:rate=10:duration={seconds}",
        "-c:v",
        "libx264",
        "-pix_fmt",
        "yuv420p",
        str(target),
    )
    return target


def espeak(text: str, target: Path, voice: str = "en-us", speed: int = 160, pitch: int = 50) -> Path:
    """Speak ``text`` with espeak-ng into a 16 kHz mono WAV."""
    raw = target.with_suffix(".raw.wav")
    subprocess.run(["espeak-ng", "-v", voice, "-s", str(speed), "-p", str(pitch), "-w", str(raw), text], check=True)
    subprocess.run(["sox", "-q", str(raw), "-r", "16000", "-c", "1", str(target)], check=True)
    raw.unlink()
    return target


def sample_reference_text() -> str:
    """The words of pyannote's ``sample.stm`` (fields: file channel speaker start end text), in time order."""
    rows = []
    for line in SAMPLE_STM.read_text().splitlines():
        parts = line.split(None, 5)
        if len(parts) == 6:
            rows.append((float(parts[3]), parts[5]))
    return " ".join(text for _, text in sorted(rows))


def normalize(text: str) -> str:
    """Lower case, punctuation removed (apostrophes kept), single spaces: the usual WER normalisation."""
    return " ".join(re.sub(r"[^\w' ]+", " ", text.lower()).split())
