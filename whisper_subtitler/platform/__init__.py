"""The platform layer: detect the machine, select a backend, apply optimization tiers, prepare the model.

    configure(...) -> Selection              # env file + environment + CLI -> Request; probe -> Machine; select
    apply_optimizations(selection)           # before the model is loaded; logs each step
    prepare_model(model, selection)          # moves a whisper model to the device (MPS-safe), in selection.dtype,
                                             # and sets up its word timing (word_timing.py)
    tune(candidates, measure, key)           # level 2: measure once, cache the winner

Data flows as frozen dataclasses: ``Probe`` (raw facts) -> ``Machine`` (description) -> ``Selection``.
Only ``probe.py``, ``optimize.py``, ``mps.py``, ``tune.py`` and ``word_timing.py`` touch torch, and only inside
functions.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import replace
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any

from whisper_subtitler.platform.batch_advice import BatchAdvice, recommend_batch_size
from whisper_subtitler.platform.environment import Request, load_environment, resolve_request
from whisper_subtitler.platform.machine import Backend, BackendName, Device, Machine, Probe, describe, with_free_memory
from whisper_subtitler.platform.select import Selection, select
from whisper_subtitler.platform.tune import TuneResult, tune, tuning_key

if TYPE_CHECKING:
    from whisper_subtitler.platform.mps import enable_mps_fallback, prepare_model
    from whisper_subtitler.platform.optimize import (
        OptimizationReport,
        StepResult,
        apply_optimizations,
        plan_optimizations,
    )

# Imported on first use (PEP 562), so that reading the flags and printing help need neither: the names of ``mps``
# and ``optimize`` (with ``allocator``'s ctypes). ``select`` and ``tune`` stay above: their submodules' names would
# shadow the functions once imported.
_LAZY = {
    "enable_mps_fallback": "mps",
    "prepare_model": "mps",
    "OptimizationReport": "optimize",
    "StepResult": "optimize",
    "apply_optimizations": "optimize",
    "plan_optimizations": "optimize",
}

__all__ = [
    "Backend",
    "BackendName",
    "BatchAdvice",
    "Device",
    "Machine",
    "OptimizationReport",
    "Probe",
    "Request",
    "Selection",
    "StepResult",
    "TuneResult",
    "apply_optimizations",
    "configure",
    "describe",
    "detect",
    "enable_mps_fallback",
    "plan_optimizations",
    "prepare_model",
    "recommend_batch_size",
    "requested",
    "select",
    "set_threads",
    "tune",
    "tuning_key",
]

log = logging.getLogger(__name__)


def __getattr__(name: str) -> Any:
    """The names of ``_LAZY``, imported from their submodules on first use."""
    if name in _LAZY:
        return getattr(import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def detect(free_memory_for: int | None = None) -> Machine:
    """Probe torch and the host into a ``Machine``. With ``free_memory_for`` (a CUDA/HIP device index),
    also query that device's free memory (``torch.cuda.mem_get_info``, which creates a CUDA context)."""
    from whisper_subtitler.platform.probe import gpu_free_memory, probe

    raw = probe()
    if free_memory_for is not None and raw.gpus:
        free = gpu_free_memory(free_memory_for)
        if free is not None:
            raw = with_free_memory(raw, {free_memory_for: free})
    return describe(raw)


def set_threads(n: int) -> None:
    """``--threads``: PyTorch's intra-op CPU threads (``torch.set_num_threads``), over level 1's choice and
    ``$OMP_NUM_THREADS``."""
    import torch

    log.info("torch.set_num_threads(%d) (--threads; was %d)", n, torch.get_num_threads())
    torch.set_num_threads(n)


def requested(
    gpu_backend: str | None = None,
    optimization_level: int | None = None,
    no_fallback: bool = False,
    env_file: Path | None = None,
    compute_type: str = "auto",
    *,
    environ: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> Request:
    """What the user asked for: the CLI values (as ``configure`` takes them) over the environment and ``env_file``
    (else ``./.env``), by the precedence of ``platform.environment``; the machine is not probed (no torch). Raises
    ``UsageError`` (exit 2) for invalid values."""
    env = load_environment(os.environ if environ is None else environ, env_file, Path.cwd() if cwd is None else cwd)
    request = resolve_request(
        env, gpu_backend=gpu_backend, optimization_level=optimization_level, no_fallback=no_fallback
    )
    return replace(request, compute_type=compute_type)


def configure(
    gpu_backend: str | None = None,
    optimization_level: int | None = None,
    no_fallback: bool = False,
    env_file: Path | None = None,
    model: str | None = None,
    compute_type: str = "auto",
    *,
    environ: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    machine: Machine | None = None,
    log_warnings: bool = True,
) -> Selection:
    """Read the environment (and ``env_file``, else ``./.env``), detect the machine and select a backend.

    ``gpu_backend``/``optimization_level``/``no_fallback`` are the CLI values (``None``/``False`` = not given).
    ``model`` is the Whisper model name the batch size is advised for (``None`` = the default model);
    ``compute_type`` is ``--compute-type`` (``auto``: the dtype table's choice, ``select.choose_dtype``).
    ``environ``, ``cwd`` and ``machine`` exist for tests. Logs every warning on stderr (``log_warnings``;
    ``doctor`` shows them in its report instead).

    Raises ``UsageError`` (exit 2) for invalid values and ``BackendUnavailableError`` (exit 4) when the
    requested backend does not work and fallback is disabled.
    """
    request = requested(gpu_backend, optimization_level, no_fallback, env_file, compute_type, environ=environ, cwd=cwd)
    detected = machine is None
    if machine is None:
        from whisper_subtitler.platform.mps import enable_mps_fallback

        enable_mps_fallback()
        machine = detect()
    selection = select(request, machine, model)
    if (
        detected
        and selection.backend in (BackendName.CUDA, BackendName.ROCM)
        and selection.device_info.free_memory is None
    ):
        # Free memory is worth a CUDA context only once a GPU is chosen: refine the batch advice with it.
        from whisper_subtitler.platform.probe import gpu_free_memory

        index = selection.device_info.index or 0
        free = gpu_free_memory(index)
        if free is not None:
            machine = describe(with_free_memory(machine.probe, {index: free}))
            selection = select(request, machine, model)
    for w in selection.warnings if log_warnings else ():
        log.warning("%s", w)
    log.info(
        "device %s (%s, %s), dtype %s, batch %d: %s",
        selection.device,
        selection.device_info.name,
        selection.device_info.architecture,
        selection.dtype,
        selection.batch_size,
        selection.reason,
    )
    return selection
