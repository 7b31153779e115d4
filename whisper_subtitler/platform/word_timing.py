"""openai-whisper's word timing without its Triton kernels, on every device (:func:`keep_word_timing_off_triton`)."""

from __future__ import annotations


def keep_word_timing_off_triton() -> None:
    """Run openai-whisper's word-timing DTW and median filter without its Triton kernels, on every device:
    ``whisper.timing.dtw`` becomes numba's DTW on the CPU (``dtw_cpu`` on the float64 copy of the cost matrix, the
    path openai-whisper takes for CPU tensors) for a tensor on any device, and ``whisper.timing.median_filter`` the
    sort-based median openai-whisper falls back to, on the tensor's own device. Same numbers as openai-whisper's
    CPU path; idempotent; the replaced functions stay reachable as ``_whispers``.

    On CUDA openai-whisper runs both as Triton kernels (``dtw_cuda``, ``median_filter_cuda``), and every process
    compiles them, builds a launcher with the C compiler and hashes Triton's sources before its first word
    timestamp. On an H200 (docs/gpu-h200.md, fourth session) a 30-s file took 4.3 s in a fresh process with Triton's
    disk cache warm and 2.2 s with word timing off Triton, 0.7 s either way for the next file: the cost matrix is
    at most 224 tokens x 1500 frames, a copy to the host and a millisecond of DTW. On MPS, which has no float64,
    the matrix must leave the device before it is converted (pytorch/pytorch#141711), which this order does."""
    import whisper.timing as timing

    if getattr(timing.dtw, "_whispers", None) is not None:
        return

    def dtw(x):  # noqa: ANN001, ANN202 - whisper.timing.dtw's signature: torch.Tensor -> np.ndarray
        return timing.dtw_cpu(x.cpu().double().numpy())

    def median_filter(x, filter_width: int):  # noqa: ANN001, ANN202 - whisper.timing.median_filter's signature
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
