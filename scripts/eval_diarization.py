#!/usr/bin/env python3
"""Diarization error rate of the embedded offline pipeline on three sets, for one or more configurations.

    .venv/bin/python scripts/eval_diarization.py                         # the default and the stock pipeline
    .venv/bin/python scripts/eval_diarization.py --steps 0.1,0.2,0.3    # the window step, pooled embeddings
    .venv/bin/python scripts/eval_diarization.py --no-stock --no-reassign  # with and without the re-assignment
    .venv/bin/python scripts/eval_diarization.py --reassign-grid --held-out  # the re-assignment's constants, a grid

Sets: pyannote's real ``sample.wav`` against its ``sample.rttm``; the tuning set of
``scripts/tune_diarization.py`` (generated espeak-ng conversations of one, two and three voices); the real
conversation re-arranged from the sample's utterances with quick turn-taking, five orders
(``tests/media_conversation.py``, seeds 0-4; reference from the STM times).
DER is pyannote.metrics' diarization error rate, no collar, overlapped speech scored, accumulated over the files
of a set. ``--held-out`` adds two sets: twenty more orders of the re-arranged conversation (seeds 5-24), and
generated conversations where short replies ("Yes.", "Really?") come between longer turns (:func:`replies_set`).
``default`` is the pipeline as ``transcribe --diarize`` runs it (with the VAD's speech regions);
``stock`` is pyannote's own ``SpeakerDiarization`` with the same two models and settings, embedding every window
on its own and segmenting every window (the pipeline before this change); ``no reassign`` is ``default`` without the
re-assignment of short speech regions (``whisper_subtitler/diarize/reassign.py``). ``--reassign-grid`` diarizes each
file once without it, then re-assigns with each setting of a grid over its constants and scores every setting (the
plateau in docs/diarization.md). Prints JSON on stdout; progress on stderr.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

log = logging.getLogger("eval_diarization")
SEEDS = (0, 1, 2, 3, 4)  # the re-arranged conversations (tests/media_conversation.py), as in speaker_attribution.py
HELD_OUT_SEEDS = tuple(range(5, 25))  # --held-out: twenty more orders of the same utterances
REPLIES = (  # --held-out: the short answers of the "replies" set, one to three words
    "Yes.", "Okay.", "Really?", "Right.", "Hello?", "Sure.", "I see.", "No.", "Thanks.", "Why?", "Oh, good.",
    "Not really.", "Of course.", "Maybe.",
)  # fmt: skip


def replies_set(work_dir: Path, seed: int = 11, turns: int = 16) -> list[tuple[Path, Path]]:
    """Generated conversations where short replies come between longer turns, quick turn-taking (0.2-0.8 s
    pauses): two voices in four pairs, and three voices. Every other turn is, seven times in ten, a reply of
    :data:`REPLIES`; the others are one or two sentences of the tuning set's. (wav, rttm) pairs."""
    import random

    from tune_diarization import SENTENCES

    from tests.media_speech import VOICE_A, VOICE_B, VOICE_C, VOICE_D, conversation

    setups = (
        ("replies_ab", (VOICE_A, VOICE_B)),
        ("replies_cd", (VOICE_C, VOICE_D)),
        ("replies_ac", (VOICE_A, VOICE_C)),
        ("replies_bd", (VOICE_B, VOICE_D)),
        ("replies_bcd", (VOICE_B, VOICE_C, VOICE_D)),
    )
    rng = random.Random(seed)
    files = []
    for name, voices in setups:
        script, previous = [], None
        for k in range(turns):
            voice = rng.choice([v for v in voices if v is not previous])
            if k % 2 == 1 and rng.random() < 0.7:
                text = rng.choice(REPLIES)
            else:
                text = " ".join(rng.sample(SENTENCES, rng.choice((1, 2))))
            script.append((voice, text))
            previous = voice
        gaps = tuple(rng.uniform(0.2, 0.8) for _ in range(7))
        made = conversation(script, work_dir / f"{name}.wav", gaps=gaps)
        files.append((made.wav, made.rttm))
    return files


def load_sets(work_dir: Path, held_out: bool = False) -> dict[str, list[tuple[Path, Path]]]:
    """(wav, rttm) pairs of each set, generated into ``work_dir``; with ``held_out``, two more sets that no
    constant was chosen on first: twenty more orders of the re-arranged conversation, and :func:`replies_set`."""
    from tune_diarization import build_set

    from tests import media
    from tests.media_conversation import rearranged_conversation

    tuning = [(c.wav, c.rttm) for c in build_set(work_dir)]
    rearranged = [rearranged_conversation(work_dir / f"conversation{seed}.wav", seed) for seed in SEEDS]
    sets = {
        "sample": [(media.SAMPLE_WAV, media.SAMPLE_RTTM)],
        "tuning": tuning,
        "rearranged": [(c.wav, c.rttm) for c in rearranged],
    }
    if held_out:
        more = [rearranged_conversation(work_dir / f"conversation{seed}.wav", seed) for seed in HELD_OUT_SEEDS]
        sets["rearranged 5-24"] = [(c.wav, c.rttm) for c in more]
        sets["replies"] = replies_set(work_dir)
    return sets


def evaluate(pipeline, sets, vad: bool = True) -> dict:
    """DER and seconds per set for one pipeline; with ``vad``, the file carries silero-vad's speech regions, as
    in ``whisper-subtitler transcribe`` (the VAD's time is not counted)."""
    import torch
    from pyannote.core import Segment
    from pyannote.database.util import load_rttm
    from pyannote.metrics.diarization import DiarizationErrorRate

    from tests.media_speech import read_wav
    from whisper_subtitler.diarize import pyannote_compat

    result = {}
    for name, files in sets.items():
        metric = DiarizationErrorRate(collar=0.0, skip_overlap=False)
        seconds = 0.0
        speakers = {}
        for wav, rttm in files:
            reference = load_rttm(str(rttm))[wav.stem]
            samples = read_wav(wav)
            file = {"waveform": torch.from_numpy(samples).unsqueeze(0), "sample_rate": 16_000, "uri": wav.stem}
            if vad:
                from whisper_subtitler.vad import speech_regions

                file["speech"] = speech_regions(samples)
            started = time.perf_counter()
            with pyannote_compat.stdout_to_log(), pyannote_compat.quiet_pyannote_warnings():
                hypothesis = pipeline(file).speaker_diarization
            seconds += time.perf_counter() - started
            extent = reference.get_timeline().extent() | hypothesis.get_timeline().extent()
            metric(reference, hypothesis, uem=Segment(0.0, max(extent.end, len(samples) / 16_000)))
            speakers[wav.stem] = len(hypothesis.labels())
        result[name] = {"der": round(abs(metric), 4), "seconds": round(seconds, 2), "speakers_found": speakers}
        log.info("  %s: DER %.2f %% in %.1f s %s", name, 100 * abs(metric), seconds, speakers)
    return result


def reassign_grid(sets) -> dict:
    """DER per set, regions changed and regions changed for the worse, for each setting of a grid over
    :mod:`whisper_subtitler.diarize.reassign`'s constants (margin x max_region, then max_turns x max_turn_seconds
    at the default margin and max_region), from one diarization per file without the step.

    A change is for the worse when the region's new speaker is not, under the optimal mapping of the file's speakers
    to the reference's (pyannote.metrics), the reference speaker who speaks longest in the region."""
    from dataclasses import replace

    import torch
    from pyannote.core import Segment
    from pyannote.database.util import load_rttm
    from pyannote.metrics.diarization import DiarizationErrorRate

    from tests.media_speech import read_wav
    from whisper_subtitler.diarize import pyannote_compat
    from whisper_subtitler.diarize.embedded import OfflineSpeakerDiarization, tight_speech
    from whisper_subtitler.diarize.reassign import Settings, reassign_short_regions
    from whisper_subtitler.vad import speech_regions

    pipeline = OfflineSpeakerDiarization(reassign=False)
    model = pipeline._embedding.model_
    diarized = {}
    for name, files in sets.items():
        for wav, rttm in files:
            samples = read_wav(wav)
            file = {"waveform": torch.from_numpy(samples).unsqueeze(0), "sample_rate": 16_000, "uri": wav.stem}
            file["speech"] = speech_regions(samples)
            with pyannote_compat.stdout_to_log(), pyannote_compat.quiet_pyannote_warnings():
                output = pipeline(file)
            reference = load_rttm(str(rttm))[wav.stem]
            diarized[wav] = (file, output, tight_speech(file), reference, len(samples) / 16_000)
        log.info("  %s: diarized", name)
    base = Settings()
    grid = [("none", None), ("default", base)]
    grid += [
        (f"max_region {v} margin {m}", replace(base, max_region=v, margin=m))
        for v in (1.0, 1.25, 1.5, 1.75, 2.0, 2.5)
        for m in (0.0, 0.025, 0.05, 0.075, 0.1, 0.15)
    ]
    grid += [
        (f"max_turns {k} max_turn_seconds {t}", replace(base, max_turns=k, max_turn_seconds=t))
        for k in (2, 3, 4, 6, 8)
        for t in (2.0, 3.0, 4.0, 6.0)
    ]
    results = {}
    for label, settings in grid:
        row = {}
        for name, files in sets.items():
            metric = DiarizationErrorRate(collar=0.0, skip_overlap=False)
            changed = worse = 0
            for wav, _ in files:
                file, output, speech, reference, duration = diarized[wav]
                hypothesis = output.speaker_diarization
                if settings is not None:
                    new = reassign_short_regions(output, file["waveform"], 16_000, speech, model, settings)
                    mapping = metric.optimal_mapping(reference, hypothesis)
                    for start, end in speech:
                        region = Segment(start, end)
                        after = new.speaker_diarization.crop(region)
                        if after == hypothesis.crop(region):
                            continue
                        changed += 1
                        truth = reference.crop(region)
                        spoken = {label: truth.label_duration(label) for label in truth.labels()}
                        (speaker,) = after.labels()
                        worse += bool(spoken) and mapping.get(speaker, speaker) != max(spoken, key=spoken.get)
                    hypothesis = new.speaker_diarization
                extent = reference.get_timeline().extent() | hypothesis.get_timeline().extent()
                metric(reference, hypothesis, uem=Segment(0.0, max(extent.end, duration)))
            row[name] = {"der": round(abs(metric), 4), "regions_changed": changed, "for_the_worse": worse}
        results[label] = row
        log.info(
            "%s: %s",
            label,
            {n: f"{100 * r['der']:.2f} % ({r['regions_changed']}, {r['for_the_worse']} worse)" for n, r in row.items()},
        )
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", default="", help="window steps (fraction of the window) to try, pooled")
    parser.add_argument("--blocks", default="", help="block lengths (in windows) to try for pooled embeddings")
    parser.add_argument("--no-stock", action="store_true", help="leave out pyannote's stock embedding")
    parser.add_argument("--no-reassign", action="store_true", help="add the default without the re-assignment")
    parser.add_argument("--reassign-grid", action="store_true", help="only the grid over the re-assignment's constants")
    parser.add_argument("--held-out", action="store_true", help="add the held-out sets (more orders, short replies)")
    parser.add_argument("--work-dir", type=Path, help="where to write the generated audio (default: a temp dir)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)

    from whisper_subtitler.diarize.embedded import SEGMENTATION_STEP, OfflineSpeakerDiarization

    configs = [("default", {})]
    if args.no_reassign:
        configs.append(("no reassign", {"reassign": False}))
    if not args.no_stock:
        configs.append(("stock", {"fast": False}))
    configs += [(f"step {s}", {"segmentation_step": float(s)}) for s in args.steps.split(",") if s]
    configs += [(f"blocks {b}", {"block_windows": float(b)}) for b in args.blocks.split(",") if b]
    with tempfile.TemporaryDirectory() as tmp:
        work_dir = args.work_dir or Path(tmp)
        work_dir.mkdir(parents=True, exist_ok=True)
        sets = load_sets(work_dir, held_out=args.held_out)
        if args.reassign_grid:
            json.dump({"reassign_grid": reassign_grid(sets)}, sys.stdout, indent=2)
            print()
            return 0
        results = {}
        for name, kwargs in configs:
            log.info("%s %s", name, kwargs)
            pipeline = OfflineSpeakerDiarization(**kwargs)
            results[name] = {
                "settings": {"segmentation_step": pipeline.segmentation_step, **kwargs},
                **evaluate(pipeline, sets, vad=name != "stock"),
            }
    json.dump({"default_step": SEGMENTATION_STEP, "results": results}, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
