#!/usr/bin/env python3
"""``check``'s report and SubER for pyannote's sample against its reference transcript.

    python bench/check_sample.py [--out bench/records/check-sample.json] [--work .bench-work/check] \
        [-- TRANSCRIBE FLAGS...]

Transcribes pyannote's ``sample.wav`` (30 s, two real speakers on a phone line) as a user would (``transcribe``,
default model and options, plus any flags after ``--``), then runs ``check --json`` on the SRT, against a reference
SRT made from the sample's own transcript ``sample.stm``: one cue per utterance, at the utterance's times, its text
laid out by the same line breaker (42 columns, 2 lines). The reference's cue segmentation is the utterances', not a
subtitler's, so SubER here mostly measures the words and the cue boundaries. Prints the summary and writes the
JSON (the ``check --json`` object, the transcribe command and its time) to ``--out``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from common import write_json  # noqa: E402

from whisper_subtitler.cues import CueOptions  # noqa: E402
from whisper_subtitler.cues.linebreak import layout, tokenize  # noqa: E402

SAMPLE = Path(next(iter(importlib.util.find_spec("pyannote.audio").submodule_search_locations))) / "sample"


def clock(seconds: float) -> str:
    ms = round(seconds * 1000)
    return f"{ms // 3_600_000:02d}:{ms // 60_000 % 60:02d}:{ms // 1000 % 60:02d},{ms % 1000:03d}"


def reference_srt(stm: Path, target: Path, options: CueOptions = CueOptions()) -> Path:
    """``stm``'s utterances as an SRT file: one cue each, laid out by the cue builder's line breaker."""
    rows = sorted(
        (float(f[3]), float(f[4]), f[5])
        for f in (ln.split(None, 5) for ln in stm.read_text().splitlines())
        if len(f) == 6
    )
    blocks = []
    for k, (start, end, text) in enumerate(rows, 1):
        lay = layout(
            tokenize([" " + w for w in text.split()], False),
            max_width=options.max_line_width,
            max_lines=options.max_lines,
        )
        lines = lay.lines if lay is not None else (text,)
        blocks.append(f"{k}\n{clock(start)} --> {clock(end)}\n" + "\n".join(lines) + "\n")
    target.write_text("\n".join(blocks), encoding="utf-8")
    return target


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    extra: list[str] = []
    if "--" in argv:
        extra, argv = argv[argv.index("--") + 1 :], argv[: argv.index("--")]
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="write the JSON here (default: print it)")
    parser.add_argument("--work", type=Path, default=ROOT / ".bench-work" / "check", help="folder for the files made")
    args = parser.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    reference = reference_srt(SAMPLE / "sample.stm", args.work / "reference.srt")
    command = ["transcribe", str(SAMPLE / "sample.wav"), "--format", "srt", "--output-dir", str(args.work)]
    command += ["--overwrite", *extra]
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "whisper_subtitler", *command], capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        print(done.stderr, file=sys.stderr)
        return done.returncode
    hypothesis = args.work / "sample.srt"
    checked = subprocess.run(
        [sys.executable, "-m", "whisper_subtitler", "check", str(hypothesis), "--against", str(reference), "--json"],
        capture_output=True,
        text=True,
    )
    if checked.returncode not in (0, 1):
        print(checked.stderr, file=sys.stderr)
        return checked.returncode
    (report,) = json.loads(checked.stdout)["files"]
    report["path"] = "sample.srt"
    result = {
        "media": "pyannote.audio sample/sample.wav",
        "reference": "sample.stm, one cue per utterance",
        "transcribe": ["whisper-subtitler", "transcribe", "sample.wav", "--format", "srt", *extra],
        "transcribe_seconds": round(seconds, 1),
        "check_exit_code": checked.returncode,
        "report": report,
    }
    a = report["against"]
    print(
        f"sample.srt: {report['cues']} cues, faults {report['faults_by_kind'] or 'none'} "
        f"({report['faults_by_severity']}); CPS mean {report['mean_cps']}, max {report['max_cps']}; "
        f"CPL mean {report['mean_cpl']}, max {report['max_cpl']}; SubER {a['suber']} % against sample.stm; "
        f"start offset median {a['start_offset_median']} s, end offset median {a['end_offset_median']} s "
        f"({a['paired_cues']} of {a['reference_cues']} cues paired)"
    )
    write_json(result, args.out, indent=2, ensure_ascii=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
