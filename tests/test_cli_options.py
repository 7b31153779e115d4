"""Option parsing and validation of the CLI: usage errors are exit code 2, one line, before any model is loaded."""

from __future__ import annotations

import pytest

from whisper_subtitler import __version__


def test_version(cli):
    result = cli("--version")
    assert result.returncode == 0 and result.stdout.strip() == f"whisper-subtitler {__version__}"


def test_help_documents_exit_codes(cli):
    result = cli("transcribe", "--help", env={"COLUMNS": "240", "TERMINAL_WIDTH": "240"})
    assert result.returncode == 0
    for text in (
        "--gpu-backend",
        "--optimization-level",
        "--model",
        "--language",
        "--task",
        "--format",
        "--output-dir",
        "Exit codes",
        "130",
    ):
        assert text in result.stdout


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--gpu-backend", "tpu"], "tpu"),
        (["--optimization-level", "7"], "optimization-level"),
        (["--task", "summarize"], "summarize"),
        (["--format", "srt,docx"], "docx"),
        (["--language", "klingon"], "klingon"),
        (["--seed", "often"], "--seed"),
    ],
)
def test_invalid_values_are_usage_errors(tmp_path, cli, args, needle):
    clip = tmp_path / "a.wav"
    clip.write_bytes(b"RIFF")
    result = cli("transcribe", str(clip), *args)
    assert result.returncode == 2, result.stderr
    assert needle in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "a.srt").exists()


def test_invalid_gpu_backend_from_environment(tmp_path, cli):
    result = cli("transcribe", str(tmp_path / "a.wav"), env={"GPU_BACKEND": "quantum"})
    assert result.returncode == 2 and "quantum" in result.stderr


@pytest.mark.parametrize("machine", ["cpu", "cuda_no_driver"])
def test_unavailable_backend_falls_back_or_fails(machine, tmp_path, monkeypatch):
    """On a machine without a working CUDA device (probes simulated: a CPU-only torch build, a CUDA build without a
    driver), a CUDA request falls back to the CPU with a warning, or exits 4 with --no-fallback before any file."""
    from typer.testing import CliRunner

    from tests.test_platform_machines import MACHINES
    from whisper_subtitler import platform
    from whisper_subtitler.cli import app

    monkeypatch.setattr(platform, "detect", lambda free_memory_for=None: platform.describe(MACHINES[machine]))
    for name in ("GPU_BACKEND", "USE_CUDA", "OPTIMIZATION_LEVEL", "WHISPER_SUBTITLER_NO_FALLBACK"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    missing = str(tmp_path / "missing.wav")  # the file is never reached in the failing case
    fell_back = CliRunner().invoke(
        app, ["transcribe", missing, "--gpu-backend", "cuda", "--model", "tiny.en", "--no-diarize"]
    )
    assert fell_back.exit_code == 1, fell_back.output  # the batch ran (on the CPU) and reported the missing file
    said = " ".join(fell_back.output.split())  # Rich wraps the log lines
    assert "cuda is not available" in said and "falling back to the CPU" in said and "missing.wav: no such file" in said
    strict = CliRunner().invoke(app, ["transcribe", missing, "--gpu-backend", "cuda", "--no-fallback"])
    assert strict.exit_code == 4
    assert "cuda was requested by --gpu-backend but is not available" in " ".join(strict.output.split())


def test_language_lists_restrict_detection_and_one_language_forces_it():
    from whisper_subtitler.errors import UsageError
    from whisper_subtitler.options import parse_languages

    assert parse_languages(None) == (None, ())
    assert parse_languages("auto") == (None, ())
    assert parse_languages("fr") == ("fr", ())
    assert parse_languages("English, spanish") == (None, ("en", "es"))
    assert parse_languages("en,es,en,") == (None, ("en", "es"))
    assert parse_languages("de,german") == ("de", ())
    with pytest.raises(UsageError):
        parse_languages("en,klingon")
