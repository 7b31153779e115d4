"""Voices for the voice library's tests and ``bench/voices.py``: pyannote's ``sample.wav`` speakers split into
enrolment, tuning and held-out utterances, other real and synthetic voices that are never enrolled, and conversations
laid out from them with the exact reference of who speaks when. Same arguments, same bytes; nothing is downloaded.

- **Enrolled voices**: Diane and Sheila, the two people of ``sample.wav`` (``sample.stm``: 8 and 5 utterances). Their
  utterances are split once, by index in time order (:data:`SPLIT`): ``enrol`` (what the library is made from),
  ``tuning`` (what the threshold is chosen on) and ``held-out`` (what it is reported on; no tuning step reads it).
- **Voices not in the library**: the read clips of ``pytest-audioeval`` (one speaker per language group: the
  Spanish, Polish and Portuguese clips are one voice, so they stay in one split) and espeak-ng voices
  (``tests.media_speech``); :data:`OTHERS` splits them between tuning and held-out too.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tests.media import SAMPLE_WAV
from tests.media_conversation import read_stm
from tests.media_speech import SAMPLE_RATE, VOICE_A, VOICE_B, VOICE_C, VOICE_D, Voice, read_wav, utterance, write_wav

# Indexes of each speaker's utterances (time order in sample.stm) per split. Diane: 0.48 0.44 0.88 1.76 1.64 2.32
# 1.30 1.54 s; Sheila: 0.52 0.94 3.33 2.04 4.37 s. Enrolment takes long utterances (4.1 s and 4.4 s of speech).
SPLIT = {
    "Diane": {"enrol": (3, 5), "tuning": (0, 1, 4), "held-out": (2, 6, 7)},
    "Sheila": {"enrol": (4,), "tuning": (2,), "held-out": (0, 1, 3)},
}
AUDIOEVAL = {"tuning": ("en", "es", "pl", "pt", "hi"), "held-out": ("fr", "it", "ja", "zh")}
ESPEAK = {"tuning": (VOICE_A, VOICE_B), "held-out": (VOICE_C, VOICE_D)}
ESPEAK_TEXT = (
    "Good morning, and welcome back to the show.",
    "Today we talk about the weather in the north of the country.",
    "It has rained for three days, and the rivers are high.",
)


@dataclass(frozen=True)
class Line:
    """One utterance to lay out: ``speaker`` (the reference label) and its 16 kHz ``samples``."""

    speaker: str
    samples: np.ndarray


@dataclass(frozen=True)
class Laid:
    """A conversation written to ``wav``: ``turns`` ``(start, end, speaker)`` in seconds, exact to the sample."""

    wav: Path
    turns: tuple[tuple[float, float, str], ...]

    @property
    def speakers(self) -> tuple[str, ...]:
        """Reference speakers in order of first appearance."""
        return tuple(dict.fromkeys(s for _, _, s in self.turns))


def sample_lines(speaker: str, split: str) -> list[Line]:
    """``speaker``'s (``Diane``, ``Sheila``) utterances of ``split`` (``enrol``, ``tuning``, ``held-out``)."""
    source = read_wav(SAMPLE_WAV)
    own = [u for u in read_stm() if u.speaker == speaker]
    return [
        Line(speaker, source[round(own[k].start * SAMPLE_RATE) : round(own[k].end * SAMPLE_RATE)])
        for k in SPLIT[speaker][split]
    ]


def enrol_ranges(speaker: str) -> list[tuple[float, float]]:
    """The ``(start, end)`` seconds of ``speaker``'s enrolment utterances in ``sample.wav``."""
    own = [u for u in read_stm() if u.speaker == speaker]
    return [(own[k].start, own[k].end) for k in SPLIT[speaker]["enrol"]]


def audioeval_lines(language: str) -> list[Line]:
    """The pytest-audioeval clips of ``language`` (one voice), labelled ``audioeval-<language>``."""
    from tests.media_multilingual import clips

    return [Line(f"audioeval-{language}", c.samples) for c in clips([language]).values()]


def espeak_lines(voice: Voice, work_dir: Path) -> list[Line]:
    """:data:`ESPEAK_TEXT` read by ``voice``, labelled ``espeak-<label>``."""
    return [Line(f"espeak-{voice.label}", utterance(text, voice, work_dir)) for text in ESPEAK_TEXT]


def other_voices(split: str, work_dir: Path) -> list[list[Line]]:
    """The voices not in the library of ``split``: each a list of its lines."""
    voices = [audioeval_lines(language) for language in AUDIOEVAL[split] if language not in ("pl", "pt")]
    if split == "tuning":  # Spanish, Polish and Portuguese are one voice
        voices = [
            v + (audioeval_lines("pl") + audioeval_lines("pt") if v[0].speaker == "audioeval-es" else [])
            for v in voices
        ]
    return voices + [espeak_lines(v, work_dir) for v in ESPEAK[split]]


def lay_out(lines: Sequence[Line], target: Path, seed: int, first: str | None = None, gaps=(0.3, 0.9)) -> Laid:
    """``lines`` shuffled with ``random.Random(seed)`` (until ``first``, when given, speaks first), laid end to end
    with pauses drawn from ``gaps`` seconds and 0.5 s of silence at each end, written to ``target`` (16-bit WAV)."""
    rng = random.Random(seed)
    order = list(range(len(lines)))
    for _ in range(1000):
        rng.shuffle(order)
        if first is None or lines[order[0]].speaker == first:
            break
    pieces, turns, position = [np.zeros(SAMPLE_RATE // 2, dtype=np.float32)], [], SAMPLE_RATE // 2
    for k in order:
        samples = lines[k].samples.astype(np.float32)
        turns.append((position / SAMPLE_RATE, (position + len(samples)) / SAMPLE_RATE, lines[k].speaker))
        pause = np.zeros(round(rng.uniform(*gaps) * SAMPLE_RATE), dtype=np.float32)
        pieces += [samples, pause]
        position += len(samples) + len(pause)
    pieces.append(np.zeros(SAMPLE_RATE // 2, dtype=np.float32))
    write_wav(target, np.concatenate(pieces))
    return Laid(target, tuple(turns))


def truth(laid: Laid, turns: Sequence[tuple[float, float, str]]) -> dict[str, str]:
    """Each diarized speaker of ``turns`` ``(start, end, label)`` -> the reference speaker it overlaps most."""
    overlap: dict[str, dict[str, float]] = {}
    for start, end, label in turns:
        for a, b, speaker in laid.turns:
            seconds = min(end, b) - max(start, a)
            if seconds > 0:
                overlap.setdefault(label, {}).setdefault(speaker, 0.0)
                overlap[label][speaker] += seconds
    return {label: max(by, key=by.__getitem__) for label, by in overlap.items()}
