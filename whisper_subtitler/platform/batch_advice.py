"""Batch-size advice per Whisper model: weights from the architecture, memory per batch row measured on CUDA and
derived elsewhere.

Pure arithmetic, no torch import. Weight memory is exact: the parameter count follows from ``ModelDims`` (the
same numbers as ``whisper.model.ModelDimensions`` in each official checkpoint; a test checks the count against
``whisper.model.Whisper`` built on the meta device). ``b`` is bytes per element of the compute dtype (2 for fp16,
4 for fp32), ``T_a = n_audio_ctx = 1500`` audio frames, ``T_t = n_text_ctx = 448`` tokens.

On CUDA the memory per batch row (one 30 s window) is a fit to measurements (``bench/memory.py`` on an H200,
fp16, ``torch.cuda.max_memory_allocated`` over batches of 1, 4, 16 and 32 windows decoded greedily to 100
tokens; bench/notes/gpu-h200.md): tiny.en 12.5, base 21.0, small 59.4 MiB per row. What grows with the batch is the
decoder's cross-attention keys and values, computed once per window and kept while it decodes, so the fit is a
line through that size (residuals under 0.6 MiB), plus the self-attention cache of the tokens past the 100
measured, plus the encoder phase where it is larger (the large models' 4-layer turbo decoder):

    cross_kv    = b * L_t * 2 * T_a * s_t
    cuda_row    = max(CUDA_FIT_SLOPE * cross_kv + CUDA_FIT_INTERCEPT_MIB * MiB * b / 2, encoder_row + b * T_a * s_a)
                + b * L_t * 2 * (T_t - 100) * s_t

Elsewhere (ROCm, MPS: unmeasured) the row is the upper estimate derived from the shapes openai-whisper's encoder
and its kv-cache decoder keep alive (it overstates CUDA's measured rows 2 to 5 times):

    encoder_row = b * T_a * max(6 * s_a + 2 * h_a * T_a * m, 10 * s_a)
        # residual, LayerNorm out, q, k, v, attention out; 2 copies of the (h_a, T_a, T_a) attention scores when
        # the attention kernel materializes them (m = 1: CPU, MPS, ROCm math kernel; m = 0: CUDA flash and
        # memory-efficient SDPA); or the MLP phase: residual, LayerNorm out, 2 x (T_a, 4 s_a)
    decoder_row = b * L_t * 2 * s_t * (T_a + 2 * T_t)    # cross-attention K,V (computed once) + self-attention
                                                        # K,V cache, x2 for torch.cat growth in whisper's hooks
                + 4 * n_vocab * T_t / 2                 # fp32 logits of a 224-token prompt on the first step
    row = mel + max(encoder_row + b * T_a * s_a, decoder_row + b * T_a * s_a)   # + the audio features

    batch = floor((free * HEADROOM - weights - RESERVE) / row), clamped to 1..cap and rounded down to a
            candidate in BATCH_CANDIDATES

The fp32 rows on CUDA scale the fp16 fit by ``b`` (every term is an activation in the compute dtype); measured in
fp32 + TF32 on an H200 (bench/notes/gpu-h200.md, sixth session), the rows were 24.2 MiB (tiny.en) and 41.1 MiB
(base), against 24.2 and 43.0 MiB from the scaled fit. On the CPU the advice is 8, capped by RAM: decoding is bound
by memory bandwidth there, and larger batches add little (docs/performance.md).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, replace

from whisper_subtitler.platform.machine import GIB, BackendName, Device

MIB = 1024**2  # bytes
HEADROOM = 0.9  # share of free memory the advice may plan for (allocator fragmentation, other processes)
RESERVE = 512 * MIB  # bytes: cuBLAS/cuDNN workspaces, mel filters, tokenizer tensors, small buffers
CPU_RAM_SHARE = 0.5  # share of available RAM a CPU batch may take
CPU_BATCH = 8  # batches above 8 add little on the CPU: decoding is memory-bandwidth bound (docs/performance.md)
GPU_BATCH_CAP = 32  # beyond this one looping window stalls too many rows (whisper.decode runs all rows to the end)
BATCH_CANDIDATES = (1, 2, 4, 8, 12, 16, 24, 32)
DEFAULT_MODEL = "base"  # the embedded default model
DTYPE_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4, "int8": 4}  # int8: float32 activations
# MiB per batch row measured on an H200 in fp16 (module docstring; bench/gpu/h200-2-memory.json).
MEASURED_CUDA_ROW_MIB = {"tiny.en": 12.5, "base": 21.0, "small": 59.4}
MEASURED_TOKENS = 100  # the measurement decoded this many tokens; the self-attention cache of the rest is added


@dataclass(frozen=True, slots=True)
class ModelDims:
    """Mirror of ``whisper.model.ModelDimensions`` (no torch import): mel bins, contexts, widths, heads, layers."""

    n_mels: int
    n_audio_ctx: int
    n_audio_state: int
    n_audio_head: int
    n_audio_layer: int
    n_vocab: int
    n_text_ctx: int
    n_text_state: int
    n_text_head: int
    n_text_layer: int


def _dims(mels: int, vocab: int, state: int, heads: int, layers: int, text_layers: int | None = None) -> ModelDims:
    return ModelDims(mels, 1500, state, heads, layers, vocab, 448, state, heads, text_layers or layers)


# The official checkpoints' dims (the "dims" dict stored in each .pt of whisper._MODELS).
WHISPER_DIMS: dict[str, ModelDims] = {
    "tiny.en": _dims(80, 51864, 384, 6, 4),
    "tiny": _dims(80, 51865, 384, 6, 4),
    "base.en": _dims(80, 51864, 512, 8, 6),
    "base": _dims(80, 51865, 512, 8, 6),
    "small.en": _dims(80, 51864, 768, 12, 12),
    "small": _dims(80, 51865, 768, 12, 12),
    "medium.en": _dims(80, 51864, 1024, 16, 24),
    "medium": _dims(80, 51865, 1024, 16, 24),
    "large-v1": _dims(80, 51865, 1280, 20, 32),
    "large-v2": _dims(80, 51865, 1280, 20, 32),
    "large-v3": _dims(128, 51866, 1280, 20, 32),
    "large": _dims(128, 51866, 1280, 20, 32),
    "large-v3-turbo": _dims(128, 51866, 1280, 20, 32, text_layers=4),
    "turbo": _dims(128, 51866, 1280, 20, 32, text_layers=4),
}
ADVICE_MODELS = ("tiny", "tiny.en", "base", "base.en", "small", "small.en", "medium", "medium.en", "large-v3", "turbo")


def parameter_count(d: ModelDims) -> int:
    """Exact number of parameters of ``whisper.model.Whisper(d)``.

    Per block (width s): attention q, v, out with bias and k without = 4 s^2 + 3 s; MLP s -> 4 s -> s =
    8 s^2 + 5 s; two LayerNorms = 4 s. Decoder blocks add cross-attention (4 s^2 + 3 s) and its LayerNorm (2 s).
    """
    sa, st = d.n_audio_state, d.n_text_state
    encoder = (d.n_mels * sa * 3 + sa) + (sa * sa * 3 + sa) + d.n_audio_layer * (12 * sa * sa + 12 * sa) + 2 * sa
    decoder = d.n_vocab * st + d.n_text_ctx * st + d.n_text_layer * (16 * st * st + 17 * st) + 2 * st
    return encoder + decoder


def buffer_elements(d: ModelDims) -> int:
    """Elements of the float buffers cast with the model: the encoder sinusoids (T_a, s_a) and the causal mask
    (T_t, T_t)."""
    return d.n_audio_ctx * d.n_audio_state + d.n_text_ctx * d.n_text_ctx


@dataclass(frozen=True, slots=True)
class MemoryEstimate:
    """Bytes a model needs: ``weights`` once, ``row`` per batch row (see the module docstring for the formula)."""

    weights: int
    row: int
    encoder_row: int
    decoder_row: int


def estimate_memory(d: ModelDims, dtype: str = "float16", materialized_attention: bool = False) -> MemoryEstimate:
    """The memory model for dims ``d`` in ``dtype`` (``float16``/``bfloat16``/``float32``); bytes."""
    b = DTYPE_BYTES[dtype]
    ta, tt, sa, st = d.n_audio_ctx, d.n_text_ctx, d.n_audio_state, d.n_text_state
    m = 1 if materialized_attention else 0
    encoder_row = b * ta * max(6 * sa + 2 * d.n_audio_head * ta * m, 10 * sa)
    decoder_row = b * d.n_text_layer * 2 * st * (ta + 2 * tt) + 4 * d.n_vocab * tt // 2
    features = b * ta * sa
    mel = d.n_mels * 2 * ta * (4 + b)  # float32 log-mel (n_mels, 3000) and its cast copy
    row = mel + max(encoder_row, decoder_row) + features
    weights = (parameter_count(d) + buffer_elements(d)) * b
    return MemoryEstimate(weights=weights, row=row, encoder_row=encoder_row, decoder_row=decoder_row)


def cross_kv_bytes(d: ModelDims, dtype: str = "float16") -> int:
    """Bytes of the decoder's cross-attention keys and values for one 30-s window: ``b * L_t * 2 * T_a * s_t``."""
    return DTYPE_BYTES[dtype] * d.n_text_layer * 2 * d.n_audio_ctx * d.n_text_state


def _fit() -> tuple[float, float]:
    rows = [(cross_kv_bytes(WHISPER_DIMS[m]) / MIB, mib) for m, mib in MEASURED_CUDA_ROW_MIB.items()]
    slope, intercept = statistics.linear_regression([x for x, _ in rows], [y for _, y in rows])
    return slope, intercept


# The least-squares line through the measured rows against the cross-attention K,V size, in fp16:
# MiB per row = 1.074 * cross_kv MiB + 2.64 (tiny.en 12.1 against 12.5 measured, base 21.5 / 21.0, small 59.3 / 59.4).
CUDA_FIT_SLOPE, CUDA_FIT_INTERCEPT_MIB = _fit()


def cuda_row(d: ModelDims, dtype: str = "float16") -> int:
    """Bytes per batch row on CUDA (flash or memory-efficient attention): the fit to the measured rows, see the
    module docstring."""
    b = DTYPE_BYTES[dtype]
    ta, tt, sa, st = d.n_audio_ctx, d.n_text_ctx, d.n_audio_state, d.n_text_state
    decoder = int(CUDA_FIT_SLOPE * cross_kv_bytes(d, dtype) + CUDA_FIT_INTERCEPT_MIB * MIB * b / 2)
    encoder = estimate_memory(d, dtype, materialized_attention=False).encoder_row + b * ta * sa
    return max(decoder, encoder) + b * d.n_text_layer * 2 * (tt - MEASURED_TOKENS) * st


@dataclass(frozen=True, slots=True)
class BatchAdvice:
    """A recommended batch size for ``model`` on one device, with the figures behind it (bytes)."""

    model: str
    batch_size: int
    reason: str
    weights: int | None = None
    row: int | None = None
    usable: int | None = None


def model_dims(model: str | None) -> tuple[str, ModelDims, bool]:
    """``(name, dims, known)`` for a model name; unknown names (a local path, ...) get large-v3's dims."""
    name = (model or DEFAULT_MODEL).strip().lower()
    if name in WHISPER_DIMS:
        return name, WHISPER_DIMS[name], True
    return name, WHISPER_DIMS["large-v3"], False


def _round_down(n: int) -> int:
    return max(c for c in BATCH_CANDIDATES if c <= max(1, n))


def recommend_batch_size(model: str | None, device: Device, dtype: str) -> BatchAdvice:
    """Batch advice for ``model`` (a Whisper name; ``None`` = the default model) on ``device`` in ``dtype``.

    GPUs (CUDA, ROCm, MPS) use ``device.free_memory`` (or ``total_memory`` when free is unknown); the CPU uses
    ``CPU_BATCH`` capped by available RAM. Never raises; returns batch 1 when the weights alone do not fit.
    """
    name, dims, known = model_dims(model)
    note = "" if known else f" (unknown model {name!r}: sized as large-v3)"
    if device.backend == BackendName.CPU:
        est = estimate_memory(dims, dtype, materialized_attention=True)
        ram = device.free_memory or device.total_memory
        if ram is None:
            return BatchAdvice(name, CPU_BATCH, f"CPU default {CPU_BATCH}{note}", est.weights, est.row)
        usable = int(ram * CPU_RAM_SHARE) - est.weights
        fit = usable // est.row if usable > 0 else 1
        batch = _round_down(min(CPU_BATCH, fit))
        why = f"CPU: {CPU_BATCH} (memory-bandwidth bound decoding)"
        if batch < CPU_BATCH:
            why = f"CPU: {batch}, limited by {ram / GIB:.1f} GiB RAM"
        return BatchAdvice(name, batch, why + note, est.weights, est.row, usable)

    est = estimate_memory(dims, dtype, materialized_attention=device.backend != BackendName.CUDA)
    if device.backend == BackendName.CUDA:
        est = replace(est, row=cuda_row(dims, dtype))
    memory = device.free_memory if device.free_memory is not None else device.total_memory
    kind = "free" if device.free_memory is not None else "total"
    if memory is None:
        return BatchAdvice(name, 1, f"{device.backend}: memory unknown, batch 1{note}", est.weights, est.row)
    usable = int(memory * HEADROOM) - est.weights - RESERVE
    if usable < est.row:
        why = f"{kind} memory {memory / GIB:.1f} GiB barely holds the weights ({est.weights / GIB:.2f} GiB)"
        return BatchAdvice(name, 1, why + note, est.weights, est.row, usable)
    fit = usable // est.row
    batch = _round_down(min(GPU_BATCH_CAP, fit))
    why = (
        f"{kind} memory {memory / GIB:.1f} GiB: weights {est.weights / GIB:.2f} GiB + "
        f"{est.row / MIB:.0f} MiB per row fits {fit}" + (f", capped at {GPU_BATCH_CAP}" if fit > GPU_BATCH_CAP else "")
    )
    return BatchAdvice(name, batch, why + note, est.weights, est.row, usable)
