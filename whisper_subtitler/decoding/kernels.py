"""Two decoder kernels in the form that is fastest on the CPU: the output projection and cross-attention.

Output projection.

Each decoding step multiplies the last hidden state of every running row, ``(rows, d)``, by the transposed token
embedding, ``(d, n_vocab)`` (whisper/model.py ``TextDecoder.forward``): 80 MB of weights for tiny, 106 MB for
base, read once per step, the largest single cost of a step on the CPU. With few rows, MKL's ``x @ W.T`` repacks
that whole matrix on every call; ``(W @ x.T).T`` computes the same products without the repacking, several times
faster (docs/performance.md, "Decoder kernels"); above ``SMALL_ROWS`` rows (the first step of a large batch, the
alignment pass) the usual form is as fast and is kept. The sums run in another order, so logits differ by float
rounding only (about 1e-6; no greedy token changed in our tests).

``install_projection`` replaces ``TextDecoder.forward`` of one model by the same code (openai-whisper 20250625)
whose last line calls a projection function, so that this kernel and ``quantize``'s int8 projection share it.

``set_decoder_kernels`` turns both kernels on or off for one model: on by default on the CPU, where they were
measured (``ChunkTranscriber``); optimization level 2 measures both ways on the device (``tuning``).

Cross-attention. openai-whisper caches the cross-attention keys and values as ``(rows, n_audio_ctx, d)`` and
reshapes them into heads, ``(rows, heads, n_audio_ctx, d / heads)``, a strided view, at every step; the CPU
attention kernel then reads strided memory, about twice as slowly as contiguous heads (docs/performance.md).
``install_cross_attention`` caches them once per batch as contiguous heads instead. Same arithmetic.

Attention kernel. openai-whisper calls ``F.scaled_dot_product_attention`` (SDPA), which picks a kernel itself (flash,
memory-efficient, cuDNN or the plain math form, in PyTorch's priority order for the device, dtype and shapes).
``attention_kernel`` pins one for the encoder and the decoding loop, so that optimization level 2 can measure the
choice (``transcription.tuning.ATTENTION_KERNELS`` per backend; figures in docs/performance.md, "Attention kernel"); the
memory-efficient kernel has no CPU form.
The alignment pass reads attention weights, which SDPA does not return, so it uses the math form whatever is pinned.
"""

from __future__ import annotations

import contextlib
import types
from collections.abc import Callable

import torch
import torch.nn.functional as F
from whisper.model import MultiHeadAttention

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


def install_projection(model, projection: Callable[[torch.Tensor], torch.Tensor]) -> None:
    """Make ``model.decoder`` compute its logits with ``projection`` (hidden states -> float32 logits), in place."""
    decoder = model.decoder
    decoder.logits_projection = projection
    decoder.forward = types.MethodType(_decoder_forward, decoder)


def uses_projection(model) -> bool:
    """True when ``install_projection`` has run on ``model``."""
    return getattr(model.decoder, "logits_projection", None) is not None


def decoder_blocks(decoder, tokens, xa, kv_cache=None, n_blocks: int | None = None):
    """``whisper.model.TextDecoder.forward`` (openai-whisper 20250625) up to its final layer norm: token and
    positional embeddings, then the first ``n_blocks`` blocks (all by default). ``tokens`` ``(B, T)``, ``xa`` the
    audio features ``(B, n_audio_ctx, n_audio_state)``; returns hidden states ``(B, T, n_text_state)``."""
    offset = next(iter(kv_cache.values())).shape[1] if kv_cache else 0
    x = decoder.token_embedding(tokens) + decoder.positional_embedding[offset : offset + tokens.shape[-1]]
    x = x.to(xa.dtype)
    for block in decoder.blocks[:n_blocks]:
        x = block(x, xa, mask=decoder.mask, kv_cache=kv_cache)
    return x


def _decoder_forward(self, x, xa, kv_cache=None):
    """``whisper.model.TextDecoder.forward`` (openai-whisper 20250625) ending in ``self.logits_projection``."""
    return self.logits_projection(self.ln(decoder_blocks(self, x, xa, kv_cache)))


def install_cross_attention(model) -> None:
    """Make the decoder's cross-attention layers cache keys and values as contiguous heads (see above), in place.

    The cache entries keep their first dimension as the row, so dropping finished rows
    (``budgeted.BudgetedDecodingTask``) works the same; the alignment pass (no cache) computes as openai-whisper.
    """
    for block in model.decoder.blocks:
        if block.cross_attn is not None:
            block.cross_attn.forward = types.MethodType(_cross_attention_forward, block.cross_attn)


def uses_cross_attention(model) -> bool:
    """True when ``install_cross_attention`` has run on ``model``."""
    return any("forward" in vars(b.cross_attn) for b in model.decoder.blocks if b.cross_attn is not None)


def set_decoder_kernels(model, on: bool) -> None:
    """Install both kernels on ``model`` (``on``), or restore openai-whisper's own code; in place, idempotent.
    An int8 projection (``quantize``) is left as it is."""
    decoder = model.decoder
    if on:
        if not uses_projection(model):
            install_projection(model, small_batch_projection(decoder))
        if not uses_cross_attention(model):
            install_cross_attention(model)
        return
    if uses_projection(model) and getattr(decoder, "projection_int8", None) is None:
        del decoder.forward  # the instance attribute: TextDecoder.forward again
        decoder.logits_projection = None
    for block in decoder.blocks:
        if block.cross_attn is not None and "forward" in vars(block.cross_attn):
            del block.cross_attn.forward


def _heads(self, t: torch.Tensor) -> torch.Tensor:
    return t.view(*t.shape[:2], self.n_head, -1).permute(0, 2, 1, 3)


def _cross_attention_forward(self, x, xa=None, mask=None, kv_cache=None):
    """``whisper.model.MultiHeadAttention.forward`` and ``qkv_attention`` (openai-whisper 20250625) for
    cross-attention, with the cached keys and values stored as contiguous heads."""
    q = _heads(self, self.query(x))
    if kv_cache is None or self.key not in kv_cache:
        k = _heads(self, self.key(xa)).contiguous()  # the cache hooks store the projections; replaced just below
        v = _heads(self, self.value(xa)).contiguous()
        if kv_cache is not None:
            kv_cache[self.key], kv_cache[self.value] = k, v
    else:
        k, v = kv_cache[self.key], kv_cache[self.value]
    if MultiHeadAttention.use_sdpa:
        out = F.scaled_dot_product_attention(q, k, v).permute(0, 2, 1, 3).flatten(start_dim=2)
        qk = None
    else:  # the alignment pass needs the attention weights
        scale = q.shape[-1] ** -0.25  # (n_state // n_head) ** -0.25, as qkv_attention
        qk = ((q * scale) @ (k * scale).transpose(-1, -2)).float()
        w = F.softmax(qk, dim=-1).to(q.dtype)
        out = (w @ v).permute(0, 2, 1, 3).flatten(start_dim=2)
        qk = qk.detach()
    return self.out(out), qk


def fill_cross_cache(model, cache: dict, keys_values) -> None:
    """Put cross-attention keys and values computed beforehand (``language_id.cross_keys_values``: one ``(keys,
    values)`` pair per decoder block, each ``(rows, n_audio_ctx, n_audio_state)``) into ``cache``, the dict of
    ``Whisper.install_kv_cache_hooks``, in the layout the model's cross-attention reads: contiguous heads with
    ``install_cross_attention``, openai-whisper's projections as they are without. The first decoder step then
    projects nothing. Each block's self-attention gets an empty entry first, ``(rows, 0, n_text_state)``, which its
    hook extends as usual: the decoder reads its position offset from the first entry of ``cache``."""
    ours = uses_cross_attention(model)
    for block, (keys, values) in zip(model.decoder.blocks, keys_values):
        empty = keys.new_empty((keys.shape[0], 0, block.attn.key.out_features))
        cache[block.attn.key], cache[block.attn.value] = empty, empty
        attention = block.cross_attn
        if ours:
            keys, values = _heads(attention, keys).contiguous(), _heads(attention, values).contiguous()
        cache[attention.key], cache[attention.value] = keys, values


def attention_kernel(name: str | None) -> contextlib.AbstractContextManager:
    """A context in which SDPA uses only the kernel ``name`` (a ``torch.nn.attention.SDPBackend`` member name,
    e.g. ``"FLASH_ATTENTION"``); ``None``: PyTorch's own choice. Inside it, a call the kernel cannot serve raises
    ``RuntimeError`` ("No viable backend" on the CPU, "No available kernel" on CUDA); an unknown name raises
    ``AttributeError`` at once."""
    if name is None:
        return contextlib.nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    return sdpa_kernel(getattr(SDPBackend, name))
