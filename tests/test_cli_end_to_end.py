"""`whisper-subtitler transcribe` as a user runs it: a real video of real speech, the default (embedded) model."""

from __future__ import annotations

import json

import jiwer
import pytest
import srt
import webvtt

from tests import media

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def transcribed(sample_mp4, tmp_path_factory):
    from tests.conftest import run_cli

    out = tmp_path_factory.mktemp("out")
    result = run_cli("transcribe", str(sample_mp4), "--output-dir", str(out), "--format", "srt,vtt,json")
    assert result.returncode == 0, result.stderr
    return out, result


def test_writes_srt_and_vtt_named_after_the_input(transcribed):
    out, result = transcribed
    assert sorted(p.name for p in out.iterdir()) == ["x.json", "x.srt", "x.vtt"]
    assert result.stdout == ""  # stdout is for data only; progress and messages go to stderr
    assert "Traceback" not in result.stderr


def test_word_error_rate_on_real_speech(transcribed):
    out, _ = transcribed
    hypothesis = " ".join(s.content for s in srt.parse((out / "x.srt").read_text(encoding="utf-8")))
    error = jiwer.wer(media.normalize(media.sample_reference_text()), media.normalize(hypothesis))
    print(f"WER on pyannote sample.wav with the default model: {error:.3f}")
    assert error <= 0.30


def test_cue_times_come_from_word_timestamps(transcribed):
    out, _ = transcribed
    cues = list(srt.parse((out / "x.srt").read_text(encoding="utf-8")))
    assert len(cues) >= 5  # 23 s of speech
    starts = [c.start.total_seconds() for c in cues]
    ends = [c.end.total_seconds() for c in cues]
    assert starts == sorted(starts)
    assert all(s < e for s, e in zip(starts, ends))
    assert all(e <= s2 for e, s2 in zip(ends, starts[1:]))  # no overlaps
    assert starts[0] > 6.0  # the sample opens with 6.7 s of silence: nothing is subtitled over it
    duration = json.loads((out / "x.json").read_text())["duration"]  # 30 s plus the AAC encoder's padding
    assert 30.0 <= duration < 30.1 and ends[-1] <= duration + 1e-3  # the last cue may run to the end, not past
    # Word timestamps are at 20 ms resolution, not whole seconds.
    assert sum(1 for t in starts + ends if abs(t - round(t)) > 1e-6) >= len(cues)


def test_srt_and_vtt_parse_and_agree(transcribed):
    out, _ = transcribed
    text = (out / "x.srt").read_text(encoding="utf-8")
    srt_cues = list(srt.parse(text))
    assert srt.compose(srt_cues) == text  # the strictest SRT parser reads it back unchanged
    vtt = webvtt.read(str(out / "x.vtt"))
    assert len(vtt.captions) == len(srt_cues)
    for a, b in zip(srt_cues, vtt.captions):
        assert a.content == b.text
        assert srt.timedelta_to_srt_timestamp(a.start).replace(",", ".") == b.start


def test_bad_inputs_fail_cleanly_and_the_batch_goes_on(tmp_path, sample_mp4, cli):
    empty = tmp_path / "empty.mp4"
    empty.touch()
    text = tmp_path / "text.mp4"
    text.write_text("hello\n" * 50)
    noaudio = media.video_without_audio(tmp_path / "noaudio.mp4")
    good = tmp_path / "good.wav"
    media.ffmpeg("-i", str(media.SAMPLE_WAV), "-t", "12", str(good))
    bad = [tmp_path / "missing.mp4", tmp_path / "somedir", empty, text, noaudio]
    (tmp_path / "somedir").mkdir()
    out = tmp_path / "out"
    result = cli("transcribe", *map(str, bad), str(good), "--model", "tiny.en", "--output-dir", str(out))
    assert result.returncode == 1
    assert "Traceback" not in result.stderr and result.stdout == ""
    failed = [line for line in result.stderr.splitlines() if line.startswith("failed:")]
    assert len(failed) == len(bad)
    for path in bad:
        assert sum(str(path) in line for line in failed) == 1
    assert sorted(p.name for p in out.iterdir()) == ["good.srt", "good.vtt"]  # nothing for the bad ones


@pytest.mark.parametrize("make_bad", ["missing", "directory", "empty", "text", "noaudio"])
def test_one_bad_input_alone(tmp_path, cli, make_bad):
    path = tmp_path / "in.mp4"
    if make_bad == "directory":
        path.mkdir()
    elif make_bad == "empty":
        path.touch()
    elif make_bad == "text":
        path.write_text("not a video")
    elif make_bad == "noaudio":
        media.video_without_audio(path)
    out = tmp_path / "out"
    # without diarization: its models' start-up (a pyannote import of 10 s) is not what this checks
    result = cli("transcribe", str(path), "--model", "tiny.en", "--no-diarize", "--output-dir", str(out))
    assert result.returncode == 1
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and str(path) in lines[0], result.stderr
    assert not out.exists() or not any(out.iterdir())


def test_cue_readability_figures_on_real_speech(transcribed):
    """bench/cue_stats.py on the saved transcript: hard limits always met, soft ones where the speech allows."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    out, _ = transcribed
    script = Path(__file__).resolve().parent.parent / "bench" / "cue_stats.py"
    result = subprocess.run(
        [sys.executable, str(script), str(out / "x.json"), "--json"], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    figures = json.loads(result.stdout)
    print("cue figures on pyannote sample.wav:", figures)
    assert figures["within_line_width_pct"] == 100.0 and figures["within_line_count_pct"] == 100.0
    assert figures["end_after_start_pct"] == 100.0 and figures["overlaps"] == 0
    assert figures["within_cps_where_possible_pct"] >= 95.0
    assert figures["within_duration_where_possible_pct"] >= 95.0


def test_check_finds_no_fault_the_speech_allowed_avoiding(transcribed):
    """`check` on the SRT and WebVTT just written (issue 29); it costs no model run."""
    from tests.conftest import run_cli
    from tests.cue_helpers import assert_check_passes

    out, _ = transcribed
    for suffix in ("srt", "vtt"):
        assert_check_passes(out / f"x.{suffix}")
    result = run_cli("check", str(out / "x.srt"), "--json")
    assert result.returncode == 0, result.stdout  # info faults (the speech is faster) do not fail
    assert json.loads(result.stdout)["files"][0]["cues"] >= 5
