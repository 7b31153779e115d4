"""The memory model behind batch-size advice: exact parameter counts, the per-row formula, the advice rules."""

from __future__ import annotations

import dataclasses
from unittest import mock

import pytest

from tests.test_platform_machines import MACHINES
from whisper_subtitler.platform.batch_advice import (
    ADVICE_MODELS,
    GPU_BATCH_CAP,
    MEASURED_CUDA_ROW_MIB,
    MIB,
    WHISPER_DIMS,
    buffer_elements,
    cuda_row,
    estimate_memory,
    model_dims,
    parameter_count,
    recommend_batch_size,
)
from whisper_subtitler.platform.machine import GIB, Device, describe


@pytest.mark.parametrize("name", list(WHISPER_DIMS))
def test_parameter_count_matches_openai_whisper_exactly(name):
    torch = pytest.importorskip("torch")
    from whisper.model import ModelDimensions, Whisper

    dims = WHISPER_DIMS[name]
    # Build on the meta device (no memory); its sparse alignment-heads buffer has no meta kernel, so skip it.
    with torch.device("meta"), mock.patch.object(torch.Tensor, "to_sparse", lambda self: self):
        model = Whisper(ModelDimensions(**dataclasses.asdict(dims)))
    assert sum(p.numel() for p in model.parameters()) == parameter_count(dims)
    assert sum(b.numel() for b in model.buffers() if b.is_floating_point()) == buffer_elements(dims)


def test_published_model_sizes():
    # openai/whisper README: tiny 39 M, base 74 M, small 244 M, medium 769 M, large 1550 M, turbo 809 M parameters.
    millions = {
        n: round(parameter_count(WHISPER_DIMS[n]) / 1e6)
        for n in ("tiny", "base", "small", "medium", "large-v3", "turbo")
    }
    assert millions == {"tiny": 37, "base": 72, "small": 241, "medium": 762, "large-v3": 1542, "turbo": 807}


def test_dims_match_the_embedded_checkpoints_when_they_are_converted():
    torch = pytest.importorskip("torch")
    try:
        from whisper_subtitler.models import converted_cache_dir
    except ImportError:
        pytest.skip("the models module is not there")
    files = sorted(converted_cache_dir().glob("*.pt")) if converted_cache_dir().is_dir() else []
    checked = 0
    for f in files:
        name = f.name.split("-embedded")[0]
        if name in WHISPER_DIMS:
            dims = torch.load(f, map_location="cpu", weights_only=True)["dims"]
            assert dims == dataclasses.asdict(WHISPER_DIMS[name]), name
            checked += 1
    if not checked:
        pytest.skip("no converted embedded checkpoint in the cache yet")


def test_row_memory_follows_the_documented_formula_for_tiny_fp16():
    d = WHISPER_DIMS["tiny"]
    est = estimate_memory(d, "float16", materialized_attention=False)
    assert est.encoder_row == 2 * 1500 * 10 * 384  # MLP phase dominates without attention scores
    assert est.decoder_row == 2 * 4 * 2 * 384 * (1500 + 2 * 448) + 4 * 51865 * 224
    assert est.row == 80 * 3000 * 6 + est.decoder_row + 2 * 1500 * 384
    assert est.weights == (37_184_640 + 776_704) * 2


def test_materialized_attention_scores_raise_the_encoder_row():
    d = WHISPER_DIMS["large-v3"]
    flash = estimate_memory(d, "float16", materialized_attention=False)
    math = estimate_memory(d, "float16", materialized_attention=True)
    assert math.encoder_row - flash.encoder_row == 2 * 1500 * (6 * 1280 + 2 * 20 * 1500 - 10 * 1280)
    assert estimate_memory(d, "float32").weights == 2 * flash.weights


def test_cuda_rows_follow_the_measured_rows_and_stay_above_them():
    for model, measured in MEASURED_CUDA_ROW_MIB.items():
        row = cuda_row(WHISPER_DIMS[model], "float16") / MIB
        # the fit passes within 1 MiB of each measurement; the advice adds the cache of tokens 100 to 448
        assert measured - 1 < row < measured * 1.3, (model, row)
    for model in ADVICE_MODELS:
        d = WHISPER_DIMS[model]
        assert cuda_row(d, "float32") == pytest.approx(2 * cuda_row(d, "float16"), rel=0.01)
        assert cuda_row(d, "float16") < estimate_memory(d, "float16").row  # the derived model overstated CUDA
    # the 4-layer turbo decoder: the encoder phase bounds its row, not the cross-attention cache
    turbo = WHISPER_DIMS["turbo"]
    encoder = estimate_memory(turbo, "float16").encoder_row + 2 * 1500 * 1280
    assert cuda_row(turbo, "float16") == encoder + 2 * 4 * 2 * 348 * 1280


def test_cuda_advice_uses_the_measured_rows_and_rocm_the_derived_ones():
    cuda = recommend_batch_size("small", _gpu(4, 4), "float16")
    rocm = recommend_batch_size("small", _gpu(4, 4, backend="rocm"), "float16")
    assert cuda.row == cuda_row(WHISPER_DIMS["small"], "float16")
    assert rocm.row == estimate_memory(WHISPER_DIMS["small"], "float16", materialized_attention=True).row
    assert cuda.batch_size > rocm.batch_size


def _gpu(total_gib: float, free_gib: float | None = None, backend: str = "cuda") -> Device:
    free = None if free_gib is None else int(free_gib * GIB)
    return Device(
        backend, "cuda", "test GPU", "NVIDIA", "Hopper", "9.0", total_memory=int(total_gib * GIB), free_memory=free
    )


def test_more_memory_never_gives_a_smaller_batch_and_larger_models_never_a_larger_one():
    for model in ADVICE_MODELS:
        sizes = [recommend_batch_size(model, _gpu(g, g), "float16").batch_size for g in (4, 6, 8, 12, 16, 24, 48, 80)]
        assert sizes == sorted(sizes), model
        assert max(sizes) <= GPU_BATCH_CAP
    for gib in (6, 12, 24):
        order = [
            recommend_batch_size(m, _gpu(gib, gib), "float16").batch_size
            for m in ("tiny", "base", "small", "medium", "large-v3")
        ]
        assert order == sorted(order, reverse=True), gib


def test_free_memory_is_preferred_over_total():
    busy = recommend_batch_size("large-v3", _gpu(24, 6), "float16")
    idle = recommend_batch_size("large-v3", _gpu(24), "float16")
    assert busy.batch_size < idle.batch_size
    assert busy.reason.startswith("free memory 6.0 GiB") and idle.reason.startswith("total memory 24.0 GiB")


def test_weights_that_barely_fit_give_batch_one():
    advice = recommend_batch_size("large-v3", _gpu(4, 3.5), "float16")
    assert advice.batch_size == 1 and "barely holds the weights" in advice.reason


def test_cpu_advice_is_eight_and_limited_by_ram():
    cpu = describe(MACHINES["cpu"]).cpu
    assert recommend_batch_size("base", cpu, "float32").batch_size == 8
    small_ram = dataclasses.replace(cpu, total_memory=8 * GIB, free_memory=8 * GIB)
    advice = recommend_batch_size("large-v3", small_ram, "float32")
    assert advice.batch_size == 1 and "limited by 8.0 GiB RAM" in advice.reason


def test_unknown_models_are_sized_as_large_v3_and_none_is_the_default_model():
    name, dims, known = model_dims("/models/my-finetune.pt")
    assert not known and dims == WHISPER_DIMS["large-v3"]
    assert "unknown model" in recommend_batch_size("/models/my-finetune.pt", _gpu(16, 16), "float16").reason
    assert model_dims(None)[0] == "base"
