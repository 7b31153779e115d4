"""Start-up (issue 48): how long whole ``whisper-subtitler`` processes take before they do any work, and the 30-s
sample with ``--no-diarize`` to show that a real run lost nothing.

    python bench/startup.py [--runs 5] [--before TREE] [--sample-runs 3] [--out bench/records/startup.json]

Each command runs as a real process (``python -m whisper_subtitler ...``) in an empty folder: ``import
whisper_subtitler.cli.app``, ``--help``, ``transcribe --help``, ``transcribe missing.mp4``, ``transcribe`` of 20
missing files with ``--json``, ``doctor``, and pyannote's 30-s ``sample.wav`` with ``--no-diarize`` (its batch's own
``wall_seconds`` too, from ``--json``). Per command: the median and the minimum wall time (``time.perf_counter``
around ``subprocess.run``) and the median CPU time of the child (user + sys, ``getrusage``) over ``--runs`` runs.
With ``--before TREE`` (a folder holding an older ``whisper_subtitler`` package, e.g. from ``git archive REV
whisper_subtitler | tar -x -C TREE``) each command also runs with ``PYTHONPATH=TREE``, alternating with the current
tree so that both see the same load. Prints a Markdown table; ``--out`` also writes the figures as JSON.

Every tree measured is byte-compiled first (``compileall``), as ``pip install`` does for an installed package: with
``PYTHONDONTWRITEBYTECODE`` set (some containers and CI images set it) an editable tree is otherwise compiled from
source at every start, about 100 ms of the figures that no installed copy pays.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PYANNOTE = Path(next(iter(importlib.util.find_spec("pyannote.audio").submodule_search_locations)))
SAMPLE = PYANNOTE / "sample" / "sample.wav"  # 30 s, 16 kHz mono, two speakers (real speech)
CLI = [sys.executable, "-m", "whisper_subtitler"]
COMMANDS: dict[str, list[str]] = {
    "import whisper_subtitler.cli.app": [sys.executable, "-c", "import whisper_subtitler.cli.app"],
    "--help": [*CLI, "--help"],
    "transcribe --help": [*CLI, "transcribe", "--help"],
    "transcribe missing.mp4": [*CLI, "transcribe", "missing.mp4"],
    "transcribe m0.mp4 ... m19.mp4 --json (all missing)": [
        *CLI,
        "transcribe",
        *[f"m{i}.mp4" for i in range(20)],
        "--json",
    ],
    "doctor": [*CLI, "doctor"],
}
SAMPLE_COMMAND = [*CLI, "transcribe", str(SAMPLE), "--no-diarize", "--overwrite", "--json", "--output-dir", "out"]


def once(command: list[str], folder: Path, tree: Path | None) -> dict[str, float]:
    """One run of ``command`` in ``folder`` (``PYTHONPATH=tree`` when given): wall and CPU seconds, exit code, and
    the batch's ``wall_seconds`` when it printed a ``--json`` summary."""
    env = {**os.environ, "PYTHONPATH": str(tree)} if tree is not None else dict(os.environ)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    figures = {"wall_s": wall, "cpu_s": cpu, "exit_code": float(done.returncode)}
    if "--json" in command and done.stdout.strip().startswith("{"):
        figures["batch_wall_s"] = float(json.loads(done.stdout)["wall_seconds"])
    return figures


def summary(runs: list[dict[str, float]]) -> dict[str, float]:
    """Medians (and the minimum wall time) of ``runs``."""
    result = {
        "wall_s": statistics.median(r["wall_s"] for r in runs),
        "min_wall_s": min(r["wall_s"] for r in runs),
        "cpu_s": statistics.median(r["cpu_s"] for r in runs),
        "exit_code": runs[-1]["exit_code"],
        "runs": float(len(runs)),
    }
    if all("batch_wall_s" in r for r in runs):
        result["batch_wall_s"] = statistics.median(r["batch_wall_s"] for r in runs)
    return {key: round(value, 3) for key, value in result.items()}


def measure(command: list[str], runs: int, before: Path | None) -> dict[str, dict[str, float]]:
    """``command`` ``runs`` times with the current tree, alternating with ``before`` when given."""
    trees = {"after": None} if before is None else {"before": before, "after": None}
    found: dict[str, list[dict[str, float]]] = {label: [] for label in trees}
    with tempfile.TemporaryDirectory(prefix="startup-") as folder:
        for _ in range(runs):
            for label, tree in trees.items():
                found[label].append(once(command, Path(folder), tree))
    return {label: summary(values) for label, values in found.items()}


def cell(figures: dict[str, float]) -> str:
    text = f"{figures['wall_s']:.2f} s (min {figures['min_wall_s']:.2f}; CPU {figures['cpu_s']:.2f} s)"
    if "batch_wall_s" in figures and figures["batch_wall_s"] > 1:
        text += f", batch {figures['batch_wall_s']:.2f} s"
    return text + ("" if figures["exit_code"] in (0, 1) else f", exit {figures['exit_code']:.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="runs of each start-up command")
    parser.add_argument("--sample-runs", type=int, default=3, help="runs of the 30-s sample (0: none)")
    parser.add_argument("--before", type=Path, help="a folder with an older whisper_subtitler package to compare")
    parser.add_argument("--out", type=Path, help="also write the figures here as JSON")
    args = parser.parse_args()
    for tree in (Path(__file__).resolve().parents[1], args.before):
        if tree is not None:  # the .pyc files an installed copy has (see the module docstring)
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "whisper_subtitler")], check=True)
    results: dict[str, dict[str, dict[str, float]]] = {}
    plan = [(name, command, args.runs) for name, command in COMMANDS.items()]
    if args.sample_runs:
        plan.append(("30-s sample, --no-diarize", SAMPLE_COMMAND, args.sample_runs))
    labels = ["before", "after"] if args.before is not None else ["after"]
    print("| command | " + " | ".join(labels) + " |")
    print("|---|" + "---|" * len(labels))
    for name, command, runs in plan:
        results[name] = measure(command, runs, args.before)
        print(f"| `{name}` | " + " | ".join(cell(results[name][label]) for label in labels) + " |", flush=True)
    if args.out is not None:
        load = os.getloadavg()
        meta = {"cpus": os.cpu_count(), "load_average_at_end": [round(x, 2) for x in load]}
        args.out.write_text(json.dumps({"machine": meta, "results": results}, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
