"""The word-timing median filter on the CPU (``platform.word_timing.cpu_median``, numba) gives exactly what
openai-whisper's sort-based ``whisper.timing.median_filter`` gives, or hands the case back to it."""

from __future__ import annotations

import pytest
import torch
import whisper.timing as timing

from whisper_subtitler.platform.word_timing import cpu_median

WHISPERS = getattr(timing.median_filter, "_whispers", timing.median_filter)  # whisper's own, before any patch


@pytest.mark.parametrize("shape", [(6, 110, 1500), (2, 4, 9), (1, 8), (3, 4), (7,), (1, 1, 4), (2, 5), (2, 6)])
@pytest.mark.parametrize("width", [7, 5, 3])
def test_the_same_numbers_as_whispers_median_at_every_shape_and_width(shape, width):
    generator = torch.Generator().manual_seed(sum(shape) + width)
    x = torch.randn(*shape, generator=generator)
    x[..., 1::3] = x[..., ::3][..., : x[..., 1::3].shape[-1]]  # ties: the same value twice in a window
    if shape[-1] <= width // 2:
        assert cpu_median(x, width) is None  # whisper returns x as it is
        return
    ours = cpu_median(x, width)
    assert ours is not None and ours.dtype == x.dtype
    assert torch.equal(ours, WHISPERS(x, width))


def test_the_attention_weights_of_a_window_as_the_alignment_normalizes_them():
    weights = torch.randn(6, 40, 1500, generator=torch.Generator().manual_seed(1)).softmax(dim=-1)
    std, mean = torch.std_mean(weights, dim=-2, keepdim=True, unbiased=False)
    weights = (weights - mean) / std
    assert torch.equal(cpu_median(weights, 7), WHISPERS(weights, 7))


def test_cases_it_leaves_to_whisper():
    x = torch.randn(2, 20)
    assert cpu_median(x, 6) is None  # an even width: whisper asserts
    assert cpu_median(x.to(torch.float16), 7) is None
    x[1, 4] = float("nan")  # NaN sorts last in torch; a comparison network would place it elsewhere
    assert cpu_median(x, 7) is None
