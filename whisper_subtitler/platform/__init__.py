"""The platform layer: detect the machine, select a backend, apply optimization tiers, prepare the model.

    configure(...) -> Selection              # env file + environment + CLI -> Request; probe -> Machine; select
    apply_optimizations(selection)           # before the model is loaded; logs each step
    prepare_model(model, selection)          # moves a whisper model to the device (MPS-safe), in selection.dtype
    tune(candidates, measure, key)           # level 2: measure once, cache the winner

Data flows as frozen dataclasses: ``Probe`` (raw facts) -> ``Machine`` (description) -> ``Selection``.
Only ``probe.py``, ``optimize.py``, ``mps.py`` and ``tune.py`` touch torch, and only inside functions.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from whisper_subtitler.platform.batch_advice import BatchAdvice, recommend_batch_size
from whisper_subtitler.platform.environment import Request, load_environment, resolve_request
from whisper_subtitler.platform.machine import Backend, BackendName, Device, Machine, Probe, describe, with_free_memory
from whisper_subtitler.platform.mps import enable_mps_fallback, prepare_model
from whisper_subtitler.platform.optimize import OptimizationReport, StepResult, apply_optimizations, plan_optimizations
from whisper_subtitler.platform.select import Selection, select
from whisper_subtitler.platform.tune import TuneResult, tune, tuning_key
from whisper_subtitler.platform.word_timing import keep_word_timing_off_triton

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
    "keep_word_timing_off_triton",
    "plan_optimizations",
    "prepare_model",
    "recommend_batch_size",
    "select",
    "set_threads",
    "tune",
    "tuning_key",
]

log = logging.getLogger(__name__)


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


def cache_word_timing_dtw() -> bool:
    """Replace openai-whisper's ``whisper.timing.dtw_cpu`` with the same Python function compiled by numba with
    whisper's options plus its on-disk cache (``cache=True``), so that only the first process compiles it.

    openai-whisper compiles its word-timing DTW (``dtw_cpu``, numba, no cache) in every process, about 1.3 s on two
    cores, paid again for each file that a shell script transcribes in its own process; loading the cached machine
    code takes about 0.35 s. The cache lives where numba puts it: ``$NUMBA_CACHE_DIR`` when set, else beside
    ``whisper/timing.py`` or, when that folder is read-only, in the user's cache folder; numba recompiles when
    ``timing.py`` changes. Returns False, and leaves whisper's function, when numba finds no writable cache folder
    or ``dtw_cpu`` is not the numba dispatcher it expects. Idempotent. Call it before the DTW's first use
    (:func:`warm_up_word_timing` does, and puts whisper's function back if the cache then fails)."""
    import whisper.timing as timing

    if getattr(timing.dtw_cpu, "_whispers", None) is not None:
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


def warm_up_word_timing() -> None:
    """Run openai-whisper's word-timing DTW (``whisper.timing.dtw_cpu``, a numba function, from numba's cache
    when :func:`cache_word_timing_dtw` can keep one) once on a tiny matrix and keep PyTorch's CPU thread count as
    it was.

    The first call of a numba function can set the process's OpenMP thread count to every logical core, PyTorch's
    included (seen with numba 0.68 and torch 2.13): without this, ``--threads``, ``$OMP_NUM_THREADS`` and the
    ``cpu_threads`` step would hold only until the first file's word timestamps. Call it once the model is loaded,
    on every device: it first sends word timing to the CPU's DTW everywhere (:func:`keep_word_timing_off_triton`),
    and it moves numba's compilation or cache load out of the first file. When the cached function
    fails on that first call (numba lets an ``OSError`` of its cache files through: a full disk), whisper's own
    function is put back and used."""
    import numpy as np
    import torch
    import whisper.timing as timing

    keep_word_timing_off_triton()
    cached = cache_word_timing_dtw()
    threads = torch.get_num_threads()
    tiny = np.zeros((4, 4), dtype=np.float64)  # the dtype whisper.timing.dtw passes
    try:
        timing.dtw_cpu(tiny)
    except Exception as exc:
        if not cached:
            raise
        log.debug("numba's cached DTW failed (%s): whisper's own compiles in this process", exc)
        timing.dtw_cpu = timing.dtw_cpu._whispers
        timing.dtw_cpu(tiny)
    finally:
        if torch.get_num_threads() != threads:
            log.debug("numba changed torch's threads to %d; back to %d", torch.get_num_threads(), threads)
            torch.set_num_threads(threads)


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
    env = load_environment(os.environ if environ is None else environ, env_file, Path.cwd() if cwd is None else cwd)
    request = resolve_request(
        env, gpu_backend=gpu_backend, optimization_level=optimization_level, no_fallback=no_fallback
    )
    request = replace(request, compute_type=compute_type)
    detected = machine is None
    if machine is None:
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
