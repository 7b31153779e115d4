"""Resume of long files (``transcribe --resume``, ``library.checkpoints``): a run killed with SIGKILL after a batch
was checkpointed, started again, writes byte for byte what an uninterrupted run writes, without decoding the finished
batch again, and leaves no checkpoint behind. Real processes, real speech (espeak-ng), the tiny model."""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import media
from tests.conftest import run_cli

FIRST = "The library opened at nine in the morning, and the first visitors were already waiting by the door."
LAST = "The old clock above the desk had stopped at a quarter past four many years ago."
OPTIONS = ("--model", "tiny.en", "--no-diarize", "--batch-size", "1", "-f", "srt,vtt", "--progress", "json")


def long_clip(target: Path) -> Path:
    """A 71-s file: a sentence, a minute of silence, a sentence (espeak-ng, sox). The silence makes it two decoding
    chunks, one batch each with --batch-size 1, for the price of 11 s of speech."""
    first, last = media.espeak(FIRST, target.with_name("first.wav")), media.espeak(LAST, target.with_name("last.wav"))
    silence = target.with_name("silence.wav")
    subprocess.run(["sox", "-n", "-r", "16000", "-c", "1", str(silence), "trim", "0", "60"], check=True)
    subprocess.run(["sox", str(first), str(silence), str(last), str(target)], check=True)
    for part in (first, silence, last):
        part.unlink()
    return target


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return long_clip(tmp_path_factory.mktemp("resume") / "talk.wav")


def finished_chunks(state: Path) -> int:
    """The chunks finished in the checkpoints under ``state`` (0 when there is none, or while one is written)."""
    total = 0
    for path in (state / "checkpoints").glob("*.pickle"):
        try:
            saved = pickle.loads(path.read_bytes())
        except (OSError, EOFError, pickle.UnpicklingError):
            continue
        total += len(saved["journal"]["results"]) + len(saved["pieces"])
    return total


@pytest.mark.slow
def test_killed_part_way_and_resumed_gives_the_same_bytes(clip: Path, tmp_path: Path) -> None:
    whole = run_cli("transcribe", str(clip), *OPTIONS, "--output-dir", str(tmp_path / "whole"))
    assert whole.returncode == 0, whole.stderr

    state, out = tmp_path / "state", tmp_path / "out"
    command = [sys.executable, "-m", "whisper_subtitler", "transcribe", str(clip), *OPTIONS, "--output-dir", str(out)]
    command += ["--resume", "--state-dir", str(state)]
    killed = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while finished_chunks(state) == 0 and killed.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    os.kill(killed.pid, signal.SIGKILL)
    killed.wait()
    assert killed.returncode == -signal.SIGKILL, "the run ended before it was killed: the clip is too short"
    assert finished_chunks(state) == 1  # one of the two chunks was finished
    assert not out.exists() or not any(out.iterdir())  # nothing written, not even a temporary file

    resumed = run_cli(*command[3:])
    assert resumed.returncode == 0, resumed.stderr
    said = " ".join(line for line in resumed.stderr.splitlines() if not line.startswith("{"))
    assert "resuming from a checkpoint (0 pieces, 0.0 s, and 1 chunks finished)" in " ".join(said.split())
    # the finished chunk was not decoded again: the progress starts past it
    fractions = [line for line in resumed.stderr.splitlines() if '"stage": "transcribe"' in line]
    assert fractions and '"fraction": 0.0' not in fractions[-1]
    for name in ("talk.srt", "talk.vtt"):
        assert (out / name).read_bytes() == (tmp_path / "whole" / name).read_bytes()
    assert sorted(p.name for p in out.iterdir()) == ["talk.srt", "talk.vtt"]
    assert list((state / "checkpoints").iterdir()) == []  # removed once the file is done


def test_pieces_cut_where_an_earlier_run_cut_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """A file resumed after two finished pieces (``pieces.speech_pieces(known=...)``): the finished pieces come cut at
    the same samples without the VAD running on them, and every later piece is the one an uninterrupted run gets,
    samples, offset and speech regions alike (pyannote's real 30-s sample in pieces of 9 s)."""
    import numpy as np

    from whisper_subtitler import pieces
    from whisper_subtitler.stages import StageTimer
    from whisper_subtitler.vad import speech_regions

    monkeypatch.setattr(pieces, "PIECE_SECONDS", 9.0)
    calls: list[int] = []

    def vad(samples: np.ndarray) -> tuple[tuple[float, float], ...]:
        calls.append(len(samples))
        return speech_regions(samples)

    def run(known: tuple[int, ...] = ()) -> list[pieces.SpeechPiece]:
        calls.clear()
        stream = pieces.open_stream(media.SAMPLE_WAV, 0, whole=False)
        return list(pieces.speech_pieces(stream, vad, StageTimer(), known=known))

    whole = run()
    assert len(whole) >= 3 and len(calls) == len(whole)
    known = tuple(len(p.audio.samples) for p in whole[:2])
    resumed = run(known)
    assert len(calls) == len(whole) - 2  # no VAD on the finished pieces
    assert [len(p.audio.samples) for p in resumed] == [len(p.audio.samples) for p in whole]
    for before, after in zip(whole, resumed):
        assert np.array_equal(before.audio.samples, after.audio.samples)
        assert before.audio.offset == after.audio.offset
    assert [p.speech for p in resumed[2:]] == [p.speech for p in whole[2:]]
