"""A real two-speaker conversation with quick turn-taking: pyannote's ``sample.wav`` cut into its 13 transcribed
utterances (``sample.stm``) and put together again in another order, with short pauses between them.

The speech is real (a telephone call) and the reference follows it by construction: each utterance keeps the
speaker and the words the STM gives it, at the place where it was put (the ``.stm``, for word and speaker
attribution), and the speaker turns of ``sample.rttm`` that fall inside its cut, overlapped speech and
back-channels of the other speaker included, move with it (the ``.rttm``, for diarization). Speaker changes come every one to three
seconds, with 0.2 to 0.8 s pauses: the case that is hard for speaker diarization and for word-to-speaker
assignment. Deterministic (seeded), generated on the fly, nothing committed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tests.media import SAMPLE_RTTM, SAMPLE_STM, SAMPLE_WAV
from tests.media_speech import SAMPLE_RATE, read_wav, write_wav

GAPS = (0.2, 0.8)  # seconds of silence between two utterances, drawn uniformly
LEAD = 0.5  # seconds of silence before the first utterance and after the last


@dataclass(frozen=True)
class Utterance:
    """One STM line: ``speaker`` says ``text`` from ``start`` to ``end`` (seconds)."""

    speaker: str
    start: float
    end: float
    text: str


@dataclass(frozen=True)
class Rearranged:
    """The re-arranged conversation: 16 kHz mono ``wav``, its reference ``rttm`` and ``stm`` (``uri`` is the wav's
    stem) and the ``utterances`` at their new times."""

    wav: Path
    rttm: Path
    stm: Path
    utterances: tuple[Utterance, ...]

    @property
    def uri(self) -> str:
        return self.wav.stem

    @property
    def duration(self) -> float:
        return self.utterances[-1].end + LEAD

    @property
    def text(self) -> str:
        """The words in time order."""
        return " ".join(u.text for u in self.utterances)


def sample_utterances() -> tuple[Utterance, ...]:
    """The utterances of ``sample.stm`` (fields: file channel speaker start end text), in time order."""
    rows = []
    for line in SAMPLE_STM.read_text().splitlines():
        parts = line.split(None, 5)
        if len(parts) == 6:
            rows.append(Utterance(parts[2], float(parts[3]), float(parts[4]), parts[5]))
    return tuple(sorted(rows, key=lambda u: u.start))


def rearranged_sample(target: Path, seed: int = 3) -> Rearranged:
    """Write the re-arranged conversation to ``target`` (a ``.wav`` path) with ``.rttm`` and ``.stm`` beside it.

    The utterances are shuffled with ``random.Random(seed)`` until no speaker keeps the floor for more than two
    utterances in a row and the first utterance is not the original first, then laid end to end.
    """
    rng = random.Random(seed)
    samples = read_wav(SAMPLE_WAV)
    originals = list(sample_utterances())
    while True:
        order = originals[:]
        rng.shuffle(order)
        runs = max_run([u.speaker for u in order])
        if runs <= 2 and order[0] != originals[0]:
            break
    turns = sample_turns()
    pieces, placed, moved, t = [np.zeros(int(LEAD * SAMPLE_RATE), dtype=np.float32)], [], [], LEAD
    for k, u in enumerate(order):
        cut = samples[int(round(u.start * SAMPLE_RATE)): int(round(u.end * SAMPLE_RATE))]
        placed.append(Utterance(u.speaker, round(t, 3), round(t + len(cut) / SAMPLE_RATE, 3), u.text))
        for start, end, speaker in turns:
            start, end = max(start, u.start), min(end, u.end)
            if end - start > 0.01:
                moved.append((round(t + start - u.start, 3), round(t + end - u.start, 3), speaker))
        pieces.append(cut)
        t += len(cut) / SAMPLE_RATE
        gap = rng.uniform(*GAPS) if k < len(order) - 1 else LEAD
        pieces.append(np.zeros(int(round(gap * SAMPLE_RATE)), dtype=np.float32))
        t = t + len(pieces[-1]) / SAMPLE_RATE
    write_wav(target, np.concatenate(pieces))
    uri = target.stem
    rttm = target.with_suffix(".rttm")
    rttm.write_text("".join(
        f"SPEAKER {uri} 1 {start:.3f} {end - start:.3f} <NA> <NA> {speaker} <NA> <NA>\n"
        for start, end, speaker in sorted(moved)
    ))
    stm = target.with_suffix(".stm")
    stm.write_text("".join(f"{uri} 1 {u.speaker} {u.start:.3f} {u.end:.3f} {u.text}\n" for u in placed))
    return Rearranged(target, rttm, stm, tuple(placed))


def sample_turns() -> list[tuple[float, float, str]]:
    """The speaker turns of ``sample.rttm`` as (start, end, speaker) seconds, with the STM's speaker names."""
    names = {"speaker90": "Diane", "speaker91": "Sheila"}  # by overlap with sample.stm's utterances
    turns = []
    for line in SAMPLE_RTTM.read_text().splitlines():
        f = line.split()
        if len(f) >= 8 and f[0] == "SPEAKER":
            turns.append((float(f[3]), float(f[3]) + float(f[4]), names.get(f[7], f[7])))
    return turns


def max_run(labels: list[str]) -> int:
    """The longest run of one label in a row."""
    best = run = 0
    for k, label in enumerate(labels):
        run = run + 1 if k and label == labels[k - 1] else 1
        best = max(best, run)
    return best
