"""``whisper-subtitler format``: re-render saved transcripts with other rules, no model, no torch."""

import subprocess
import sys

import pytest
import srt
from typer.testing import CliRunner

from tests.writer_cases import case
from whisper_subtitler.cli import app
from whisper_subtitler.cues.width import display_width
from whisper_subtitler.reformat import reformat
from whisper_subtitler.writers import FORMATS, render

runner = CliRunner()


@pytest.fixture
def transcript_json(tmp_path):
    transcript, cues = case("tricky")
    path = tmp_path / "talk.json"
    path.write_text(render("json", transcript, cues), encoding="utf-8")
    return path


def test_format_renders_with_other_rules(transcript_json, tmp_path):
    out = tmp_path / "out"
    result = runner.invoke(
        app,
        [
            "format",
            str(transcript_json),
            "--format",
            "srt,vtt",
            "--max-line-width",
            "30",
            "--max-lines",
            "1",
            "-o",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    text = (out / "talk.srt").read_text(encoding="utf-8")
    assert srt.compose(srt.parse(text)) == text
    for sub in srt.parse(text):
        assert "\n" not in sub.content and display_width(sub.content) <= 30
    assert (out / "talk.vtt").read_text().startswith("WEBVTT")


def test_all_writes_every_format_and_never_the_input_itself(transcript_json):
    before = transcript_json.read_bytes()
    result = runner.invoke(app, ["format", str(transcript_json), "-f", "all"])
    assert result.exit_code == 0, result.output
    for writer in FORMATS.values():
        assert (transcript_json.parent / f"talk.{writer.extension}").exists()
    assert transcript_json.read_bytes() == before


def test_existing_outputs_are_kept_unless_overwrite(transcript_json):
    target = transcript_json.with_suffix(".srt")
    target.write_text("keep me")
    result = runner.invoke(app, ["format", str(transcript_json), "-f", "srt"])
    assert result.exit_code == 0 and target.read_text() == "keep me"
    result = runner.invoke(app, ["format", str(transcript_json), "-f", "srt", "--overwrite"])
    assert result.exit_code == 0 and target.read_text().startswith("1\n")


def test_bom_crlf_and_word_level_reach_the_files(transcript_json, tmp_path):
    result = runner.invoke(
        app,
        ["format", str(transcript_json), "-f", "srt,vtt", "--bom", "--crlf", "--word-level", "-o", str(tmp_path / "o")],
    )
    assert result.exit_code == 0, result.output
    data = (tmp_path / "o" / "talk.srt").read_bytes()
    assert data.startswith(b"\xef\xbb\xbf") and b"\r\n" in data
    assert b"<c>" in (tmp_path / "o" / "talk.vtt").read_bytes()


def test_bad_transcript_fails_that_file_with_exit_1(transcript_json, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{ not json")
    result = runner.invoke(app, ["format", str(bad), str(transcript_json), "-f", "srt"])
    assert result.exit_code == 1
    assert "bad.json" in result.output and transcript_json.with_suffix(".srt").exists()


def test_unknown_format_and_bad_option_are_usage_errors(transcript_json):
    assert runner.invoke(app, ["format", str(transcript_json), "-f", "docx"]).exit_code == 2
    assert runner.invoke(app, ["format", str(transcript_json), "--max-lines", "0"]).exit_code == 2


def test_reformat_function_reports_what_it_did(transcript_json, tmp_path):
    result = reformat(transcript_json, formats="srt,tsv", output_dir=tmp_path / "r")
    assert [p.name for p in result.outputs] == ["talk.srt", "talk.tsv"] and result.status == "done"
    assert "-->" in result.outputs[0].read_text(encoding="utf-8")  # cues were built


def test_format_path_imports_no_model_code(transcript_json, tmp_path):
    code = (
        "import sys; from typer.testing import CliRunner; from whisper_subtitler.cli import app; "
        f"r = CliRunner().invoke(app, ['format', {str(transcript_json)!r}, '-f', 'all', "
        f"'-o', {str(tmp_path / 'x')!r}]); "
        "assert r.exit_code == 0, r.output; "
        "bad = sorted({'torch', 'whisper', 'pyannote', 'numpy'} & set(sys.modules)); print(bad); sys.exit(bool(bad))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
