#!/usr/bin/env python3
"""Speaker diarization speed and memory on the CPU: the embedded offline pipeline (segmentation-3.0 + CAM++).

    .venv/bin/python scripts/bench_diarization.py                      # sample.wav and a generated 10-minute clip
    .venv/bin/python scripts/bench_diarization.py --long path/to/long_clip.wav --skip-sample

Prints one JSON document on stdout; progress goes to stderr. Audio: pyannote's real 30 s two-speaker
``sample.wav`` and the 10-minute clip of ``scripts/make_long_clip.py`` (espeak-ng voices alternated with the
real sample), generated into a temporary folder unless ``--long`` names one. Each file is measured in its own
process, so peak memory is that of one diarization: ``peak_rss_bytes`` is the process's peak resident set
(Python, torch, pyannote and the models included). ``wall_s`` runs from the in-memory waveform to the speaker
turns (model loading excluded, reported as ``load_s``); ``rtf`` is audio seconds / wall seconds, as in
``shared/PERFORMANCE.md`` (higher is faster); ``stages_s`` splits the wall time by pyannote's pipeline steps.
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

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def measure(path: Path) -> dict:
    """Diarize ``path`` (16 kHz mono 16-bit WAV) once in this process and return the figures."""
    import torch

    from tests.media_speech import read_wav
    from whisper_subtitler.diarize import DiarizationOptions, load_diarizer
    from whisper_subtitler.types import Audio

    samples = read_wav(path)
    audio = Audio(samples, 16_000, path)
    started = time.perf_counter()
    diarizer = load_diarizer(DiarizationOptions(), device="cpu")
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

    started = last[0] = time.perf_counter()
    turns = diarizer(audio, hook=hook)
    wall = time.perf_counter() - started
    stages["annotation"] = time.perf_counter() - last[0]
    return {
        "file": path.name,
        "audio_s": round(audio.duration, 2),
        "load_s": round(load_s, 2),
        "wall_s": round(wall, 2),
        "rtf": round(audio.duration / wall, 2),
        "stages_s": {k: round(v, 2) for k, v in stages.items() if v >= 0.005},
        "speakers": len({t.speaker for t in turns}),
        "turns": len(turns),
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,  # Linux: KiB
        "torch_threads": torch.get_num_threads(),
    }


def run_child(path: Path) -> dict:
    """``measure(path)`` in a fresh Python process (clean peak memory)."""
    done = subprocess.run([sys.executable, __file__, "--one", str(path)], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"benchmark of {path} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--long", type=Path, help="the 10-minute WAV (default: generate it)")
    parser.add_argument("--skip-sample", action="store_true", help="leave out pyannote's 30 s sample")
    parser.add_argument("--one", type=Path, help=argparse.SUPPRESS)  # internal: measure one file here
    args = parser.parse_args()
    if args.one:
        json.dump(measure(args.one), sys.stdout)
        return 0

    from tests import media

    results = []
    with tempfile.TemporaryDirectory() as tmp:
        if not args.skip_sample:
            print("diarizing sample.wav", file=sys.stderr)
            results.append(run_child(media.SAMPLE_WAV))
        long = args.long
        if long is None:
            print("generating the 10-minute clip (scripts/make_long_clip.py)", file=sys.stderr)
            subprocess.run([sys.executable, str(ROOT / "scripts" / "make_long_clip.py"), tmp], check=True,
                           stdout=subprocess.DEVNULL)
            long = Path(tmp) / "long_clip.wav"
        print(f"diarizing {long.name}", file=sys.stderr)
        results.append(run_child(long))

    json.dump({
        "pipeline": "embedded: pyannote segmentation-3.0 + CAM++ (offline)",
        "device": "cpu",
        "machine": {"cpus": os.cpu_count(), "processor": platform.processor() or platform.machine(),
                    "load_average_1min": round(os.getloadavg()[0], 2)},
        "results": results,
    }, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
