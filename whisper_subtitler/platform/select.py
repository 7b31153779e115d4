"""Backend selection: a pure function of the request and the machine description.

Order under ``auto``: CUDA, ROCm, MPS, CPU (``machine.BACKENDS``). A requested backend that does not work falls
back to the CPU with a warning that says why, or raises ``BackendUnavailableError`` (exit 4) with
``no_fallback``. The compute dtype and the recommended batch size are chosen here too, from tables, so that the
``Selection`` the pipeline receives is complete. No torch import.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from whisper_subtitler.errors import BackendUnavailableError, UsageError
from whisper_subtitler.platform import architectures as arch
from whisper_subtitler.platform.batch_advice import CPU_BATCH, BatchAdvice, model_dims, recommend_batch_size
from whisper_subtitler.platform.environment import Request
from whisper_subtitler.platform.machine import BACKENDS, BackendName, Device, Machine

INSTALL_HINTS = {
    BackendName.CUDA: "install a CUDA build of torch (README, 'Install for your hardware') and check nvidia-smi",
    BackendName.ROCM: "install a ROCm build of torch (README, 'Install for your hardware') and check rocm-smi",
    BackendName.MPS: "MPS needs an Apple silicon Mac with macOS 12.3+ and the macOS arm64 torch wheel",
    BackendName.CPU: "",
}


@dataclass(frozen=True, slots=True)
class DtypeRule:
    """One row of the compute-dtype table: on ``backend`` from optimization level ``min_level``, when the device
    has ``feature`` (or always when ``None``) and the model is one of ``models`` (or any when ``None``), compute in
    ``dtype``; ``why`` is logged."""

    backend: BackendName
    min_level: int
    feature: str | None
    dtype: str
    why: str
    models: frozenset[str] | None = None


# fp32 with TF32 tensor-core matrix products (compute capability >= 8.0, the tf32 step) beat fp16 in every
# measurement of the whole pipeline on an H100 and two H200s, with the same words: base on the 10-minute clip
# 4.0 s against 12.8 s, tiny.en 4.3 s against 11.9 s (bench/notes/gpu-h200.md). Measured on tiny and base only: larger
# models keep fp16, whose weights and batch rows are half the size and whose tensor cores run at twice TF32's rate,
# until a measurement says otherwise.
FP32_MODELS = frozenset({"tiny", "tiny.en", "base", "base.en"})

# First matching row wins (rows for higher levels first). bf16 is never chosen: whisper.decode accepts only
# fp16 or fp32 audio features (DecodingTask._get_audio_features raises TypeError otherwise), and bf16 has
# 3 fewer mantissa bits than fp16 for no speed gain on tensor cores that run both.
DTYPE_RULES: tuple[DtypeRule, ...] = (
    DtypeRule(
        BackendName.CUDA,
        1,
        arch.TF32,
        "float32",
        "fp32 with TF32 tensor cores: faster than fp16 for this model on the measured GPUs (bench/notes/gpu-h200.md)",
        FP32_MODELS,
    ),
    DtypeRule(BackendName.CUDA, 0, arch.FP16, "float16", "fp16 tensor cores; Whisper's own default on CUDA"),
    DtypeRule(BackendName.CUDA, 0, None, "float32", "this GPU has no native fp16"),
    DtypeRule(BackendName.ROCM, 0, arch.FP16, "float16", "fp16 matrix cores; Whisper's own default on GPUs"),
    DtypeRule(BackendName.ROCM, 0, None, "float32", "this GPU has no native fp16"),
    DtypeRule(BackendName.MPS, 1, arch.FP16, "float16", "Apple GPUs run half precision natively (level 1)"),
    DtypeRule(BackendName.MPS, 0, None, "float32", "level 0 keeps full precision on MPS"),
    DtypeRule(BackendName.CPU, 0, None, "float32", "fp16 is slow and not supported by whisper on the CPU"),
)


COMPUTE_TYPES = ("auto", "float32", "float16", "bfloat16", "int8")  # --compute-type (faster-whisper's name)


def forced_dtype(compute_type: str, device: Device) -> tuple[str, str]:
    """``(dtype, why)`` for ``--compute-type`` other than ``auto`` on ``device``. ``int8`` is PyTorch's dynamic
    quantization, CPU only (``platform.quantize``); ``float16`` needs a GPU (openai-whisper computes in float32 on the
    CPU); ``bfloat16`` a device with bf16 arithmetic (the CPU always has it, emulated where the cores lack it).
    Raises ``UsageError`` (exit 2) otherwise."""
    why = f"--compute-type {compute_type}"
    on_cpu = device.backend == BackendName.CPU
    if compute_type == "int8" and not on_cpu:
        raise UsageError(
            f"--compute-type int8 runs on the CPU only (PyTorch dynamic quantization), not on {device.backend}",
            "add --gpu-backend cpu, or use float16 on the GPU",
        )
    if compute_type == "float16" and on_cpu:
        raise UsageError("--compute-type float16 needs a GPU; on the CPU use float32 (auto), bfloat16 or int8")
    if compute_type == "bfloat16" and not on_cpu and arch.BF16 not in device.features:
        raise UsageError(f"--compute-type bfloat16: {device.name} has no bfloat16 arithmetic", "use float16")
    return compute_type, why


def choose_dtype(device: Device, level: int, model: str | None = None) -> tuple[str, str]:
    """``(dtype, why)`` from ``DTYPE_RULES`` for ``device`` at optimization ``level`` and ``model`` (``None``: the
    default model)."""
    name = model_dims(model)[0]
    for rule in DTYPE_RULES:
        matches = rule.backend == device.backend and level >= rule.min_level
        matches = matches and (rule.models is None or name in rule.models)
        if matches and (rule.feature is None or rule.feature in device.features):
            return rule.dtype, rule.why
    return "float32", "no rule matched"


@dataclass(frozen=True)
class Selection:
    """The platform decision the pipeline runs with.

    ``backend``: ``cuda``/``rocm``/``mps``/``cpu``; ``device``: the torch device string (``cuda`` on ROCm too);
    ``dtype``: ``float16``/``bfloat16``/``float32``, or ``int8`` (float32 with int8 linear layers, CPU only);
    ``reason``: why this backend (for the log and ``doctor``);
    ``warnings``: fallback, clamping and conflict notes, already logged; ``batch_size``: the recommended
    batch size for ``model`` (``None`` = the default model), explained in ``batch``; ``requested``: the
    backend asked for (``auto`` or a name) and ``source`` where that came from; ``fell_back``: the request
    could not be honoured and the CPU is used instead.
    """

    backend: BackendName
    device: str
    dtype: str
    optimization_level: int
    reason: str
    warnings: tuple[str, ...]
    batch_size: int
    model: str | None
    requested: BackendName
    source: str
    fell_back: bool
    device_info: Device
    batch: BatchAdvice
    dtype_reason: str = ""
    machine: Machine | None = field(default=None, repr=False, compare=False)


def _batch(model: str | None, device: Device, dtype: str, level: int) -> BatchAdvice:
    advice = recommend_batch_size(model, device, dtype)
    if level == 0 and advice.batch_size > CPU_BATCH:  # level 0: a conservative batch, never above 8
        return BatchAdvice(
            advice.model,
            CPU_BATCH,
            f"level 0 caps the batch at {CPU_BATCH} ({advice.reason})",
            advice.weights,
            advice.row,
            advice.usable,
        )
    return advice


def select(request: Request, machine: Machine, model: str | None = None) -> Selection:
    """Choose backend, device string, dtype and batch size for ``request`` on ``machine``.

    Raises ``BackendUnavailableError`` when the requested backend does not work and ``request.no_fallback``, and
    ``UsageError`` for a ``request.compute_type`` the device cannot compute in (``forced_dtype``).
    """
    warnings = list(request.warnings)
    fell_back = False
    if request.backend == BackendName.AUTO:
        chosen = next(b for b in (machine.backend(n) for n in BACKENDS) if b.available)
        skipped = [f"{b.name}: {b.detail}" for b in machine.backends if b.name != chosen.name and not b.available]
        reason = f"auto picked {chosen.name} ({chosen.detail}), first working in order {', '.join(BACKENDS)}"
        if skipped and chosen.name == BackendName.CPU:
            reason += "; " + "; ".join(skipped)
    else:
        wanted = machine.backend(request.backend)
        if wanted.available:
            chosen, reason = wanted, f"{request.source} asks for {wanted.name} ({wanted.detail})"
        elif request.no_fallback:
            raise BackendUnavailableError(
                f"{wanted.name} was requested by {request.source} but is not available: {wanted.detail}",
                INSTALL_HINTS[wanted.name] + "; or drop --no-fallback to run on the CPU",
            )
        else:
            chosen, fell_back = machine.backend(BackendName.CPU), True
            reason = f"{request.source} asks for {wanted.name}, which is not available ({wanted.detail}): using the CPU"
            warnings.append(f"{wanted.name} is not available ({wanted.detail}); falling back to the CPU")
    device = chosen.device
    assert device is not None  # available backends always carry their device
    if request.compute_type == "auto":
        dtype, dtype_reason = choose_dtype(device, request.optimization_level, model)
    else:
        dtype, dtype_reason = forced_dtype(request.compute_type, device)
    batch = _batch(model, device, dtype, request.optimization_level)
    return Selection(
        backend=chosen.name,
        device=device.torch_device,
        dtype=dtype,
        optimization_level=request.optimization_level,
        reason=reason,
        warnings=tuple(warnings),
        batch_size=batch.batch_size,
        model=model,
        requested=request.backend,
        source=request.source,
        fell_back=fell_back,
        device_info=device,
        batch=batch,
        dtype_reason=dtype_reason,
        machine=machine,
    )
