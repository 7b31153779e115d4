#!/usr/bin/env python3
"""Generate the benchmark audio: a 10-minute clip of varied English speech with an exact transcript, and a
sparse 3-hour file built from it.

    python bench/long_clip.py OUT_DIR            # OUT_DIR/long_clip.{wav,txt,json}
    python bench/long_clip.py OUT_DIR --sparse 3  # and OUT_DIR/sparse_3h.flac (+ .txt)

The clip alternates sentences spoken by espeak-ng in seven voices, speeds and pitches
(``bench/long_clip_sentences.txt``) with pyannote's real two-speaker telephone sample (``sample.wav``, its
words from ``sample.stm``), separated by pauses of 0.6 to 3.6 s. Everything is deterministic (fixed seed), so the
same machine gives the same file. The sparse file is mostly silence: the clip's utterances, spread over hours
with pauses of one to several minutes (``--sparse HOURS``), written as FLAC to keep it small.

Needs espeak-ng and sox on PATH and the pyannote.audio package (only its sample files are read).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import subprocess
import tempfile
import wave
from pathlib import Path

import numpy as np

SAMPLE_RATE = 16_000  # Hz
HERE = Path(__file__).resolve().parent
SENTENCES = HERE / "long_clip_sentences.txt"
# (espeak-ng voice, words per minute, pitch 0-99): British, American, Scottish, Caribbean, RP, regional; two female
VOICES = (
    ("en-us", 165, 50),
    ("en-gb", 155, 40),
    ("en-us+f3", 170, 60),
    ("en-gb-scotland", 150, 45),
    ("en-029+f2", 160, 55),
    ("en-gb-x-rp+m3", 175, 35),
    ("en-gb-x-gbclan", 145, 50),
)
REAL_EVERY = 17  # a real-speech sample after this many sentences
SEED = 20250625


def pyannote_sample() -> tuple[Path, Path]:
    """``sample.wav`` and ``sample.stm`` from the installed pyannote.audio wheel (found without importing it)."""
    spec = importlib.util.find_spec("pyannote.audio")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("pyannote.audio is not installed: its sample.wav is part of the clip")
    folder = Path(next(iter(spec.submodule_search_locations))) / "sample"
    return folder / "sample.wav", folder / "sample.stm"


def stm_text(stm: Path) -> str:
    """The words of an STM file (file channel speaker start end text), in time order."""
    rows = []
    for line in stm.read_text(encoding="utf-8").splitlines():
        parts = line.split(None, 5)
        if len(parts) == 6 and not line.startswith(";;"):
            rows.append((float(parts[3]), parts[5]))
    return " ".join(text for _, text in sorted(rows))


def read_wav(path: Path) -> np.ndarray:
    """16-bit mono 16 kHz WAV -> float32 samples in [-1, 1]."""
    with wave.open(str(path)) as w:
        if (w.getframerate(), w.getnchannels(), w.getsampwidth()) != (SAMPLE_RATE, 1, 2):
            raise ValueError(f"{path}: expected 16 kHz mono 16-bit PCM")
        return np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16).astype(np.float32) / 32768.0


def write_wav(path: Path, samples: np.ndarray) -> None:
    """float32 samples -> 16-bit mono 16 kHz WAV."""
    pcm = (np.clip(samples, -1.0, 1.0) * 32767.0).astype(np.int16)
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(SAMPLE_RATE)
        w.writeframes(pcm.tobytes())


def speak(text: str, voice: str, wpm: int, pitch: int, tmp: Path) -> np.ndarray:
    """``text`` spoken by espeak-ng, resampled to 16 kHz mono by sox, leading and trailing silence trimmed."""
    raw, out = tmp / "raw.wav", tmp / "out.wav"
    subprocess.run(["espeak-ng", "-v", voice, "-s", str(wpm), "-p", str(pitch), "-w", str(raw), text], check=True)
    subprocess.run(
        [
            "sox",
            "-q",
            str(raw),
            "-r",
            str(SAMPLE_RATE),
            "-c",
            "1",
            "-b",
            "16",
            str(out),
            "norm",
            "-1",
            "silence",
            "1",
            "0.02",
            "0.5%",
            "reverse",
            "silence",
            "1",
            "0.02",
            "0.5%",
            "reverse",
        ],
        check=True,
    )
    return read_wav(out)


def make_clip(out_dir: Path) -> tuple[np.ndarray, list[dict]]:
    """The 10-minute clip and its utterances (``start``, ``end`` seconds, ``text``, ``source``)."""
    rng = random.Random(SEED)
    sentences = [s for s in SENTENCES.read_text(encoding="utf-8").splitlines() if s and not s.startswith("#")]
    sample_wav, sample_stm = pyannote_sample()
    real, real_text = read_wav(sample_wav), stm_text(sample_stm)
    parts: list[np.ndarray] = []
    utterances: list[dict] = []
    t = 0.0

    def add(samples: np.ndarray, text: str, source: str) -> None:
        nonlocal t
        pause = np.zeros(int(rng.uniform(0.6, 3.6) * SAMPLE_RATE), np.float32)
        parts.extend([pause, samples])
        t += len(pause) / SAMPLE_RATE
        utterances.append(
            {"start": round(t, 3), "end": round(t + len(samples) / SAMPLE_RATE, 3), "text": text, "source": source}
        )
        t += len(samples) / SAMPLE_RATE

    with tempfile.TemporaryDirectory() as tmp:
        for i, sentence in enumerate(sentences):
            if i % REAL_EVERY == 0:
                add(real, real_text, "pyannote sample.wav")
            voice, wpm, pitch = VOICES[i % len(VOICES)]
            add(speak(sentence, voice, wpm, pitch, Path(tmp)), sentence, f"espeak-ng {voice} {wpm} wpm")
    parts.append(np.zeros(SAMPLE_RATE, np.float32))
    return np.concatenate(parts), utterances


def make_sparse(clip: np.ndarray, utterances: list[dict], hours: float, path: Path) -> list[dict]:
    """Write ``hours`` of mostly silence holding the clip's utterances, with pauses of 45 s to 4 min, as FLAC (sox).

    The file is written piece by piece through sox's stdin, so it never exists in memory whole.
    """
    rng = random.Random(SEED + 1)
    total = int(hours * 3600 * SAMPLE_RATE)
    placed: list[dict] = []
    cmd = [
        "sox",
        "-q",
        "-t",
        "raw",
        "-r",
        str(SAMPLE_RATE),
        "-e",
        "signed",
        "-b",
        "16",
        "-c",
        "1",
        "-",
        "-t",
        "flac",
        str(path),
    ]
    with subprocess.Popen(cmd, stdin=subprocess.PIPE) as sox:
        written = 0

        def put(samples: np.ndarray) -> None:
            nonlocal written
            sox.stdin.write((np.clip(samples, -1, 1) * 32767).astype(np.int16).tobytes())
            written += len(samples)

        for u in utterances:
            gap = int(rng.uniform(45, 240) * SAMPLE_RATE)
            piece = clip[int(u["start"] * SAMPLE_RATE) : int(u["end"] * SAMPLE_RATE)]
            if written + gap + len(piece) > total:
                break
            for i in range(0, gap, 60 * SAMPLE_RATE):
                put(np.zeros(min(60 * SAMPLE_RATE, gap - i), np.float32))
            placed.append(
                {**u, "start": round(written / SAMPLE_RATE, 3), "end": round((written + len(piece)) / SAMPLE_RATE, 3)}
            )
            put(piece)
        while written < total:
            put(np.zeros(min(60 * SAMPLE_RATE, total - written), np.float32))
        sox.stdin.close()
    if sox.returncode:
        raise SystemExit(f"sox failed with exit code {sox.returncode}")
    return placed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument(
        "--sparse",
        type=float,
        default=0.0,
        metavar="HOURS",
        help="also write a sparse file of this many hours (sparse_<H>h.flac)",
    )
    args = parser.parse_args()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    wav = args.out_dir / "long_clip.wav"
    meta = args.out_dir / "long_clip.json"
    if wav.is_file() and meta.is_file():
        clip, utterances = read_wav(wav), json.loads(meta.read_text())["utterances"]
    else:
        clip, utterances = make_clip(args.out_dir)
        write_wav(wav, clip)
        meta.write_text(json.dumps({"duration": len(clip) / SAMPLE_RATE, "utterances": utterances}, indent=1))
        (args.out_dir / "long_clip.txt").write_text(" ".join(u["text"] for u in utterances) + "\n")
    print(f"{wav}: {len(clip) / SAMPLE_RATE:.1f} s, {len(utterances)} utterances")
    if args.sparse:
        name = f"sparse_{args.sparse:g}h"
        flac = args.out_dir / f"{name}.flac"
        if not flac.is_file():
            placed = make_sparse(clip, utterances, args.sparse, flac)
            (args.out_dir / f"{name}.json").write_text(json.dumps({"utterances": placed}, indent=1))
            (args.out_dir / f"{name}.txt").write_text(" ".join(u["text"] for u in placed) + "\n")
        print(f"{flac}: {args.sparse:g} h")


if __name__ == "__main__":
    main()
