"""Optimization tiers as a table of named steps, each with the condition it needs.

    level 0 (safe)        cudnn_benchmark_off, cudnn_attention_off, mps_cpu_fallback
    level 1 (hardware)    tf32, compute_dtype, cuda_allocator, cpu_threads, host_allocator, batch_size
    level 2 (measured)    benchmark_tuning (the transcription stage calls ``tune`` on the loaded model)

``plan_optimizations`` is pure: it says which steps a level would apply and why others are skipped (the doctor
report uses it for every level). ``apply_optimizations`` runs the planned steps before the model is loaded and
logs each one; a step that raises is reported as ``failed`` with a warning and the run goes on with the
setting of the tier below (torch's default). A new backend or GPU generation is new rows here.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from whisper_subtitler.platform import allocator
from whisper_subtitler.platform import architectures as arch
from whisper_subtitler.platform.machine import GIB, BackendName
from whisper_subtitler.platform.select import Selection

log = logging.getLogger(__name__)

ALLOC_CONF_VARIABLE = "PYTORCH_CUDA_ALLOC_CONF"

# CUDA caching allocator settings by total VRAM (first row whose bound is above the VRAM wins).
# expandable_segments: segments grow in place instead of new fixed blocks, which avoids fragmentation with the
# changing batch shapes of batched decoding (PyTorch "CUDA semantics: optimizing memory usage"). Below 16 GiB the
# allocator also returns cached blocks early, so the weights of a large model plus a batch fit.
ALLOCATOR_RULES: tuple[tuple[float, str], ...] = (
    (16 * GIB, "expandable_segments:True,garbage_collection_threshold:0.8"),
    (float("inf"), "expandable_segments:True"),
)


@dataclass(frozen=True, slots=True)
class StepResult:
    """Outcome of one step: ``status`` is ``planned``, ``applied``, ``skipped`` or ``failed``; ``detail`` says
    what was (or would be) done, or why not."""

    name: str
    level: int
    status: str
    detail: str


@dataclass(frozen=True, slots=True)
class OptimizationReport:
    """All steps of the table, in order, for one selection at its optimization level."""

    level: int
    steps: tuple[StepResult, ...]

    @property
    def applied(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.steps if s.status == "applied")


Condition = Callable[[Selection, Mapping[str, str]], "str | None"]  # None: applies; str: why it is skipped


@dataclass(frozen=True, slots=True)
class Step:
    """One row: ``name`` runs from optimization ``level`` when ``condition`` returns ``None``; ``describe``
    says what it would do (pure); ``action`` does it (may import torch) and returns what it did."""

    name: str
    level: int
    condition: Condition
    describe: Callable[[Selection, Mapping[str, str]], str]
    action: Callable[[Selection, Mapping[str, str]], str]


def allocator_conf(total_memory: int | None) -> str:
    """The ``PYTORCH_CUDA_ALLOC_CONF`` value for a GPU with ``total_memory`` bytes (``ALLOCATOR_RULES``)."""
    total = float(total_memory or 0)
    return next(conf for bound, conf in ALLOCATOR_RULES if total < bound)


def cpu_threads(selection: Selection) -> int:
    """Intra-op threads for the CPU: physical cores when known (GEMM threads gain nothing from SMT siblings),
    never more than the logical cores this process may use."""
    machine = selection.machine
    if machine is None:
        return os.cpu_count() or 1
    return min(machine.probe.cpu_physical_cores or machine.cpu_count, machine.cpu_count)


# --- conditions (pure) -------------------------------------------------------------------------------------


def _on_gpu(s: Selection, env: Mapping[str, str]) -> str | None:
    return None if s.backend in (BackendName.CUDA, BackendName.ROCM) else f"{s.backend} has no cuDNN/MIOpen"


def _on_mps(s: Selection, env: Mapping[str, str]) -> str | None:
    return None if s.backend == BackendName.MPS else "only for MPS"


def _tf32(s: Selection, env: Mapping[str, str]) -> str | None:
    if s.backend != BackendName.CUDA:
        return "TF32 switches are CUDA only" if s.backend != BackendName.ROCM else "not enabled on ROCm (unvalidated)"
    if arch.TF32 not in s.device_info.features:
        return f"compute capability {s.device_info.compute_capability} < 8.0 has no TF32"
    return None


def _cudnn_attention(s: Selection, env: Mapping[str, str]) -> str | None:
    if s.backend != BackendName.CUDA:
        return "cuDNN attention is CUDA only"
    if s.dtype not in ("float16", "bfloat16"):
        return f"cuDNN attention does not run {s.dtype}"
    return None


def _always(s: Selection, env: Mapping[str, str]) -> str | None:
    return None


def _allocator(s: Selection, env: Mapping[str, str]) -> str | None:
    if s.backend != BackendName.CUDA:
        return (
            "CUDA only (expandable segments are not validated on ROCm here)"
            if s.backend == BackendName.ROCM
            else "CUDA only"
        )
    if env.get(ALLOC_CONF_VARIABLE):
        return f"{ALLOC_CONF_VARIABLE} is set by the user ({env[ALLOC_CONF_VARIABLE]})"
    return None


def _threads(s: Selection, env: Mapping[str, str]) -> str | None:
    if s.backend != BackendName.CPU:
        return "the model runs on the GPU"
    if env.get("OMP_NUM_THREADS"):
        return f"OMP_NUM_THREADS={env['OMP_NUM_THREADS']} is set by the user"
    return None


def _host_allocator(s: Selection, env: Mapping[str, str]) -> str | None:
    if s.backend != "cpu":
        return "only measured for inference on the CPU"
    return allocator.why_not(env)


# --- descriptions (pure) and actions (torch) ---------------------------------------------------------------


# cuDNN's (MIOpen's) autotuner times every convolution algorithm for each new input shape. Whisper's encoder and
# the diarization models see a new shape at each new batch size or file length, so it costs more than it saves: on
# an H200 its trial workspaces took the diarization of an hour to 66.6 GiB of VRAM, against 2.0 GiB without, and
# the first fp16 30-s file of a process took 8.2 s with it, 2.1 s with it and cuDNN attention both off
# (bench/notes/gpu-h200.md). Off is torch's default; the step makes sure a library loaded before us has not turned
# it on.
CUDNN_BENCHMARK_DETAIL = "torch.backends.cudnn.benchmark = False: no convolution autotuning per new shape"


def _do_cudnn_benchmark_off(s: Selection, env: Mapping[str, str]) -> str:
    import torch

    torch.backends.cudnn.benchmark = False
    return CUDNN_BENCHMARK_DETAIL


# cuDNN's attention backend of scaled_dot_product_attention (fp16/bf16 only) costs the first fp16 file of a process
# as much as the autotuner does: on an H200, tiny.en on a 30-s file, the first run took 9.0 s with the autotuner off
# and cuDNN attention on, 7.4-8.2 s with either one on, 2.1 s with both off (steady runs 0.4-0.6 s either way;
# bench/notes/gpu-h200.md). Flash and memory-efficient attention, which torch uses instead, build no plans per shape.
CUDNN_ATTENTION_DETAIL = "torch.backends.cuda.enable_cudnn_sdp(False): no cuDNN attention plans per new shape"


def _do_cudnn_attention(s: Selection, env: Mapping[str, str]) -> str:
    import torch

    torch.backends.cuda.enable_cudnn_sdp(False)
    return CUDNN_ATTENTION_DETAIL


def _do_mps_fallback(s: Selection, env: Mapping[str, str]) -> str:
    from whisper_subtitler.platform.mps import MPS_FALLBACK_VARIABLE, enable_mps_fallback

    enable_mps_fallback()
    return f"{MPS_FALLBACK_VARIABLE}={os.environ.get(MPS_FALLBACK_VARIABLE, '')}; alignment heads kept on the CPU"


def _do_tf32(s: Selection, env: Mapping[str, str]) -> str:
    import torch

    # The legacy flags, not torch >= 2.9's ``fp32_precision``: pyannote.audio 4 reads and writes the legacy ones
    # (``fix_reproducibility``), and torch raises a RuntimeError when they are read after the new API was used.
    # torch mirrors them into ``fp32_precision``, so both APIs read "tf32" afterwards.
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    return "TF32 for fp32 matmul and cuDNN convolutions"


def _do_dtype(s: Selection, env: Mapping[str, str]) -> str:
    return f"{s.dtype}: {s.dtype_reason}"


def _do_allocator(s: Selection, env: Mapping[str, str]) -> str:
    conf = allocator_conf(s.device_info.total_memory)
    os.environ[ALLOC_CONF_VARIABLE] = conf
    import torch

    if torch.cuda.is_initialized():  # the allocator read its config at CUDA init: update it in place
        from whisper_subtitler.compat import torch as torch_compat

        if not torch_compat.set_allocator_settings(conf):
            return f"{ALLOC_CONF_VARIABLE}={conf} (CUDA already initialized: from the next process)"
    return f"{ALLOC_CONF_VARIABLE}={conf}"


def _do_threads(s: Selection, env: Mapping[str, str]) -> str:
    import torch

    n = cpu_threads(s)
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    return f"torch.set_num_threads({n}) (was {before})"


def _do_host_allocator(s: Selection, env: Mapping[str, str]) -> str:
    return f"mallopt {allocator.apply()}"


def _do_batch(s: Selection, env: Mapping[str, str]) -> str:
    return f"batch {s.batch_size} for {s.batch.model}: {s.batch.reason}"


def _do_tuning(s: Selection, env: Mapping[str, str]) -> str:
    from whisper_subtitler.platform.tune import cache_path

    return (
        "batch size, decoder kernels, attention kernel and torch.compile of the decoder step measured on the "
        f"loaded model, winners cached in {cache_path(env)}"
    )


STEPS: tuple[Step, ...] = (
    Step("cudnn_benchmark_off", 0, _on_gpu, lambda s, e: CUDNN_BENCHMARK_DETAIL, _do_cudnn_benchmark_off),
    Step("cudnn_attention_off", 0, _cudnn_attention, lambda s, e: CUDNN_ATTENTION_DETAIL, _do_cudnn_attention),
    Step(
        "mps_cpu_fallback",
        0,
        _on_mps,
        lambda s, e: "PYTORCH_ENABLE_MPS_FALLBACK=1, alignment heads on the CPU",
        _do_mps_fallback,
    ),
    Step("tf32", 1, _tf32, lambda s, e: "TF32 for fp32 matmul and cuDNN convolutions", _do_tf32),
    Step("compute_dtype", 1, _always, _do_dtype, _do_dtype),
    Step(
        "cuda_allocator",
        1,
        _allocator,
        lambda s, e: f"{ALLOC_CONF_VARIABLE}={allocator_conf(s.device_info.total_memory)}",
        _do_allocator,
    ),
    Step("cpu_threads", 1, _threads, lambda s, e: f"torch.set_num_threads({cpu_threads(s)})", _do_threads),
    Step("host_allocator", 1, _host_allocator, lambda s, e: f"mallopt {allocator.describe()}", _do_host_allocator),
    Step("batch_size", 1, _always, _do_batch, _do_batch),
    Step("benchmark_tuning", 2, _always, _do_tuning, _do_tuning),
)

LEVEL_0_DEFAULTS = {
    "compute_dtype": "level 0 keeps Whisper's defaults (fp16 on CUDA/ROCm, fp32 on MPS and CPU)",
    "batch_size": "level 0 uses a batch of at most 8",
}


def plan_optimizations(
    selection: Selection, level: int | None = None, environ: Mapping[str, str] | None = None
) -> tuple[StepResult, ...]:
    """Which steps ``level`` (default: the selection's) would apply on ``selection``'s device; pure.

    Every row of ``STEPS`` appears once: ``planned`` with what it would do, or ``skipped`` with why.
    """
    env = os.environ if environ is None else environ
    level = selection.optimization_level if level is None else level
    results = []
    for step in STEPS:
        if step.level > level:
            why = LEVEL_0_DEFAULTS.get(step.name) if level == 0 else None
            results.append(StepResult(step.name, step.level, "skipped", why or f"needs level {step.level}"))
            continue
        skip = step.condition(selection, env)
        if skip is None:
            results.append(StepResult(step.name, step.level, "planned", step.describe(selection, env)))
        else:
            results.append(StepResult(step.name, step.level, "skipped", skip))
    return tuple(results)


def apply_optimizations(selection: Selection, environ: Mapping[str, str] | None = None) -> OptimizationReport:
    """Apply the planned steps of ``selection.optimization_level`` in table order, logging each on stderr.

    Call before the model is loaded (the allocator step must precede the first CUDA allocation). Never
    raises for a failing step: it is reported ``failed`` with a warning and torch's default stays in effect.
    """
    env = os.environ if environ is None else environ
    steps = []
    for planned in plan_optimizations(selection, environ=env):
        if planned.status != "planned":
            log.info("optimization %s: skipped (%s)", planned.name, planned.detail)
            steps.append(planned)
            continue
        step = next(s for s in STEPS if s.name == planned.name)
        try:
            detail = step.action(selection, env)
        except Exception as exc:  # noqa: BLE001 - a failing speed setting must not stop the run
            log.warning("optimization %s failed, keeping the default: %s", step.name, exc)
            steps.append(StepResult(step.name, step.level, "failed", str(exc)))
            continue
        log.info("optimization %s: applied (%s)", step.name, detail)
        steps.append(StepResult(step.name, step.level, "applied", detail))
    return OptimizationReport(selection.optimization_level, tuple(steps))
