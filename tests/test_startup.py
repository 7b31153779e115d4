"""Start-up (issue 48): nothing heavy is imported before it is needed, and a batch whose inputs all fail is answered
without probing the device or loading a model. Checked by what real processes import (``-X importtime``, through
``PYTHONPROFILEIMPORTTIME``), never by timing them: the timings are in docs/performance.md, "Start-up"."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

# Packages that cost a second or more to import (or compile on import), none of them needed to read the flags, to
# print help or to find that an input does not exist.
HEAVY = (
    "torch",
    "torchaudio",
    "whisper",
    "pyannote",
    "lightning",
    "pytorch_lightning",
    "ray",
    "fastapi",
    "uvicorn",
    "numba",
    "scipy",
    "onnxruntime",
    "silero_vad",
    "ctranslate2",
)


def imported(stderr: str) -> set[str]:
    """The modules a process imported, from its ``-X importtime`` lines on stderr."""
    lines = [line for line in stderr.splitlines() if line.startswith("import time:") and "|" in line]
    return {line.rsplit("|", 1)[1].strip() for line in lines}


def heavy(modules: set[str]) -> set[str]:
    """The packages of ``HEAVY`` among ``modules``."""
    return {name.split(".")[0] for name in modules} & set(HEAVY)


def messages(stderr: str) -> list[str]:
    """stderr without the ``-X importtime`` lines."""
    return [line for line in stderr.splitlines() if not line.startswith("import time:")]


def traced(
    cli, *args: str, cwd: Path, env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess, set[str]]:
    """``whisper-subtitler ARGS`` as a real process (with ``env`` added), with the modules it imported."""
    result = cli(*args, cwd=cwd, env={**(env or {}), "PYTHONPROFILEIMPORTTIME": "1"})
    return result, imported(result.stderr)


def test_the_import_trace_is_read(cli, tmp_path):
    """The trace names what is imported: the command line's modules, and torch once a model is needed."""
    script = "import whisper_subtitler.cli.app, torch"
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", script], capture_output=True, text=True, timeout=300
    )
    modules = imported(result.stderr)
    assert {"whisper_subtitler.cli.app", "typer"} <= modules
    assert heavy(modules) >= {"torch"}


def test_importing_the_command_line_and_the_package_imports_nothing_heavy():
    script = (
        "import sys, whisper_subtitler, whisper_subtitler.cli.app; "
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize("args", [("--help",), ("transcribe", "--help"), ("--version",)])
def test_help_imports_nothing_heavy(cli, tmp_path, args):
    result, modules = traced(cli, *args, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip()
    assert heavy(modules) == set()


def test_a_missing_input_fails_without_torch_or_a_model(cli, tmp_path):
    result, modules = traced(cli, "transcribe", "missing.mp4", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert messages(result.stderr) == ["failed: missing.mp4: no such file"]
    assert result.stdout == ""
    assert heavy(modules) == set()
    assert list(tmp_path.iterdir()) == []


def test_a_batch_of_inputs_that_all_fail_is_answered_at_once(cli, tmp_path):
    """Each input gets its one line and its record in the --json summary, in order, with exit code 1; nothing heavy
    is imported, also with options that only a full run would use."""
    (tmp_path / "folder").mkdir()
    (tmp_path / "empty.wav").touch()
    inputs = ["gone.mp4", "folder", "empty.wav", "also gone.mkv"]
    result, modules = traced(
        cli, "transcribe", *inputs, "--json", "--language", "German", "--max-line-width", "30", cwd=tmp_path
    )
    assert result.returncode == 1, result.stderr
    assert messages(result.stderr) == [
        "failed: gone.mp4: no such file",
        "failed: folder: is a directory (use --recursive to process the files in it)",
        "failed: empty.wav: empty file (0 bytes)",
        "failed: also gone.mkv: no such file",
    ]
    summary = json.loads(result.stdout)
    assert summary["exit_code"] == 1 and summary["counts"] == {"done": 0, "skipped": 0, "failed": 4}
    assert [f["input"] for f in summary["files"]] == inputs
    assert all(f["status"] == "failed" and f["input"] in f["error"] for f in summary["files"])
    assert heavy(modules) == set()


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (("--language", "Klingon"), "unknown language 'Klingon'"),
        (("--format", "srt,doc"), "doc"),
        (("--no-diarize", "--format", "rttm"), "rttm"),
        (("--patience", "2"), "--patience"),
    ],
)
def test_a_usage_error_still_comes_before_the_inputs(cli, tmp_path, flags, message):
    """Invalid options end the run with exit code 2 before any input is looked at, as before, and without torch."""
    result, modules = traced(cli, "transcribe", "missing.mp4", *flags, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    lines = messages(result.stderr)
    assert lines and lines[0].startswith("error:") and message in lines[0], lines
    assert not any(line.startswith("failed:") for line in lines)
    assert heavy(modules) == set()


def test_a_missing_input_whose_outputs_exist_is_still_skipped(cli, tmp_path):
    """The short way is only for inputs that would fail: one with all its outputs is skipped, as before."""
    for name in ("talk.srt", "talk.vtt"):
        (tmp_path / name).write_text("kept\n", encoding="utf-8")
    result = cli("transcribe", "talk.mp4", "--no-diarize", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["files"][0]["status"] == "skipped"


def test_the_copied_language_table_is_whispers():
    """``languages.WHISPER_LANGUAGES`` and ``WHISPER_ALIASES`` are openai-whisper's tables (whisper/tokenizer.py)."""
    from whisper.tokenizer import LANGUAGES, TO_LANGUAGE_CODE

    from whisper_subtitler.languages import WHISPER_ALIASES, WHISPER_LANGUAGES, whisper_code

    assert WHISPER_LANGUAGES == LANGUAGES
    assert {**{name: code for code, name in LANGUAGES.items()}, **WHISPER_ALIASES} == TO_LANGUAGE_CODE
    for value in [*LANGUAGES, *TO_LANGUAGE_CODE, "German", "CASTILIAN", "EN"]:
        v = value.lower()
        assert whisper_code(value) == (v if v in LANGUAGES else TO_LANGUAGE_CODE[v])
    assert whisper_code("klingon") is None and whisper_code("") is None


def test_a_requirement_asked_for_is_still_checked_before_the_inputs(cli, tmp_path):
    """Speakers asked for with a pipeline that cannot be fetched (offline): exit 3 and its reason, as in a full run,
    not the missing input's exit 1; still no Whisper loaded."""
    result, modules = traced(
        cli,
        "transcribe",
        "missing.mp4",
        "--diarization-model",
        "pyannote/speaker-diarization-community-1",
        cwd=tmp_path,
        env={"HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")},
    )
    assert result.returncode == 3, result.stderr
    lines = messages(result.stderr)
    assert lines[0].startswith("error:") and "pyannote/speaker-diarization-community-1" in lines[0], lines
    assert not any(line.startswith("failed:") for line in lines)
    assert "whisper" not in heavy(modules)
