"""Two decoder kernels in the form that is fastest on the CPU: the output projection and cross-attention.

Output projection.

Each decoding step multiplies the last hidden state of every running row, ``(rows, d)``, by the transposed token
embedding, ``(d, n_vocab)`` (whisper/model.py ``TextDecoder.forward``): 80 MB of weights for tiny, 106 MB for
base, read once per step, the largest single cost of a step on the CPU. With few rows, MKL's ``x @ W.T`` repacks
that whole matrix on every call; ``(W @ x.T).T`` computes the same products without the repacking, several times
faster (docs/performance.md, "Decoder kernels"); above ``SMALL_ROWS`` rows (the first step of a large batch, the
alignment pass) the usual form is as fast and is kept. The sums run in another order, so logits differ by float
rounding only (about 1e-6; no greedy token changed in our tests).

``compat.whisper.install_projection`` replaces ``TextDecoder.forward`` of one model by the same code (openai-whisper
20250625) whose last line calls a projection function, so that this kernel and ``quantize``'s int8 projection share it.

``set_decoder_kernels`` turns both kernels on or off for one model: on by default on the CPU, where they were
measured (``ChunkTranscriber``); optimization level 2 measures both ways on the device (``tuning``).

Cross-attention. openai-whisper caches the cross-attention keys and values as ``(rows, n_audio_ctx, d)`` and
reshapes them into heads, ``(rows, heads, n_audio_ctx, d / heads)``, a strided view, at every step; the CPU
attention kernel then reads strided memory, about twice as slowly as contiguous heads (docs/performance.md).
``compat.whisper.install_cross_attention`` caches them once per batch as contiguous heads instead. Same arithmetic.

Attention kernel. openai-whisper calls ``F.scaled_dot_product_attention`` (SDPA), which picks a kernel itself (flash,
memory-efficient, cuDNN or the plain math form, in PyTorch's priority order for the device, dtype and shapes).
``attention_kernel`` pins one for the encoder and the decoding loop, so that optimization level 2 can measure the
choice (``transcription.tuning.ATTENTION_KERNELS`` per backend; figures in docs/performance.md, "Attention kernel"); the
memory-efficient kernel has no CPU form.
The alignment pass reads attention weights, which SDPA does not return, so it uses the math form whatever is pinned.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import torch

from whisper_subtitler.compat import whisper as whisper_compat

SMALL_ROWS = 64  # at most this many rows: (W @ x.T).T; more rows: x @ W.T


def small_batch_projection(decoder) -> Callable[[torch.Tensor], torch.Tensor]:
    """The output projection of ``decoder`` (a ``whisper.model.TextDecoder``) in the CPU-friendly form above.

    Takes ``(..., d)`` hidden states, returns ``(..., n_vocab)`` float32 logits.
    """
    embedding = decoder.token_embedding  # looked up at each call: the model may have moved or changed dtype

    def project(x: torch.Tensor) -> torch.Tensor:
        weight = embedding.weight.to(x.dtype)
        rows = x.reshape(-1, x.shape[-1])
        n = rows.shape[0]
        if n > SMALL_ROWS:
            return (x @ weight.T).float()
        if n == 1:  # one row runs as a matrix-vector product, slower than two rows; a stride-0 (expanded) copy
            # of the row is slower still (16.5 ms against 6.7 ms for tiny's projection, docs/performance.md)
            return (weight @ rows.expand(2, -1).contiguous().T)[:, :1].T.reshape(*x.shape[:-1], -1).float()
        return (weight @ rows.T).T.reshape(*x.shape[:-1], -1).float()

    return project


def set_decoder_kernels(model, on: bool) -> None:
    """Install both kernels on ``model`` (``on``), or restore openai-whisper's own code; in place, idempotent.
    An int8 projection (``quantize``) is left as it is. On an openai-whisper version that ``compat.whisper`` does not
    know, nothing is installed (its own code runs)."""
    decoder = model.decoder
    if on:
        if not whisper_compat.uses_projection(model):
            whisper_compat.install_projection(model, small_batch_projection(decoder))
        if not whisper_compat.uses_cross_attention(model):
            whisper_compat.install_cross_attention(model)
        return
    if whisper_compat.uses_projection(model) and getattr(decoder, "projection_int8", None) is None:
        whisper_compat.remove_projection(model)
    whisper_compat.remove_cross_attention(model)


def attention_kernel(name: str | None) -> contextlib.AbstractContextManager:
    """A context in which SDPA uses only the kernel ``name`` (a ``torch.nn.attention.SDPBackend`` member name,
    e.g. ``"FLASH_ATTENTION"``); ``None``: PyTorch's own choice. Inside it, a call the kernel cannot serve raises
    ``RuntimeError`` ("No viable backend" on the CPU, "No available kernel" on CUDA); an unknown name raises
    ``AttributeError`` at once."""
    if name is None:
        return contextlib.nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    return sdpa_kernel(getattr(SDPBackend, name))
