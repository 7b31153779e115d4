"""MPS preparation, tested with a simulated device: no Apple GPU is needed.

What breaks on a real Mac is reproduced here: ``nn.Module.to`` applies a conversion to every buffer, and the
conversion to MPS raises for a sparse tensor (pytorch/pytorch#87886); MPS tensors refuse ``.double()``.
"""

from __future__ import annotations

import base64
import gzip
import sys
from dataclasses import replace

import numpy as np
import pytest

torch = pytest.importorskip("torch")
whisper = pytest.importorskip("whisper")

from tests.test_platform_machines import MACHINES  # noqa: E402
from whisper_subtitler import platform  # noqa: E402
from whisper_subtitler.platform import describe, select, word_timing  # noqa: E402
from whisper_subtitler.platform.environment import Request  # noqa: E402
from whisper_subtitler.platform.mps import cast_model, prepare_model  # noqa: E402

HEADS = np.array([[False, True], [True, False]])  # (n_text_layer, n_text_head)


def small_whisper():
    """A random-weight Whisper with the real contexts (1500 frames, 448 tokens) and a tiny width."""
    from whisper.model import ModelDimensions, Whisper

    torch.manual_seed(0)
    dims = ModelDimensions(
        n_mels=80,
        n_audio_ctx=1500,
        n_audio_state=64,
        n_audio_head=2,
        n_audio_layer=2,
        n_vocab=51865,
        n_text_ctx=448,
        n_text_state=64,
        n_text_head=2,
        n_text_layer=2,
    )
    model = Whisper(dims).eval()
    with torch.no_grad():  # whisper leaves the decoder's positional embedding as torch.empty: fill every weight
        for p in model.parameters():
            p.normal_(0.0, 0.05)
    model.set_alignment_heads(base64.b85encode(gzip.compress(HEADS.tobytes())))
    return model


def move_like_mps(model) -> None:
    """What ``model.to("mps")`` does to each tensor, with MPS's refusal of sparse tensors."""

    def convert(t):
        if t.is_sparse:
            raise NotImplementedError("Could not run 'aten::_to_sparse' with arguments from the 'SparseMPS' backend")
        return t

    model._apply(convert)


@pytest.fixture
def mps_selection():
    s = select(Request(), describe(MACHINES["m2"]))
    assert (s.backend, s.device, s.dtype) == ("mps", "mps", "float16")
    return replace(s, device="cpu", dtype="float32")  # the simulated device: MPS rules, CPU tensors


def test_unprepared_model_cannot_move_to_mps_and_prepared_one_can(mps_selection, monkeypatch):
    import whisper.timing as timing

    for name in ("dtw", "median_filter"):  # whisper's own, whether or not another test replaced them; undone after
        monkeypatch.setattr(timing, name, getattr(getattr(timing, name), "_whispers", getattr(timing, name)))
    model = small_whisper()
    with pytest.raises(NotImplementedError, match="SparseMPS"):
        move_like_mps(model)
    prepared = prepare_model(small_whisper(), mps_selection)
    move_like_mps(prepared)
    assert "alignment_heads" not in prepared._buffers
    heads = prepared.alignment_heads
    assert heads.is_sparse and heads.device.type == "cpu"
    assert heads.indices().T.tolist() == [[0, 1], [1, 0]]  # what whisper.timing.find_alignment reads
    assert timing.dtw(FakeMpsTensor(torch.rand(3, 4))).shape[0] == 2  # word timing leaves MPS before float64


def test_word_alignment_gives_the_same_result_with_prepared_heads(mps_selection):
    from whisper.timing import find_alignment
    from whisper.tokenizer import get_tokenizer

    tokenizer = get_tokenizer(multilingual=True, language="en", task="transcribe")
    text_tokens = tokenizer.encode(" hello world")
    mel = torch.randn(80, 3000)
    reference = find_alignment(small_whisper(), tokenizer, text_tokens, mel, 3000)
    prepared = prepare_model(small_whisper(), mps_selection)
    result = find_alignment(prepared, tokenizer, text_tokens, mel, 3000)
    assert [(w.word, w.start, w.end) for w in result] == [(w.word, w.start, w.end) for w in reference]
    assert [w.word for w in result][:2] == [" hello", " world"]


class FakeMpsTensor:
    """Stands for an MPS tensor: ``device.type == "mps"`` and no float64."""

    def __init__(self, data) -> None:
        self.data, self.is_cuda, self.device = data, False, torch.device("mps")

    def double(self):
        raise TypeError("Cannot convert a MPS Tensor to float64 dtype as the MPS framework doesn't support float64")

    def cpu(self):
        return self.data


class CudaLike(torch.Tensor):
    """A CPU tensor that says it is on CUDA, where openai-whisper would reach for its Triton kernels."""

    @property
    def is_cuda(self) -> bool:
        return True


def test_word_timing_leaves_the_device_before_float64_and_never_reaches_triton(monkeypatch):
    import whisper.timing as timing

    # whisper's own functions, whether or not another test replaced them already; undone after this test
    monkeypatch.setattr(timing, "dtw", getattr(timing.dtw, "_whispers", timing.dtw))
    monkeypatch.setattr(timing, "median_filter", getattr(timing.median_filter, "_whispers", timing.median_filter))
    whispers_median = timing.median_filter
    cost = torch.rand(6, 9)
    expected = timing.dtw(cost)
    with pytest.raises(TypeError, match="float64"):
        timing.dtw(FakeMpsTensor(cost))
    word_timing.keep_word_timing_off_triton()
    word_timing.keep_word_timing_off_triton()  # idempotent: replaces once
    assert timing.median_filter._whispers is whispers_median
    np.testing.assert_array_equal(timing.dtw(FakeMpsTensor(cost)), expected)
    np.testing.assert_array_equal(timing.dtw(cost), expected)

    def no_triton(*args, **kwargs):
        raise AssertionError("Triton reached")

    monkeypatch.setattr(timing, "dtw_cuda", no_triton)
    monkeypatch.setitem(sys.modules, "whisper.triton_ops", None)  # an import of it fails
    np.testing.assert_array_equal(timing.dtw(cost.as_subclass(CudaLike)), expected)
    weights = torch.rand(2, 5, 40)
    for x in (weights, weights[0], weights[0, 0]):
        filtered = timing.median_filter(x.as_subclass(CudaLike), 7)
        torch.testing.assert_close(torch.Tensor(filtered), whispers_median(x, 7))
        assert filtered.shape == x.shape
    short = weights[:, :, :3].as_subclass(CudaLike)
    assert timing.median_filter(short, 7) is short  # no longer than half the width: unchanged, as whisper does


def test_fp16_cast_keeps_layernorm_in_fp32_and_the_model_runs():
    model = cast_model(small_whisper(), "float16")
    assert model.encoder.conv1.weight.dtype == torch.float16
    assert model.decoder.token_embedding.weight.dtype == torch.float16
    assert all(m.weight.dtype == torch.float32 for m in model.modules() if isinstance(m, torch.nn.LayerNorm))
    mel = torch.randn(1, 80, 3000)
    reference = small_whisper()
    with torch.no_grad():
        half = model.embed_audio(mel.half())
        full = reference.embed_audio(mel)
    assert half.dtype == torch.float16
    torch.testing.assert_close(half.float(), full, atol=5e-2, rtol=5e-2)


def test_mps_fallback_variable_is_set_on_apple_silicon_only(monkeypatch):
    env: dict[str, str] = {}
    monkeypatch.setattr(sys, "platform", "linux")
    assert platform.enable_mps_fallback(env) is False and env == {}
    monkeypatch.setattr(sys, "platform", "darwin")
    monkeypatch.setattr(platform.mps._platform, "machine", lambda: "arm64")
    assert platform.enable_mps_fallback(env) is True and env == {"PYTORCH_ENABLE_MPS_FALLBACK": "1"}
    user = {"PYTORCH_ENABLE_MPS_FALLBACK": "0"}
    assert platform.enable_mps_fallback(user) is False and user["PYTORCH_ENABLE_MPS_FALLBACK"] == "0"


def test_cpu_selection_moves_the_model_without_touching_the_heads():
    s = select(Request(), describe(MACHINES["cpu"]))
    model = prepare_model(small_whisper(), s)
    assert "alignment_heads" in model._buffers  # only MPS needs the change
    assert model.encoder.conv1.weight.dtype == torch.float32
