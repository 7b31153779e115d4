"""A real conversation re-arranged from pyannote's ``sample.wav``: its 13 timed utterances (``sample.stm``) cut out
and put together in another order, with seeded pauses between them (and, on request, overlaps, a music bed and
noise), and the exact reference (STM and RTTM).

Used by the speaker evaluation set (``bench/conversations.py``), the real-speech diarization tests and the
determinism test of the temperature fallback; nothing is committed or downloaded. The speech is real (two people on
a phone line), so the words, the speaker changes and the diarization are those of real speech, but at other places
than in the sample: a rule tuned on ``sample.wav`` alone would not fit this one by chance.
"""

from __future__ import annotations

import random
import subprocess
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


def word_errors(words: Sequence[tuple[str | None, float, float, str]], reference: Sequence[Utterance]) -> dict:
    """Errors of ``words`` (``(speaker, start, end, text)``, times in seconds) against ``reference`` utterances, both
    normalised (``tests.media.normalize``): ``ref_words``, ``errors`` (speakers ignored: all words one stream) and
    ``cp_errors`` (cpWER's, CHiME-6's concatenated minimum-permutation WER, with meeteval)."""
    from meeteval.io import SegLST
    from meeteval.wer import cpwer

    from tests.media import normalize

    def seglst(rows):
        return SegLST(
            [
                dict(session_id="s", speaker=spk, start_time=a, end_time=b, words=text)
                for spk, a, b, text in rows
                if text
            ]
        )

    ref = [(u.speaker, u.start, u.end, normalize(u.text)) for u in reference]
    hyp = [(spk or "?", a, b, normalize(text)) for spk, a, b, text in words]
    plain = cpwer(seglst([("one", a, b, t) for _, a, b, t in ref]), seglst([("one", a, b, t) for _, a, b, t in hyp]))
    cp = cpwer(seglst(ref), seglst(hyp))
    return {"ref_words": plain["s"].length, "errors": plain["s"].errors, "cp_errors": cp["s"].errors}


def rearranged_conversation(
    target: Path,
    seed: int = 0,
    gaps: tuple[float, float] = (0.2, 0.8),
    lead: float = 0.5,
    tail: float = 0.5,
    overlap: float = 0.0,
    music_snr_db: float | None = None,
    noise_snr_db: float | None = None,
) -> Rearranged:
    """Cut ``sample.wav`` at its STM times, shuffle the utterances with ``random.Random(seed)`` and lay them end to
    end into ``target`` (.wav), with a pause drawn uniformly from ``gaps`` seconds between two utterances, ``lead``
    seconds of silence before the first and ``tail`` after the last. Writes ``target`` .stm and .rttm beside it.

    The order is drawn again until the first utterance's speaker differs from the original first one and no two
    utterances keep their original neighbour, so the result is another conversation, not the sample shifted.

    ``overlap`` is the probability that an utterance starts before the previous one ends (the two speakers
    differ): it then overlaps it by 0.2-0.6 s, at most 40 % of either (the samples add up; the STM and RTTM carry
    both). ``music_snr_db`` lays a synthesised music bed (:func:`music_bed`) under the whole file, ``lead`` and
    ``tail`` included (music alone there), ``music_snr_db`` dB under the speech (RMS of the speech in its
    utterances against the RMS of the bed); ``noise_snr_db`` adds pink noise (:func:`pink_noise`) that many dB
    under the speech. Both are seeded from ``seed``; with neither and ``overlap=0`` the file is the one earlier
    versions wrote for the same seed. Same arguments, same bytes. Raises ``CalledProcessError`` when sox fails.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    source = read_wav(SAMPLE_WAV)
    utterances = read_stm()
    rng = random.Random(seed)
    overlaps = random.Random(f"overlap-{seed}")  # its own stream: the orders and pauses stay those of overlap=0
    order = list(range(len(utterances)))
    for _ in range(1000):
        rng.shuffle(order)
        kept_neighbours = any(b == a + 1 for a, b in zip(order, order[1:]))
        if not kept_neighbours and utterances[order[0]].speaker != utterances[0].speaker:
            break
    cuts = [source[round(u.start * SAMPLE_RATE) : round(u.end * SAMPLE_RATE)] for u in utterances]
    starts, position = [], round(lead * SAMPLE_RATE)
    for k, i in enumerate(order):
        if k and overlap and utterances[i].speaker != utterances[order[k - 1]].speaker and overlaps.random() < overlap:
            shortest = min(len(cuts[i]), len(cuts[order[k - 1]]))
            previous_end = starts[-1] + len(cuts[order[k - 1]])  # the pause drawn after it is not used
            position = previous_end - min(round(overlaps.uniform(0.2, 0.6) * SAMPLE_RATE), int(0.4 * shortest))
        starts.append(position)
        pause = rng.uniform(*gaps) if k + 1 < len(order) else tail
        position += len(cuts[i]) + round(pause * SAMPLE_RATE)
    samples = np.zeros(position, dtype=np.float32)
    placed = []
    for start, i in zip(starts, order):
        u = utterances[i]
        samples[start : start + len(cuts[i])] += cuts[i]
        placed.append(Utterance(u.speaker, start / SAMPLE_RATE, (start + len(cuts[i])) / SAMPLE_RATE, u.text))
    if music_snr_db is not None or noise_snr_db is not None:
        speech = np.concatenate([samples[s : s + len(cuts[i])] for s, i in zip(starts, order)])
        level = float(np.sqrt(np.mean(speech.astype(np.float64) ** 2)))  # RMS of the speech
        bed = np.zeros(len(samples), dtype=np.float64)
        if music_snr_db is not None:
            music = music_bed(len(samples), seed, target.parent)
            bed += music * (level * 10 ** (-music_snr_db / 20) / max(float(np.sqrt(np.mean(music**2))), 1e-12))
        if noise_snr_db is not None:
            noise = pink_noise(len(samples), seed)
            bed += noise * (level * 10 ** (-noise_snr_db / 20) / max(float(np.sqrt(np.mean(noise**2))), 1e-12))
        mixed = samples + bed
        peak = float(np.max(np.abs(mixed)))
        samples = (mixed * (0.95 / peak if peak > 0.95 else 1.0)).astype(np.float32)  # no clipping; ratios kept
    write_wav(target, samples)
    stm, rttm = target.with_suffix(".stm"), target.with_suffix(".rttm")
    write_references(placed, target.stem, stm, rttm)
    return Rearranged(target, stm, rttm, tuple(placed), len(samples) / SAMPLE_RATE)


def long_conversation(target: Path, seconds: float, first_seed: int = 1000) -> Rearranged:
    """A two-speaker file of at least ``seconds``: consecutive re-arranged orders of seeds ``first_seed``,
    ``first_seed + 1``, ... (:func:`rearranged_conversation` defaults: 0.2-0.8 s pauses, 0.5 s lead and tail each),
    written to ``target`` (.wav) with one STM and RTTM beside it. Same arguments, same bytes."""
    import tempfile

    target.parent.mkdir(parents=True, exist_ok=True)
    pieces, placed, offset, seed = [], [], 0, first_seed
    with tempfile.TemporaryDirectory() as tmp:
        while offset < seconds * SAMPLE_RATE:
            made = rearranged_conversation(Path(tmp) / "part.wav", seed=seed)
            shift = offset / SAMPLE_RATE
            placed += [Utterance(u.speaker, u.start + shift, u.end + shift, u.text) for u in made.utterances]
            pieces.append(read_wav(made.wav))
            offset += len(pieces[-1])
            seed += 1
    write_wav(target, np.concatenate(pieces))
    stm, rttm = target.with_suffix(".stm"), target.with_suffix(".rttm")
    write_references(placed, target.stem, stm, rttm)
    return Rearranged(target, stm, rttm, tuple(placed), offset / SAMPLE_RATE)


def repeated_sample(target: Path, seconds: float) -> tuple[Path, Path, float]:
    """pyannote's real two-speaker sample back to back with 1-s pauses for ``seconds`` (the last repeat cut off),
    written to ``target`` (16 kHz WAV), and ``sample.rttm`` repeated for the whole repeats beside it (.rttm).
    Returns ``(wav, rttm, scored)``: ``scored`` seconds, from 0, the whole repeats that the RTTM describes."""
    sample = read_wav(SAMPLE_WAV)
    unit = np.concatenate([sample, np.zeros(SAMPLE_RATE, dtype=np.float32)])
    period = len(unit) / SAMPLE_RATE
    repeats = int(seconds // period)
    lines = []
    for k in range(repeats):
        for line in SAMPLE_WAV.with_suffix(".rttm").read_text().splitlines():
            if line.strip():
                f = line.split()
                lines.append(" ".join([*f[:3], f"{float(f[3]) + k * period:.3f}", *f[4:]]))
    target.parent.mkdir(parents=True, exist_ok=True)
    write_wav(target, np.resize(unit, int(seconds * SAMPLE_RATE)))
    rttm = target.with_suffix(".rttm")
    rttm.write_text("\n".join(lines) + "\n")
    return target, rttm, repeats * period


# The music beds' chord progressions (semitones above the key's root; each chord a major or minor triad) and keys
# (MIDI note of the root in octave 3): pop and ballad progressions, so that the bed sounds like music, not a tone.
PROGRESSIONS = (
    ((0, "maj"), (7, "maj"), (9, "min"), (5, "maj")),  # I V vi IV
    ((9, "min"), (5, "maj"), (0, "maj"), (7, "maj")),  # vi IV I V
    ((0, "maj"), (9, "min"), (5, "maj"), (7, "maj")),  # I vi IV V
    ((2, "min"), (7, "maj"), (0, "maj"), (0, "maj")),  # ii V I I
)
KEYS = (48, 50, 52, 53, 55, 57)  # C3 D3 E3 F3 G3 A3
CHORD_SECONDS = (1.6, 2.0, 2.4)  # s per chord: three tempos


def _chord(root: int, quality: str, seconds: float, work_dir: Path) -> np.ndarray:
    """One chord of a pad, as sox synthesises it: three sawtooth voices (the triad on MIDI note ``root``) and a
    plucked bass an octave under the root, low-passed at 1.5 kHz, faded in and out (``seconds`` long, float64)."""
    third = 4 if quality == "maj" else 3
    notes = [f"%{n - 69}" for n in (root, root + third, root + 7)]  # sox: %n = n semitones from A4 (440 Hz)
    raw = work_dir / f".chord-{root}-{quality}-{seconds}.f32"
    command = ["sox", "-R", "-n", "-r", str(SAMPLE_RATE), "-c", "4", "-e", "floating-point", "-b", "32", "-t", "raw"]
    command += [str(raw), "synth", str(seconds)]
    command += [part for note in notes for part in ("sawtooth", note)] + ["pluck", f"%{root - 12 - 69}"]
    command += ["lowpass", "1500", "fade", "q", "0.25", str(seconds), "0.4"]
    subprocess.run(command, check=True, capture_output=True)
    channels = np.fromfile(raw, dtype="<f4").reshape(-1, 4).astype(np.float64)
    raw.unlink()
    return channels.mean(axis=1)


def music_bed(n_samples: int, seed: int, work_dir: Path) -> np.ndarray:
    """``n_samples`` of a synthesised music bed at 16 kHz (float64, unscaled): a chord progression of
    :data:`PROGRESSIONS` in a key of :data:`KEYS` at a tempo of :data:`CHORD_SECONDS`, all three chosen with
    ``random.Random(f"music-{seed}")``, looped. sox (``-R``: its pluck noise repeatable) writes each chord once, into
    ``work_dir``, removed after. Raises ``CalledProcessError`` when sox fails."""
    rng = random.Random(f"music-{seed}")
    progression, key, seconds = rng.choice(PROGRESSIONS), rng.choice(KEYS), rng.choice(CHORD_SECONDS)
    work_dir.mkdir(parents=True, exist_ok=True)
    loop = np.concatenate([_chord(key + step, quality, seconds, work_dir) for step, quality in progression])
    return np.resize(loop, n_samples)


def pink_noise(n_samples: int, seed: int) -> np.ndarray:
    """``n_samples`` of pink noise (power falling as 1/f above 20 Hz; float64, unit RMS), from white noise of
    ``numpy.random.default_rng(seed)`` shaped in the frequency domain."""
    white = np.random.default_rng(seed).standard_normal(n_samples)
    spectrum = np.fft.rfft(white)
    frequencies = np.fft.rfftfreq(n_samples, 1 / SAMPLE_RATE)
    spectrum /= np.sqrt(np.maximum(frequencies, 20.0))
    pink = np.fft.irfft(spectrum, n_samples)
    return pink / max(float(np.sqrt(np.mean(pink**2))), 1e-12)
