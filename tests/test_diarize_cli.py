"""`whisper-subtitler transcribe --diarize` as a user runs it: RTTM scored against references, speakers on SRT
cues, usage errors, and a fake Hugging Face token that must appear nowhere."""

from __future__ import annotations

import shutil

import pytest

from tests import media
from tests.media_speech import two_voice_clip
from tests.test_diarize_sample import MAX_DER, der

FAKE_TOKEN = "hf_FAKEtokenCliMustNotLeak987654321"


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    return two_voice_clip(tmp_path_factory.mktemp("speech") / "two_voices.wav")


def read_rttm_turns(path):
    from whisper_subtitler.types import SpeakerTurn

    turns = []
    for line in path.read_text().splitlines():
        fields = line.split()
        assert len(fields) == 10 and fields[0] == "SPEAKER" and fields[5:7] == ["<NA>", "<NA>"], line
        turns.append(SpeakerTurn(float(fields[3]), float(fields[3]) + float(fields[4]), fields[7]))
    return turns


@pytest.mark.slow
def test_sample_rttm_from_the_cli_has_der_at_most_10_percent(cli, tmp_path):
    source = shutil.copy(media.SAMPLE_WAV, tmp_path / "sample.wav")
    result = cli(
        "transcribe",
        str(source),
        "--diarize",
        "--format",
        "rttm",
        "--model",
        "tiny.en",
        "--output-dir",
        str(tmp_path / "out"),
    )
    assert result.returncode == 0, result.stderr
    rttm = tmp_path / "out" / "sample.rttm"
    assert rttm.read_text().startswith("SPEAKER sample 1 ")
    assert result.stdout == ""  # data goes to files, logs to stderr
    score = der(media.SAMPLE_RTTM, read_rttm_turns(rttm), "sample")
    assert score["diarization error rate"] <= MAX_DER, score


@pytest.mark.slow
def test_two_voice_clip_srt_shows_the_right_speaker_on_each_cue(cli, clip, tmp_path):
    import srt

    result = cli(
        "transcribe",
        str(clip.wav),
        "--num-speakers",
        "2",
        "--speaker-names",
        "Ann,Bob",
        "--format",
        "srt,rttm",
        "--model",
        "tiny.en",
        "--output-dir",
        str(tmp_path),
        "--speaker-style",
        "label",
    )  # the label on every cue, to check each cue's speaker
    assert result.returncode == 0, result.stderr
    turns = read_rttm_turns(tmp_path / "two_voices.rttm")
    assert {t.speaker for t in turns} == {"Ann", "Bob"}  # --num-speakers 2 and the names
    score = der(clip.rttm, turns, clip.wav.stem)
    assert score["diarization error rate"] <= MAX_DER, score

    names = {"A": "Ann", "B": "Bob"}  # A speaks first, so A's label is renamed to the first name
    cues = list(srt.parse((tmp_path / "two_voices.srt").read_text()))
    assert len(cues) >= len(clip.turns) // 2
    for cue in cues:
        start, end = cue.start.total_seconds(), cue.end.total_seconds()
        overlap = {}
        for t_start, t_end, label in clip.turns:
            overlap[label] = overlap.get(label, 0.0) + max(0.0, min(end, t_end) - max(start, t_start))
        expected = names[max(overlap, key=overlap.get)]
        assert cue.content.startswith(f"[{expected}]: "), (cue.start, cue.end, cue.content, overlap)
        assert cue.content.count("]: ") == 1  # one speaker per cue


def test_min_speakers_above_max_speakers_is_a_usage_error(cli, clip):
    result = cli("transcribe", str(clip.wav), "--diarize", "--min-speakers", "3", "--max-speakers", "2")
    assert result.returncode == 2
    assert "--min-speakers (3) is greater than --max-speakers (2)" in result.stderr
    assert "Traceback" not in result.stderr


def test_rttm_without_diarization_is_a_usage_error(cli, clip):
    result = cli("transcribe", str(clip.wav), "--format", "rttm", "--no-diarize")
    assert result.returncode == 2 and "--no-diarize" in result.stderr


@pytest.mark.parametrize("extra", [(), ("-vv",)])
def test_fake_hf_token_appears_nowhere_when_loading_fails(cli, clip, tmp_path, extra):
    """A hub pipeline that cannot be fetched (offline): one error line with the fix, exit 3, no token anywhere."""
    result = cli(
        "transcribe",
        str(clip.wav),
        "--diarization-model",
        "pyannote/speaker-diarization-community-1",
        "--model",
        "tiny.en",
        "--output-dir",
        str(tmp_path),
        *extra,
        env={"HF_TOKEN": FAKE_TOKEN, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")},
    )
    assert result.returncode == 3, result.stderr
    assert FAKE_TOKEN not in result.stdout + result.stderr
    assert FAKE_TOKEN[3:12] not in result.stdout + result.stderr  # not even a part of it
    assert "pyannote/speaker-diarization-community-1" in result.stderr and "Traceback" not in result.stderr
    assert list(tmp_path.glob("*.srt")) == []  # failed before transcribing: nothing written


def test_format_all_without_diarization_is_not_an_rttm_request(cli, clip, tmp_path):
    result = cli(
        "transcribe", str(clip.wav), "--format", "all", "--no-diarize", "--dry-run", "--output-dir", str(tmp_path)
    )
    assert result.returncode == 0, result.stderr
    assert "two_voices.srt" in result.stdout and "two_voices.ass" in result.stdout
    assert "two_voices.rttm" not in result.stdout  # without speaker turns an RTTM would be empty: not written
