"""A real conversation re-arranged from pyannote's ``sample.wav``: its 13 timed utterances (``sample.stm``) cut out
and put together in another order, with seeded pauses between them, and the exact reference (STM and RTTM).

Used by the speaker-attribution measurements (``scripts/speaker_attribution.py``) and by the determinism test of the
temperature fallback; nothing is committed or downloaded. The speech is real (two people on a phone line), so the
words, the speaker changes and the diarization are those of real speech, but at other places than in the sample:
a rule tuned on ``sample.wav`` alone would not fit this one by chance.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tests.media import SAMPLE_STM, SAMPLE_WAV
from tests.media_speech import SAMPLE_RATE, read_wav, write_wav


@dataclass(frozen=True)
class Utterance:
    """One line of an STM file: ``speaker`` says ``text`` from ``start`` to ``end`` (seconds)."""

    speaker: str
    start: float
    end: float
    text: str


@dataclass(frozen=True)
class Rearranged:
    """A generated conversation: the 16 kHz mono 16-bit ``wav``, its reference ``stm`` and ``rttm`` (file name =
    the wav's stem) and its ``utterances`` with their times in the new file (seconds, exact to the sample)."""

    wav: Path
    stm: Path
    rttm: Path
    utterances: tuple[Utterance, ...]
    duration: float


def read_stm(path: Path = SAMPLE_STM) -> tuple[Utterance, ...]:
    """The utterances of an STM file (fields: file channel speaker start end text), in time order."""
    rows = []
    for line in path.read_text().splitlines():
        parts = line.split(None, 5)
        if len(parts) == 6 and not line.startswith(";;"):
            rows.append(Utterance(parts[2], float(parts[3]), float(parts[4]), parts[5]))
    return tuple(sorted(rows, key=lambda u: (u.start, u.end)))


def write_references(utterances: Sequence[Utterance], stem: str, stm: Path, rttm: Path) -> None:
    """Write ``utterances`` as an STM (one line each) and an RTTM (one speaker turn each) for file ``stem``."""
    stm.write_text("".join(f"{stem} 1 {u.speaker} {u.start:.3f} {u.end:.3f} {u.text}\n" for u in utterances))
    rttm.write_text(
        "".join(
            f"SPEAKER {stem} 1 {u.start:.3f} {u.end - u.start:.3f} <NA> <NA> {u.speaker} <NA> <NA>\n"
            for u in utterances
        )
    )


def rearranged_conversation(
    target: Path, seed: int = 0, gaps: tuple[float, float] = (0.2, 0.8), lead: float = 0.5, tail: float = 0.5
) -> Rearranged:
    """Cut ``sample.wav`` at its STM times, shuffle the utterances with ``random.Random(seed)`` and lay them end to
    end into ``target`` (.wav), with a pause drawn uniformly from ``gaps`` seconds between two utterances, ``lead``
    seconds of silence before the first and ``tail`` after the last. Writes ``target`` .stm and .rttm beside it.

    The order is drawn again until the first utterance's speaker differs from the original first one and no two
    utterances keep their original neighbour, so the result is another conversation, not the sample shifted.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    source = read_wav(SAMPLE_WAV)
    utterances = read_stm()
    rng = random.Random(seed)
    order = list(range(len(utterances)))
    for _ in range(1000):
        rng.shuffle(order)
        kept_neighbours = any(b == a + 1 for a, b in zip(order, order[1:]))
        if not kept_neighbours and utterances[order[0]].speaker != utterances[0].speaker:
            break
    pieces = [np.zeros(round(lead * SAMPLE_RATE), dtype=np.float32)]
    position = len(pieces[0])
    placed = []
    for k, i in enumerate(order):
        u = utterances[i]
        samples = source[round(u.start * SAMPLE_RATE) : round(u.end * SAMPLE_RATE)]
        placed.append(Utterance(u.speaker, position / SAMPLE_RATE, (position + len(samples)) / SAMPLE_RATE, u.text))
        pause = rng.uniform(*gaps) if k + 1 < len(order) else tail
        silence = np.zeros(round(pause * SAMPLE_RATE), dtype=np.float32)
        pieces += [samples, silence]
        position += len(samples) + len(silence)
    samples = np.concatenate(pieces)
    write_wav(target, samples)
    stm, rttm = target.with_suffix(".stm"), target.with_suffix(".rttm")
    write_references(placed, target.stem, stm, rttm)
    return Rearranged(target, stm, rttm, tuple(placed), len(samples) / SAMPLE_RATE)
