#!/usr/bin/env python3
"""Wall time of one batch of files, whole ``whisper-subtitler transcribe`` processes: the local executor against
``--executor ray`` with a local cluster started by the run, and against ``--executor ray`` joining a cluster that
is already up (Ray's start-up left out), with the same number of workers.

    python bench/executors.py --out bench/records/executors-benchmark.json   # 4 files, tiny.en and base
    python bench/executors.py --files 4 --models tiny.en --repeats 1 --out /tmp/x.json   # a quick look

The files are copies of pyannote's real 30-second sample (``--seconds`` long each, the sample looped). Runs are
interleaved (local, ray, ray-joined, local, ...) and each waits for a quiet machine; what other programs spent
meanwhile is recorded with it (``others_cpu_seconds``). Diarization is off (``--no-diarize``): this measures how the
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
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import psutil  # noqa: E402

from tests import media  # noqa: E402


def make_batch(folder: Path, files: int, seconds: float) -> list[Path]:
    """``files`` WAV files of ``seconds`` of real speech each (pyannote's sample, looped)."""
    paths = []
    for i in range(files):
        paths.append(folder / f"talk{i}.wav")
        media.ffmpeg("-stream_loop", "-1", "-i", str(media.SAMPLE_WAV), "-t", str(seconds), str(paths[-1]))
    return paths


class CpuMeter:
    """CPU seconds (user + system) spent by this process's descendants while it runs: the run's process, its
    ffmpeg, and Ray's processes (the workers, and the local cluster's or the joined cluster's own). Each process
    is read every ``interval`` seconds; a process that lives less than that may be missed."""

    def __init__(self, interval: float = 0.2) -> None:
        self.interval = interval
        self._start: dict[int, float] = {}
        self._last: dict[int, float] = {}
        self._stop = threading.Event()
        self._read(self._start)  # what the already running processes (the joined cluster) had spent before
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _read(self, into: dict[int, float]) -> None:
        for process in psutil.Process().children(recursive=True):
            try:
                times = process.cpu_times()
                into[process.pid] = times.user + times.system + times.children_user + times.children_system
            except psutil.Error:
                continue

    def _poll(self) -> None:
        while not self._stop.wait(self.interval):
            self._read(self._last)

    def stop(self, waited: float) -> float:
        """The CPU seconds of the run; ``waited``: what ``os.times`` says the run's own process tree spent (its
        reaped children), which covers the end of the processes the poll missed."""
        self._stop.set()
        self._thread.join()
        polled = sum(t - self._start.get(pid, 0.0) for pid, t in self._last.items())
        return max(polled, waited)


def _machine_cpu() -> float:
    """CPU seconds the whole machine has spent working since it started (all processes, every core)."""
    t = psutil.cpu_times()
    return t.user + t.nice + t.system + getattr(t, "irq", 0.0) + getattr(t, "softirq", 0.0)


def wait_for_quiet(threshold: float = 15.0, patience: float = 180.0) -> float:
    """Wait, ``patience`` seconds at most, until the machine's CPU use over 2 s is below ``threshold`` % (another
    program's work slows a run, the local one most: its threads wait for each other); returns the last reading."""
    deadline = time.monotonic() + patience
    while (busy := psutil.cpu_percent(interval=2.0)) >= threshold and time.monotonic() < deadline:
        pass
    return busy


def run_once(batch: list[Path], model: str, extra: list[str]) -> dict:
    """One whole process over ``batch``, started on a quiet machine (``wait_for_quiet``): its wall seconds, the CPU
    seconds of every process it used (``CpuMeter``), the seconds spent on the files (the sum of their stage
    timings: the work itself, without start-up and model loading), and the CPU seconds that other programs spent
    meanwhile (contention: the machine's total less ours)."""
    with tempfile.TemporaryDirectory() as out:
        command = [sys.executable, "-m", "whisper_subtitler", "transcribe", *map(str, batch), "--model", model]
        command += ["--no-diarize", "--output-dir", out, "--json", "--quiet", *extra]
        busy = wait_for_quiet()
        before, machine_before = os.times(), _machine_cpu()
        meter = CpuMeter()
        started = time.perf_counter()
        result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
        wall = time.perf_counter() - started
        after, machine_after = os.times(), _machine_cpu()
        cpu = meter.stop(after.children_user + after.children_system - before.children_user - before.children_system)
        others = max(
            0.0, machine_after - machine_before - cpu - (after.user + after.system - before.user - before.system)
        )
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({result.returncode}):\n{result.stderr}")
    summary = json.loads(result.stdout)
    assert summary["counts"]["done"] == len(batch), summary["counts"]
    files = sum(sum(f["timings"].values()) for f in summary["files"])
    return {
        "wall_seconds": round(wall, 2),
        "cpu_seconds": round(cpu, 1),
        "file_seconds": round(files, 2),
        "others_cpu_seconds": round(others, 1),
        "busy_before_percent": round(busy),
    }


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
        "median": {
            model: {
                way: {key: statistics.median(r[key] for r in rs) for key in ("wall_seconds", "cpu_seconds")}
                for way, rs in by_way.items()
            }
            for model, by_way in runs.items()
        },
        "runs": runs,
    }
    args.out.write_text(json.dumps(figures, indent=2) + "\n")
    print(json.dumps(figures["median"], indent=2))


if __name__ == "__main__":
    main()
