"""Lab tool behind the language decision's constants: Whisper's language detections of every window and speech
region of some files, as the language plan sees them, written to JSON so that a rule can be tried on them without
running the model again.

    python bench/language_dump.py FILE... --model base --out /tmp/detections.json

For each file: the windows' own detections with their seconds of speech, each region's detection (the ten most
likely languages), the languages the plan chose per region, and the seconds of speech per segment language of the
finished transcript. Run it on tuning files only (bench/real_speech.py's manifest says which).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import common


def _top(p: Any, n: int = 10) -> dict[str, float]:
    return {k: round(float(v), 5) for k, v in sorted(p.items(), key=lambda kv: -kv[1])[:n]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--model", default="base")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    from whisper_subtitler import Subtitler
    from whisper_subtitler.decoding import language_plan

    captured: dict[str, Any] = {}
    detect, plan = language_plan.detect_regions, language_plan.plan_languages

    def detect_and_keep(*a: Any, **k: Any) -> Any:
        found = detect(*a, **k)
        if found.file is not None:
            captured["file_language"] = {"language": found.file.language, "p": _top(found.file.probabilities)}
        captured["regions"] = [
            {"start": round(r.start, 3), "end": round(r.end, 3), "p": _top(r.probabilities)} for r in found.regions
        ]
        captured["encoded_alone"] = found.encoded_alone
        return found

    def plan_and_keep(*a: Any, **k: Any) -> Any:
        planned = plan(*a, **k)
        captured["chosen"] = list(planned.languages)
        return planned

    language_plan.detect_regions = detect_and_keep
    language_plan.plan_languages = plan_and_keep
    subtitler = Subtitler(model=args.model, diarize=False)
    records = []
    for path in args.files:
        captured.clear()
        started = time.perf_counter()
        result = subtitler.run(path)
        seconds: dict[str, float] = {}
        for s in result.segments:
            seconds[s.language or "?"] = seconds.get(s.language or "?", 0.0) + s.end - s.start
        records.append(
            {
                "file": str(path),
                "wall_s": round(time.perf_counter() - started, 2),
                "language": result.language,
                "segment_seconds": {k: round(v, 2) for k, v in sorted(seconds.items(), key=lambda kv: -kv[1])},
                "text": result.text,
                **captured,
            }
        )
        print(path, result.language, records[-1]["segment_seconds"], flush=True)
    common.write_json(records, args.out, ensure_ascii=False)


if __name__ == "__main__":
    main()
