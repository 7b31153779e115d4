#!/usr/bin/env python3
"""Shot changes: what finding them costs a run, and how ffmpeg's scene score and PySceneDetect compare.

    python bench/shots.py --out bench/records/shots-cost.json             # a 10-minute 720p run, auto against off
    python bench/shots.py --compare --out bench/records/shots-detectors.json [--scenedetect-python PY]

The test reel is a minute of 1280x720 at 25 fps made with ffmpeg's test sources (tests/media_shots.py): 12 hard cuts
and 3 one-second dissolves, shots with motion of their own (a counter, a zoom, running gradients, noise, cellular
automata). ``--compare`` runs our detector (``video.shots``: ffmpeg's ``select`` scene score at 160 pixels wide),
ffmpeg decoding alone, ffmpeg with B-frames skipped, and PySceneDetect's ``ContentDetector`` and
``AdaptiveDetector`` (with ``--scenedetect-python``, a Python that has ``scenedetect`` installed: it is no
dependency of ours), and counts the cuts found on their exact frame and within a frame, the dissolves found, the
false changes and the CPU seconds (the process and its children). The cost run loops the reel to 10 minutes under
the project's long clip (bench/long_clip.py) and runs ``transcribe`` (default model, no diarization, SRT) with
``--shot-changes auto`` and ``off`` in turn, ``--repeats`` times each, as separate processes; it records wall and
CPU seconds of each run and the detection alone.
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

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from bench.common import write_json  # noqa: E402
from tests.media_shots import Reel, Shot, reel, timeline  # noqa: E402

FPS = 25
# (source, seconds, dissolve into the next): 12 cuts, 3 dissolves, 58 s in all.
SHOTS = (
    ("testsrc2={s}", 5.0, 0.0),
    ("mandelbrot={s}", 6.0, 1.0),
    ("smptehdbars={s},noise=alls=12:allf=t", 4.0, 0.0),
    ("life={s}:mold=10:ratio=0.3:death_color=#202040:life_color=#c0c060", 4.0, 0.0),
    ("gradients={s}:speed=0.02", 5.0, 1.0),
    ("color=c=0x304050:{s},noise=alls=20:allf=t", 3.0, 0.0),
    ("cellauto={s}:rule=110", 4.0, 0.0),
    ("rgbtestsrc={s},hue=H=t", 3.0, 0.0),
    ("testsrc={s},hue=H=2*t", 5.0, 0.0),
    ("mandelbrot={s}:start_scale=0.5,hue=s=0", 4.0, 1.0),
    ("color=c=0x283848:{s},noise=alls=20:allf=t", 3.0, 0.0),
    ("gradients={s}:speed=0.05:c0=red:c1=blue", 3.0, 0.0),
    ("testsrc2={s},hue=H=t", 2.0, 0.0),
    ("smptebars={s}", 3.0, 0.0),
    ("cellauto={s}:rule=30", 3.0, 0.0),
    ("testsrc={s}", 4.0, 0.0),
)
SCENEDETECT = """
import json, resource, sys
from scenedetect import AdaptiveDetector, ContentDetector, SceneManager, open_video
out = {}
for name, detector in (("ContentDetector", ContentDetector), ("AdaptiveDetector", AdaptiveDetector)):
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    manager = SceneManager()
    manager.auto_downscale = True
    manager.add_detector(detector())
    manager.detect_scenes(open_video(sys.argv[1], backend="opencv"))
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime
    out[name] = {"changes": [s[0].seconds for s in manager.get_scene_list()[1:]], "cpu_seconds": round(cpu, 2)}
import scenedetect, cv2
out["versions"] = {"scenedetect": scenedetect.__version__, "opencv": cv2.__version__}
print(json.dumps(out))
"""


def cpu_of_children() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def make_reel(folder: Path) -> Reel:
    """The one-minute 720p test reel (made once per folder)."""
    shots = [Shot(source, seconds, dissolve) for source, seconds, dissolve in SHOTS]
    target = folder / "reel720.mp4"
    if target.exists():
        return timeline(target, shots, FPS)
    return reel(target, shots, size="1280x720", fps=FPS, preset="veryfast")


def score(found: list[float], truth: Reel) -> dict:
    """Cuts found on their exact frame and within one frame, dissolves found (a change inside one, a frame of
    slack), and changes that are neither."""
    frame = 1 / truth.fps
    exact = sum(any(abs(t - c) < frame / 4 for t in found) for c in truth.cuts)
    near = sum(any(abs(t - c) <= frame * 1.25 for t in found) for c in truth.cuts)
    dissolves = sum(any(a - frame <= t <= b + frame for t in found) for a, b in truth.dissolves)
    false = [
        round(t, 3)
        for t in found
        if not any(abs(t - c) <= frame * 1.25 for c in truth.cuts)
        and not any(a - frame <= t <= b + frame for a, b in truth.dissolves)
    ]
    return {
        "cuts_exact_frame": exact,
        "cuts_within_1_frame": near,
        "cuts": len(truth.cuts),
        "dissolves_found": dissolves,
        "dissolves": len(truth.dissolves),
        "false_changes": false,
        "changes": [round(t, 3) for t in found],
    }


def ffmpeg_variant(video: Path, before: list[str], vf: str) -> tuple[list[float], float]:
    """Changes printed by ``metadata=print`` with input options ``before`` and filter ``vf``; CPU seconds."""
    from whisper_subtitler.video.shots import changes_from

    cpu = cpu_of_children()
    cmd = ["ffmpeg", "-hide_banner", "-nostdin", "-loglevel", "error", *before, "-i", str(video), "-an"]
    proc = subprocess.run([*cmd, "-vf", vf, "-f", "null", "-"], capture_output=True, check=True)
    return list(changes_from(proc.stdout, 0.0, FPS)), round(cpu_of_children() - cpu, 2)


def compare(work: Path, scenedetect_python: str | None) -> dict:
    from whisper_subtitler.video.shots import SCENE_THRESHOLD, detect_shot_changes, video_info

    truth = make_reel(work)
    info = video_info(truth.path)
    results: dict = {}
    cpu = cpu_of_children()
    started = time.perf_counter()
    ours = list(detect_shot_changes(truth.path, info))
    results["ours: ffmpeg scene score, 160 px, loop filter skipped"] = {
        **score(ours, truth),
        "cpu_seconds": round(cpu_of_children() - cpu, 2),
        "wall_seconds": round(time.perf_counter() - started, 2),
    }
    printed = f"select='gt(scene,{SCENE_THRESHOLD})',metadata=mode=print:file=pipe\\\\:1"
    found, cpu_s = ffmpeg_variant(truth.path, [], printed)
    results["ffmpeg scene score, full size"] = {**score(found, truth), "cpu_seconds": cpu_s}
    found, cpu_s = ffmpeg_variant(truth.path, ["-skip_frame", "bidir", "-skip_loop_filter", "all"], printed)
    results["ffmpeg scene score, B-frames skipped"] = {**score(found, truth), "cpu_seconds": cpu_s}
    _, cpu_s = ffmpeg_variant(truth.path, [], "null")
    results["ffmpeg decoding alone"] = {"cpu_seconds": cpu_s}
    if scenedetect_python:
        proc = subprocess.run(
            [scenedetect_python, "-c", SCENEDETECT, str(truth.path)], capture_output=True, text=True, check=True
        )
        found_sd = json.loads(proc.stdout.strip().splitlines()[-1])
        versions = found_sd.pop("versions")
        for name, got in found_sd.items():
            results[f"PySceneDetect {versions['scenedetect']} {name} (OpenCV {versions['opencv']})"] = {
                **score(got["changes"], truth),
                "cpu_seconds": got["cpu_seconds"],
            }
    return {
        "command": "python bench/shots.py --compare" + (" --scenedetect-python PY" if scenedetect_python else ""),
        "machine": platform.platform(),
        "reel": {
            "size": "1280x720",
            "fps": FPS,
            "seconds": truth.duration,
            "cuts": list(truth.cuts),
            "dissolves": [list(d) for d in truth.dissolves],
        },
        "threshold": SCENE_THRESHOLD,
        "detectors": results,
    }


def long_video(work: Path) -> Path:
    """The reel looped to 10 minutes under the long clip's speech (bench/long_clip.py, made when missing)."""
    target = work / "film-10min.mp4"
    if target.exists():
        return target
    speech = work / "long_clip.wav"
    if not speech.exists():
        subprocess.run([sys.executable, str(HERE / "long_clip.py"), str(work)], check=True)
    truth = make_reel(work)
    listing = work / "reel-x10.txt"
    listing.write_text(f"file '{truth.path.name}'\n" * 10, encoding="utf-8")
    subprocess.run(
        ["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y", "-f", "concat", "-safe", "0", "-i"]
        + [str(listing), "-i", str(speech), "-map", "0:v", "-map", "1:a", "-c:v", "copy", "-c:a", "aac", "-shortest"]
        + [str(target)],
        check=True,
    )
    return target


def timed_run(args: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds (children) of ``whisper-subtitler ARGS``."""
    cpu = cpu_of_children()
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "whisper_subtitler", *args], check=True, capture_output=True)
    return round(time.perf_counter() - started, 2), round(cpu_of_children() - cpu, 2)


def cost(work: Path, repeats: int) -> dict:
    from statistics import median

    from whisper_subtitler.video.shots import detect_shot_changes

    video = long_video(work)
    cpu = cpu_of_children()
    started = time.perf_counter()
    changes = detect_shot_changes(video)
    detection = {
        "wall_seconds": round(time.perf_counter() - started, 2),
        "cpu_seconds": round(cpu_of_children() - cpu, 2),
        "changes": len(changes),
    }
    runs: dict[str, list[tuple[float, float]]] = {"auto": [], "off": []}
    with tempfile.TemporaryDirectory() as out:
        for _ in range(repeats):
            for mode in ("auto", "off"):
                args = ["transcribe", str(video), "--no-diarize", "-f", "srt", "-o", out, "--overwrite", "-q"]
                runs[mode].append(timed_run([*args, "--shot-changes", mode]))
    load = [round(x, 2) for x in os.getloadavg()]
    wall = {mode: median(w for w, _ in r) for mode, r in runs.items()}
    cpu_s = {mode: median(c for _, c in r) for mode, r in runs.items()}
    return {
        "command": f"python bench/shots.py --repeats {repeats}",
        "machine": platform.platform(),
        "cpus": os.cpu_count(),
        "load_average_1_5_15_min_after": load,
        "video": "10 min, 1280x720 H.264 at 25 fps (the test reel looped), AAC speech of bench/long_clip.py",
        "run": "transcribe --no-diarize -f srt (default model, CPU), one process per run, auto and off in turn",
        "detection_alone": detection,
        "runs": {mode: [{"wall_seconds": w, "cpu_seconds": c} for w, c in r] for mode, r in runs.items()},
        "median_wall_seconds": wall,
        "median_cpu_seconds": cpu_s,
        "wall_ratio": round(wall["auto"] / wall["off"], 3),
        "cpu_ratio": round(cpu_s["auto"] / cpu_s["off"], 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--compare", action="store_true", help="compare the detectors on the test reel")
    parser.add_argument("--scenedetect-python", help="a Python with scenedetect installed (for --compare)")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each mode (cost)")
    parser.add_argument("--work", type=Path, default=ROOT / ".bench-work", help="folder for the media")
    parser.add_argument("--out", type=Path, help="the JSON record (default: stdout)")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    record = compare(args.work, args.scenedetect_python) if args.compare else cost(args.work, args.repeats)
    write_json(record, args.out, echo=bool(args.out))


if __name__ == "__main__":
    main()
