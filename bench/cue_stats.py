#!/usr/bin/env python3
"""Print the readability figures of the cues built from a saved transcript JSON.

    python bench/cue_stats.py TRANSCRIPT.json [--max-line-width 42] [--max-lines 2] [--max-cps 17] [--fps 24]
                                               [--json]

Builds cues with the given options (no model, no torch), then prints: number of cues, % within line width
and line count, % with end after start, overlaps, gaps below 2 frames, % within reading speed and duration
(raw and where the speech allows), and the build time. Exit status 1 when a hard limit is broken (line width,
line count, order, overlap).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from whisper_subtitler.cues import CueOptions, build_cues  # noqa: E402
from whisper_subtitler.cues.stats import cue_stats  # noqa: E402
from whisper_subtitler.errors import SubtitlerError  # noqa: E402
from whisper_subtitler.writers import read_transcript  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("transcript", type=Path, help="transcript JSON (--format json output)")
    parser.add_argument("--max-line-width", type=int, default=42)
    parser.add_argument("--max-lines", type=int, default=2)
    parser.add_argument("--max-cps", type=float, default=17.0)
    parser.add_argument("--fps", type=float, default=24.0)
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    args = parser.parse_args(argv)
    try:
        options = CueOptions(
            max_line_width=args.max_line_width, max_lines=args.max_lines, max_cps=args.max_cps, fps=args.fps
        )
        transcript = read_transcript(args.transcript)
    except SubtitlerError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    cues = build_cues(transcript, options)
    build_s = time.perf_counter() - t0
    stats = cue_stats(cues, options, transcript.duration)
    figures = {
        "transcript": str(args.transcript),
        "words": len(transcript.words),
        **stats.as_dict(),
        "build_seconds": round(build_s, 4),
    }
    if args.json:
        print(json.dumps(figures))
    else:
        for key, value in figures.items():
            print(f"{key:36s} {value}")
    hard_ok = (
        stats.within_line_width_pct == 100.0
        and stats.within_line_count_pct == 100.0
        and stats.end_after_start_pct == 100.0
        and stats.overlaps == 0
    )
    return 0 if hard_ok else 1


if __name__ == "__main__":
    sys.exit(main())
