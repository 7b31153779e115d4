#!/usr/bin/env python3
"""Resume of a long file: killed half-way with SIGKILL and started again, the output is byte-identical to an
uninterrupted run, and the resumed run takes about the time of the half that was left.

    python bench/resume.py                                   # 30 minutes, tiny.en, bench/records/resume.json
    python bench/resume.py --minutes 5 --out bench/records/resume-5min.json

The file is bench/long_clip.py's 10-minute clip of varied English speech, looped to ``--minutes`` (FLAC). Three runs
of ``whisper-subtitler transcribe`` (``--language en``, no diarization, SRT and WebVTT), each a new process:

1. uninterrupted, without ``--resume``: the reference bytes and wall time;
2. with ``--resume``, killed with SIGKILL as soon as its JSON-lines progress passes ``--kill-at`` (0.5) of the
   audio transcribed;
3. the same command again: it resumes from the checkpoint (``library.checkpoints``).

The record holds the three wall times, the resumed run's share of the uninterrupted one, whether the bytes are
identical, what the checkpoint held when the run was killed, and the machine. Needs espeak-ng, sox and ffmpeg.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import pickle
import platform
import signal
import subprocess
import sys
import time
from pathlib import Path

from common import write_json

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def looped(clip: Path, minutes: float, target: Path) -> Path:
    """``clip`` repeated to ``minutes`` minutes, as FLAC."""
    if not target.exists():
        subprocess.run(
            ["ffmpeg", "-nostdin", "-loglevel", "error", "-y", "-stream_loop", "-1", "-i", str(clip), "-t",
             str(minutes * 60), "-ac", "1", "-ar", "16000", str(target)],
            check=True,
        )  # fmt: skip
    return target


def command(media: Path, model: str, out: Path, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "whisper_subtitler", "transcribe", str(media), "--model", model, "--no-diarize",
        "--language", "en", "-f", "srt,vtt", "--output-dir", str(out), "--progress", "json", *extra,
    ]  # fmt: skip


def timed(cmd: list[str]) -> float:
    """Run ``cmd`` to its end; its wall seconds. Exits when it fails."""
    started = time.perf_counter()
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return time.perf_counter() - started


def killed_at(cmd: list[str], fraction: float) -> tuple[float, float]:
    """Run ``cmd`` and SIGKILL it once its JSON-lines progress reaches ``fraction``; returns ``(seconds it ran, the
    fraction it had reached)``."""
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    reached = 0.0
    for line in proc.stderr:
        if line.startswith("{"):
            event = json.loads(line)
            reached = max(reached, float(event.get("fraction") or 0.0))
            if event.get("stage") == "transcribe" and reached >= fraction:
                os.kill(proc.pid, signal.SIGKILL)
                break
    proc.wait()
    if proc.returncode != -signal.SIGKILL:
        raise SystemExit(f"the run ended ({proc.returncode}) before reaching {fraction} of the file")
    return time.perf_counter() - started, reached


def checkpoint_held(state: Path) -> dict:
    """What the checkpoint under ``state`` holds: finished pieces, their audio seconds, and finished chunks."""
    held = {"pieces": 0, "piece_seconds": 0.0, "chunks": 0}
    for path in (state / "checkpoints").glob("*.pickle"):
        saved = pickle.loads(path.read_bytes())
        held["pieces"] += len(saved["pieces"])
        held["piece_seconds"] += sum(p.samples for p in saved["pieces"]) / 16000
        held["chunks"] += len(saved["journal"]["results"])
    return held


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=30.0, help="length of the file (default 30)")
    parser.add_argument("--model", default="tiny.en")
    parser.add_argument("--kill-at", type=float, default=0.5, help="share of the audio transcribed when killed")
    parser.add_argument("--work-dir", type=Path, default=ROOT / "bench" / "results" / "resume")
    parser.add_argument("--out", type=Path, default=HERE / "records" / "resume.json")
    args = parser.parse_args()

    work = args.work_dir
    work.mkdir(parents=True, exist_ok=True)
    clip = work / "long_clip.wav"
    if not clip.exists():
        subprocess.run([sys.executable, str(HERE / "long_clip.py"), str(work)], check=True)
    media = looped(clip, args.minutes, work / f"resume-{args.minutes:g}min.flac")
    for folder in ("whole", "resumed", "state"):
        subprocess.run(["rm", "-rf", str(work / folder)], check=True)

    whole_s = timed(command(media, args.model, work / "whole"))
    resumable = command(media, args.model, work / "resumed", "--resume", "--state-dir", str(work / "state"))
    killed_s, reached = killed_at(resumable, args.kill_at)
    held = checkpoint_held(work / "state")
    resumed_s = timed(resumable)
    identical = all(
        (work / "whole" / f"{media.stem}.{ext}").read_bytes() == (work / "resumed" / f"{media.stem}.{ext}").read_bytes()
        for ext in ("srt", "vtt")
    )
    left = list((work / "state" / "checkpoints").glob("*"))
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT)
    record = {
        "command": "python bench/resume.py " + " ".join(sys.argv[1:]),
        "date": datetime.date.today().isoformat(),
        "commit": commit.stdout.strip(),
        "machine": {"cpus": os.cpu_count(), "processor": platform.processor() or platform.machine()},
        "audio_minutes": args.minutes,
        "model": args.model,
        "uninterrupted_s": round(whole_s, 1),
        "killed_after_s": round(killed_s, 1),
        "killed_at_fraction": round(reached, 3),
        "checkpoint_when_killed": held,
        "resumed_s": round(resumed_s, 1),
        "resumed_over_uninterrupted": round(resumed_s / whole_s, 3),
        "killed_plus_resumed_over_uninterrupted": round((killed_s + resumed_s) / whole_s, 3),
        "identical_bytes": identical,
        "checkpoints_left": len(left),
    }
    write_json(record, args.out, echo=True)
    if not identical or left:
        raise SystemExit("the resumed output differs from the uninterrupted one, or a checkpoint was left")


if __name__ == "__main__":
    main()
