#!/usr/bin/env python3
"""Diarization error rate of the embedded offline pipeline on three sets, for one or more configurations.

    .venv/bin/python scripts/eval_diarization.py                         # the default and the stock pipeline
    .venv/bin/python scripts/eval_diarization.py --steps 0.1,0.2,0.3    # the window step, pooled embeddings
    .venv/bin/python scripts/eval_diarization.py --no-stock --no-reassign  # with and without the re-assignment
    .venv/bin/python scripts/eval_diarization.py --reassign-grid         # the re-assignment's constants, a grid

Sets: pyannote's real ``sample.wav`` against its ``sample.rttm``; the tuning set of
``scripts/tune_diarization.py`` (generated espeak-ng conversations of one, two and three voices); the real
conversation re-arranged from the sample's utterances with quick turn-taking, five orders
(``tests/media_conversation.py``, seeds 0-4; reference from the STM times).
DER is pyannote.metrics' diarization error rate, no collar, overlapped speech scored, accumulated over the files
of a set. ``default`` is the pipeline as ``transcribe --diarize`` runs it (with the VAD's speech regions);
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


def load_sets(work_dir: Path) -> dict[str, list[tuple[Path, Path]]]:
    """(wav, rttm) pairs of each set, generated into ``work_dir``."""
    from tune_diarization import build_set

    from tests import media
    from tests.media_conversation import rearranged_conversation

    tuning = [(c.wav, c.rttm) for c in build_set(work_dir)]
    rearranged = [rearranged_conversation(work_dir / f"conversation{seed}.wav", seed) for seed in SEEDS]
    return {
        "sample": [(media.SAMPLE_WAV, media.SAMPLE_RTTM)],
        "tuning": tuning,
        "rearranged": [(c.wav, c.rttm) for c in rearranged],
    }


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
    """DER per set and regions changed for each setting of a grid over :mod:`whisper_subtitler.diarize.reassign`'s
    constants (one varied at a time around the defaults, plus margin x max_region), from one diarization per file."""
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
        for k in (2, 4, 8)
        for t in (2.0, 3.0, 4.0, 6.0)
    ]
    results = {}
    for label, settings in grid:
        row = {}
        for name, files in sets.items():
            metric = DiarizationErrorRate(collar=0.0, skip_overlap=False)
            changed = 0
            for wav, _ in files:
                file, output, speech, reference, duration = diarized[wav]
                hypothesis = output.speaker_diarization
                if settings is not None:
                    new = reassign_short_regions(output, file["waveform"], 16_000, speech, model, settings)
                    changed += sum(
                        1
                        for start, end in speech
                        if new.speaker_diarization.crop(Segment(start, end)) != hypothesis.crop(Segment(start, end))
                    )
                    hypothesis = new.speaker_diarization
                extent = reference.get_timeline().extent() | hypothesis.get_timeline().extent()
                metric(reference, hypothesis, uem=Segment(0.0, max(extent.end, duration)))
            row[name] = {"der": round(abs(metric), 4), "regions_changed": changed}
        results[label] = row
        log.info("%s: %s", label, {n: f"{100 * r['der']:.2f} % ({r['regions_changed']})" for n, r in row.items()})
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", default="", help="window steps (fraction of the window) to try, pooled")
    parser.add_argument("--blocks", default="", help="block lengths (in windows) to try for pooled embeddings")
    parser.add_argument("--no-stock", action="store_true", help="leave out pyannote's stock embedding")
    parser.add_argument("--no-reassign", action="store_true", help="add the default without the re-assignment")
    parser.add_argument("--reassign-grid", action="store_true", help="only the grid over the re-assignment's constants")
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
        sets = load_sets(work_dir)
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
