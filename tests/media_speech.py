"""Synthetic conversations for speaker diarization: espeak-ng voices, turns laid end to end, and the exact
reference (RTTM) from the trimmed duration of each utterance. Used by the diarization tests (the clustering
threshold was tuned on such conversations, docs/diarization.md); nothing is committed or downloaded.

Two espeak-ng voices that differ only slightly are heard as one speaker by a speaker-embedding model; the
voices below differ in espeak voice, variant and pitch, and some are shifted further with ``sox pitch``
(docs/models.md, "Speech to test on").
"""

from __future__ import annotations

import re
import subprocess
import wave
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

SAMPLE_RATE = 16_000  # Hz
SILENCE_LEVEL = 1e-3  # |sample| at or below this (about -60 dBFS) counts as silence when trimming


@dataclass(frozen=True)
class Voice:
    """One synthetic speaker: ``label`` in the reference, espeak-ng ``voice`` (with ``+variant``), espeak
    ``pitch`` (0-99) and ``speed`` (words per minute), then ``sox pitch`` by ``shift`` cents (0: none)."""

    label: str
    voice: str
    pitch: int = 50
    speed: int = 160
    shift: int = 0


# Pairs that a speaker-embedding model hears as different people; A/B are the tests' pair.
VOICE_A = Voice("A", "en-us+m3", pitch=35, speed=165)
VOICE_B = Voice("B", "en-gb+f4", pitch=70, speed=150, shift=300)
VOICE_C = Voice("C", "en-gb-scotland+m7", pitch=45, speed=175, shift=-200)
VOICE_D = Voice("D", "en-029+f2", pitch=60, speed=140, shift=150)


@dataclass(frozen=True)
class Conversation:
    """A generated conversation: the 16 kHz mono 16-bit ``wav``, its reference ``rttm`` (``uri`` = the wav's
    stem) and its speech ``turns`` ``(start, end, label)`` in seconds (one per sentence), exact to the sample."""

    wav: Path
    rttm: Path
    turns: tuple[tuple[float, float, str], ...]
    duration: float

    @property
    def labels(self) -> tuple[str, ...]:
        """Speaker labels in order of first appearance."""
        return tuple(dict.fromkeys(label for _, _, label in self.turns))


def read_wav(path: Path) -> np.ndarray:
    """A 16-bit mono WAV as float32 samples in [-1, 1]; its sample rate must be 16 kHz."""
    with wave.open(str(path), "rb") as f:
        if f.getnchannels() != 1 or f.getsampwidth() != 2 or f.getframerate() != SAMPLE_RATE:
            raise ValueError(f"{path}: expected 16 kHz mono 16-bit PCM")
        data = f.readframes(f.getnframes())
    return np.frombuffer(data, dtype="<i2").astype(np.float32) / 32768.0


def write_wav(path: Path, samples: np.ndarray) -> Path:
    """Write float samples in [-1, 1] as a 16 kHz mono 16-bit WAV."""
    pcm = np.clip(np.round(samples * 32767.0), -32768, 32767).astype("<i2")
    with wave.open(str(path), "wb") as f:
        f.setnchannels(1)
        f.setsampwidth(2)
        f.setframerate(SAMPLE_RATE)
        f.writeframes(pcm.tobytes())
    return path


def utterance(text: str, voice: Voice, work_dir: Path) -> np.ndarray:
    """``text`` spoken by ``voice``: 16 kHz float32 samples with leading and trailing silence trimmed."""
    work_dir.mkdir(parents=True, exist_ok=True)
    raw, out = work_dir / "utterance.raw.wav", work_dir / "utterance.wav"
    subprocess.run(
        ["espeak-ng", "-v", voice.voice, "-p", str(voice.pitch), "-s", str(voice.speed), "-w", str(raw), text],
        check=True,
        capture_output=True,
    )
    effects = ["pitch", str(voice.shift)] if voice.shift else []
    subprocess.run(
        ["sox", "-q", str(raw), "-r", str(SAMPLE_RATE), "-c", "1", "-b", "16", str(out), *effects],
        check=True,
        capture_output=True,
    )
    samples = read_wav(out)
    loud = np.flatnonzero(np.abs(samples) > SILENCE_LEVEL)
    if len(loud) == 0:
        raise ValueError(f"espeak-ng produced silence for {text!r}")
    return samples[loud[0] : loud[-1] + 1]


def sentences(text: str) -> list[str]:
    """``text`` cut after each ``.``, ``?`` or ``!``."""
    return [part for part in re.split(r"(?<=[.?!])\s+", text.strip()) if part]


def conversation(
    script: Sequence[tuple[Voice, str]],
    target: Path,
    gaps: Sequence[float] = (0.6,),
    lead: float = 0.5,
    sentence_gap: float = 0.35,
) -> Conversation:
    """Speak ``script`` (voice, text) turn after turn into ``target`` (.wav) and write ``target`` .rttm.

    Each sentence is synthesised on its own and trimmed, so the reference is exact: one RTTM line per
    sentence, from its first to its last sample above ``SILENCE_LEVEL``. Sentences of a turn are
    ``sentence_gap`` seconds apart; turn k is followed by ``gaps[k % len(gaps)]`` seconds of silence;
    ``lead`` seconds open the file. Pauses inside a sentence (espeak-ng: up to about 0.2 s) count as speech,
    as in NIST's convention of splitting speaker segments only at pauses of 0.3 s or more.
    """
    pieces = [np.zeros(round(lead * SAMPLE_RATE), dtype=np.float32)]
    turns, position = [], len(pieces[0])
    work = target.parent / f".{target.stem}"
    for k, (voice, text) in enumerate(script):
        parts = sentences(text)
        for n, sentence in enumerate(parts):
            speech = utterance(sentence, voice, work)
            turns.append((position / SAMPLE_RATE, (position + len(speech)) / SAMPLE_RATE, voice.label))
            pause = sentence_gap if n < len(parts) - 1 else gaps[k % len(gaps)]
            gap = np.zeros(round(pause * SAMPLE_RATE), dtype=np.float32)
            pieces += [speech, gap]
            position += len(speech) + len(gap)
    samples = np.concatenate(pieces)
    write_wav(target, samples)
    rttm = target.with_suffix(".rttm")
    rttm.write_text(
        "".join(
            f"SPEAKER {target.stem} 1 {start:.6f} {end - start:.6f} <NA> <NA> {label} <NA> <NA>\n"
            for start, end, label in turns
        )
    )
    return Conversation(target, rttm, tuple(turns), len(samples) / SAMPLE_RATE)


# The tests' two-voice clip. The threshold's tuning used other sentences (docs/diarization.md).
TEST_SCRIPT = (
    (VOICE_A, "Good morning and welcome to the weekly planning meeting."),
    (VOICE_B, "Thank you. I would like to start with the budget for the spring campaign."),
    (VOICE_A, "Of course. How much money do we have left this quarter?"),
    (VOICE_B, "About forty thousand, which should cover printing and the radio spots."),
    (VOICE_A, "That sounds reasonable. What about the new website?"),
    (VOICE_B, "The designers promised a first version before the end of the month."),
    (VOICE_A, "Good. Please send me the schedule when you have it."),
    (VOICE_B, "I will. Is there anything else we need to decide today?"),
    (VOICE_A, "No, I think that covers everything. Thank you all for coming."),
)


def two_voice_clip(target: Path) -> Conversation:
    """The tests' two-voice conversation (about 40 s): speakers A and B alternate, nine turns."""
    return conversation(TEST_SCRIPT, target, gaps=(0.7, 0.5, 0.9))
