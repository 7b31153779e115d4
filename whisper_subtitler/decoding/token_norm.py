"""The normalisation of the alignment heads' attention weights over the tokens, as one compiled loop.

``whisper.timing.find_alignment`` standardises each head's weights over the tokens, frame by frame:
``std, mean = torch.std_mean(weights, dim=-2, keepdim=True, unbiased=False)`` then ``(weights - mean) / std``.
PyTorch's CPU kernel for that reduction (Welford's algorithm, accumulated in float64, over a strided axis) is a
quarter of word timing's CPU work (``docs/performance.md``). :func:`normalize_over_tokens` runs the same recurrence
in the same order (Welford 1962, as PyTorch's ``WelfordOps``:
``n += 1; d = x - mean; mean += d / n; m2 += d * (x - mean)``, in float64, the tokens in order), rounds mean and
standard deviation to float32 as PyTorch does, then subtracts and divides in float32: the same numbers, bit for
bit (``tests/test_token_norm.py`` compares them with PyTorch's on random and real weights). Where the kernel
cannot load (numba finds no writable cache folder) PyTorch answers.
"""

from __future__ import annotations

import logging

import numpy as np
import torch

log = logging.getLogger(__name__)

_KERNEL: list = []  # [the compiled kernel], or [None] once it proved unavailable


def normalize_over_tokens(weights: torch.Tensor) -> torch.Tensor:
    """``(weights - mean) / std`` with ``std, mean = torch.std_mean(weights, dim=-2, keepdim=True,
    unbiased=False)``, for ``weights`` ``(heads, tokens, frames)``: a tensor of the same shape and dtype.

    A contiguous-able float32 CPU tensor goes through the compiled loop; anything else (another device or dtype,
    another rank, no numba cache) through PyTorch's own operations."""
    kernel = (
        _kernel() if weights.device.type == "cpu" and weights.dtype == torch.float32 and weights.ndim == 3 else None
    )
    if kernel is None or weights.shape[-2] == 0:
        std, mean = torch.std_mean(weights, dim=-2, keepdim=True, unbiased=False)
        return (weights - mean) / std
    return torch.from_numpy(kernel(weights.detach().contiguous().numpy()))


def _kernel():  # noqa: ANN202 - the numba dispatcher, or None
    if not _KERNEL:
        try:
            _KERNEL.append(_compile())
        except Exception as exc:  # numba raises RuntimeError when no cache folder is writable
            log.debug("numba's token normalisation is not available (%s): PyTorch's is used", exc)
            _KERNEL.append(None)
    return _KERNEL[0]


def _compile():  # noqa: ANN202 - a numba dispatcher
    import numba

    @numba.njit(cache=True, nogil=True, error_model="numpy")  # IEEE division: a zero deviation gives inf or NaN
    def standardize(weights: np.ndarray) -> np.ndarray:  # (heads, tokens, frames) float32
        heads, tokens, frames = weights.shape
        out = np.empty_like(weights)
        mean = np.empty(frames, dtype=np.float64)
        m2 = np.empty(frames, dtype=np.float64)
        for h in range(heads):
            mean[:] = 0.0
            m2[:] = 0.0
            for t in range(tokens):
                n = np.float64(t + 1)
                for f in range(frames):
                    x = np.float64(weights[h, t, f])
                    d = x - mean[f]
                    mean[f] += d / n
                    m2[f] += d * (x - mean[f])
            mean32 = mean.astype(np.float32)
            std32 = np.sqrt(m2 / np.float64(tokens)).astype(np.float32)
            for t in range(tokens):
                for f in range(frames):
                    out[h, t, f] = (weights[h, t, f] - mean32[f]) / std32[f]
        return out

    return standardize
