"""ffmpeg reads our SRT and WebVTT and muxes them into an MP4 as ``mov_text``."""

import json
import shutil
import subprocess

import pytest

from tests.writer_cases import case
from whisper_subtitler.writers import WriterOptions, encode, render

pytestmark = pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="ffmpeg not installed")


@pytest.fixture(scope="module")
def tiny_mp4(tmp_path_factory):
    path = tmp_path_factory.mktemp("mux") / "tiny.mp4"
    subprocess.run(
        [
            "ffmpeg",
            "-nostdin",
            "-v",
            "error",
            "-f",
            "lavfi",
            "-i",
            "color=c=black:s=64x64:r=24:d=14",
            "-f",
            "lavfi",
            "-i",
            "sine=frequency=440:duration=14",
            "-c:v",
            "libx264",
            "-c:a",
            "aac",
            "-shortest",
            str(path),
        ],
        check=True,
    )
    return path


@pytest.mark.parametrize(
    "fmt,options", [("srt", WriterOptions()), ("srt", WriterOptions(bom=True, crlf=True)), ("vtt", WriterOptions())]
)
def test_ffmpeg_muxes_subtitles_as_mov_text(tiny_mp4, tmp_path, fmt, options):
    transcript, cues = case("tricky")
    sub = tmp_path / f"x.{fmt}"
    sub.write_bytes(encode(render(fmt, transcript, cues, options), fmt, options))
    out = tmp_path / "muxed.mp4"
    subprocess.run(
        [
            "ffmpeg",
            "-nostdin",
            "-v",
            "error",
            "-i",
            str(tiny_mp4),
            "-i",
            str(sub),
            "-map",
            "0",
            "-map",
            "1",
            "-c:v",
            "copy",
            "-c:a",
            "copy",
            "-c:s",
            "mov_text",
            str(out),
        ],
        check=True,
        capture_output=True,
    )
    probe = subprocess.run(
        [
            "ffprobe",
            "-v",
            "error",
            "-select_streams",
            "s",
            "-count_packets",
            "-show_entries",
            "stream=codec_name,nb_read_packets",
            "-of",
            "json",
            str(out),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    (stream,) = json.loads(probe.stdout)["streams"]
    assert stream["codec_name"] == "mov_text"
    assert int(stream["nb_read_packets"]) >= len(cues)
