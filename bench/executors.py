#!/usr/bin/env python3
"""Wall time of one batch of files, whole ``whisper-subtitler transcribe`` processes: the local executor against
``--executor ray`` with a local cluster started by the run, and against ``--executor ray`` joining a cluster that
is already up (Ray's start-up left out), with the same number of workers.

    python bench/executors.py --out docs/executors-benchmark.json                    # 4 files, tiny.en and base
    python bench/executors.py --files 4 --models tiny.en --repeats 1 --out /tmp/x.json   # a quick look

The files are copies of pyannote's real 30-second sample (``--seconds`` long each, the sample looped). Runs are
interleaved (local, ray, ray-joined, local, ...) so that a load from elsewhere on the machine falls on all of them;
the load average before each run is recorded with it. Diarization is off (``--no-diarize``): this measures how the
files are spread, not the models.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests import media  # noqa: E402


def make_batch(folder: Path, files: int, seconds: float) -> list[Path]:
    """``files`` WAV files of ``seconds`` of real speech each (pyannote's sample, looped)."""
    paths = []
    for i in range(files):
        paths.append(folder / f"talk{i}.wav")
        media.ffmpeg("-stream_loop", "-1", "-i", str(media.SAMPLE_WAV), "-t", str(seconds), str(paths[-1]))
    return paths


def run_once(batch: list[Path], model: str, extra: list[str]) -> dict:
    """One whole process over ``batch``: its wall seconds, the seconds spent on the files (the sum of their stage
    timings: the work itself, without start-up and model loading) and the load average before it."""
    with tempfile.TemporaryDirectory() as out:
        command = [sys.executable, "-m", "whisper_subtitler", "transcribe", *map(str, batch), "--model", model]
        command += ["--no-diarize", "--output-dir", out, "--json", "--quiet", *extra]
        load = os.getloadavg()[0]
        started = time.perf_counter()
        result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
        wall = time.perf_counter() - started
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({result.returncode}):\n{result.stderr}")
    summary = json.loads(result.stdout)
    assert summary["counts"]["done"] == len(batch), summary["counts"]
    files = sum(sum(f["timings"].values()) for f in summary["files"])
    return {"wall_seconds": round(wall, 2), "file_seconds": round(files, 2), "load_before": round(load, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=60.0, help="audio seconds per file")
    parser.add_argument("--models", default="tiny.en,base")
    parser.add_argument("--workers", type=int, default=2, help="Ray workers (the cores are shared among them)")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", type=Path, required=True, help="JSON file for the figures")
    args = parser.parse_args()

    import ray

    cores = os.cpu_count() or 1
    per_worker = str(max(1, cores // args.workers))
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    ray.init(num_cpus=cores, include_dashboard=False, logging_level=logging.ERROR)  # for ray-joined
    address = ray.get_runtime_context().gcs_address
    time.sleep(15)  # the idle workers that Ray starts in advance import their modules: let that end first
    ways = {
        "local": [],
        "ray": ["--executor", "ray", "--cpus-per-worker", per_worker],
        "ray-joined": ["--executor", "ray", "--cpus-per-worker", per_worker, "--ray-address", address],
    }
    runs: dict[str, dict[str, list[dict]]] = {}
    with tempfile.TemporaryDirectory() as folder:
        batch = make_batch(Path(folder), args.files, args.seconds)
        for model in args.models.split(","):
            runs[model] = {way: [] for way in ways}
            for _ in range(args.repeats):
                for way, extra in ways.items():
                    runs[model][way].append(run_once(batch, model, extra))
                    print(model, way, runs[model][way][-1], file=sys.stderr)
    ray.shutdown()
    figures = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "host": {"cpu": platform.processor() or platform.machine(), "logical_cores": cores},
        "batch": {"files": args.files, "seconds_each": args.seconds, "workers": args.workers},
        "median_wall_seconds": {
            model: {way: statistics.median(r["wall_seconds"] for r in rs) for way, rs in by_way.items()}
            for model, by_way in runs.items()
        },
        "runs": runs,
    }
    args.out.write_text(json.dumps(figures, indent=2) + "\n")
    print(json.dumps(figures["median_wall_seconds"], indent=2))


if __name__ == "__main__":
    main()
