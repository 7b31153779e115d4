"""One benchmark measurement in its own process (so that peak RSS belongs to one method): load the model (not
timed), transcribe one file (timed: audio decoding, VAD, mel, decoding, word timestamps), print one JSON line.

    python bench/worker.py METHOD --model tiny.en --audio clip.wav --threads 2 [--ct2 DIR] [--device cpu]

Methods (``METHODS``): ``openai`` (``whisper.transcribe(word_timestamps=True)``, its defaults otherwise),
``ours`` (``Pipeline.process``, the default batched path, to a JSON transcript), ``ours-int8`` (the same with
``--compute-type int8``: ``platform.quantize`` when the model is loaded), ``ours-fp16`` / ``ours-fp32`` (the same with
``--compute-type float16`` / ``float32``, to compare a GPU's dtypes), ``faster-whisper`` /
``faster-whisper-int8`` (``BatchedInferencePipeline``, greedy, word timestamps).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from anywhere

from common import peak_rss_bytes  # noqa: E402  (bench/ is first on sys.path: this script's folder)

METHODS = ("openai", "ours", "ours-fp16", "ours-fp32", "ours-int8", "faster-whisper", "faster-whisper-int8")


def peak_rss_mb() -> float:
    """Peak resident set size of this process in MiB."""
    return peak_rss_bytes() / (1024 * 1024)


def warm_up_word_timing() -> None:
    """Compile openai-whisper's numba kernels (``dtw``, ``median_filter``) before timing; every whisper-based
    method pays this once per process (about 2 s), which is not transcription work."""
    import torch
    from whisper.timing import dtw, median_filter

    dtw(torch.randn(8, 16))
    median_filter(torch.randn(2, 8, 16), 7)


def load_openai_model(name: str, device: str):
    from whisper_subtitler.models import load_whisper, resolve_model

    # float32 weights on every device, as whisper.load_model gives them: transcribe(fp16=True) casts per layer
    # on GPUs (a .half() model fails in openai-whisper's float32 LayerNorm)
    return load_whisper(resolve_model(name), device=device)


def run_openai(args) -> dict:
    import whisper

    model = load_openai_model(args.model, args.device)
    warm_up_word_timing()
    sync(args.device)
    start = time.perf_counter()
    result = whisper.transcribe(model, str(args.audio), word_timestamps=True, fp16=args.device != "cpu", verbose=None)
    sync(args.device)
    wall = time.perf_counter() - start
    words = sum(len(s.get("words", [])) for s in result["segments"])
    return {"wall_s": wall, "text": result["text"], "words": words, "language": result["language"]}


def run_ours(args, *, compute_type: str = "auto") -> dict:
    """``Pipeline.process`` as ``whisper-subtitler transcribe`` runs it (audio in pieces, VAD, batched decoding,
    cues, a JSON output); the wall time is the sum of its stage timings without ``model_load``."""
    import tempfile

    import torch

    from whisper_subtitler import platform
    from whisper_subtitler.pipeline import Pipeline, RunOptions
    from whisper_subtitler.transcription import TranscribeOptions
    from whisper_subtitler.transcription.batched import BatchedDecoding
    from whisper_subtitler.vad import _load_model

    selection = platform.configure(
        gpu_backend="cpu" if args.device == "cpu" else None,
        model=args.model,
        # as --compute-type: int8 is quantized when the model is loaded; float16 and float32 compare the GPU's dtypes
        compute_type=compute_type,
    )
    platform.apply_optimizations(selection)
    torch.set_num_threads(args.threads)
    out = Path(tempfile.mkdtemp(prefix="bench-"))
    options = RunOptions(
        model=args.model,
        transcribe=TranscribeOptions(fp16=selection.dtype == "float16"),
        formats=("json",),
        output_dir=out,
        overwrite=True,
        decoding=BatchedDecoding(args.batch_size),
    )
    pipeline = Pipeline(options, selection)
    pipeline.load()  # outside the timings, as the CLI loads it before the first file
    warm_up_word_timing()
    _load_model()  # the VAD model, loaded once per run like the Whisper model
    result = pipeline.process(args.audio)
    if result.status != "done":
        raise RuntimeError(result.error)
    transcript = json.loads(result.outputs[0].read_text(encoding="utf-8"))
    wall = sum(t for stage, t in result.timings.items() if stage != "model_load")
    return {
        "wall_s": wall,
        "text": transcript["text"],
        "words": sum(len(s["words"]) for s in transcript["segments"]),
        "language": transcript["language"],
        "batch_size": args.batch_size or selection.batch_size,
        "dtype": selection.dtype,
        "timings": result.timings,
    }


def run_faster_whisper(args, compute_type: str) -> dict:
    from faster_whisper import BatchedInferencePipeline, WhisperModel

    model = WhisperModel(
        str(args.ct2),
        device="cuda" if args.device != "cpu" else "cpu",
        compute_type=compute_type,
        cpu_threads=args.threads,
        num_workers=1,
    )
    pipeline = BatchedInferencePipeline(model)
    batch_size = args.batch_size or 8
    start = time.perf_counter()
    segments, info = pipeline.transcribe(str(args.audio), batch_size=batch_size, beam_size=1, word_timestamps=True)
    segments = list(segments)  # the generator does the work
    wall = time.perf_counter() - start
    return {
        "wall_s": wall,
        "text": "".join(s.text for s in segments),
        "words": sum(len(s.words or []) for s in segments),
        "language": info.language,
        "batch_size": batch_size,
        "dtype": compute_type,
    }


def sync(device: str) -> None:
    if device != "cpu":
        import torch

        torch.cuda.synchronize()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("method", choices=METHODS)
    parser.add_argument("--model", required=True)
    parser.add_argument("--audio", type=Path, required=True)
    parser.add_argument("--ct2", type=Path, help="CTranslate2 folder of the same weights (faster-whisper)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--batch-size", type=int)
    args = parser.parse_args()

    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    import torch

    torch.set_num_threads(args.threads)
    if args.device != "cpu":
        torch.cuda.reset_peak_memory_stats()
    if args.method == "openai":
        result = run_openai(args)
    elif args.method.startswith("ours"):
        result = run_ours(
            args,
            compute_type={"ours-int8": "int8", "ours-fp16": "float16", "ours-fp32": "float32"}.get(args.method, "auto"),
        )
    else:
        result = run_faster_whisper(
            args, "int8" if args.method.endswith("int8") else ("float16" if args.device != "cpu" else "float32")
        )
    result.update(
        method=args.method,
        model=args.model,
        audio=str(args.audio),
        threads=args.threads,
        device=args.device,
        peak_rss_mb=round(peak_rss_mb(), 1),
    )
    if args.device != "cpu" and not args.method.startswith("faster"):
        result["peak_vram_mb"] = round(torch.cuda.max_memory_allocated() / 2**20, 1)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
