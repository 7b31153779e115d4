"""Fast unit tests: which files a run takes, where outputs go, and atomic non-clobbering writes."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from whisper_subtitler.errors import InputError
from whisper_subtitler.inputs import expand_inputs, parse_extensions
from whisper_subtitler.outputs import TEMP_PREFIX, output_path, write_atomic


def test_expand_inputs(tmp_path):
    (tmp_path / "d" / "e").mkdir(parents=True)
    for name in ("d/a.MP4", "d/e/b.wav", "d/notes.txt", "d/.hidden.mp4", "x.mkv"):
        (tmp_path / name).write_bytes(b"x")
    d = tmp_path / "d"
    assert expand_inputs([d], recursive=True) == [d / "a.MP4", d / "e" / "b.wav"]
    assert expand_inputs([d], recursive=True, extensions=parse_extensions(".wav")) == [d / "e" / "b.wav"]
    assert expand_inputs([d]) == [d]  # without --recursive the folder is reported by the pipeline
    assert expand_inputs([str(tmp_path / "*.mkv")]) == [tmp_path / "x.mkv"]  # a quoted glob
    assert expand_inputs([str(tmp_path / "*.none")]) == [tmp_path / "*.none"]  # no match: reported as missing
    stdin = io.StringIO(f"{tmp_path / 'x.mkv'}\n\n# a comment\n{tmp_path / 'x.mkv'}\n")
    assert expand_inputs(["-"], stdin=stdin) == [tmp_path / "x.mkv"]  # duplicates once


def test_output_path():
    src = Path("/media/talk.final.mp4")
    assert output_path(src, None, "srt") == Path("/media/talk.final.srt")
    assert output_path(src, Path("out"), ".vtt") == Path("out/talk.final.vtt")
    assert output_path(src, None, "srt", "{stem}.{ext}.en") == Path("/media/talk.final.mp4.en.srt")
    with pytest.raises(InputError):
        output_path(src, None, "srt", "{nope}")
    with pytest.raises(InputError):
        output_path(src, None, "srt", "../{stem}")


def test_write_atomic_never_clobbers(tmp_path):
    target = tmp_path / "a.srt"
    write_atomic(target, b"first")
    with pytest.raises(FileExistsError):
        write_atomic(target, b"second")
    assert target.read_bytes() == b"first"
    write_atomic(target, b"third", overwrite=True)
    assert target.read_bytes() == b"third"
    assert [p.name for p in tmp_path.iterdir()] == ["a.srt"]
    mask = os.umask(0)
    os.umask(mask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~mask


def test_write_atomic_cleans_up_on_interrupt(tmp_path, monkeypatch):
    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_atomic(tmp_path / "a.srt", b"data")
    assert list(tmp_path.iterdir()) == []
    assert TEMP_PREFIX.startswith(".")


def test_a_fifo_fails_before_anything_opens_it(tmp_path, monkeypatch):
    """A FIFO is refused by ``stat`` before ffprobe (shot changes, --skip-existing) or ffmpeg opens it: opening one
    waits for a writer, and the shot-change probe waited a minute before the check came."""
    import os

    from whisper_subtitler import Subtitler
    from whisper_subtitler.errors import InputError
    from whisper_subtitler.video import shots

    def never(path):
        raise AssertionError(f"ffprobe opened {path}")

    monkeypatch.setattr(shots, "video_info", never)
    fifo = tmp_path / "fifo.mp4"
    os.mkfifo(fifo)
    sub = Subtitler(model="tiny.en", diarize=False, device="cpu", load=False)
    with pytest.raises(InputError, match="not a regular file"):
        sub.run(fifo)
