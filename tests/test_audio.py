"""Audio extraction with ffmpeg: real containers from real speech, and the inputs it must refuse."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from tests import media
from whisper_subtitler.audio import extract_audio
from whisper_subtitler.errors import InputError


@pytest.fixture(scope="module")
def sample_samples():
    return extract_audio(media.SAMPLE_WAV).samples


@pytest.mark.parametrize(
    "suffix,codec",
    [
        (".mp4", ("-c:a", "aac")),
        (".mkv", ("-c:a", "libopus")),
        (".mov", ("-c:a", "aac")),
        (".webm", ("-c:a", "libopus")),
    ],
)
def test_video_containers_decode_to_16k_mono(tmp_path, suffix, codec, sample_samples):
    video = media.video_from_audio(media.SAMPLE_WAV, tmp_path / f"x{suffix}", extra=codec)
    audio = extract_audio(video)
    assert audio.sample_rate == 16_000 and audio.samples.dtype == np.float32 and audio.samples.ndim == 1
    assert abs(audio.duration - 30.0) < 0.15
    # Lossy codecs change samples, not the signal: same energy over time as the WAV.
    n = min(len(audio.samples), len(sample_samples))
    ours = np.abs(audio.samples[:n]).reshape(-1, 1600)[: n // 1600].mean(axis=1)
    ref = np.abs(sample_samples[:n]).reshape(-1, 1600)[: n // 1600].mean(axis=1)
    assert np.corrcoef(ours, ref)[0, 1] > 0.9


@pytest.mark.parametrize(
    "suffix,args",
    [
        (".mp3", ("-c:a", "libmp3lame")),
        (".flac", ()),
        (".wav", ("-ar", "44100", "-ac", "2")),
        (".ogg", ("-c:a", "libvorbis")),
    ],
)
def test_audio_files(tmp_path, suffix, args):
    target = tmp_path / f"a{suffix}"
    media.ffmpeg("-i", str(media.SAMPLE_WAV), *args, str(target))
    audio = extract_audio(target)
    assert abs(audio.duration - 30.0) < 0.1 and np.abs(audio.samples).max() > 0.05


def test_second_audio_track(tmp_path):
    target = tmp_path / "two.mkv"
    media.ffmpeg(
        "-i",
        str(media.SAMPLE_WAV),
        "-f",
        "lavfi",
        "-i",
        "anullsrc=r=16000:cl=mono",
        "-t",
        "30",
        "-map",
        "0:a",
        "-map",
        "1:a",
        "-c:a",
        "flac",
        str(target),
    )
    assert np.abs(extract_audio(target, audio_track=0).samples).max() > 0.05
    assert np.abs(extract_audio(target, audio_track=1).samples).max() == 0.0
    with pytest.raises(InputError, match="no audio track 2"):
        extract_audio(target, audio_track=2)


def test_names_ffmpeg_could_misread(tmp_path):
    for name in ("-starts with dash.wav", "http:colon.wav", "ünïcode name.wav"):
        target = tmp_path / name
        target.write_bytes(media.SAMPLE_WAV.read_bytes())
        assert abs(extract_audio(target).duration - 30.0) < 0.01


def test_bad_inputs_are_one_clear_error(tmp_path):
    empty = tmp_path / "empty.mp4"
    empty.touch()
    text = tmp_path / "notes.mp4"
    text.write_text("this is not a video\n" * 20)
    silent_video = media.video_without_audio(tmp_path / "noaudio.mp4")
    dangling = tmp_path / "dangling.wav"
    dangling.symlink_to(tmp_path / "gone.wav")
    fifo = tmp_path / "pipe.wav"
    os.mkfifo(fifo)
    cases = {
        tmp_path / "missing.mp4": "no such file",
        tmp_path: "is a directory",
        empty: "empty file",
        text: "not a readable media file",
        silent_video: "no audio stream",
        dangling: "dangling symbolic link",
        fifo: "not a regular file",
    }
    for path, reason in cases.items():
        with pytest.raises(InputError) as e:
            extract_audio(path)
        assert str(path) in e.value.message and reason in e.value.message
        assert "\n" not in e.value.message


def test_truncated_file_is_reported(tmp_path):
    full = media.video_from_audio(
        media.SAMPLE_WAV, tmp_path / "full.mp4", extra=("-c:a", "aac", "-movflags", "+faststart")
    )
    data = full.read_bytes()
    cut = tmp_path / "cut.mp4"
    cut.write_bytes(data[: len(data) // 2])  # the moov atom at the front still declares 30 s
    with pytest.raises(InputError, match="truncated"):
        extract_audio(cut)


@pytest.mark.parametrize(
    "suffix,codec", [(".wav", "pcm_s16le"), (".wav", "pcm_f32le"), (".aiff", "pcm_s16be"), (".flac", "flac")]
)
def test_cut_wav_aiff_and_flac_are_reported_truncated(tmp_path, suffix, codec):
    full = tmp_path / f"full{suffix}"
    media.ffmpeg("-ss", "6", "-t", "5", "-i", str(media.SAMPLE_WAV), "-c:a", codec, str(full))
    assert abs(extract_audio(full).duration - 5.0) < 0.01  # whole, it passes
    data = full.read_bytes()
    cut = tmp_path / f"cut{suffix}"
    cut.write_bytes(data[: round(len(data) * 2.3 / 5)])  # the header still declares 5 s; about 2.3 s are left
    with pytest.raises(InputError) as e:
        extract_audio(cut)
    assert str(cut) in e.value.message and "truncated" in e.value.message and "of the 5.0 s" in e.value.message


def test_a_file_is_probed_once_while_it_stays_the_same(tmp_path, monkeypatch):
    """``probe_json`` answers a second question about an unchanged file without starting ffprobe again; a file that
    changed (new bytes, new modification time) or was replaced is probed again."""
    import subprocess

    from whisper_subtitler import audio

    calls = []
    real_run = subprocess.run

    def counting_run(cmd, *args, **kwargs):
        if Path(cmd[0]).name == "ffprobe":
            calls.append(cmd)
        return real_run(cmd, *args, **kwargs)

    monkeypatch.setattr(audio.subprocess, "run", counting_run)
    clip = tmp_path / "a.wav"
    media.ffmpeg("-f", "lavfi", "-i", "sine=frequency=440:duration=1", str(clip))
    first = audio.probe_json(clip)
    first["format"]["duration"] = "mutated"  # the caller's copy: the next answer must not see it
    second = audio.probe_json(clip)
    assert len(calls) == 1
    assert float(second["format"]["duration"]) == pytest.approx(1.0, abs=0.05)
    media.ffmpeg("-f", "lavfi", "-i", "sine=frequency=440:duration=2", str(tmp_path / "b.wav"))
    os.replace(tmp_path / "b.wav", clip)  # another file under the same name
    third = audio.probe_json(clip)
    assert len(calls) == 2
    assert float(third["format"]["duration"]) == pytest.approx(2.0, abs=0.05)
