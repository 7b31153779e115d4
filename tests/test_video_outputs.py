"""``--embed`` and ``--burn-in`` with real ffmpeg: one transcription of a short spoken clip in MP4 and MKV (tiny.en)
gives every copy; ffprobe and raw frames check them."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys

import numpy as np
import pytest
import srt

from tests import media

pytestmark = [pytest.mark.slow, pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="ffmpeg not installed")]

FPS = 10  # media.video_from_audio's frame rate
SIZE = (320, 240)


def probe(path, *extra) -> list[dict]:
    out = subprocess.run(
        ["ffprobe", "-v", "error", *extra, "-show_streams", "-of", "json", str(path)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out)["streams"]


def frame(path, n: int) -> np.ndarray:
    """Frame ``n`` of ``path`` as rgb24, shape (240, 320, 3)."""
    out = subprocess.run(
        [
            "ffmpeg",
            "-v",
            "error",
            "-i",
            str(path),
            "-vf",
            f"select=eq(n\\,{n})",
            "-vsync",
            "0",
            "-frames:v",
            "1",
            "-f",
            "rawvideo",
            "-pix_fmt",
            "rgb24",
            "-",
        ],
        check=True,
        capture_output=True,
    ).stdout
    return np.frombuffer(out, np.uint8).reshape(SIZE[1], SIZE[0], 3).astype(int)


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """Two videos of the same 6-second speech (MP4 and MKV), transcribed once with --embed --burn-in."""
    from tests.conftest import run_cli

    folder = tmp_path_factory.mktemp("video")
    speech = media.espeak(
        "Hello there. This is a short test of subtitles in a video. Goodbye for now.", folder / "speech.wav"
    )
    padded = folder / "padded.wav"
    subprocess.run(["sox", "-q", str(speech), str(padded), "pad", "1.0", "1.5"], check=True)
    mp4 = media.video_from_audio(padded, folder / "talk.mp4", extra=("-c:a", "aac"))
    mkv = folder / "film.mkv"
    media.ffmpeg("-i", str(mp4), "-c", "copy", str(mkv))
    before = {p: digest(p) for p in (mp4, mkv)}
    out = folder / "out"
    result = run_cli(
        "transcribe",
        str(mp4),
        str(mkv),
        "--model",
        "tiny.en",
        "--no-diarize",
        "--format",
        "srt,ass",
        "--embed",
        "--burn-in",
        "--output-dir",
        str(out),
        "--json",
    )
    assert result.returncode == 0, result.stderr
    return folder, out, mp4, mkv, before, result


def test_every_copy_is_named_with_its_suffix_and_the_input_is_untouched(run):
    folder, out, mp4, mkv, before, result = run
    assert sorted(p.name for p in out.iterdir()) == [
        "film.ass",
        "film.burned.mkv",
        "film.srt",
        "film.subtitled.mkv",
        "talk.ass",
        "talk.burned.mp4",
        "talk.srt",
        "talk.subtitled.mp4",
    ]
    assert {p: digest(p) for p in (mp4, mkv)} == before
    assert not [p for p in out.iterdir() if p.name.startswith(".whisper-subtitler-")]  # no temporary file left
    files = json.loads(result.stdout)["files"]
    assert [len(f["outputs"]) for f in files] == [4, 4]


def test_embed_into_mp4_adds_a_mov_text_track_and_copies_the_video(run):
    _, out, mp4, _, _, _ = run
    streams = probe(out / "talk.subtitled.mp4", "-count_packets")
    (sub,) = [s for s in streams if s["codec_type"] == "subtitle"]
    assert sub["codec_name"] == "mov_text"
    assert sub["tags"]["language"] == "eng"
    assert sub["disposition"]["default"] == 1
    (video,) = [s for s in streams if s["codec_type"] == "video"]
    (original,) = [s for s in probe(mp4, "-count_packets") if s["codec_type"] == "video"]
    assert video["codec_name"] == original["codec_name"] == "h264"
    assert video["nb_read_packets"] == original["nb_read_packets"]
    assert int(sub["nb_read_packets"]) >= len(list(srt.parse((out / "talk.srt").read_text())))


def test_embed_into_mkv_adds_srt_then_ass_with_language_title_and_one_default(run):
    _, out, _, mkv, _, _ = run
    streams = probe(out / "film.subtitled.mkv", "-count_packets")
    subs = [s for s in streams if s["codec_type"] == "subtitle"]
    assert [s["codec_name"] for s in subs] == ["subrip", "ass"]
    assert [s["tags"]["language"] for s in subs] == ["eng", "eng"]
    assert subs[0]["tags"]["title"] == "English"
    assert [s["disposition"]["default"] for s in subs] == [1, 0]
    video = [s for s in streams if s["codec_type"] == "video"]
    original = [s for s in probe(mkv, "-count_packets") if s["codec_type"] == "video"]
    assert [(v["codec_name"], v["nb_read_packets"]) for v in video] == [
        (o["codec_name"], o["nb_read_packets"]) for o in original
    ]


def test_burn_in_changes_the_picture_only_while_a_cue_is_shown(run):
    _, out, mp4, mkv, _, _ = run
    cues = list(srt.parse((out / "talk.srt").read_text()))
    first, last = cues[0].start.total_seconds(), cues[-1].end.total_seconds()
    inside = round((first + cues[0].end.total_seconds()) / 2 * FPS)
    outside = [round(0.3 * FPS), round((last + 0.5) * FPS)]  # before the speech, after the last cue
    for burned, source in ((out / "talk.burned.mp4", mp4), (out / "film.burned.mkv", mkv)):
        streams = probe(burned)
        assert [s["codec_name"] for s in streams if s["codec_type"] == "video"] == ["h264"]
        assert [s["codec_name"] for s in streams if s["codec_type"] == "audio"] == ["aac"]  # copied
        masks = {n: np.abs(frame(burned, n) - frame(source, n)).max(axis=2) > 60 for n in [inside, *outside]}
        changed = {n: int(m.sum()) for n, m in masks.items()}
        print(f"{burned.name}: pixels changed by more than 60 levels per frame: {changed}")
        assert changed[inside] > 200  # the text, its outline and shadow
        rows = np.flatnonzero(masks[inside].any(axis=1))
        assert rows.min() > SIZE[1] // 2  # at the bottom of the picture
        assert all(changed[n] <= 20 for n in outside)  # re-encoding noise only


def test_a_second_run_keeps_the_copies(run, cli):
    _, out, mp4, _, _, _ = run
    copy = out / "talk.subtitled.mp4"
    before = (digest(copy), copy.stat().st_mtime_ns)
    result = cli(
        "transcribe",
        str(mp4),
        "--model",
        "tiny.en",
        "--no-diarize",
        "--format",
        "srt,ass",
        "--embed",
        "--burn-in",
        "--output-dir",
        str(out),
        "--json",
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["files"][0]["status"] == "skipped"
    assert (digest(copy), copy.stat().st_mtime_ns) == before


def test_burn_in_without_libass_fails_the_file_with_exit_code_3(run, cli, tmp_path):
    """An ffmpeg whose filter list has neither 'ass' nor 'subtitles' (a wrapper around the real one)."""
    _, _, mp4, _, _, _ = run
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "ffmpeg"
    real = shutil.which("ffmpeg")
    fake.write_text(f"""#!{sys.executable}
import os, subprocess, sys
if "-filters" in sys.argv:
    out = subprocess.run([{real!r}, *sys.argv[1:]], capture_output=True, text=True).stdout
    print("\\n".join(ln for ln in out.splitlines() if " ass " not in ln and " subtitles " not in ln))
else:
    os.execv({real!r}, [{real!r}, *sys.argv[1:]])
""")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    result = cli(
        "transcribe",
        str(mp4),
        "--model",
        "tiny.en",
        "--no-diarize",
        "--burn-in",
        "--output-dir",
        str(tmp_path / "out"),
        env=env,
    )
    assert result.returncode == 3, result.stderr
    lines = [ln for ln in result.stderr.splitlines() if ln.startswith("failed:")]
    assert len(lines) == 1 and str(mp4) in lines[0] and "'ass' or 'subtitles' filter" in lines[0]
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())


def test_burn_in_without_any_font_fails_the_file_before_transcribing_it(run, cli, tmp_path):
    """A fontconfig that offers libass no font (a static ffmpeg on a server without fonts): ffmpeg would write the
    picture unchanged and exit 0; the file fails with exit code 3 and nothing is written."""
    _, _, mp4, _, _, _ = run
    empty = tmp_path / "fonts.conf"
    empty.write_text(f'<?xml version="1.0"?>\n<fontconfig><cachedir>{tmp_path / "cache"}</cachedir></fontconfig>\n')
    out = tmp_path / "out"
    args = ("transcribe", str(mp4), "--model", "tiny.en", "--no-diarize", "--burn-in", "--output-dir", str(out))
    result = cli(*args, env={"FONTCONFIG_FILE": str(empty)})
    assert result.returncode == 3, result.stderr
    lines = [ln for ln in result.stderr.splitlines() if ln.startswith("failed:")]
    assert len(lines) == 1 and str(mp4) in lines[0] and "found no font" in lines[0], result.stderr
    assert "Traceback" not in result.stderr
    assert not out.exists() or not list(out.iterdir())
