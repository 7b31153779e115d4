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
    for text in ("--gpu-backend", "--optimization-level", "--model", "--language", "--task", "--format",
                 "--output-dir", "Exit codes", "130"):
        assert text in result.stdout


@pytest.mark.parametrize("args,needle", [
    (["--gpu-backend", "tpu"], "tpu"),
    (["--optimization-level", "7"], "optimization-level"),
    (["--task", "summarize"], "summarize"),
    (["--format", "srt,docx"], "docx"),
    (["--language", "klingon"], "klingon"),
    (["--seed", "often"], "--seed"),
])
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


def test_unavailable_backend_falls_back_or_fails(tmp_path, cli):
    """This machine has no CUDA: a CUDA request falls back to the CPU with a warning, or exits 4 with --no-fallback."""
    missing = str(tmp_path / "missing.wav")  # the file is never reached in the failing case
    fell_back = cli("transcribe", missing, "--gpu-backend", "cuda", "--model", "tiny.en")
    assert fell_back.returncode == 1  # the batch ran (on the CPU) and reported the missing file
    assert "cuda" in fell_back.stderr.lower() and "cpu" in fell_back.stderr.lower()
    strict = cli("transcribe", missing, "--gpu-backend", "cuda", "--no-fallback")
    assert strict.returncode == 4 and "Traceback" not in strict.stderr
