"""The file's own language and Whisper's words on real recordings in one language (bench/real_speech.py's set):
our default run (language detected per speech region) against the same run with ``--language`` forced, and
against faster-whisper's batched pipeline on the same weights.

    python bench/real_languages.py --split held-out --out bench/records/real-languages-held-out.json
    python bench/real_languages.py --split tuning --faster-whisper --out bench/records/real-languages-tuning.json

Per file: the share of the speech (segment seconds) labelled with the file's language, WER of the words the
subtitles show against the reference text (openai-whisper's ``BasicTextNormalizer`` with diacritics removed, as
some references are written without them; ``EnglishTextNormalizer`` for English), and the wall seconds of
``Subtitler.run`` (model loaded once before, runs alternated default / forced, so the ratio excludes the model
load and start-up that a whole process adds to both). ``--faster-whisper`` adds ``BatchedInferencePipeline``
(batch 8, greedy, word timestamps, int8 and float32, language detected once per file as it does by default).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import common

ROOT = Path(__file__).resolve().parent.parent


def normalizer(language: str) -> Any:
    from whisper.normalizers import BasicTextNormalizer, EnglishTextNormalizer

    return EnglishTextNormalizer() if language == "en" else BasicTextNormalizer(remove_diacritics=True)


def errors(reference: str, hypothesis: str, language: str) -> tuple[int, int]:
    """(word errors, reference words) after the language's normalizer."""
    import jiwer

    normalize = normalizer(language)
    ref, hyp = normalize(reference), normalize(hypothesis)
    if not ref.split():
        return 0, 0
    out = jiwer.process_words(ref, hyp or "<empty>")
    return out.substitutions + out.deletions + out.insertions, len(ref.split())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", type=Path, default=ROOT / "bench/results/real-set")
    parser.add_argument("--split", default="held-out", help="tuning, held-out or all")
    parser.add_argument("--kinds", default="monolingual", help="comma-separated manifest kinds")
    parser.add_argument("--files", default="", help="comma-separated file stems (default: all of the split)")
    parser.add_argument("--model", default="base")
    parser.add_argument("--faster-whisper", action="store_true")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    from whisper_subtitler import Subtitler
    from whisper_subtitler.cues.guards import shown_words

    kinds = set(args.kinds.split(","))
    entries = [
        e
        for e in json.loads((args.set / "manifest.json").read_text())
        if e["kind"] in kinds and (args.split == "all" or e["split"] == args.split)
    ]
    if args.files:
        entries = [e for e in entries if Path(e["file"]).stem in args.files.split(",")]
    default = Subtitler(model=args.model, diarize=False)
    tools: dict[str, Any] = {}
    if args.faster_whisper:
        tools = common.batched_faster_whisper(args.model, ROOT / ".bench-work", args.threads)
    rows = []
    for e in entries:
        wav, language = args.set / e["file"], e["language"]
        reference = (args.set / e["text"]).read_text(encoding="utf-8") if e.get("text") else None
        row: dict[str, Any] = {"file": wav.stem, "split": e["split"], "language": language}
        forced = default.replace(decoding=dataclasses.replace(default.decoding, language=language))
        for name, subtitler in (("default", default), ("forced", forced)):
            start = time.perf_counter()
            transcript = subtitler.run(wav).transcript
            row[f"{name}_s"] = round(time.perf_counter() - start, 2)
            seconds: dict[str, float] = defaultdict(float)
            for s in transcript.segments:
                seconds[s.language or "?"] += s.end - s.start
            total = sum(seconds.values()) or 1.0
            row[f"{name}_in_language"] = round(seconds.get(language, 0.0) / total, 4)
            row[f"{name}_languages"] = {k: round(v, 1) for k, v in sorted(seconds.items(), key=lambda kv: -kv[1])}
            text = "".join(w.text for w in shown_words(transcript.words, transcript.removed))
            if reference is not None:
                row[f"{name}_errors"], row["ref_words"] = errors(reference, text, language)
        for name, pipeline in tools.items():
            start = time.perf_counter()
            segments, info = pipeline.transcribe(str(wav), batch_size=8, beam_size=1, word_timestamps=True)
            text = "".join(s.text for s in segments)
            row[f"{name}_s"] = round(time.perf_counter() - start, 2)
            row[f"{name}_language"] = info.language
            if reference is not None:
                row[f"{name}_errors"], row["ref_words"] = errors(reference, text, language)
        for name in ("default", "forced", *tools):
            if row.get("ref_words"):
                row[f"{name}_wer"] = round(row[f"{name}_errors"] / row["ref_words"], 4)
        row["default_over_forced_time"] = round(row["default_s"] / row["forced_s"], 3)
        print(json.dumps(row), flush=True)
        rows.append(row)

    summary: dict[str, Any] = {}
    for split in sorted({r["split"] for r in rows}):
        mine = [r for r in rows if r["split"] == split]
        scored = [r for r in mine if r.get("ref_words")]
        words = sum(r["ref_words"] for r in scored) or 1
        summary[split] = {
            "files": len(mine),
            "languages": sorted({r["language"] for r in mine}),
            "default_in_language_min": min(r["default_in_language"] for r in mine),
            "files_at_least_98_percent": sum(r["default_in_language"] >= 0.98 for r in mine),
            "default_over_forced_time": round(sum(r["default_s"] for r in mine) / sum(r["forced_s"] for r in mine), 3),
            "default_over_forced_time_max": max(r["default_over_forced_time"] for r in mine),
            **{
                f"{name}_wer_pooled": round(sum(r[f"{name}_errors"] for r in scored) / words, 4)
                for name in ("default", "forced", *tools)
            },
            "default_minus_forced_wer_max": max((r["default_wer"] - r["forced_wer"] for r in scored), default=None),
        }
        if tools:
            summary[split]["default_minus_best_faster_whisper_max"] = max(
                (r["default_wer"] - min(r[f"{t}_wer"] for t in tools) for r in scored), default=None
            )
    record = {
        "command": "python bench/real_languages.py " + " ".join(sys.argv[1:]),
        "model": args.model,
        "summary": summary,
        "files": rows,
    }
    common.write_json(record, args.out, ensure_ascii=False, echo=args.out is not None)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
