#!/usr/bin/env python3
"""Speaker diarization speed and memory on the CPU: the embedded offline pipeline against pyannote's own, and
what diarization adds to a whole ``transcribe`` run.

    .venv/bin/python bench/diarization.py --out bench/records/diarization-benchmark.json   # what make bench runs
    .venv/bin/python bench/diarization.py --quick                                  # sample.wav only
    .venv/bin/python bench/diarization.py --whole-only --out FILE.json             # only the whole runs

Measured, each in its own process (clean peak memory), in one run:

1. **The diarization stage alone**, from the in-memory waveform to the speaker turns (model loading excluded,
   reported as ``load_s``), on pyannote's real 30 s ``sample.wav`` and on the 10-minute clip of
   ``bench/long_clip.py``: ``fast`` is the stage as ``transcribe`` runs it (with silero-vad's speech
   regions, whose time is not counted: the pipeline has them already, and with the heap allocator settings of
   the level-1 step ``host_allocator``); ``stock`` is pyannote's own
   ``SpeakerDiarization`` with the same two models (``OfflineSpeakerDiarization(fast=False)``), the pipeline
   before this change. ``stages_s`` splits the wall time by pyannote's steps.
2. **Whole runs** of ``whisper-subtitler transcribe`` on pyannote's 30-s ``sample.wav`` and on the 10-minute clip
   with the base model and default settings, with diarization (the default) and with ``--no-diarize``: process
   wall time and the stage timings the ``--json`` summary records (``transcribe`` is the decoding stage,
   ``diarize`` the diarization stage); ``--repeat`` rounds (3), alternated, and the summary's ratios of medians
   (issue 48's targets: at most 1.25x on the clip, 1.3x on the sample). ``--whole-only`` runs only these.
3. **Peak memory of a 3-hour two-speaker file** (the real sample repeated with 1 s pauses, dense speech):
   ``peak_rss_bytes`` of the diarization stage's process (Python, torch, pyannote, the models and the whole
   waveform included).

Prints (or writes with ``--out``) one JSON document; progress goes to stderr. ``rtf`` is audio seconds / wall
seconds here (higher is faster), as in the older figures of this file.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from common import peak_rss_bytes, write_json  # noqa: E402

LONG_HOURS = 3  # the memory file


def measure(path: Path, fast: bool, device: str = "cpu") -> dict:
    """Diarize ``path`` (16 kHz mono 16-bit WAV) once in this process on ``device`` and return the figures.

    On a GPU the level-1 optimizations that ``transcribe`` applies before this stage (TF32, allocator) are applied
    first, and the wall time ends when the turns are on the host."""
    import torch

    from tests.media_speech import read_wav
    from whisper_subtitler.diarize import pyannote_compat
    from whisper_subtitler.diarize.embedded import OfflineSpeakerDiarization
    from whisper_subtitler.diarize.load import Diarizer
    from whisper_subtitler.diarize.options import DiarizationOptions
    from whisper_subtitler.platform import allocator
    from whisper_subtitler.types import Audio
    from whisper_subtitler.vad import speech_regions

    if fast and allocator.why_not(os.environ) is None:  # as transcribe's level-1 step "host_allocator" does
        allocator.apply()
    if device != "cpu":
        from whisper_subtitler import platform as accel

        accel.apply_optimizations(accel.configure(log_warnings=False))
    samples = read_wav(path)
    audio = Audio(samples, 16_000, path)
    speech = speech_regions(samples) if fast else None
    started = time.perf_counter()
    with pyannote_compat.quiet_pyannote_warnings():
        pipeline = OfflineSpeakerDiarization(fast=fast)
        if device != "cpu":
            pipeline.to(torch.device(device))
        diarizer = Diarizer(pipeline, DiarizationOptions(), "embedded", device)
    load_s = time.perf_counter() - started

    # pyannote calls the hook when a step (or a batch of it) is done: the time since the previous call is that
    # step's. "discrete_diarization" is reported after clustering and reconstruction.
    stages: dict[str, float] = {}
    last = [0.0]

    def hook(step, artifact, file=None, total=None, completed=None):  # pyannote's progress hook protocol
        now = time.perf_counter()
        name = "clustering" if step == "discrete_diarization" else step
        stages[name] = stages.get(name, 0.0) + now - last[0]
        last[0] = now

    before = resource.getrusage(resource.RUSAGE_SELF)
    started = last[0] = time.perf_counter()
    diarization = diarizer.diarize(audio, hook=hook, speech=speech)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_SELF)
    stages["annotation"] = time.perf_counter() - last[0]
    return {
        "file": path.name,
        "stage": "fast" if fast else "stock",
        "audio_s": round(audio.duration, 2),
        "load_s": round(load_s, 2),
        "wall_s": round(wall, 2),
        "rtf": round(audio.duration / wall, 2),
        "stages_s": {k: round(v, 2) for k, v in stages.items() if v >= 0.005},
        "cpu_user_s": round(after.ru_utime - before.ru_utime, 2),  # all threads; system time shows page faults
        "cpu_system_s": round(after.ru_stime - before.ru_stime, 2),
        "speakers": len(diarization.speakers),
        "turns": len(diarization.turns),
        "peak_rss_bytes": peak_rss_bytes(),
        "torch_threads": torch.get_num_threads(),
        "device": device,
        "peak_vram_bytes": torch.cuda.max_memory_allocated() if device.startswith("cuda") else None,
        "load_average_1min": round(os.getloadavg()[0], 2),
    }


def run_child(path: Path, fast: bool) -> dict:
    """``measure(path, fast)`` in a fresh Python process (clean peak memory)."""
    args = [sys.executable, __file__, "--one", str(path)] + ([] if fast else ["--stock"])
    done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"benchmark of {path} failed:\n{done.stderr[-2000:]}")
    result = json.loads(done.stdout)
    print(
        f"  {result['stage']}: {result['wall_s']} s ({result['stages_s']}), {result['speakers']} speakers, "
        f"{result['peak_rss_bytes'] / 2**20:.0f} MiB",
        file=sys.stderr,
        flush=True,
    )
    return result


def whole_run(path: Path, work: Path, diarize: bool, model: str) -> dict:
    """``whisper-subtitler transcribe path --model MODEL --format json`` (with or without diarization)."""
    out = work / ("on" if diarize else "off")
    args = [
        sys.executable,
        "-m",
        "whisper_subtitler",
        "transcribe",
        str(path),
        "--model",
        model,
        "--format",
        "json",
        "--output-dir",
        str(out),
        "--overwrite",
        "--quiet",
        "--json",
    ] + ([] if diarize else ["--no-diarize"])
    load = os.getloadavg()[0]
    started = time.perf_counter()
    done = subprocess.run(args, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"transcribe {path} failed:\n{done.stderr[-2000:]}")
    data = json.loads(done.stdout)["files"][0]  # the --json summary: stage timings and speakers
    result = {
        "file": path.name,
        "model": model,
        "diarize": diarize,
        "wall_s": round(wall, 2),
        "stages_s": {k: round(v, 2) for k, v in data["timings"].items()},
        "speakers": len(data["speakers"]),
        "load_average_1min": round(load, 2),
    }
    print(
        f"  transcribe {'with' if diarize else 'without'} diarization: {result['wall_s']} s {result['stages_s']}",
        file=sys.stderr,
        flush=True,
    )
    return result


def whole_runs(paths: list[Path], work: Path, model: str, repeat: int) -> list[dict]:
    """:func:`whole_run` of each of ``paths`` with and without diarization, ``repeat`` rounds, alternated (file by
    file, with then without, round after round), so that a change in the machine's load falls on both sides; the
    summary compares medians (issue 48: "side by side in one run, medians of 3")."""
    runs = []
    for round_ in range(repeat):
        for path in paths:
            for diarize in (True, False):
                runs.append({**whole_run(path, work, diarize, model), "round": round_})
    return runs


def conversation_file(target: Path, hours: float) -> Path:
    """pyannote's real two-speaker sample repeated with 1 s pauses for ``hours`` hours (16 kHz WAV; its RTTM beside
    it, ``tests.media_conversation.repeated_sample``)."""
    from tests.media_conversation import repeated_sample

    return repeated_sample(target, hours * 3600)[0]


def repeated_sample_scores(minutes: list[float], work: Path) -> list[dict]:
    """Speakers found and DER (pyannote.metrics, no collar, overlaps scored) of :func:`conversation_file` files of
    ``minutes``, against ``sample.rttm`` repeated at the same period (the last, cut-off repeat out of the scored
    part), diarized on the CPU as ``transcribe`` does (silero-vad's speech regions). One process for all."""
    from pyannote.core import Segment
    from pyannote.metrics.diarization import DiarizationErrorRate
    from speakers import as_annotation, read_rttm

    from tests.media_conversation import repeated_sample
    from tests.media_speech import read_wav
    from whisper_subtitler.diarize import DiarizationOptions, load_diarizer
    from whisper_subtitler.types import Audio
    from whisper_subtitler.vad import speech_regions

    rows = []
    with load_diarizer(DiarizationOptions(), device="cpu") as diarizer:
        for m in minutes:
            wav, rttm, scored = repeated_sample(work / f"repeated_{m:g}min.wav", m * 60)
            samples = read_wav(wav)
            started = time.perf_counter()
            diarization = diarizer.diarize(Audio(samples, 16_000, wav), speech=speech_regions(samples))
            wall = time.perf_counter() - started
            metric = DiarizationErrorRate(collar=0.0, skip_overlap=False)
            der = metric(read_rttm(rttm), as_annotation(diarization.turns), uem=Segment(0, scored), detailed=True)
            seconds: dict[str, float] = {}
            for t in diarization.turns:
                seconds[t.speaker] = seconds.get(t.speaker, 0.0) + t.end - t.start
            rows.append(
                {
                    "minutes": m,
                    "speakers_found": len(diarization.speakers),
                    "der": round(float(der["diarization error rate"]), 4),
                    "parts_s": {k: round(float(der[k]), 1) for k in ("false alarm", "missed detection", "confusion")},
                    "speaker_seconds": {s: round(v, 1) for s, v in seconds.items()},
                    "wall_s": round(wall, 1),
                }
            )
            print(f"  {m:g} min: {rows[-1]}", file=sys.stderr, flush=True)
            wav.unlink()
            rttm.unlink()
    return rows


def summary(data: dict) -> dict:
    """The ratios the issue asks for."""
    out = {}
    by = {(r["file"], r["stage"]): r for r in data["stage"]}
    for name in ("sample.wav", "long_clip.wav"):
        fast, stock = by.get((name, "fast")), by.get((name, "stock"))
        if fast and stock:
            out[f"{name}: stock / fast wall time"] = round(stock["wall_s"] / fast["wall_s"], 2)
    for name in sorted({r["file"] for r in data.get("whole_runs", [])}):
        on = [r for r in data["whole_runs"] if r["file"] == name and r["diarize"]]
        off = [r for r in data["whole_runs"] if r["file"] == name and not r["diarize"]]
        if on and off:
            on_s, off_s = median(r["wall_s"] for r in on), median(r["wall_s"] for r in off)
            label = "whole run" if name == "long_clip.wav" else f"{name}: whole run"  # the older records' key
            out[f"{label} with / without diarization"] = round(on_s / off_s, 2)
            out[f"{name}: whole run medians with / without diarization (s)"] = [on_s, off_s, len(on)]
            out[f"{name}: diarize stage / transcribe stage"] = round(
                median(r["stages_s"]["diarize"] for r in on) / median(r["stages_s"]["transcribe"] for r in on), 2
            )
    for r in data["stage"]:
        if r["file"].startswith("conversation_"):
            out[f"{r['file']}: peak RSS GiB"] = round(r["peak_rss_bytes"] / 2**30, 2)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="write the JSON here (default: stdout)")
    parser.add_argument("--quick", action="store_true", help="sample.wav only")
    parser.add_argument("--model", default="base", help="Whisper model of the whole runs (default: base)")
    parser.add_argument("--work-dir", type=Path, help="where to generate the audio (default: a temp dir)")
    parser.add_argument("--one", type=Path, help=argparse.SUPPRESS)  # internal: measure one file here
    parser.add_argument("--stock", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--repeat", type=int, default=3, help="rounds of the whole runs (medians; default 3)")
    parser.add_argument(
        "--whole-only",
        action="store_true",
        help="only the whole runs with and without diarization: sample.wav and the 10-minute clip (sample.wav only "
        "with --quick)",
    )
    parser.add_argument("--device", default="cpu", help="with --one: cpu, or cuda to time the stage on a GPU")
    parser.add_argument(
        "--repeated",
        help="only score pyannote's sample repeated for these minutes, e.g. 10,20,60 (speakers found and DER)",
    )
    args = parser.parse_args()
    if args.one:
        json.dump(measure(args.one, fast=not args.stock, device=args.device), sys.stdout)
        return 0

    if args.repeated:
        with tempfile.TemporaryDirectory() as tmp:
            rows = repeated_sample_scores([float(m) for m in args.repeated.split(",")], args.work_dir or Path(tmp))
        write_json({"command": " ".join(["bench/diarization.py", *sys.argv[1:]]), "files": rows}, args.out, indent=2)
        return 0

    from tests import media

    started = time.perf_counter()
    data: dict = {
        "pipeline": "embedded: pyannote segmentation-3.0 + CAM++ (offline)",
        "device": "cpu",
        "machine": {"cpus": os.cpu_count(), "processor": platform.processor() or platform.machine()},
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "stage": [],
    }
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work_dir or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        files = [media.SAMPLE_WAV]
        if not args.quick:
            print("generating the 10-minute clip (bench/long_clip.py)", file=sys.stderr)
            subprocess.run(
                [sys.executable, str(ROOT / "bench" / "long_clip.py"), str(work)],
                check=True,
                stdout=subprocess.DEVNULL,
            )
            files.append(work / "long_clip.wav")
        if args.whole_only:
            data["whole_runs"] = whole_runs(files, work, args.model, args.repeat)
        for path in [] if args.whole_only else files:
            print(f"diarizing {path.name}", file=sys.stderr, flush=True)
            data["stage"] += [run_child(path, fast=True), run_child(path, fast=False)]
        if not args.quick and not args.whole_only:
            clip = work / "long_clip.wav"
            data["whole_runs"] = whole_runs([media.SAMPLE_WAV, clip], work, args.model, args.repeat)
            long = conversation_file(work / f"conversation_{LONG_HOURS}h.wav", LONG_HOURS)
            print(f"diarizing {long.name}", file=sys.stderr, flush=True)
            data["stage"].append(run_child(long, fast=True))
    data["duration_s"] = round(time.perf_counter() - started, 1)
    data["summary"] = summary(data)
    write_json(data, args.out, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
