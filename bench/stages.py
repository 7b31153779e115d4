"""The work outside the models (issue 48): audio decoding, VAD, word-timing DTW, cue layout and writing, in seconds
per hour of audio, on the 10-minute benchmark clip.

    python bench/stages.py [--clip DIR] [--model tiny.en] [--runs 3] [--before TREE] [--out bench/records/stages.json]

One process loads the model once (``Subtitler``, ``--no-diarize``), runs the clip once to warm up, then ``--runs``
times. Per run: the pipeline's own wall-clock stage timer (``Result.timings``: ``audio``, ``vad``, ``transcribe``,
``cues``), the rendering and writing of SRT and VTT (``Result.write``, timed here), and inside ``transcribe`` the two
parts of word timing: the decoder pass that reads the alignment heads' attention (``alignment._attention_weights``,
a model pass) and the DTW with its median filter and word split (``alignment._row_alignment`` and ``_words``, the
CPU-side part), timed by wrapping those functions. ``audio`` + ``vad`` + DTW + ``cues`` + writing is the figure the
issue bounds (6 s per hour on 2 cores). Medians over the runs, and each scaled to one hour of audio.

With ``--before TREE`` (a folder holding an older ``whisper_subtitler`` package, e.g. ``git archive REV
whisper_subtitler | tar -x -C TREE``) the same runs are made in a second process on that tree, alternating with the
current one, so that both see the same load. The clip is made by ``bench/long_clip.py`` when ``--clip`` has none.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CPU_SIDE = ("audio", "vad", "dtw", "cues", "write")


def forget_speech_probabilities() -> None:
    """Empty ``vad``'s cache of speech probabilities (keyed by the samples' digest), so that each run of the same clip
    runs the VAD network again, as a new file does; without this the runs after the warm-up timed a cache lookup."""
    from whisper_subtitler import vad

    kept = getattr(vad, "_kept", None)
    if kept is not None:
        with vad._kept_lock:
            kept.clear()
            vad._kept_arrays.clear()


def measure_once(clip: Path, model: str, runs: int) -> dict:
    """Runs in this process (the tree on ``sys.path``): the stage seconds of each run."""
    from whisper_subtitler import Subtitler
    from whisper_subtitler.decoding import alignment

    spent: dict[str, float] = {}

    def timed(name: str, function):
        def wrapper(*args, **kwargs):
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                spent[name] = spent.get(name, 0.0) + time.perf_counter() - started

        return wrapper

    alignment._attention_weights = timed("alignment_pass", alignment._attention_weights)
    alignment._row_alignment = timed("dtw", alignment._row_alignment)
    alignment._words = timed("dtw", alignment._words)
    subtitler = Subtitler(model=model, diarize=False)
    subtitler.run(clip)  # warm-up: numba's DTW, the first allocations
    out = []
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(runs):
            spent.clear()
            forget_speech_probabilities()
            result = subtitler.run(clip)
            started = time.perf_counter()
            for ext in ("srt", "vtt"):
                result.write(Path(folder) / f"clip.{ext}")
            write = time.perf_counter() - started
            stages = dict(result.timings)
            stages.update({k: round(v, 3) for k, v in spent.items()})
            stages["write"] = round(write, 3)
            out.append(stages)
    return {"runs": out}


def summary(runs: list[dict], duration: float) -> dict:
    """Median seconds per stage and per hour of audio, and the CPU-side sum."""
    names = sorted({k for r in runs for k in r})
    median = {k: statistics.median(r.get(k, 0.0) for r in runs) for k in names}
    per_hour = {k: round(v * 3600 / duration, 2) for k, v in median.items()}
    return {
        "median_s": {k: round(v, 3) for k, v in median.items()},
        "per_hour_s": per_hour,
        "cpu_side_per_hour_s": round(sum(per_hour.get(k, 0.0) for k in CPU_SIDE), 2),
    }


def child(tree: Path | None, clip: Path, model: str, runs: int) -> dict:
    """``measure_once`` in a fresh process, on ``tree`` when given (its package first on ``sys.path``)."""
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    command = [sys.executable, str(Path(__file__).resolve()), "--child", "--clip", str(clip.parent), "--model", model]
    done = subprocess.run([*command, "--runs", str(runs)], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{tree or 'current tree'}: {done.stderr.strip()}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clip", type=Path, default=Path(tempfile.gettempdir()) / "whisper-subtitler-long-clip")
    parser.add_argument("--model", default="tiny.en")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--before", type=Path, help="a folder holding an older whisper_subtitler package")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    wav = args.clip / "long_clip.wav"
    if args.child:
        print(json.dumps(measure_once(wav, args.model, args.runs)))
        return
    if not wav.exists():
        subprocess.run([sys.executable, str(HERE / "long_clip.py"), str(args.clip)], check=True)
    from whisper_subtitler.audio import probe

    duration = probe(wav).duration or 0.0
    trees = {"current": None, **({"before": args.before} if args.before else {})}
    runs: dict[str, list[dict]] = {name: [] for name in trees}
    for _ in range(args.runs):  # alternate, one run per process start, so that both trees see the same load
        for name, tree in trees.items():
            runs[name] += child(tree, wav, args.model, 1)["runs"]
    record = {
        "command": " ".join(["python bench/stages.py", *sys.argv[1:]]),
        "model": args.model,
        "clip_seconds": duration,
        "load_average_at_end": os.getloadavg(),
        "cpus": os.cpu_count(),
        **{name: {"runs": r, **summary(r, duration)} for name, r in runs.items()},
    }
    text = json.dumps(record, indent=1)
    if args.out:
        args.out.write_text(text + "\n")
    for name in runs:
        print(f"{name}: per hour {record[name]['per_hour_s']}, CPU side {record[name]['cpu_side_per_hour_s']} s/h")


if __name__ == "__main__":
    main()
