"""A batch as scripts and wrappers see it: output collisions refused before any work, SIGHUP ending a batch like
Ctrl-C, ``--progress json``, shell completion. No model runs here (the SIGTERM test on a real run is in
test_batch_hardening.py)."""

from __future__ import annotations

import io
import json
import os
import signal
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests import media
from whisper_subtitler.cli import app


@pytest.fixture
def no_work(monkeypatch):
    """Fail the test if the run gets as far as choosing a device or making the pipeline."""
    from whisper_subtitler import pipeline, platform

    def refuse(*args, **kwargs):
        raise AssertionError("the run went past the collision check")

    monkeypatch.setattr(platform, "configure", refuse)
    monkeypatch.setattr(pipeline, "Pipeline", refuse)


@pytest.fixture(scope="module")
def tones(tmp_path_factory) -> Path:
    """es/pangrama.wav, fr/pangrama.wav and es/pangrama.mp3: one second of tone each."""
    root = tmp_path_factory.mktemp("tones")
    for folder in ("es", "fr"):
        (root / folder).mkdir()
        media.ffmpeg("-f", "lavfi", "-i", "sine=d=1", str(root / folder / "pangrama.wav"))
    media.ffmpeg("-i", str(root / "es" / "pangrama.wav"), str(root / "es" / "pangrama.mp3"))
    return root


@pytest.mark.parametrize("second", ["fr/pangrama.wav", "es/pangrama.mp3"])
def test_two_inputs_for_one_output_are_a_usage_error_before_any_work(tones, tmp_path, no_work, second):
    first, other = tones / "es" / "pangrama.wav", tones / second
    result = CliRunner().invoke(app, ["transcribe", str(first), str(other), "-o", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    line = " ".join(result.output.split())  # Rich may wrap the message
    assert str(first) in line and str(other) in line and "pangrama.srt" in line and "--name-template" in line
    assert not (tmp_path / "out").exists()


def test_a_template_that_tells_them_apart_is_accepted(tones, tmp_path):
    inputs = [str(tones / "es" / "pangrama.wav"), str(tones / "fr" / "pangrama.wav"), str(tones / "es/pangrama.mp3")]
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app,
        ["transcribe", *inputs, "-o", str(out), "--name-template", "{parent}-{stem}.{ext}", "--dry-run", "--json"],
    )
    assert result.exit_code == 0, result.output
    planned = [o["path"] for f in json.loads(result.stdout)["files"] for o in f["outputs"]]
    assert sorted(Path(p).name for p in planned) == [
        "es-pangrama.mp3.srt",
        "es-pangrama.mp3.vtt",
        "es-pangrama.wav.srt",
        "es-pangrama.wav.vtt",
        "fr-pangrama.wav.srt",
        "fr-pangrama.wav.vtt",
    ]


def test_sighup_ends_the_batch_like_ctrl_c(tmp_path):
    from whisper_subtitler.interrupts import ending_on_signals
    from whisper_subtitler.progress import JsonProgress
    from whisper_subtitler.results import FileResult, FileStatus
    from whisper_subtitler.runner import run_batch

    done: list[Path] = []

    def process(source: Path, on_stage) -> FileResult:
        if source.name == "b":
            os.kill(os.getpid(), signal.SIGHUP)  # handled before the next line runs
        done.append(source)
        return FileResult(source=source, status=FileStatus.DONE)

    lines = io.StringIO()
    inherited = signal.signal(signal.SIGHUP, signal.SIG_DFL)  # as from a terminal, even when run under nohup
    try:
        with ending_on_signals():
            summary = run_batch(process, [tmp_path / n for n in "abc"], JsonProgress(3, lines))
        assert signal.getsignal(signal.SIGHUP) == signal.SIG_DFL  # the previous handler is back
    finally:
        signal.signal(signal.SIGHUP, inherited)
    assert done == [tmp_path / "a"] and [r.source.name for r in summary.results] == ["a"]
    assert summary.interrupted and summary.exit_code == 129 and summary.to_json()["exit_code"] == 129
    events = [json.loads(line) for line in lines.getvalue().splitlines()]
    assert [(e["file"][-1], e["stage"]) for e in events] == [("a", "start"), ("a", "done"), ("b", "start")]


def test_json_progress_lines_rise_to_one_per_file():
    from whisper_subtitler.progress import JsonProgress
    from whisper_subtitler.results import FileResult, FileStatus
    from whisper_subtitler.stages import Stage

    out = io.StringIO()
    with JsonProgress(1, out) as progress:
        progress.start_file(Path("talk.mp4"))
        for stage, fraction in [(Stage.AUDIO, None), (Stage.TRANSCRIBE, None), (Stage.TRANSCRIBE, 0.4)]:
            progress.stage(stage, fraction)
        progress.stage(Stage.TRANSCRIBE, 0.2)  # never backwards
        progress.stage(Stage.WRITE)
        progress.end_file(FileResult(source=Path("talk.mp4"), status=FileStatus.DONE))
    events = [json.loads(line) for line in out.getvalue().splitlines()]
    assert set(events[0]) == {"file", "index", "total", "stage", "fraction", "elapsed"}
    assert [(e["stage"], e["fraction"]) for e in events] == [
        ("start", 0.0),
        ("audio", 0.0),
        ("transcribe", 0.0),
        ("transcribe", 0.4),
        ("write", 0.4),
        ("done", 1.0),
    ]


def test_shell_completion_and_version():
    runner = CliRunner()
    env = {"_WHISPER_SUBTITLER_COMPLETE": "complete_bash", "COMP_CWORD": "2"}
    words = "whisper-subtitler transcribe --compute"
    completed = runner.invoke(app, [], prog_name="whisper-subtitler", env={**env, "COMP_WORDS": words})
    assert completed.output.split() == ["--compute-type"]
    assert "--install-completion" in runner.invoke(app, ["--help"]).output
    assert runner.invoke(app, ["--version"]).output.startswith("whisper-subtitler ")
