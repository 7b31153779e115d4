"""Videos with shot changes at known times, made with ffmpeg's test sources: hard cuts (``concat``) and dissolves
(``xfade``), with speech placed where a test wants it. Used by tests/test_shot_changes.py and bench/shots.py."""

from __future__ import annotations

import math
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np

from tests.media_speech import SAMPLE_RATE, VOICE_A, utterance, write_wav

# Test sources with motion of their own (a moving pattern, a counter, a running gradient), so that a shot is not a
# still picture; ``{s}`` is the size and rate.
SOURCES = (
    "testsrc2={s}",
    "smptehdbars={s}",
    "testsrc={s},hue=H=2*t",
    "rgbtestsrc={s},hue=H=t",
    "gradients={s}:speed=0.02",
    "mandelbrot={s}",
    "cellauto={s}:rule=110",
)


@dataclass(frozen=True)
class Shot:
    """One shot: an ffmpeg source (``{s}`` for size and rate), its length in seconds, and how the next shot comes
    in: ``cut`` or a dissolve of ``dissolve`` seconds (``xfade``)."""

    source: str
    seconds: float
    dissolve: float = 0.0


@dataclass(frozen=True)
class Reel:
    """A video made by ``reel``: its ``path``, hard ``cuts`` (seconds: the presentation time of the first frame of
    the new shot), ``dissolves`` ``(start, end)`` in seconds, ``fps`` (an ``int``, or a ``Fraction`` such as
    ``Fraction(30000, 1001)``) and ``duration``."""

    path: Path
    cuts: tuple[float, ...]
    dissolves: tuple[tuple[float, float], ...]
    fps: int | Fraction
    duration: float


def reel(
    target: Path,
    shots: Sequence[Shot],
    *,
    size: str = "320x180",
    fps: int | Fraction = 25,
    audio: Path | None = None,
    preset: str = "veryfast",
) -> Reel:
    """Join ``shots`` into an H.264 video ``target`` at ``fps`` (a ``Fraction`` for NTSC rates: 30000/1001) (with
    ``audio`` as AAC when given, cut to the picture's length); returns where its cuts and dissolves are."""
    spec = f"s={size}:r={fps}"
    parts = [
        f"{shot.source.format(s=spec)},trim=duration={shot.seconds},format=yuv420p,setsar=1,settb=AVTB[s{k}]"
        for k, shot in enumerate(shots)
    ]
    label = "s0"
    for k in range(1, len(shots)):
        fade = shots[k - 1].dissolve
        if fade:
            offset = sum(x.seconds - x.dissolve for x in shots[: k - 1]) + shots[k - 1].seconds - fade
            parts.append(f"[{label}][s{k}]xfade=transition=fade:duration={fade}:offset={offset}[v{k}]")
        else:
            parts.append(f"[{label}][s{k}]concat=n=2:v=1:a=0[v{k}]")
        label = f"v{k}"
    cmd = ["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y", "-filter_complex", ";".join(parts)]
    if audio is not None:
        cmd += ["-i", str(audio)]
    cmd += ["-map", f"[{label}]"] + (["-map", "0:a", "-c:a", "aac", "-shortest"] if audio is not None else [])
    cmd += ["-c:v", "libx264", "-preset", preset, "-pix_fmt", "yuv420p", str(target)]
    subprocess.run(cmd, check=True)
    return timeline(target, shots, fps)


def timeline(target: Path, shots: Sequence[Shot], fps: int | Fraction = 25) -> Reel:
    """Where the cuts and dissolves of ``shots`` fall once ``reel`` has joined them into ``target``. A shot lasts
    whole frames: ``trim`` keeps the frames that start within its ``seconds``, so at 30000/1001 fps a shot of 3.3366
    s is 100 frames and the cut after it falls at 100 x 1001/30000 = 3.336667 s."""
    rate = Fraction(fps)

    def seconds(shot: Shot) -> Fraction:  # the shot's length in whole frames, as trim cuts it
        return math.ceil(Fraction(shot.seconds) * rate) / rate

    length = seconds(shots[0])
    cuts: list[float] = []
    dissolves: list[tuple[float, float]] = []
    for k in range(1, len(shots)):
        fade = Fraction(shots[k - 1].dissolve)
        if fade:
            dissolves.append((round(float(length - fade), 6), round(float(length), 6)))
            length += seconds(shots[k]) - fade
        else:
            cuts.append(round(float(length), 6))
            length += seconds(shots[k])
    return Reel(target, tuple(cuts), tuple(dissolves), fps, float(length))


def speech_track(
    target: Path, lines: Sequence[tuple[float, str, str]], seconds: float, work_dir: Path
) -> dict[str, tuple[float, float]]:
    """A 16 kHz mono WAV ``target`` of ``seconds`` with each ``(time, text, anchor)`` of ``lines`` spoken by
    espeak-ng, starting at ``time`` (anchor ``start``) or ending there (``end``); returns ``{text: (start, end)}``,
    the speech's exact span in seconds."""
    samples = np.zeros(int(seconds * SAMPLE_RATE), dtype=np.float32)
    spans = {}
    for time, text, anchor in lines:
        voice = utterance(text, VOICE_A, work_dir)
        start = time - len(voice) / SAMPLE_RATE if anchor == "end" else time
        a = int(round(start * SAMPLE_RATE))
        samples[a : a + len(voice)] += voice[: len(samples) - a]
        spans[text] = (start, start + len(voice) / SAMPLE_RATE)
    write_wav(target, samples)
    return spans
