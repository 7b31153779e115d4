"""Diarization on by default, as a user meets it: two speakers are labelled without asking, ``--no-diarize``
turns it off, one speaker gets no labels at all, and a machine without pyannote.audio still gets subtitles."""

from __future__ import annotations

import json
import shutil

import pytest

from tests import media
from tests.cue_helpers import assert_check_passes
from tests.media_speech import VOICE_A, conversation


@pytest.fixture(scope="module")
def monologue(tmp_path_factory):
    """One espeak-ng voice, four sentences with pauses: one speaker."""
    script = [
        (VOICE_A, "The train to the coast leaves every hour from platform four."),
        (VOICE_A, "I have never seen so many people at the farmers market."),
        (VOICE_A, "Please remember to water the plants while I am away."),
        (VOICE_A, "The results of the survey will be published next week."),
    ]
    return conversation(script, tmp_path_factory.mktemp("mono") / "monologue.wav", gaps=(0.8,))


def words_speakers(path) -> set:
    data = json.loads(path.read_text())
    return {w["speaker"] for s in data["segments"] for w in s["words"]}


@pytest.mark.slow
def test_two_speakers_are_labelled_by_default_and_not_with_no_diarize(cli, tmp_path):
    source = shutil.copy(media.SAMPLE_WAV, tmp_path / "sample.wav")
    default = cli(
        "transcribe",
        str(source),
        "--model",
        "tiny.en",
        "--format",
        "srt,json",
        "--json",
        "--output-dir",
        str(tmp_path / "on"),
    )
    assert default.returncode == 0, default.stderr
    assert words_speakers(tmp_path / "on" / "sample.json") == {"SPEAKER_00", "SPEAKER_01"}
    assert "diarize" in json.loads(default.stdout)["files"][0]["timings"]
    assert "[SPEAKER_0" in (tmp_path / "on" / "sample.srt").read_text()
    assert_check_passes(tmp_path / "on" / "sample.srt")  # the labels leave no orphan word (issue 29)

    off = cli(
        "transcribe",
        str(source),
        "--model",
        "tiny.en",
        "--format",
        "srt,json",
        "--no-diarize",
        "--json",
        "--output-dir",
        str(tmp_path / "off"),
    )
    assert off.returncode == 0, off.stderr
    data = json.loads((tmp_path / "off" / "sample.json").read_text())
    assert words_speakers(tmp_path / "off" / "sample.json") == {None}
    assert "diarize" not in json.loads(off.stdout)["files"][0]["timings"] and data["turns"] == []
    assert "SPEAKER" not in (tmp_path / "off" / "sample.srt").read_text()
    assert_check_passes(tmp_path / "off" / "sample.srt")


@pytest.mark.slow
def test_one_speaker_gets_no_labels_in_any_format(cli, monologue, tmp_path):
    result = cli(
        "transcribe",
        str(monologue.wav),
        "--model",
        "tiny.en",
        "--format",
        "srt,vtt,txt,ass,json",
        "--output-dir",
        str(tmp_path),
    )
    assert result.returncode == 0, result.stderr
    assert words_speakers(tmp_path / "monologue.json") == {None}
    assert json.loads((tmp_path / "monologue.json").read_text())["turns"]  # diarization ran and found turns
    for suffix in ("srt", "txt"):
        text = (tmp_path / f"monologue.{suffix}").read_text()
        assert "SPEAKER" not in text and "\n- " not in text and not text.startswith("- "), text
    assert "<v " not in (tmp_path / "monologue.vtt").read_text()
    for suffix in ("srt", "vtt", "ass"):
        assert_check_passes(tmp_path / f"monologue.{suffix}")
    events = (tmp_path / "monologue.ass").read_text().split("[Events]")[1]
    assert "Dialogue:" in events and "SPEAKER" not in events  # no speaker style or name on any event


def test_help_says_diarization_is_on_by_default(cli):
    result = cli("transcribe", "--help", env={"COLUMNS": "240", "TERMINAL_WIDTH": "240"})
    assert result.returncode == 0
    assert "--no-diarize" in result.stdout and "On by default" in result.stdout


def test_speaker_options_with_no_diarize_are_a_usage_error(cli, tmp_path):
    result = cli("transcribe", str(tmp_path / "a.wav"), "--no-diarize", "--num-speakers", "2")
    assert result.returncode == 2 and "--no-diarize" in result.stderr and "Traceback" not in result.stderr
    result = cli("transcribe", str(tmp_path / "a.wav"), "--no-diarize", "--format", "rttm")
    assert result.returncode == 2 and "rttm" in result.stderr


@pytest.mark.parametrize("explicit, code", [((), 1), (("--diarize",), 3)])
def test_missing_pyannote_turns_the_default_off_but_fails_an_explicit_diarize(monkeypatch, tmp_path, explicit, code):
    """Without pyannote.audio (simulated: preflight fails as it would), the default goes on without speakers
    after one warning (here the input is not audio: exit 1 for that file), and an explicit --diarize is exit 3.
    (A batch whose inputs are all missing is answered before any of this: ``cli.precheck``.)"""
    from typer.testing import CliRunner

    import whisper_subtitler.diarize as diarize
    from whisper_subtitler.cli import app
    from whisper_subtitler.errors import MissingRequirementError

    def preflight(options):
        raise MissingRequirementError(
            "speaker diarization needs pyannote.audio, which cannot be imported", hint="install the diarization extra"
        )

    monkeypatch.setattr(diarize, "preflight", preflight)
    garbage = tmp_path / "not-audio.wav"
    garbage.write_bytes(b"this is not audio" * 64)
    result = CliRunner().invoke(app, ["transcribe", str(garbage), *explicit])
    assert result.exit_code == code, result.output
    if explicit:
        assert "pyannote.audio" in result.output
    else:
        assert "speaker labels are off" in result.output and "--no-diarize" in result.output
