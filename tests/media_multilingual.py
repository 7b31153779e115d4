"""Multilingual test files: short real recordings in several languages laid end to end, with their reference.

The clips are the language samples that ship in the PyPI wheel ``pytest-audioeval`` (MIT): 27 recordings of 1.0 to
4.5 s in nine languages (counting to ten, "hello world", a pangram), 16 kHz mono, each with its text beside it
(``samples/audio/<lang>/<name>.wav`` and ``.txt``). The package is installed without its dependencies and its
pytest plugin is disabled (``-p no:audioeval`` in pyproject.toml): only its files are used.

``build`` writes a 16 kHz mono WAV of the clips in a given order, separated by pauses drawn from a seeded
generator, and returns where each clip lies: the same arguments give the same bytes. ``score`` tells for each clip
whether the transcript got it right (in its own language, character error rate at most ``MAX_CER``), misheard it
(its language, more errors), translated it (decoded in another language) or dropped it (no text over it). Used by
the slow tests and by ``bench/multilingual.py``.
"""

from __future__ import annotations

import importlib.util
import unicodedata
import wave
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

SAMPLE_RATE = 16_000  # Hz
MAX_CER = 0.30  # a clip is right when its character error rate is at most this (the bar)
SPACELESS = {"ja", "zh"}  # languages written without spaces: characters are compared without spaces


def samples_dir() -> Path | None:
    """The folder of pytest-audioeval's language clips, or ``None`` when the package is not installed."""
    spec = importlib.util.find_spec("pytest_audioeval")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "samples" / "audio"
    return folder if folder.is_dir() else None


@dataclass(frozen=True)
class Clip:
    """One recording: ``language`` (ISO 639-1), ``name`` (``es/pangrama``), its ``text`` and 16 kHz ``samples``."""

    language: str
    name: str
    text: str
    samples: np.ndarray

    @property
    def duration(self) -> float:
        return len(self.samples) / SAMPLE_RATE


def read_wav(path: Path) -> np.ndarray:
    """A mono WAV at 16 kHz (16-bit PCM or 32-bit float, as the clips are) as float32 samples; raises
    ``ValueError`` for another rate or channel count (scipy's WAV reader)."""
    import warnings

    from scipy.io import wavfile

    with warnings.catch_warnings():  # the clips carry a LIST chunk that scipy skips with a warning
        warnings.simplefilter("ignore", wavfile.WavFileWarning)
        rate, data = wavfile.read(path)
    if rate != SAMPLE_RATE or data.ndim != 1:
        raise ValueError(f"{path}: expected 16 kHz mono")
    if data.dtype == np.int16:
        return data.astype(np.float32) / 32768.0
    return data.astype(np.float32)


def clips(languages: Sequence[str] | None = None) -> dict[str, Clip]:
    """All clips (``lang/name`` -> ``Clip``), only of ``languages`` when given; raises ``FileNotFoundError`` when
    pytest-audioeval is not installed."""
    folder = samples_dir()
    if folder is None:
        raise FileNotFoundError("pytest-audioeval is not installed (make install-test installs it)")
    out = {}
    for wav in sorted(folder.glob("*/*.wav")):
        language = wav.parent.name
        if languages and language not in languages:
            continue
        text = wav.with_suffix(".txt").read_text(encoding="utf-8").strip()
        out[f"{language}/{wav.stem}"] = Clip(language, f"{language}/{wav.stem}", text, read_wav(wav))
    return out


@dataclass(frozen=True)
class Placed:
    """A clip in a built file: from ``start`` to ``end`` (seconds)."""

    clip: Clip
    start: float
    end: float


def build(
    path: Path, names: Sequence[str], *, gaps: tuple[float, float] = (0.6, 1.2), seed: int = 0, lead: float = 0.5
):
    """Write the clips ``names`` (keys of ``clips()``) in that order to ``path`` (16 kHz mono 16-bit WAV), with
    ``lead`` seconds of silence first and last and a pause between clips drawn uniformly from ``gaps`` (seconds,
    seeded by ``seed``). Returns the ``Placed`` clips. The same arguments give the same bytes."""
    pool = clips()
    rng = np.random.default_rng(seed)
    parts = [np.zeros(round(lead * SAMPLE_RATE), np.float32)]
    placed = []
    t = lead
    for k, name in enumerate(names):
        clip = pool[name]
        if k:
            pause = float(rng.uniform(*gaps))
            parts.append(np.zeros(round(pause * SAMPLE_RATE), np.float32))
            t += round(pause * SAMPLE_RATE) / SAMPLE_RATE
        parts.append(clip.samples)
        placed.append(Placed(clip, t, t + clip.duration))
        t += clip.duration
    parts.append(np.zeros(round(lead * SAMPLE_RATE), np.float32))
    write_wav(path, np.concatenate(parts))
    return placed


def write_wav(path: Path, samples: np.ndarray) -> None:
    """``samples`` (float32 in [-1, 1], 16 kHz) as a 16-bit mono WAV."""
    pcm = (np.clip(samples, -1.0, 1.0) * 32767.0).round().astype("<i2")
    with wave.open(str(path), "wb") as f:
        f.setnchannels(1)
        f.setsampwidth(2)
        f.setframerate(SAMPLE_RATE)
        f.writeframes(pcm.tobytes())


CJK_DIGITS = "〇一二三四五六七八九"


def cjk_numerals(digits: str) -> str:
    """A run of ASCII digits as Chinese and Japanese write numbers in words: up to two digits with 十 (10 -> 十,
    21 -> 二十一), a longer run digit by digit, as a count written without separators is read (Whisper writes the
    count "一二三四五六七八九十" as "1234567890"). num2words reads such a run as one number (Japanese) or knows no
    Chinese."""
    if len(digits) > 2:
        return "".join(CJK_DIGITS[int(d)] for d in digits)
    tens, units = divmod(int(digits), 10)
    if not tens:
        return CJK_DIGITS[units]
    return (CJK_DIGITS[tens] if tens > 1 else "") + "十" + (CJK_DIGITS[units] if units else "")


def normalized(text: str, language: str) -> str:
    """``text`` compared by characters: lower case, accents kept, punctuation dropped, numbers written out in
    ``language`` (num2words; ``cjk_numerals`` for Chinese and Japanese: Whisper writes "1, 2, 3" for counting in
    any language), spaces collapsed (none for languages written without spaces)."""
    import re

    from num2words import num2words

    def spelled(match: re.Match) -> str:
        if language in ("ja", "zh"):
            return cjk_numerals(match.group())
        try:
            return f" {num2words(int(match.group()), lang=language)} "
        except (NotImplementedError, KeyError, ValueError, TypeError):
            return match.group()

    text = re.sub(r"\d+", spelled, text.lower())
    kept = "".join(c if not unicodedata.category(c).startswith("P") else " " for c in text)
    words = kept.split()
    return "".join(words) if language in SPACELESS else " ".join(words)


def cer(reference: str, hypothesis: str) -> float:
    """Character error rate of ``hypothesis`` against ``reference`` (jiwer); 1.0 for an empty hypothesis."""
    import jiwer

    if not hypothesis:
        return 1.0
    return float(jiwer.cer(reference, hypothesis))


@dataclass(frozen=True)
class ClipScore:
    """How a transcript did on one placed clip: the ``text`` it has there, its ``language`` (of the segments there,
    ``None`` when unknown), the character error rate ``cer`` and the verdict (``score``)."""

    name: str
    text: str
    language: str | None
    cer: float
    verdict: str


def score(placed: Sequence[Placed], segments: Sequence[dict]) -> list[ClipScore]:
    """Score each placed clip against ``segments`` (dicts with ``start``, ``end``, ``text``, optional ``language``
    and ``words`` with ``start``/``end``/``text``, as the JSON writer writes them): the words whose middle lies in
    the clip (with 0.3 s of slack) are its text, and the language of most of them its language. ``dropped``: no
    text; ``translated``: decoded in another language (or, without languages, text that is not the clip's);
    ``right``: in its language with a CER <= ``MAX_CER``; ``misheard``: in its language with a higher CER."""
    out = []
    for p in placed:
        words, languages = [], []
        for s in segments:
            for w in s.get("words") or []:
                middle = (float(w["start"]) + float(w["end"])) / 2
                if p.start - 0.3 <= middle <= p.end + 0.3:
                    words.append(w.get("text", w.get("word", "")))
                    languages.append(s.get("language"))
        language = max(set(languages), key=languages.count) if languages else None
        out.append(judged(p.clip, "".join(words).strip(), language))
    return out


def judged(clip: Clip, text: str, language: str | None) -> ClipScore:
    """The score of ``text``, transcribed with ``language`` (``None`` when unknown), for ``clip`` (see ``score``)."""
    error = cer(normalized(clip.text, clip.language), normalized(text, clip.language))
    if not text.strip():
        verdict = "dropped"
    elif language not in (None, clip.language) or (language is None and error > MAX_CER):
        verdict = "translated"
    else:
        verdict = "right" if error <= MAX_CER else "misheard"
    return ClipScore(clip.name, text, language, round(error, 3), verdict)


def in_conversation(path: Path, name: str, seed: int, pause: float = 0.5) -> tuple[Placed, float]:
    """Write to ``path`` a real English conversation (pyannote's ``sample.wav`` re-arranged with ``seed``,
    ``tests.media_conversation.rearranged_conversation``, about 30 s) with the clip ``name`` (a key of ``clips()``)
    laid into the pause between two of its utterances, chosen with ``seed`` among the middle ones, ``pause`` seconds
    of silence on each side: one sentence in another language inside an English conversation, as in an interview
    with a quote. Returns the placed clip and the file's duration (seconds). Same arguments, same bytes."""
    import tempfile

    from tests.media_conversation import rearranged_conversation

    clip = clips()[name]
    with tempfile.TemporaryDirectory() as tmp:
        made = rearranged_conversation(Path(tmp) / "conversation.wav", seed=seed)
        samples = read_wav(made.wav)
    utterances = sorted(made.utterances, key=lambda u: u.start)
    k = int(np.random.default_rng(seed).integers(3, len(utterances) - 3))  # after the k-th utterance
    cut = round((utterances[k].end + utterances[k + 1].start) / 2 * SAMPLE_RATE)
    silence = np.zeros(round(pause * SAMPLE_RATE), np.float32)
    out = np.concatenate([samples[:cut], silence, clip.samples, silence, samples[cut:]])
    write_wav(path, out)
    start = cut / SAMPLE_RATE + len(silence) / SAMPLE_RATE
    return Placed(clip, start, start + clip.duration), len(out) / SAMPLE_RATE
