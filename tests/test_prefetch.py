"""Overlap of work in a batch: the next file's audio and VAD are prepared in the background (``prefetch``), with
the same result and the same errors, reported for the right file."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from tests import media
from whisper_subtitler.errors import InputError
from whisper_subtitler.prefetch import Prefetcher, Prepared
from whisper_subtitler.types import Audio


class Stream:
    def __init__(self) -> None:
        self.closed = False

    def __iter__(self):
        return iter(())

    def __next__(self):
        raise StopIteration

    def close(self) -> None:
        self.closed = True


def prepared() -> Prepared:
    import numpy as np

    return Prepared(Audio(np.zeros(16000, np.float32), 16000, Path("a.wav")), ((0.1, 0.5),), Stream())


def test_prepared_file_is_handed_over_once_from_another_thread():
    threads = []

    def prepare(source: Path) -> Prepared:
        threads.append(threading.current_thread().name)
        return prepared()

    p = Prefetcher(prepare)
    p.start(Path("a.wav"))
    assert p.take(Path("b.wav")) is None  # another file: not this one's preparation
    got = p.take(Path("a.wav"))
    assert got is not None and got.regions == ((0.1, 0.5),)
    assert threads == ["prefetch"]
    assert p.take(Path("a.wav")) is None  # taken once


def test_the_background_vad_keeps_to_its_own_thread(tmp_path, monkeypatch):
    """The next file's VAD runs beside the model, which has the cores: the split network's encoder pool is not used
    there (it is in the foreground), and the probabilities are the same."""
    import numpy as np

    from whisper_subtitler import vad_network

    model = vad_network.load(2, tmp_path)
    from whisper_subtitler.audio import extract_audio

    samples = np.ascontiguousarray(np.tile(extract_audio(media.SAMPLE_WAV).samples, 3), dtype=np.float32)
    pools = []
    real_executor = model._executor
    monkeypatch.setattr(model, "_executor", lambda: pools.append(threading.current_thread().name) or real_executor())
    found = {}

    def prepare(source: Path) -> Prepared:
        found["background"] = model.audio_forward(samples)
        return prepared()

    p = Prefetcher(prepare)
    p.start(Path("a.wav"))
    p.take(Path("a.wav"))
    assert pools == []
    foreground = model.audio_forward(samples)
    assert pools == ["MainThread"]
    np.testing.assert_array_equal(found["background"], foreground)


def test_an_error_is_raised_when_its_file_is_taken():
    def prepare(source: Path) -> Prepared:
        raise InputError(f"{source}: not a media file")

    p = Prefetcher(prepare)
    p.start(Path("bad.wav"))
    with pytest.raises(InputError, match="bad.wav: not a media file"):
        p.take(Path("bad.wav"))


def test_an_untaken_preparation_is_closed():
    made = prepared()
    p = Prefetcher(lambda source: made)
    p.start(Path("a.wav"))
    p.close()
    assert made.rest.closed
    again = prepared()
    p = Prefetcher(lambda source: again)
    p.start(Path("a.wav"))
    p.start(Path("b.wav"))  # the first one was never taken: dropped and closed
    assert again.rest.closed


@pytest.mark.slow
def test_prefetched_file_gives_the_same_transcript(tmp_path):
    import json

    from whisper_subtitler import platform
    from whisper_subtitler.pipeline import Pipeline, RunOptions

    clip = tmp_path / "talk.wav"
    media.ffmpeg("-ss", "6", "-t", "15", "-i", str(media.SAMPLE_WAV), str(clip))
    selection = platform.configure(gpu_backend="cpu", model="tiny.en", environ={}, cwd=tmp_path)

    def transcribe(folder: str, prefetch: bool) -> dict:
        options = RunOptions(model="tiny.en", formats=("json",), output_dir=tmp_path / folder)
        pipeline = Pipeline(options, selection)
        made: list[Prepared] = []
        if prefetch:
            real = pipeline._prepare
            pipeline._prepare = lambda source: made.append(real(source)) or made[-1]
            pipeline.prefetch(clip)
        result = pipeline.process(clip)
        if prefetch:  # the prepared stream was taken and read to its end by process(), not left for close()
            assert len(made) == 1 and made[0] is not None and made[0].rest.gi_frame is None
        pipeline.close()
        assert result.status == "done", result.error
        data = json.loads(result.outputs[0].read_text(encoding="utf-8"))
        return {
            "text": data["text"],
            "words": [(w["text"], w["start"], w["end"]) for s in data["segments"] for w in s["words"]],
        }

    plain = transcribe("plain", prefetch=False)
    assert len(plain["words"]) > 20
    assert transcribe("prefetched", prefetch=True) == plain


@pytest.mark.slow
def test_bad_file_after_a_good_one_is_reported_for_itself(tmp_path, cli):
    good = tmp_path / "a.wav"
    media.ffmpeg("-ss", "6", "-t", "8", "-i", str(media.SAMPLE_WAV), str(good))
    bad = tmp_path / "b.wav"
    bad.write_text("not audio at all", encoding="utf-8")
    last = tmp_path / "c.wav"
    last.write_bytes(good.read_bytes())
    result = cli("transcribe", str(good), str(bad), str(last), "--model", "tiny.en")
    assert result.returncode == 1
    errors = [line for line in result.stderr.splitlines() if "b.wav" in line and "wrote" not in line]
    assert len(errors) == 1 and "a.wav" not in errors[0] and "c.wav" not in errors[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.srt", "a.vtt", "a.wav", "b.wav", "c.srt", "c.vtt", "c.wav"]
