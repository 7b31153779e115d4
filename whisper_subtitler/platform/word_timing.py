"""openai-whisper's word timing, set up once the model is loaded (:func:`warm_up_word_timing`, which
``platform.prepare_model`` calls): off its Triton kernels on every device (:func:`keep_word_timing_off_triton`), its
numba DTW from numba's on-disk cache (:func:`cache_word_timing_dtw`), PyTorch's thread count kept."""

from __future__ import annotations

import logging

from whisper_subtitler.compat import whisper as whisper_compat

log = logging.getLogger(__name__)


def keep_word_timing_off_triton() -> None:
    """Run openai-whisper's word-timing DTW and median filter without its Triton kernels, on every device
    (``compat.whisper.replace_word_timing``): ``whisper.timing.dtw`` becomes numba's DTW on the CPU for a tensor on any
    device, and ``whisper.timing.median_filter`` the sort-based median openai-whisper falls back to, on the tensor's
    own device (on the CPU the same median as one compiled loop, :func:`cpu_median`). Same numbers as
    openai-whisper's CPU path; idempotent; the replaced functions stay reachable as ``_whispers``. openai-whisper's own
    functions on a version ``compat.whisper`` does not know.

    On CUDA openai-whisper runs both as Triton kernels (``dtw_cuda``, ``median_filter_cuda``), and every process
    compiles them, builds a launcher with the C compiler and hashes Triton's sources before its first word
    timestamp. On an H200 (bench/notes/gpu-h200.md, fourth session) a 30-s file took 4.3 s in a fresh process with
    Triton's disk cache warm and 2.2 s with word timing off Triton, 0.7 s either way for the next file: the cost
    matrix is at most 224 tokens x 1500 frames, a copy to the host and a millisecond of DTW. On MPS, which has no
    float64, the matrix must leave the device before it is converted (pytorch/pytorch#141711), which this order does."""
    whisper_compat.replace_word_timing(cpu_median)


_MEDIAN: list = []  # [platform.median.median_rows], or [None] once it proved unavailable


def cpu_median(x, width: int):  # noqa: ANN001, ANN201 - a CPU torch.Tensor in, a torch.Tensor or None out
    """``whisper.timing.median_filter(x, width)`` for a float CPU tensor ``x`` (any shape, filtered along its last
    axis) by ``platform.median.median_rows``: the same numbers, about 20 times faster on two cores. ``None`` where
    whisper's own function must answer: no compiled kernel (numba could not load or cache it), an even ``width``
    (whisper asserts), a last axis too short to reflect (whisper returns ``x``), a dtype other than float32/64, or a
    NaN in ``x``."""
    import numpy as np
    import torch

    if width % 2 == 0 or x.shape[-1] <= width // 2 or x.dtype not in (torch.float32, torch.float64):
        return None
    if not _MEDIAN:
        try:
            from whisper_subtitler.platform.median import median_rows

            _MEDIAN.append(median_rows)
        except Exception as exc:  # numba raises RuntimeError when no cache folder is writable
            log.debug("numba's median filter is not available (%s): whisper's sort-based one is used", exc)
            _MEDIAN.append(None)
    kernel = _MEDIAN[0]
    if kernel is None:
        return None
    array = x.detach().contiguous().numpy()
    rows = array.reshape(-1, array.shape[-1])
    if np.isnan(rows).any():
        return None
    return torch.from_numpy(kernel(rows, width).reshape(array.shape))


def cache_word_timing_dtw() -> bool:
    """Replace openai-whisper's ``whisper.timing.dtw_cpu`` with the same Python function compiled by numba with
    whisper's options plus its on-disk cache (``cache=True``, ``compat.whisper.cache_dtw``), so that only the first
    process compiles it.

    openai-whisper compiles its word-timing DTW (``dtw_cpu``, numba, no cache) in every process, about 1.3 s on two
    cores, paid again for each file that a shell script transcribes in its own process; loading the cached machine
    code takes about 0.35 s. The cache lives where numba puts it: ``$NUMBA_CACHE_DIR`` when set, else beside
    ``whisper/timing.py`` or, when that folder is read-only, in the user's cache folder; numba recompiles when
    ``timing.py`` changes. Returns False, and leaves whisper's function, when numba finds no writable cache folder,
    ``dtw_cpu`` is not the numba dispatcher it expects or ``compat.whisper`` does not know the version. Idempotent.
    Call it before the DTW's first use (:func:`warm_up_word_timing` does, and puts whisper's function back if the
    cache then fails)."""
    return whisper_compat.cache_dtw()


def warm_up_word_timing() -> None:
    """Run openai-whisper's word-timing DTW (``whisper.timing.dtw_cpu``, a numba function, from numba's cache
    when :func:`cache_word_timing_dtw` can keep one) once on a tiny matrix and keep PyTorch's CPU thread count as
    it was.

    The first call of a numba function can set the process's OpenMP thread count to every logical core, PyTorch's
    included (seen with numba 0.68 and torch 2.13): without this, ``--threads``, ``$OMP_NUM_THREADS`` and the
    ``cpu_threads`` step would hold only until the first file's word timestamps. Call it once the model is loaded,
    on every device (``platform.prepare_model`` does): it first sends word timing to the CPU's DTW everywhere
    (:func:`keep_word_timing_off_triton`), and it moves numba's compilation or cache load out of the first file.
    When the cached function fails on that first call (numba lets an ``OSError`` of its cache files through: a full
    disk), whisper's own function is put back and used; the same for the median filter (:func:`cpu_median`).
    On an openai-whisper version that ``compat.whisper`` does not know, only its own functions are put back: nothing is
    warmed up."""
    import torch

    keep_word_timing_off_triton()
    if not whisper_compat.known():
        return
    cached = cache_word_timing_dtw()
    threads = torch.get_num_threads()
    try:
        whisper_compat.warm_dtw(cached)
        try:
            cpu_median(torch.zeros(1, 8), 7)  # numba's cached median filter loaded (or compiled) before the first file
        except Exception as exc:
            log.debug("numba's median filter failed (%s): whisper's sort-based one is used", exc)
            _MEDIAN[:] = [None]
    finally:
        if torch.get_num_threads() != threads:
            log.debug("numba changed torch's threads to %d; back to %d", torch.get_num_threads(), threads)
            torch.set_num_threads(threads)
