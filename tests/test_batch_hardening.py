"""Batch runs over hostile and broken inputs, interrupts, and the user's existing files (issue: batch runs)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import srt

from tests import media
from whisper_subtitler.outputs import TEMP_PREFIX

pytestmark = pytest.mark.slow


def _clip(target: Path, *args: str, seconds: float = 12) -> Path:
    """A piece of pyannote's real speech, re-encoded with ffmpeg ``args``."""
    media.ffmpeg("-ss", "6", "-t", str(seconds), "-i", str(media.SAMPLE_WAV), *args, str(target))
    return target


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Good files with awkward names and formats, and bad files of every kind; returns (folder, good, bad)."""
    d = tmp_path_factory.mktemp("corpus")
    good: dict[Path, str] = {}
    bad: dict[Path, str] = {}

    base = _clip(d / "base.wav")
    for name in ("with spaces.wav", "nön-åscii ünïcode.wav", "-leading-dash.wav", "co:lon.wav", "http:prefix.wav"):
        (d / name).write_bytes(base.read_bytes())
        good[d / name] = "speech"
    base.unlink()
    good[_clip(d / "surround51.mkv", "-af", "pan=5.1|FL=c0|FR=c0|FC=c0|LFE=c0|BL=c0|BR=c0", "-c:a", "flac")] = "speech"
    good[_clip(d / "narrow8k.wav", "-ar", "8000")] = "speech"
    good[_clip(d / "hires96k.flac", "-ar", "96000")] = "speech"
    media.ffmpeg(
        "-ss",
        "6",
        "-t",
        "12",
        "-i",
        str(media.SAMPLE_WAV),
        "-f",
        "lavfi",
        "-t",
        "12",
        "-i",
        "anullsrc=r=16000:cl=mono",
        "-map",
        "0:a",
        "-map",
        "1:a",
        "-c:a",
        "flac",
        str(d / "two-tracks.mkv"),
    )
    good[d / "two-tracks.mkv"] = "speech"
    media.ffmpeg("-f", "lavfi", "-i", "sine=frequency=440:duration=0.05", str(d / "blip50ms.wav"))
    good[d / "blip50ms.wav"] = "empty"
    media.ffmpeg(
        "-f", "lavfi", "-i", "anullsrc=r=16000:cl=mono", "-t", "300", "-c:a", "flac", str(d / "silent5min.flac")
    )
    good[d / "silent5min.flac"] = "empty"

    (d / "zero.mp4").touch()
    bad[d / "zero.mp4"] = "empty file"
    full = media.video_from_audio(media.SAMPLE_WAV, d / "full.mp4", extra=("-c:a", "aac"))  # moov at the end
    data = full.read_bytes()
    (d / "truncated-moov-at-end.mp4").write_bytes(data[: len(data) // 2])
    bad[d / "truncated-moov-at-end.mp4"] = "not a readable media file"
    fast = media.video_from_audio(media.SAMPLE_WAV, d / "fast.mp4", extra=("-c:a", "aac", "-movflags", "+faststart"))
    data = fast.read_bytes()
    (d / "truncated-faststart.mp4").write_bytes(data[: len(data) // 2])
    bad[d / "truncated-faststart.mp4"] = "truncated"
    (d / "corrupt-header.mp4").write_bytes(b"\0" * 64 + data[64:4096] + os.urandom(4096))
    bad[d / "corrupt-header.mp4"] = ""
    full.unlink()
    fast.unlink()
    (d / "random.mp3").write_bytes(os.urandom(64 * 1024))
    bad[d / "random.mp3"] = ""
    (d / "text.mp4").write_text("I am a text file, not a video.\n" * 100)
    bad[d / "text.mp4"] = "not a readable media file"
    bad[media.video_without_audio(d / "no-audio.mp4")] = "no audio stream"
    media.ffmpeg("-f", "lavfi", "-i", "testsrc2=size=64x64", "-frames:v", "1", str(d / "image.png"))
    bad[d / "image.png"] = "no audio stream"
    (d / "a-directory").mkdir()
    bad[d / "a-directory"] = "is a directory"
    bad[d / "missing.mp4"] = "no such file"
    (d / "dangling.mp4").symlink_to(d / "nowhere.mp4")
    bad[d / "dangling.mp4"] = "dangling symbolic link"
    (d / "loop-a.mp4").symlink_to(d / "loop-b.mp4")
    (d / "loop-b.mp4").symlink_to(d / "loop-a.mp4")
    bad[d / "loop-a.mp4"] = "symbolic links"
    os.mkfifo(d / "fifo.wav")
    bad[d / "fifo.wav"] = "not a regular file"
    return d, good, bad  # the unreadable file has its own test (it needs a normal user)


def test_one_batch_with_good_and_bad_files(corpus, tmp_path, cli):
    folder, good, bad = corpus
    out = tmp_path / "out"
    inputs = [str(p) for p in [*good, *bad]]
    # Without diarization: the inputs are what is under test, and diarizing nine files doubled the test's time.
    result = cli(
        "transcribe", *inputs, "--model", "tiny.en", "--no-diarize", "--output-dir", str(out), "--json", timeout=1200
    )
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    summary = json.loads(result.stdout)
    by_input = {Path(f["input"]): f for f in summary["files"]}
    assert set(by_input) == set(good) | set(bad)
    for path, kind in good.items():
        f = by_input[path]
        assert f["status"] == "done", (path, f["error"])
        srt_path = out / f"{path.stem}.srt"
        cues = list(srt.parse(srt_path.read_text(encoding="utf-8")))
        assert (len(cues) > 0) == (kind == "speech"), path
    for path, reason in bad.items():
        f = by_input[path]
        assert f["status"] == "failed" and f["outputs"] == [], path
        assert str(path) in f["error"] and reason in f["error"], f["error"]
    failed_lines = [ln for ln in result.stderr.splitlines() if ln.startswith("failed:")]
    assert len(failed_lines) == len(bad)
    expected = {f"{p.stem}.{ext}" for p in good for ext in ("srt", "vtt")}
    assert {p.name for p in out.iterdir()} == expected  # nothing for the bad ones, no temporary files


def test_existing_outputs_are_untouched_without_overwrite(tmp_path, cli):
    clip = _clip(tmp_path / "talk.wav")
    mine = tmp_path / "talk.srt"
    mine.write_text("1\n00:00:00,000 --> 00:00:01,000\nMy own careful subtitles\n", encoding="utf-8")
    before = hashlib.sha256(mine.read_bytes()).hexdigest()
    result = cli("transcribe", str(clip), "--model", "tiny.en", "--no-diarize")
    assert result.returncode == 0, result.stderr
    assert hashlib.sha256(mine.read_bytes()).hexdigest() == before
    assert (tmp_path / "talk.vtt").is_file()  # the missing output is still written
    assert "kept existing" in result.stderr
    again = cli("transcribe", str(clip), "--model", "tiny.en", "--no-diarize", "--json")
    assert again.returncode == 0 and json.loads(again.stdout)["files"][0]["status"] == "skipped"
    assert hashlib.sha256(mine.read_bytes()).hexdigest() == before
    replaced = cli("transcribe", str(clip), "--model", "tiny.en", "--no-diarize", "--overwrite")
    assert replaced.returncode == 0
    assert "My own careful" not in mine.read_text(encoding="utf-8")
    assert oct(mine.stat().st_mode & 0o777) == oct(0o666 & ~_umask())


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_sigint_leaves_finished_files_and_nothing_partial(tmp_path):
    # A short first file, then 90 s of real speech per file (the sample looped), so that a file takes seconds and
    # the signal lands inside the second one, however fast decoding gets
    first = _clip(tmp_path / "part0.wav", seconds=8)
    long = tmp_path / "part1.wav"
    media.ffmpeg("-stream_loop", "3", "-i", str(media.SAMPLE_WAV), "-t", "90", str(long))
    clips = [first, long] + [Path(shutil.copy(long, tmp_path / f"part{i}.wav")) for i in range(2, 4)]
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "whisper_subtitler",
            "transcribe",
            *map(str, clips),
            "--model",
            "tiny.en",
            "--output-dir",
            str(out),
            "--no-batch",
            "--no-diarize",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # A shell's background job (`make test &`) starts with SIGINT ignored, and Python then installs no
        # KeyboardInterrupt handler: give the child the default disposition, as a terminal would.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 600
    while not (out / "part0.vtt").exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.2)  # now inside the second file
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    names = sorted(p.name for p in out.iterdir())
    assert not [n for n in names if n.startswith(TEMP_PREFIX)]
    assert "part0.srt" in names and "part0.vtt" in names
    assert "part3.srt" not in names
    for name in names:  # every file that exists is complete
        text = (out / name).read_text(encoding="utf-8")
        if name.endswith(".srt"):
            assert list(srt.parse(text))
        else:
            assert text.startswith("WEBVTT")


def test_sigterm_mid_file_ends_the_batch_like_ctrl_c(tmp_path):
    """What ``timeout``, systemd or Kubernetes send: the file in progress is abandoned, the finished one stays,
    nothing temporary is left, exit code 143, and the --json summary and --progress json lines still come."""
    first = _clip(tmp_path / "first.wav", seconds=8)
    second = tmp_path / "second.wav"
    media.ffmpeg("-stream_loop", "3", "-i", str(media.SAMPLE_WAV), "-t", "90", str(second))
    out = tmp_path / "out"
    command = [sys.executable, "-m", "whisper_subtitler", "transcribe", str(first), str(second), "--model", "tiny.en"]
    options = ["--output-dir", str(out), "--no-diarize", "--batch-size", "1", "--progress", "json", "--json"]
    proc = subprocess.Popen([*command, *options], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    events, messages = [], []
    for line in proc.stderr:  # until the second file is being transcribed
        if not line.startswith("{"):
            messages.append(line)
            continue
        events.append(json.loads(line))
        if events[-1]["file"] == str(second) and events[-1]["stage"] == "transcribe":
            break
    assert events and events[-1]["file"] == str(second), "".join(messages)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 143, stderr
    assert "Traceback" not in stderr and "interrupted (SIGTERM)" in stderr
    assert sorted(p.name for p in out.iterdir()) == ["first.srt", "first.vtt"]  # no temporary file, nothing partial
    summary = json.loads(stdout)
    assert summary["interrupted"] and summary["exit_code"] == 143
    assert [(f["input"], f["status"]) for f in summary["files"]] == [(str(first), "done")]
    own = [e for e in events if e["file"] == str(first)]
    assert [e["index"] for e in own] == [1] * len(own) and all(e["total"] == 2 for e in events)
    fractions = [e["fraction"] for e in own]
    assert fractions == sorted(fractions) and (own[-1]["stage"], fractions[-1]) == ("done", 1.0)
    assert {"audio", "vad", "transcribe", "write"} <= {e["stage"] for e in own}


def test_dry_run_writes_nothing(tmp_path, cli):
    clip = _clip(tmp_path / "talk.wav", seconds=3)
    (tmp_path / "talk.srt").write_text("keep me", encoding="utf-8")
    result = cli("transcribe", str(clip), "--dry-run", "--json")
    assert result.returncode == 0
    plan = json.loads(result.stdout)
    actions = {Path(o["path"]).suffix: o["action"] for o in plan["files"][0]["outputs"]}
    assert actions == {".srt": "keep", ".vtt": "write"}
    assert not (tmp_path / "talk.vtt").exists()


def test_stdin_list_and_recursive_folders(tmp_path, cli):
    (tmp_path / "in" / "sub").mkdir(parents=True)
    a = _clip(tmp_path / "in" / "a.wav", seconds=4)
    b = _clip(tmp_path / "in" / "sub" / "b.flac", seconds=4)
    (tmp_path / "in" / "notes.txt").write_text("skip me")
    listed = cli("transcribe", "-", "--dry-run", stdin=f"{a}\n\n# comment\n{b}\n")
    assert listed.returncode == 0 and str(a) in listed.stdout and str(b) in listed.stdout
    walked = cli("transcribe", str(tmp_path / "in"), "--recursive", "--dry-run", "--json")
    files = [f["input"] for f in json.loads(walked.stdout)["files"]]
    assert files == [str(a), str(b)]
    flat = cli("transcribe", str(tmp_path / "in"), "--model", "tiny.en")
    assert flat.returncode == 1 and "is a directory" in flat.stderr


@pytest.mark.skipif(os.geteuid() == 0, reason="root can read a file with mode 000; run the suite as a normal user")
def test_unreadable_file(tmp_path, cli):
    locked = _clip(tmp_path / "locked.wav", seconds=2)
    locked.chmod(0)
    result = cli("transcribe", str(locked), "--model", "tiny.en")
    assert result.returncode == 1 and "permission denied" in result.stderr and str(locked) in result.stderr
