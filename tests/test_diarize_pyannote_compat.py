"""The pyannote/torchaudio adapter (whisper_subtitler/diarize/pyannote_compat.py) and the pyannote interfaces the
offline pipeline relies on. These fail loudly when pyannote.audio or torchaudio change under us: each failure
message says which workaround to revisit."""

from __future__ import annotations

import ast
import inspect
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from whisper_subtitler.diarize import pyannote_compat

import numpy as np  # noqa: E402
import pyannote.audio  # noqa: E402
import torch  # noqa: E402
import torchaudio  # noqa: E402


def test_pyannote_version_is_the_tested_one():
    assert (
        pyannote_compat.TESTED_PYANNOTE[0] <= pyannote_compat.pyannote_version() < pyannote_compat.TESTED_PYANNOTE[1]
    ), (
        f"pyannote.audio {pyannote.audio.__version__} is outside the tested range: re-check every workaround "
        "in pyannote_compat.py and the offline pipeline (embedded.py, campplus.py)"
    )


def test_torchaudio_stub_provides_every_name_torchaudio_imports_from_its_extension():
    """torchaudio modules import names from ``torchaudio._extension``; the stub must define each of them."""
    if not pyannote_compat.TORCHAUDIO_WITHOUT_EXTENSION:
        pytest.skip("torchaudio's extension loads here: the stub is not in use")
    assert sys.modules["torchaudio._extension"].__doc__.endswith("(whisper_subtitler.diarize.pyannote_compat)")
    root = Path(torchaudio.__file__).parent
    needed = set()
    for path in root.rglob("*.py"):
        if "_extension" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "torchaudio._extension":
                needed |= {alias.name for alias in node.names}
    missing = sorted(n for n in needed if not hasattr(sys.modules["torchaudio._extension"], n))
    assert not missing, f"torchaudio now imports {missing} from torchaudio._extension: extend the stub"


def test_torchaudio_pure_python_parts_that_pyannote_uses_work():
    waveform = torch.randn(1, 16_000)
    features = torchaudio.compliance.kaldi.fbank(waveform, num_mel_bins=80, sample_frequency=16_000, dither=0.0)
    assert features.shape == (98, 80) and torch.isfinite(features).all()
    assert torchaudio.functional.resample(waveform, 16_000, 8_000).shape == (1, 8_000)


def test_pyannote_still_refuses_plda_none_so_noplda_is_needed():
    from pyannote.audio.pipelines.speaker_diarization import SpeakerDiarization
    from pyannote.audio.pipelines.utils import get_plda

    with pytest.raises(TypeError):
        get_plda(None)  # if this passes one day: drop NoPLDA and pass plda=None
    assert "get_plda(plda" in inspect.getsource(SpeakerDiarization.__init__)
    assert get_plda(pyannote_compat.NoPLDA()).__class__ is pyannote_compat.NoPLDA
    with pytest.raises(RuntimeError):
        pyannote_compat.NoPLDA()(np.zeros((2, 192)))


def test_agglomerative_clustering_never_touches_the_plda():
    from pyannote.audio.pipelines.clustering import AgglomerativeClustering

    source = inspect.getsource(AgglomerativeClustering)
    assert "plda" not in source.lower(), "AgglomerativeClustering now uses a PLDA: NoPLDA would break it"


def test_telemetry_is_off_unless_the_user_turns_it_on():
    from pyannote.audio.telemetry import metrics

    assert pyannote_compat.TELEMETRY_ENV in inspect.getsource(metrics.is_metrics_enabled), (
        "pyannote reads another setting for telemetry now: update pyannote_compat.TELEMETRY_ENV"
    )
    code = (
        "import whisper_subtitler.diarize.pyannote_compat\n"
        "from pyannote.audio.telemetry.metrics import is_metrics_enabled\nprint(is_metrics_enabled())"
    )
    env = {k: v for k, v in os.environ.items() if k != pyannote_compat.TELEMETRY_ENV}
    off = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    on = subprocess.run(
        [sys.executable, "-c", code],
        env=env | {pyannote_compat.TELEMETRY_ENV: "true"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert (off.stdout.strip(), on.stdout.strip()) == ("False", "True")


def test_pyannote_prints_go_to_the_log_redacted(capsys, caplog):
    # The CLI sets the "whisper_subtitler" logger's level; earlier tests in the same process may have run it.
    with (
        caplog.at_level(logging.INFO),
        caplog.at_level(logging.INFO, logger="whisper_subtitler"),
        pyannote_compat.stdout_to_log(),
    ):
        print("Found only 1 clusters.\nuse token='hf_abcdefghijklmnop' please")
    assert capsys.readouterr().out == ""
    assert "Found only 1 clusters." in caplog.text and "hf_abcdefghijklmnop" not in caplog.text


def test_in_memory_waveform_needs_no_torchcodec():
    from pyannote.audio import Audio

    file = {"waveform": torch.zeros(1, 32_000), "sample_rate": 16_000}
    assert Audio.validate_file(file)["uri"] == "waveform"
    assert Audio(sample_rate=16_000, mono="downmix").get_duration(file) == pytest.approx(2.0)


def test_diarize_output_and_embedding_interfaces_are_the_ones_we_use():
    from pyannote.audio.pipelines.speaker_diarization import DiarizeOutput, SpeakerDiarization
    from pyannote.audio.pipelines.speaker_verification import (
        PretrainedSpeakerEmbedding,
        PyannoteAudioPretrainedSpeakerEmbedding,
    )

    assert "speaker_diarization" in DiarizeOutput.__dataclass_fields__
    parameters = inspect.signature(SpeakerDiarization.__init__).parameters
    assert {"segmentation", "embedding", "plda", "clustering", "embedding_batch_size"} <= set(parameters)
    from whisper_subtitler.diarize.campplus import CAMPPlusEmbedding

    embedding = PretrainedSpeakerEmbedding(CAMPPlusEmbedding.from_checkpoint())
    assert isinstance(embedding, PyannoteAudioPretrainedSpeakerEmbedding)
    assert (embedding.sample_rate, embedding.dimension, embedding.metric) == (16_000, 192, "cosine")
    out = embedding(torch.randn(2, 1, 16_000) * 0.1, masks=torch.ones(2, 100))
    assert out.shape == (2, 192) and np.isfinite(out).all()


def test_tf32_settings_survive_pyannotes_reproducibility_fix():
    from pyannote.audio.utils.reproducibility import fix_reproducibility

    before = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    try:
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
        with pyannote_compat.keep_tf32_settings():
            fix_reproducibility(torch.device("cuda"))  # what every pipeline call does on CUDA
            assert torch.backends.cuda.matmul.allow_tf32 is False, "pyannote no longer turns TF32 off: drop 5."
        assert torch.backends.cuda.matmul.allow_tf32 is True and torch.backends.cudnn.allow_tf32 is True
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before
