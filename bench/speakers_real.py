#!/usr/bin/env python3
"""Speakers on real conversations (issue 67, item 4): our diarization stage against pyannote's own
``SpeakerDiarization`` with the same two models, on the conversations of ``bench/real_speech.py``'s set.

    python bench/real_speech.py                                                 # -> bench/results/real-set/
    python bench/speakers_real.py --splits tuning --out bench/records/speakers-real-tuning.json
    python bench/speakers_real.py --splits held-out --out bench/records/speakers-real-held-out.json
    python bench/speakers_real.py --splits tuning --ours-only --files conv-nl-tuning-1   # a quick look

For each manifest entry of kind ``conversation`` (``--kinds`` for others, e.g. ``conversation-music``) in the
chosen splits, the file is decoded as ``transcribe`` decodes it (``audio.extract_audio``, 16 kHz mono, the default
``--channels auto``), and diarized twice from the in-memory waveform, model loading excluded:

- **ours**: the embedded default (``load_diarizer(DiarizationOptions())``, no speaker count given) with silero-vad's
  speech regions at the transcription's defaults (``vad.speech_regions``; their time is not counted, as in
  ``bench/diarization.py``: a whole run has them already);
- **pyannote**: pyannote.audio's own ``SpeakerDiarization`` with segmentation-3.0 and CAM++
  (``OfflineSpeakerDiarization(fast=False)``, the ``--reference-tools`` pipeline of ``bench/speakers.py``: no
  speech regions, no re-count, no re-assignment, no cut to the VAD).

Per file: the speakers of the reference RTTM, found by ours and by pyannote, DER without a collar (pyannote.metrics,
overlapped speech scored, over the whole file) and with md-eval's 0.25 s collar, each side's stage wall seconds.
Summary per split, and per number of reference speakers: the share of files whose count is exact and within one,
the mean of the files' DER and the DER pooled over the files, and the speed ratio (pyannote's seconds over ours,
summed over the files). The two run alternately on one file after another in one process, so that a load on the
shared machine falls on both; the heap allocator step of ``transcribe`` (``host_allocator``) applies to both.

``--pyannote-cache DIR`` keeps pyannote's turns and seconds per WAV digest, so that tuning runs only redo ours
(``pyannote_cached`` is then true in the record: its seconds come from the run that cached them, so the speed ratio
mixes two runs); ``--pyannote-cached-only`` takes pyannote's side only where the cache has it, ``--pyannote-fresh``
runs it again; ``--ours-only`` skips pyannote. ``--dump DIR`` writes each file's turns (ours and pyannote's) as RTTM
there.

Rule of the set (issue 67): constants and rules are chosen on ``tuning`` files only; ``held-out`` files are run to
report. Prints (or writes with ``--out``) one JSON document; progress on stderr.

**Three and four voices** (``--build-voices``, into :data:`VOICES_SET`). ``bench/real_speech.py``'s conversations
hold the game's two fish only (its other characters have no Dutch recordings), so this script builds conversations
of 3 and 4 real voices from the same packages (the ``.debs`` that builder fetched into ``.bench-work/debs``, fetched
the same way when missing): the two fish of the Dutch levels of the split (``real_speech.split_levels``: text
disjoint between the splits) and the Asterisk prompt voices of the languages of the split (voice disjoint: Spanish,
Allison and July, ``tuning``; French June and Armelle, Italian Carlo and Paola Menardi, Russian, ``held-out``, as
``real_speech.PROMPT_LANGUAGES``). The prompts are 8 kHz recordings, so every clip is band-limited to
:data:`BAND_HZ` (a conference call): the voices differ by the voice, not by the recording's bandwidth. Each clip's
level is set to the voice's own, drawn within +-:data:`LEVEL_DB`. Who speaks next: another voice than the last, drawn
in proportion to a talkativeness drawn per voice (1 to :data:`TALK_RANGE`), each voice at least
:data:`MIN_CLIPS` lines; the voices' lines in their own order (the fish's in script order). Pauses and overlaps are
``real_speech.lay_out``'s (a change of speaker overlaps the previous line with probability 1/4 by 0.2-1.0 s).
:data:`VOICE_FILES` files per split and number of voices, :data:`VOICE_SECONDS` long. Same arguments, same bytes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from common import write_json  # noqa: E402
from speakers import COLLAR, as_annotation, der_parts, error_seconds, read_rttm  # noqa: E402

log = logging.getLogger("bench.speakers_real")

DEFAULT_SET = ROOT / "bench/results/real-set"
VOICES_SET = ROOT / "bench/results/real-set-voices"

SEED = 6704
BAND_HZ = 3700.0  # every clip low-passed here (the prompts are 8 kHz recordings)
LEVEL_DB = 4.0  # each voice's level drawn within this many dB of the others' (RMS of its clips)
TALK_RANGE = 3.0  # a voice's talkativeness is drawn in [1, TALK_RANGE]: the most talkative speaks up to 3x as often
MIN_CLIPS = 3  # lines each voice says at least
VOICE_FILES = {"tuning": 4, "held-out": 6}  # conversations per split and number of voices (3 and 4)
VOICE_SECONDS = (50.0, 100.0)  # s of speech (with about 0.8 s a pause) each conversation's target is drawn in
PROMPT_VOICES = {  # split -> (voice name, language, text-free voice or None)
    "tuning": (("es-allison", "es", None), ("es-july", "es", "co")),
    "held-out": (
        ("fr-june", "fr", None),
        ("fr-armelle", "fr", "armelle"),
        ("it-carlo", "it", None),
        ("it-menardi", "it", "menardi"),
        ("ru-asterisk", "ru", None),
    ),
}


def digest(path: Path) -> str:
    """The first 16 hex digits of the SHA-256 of ``path``'s bytes."""
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def build_voices(out: Path = VOICES_SET, cache: Path = ROOT / ".bench-work/debs") -> list[dict]:
    """The 3- and 4-voice conversations of the module docstring into ``out`` (WAV, RTTM, STM and a
    ``manifest.json`` in ``bench/real_speech.py``'s format, ``kind`` ``conversation``); the manifest's entries."""
    import random

    import numpy as np
    import real_speech as rs

    prompts = [f"asterisk-core-sounds-{lang}{suffix}" for lang in rs.PROMPT_LANGUAGES for suffix in ("-wav", "")]
    text_free = [package for package, _ in rs.TEXT_FREE.values()]
    root = rs.unpack(rs.fetch([*rs.FILLETS, *prompts, *text_free], cache), cache)
    levels = rs.dutch_lines(root)
    splits = rs.split_levels(levels, random.Random(f"{rs.SEED}-levels"))  # the same split as real_speech.py's
    out.mkdir(parents=True, exist_ok=True)
    entries = []
    for split, count in VOICE_FILES.items():
        pools: dict[str, list] = {}
        for font in rs.FISH:
            pools[f"nl-{font}"] = [c for name in splits[split] for c in levels[name] if c.voice == f"nl-{font}"]
        for voice, language, free in PROMPT_VOICES[split]:
            clips = rs.text_free_prompts(root, language, free) if free else rs.prompt_lines(root, language)
            random.Random(f"{SEED}-{voice}").shuffle(clips)
            pools[voice] = clips
        for voices in (3, 4):
            for number in range(1, count + 1):
                rng = random.Random(f"{SEED}-{split}-{voices}-{number}")
                names = sorted(pools)
                chosen = sorted(rng.sample(names, voices))
                gain = {v: 10 ** (rng.uniform(-LEVEL_DB, LEVEL_DB) / 20) for v in chosen}
                talk = {v: rng.uniform(1.0, TALK_RANGE) for v in chosen}
                target = rng.uniform(*VOICE_SECONDS)
                said = {v: 0 for v in chosen}
                clips, total, last = [], 0.0, None
                while total < target or min(said.values()) < MIN_CLIPS:
                    others = [v for v in chosen if v != last and pools[v]]
                    if not others:
                        break
                    behind = [v for v in others if said[v] < MIN_CLIPS and total >= 0.7 * target]
                    voice = rng.choice(behind) if behind else rng.choices(others, [talk[v] for v in others])[0]
                    clip = pools[voice].pop(0)
                    audio = clip.load()
                    if len(audio) < 0.5 * rs.SR:  # clicks and breaths
                        continue
                    level = 0.08 * gain[voice] / max(rs.rms(audio), 1e-9)
                    clip.audio = rs.lowpass(audio, BAND_HZ) * level
                    clips.append(clip)
                    said[voice] += 1
                    total += len(clip.audio) / rs.SR + 0.8
                    last = voice
                mix, turns = rs.lay_out(clips, rng, overlaps=True)
                peak = float(np.max(np.abs(mix)))
                if peak > 0.97:
                    mix *= 0.97 / peak
                name = f"conv-voices{voices}-{split}-{number}"
                rs.write_wav(out / f"{name}.wav", mix, "mono")
                rs.write_text(
                    out / f"{name}.rttm",
                    "".join(
                        f"SPEAKER {name} 1 {t.start:.3f} {t.end - t.start:.3f} <NA> <NA> {t.voice} <NA> <NA>\n"
                        for t in turns
                    ),
                )
                rs.write_text(
                    out / f"{name}.stm",
                    "".join(f"{name} 1 {t.voice} {t.start:.3f} {t.end:.3f} {t.text}\n" for t in turns),
                )
                entries.append(
                    {
                        "file": f"{name}.wav",
                        "kind": "conversation",
                        "language": "mixed",
                        "split": split,
                        "voices": sorted({t.voice for t in turns}),
                        "speakers": len({t.voice for t in turns}),
                        "duration_s": round(len(mix) / rs.SR, 3),
                        "channels": 1,
                        "layout": "mono",
                        "band_hz": BAND_HZ,
                        "stm": f"{name}.stm",
                        "rttm": f"{name}.rttm",
                        "clips": len(turns),
                        "overlap_s": round(overlap_seconds(turns), 2),
                    }
                )
                print(f"wrote {name}.wav ({len(mix) / rs.SR:.1f} s, {len(turns)} clips, {voices} voices)",
                      file=sys.stderr, flush=True)  # fmt: skip
    rs.write_text(out / "manifest.json", json.dumps(entries, indent=1, ensure_ascii=False) + "\n")
    return entries


def overlap_seconds(turns) -> float:
    """Seconds where two turns (``.start``, ``.end``) or more overlap."""
    edges = sorted([(t.start, 1) for t in turns] + [(t.end, -1) for t in turns])
    active, since, total = 0, 0.0, 0.0
    for time_, step in edges:
        if active >= 2:
            total += time_ - since
        active += step
        since = time_
    return total


def rttm_lines(name: str, turns) -> str:
    """RTTM text of ``SpeakerTurn`` s for file ``name``."""
    return "".join(
        f"SPEAKER {name} 1 {t.start:.3f} {t.end - t.start:.3f} <NA> <NA> {t.speaker} <NA> <NA>\n" for t in turns
    )


def scored(reference, turns, duration: float) -> dict:
    """Speakers found, DER (no collar, and with :data:`speakers.COLLAR`) and their parts (seconds) of ``turns``
    (``SpeakerTurn`` s) against ``reference`` (pyannote ``Annotation``) over ``duration`` seconds."""
    hypothesis = as_annotation(turns)
    parts = der_parts(reference, hypothesis, duration)
    collar = der_parts(reference, hypothesis, duration, collar=COLLAR)
    return {
        "speakers_found": len({t.speaker for t in turns}),
        "der": round(error_seconds(parts) / parts["total"], 4) if parts["total"] else None,
        "der_collar": round(error_seconds(collar) / collar["total"], 4) if collar["total"] else None,
        "der_parts": {k: round(v, 3) for k, v in parts.items()},
    }


class Sides:
    """Both pipelines, loaded once: ``ours(audio, speech)`` and ``pyannote(audio)`` -> (turns, wall seconds)."""

    def __init__(self, with_pyannote: bool, cached_only: bool = False, fresh: bool = False) -> None:
        from whisper_subtitler.diarize import DiarizationOptions, load_diarizer

        self.cached_only = cached_only  # pyannote's side only where the cache has it
        self.fresh = fresh  # pyannote run again even where the cache has it (and the cache rewritten)

        self._ours = load_diarizer(DiarizationOptions(), "cpu")
        self._stock = None
        if with_pyannote:
            from whisper_subtitler.diarize import pyannote_compat
            from whisper_subtitler.diarize.embedded import OfflineSpeakerDiarization
            from whisper_subtitler.diarize.load import Diarizer

            with pyannote_compat.quiet_pyannote_warnings():
                self._stock = Diarizer(OfflineSpeakerDiarization(fast=False), DiarizationOptions(), "embedded")

    def warm_up(self, wav: Path, seconds: float = 20.0, pyannote: bool = True) -> None:
        """Diarize the first ``seconds`` of ``wav`` on both sides, untimed: what the first call of a process pays
        once (ONNX Runtime's session, torch's first passes) falls on neither side's figures."""
        from dataclasses import replace

        from whisper_subtitler.audio import extract_audio
        from whisper_subtitler.vad import speech_regions

        audio = extract_audio(wav)
        audio = replace(audio, samples=audio.samples[: int(seconds * audio.sample_rate)])
        self.ours(audio, speech_regions(audio.samples))
        if self._stock is not None and pyannote:
            self.pyannote(audio)

    def ours(self, audio, speech) -> tuple[tuple, float]:
        started = time.perf_counter()
        turns = tuple(self._ours.diarize(audio, speech=speech).turns)
        return turns, time.perf_counter() - started

    def pyannote(self, audio) -> tuple[tuple, float]:
        assert self._stock is not None
        started = time.perf_counter()
        turns = tuple(self._stock.diarize(audio).turns)
        return turns, time.perf_counter() - started


def evaluate(entry: dict, folder: Path, sides: Sides, cache: Path | None, dump: Path | None) -> dict:
    """Every figure of one manifest entry (module docstring)."""
    from whisper_subtitler.audio import extract_audio
    from whisper_subtitler.types import SpeakerTurn
    from whisper_subtitler.vad import speech_regions

    wav = folder / entry["file"]
    audio = extract_audio(wav)
    speech = speech_regions(audio.samples)
    reference = read_rttm(folder / entry["rttm"])
    duration = audio.duration
    name = Path(entry["file"]).stem
    row: dict = {
        "name": name,
        "set": folder.name,
        "split": entry["split"],
        "kind": entry["kind"],
        "channels": entry.get("channels", 1),
        "duration": round(duration, 2),
        "speech_s": round(float(reference.get_timeline().support().duration()), 2),
        "speakers": entry["speakers"],
    }
    turns, seconds = sides.ours(audio, speech)
    row["ours"] = scored(reference, turns, duration) | {"wall_s": round(seconds, 3)}
    if dump is not None:
        dump.mkdir(parents=True, exist_ok=True)
        (dump / f"{name}.ours.rttm").write_text(rttm_lines(name, turns))
    if sides._stock is not None:
        cached = cache / f"{digest(wav)}.pyannote.json" if cache is not None else None
        if cached is not None and cached.exists() and not sides.fresh:
            data = json.loads(cached.read_text())
            theirs = tuple(SpeakerTurn(a, b, s) for a, b, s in data["turns"])
            their_seconds, from_cache = data["wall_s"], True
        elif sides.cached_only:
            return row
        else:
            theirs, their_seconds = sides.pyannote(audio)
            from_cache = False
            if cached is not None:
                cached.parent.mkdir(parents=True, exist_ok=True)
                cached.write_text(
                    json.dumps({"turns": [[t.start, t.end, t.speaker] for t in theirs], "wall_s": their_seconds})
                )
        row["pyannote"] = scored(reference, theirs, duration) | {
            "wall_s": round(their_seconds, 3),
            "cached": from_cache,
        }
        if dump is not None:
            (dump / f"{name}.pyannote.rttm").write_text(rttm_lines(name, theirs))
    return row


def side_summary(rows: list[dict], side: str) -> dict:
    """Counts, DER and seconds of one side (``ours`` or ``pyannote``) over ``rows``."""
    part = [r for r in rows if side in r]
    if not part:
        return {}
    errors = sum(error_seconds(r[side]["der_parts"]) for r in part)
    total = sum(r[side]["der_parts"]["total"] for r in part)
    ders = [r[side]["der"] for r in part if r[side]["der"] is not None]
    return {
        "count_exact": round(sum(r[side]["speakers_found"] == r["speakers"] for r in part) / len(part), 3),
        "count_within_one": round(
            sum(abs(r[side]["speakers_found"] - r["speakers"]) <= 1 for r in part) / len(part), 3
        ),
        "found": [r[side]["speakers_found"] for r in part],
        "der_mean": round(sum(ders) / len(ders), 4) if ders else None,
        "der_pooled": round(errors / total, 4) if total else None,
        "der_collar_mean": round(sum(r[side]["der_collar"] or 0.0 for r in part) / len(part), 4),
        "wall_s": round(sum(r[side]["wall_s"] for r in part), 2),
    }


def summarise(rows: list[dict]) -> dict:
    """Per split, per split and number of reference speakers, and the same per set: :func:`side_summary` of both
    sides, the speed ratio (pyannote's seconds over ours, over the files both ran) and the files' reference counts."""
    out: dict = {}
    groups: dict[str, list[dict]] = {}
    for r in rows:
        groups.setdefault(r["split"], []).append(r)
        groups.setdefault(f"{r['split']}/{r['speakers']} speakers", []).append(r)
        if "set" in r:
            groups.setdefault(f"{r['split']}/{r['set']}", []).append(r)
            groups.setdefault(f"{r['split']}/{r['set']}/{r['speakers']} speakers", []).append(r)
    for key in sorted(groups):
        part = groups[key]
        ours, theirs = side_summary(part, "ours"), side_summary(part, "pyannote")
        out[key] = {"files": len(part), "speakers": [r["speakers"] for r in part], "ours": ours}
        if theirs:
            out[key]["pyannote"] = theirs
            both = [r for r in part if "pyannote" in r]  # the speed ratio over the files both sides ran
            mine = sum(r["ours"]["wall_s"] for r in both)
            out[key]["speed_ratio"] = round(sum(r["pyannote"]["wall_s"] for r in both) / mine, 2) if mine else None
            out[key]["pyannote_files"] = len(both)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--set", default=f"{DEFAULT_SET},{VOICES_SET}",
        help="comma-separated folders with a manifest.json (default: bench/real_speech.py's and --build-voices')",
    )  # fmt: skip
    parser.add_argument("--build-voices", action="store_true", help="build the 3- and 4-voice set first")
    parser.add_argument("--out", type=Path, help="write the JSON here (default: stdout)")
    parser.add_argument("--splits", default="tuning", help="comma-separated splits (tuning, held-out)")
    parser.add_argument("--kinds", default="conversation", help="comma-separated manifest kinds")
    parser.add_argument("--files", default="", help="comma-separated file stems to run (default: all)")
    parser.add_argument("--speakers", default="", help="comma-separated reference speaker counts to run")
    parser.add_argument("--ours-only", action="store_true", help="do not run pyannote's pipeline")
    parser.add_argument("--pyannote-cache", type=Path, help="keep pyannote's turns and seconds here per WAV digest")
    parser.add_argument(
        "--pyannote-cached-only", action="store_true", help="pyannote's side only for the files --pyannote-cache has"
    )
    parser.add_argument(
        "--pyannote-fresh", action="store_true", help="run pyannote again where --pyannote-cache has it (and keep it)"
    )
    parser.add_argument(
        "--min-cluster-share", type=float, metavar="SHARE",
        help="our clustering's smallest speaker cluster as a share of the embeddings (a measurement; default: "
        "diarize.embedded.MIN_CLUSTER_SHARE; 0.1 is pyannote's and this project's before issue 67)",
    )  # fmt: skip
    parser.add_argument("--dump", type=Path, help="write each file's turns as RTTM here")
    parser.add_argument("--label", default="", help="a label stored in the JSON (e.g. before/after)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    logging.getLogger("whisper_subtitler").setLevel(logging.WARNING)
    from whisper_subtitler.platform import allocator

    if allocator.why_not(os.environ) is None:  # as transcribe's level-1 step "host_allocator" does
        allocator.apply()
    if args.build_voices:
        build_voices()
    folders = [Path(f) for f in args.set.split(",") if f and (Path(f) / "manifest.json").exists()]
    manifest = [
        e | {"_folder": folder} for folder in folders for e in json.loads((folder / "manifest.json").read_text())
    ]
    splits = {s for s in args.splits.split(",") if s}
    kinds = {k for k in args.kinds.split(",") if k}
    files = {f for f in args.files.split(",") if f}
    counts = {int(c) for c in args.speakers.split(",") if c}
    chosen = [
        e
        for e in manifest
        if e["kind"] in kinds
        and e["split"] in splits
        and e.get("rttm")
        and (not files or Path(e["file"]).stem in files)
        and (not counts or e["speakers"] in counts)
    ]
    if not chosen:
        parser.error(f"no manifest entry of kinds {sorted(kinds)} in splits {sorted(splits)} in {args.set}")
    sides = Sides(not args.ours_only, cached_only=args.pyannote_cached_only, fresh=args.pyannote_fresh)
    if args.min_cluster_share is not None:
        sides._ours._pipeline.min_cluster_share = args.min_cluster_share
    sides.warm_up(chosen[0]["_folder"] / chosen[0]["file"], pyannote=not args.pyannote_cached_only)
    rows = []
    for entry in chosen:
        row = evaluate(entry, entry["_folder"], sides, args.pyannote_cache, args.dump)
        rows.append(row)
        theirs = row.get("pyannote")
        log.info(
            "%s (%d speakers, %.0f s): ours %d, DER %.1f %%, %.1f s%s",
            row["name"], row["speakers"], row["duration"], row["ours"]["speakers_found"], 100 * row["ours"]["der"],
            row["ours"]["wall_s"],
            f"; pyannote {theirs['speakers_found']}, DER {100 * theirs['der']:.1f} %, {theirs['wall_s']:.1f} s"
            if theirs else "",
        )  # fmt: skip
    result = {
        "label": args.label,
        "min_cluster_share": sides._ours._pipeline.min_cluster_share,
        "sets": [str(f.relative_to(ROOT)) if f.is_relative_to(ROOT) else str(f) for f in folders],
        "splits": sorted(splits),
        "kinds": sorted(kinds),
        "pyannote_cached": any(r.get("pyannote", {}).get("cached") for r in rows),
        "load_average_1min": round(os.getloadavg()[0], 2),
        "summary": summarise(rows),
        "files": rows,
    }
    write_json(result, args.out, indent=1)
    for key, value in result["summary"].items():
        log.info("%s: %s", key, json.dumps(value))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
