#!/usr/bin/env python3
"""Tune the clustering threshold of the embedded offline diarization pipeline (segmentation-3.0 + CAM++).

The tuning material is generated here with espeak-ng (tests/media_speech.py): conversations of two and three
synthetic voices and one monologue (which punishes a threshold that splits one speaker in two), with other
sentences than the tests' clip. pyannote's sample.wav, the evaluation sample, is never used for tuning.

Segmentation and embeddings are computed once per file (pyannote's training cache: ``pipeline.training =
True``); each threshold then only re-runs clustering and reconstruction. DER is pyannote.metrics'
diarization error rate, no collar, overlaps scored, accumulated over all files.

    .venv/bin/python scripts/tune_diarization.py [--work-dir DIR] > tune.json

Prints JSON on stdout: per threshold the DER and the number of speakers found per file, and the best
threshold (lowest DER; the middle of a tie). Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.media_speech import VOICE_A, VOICE_B, VOICE_C, VOICE_D, conversation, read_wav  # noqa: E402

SENTENCES = (
    "The train to the coast leaves every hour from platform four.",
    "I have never seen so many people at the farmers market.",
    "Could you tell me where the nearest pharmacy is?",
    "We should probably paint the kitchen before the winter.",
    "My brother repairs old bicycles in his garage.",
    "The library closes early on Saturdays.",
    "That film was much longer than I expected.",
    "Please remember to water the plants while I am away.",
    "The results of the survey will be published next week.",
    "I think the bridge was built about a hundred years ago.",
    "Our neighbours have adopted two small grey cats.",
    "The soup needs a little more salt and some pepper.",
    "Have you finished reading the report from the committee?",
    "It rained all afternoon so the match was cancelled.",
    "The museum has a new exhibition about ancient ships.",
    "I usually walk to work when the weather is nice.",
    "The software update fixed most of the problems.",
    "Let us meet at the cafe across from the station.",
    "She has been learning to play the violin since March.",
    "The price of coffee has gone up again this year.",
    "Nobody expected the small team to win the tournament.",
    "We need three more chairs for the guests tonight.",
    "The mountain road is closed because of the snow.",
    "He wrote the whole book in less than six months.",
    "Turn left at the church and then follow the river.",
    "The children built a castle out of cardboard boxes.",
    "I will send you the photographs from the wedding.",
    "The bakery on the corner makes excellent bread.",
    "Do you know how long the repairs will take?",
    "The concert starts at eight but the doors open at seven.",
    "Most of the apples fell from the tree during the storm.",
    "Our flight was delayed by almost three hours.",
    "The garden looks wonderful after all that rain.",
    "I am not sure the printer is connected to the network.",
    "The teacher asked everyone to bring a calculator.",
    "It takes twenty minutes to boil the potatoes.",
    "The old lighthouse is now a small hotel.",
    "Why did the meeting move to Thursday afternoon?",
    "My grandmother still writes letters by hand.",
    "The company opened a new office in the north.",
)

# (name, voices, number of turns): the tuning set.
SETUPS = (
    ("two_ab", (VOICE_A, VOICE_B), 12),
    ("two_cd", (VOICE_C, VOICE_D), 12),
    ("two_ac", (VOICE_A, VOICE_C), 12),
    ("three_bcd", (VOICE_B, VOICE_C, VOICE_D), 15),
    ("one_c", (VOICE_C,), 8),
)
THRESHOLDS = tuple(round(0.30 + 0.025 * k, 3) for k in range(37))  # 0.30 .. 1.20 (cosine distance)

log = logging.getLogger("tune_diarization")


def build_set(work_dir: Path, seed: int = 7):
    """Generate the tuning conversations; turns are one or two sentences, speakers take turns at random."""
    rng = random.Random(seed)
    conversations = []
    for name, voices, n_turns in SETUPS:
        script, previous = [], None
        for _ in range(n_turns):
            voice = rng.choice([v for v in voices if v is not previous] or list(voices))
            text = " ".join(rng.sample(SENTENCES, rng.choice((1, 1, 2))))
            script.append((voice, text))
            previous = voice
        gaps = tuple(rng.uniform(0.3, 1.2) for _ in range(5))
        conversations.append(conversation(script, work_dir / f"{name}.wav", gaps=gaps))
        log.info("generated %s: %.1f s, %d speakers", name, conversations[-1].duration, len(voices))
    return conversations


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work-dir", type=Path, help="where to write the generated audio (default: a temp dir)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)

    import torch
    from pyannote.core import Annotation, Segment
    from pyannote.database.util import load_rttm
    from pyannote.metrics.diarization import DiarizationErrorRate

    from whisper_subtitler.diarize import pyannote_compat
    from whisper_subtitler.diarize.embedded import OfflineSpeakerDiarization

    with tempfile.TemporaryDirectory() as tmp:
        work_dir = args.work_dir or Path(tmp)
        work_dir.mkdir(parents=True, exist_ok=True)
        conversations = build_set(work_dir)
        pipeline = OfflineSpeakerDiarization()
        pipeline.training = True  # cache segmentations and embeddings in each file dict
        files = []
        for c in conversations:
            reference = load_rttm(str(c.rttm))[c.wav.stem]
            waveform = torch.from_numpy(read_wav(c.wav)).unsqueeze(0)
            # The same dict on every call: pyannote stores its training cache in it.
            files.append(({"waveform": waveform, "sample_rate": 16_000, "uri": c.wav.stem}, reference, c.duration))

        results = []
        for threshold in THRESHOLDS:
            params = pipeline.default_parameters()
            params["clustering"]["threshold"] = threshold
            pipeline.instantiate(params)
            metric = DiarizationErrorRate(collar=0.0)
            found, per_file = {}, {}
            started = time.perf_counter()
            for file, reference, duration in files:
                with pyannote_compat.stdout_to_log(), pyannote_compat.quiet_pyannote_warnings():
                    hypothesis: Annotation = pipeline(file).speaker_diarization
                per_file[file["uri"]] = round(metric(reference, hypothesis, uem=Segment(0.0, duration)), 4)
                found[file["uri"]] = len(hypothesis.labels())
            results.append(
                {
                    "threshold": threshold,
                    "der": round(abs(metric), 4),
                    "der_per_file": per_file,
                    "speakers_found": found,
                }
            )
            log.info(
                "threshold %.3f: DER %.2f %% %s (%.1f s)",
                threshold,
                100 * abs(metric),
                found,
                time.perf_counter() - started,
            )

    best_der = min(r["der"] for r in results)
    ties = [r["threshold"] for r in results if r["der"] == best_der]
    best = ties[len(ties) // 2]
    json.dump(
        {
            "material": {name: [v.label for v in voices] for name, voices, _ in SETUPS},
            "expected_speakers": {name: len(voices) for name, voices, _ in SETUPS},
            "results": results,
            "best_threshold": best,
            "best_der": best_der,
        },
        sys.stdout,
        indent=2,
    )
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
