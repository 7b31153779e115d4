#!/usr/bin/env python3
"""Where the fixed cost of fp16 on CUDA goes: our pipeline on one clip, several times in one process.

    python bench/fp16_cost.py fp16 --audio sample.wav [--model tiny.en] [--repeat 2] [--profile prof.txt]

Variants (one per process, so that each starts cold, as a CLI run does):

- ``fp16``: ``--compute-type float16`` at level 1 (cuDNN's autotuner and attention backend off, as shipped);
- ``fp16-cudnn-attention``: the same with cuDNN's attention backend on (``enable_cudnn_sdp(True)``);
- ``fp16-cudnn-benchmark``: the same with cuDNN's convolution autotuner on (``torch.backends.cudnn.benchmark``);
- ``fp32``: float32 with TF32 matrix products, the default on GPUs with TF32;
- ``fp32-triton``: the same with openai-whisper's word-timing DTW and median filter back on its Triton kernels on
  CUDA (``dtw_cuda``, ``median_filter_cuda``), which the product leaves since the fourth H200 session
  (``platform.word_timing.keep_word_timing_off_triton``), to see what Triton's per-process compilation and source
  hashing cost; give it a ``TRITON_CACHE_DIR`` of its own to measure a cold cache.

Each repeat runs ``Pipeline.process`` on the clip; the first pays every per-process cost (kernel compilation,
execution plans, allocator growth), the later ones show the steady state. ``--profile`` writes the table of
``torch.profiler`` over the first run (CPU and CUDA activity, sorted by CPU time), ``--cprofile`` the
Python functions of the first run by cumulative time. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

VARIANTS = ("fp16", "fp16-cudnn-attention", "fp16-cudnn-benchmark", "fp32", "fp32-triton")


def put_triton_back() -> None:
    """openai-whisper's own word-timing functions again, Triton on CUDA (``fp32-triton``)."""
    import whisper.timing as timing

    timing.dtw = getattr(timing.dtw, "_whispers", timing.dtw)
    timing.median_filter = getattr(timing.median_filter, "_whispers", timing.median_filter)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("variant", choices=VARIANTS)
    parser.add_argument("--audio", type=Path, required=True)
    parser.add_argument("--model", default="tiny.en")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--profile", type=Path, help="write torch.profiler's table of the first run here")
    parser.add_argument("--cprofile", type=Path, help="write cProfile's top functions of the first run here")
    args = parser.parse_args()

    import torch

    from whisper_subtitler import platform
    from whisper_subtitler.pipeline import Pipeline, RunOptions
    from whisper_subtitler.transcription import TranscribeOptions
    from whisper_subtitler.vad import _load_model

    dtype = "float32" if args.variant.startswith("fp32") else "float16"
    selection = platform.configure(model=args.model, compute_type=dtype)
    platform.apply_optimizations(selection)
    if args.variant == "fp16-cudnn-attention":
        torch.backends.cuda.enable_cudnn_sdp(True)
    elif args.variant == "fp16-cudnn-benchmark":
        torch.backends.cudnn.benchmark = True
    options = RunOptions(
        model=args.model,
        transcribe=TranscribeOptions(fp16=selection.dtype == "float16"),
        formats=("json",),
        output_dir=Path(tempfile.mkdtemp(prefix="fp16-cost-")),
        overwrite=True,
    )
    pipeline = Pipeline(options, selection)
    started = time.perf_counter()
    pipeline.load()
    load_s = time.perf_counter() - started
    if args.variant == "fp32-triton":  # after the load: platform.prepare_model set word timing off Triton
        put_triton_back()
    _load_model()
    cuda = torch.cuda.is_available()
    runs = []
    for i in range(args.repeat):
        profiler = None
        if i == 0 and args.profile:
            activities = [torch.profiler.ProfilerActivity.CPU]
            if cuda:
                activities.append(torch.profiler.ProfilerActivity.CUDA)
            profiler = torch.profiler.profile(activities=activities)
            profiler.__enter__()
        python_profiler = cProfile.Profile() if i == 0 and args.cprofile else None
        if python_profiler is not None:
            python_profiler.enable()
        started = time.perf_counter()
        result = pipeline.process(args.audio)
        if cuda:
            torch.cuda.synchronize()
        wall = time.perf_counter() - started
        if python_profiler is not None:
            python_profiler.disable()
            stream = io.StringIO()
            pstats.Stats(python_profiler, stream=stream).sort_stats("cumulative").print_stats(60)
            args.cprofile.write_text(stream.getvalue(), encoding="utf-8")
        if profiler is not None:
            profiler.__exit__(None, None, None)
            table = profiler.key_averages().table(sort_by="cpu_time_total", row_limit=60, max_name_column_width=70)
            args.profile.write_text(table, encoding="utf-8")
        if result.status != "done":
            raise SystemExit(f"{args.audio}: {result.error}")
        text = json.loads(result.outputs[0].read_text(encoding="utf-8"))["text"]
        timings = {k: round(v, 3) for k, v in result.timings.items()}
        runs.append({"wall_s": round(wall, 3), "timings": timings, "text_head": text.strip()[:120]})
        print(f"{args.variant} run {i + 1}: {wall:.2f} s {timings}", file=sys.stderr, flush=True)
    print(
        json.dumps(
            {
                "variant": args.variant,
                "model": args.model,
                "dtype": selection.dtype,
                "batch_size": selection.batch_size,
                "load_s": round(load_s, 2),
                "runs": runs,
                "peak_vram_mib": round(torch.cuda.max_memory_allocated() / 2**20, 1) if cuda else None,
            }
        )
    )


if __name__ == "__main__":
    main()
