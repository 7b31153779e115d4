"""Optimization tiers: the step table per level and machine, applying it, and a failing step."""

from __future__ import annotations

import logging
from dataclasses import replace

import pytest

from tests.test_platform_machines import MACHINES
from whisper_subtitler.platform import describe, optimize, select
from whisper_subtitler.platform.environment import Request
from whisper_subtitler.platform.machine import GIB
from whisper_subtitler.platform.optimize import (
    ALLOC_CONF_VARIABLE,
    STEPS,
    allocator_conf,
    apply_optimizations,
    plan_optimizations,
)


def _selection(key: str, level: int = 1, backend: str = "auto"):
    return select(Request(backend=backend, optimization_level=level), describe(MACHINES[key]), "large-v3")


def _planned(selection, level=None, environ=None):
    return [r.name for r in plan_optimizations(selection, level, environ or {}) if r.status == "planned"]


def test_every_step_appears_once_per_plan_in_table_order():
    for key in ("h100", "cpu", "m2", "mi300x"):
        for level in (0, 1, 2):
            plan = plan_optimizations(_selection(key), level, {})
            assert [r.name for r in plan] == [s.name for s in STEPS]
            assert all(r.status in ("planned", "skipped") and r.detail for r in plan)


def test_levels_are_cumulative_on_an_h100():
    s = _selection("h100")
    assert _planned(s, 0) == ["cudnn_benchmark_off", "cudnn_attention_off"]  # large-v3 computes in fp16
    assert _planned(s, 1) == [
        "cudnn_benchmark_off",
        "cudnn_attention_off",
        "tf32",
        "compute_dtype",
        "cuda_allocator",
        "batch_size",
    ]
    assert _planned(s, 2) == _planned(s, 1) + ["benchmark_tuning"]


def test_skips_say_why():
    t4 = {r.name: r.detail for r in plan_optimizations(_selection("t4"), 1, {})}
    assert "7.5 < 8.0" in t4["tf32"]
    cpu = {r.name: r.detail for r in plan_optimizations(_selection("cpu"), 0, {})}
    assert "level 0 keeps Whisper's defaults" in cpu["compute_dtype"]
    assert cpu["tf32"] == "needs level 1"


def test_user_settings_are_respected():
    h100 = {r.name: r for r in plan_optimizations(_selection("h100"), 1, {ALLOC_CONF_VARIABLE: "max_split_size_mb:64"})}
    assert h100["cuda_allocator"].status == "skipped" and "set by the user" in h100["cuda_allocator"].detail
    cpu = {r.name: r for r in plan_optimizations(_selection("cpu"), 1, {"OMP_NUM_THREADS": "3"})}
    assert cpu["cpu_threads"].status == "skipped" and "OMP_NUM_THREADS=3" in cpu["cpu_threads"].detail


def test_allocator_configuration_depends_on_vram():
    assert allocator_conf(15 * GIB) == "expandable_segments:True,garbage_collection_threshold:0.8"
    assert allocator_conf(80 * GIB) == "expandable_segments:True"
    plan = {r.name: r.detail for r in plan_optimizations(_selection("t4"), 1, {})}
    assert "garbage_collection_threshold" in plan["cuda_allocator"]


def test_cpu_threads_use_physical_cores_within_the_affinity():
    s = _selection("cpu")  # 32 logical, 16 physical
    assert optimize.cpu_threads(s) == 16


@pytest.fixture
def torch_settings(monkeypatch):
    """Restore torch's global switches and the allocator variable after a test applies steps."""
    torch = pytest.importorskip("torch")
    saved = (
        torch.get_num_threads(),
        torch.backends.cudnn.benchmark,
        torch.backends.cuda.matmul.allow_tf32,  # the legacy flags, as the step and pyannote use them
        torch.backends.cudnn.allow_tf32,
        torch.backends.cuda.cudnn_sdp_enabled(),
    )
    monkeypatch.setenv(ALLOC_CONF_VARIABLE, "")  # registers the undo, so the step's own setting is removed after
    monkeypatch.delenv(ALLOC_CONF_VARIABLE)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    yield torch
    torch.set_num_threads(saved[0])
    torch.backends.cudnn.benchmark = saved[1]
    torch.backends.cuda.matmul.allow_tf32 = saved[2]
    torch.backends.cudnn.allow_tf32 = saved[3]
    torch.backends.cuda.enable_cudnn_sdp(saved[4])


def test_apply_on_this_cpu_sets_the_thread_count(torch_settings, caplog):
    torch = torch_settings
    s = _selection("cpu")
    s = replace(s, machine=describe(replace(MACHINES["cpu"], cpu_count=1, cpu_physical_cores=1)))
    torch.set_num_threads(2)
    with caplog.at_level(logging.INFO, logger="whisper_subtitler.platform.optimize"):
        report = apply_optimizations(s)
    assert report.applied == ("compute_dtype", "cpu_threads", "host_allocator", "batch_size")
    assert torch.get_num_threads() == 1
    logged = [r.getMessage() for r in caplog.records]
    assert len(logged) == len(STEPS)  # every step, applied or skipped, is in the log
    assert any("cpu_threads: applied (torch.set_num_threads(1) (was 2))" in m for m in logged)


def test_apply_for_a_simulated_h100_flips_the_cuda_switches(torch_settings):
    torch = torch_settings
    import os

    torch.backends.cudnn.benchmark = True  # as a library loaded before us might leave it
    torch.backends.cuda.enable_cudnn_sdp(True)
    report = apply_optimizations(_selection("h100"), environ={})  # large-v3: fp16
    assert report.applied == (
        "cudnn_benchmark_off",
        "cudnn_attention_off",
        "tf32",
        "compute_dtype",
        "cuda_allocator",
        "batch_size",
    )
    assert torch.backends.cudnn.benchmark is False
    assert torch.backends.cuda.cudnn_sdp_enabled() is False
    assert torch.backends.cuda.matmul.fp32_precision == "tf32"
    # pyannote.audio reads the legacy flags on CUDA (fix_reproducibility): torch raises a RuntimeError there when
    # the step set the new API instead (seen on an H100 with torch 2.11)
    assert torch.backends.cuda.matmul.allow_tf32 is True and torch.backends.cudnn.allow_tf32 is True
    assert os.environ[ALLOC_CONF_VARIABLE] == "expandable_segments:True"


def test_fp32_on_cuda_leaves_cudnn_attention_alone(torch_settings):
    torch = torch_settings
    torch.backends.cuda.enable_cudnn_sdp(True)
    base = select(Request(), describe(MACHINES["h100"]), "base")  # fp32 + TF32
    report = apply_optimizations(base, environ={})
    assert base.dtype == "float32" and "cudnn_attention_off" not in report.applied
    assert torch.backends.cuda.cudnn_sdp_enabled() is True  # fp32 does not run cuDNN attention: left as found
    rocm = {r.name: r.detail for r in plan_optimizations(_selection("mi300x"), 1, {})}
    assert rocm["cudnn_attention_off"] == "cuDNN attention is CUDA only"


def test_a_failing_step_is_reported_and_the_run_goes_on(torch_settings, monkeypatch, caplog):
    def broken(selection, env):
        raise RuntimeError("cuDNN is broken here")

    steps = tuple(replace(s, action=broken) if s.name == "cudnn_benchmark_off" else s for s in STEPS)
    monkeypatch.setattr(optimize, "STEPS", steps)
    with caplog.at_level(logging.WARNING, logger="whisper_subtitler.platform.optimize"):
        report = apply_optimizations(_selection("h100"), environ={})
    status = {r.name: r.status for r in report.steps}
    assert status["cudnn_benchmark_off"] == "failed"
    assert status["tf32"] == status["batch_size"] == "applied"
    assert any("cudnn_benchmark_off failed" in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)


def test_level_2_plan_names_the_tuning_cache(tmp_path):
    plan = {r.name: r.detail for r in plan_optimizations(_selection("cpu", 2), 2, {"XDG_CACHE_HOME": str(tmp_path)})}
    assert str(tmp_path / "whisper-subtitler" / "tuning.json") in plan["benchmark_tuning"]


def test_host_allocator_is_planned_on_a_glibc_cpu_only_when_the_user_has_not_set_it():
    from whisper_subtitler.platform import allocator

    cpu = {r.name: r for r in plan_optimizations(_selection("cpu"), 1, environ={})}
    assert cpu["host_allocator"].status == "planned" and "M_ARENA_MAX=1" in cpu["host_allocator"].detail
    user = {r.name: r for r in plan_optimizations(_selection("cpu"), 1, environ={"MALLOC_ARENA_MAX": "4"})}
    assert user["host_allocator"].status == "skipped" and "MALLOC_ARENA_MAX" in user["host_allocator"].detail
    gpu = {r.name: r for r in plan_optimizations(_selection("h100"), 1, environ={})}
    assert gpu["host_allocator"].status == "skipped"
    assert allocator.why_not({}, system="Darwin", libc="") == "glibc only (this is Darwin)"
    assert "musl" in allocator.why_not({}, system="Linux", libc="musl")


def test_host_allocator_settings_stop_large_buffers_from_faulting_in_again():
    """After the step, a 64 MB buffer freed and allocated again reuses its pages (few minor page faults); with
    glibc's defaults it is a fresh mmap each time. Run in child processes so that this process keeps its own."""
    import subprocess
    import sys

    code = (
        "import ctypes, resource, sys\n"
        "from whisper_subtitler.platform import allocator\n"
        "if sys.argv[1] == 'tuned': allocator.apply()\n"
        "libc = ctypes.CDLL('libc.so.6'); libc.malloc.restype = ctypes.c_void_p\n"
        "libc.free.argtypes = [ctypes.c_void_p]\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt\n"
        "for _ in range(20):\n"
        "    p = libc.malloc(64 << 20); ctypes.memset(p, 1, 64 << 20); libc.free(p)\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)\n"
    )
    faults = {
        mode: int(subprocess.run([sys.executable, "-c", code, mode], capture_output=True, text=True, check=True).stdout)
        for mode in ("default", "tuned")
    }
    pages = 64 << 20 >> 12
    assert faults["default"] > 10 * pages  # every round faults the buffer in again
    assert faults["tuned"] < 2 * pages  # once


def test_word_timing_warm_up_keeps_torch_threads():
    """numba's first DTW call set torch to every core (2 here) after ``torch.set_num_threads(1)``; after the warm-up,
    the thread count set before it holds through later word timing. In a fresh process: numba initialises once."""
    import subprocess
    import sys

    code = (
        "import numpy as np, torch; torch.set_num_threads(1); from whisper_subtitler.platform import word_timing; "
        "print(torch.get_num_threads()); word_timing.warm_up_word_timing(); from whisper.timing import dtw_cpu; "
        "dtw_cpu(np.random.rand(50, 60)); print(torch.get_num_threads())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["1", "1"]


def test_word_timing_dtw_is_compiled_once_and_loaded_from_numba_cache_after(tmp_path):
    """The first process compiles whisper's DTW, with whisper's numba options, into ``$NUMBA_CACHE_DIR``, the second
    loads it from there (a cache hit, no compilation); both give whisper's own path for a random cost matrix."""
    import os
    import subprocess
    import sys

    code = (
        "import numpy as np, whisper.timing as t; from whisper_subtitler.platform import word_timing; "
        "x = np.random.default_rng(0).random((40, 300)); expected = t.dtw_cpu.py_func(x); "
        "word_timing.warm_up_word_timing(); got = t.dtw_cpu(x); "
        "hits = sum(t.dtw_cpu.stats.cache_hits.values()); "
        "ours = int(t.dtw_cpu._whispers is not None and t.dtw_cpu.targetoptions['parallel']); "
        "print(ours, hits, int(np.array_equal(got, expected)))"
    )
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    first, second = (
        subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout.split()
        for _ in range(2)
    )
    assert (first, second) == (["1", "0", "1"], ["1", "1", "1"])
    assert any(tmp_path.rglob("*.nbi"))  # numba's cache index, where the user asked for it


def test_word_timing_dtw_stays_whispers_when_numba_cannot_cache(monkeypatch):
    import numba
    import whisper.timing as timing

    from whisper_subtitler.platform import word_timing

    uncached = numba.jit(nopython=True)(timing.dtw_cpu.py_func)
    monkeypatch.setattr(timing, "dtw_cpu", uncached)

    def no_locator(**_options):
        raise RuntimeError("cannot cache function 'dtw_cpu': no locator available")

    monkeypatch.setattr(numba, "jit", no_locator)
    assert word_timing.cache_word_timing_dtw() is False
    assert timing.dtw_cpu is uncached


def test_word_timing_falls_back_to_whispers_dtw_when_the_cached_one_fails(monkeypatch):
    """numba lets an ``OSError`` of its cache files through on the first call (a full disk): the warm-up then puts
    whisper's own function back and runs it, instead of failing the model's loading."""
    import numba
    import whisper.timing as timing

    from whisper_subtitler.platform import word_timing

    whispers = numba.jit(nopython=True)(timing.dtw_cpu.py_func)

    class FullDisk:
        def __init__(self):
            self._whispers = whispers

        def __call__(self, x):
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(timing, "dtw_cpu", FullDisk())
    word_timing.warm_up_word_timing()
    assert timing.dtw_cpu is whispers
