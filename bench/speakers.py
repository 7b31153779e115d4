#!/usr/bin/env python3
"""Speakers on the evaluation set of ``bench/conversations.py``: DER, speakers found, WER, cpWER, and what lands in
the stretches where music or noise plays alone; per file, per group and split.

    python bench/conversations.py --out /tmp/speaker-set [--long]
    python bench/speakers.py --set /tmp/speaker-set --cv --out bench/records/speakers-short-regions.json   # make bench
    python bench/speakers.py --set /tmp/speaker-set --groups clean --splits held-out          # a part of it
    python bench/speakers.py --set /tmp/speaker-set --cv                                      # + the rule's grid

Each file is transcribed once as ``whisper-subtitler transcribe FILE --diarize`` does with default options (batched
decoding, Whisper base, CPU); the words and the VAD's speech regions are kept in ``--cache`` under a digest of the
WAV's bytes, so that later runs only diarize and score (about 2 s a file). Diarization is the embedded default
(``load_diarizer(DiarizationOptions())``) with the transcription's speech regions, as in a whole run; the words get
their speakers with ``speakers.assign_speakers`` after ``clean_transcript``, as the pipeline does.

Figures (both sides lower-cased, punctuation removed, ``tests.media.normalize``):

- ``der``: pyannote.metrics' diarization error rate, no collar, overlapped speech scored (accumulated over the
  files of a group); ``speakers_found`` against ``speakers``; ``der_collar`` the same with 0.25 s on each side of
  every reference turn edge unscored (NIST md-eval's collar, :data:`COLLAR`): what is left once the turns' edges are
  forgiven their imprecision, the references' own included; ``sample_references``: the two references that ship
  with ``sample.wav`` (its STM utterances, which every file is cut at and scored against, and its RTTM turns) scored
  against each other, how far two careful annotations of the same recording lie apart;
- ``wer`` and ``cpwer``: meeteval's cpWER (CHiME-6) with one speaker on both sides, and with the speakers;
  ``cpwer - wer`` is what speaker attribution adds;
- ``oracle_cpwer_minus_wer``: the same with the reference speaker turns in place of the diarization (the words get
  their speakers by the same rule): what attribution adds when the diarization is perfect, the part of
  ``cpwer - wer`` that comes from the transcript (overlapped sentences that Whisper merges into one, words it
  times far from where they are said); ``cpwer_over_oracle`` is the diarized cpWER minus that one, the diarization's
  own part (per file: mean and max);
- ``background_words`` and ``background_turn_s``: words whose middle lies in the stretches where music or noise
  plays alone (``background_only`` of the manifest), and diarized seconds there: both must be 0 (no cue, no
  speaker there);
- where the false alarm and the missed speech lie, the turns' and the VAD's edges against the utterances', and how
  early the words that open utterances start (``bench/turn_edges.py``; ``edges`` in the summary).

``--reference-tools`` adds, in the same run and on the same words, what the reference tools give: pyannote's own
``SpeakerDiarization`` with the same two models (segmentation-3.0 and CAM++, ``OfflineSpeakerDiarization(fast=False)``:
no speech regions, no re-count, no re-assignment) and whisperX's word-to-speaker rule (``assign_word_speakers``: the
speaker whose turns overlap the word longest, ``speakers.assign_speakers(rule="overlap")``), under ``reference_*``
in the summary.

Long files (group ``long``, ``--long``): diarization only, in a child process (peak RSS of that process: Python,
torch, both models and the whole waveform), DER and speakers found; ``--long-only`` runs only them.

Measurements behind a flag (``docs/diarization.md``, "Dialogue under music in the same channel"): ``--vad-threshold P``
transcribes with silero-vad's speech threshold at ``P`` (transcripts cached apart), ``--highpass HZ`` lets the
diarization hear each file through a high-pass filter; ``--trim-vad`` and ``--energy-edges`` move the turns' cut.

``--cv`` adds the word-to-speaker rule's constants chosen by cross-validation over the tuning split (folds by seed;
never a held-out file, ``conversations.check_tuning_seeds``) and scored on the held-out split.
Prints (or writes with ``--out``) one JSON document; progress on stderr.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import turn_edges  # noqa: E402
from common import peak_rss_bytes, write_json  # noqa: E402
from conversations import check_tuning_seeds  # noqa: E402

from tests.media_conversation import word_errors  # noqa: E402

log = logging.getLogger("bench.speakers")


# Part of the cache's file names: change it when the pipeline's transcripts change, so that no cached transcript
# of an older pipeline is scored as this one's (".p": words across pauses start after them, transcription/pauses.py).
TRANSCRIPT_VERSION = ".p"


def digest(path: Path) -> str:
    """The first 16 hex digits of the SHA-256 of ``path``'s bytes."""
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


class Transcriber:
    """Whisper base as ``transcribe`` runs it by default, loaded on first use; transcripts cached per WAV digest."""

    def __init__(self, cache: Path, language: str | None = None) -> None:
        self.cache = cache
        self.language = language  # forced for the whole file (``--language``); None: the default, detected
        self._pipeline = None

    def path(self, wav: Path) -> Path:
        """Where ``wav``'s transcript is cached."""
        forced = f".{self.language}" if self.language else ""
        vad = f".vad{VAD_THRESHOLD:g}" if VAD_THRESHOLD is not None else ""
        return self.cache / f"{digest(wav)}{forced}{vad}{TRANSCRIPT_VERSION}.transcript.json"

    def __call__(self, wav: Path) -> dict:
        """``{"transcript": transcript_to_dict(...), "speech": [[start, end], ...]}`` for ``wav``."""
        target = self.path(wav)
        if target.exists():
            return json.loads(target.read_text())
        from whisper_subtitler.audio import stream_audio
        from whisper_subtitler.writers.json import transcript_to_dict

        if self._pipeline is None:
            from whisper_subtitler import platform
            from whisper_subtitler.pipeline import Pipeline, RunOptions
            from whisper_subtitler.transcription import TranscribeOptions

            selection = platform.configure(
                gpu_backend="cpu", optimization_level=None, no_fallback=False, env_file=None, model=None
            )
            platform.apply_optimizations(selection)
            transcribe = TranscribeOptions(fp16=False, language=self.language)
            options = RunOptions(transcribe=transcribe, formats=(), diarization=None)
            self._pipeline = Pipeline(options, selection)
        transcribed = self._pipeline.transcribe(stream_audio(wav, piece_seconds=None))
        data = {
            "transcript": transcript_to_dict(transcribed.transcript),
            "speech": [list(r) for r in transcribed.speech],
        }
        self.cache.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(data))
        return data


# s unscored around each reference turn edge, in all (pyannote.metrics' ``collar``): 0.25 s on each side, NIST
# md-eval's ``-c 0.25`` (the RT evaluations' forgiveness collar), for ``der_collar``
COLLAR = 0.5


def read_rttm(path: Path):
    """pyannote ``Annotation`` of an RTTM file (one file in it)."""
    from pyannote.core import Annotation, Segment

    annotation = Annotation()
    for k, line in enumerate(path.read_text().splitlines()):
        f = line.split()
        annotation[Segment(float(f[3]), float(f[3]) + float(f[4])), k] = f[7]
    return annotation


def as_annotation(turns):
    """pyannote ``Annotation`` of ``SpeakerTurn`` s."""
    from pyannote.core import Annotation, Segment

    annotation = Annotation()
    for k, t in enumerate(turns):
        annotation[Segment(t.start, t.end), k] = t.speaker
    return annotation


def der_parts(reference, hypothesis, duration: float, collar: float = 0.0) -> dict:
    """pyannote.metrics' DER components (seconds) of ``hypothesis`` against ``reference``; no collar by default, or
    ``collar`` seconds in all, centred on every reference turn edge, left unscored (:data:`COLLAR`)."""
    from pyannote.core import Segment
    from pyannote.metrics.diarization import DiarizationErrorRate

    metric = DiarizationErrorRate(collar=collar, skip_overlap=False)
    extent = reference.get_timeline().extent() | hypothesis.get_timeline().extent() if hypothesis else None
    end = max(extent.end if extent else 0.0, duration)
    parts = metric(reference, hypothesis, uem=Segment(0.0, end), detailed=True)
    return {k: float(parts[k]) for k in ("total", "false alarm", "missed detection", "confusion")}


def error_seconds(parts: dict) -> float:
    """The seconds of error in :func:`der_parts`' components: false alarm, missed detection and confusion."""
    return parts["false alarm"] + parts["missed detection"] + parts["confusion"]


def sample_references() -> dict:
    """How far the two references that ship with pyannote's ``sample.wav`` are from each other: the utterances of
    ``sample.stm`` (whose spans every file of the set is cut at and scored against) scored as a diarization against
    ``sample.rttm``'s turns, and the other way round, no collar and with :data:`COLLAR` (DER and seconds)."""
    from tests.media import SAMPLE_STM, SAMPLE_WAV
    from tests.media_conversation import read_stm
    from whisper_subtitler.types import SpeakerTurn

    stm = as_annotation([SpeakerTurn(u.start, u.end, u.speaker) for u in read_stm(SAMPLE_STM)])
    rttm = read_rttm(SAMPLE_WAV.with_suffix(".rttm"))
    out = {}
    for name, reference, hypothesis in (("stm_against_rttm", rttm, stm), ("rttm_against_stm", stm, rttm)):
        for suffix, collar in (("", 0.0), ("_collar", COLLAR)):
            parts = der_parts(reference, hypothesis, 0.0, collar=collar)  # scored from 0 to the last turn's end
            out[name + suffix] = {"der": round(error_seconds(parts) / parts["total"], 4)} | {
                k: round(v, 3) for k, v in parts.items()
            }
    return out


def assign(data: dict, turns, exclusive, rule: str = "boundaries", **constants):
    """The words of a cached transcript with their speakers, as the pipeline assigns them (``rule``:
    ``speakers.assign_speakers``'); ``constants`` override ``speakers``' module constants (the cross-validation)."""
    from whisper_subtitler import speakers
    from whisper_subtitler.cues.guards import clean_transcript
    from whisper_subtitler.writers.json import transcript_from_dict

    transcript = clean_transcript(transcript_from_dict(data["transcript"]))
    saved = {name: getattr(speakers, name) for name in constants}
    try:
        for name, value in constants.items():
            setattr(speakers, name, value)
        assigned = speakers.assign_speakers(transcript, turns, exclusive=exclusive, rule=rule)
    finally:
        for name, value in saved.items():
            setattr(speakers, name, value)
    return [(w.speaker, w.start, w.end, w.text) for w in assigned.words]


# --vad-threshold: silero-vad's speech threshold for the transcription's speech regions (None: vad.VadOptions'); a
# measurement
VAD_THRESHOLD: float | None = None

# --highpass: the diarization hears the file through a high-pass filter at this many Hz (0: as it is); a measurement
HIGHPASS_HZ = 0.0


def highpass(samples, hz: float, order: int = 4):
    """``samples`` (16 kHz float32) through a zero-phase Butterworth high-pass filter of ``order`` at ``hz``
    (``scipy.signal.sosfiltfilt``), float32."""
    import numpy as np
    from scipy.signal import butter, sosfiltfilt

    sos = butter(order, hz, btype="highpass", fs=16_000, output="sos")
    return np.ascontiguousarray(sosfiltfilt(sos, samples), dtype=np.float32)


def in_stretches(start: float, end: float, stretches) -> float:
    """Seconds of ``[start, end]`` inside the ``(start, end)`` stretches."""
    return sum(max(0.0, min(end, b) - max(start, a)) for a, b in stretches)


def words_in(words, stretches) -> int:
    """How many ``(speaker, start, end, text)`` words have their middle inside the ``(start, end)`` stretches."""
    return sum(in_stretches((a + b) / 2, (a + b) / 2 + 1e-6, stretches) > 0 for _, a, b, _ in words)


def evaluate_file(entry: dict, folder: Path, transcriber: Transcriber, diarizer, stock=None) -> dict:
    """Every figure of one file of the manifest; with ``stock`` (pyannote's own pipeline), also the reference
    tools' under ``reference_tools``."""
    from tests.media_conversation import read_stm
    from tests.media_speech import read_wav
    from whisper_subtitler.diarize.embedded import TRIM_VAD
    from whisper_subtitler.types import Audio, SpeakerTurn
    from whisper_subtitler.vad import speech_regions

    wav = folder / entry["wav"]
    data = transcriber(wav)
    samples = read_wav(wav)
    started = time.perf_counter()
    heard = highpass(samples, HIGHPASS_HZ) if HIGHPASS_HZ else samples
    diarization = diarizer.diarize(Audio(heard, 16_000, wav), speech=[tuple(r) for r in data["speech"]])
    seconds = time.perf_counter() - started
    turns = tuple(diarization.turns)
    exclusive = tuple(diarization.exclusive_turns)
    reference = read_stm(folder / entry["stm"])
    reference_turns, our_turns = read_rttm(folder / entry["rttm"]), as_annotation(turns)
    words = assign(data, turns, exclusive)
    oracle = assign(data, tuple(SpeakerTurn(u.start, u.end, u.speaker) for u in reference), None)
    background = entry["background_only"]
    row: dict = {}
    if stock is not None:  # pyannote's pipeline, words by whisperX's rule (overlapping turns, as whisperX reads them)
        theirs = tuple(stock.diarize(Audio(samples, 16_000, wav)).turns)
        their_words = assign(data, theirs, None, rule="overlap")
        their_turns = as_annotation(theirs)
        row["reference_tools"] = {
            "speakers_found": len({t.speaker for t in theirs}),
            "der_parts": der_parts(reference_turns, their_turns, entry["duration"]),
            "der_parts_collar": der_parts(reference_turns, their_turns, entry["duration"], collar=COLLAR),
            **word_errors(their_words, reference),
            "background_words": words_in(their_words, background),
        }
    return {
        "name": entry["name"],
        "split": entry["split"],
        "group": entry["group"],
        "seed": entry["seed"],
        "duration": round(entry["duration"], 2),
        "speakers": entry["speakers"],
        "speakers_found": len({t.speaker for t in turns}),
        "der_parts": der_parts(reference_turns, our_turns, entry["duration"]),
        "der_parts_collar": der_parts(reference_turns, our_turns, entry["duration"], collar=COLLAR),
        **word_errors(words, reference),
        "oracle_cp_errors": word_errors(oracle, reference)["cp_errors"],
        "background_words": words_in(words, background),
        "background_turn_s": round(sum(in_stretches(t.start, t.end, background) for t in turns), 3),
        "diarize_s": round(seconds, 2),
        **turn_edges.edge_figures(
            [(u.start, u.end) for u in reference],
            [(t.start, t.end) for t in turns],
            speech_regions(samples, TRIM_VAD),
            [(a, (a + b) / 2) for _, a, b, _ in words],
            entry["duration"],
        ),
        "_turns": [[t.start, t.end, t.speaker] for t in turns],
        "_exclusive": [[t.start, t.end, t.speaker] for t in exclusive],
        "_cache": str(transcriber.path(wav)),
        "_ref": [[u.speaker, u.start, u.end, u.text] for u in reference],
        "_keep": SpeakerTurn,  # dropped below
    } | row


def summarise(rows: list[dict]) -> dict:
    """Per (split, group): DER (accumulated), cpWER - WER (per file: max and mean; pooled), speakers right."""
    out: dict = {}
    for (split, group), part in itertools.groupby(
        sorted(rows, key=lambda r: (r["split"], r["group"])), key=lambda r: (r["split"], r["group"])
    ):
        part = list(part)
        out[f"{split}/{group}"] = {
            "files": len(part),
            **figures(part),
            "background_turn_s": round(sum(r.get("background_turn_s", 0.0) for r in part), 3),
        }
        if "_openers_s" in part[0]:
            out[f"{split}/{group}"]["edges"] = turn_edges.summary(part)
        theirs = [r["reference_tools"] | {"speakers": r["speakers"]} for r in part if "reference_tools" in r]
        if theirs:
            out[f"{split}/{group}"] |= {f"reference_{k}": v for k, v in figures(theirs).items() if k != "wer"}
    return out


def figures(part: list[dict]) -> dict:
    """DER (accumulated over ``part``'s files) and the worst file's, speaker counts, WER, cpWER - WER per file (mean
    and max) and words in the background-only stretches, of rows with ``der_parts``, ``speakers`` and
    ``speakers_found`` (and, when transcribed, ``errors``, ``cp_errors``, ``ref_words``, ``background_words``)."""
    total = sum(r["der_parts"]["total"] for r in part)
    errors = sum(error_seconds(r["der_parts"]) for r in part)
    collared = [r["der_parts_collar"] for r in part if "der_parts_collar" in r]
    collar_total = sum(p["total"] for p in collared)
    collar_errors = sum(error_seconds(p) for p in collared)
    words = sum(r.get("ref_words", 0) for r in part)
    gaps = [(r["cp_errors"] - r["errors"]) / r["ref_words"] for r in part if r.get("ref_words")]
    oracle = [(r["oracle_cp_errors"] - r["errors"]) / r["ref_words"] for r in part if "oracle_cp_errors" in r]
    over = [(r["cp_errors"] - r["oracle_cp_errors"]) / r["ref_words"] for r in part if "oracle_cp_errors" in r]
    return {
        "der": round(errors / total, 4) if total else None,
        "der_max": round(max(file_der(r) for r in part), 4),
        **({"der_collar": round(collar_errors / collar_total, 4)} if collar_total else {}),
        "speakers_right": sum(r["speakers_found"] == r["speakers"] for r in part),
        "speakers_found": sorted({r["speakers_found"] for r in part}),
        "wer": round(sum(r.get("errors", 0) for r in part) / words, 4) if words else None,
        "cpwer_minus_wer_mean": round(sum(gaps) / len(gaps), 4) if gaps else None,
        "cpwer_minus_wer_max": round(max(gaps), 4) if gaps else None,
        **(
            {
                "oracle_cpwer_minus_wer_mean": round(sum(oracle) / len(oracle), 4),
                "oracle_cpwer_minus_wer_max": round(max(oracle), 4),
                "cpwer_over_oracle_mean": round(sum(over) / len(over), 4),
                "cpwer_over_oracle_max": round(max(over), 4),
            }
            if oracle
            else {}
        ),
        "background_words": sum(r.get("background_words", 0) for r in part),
    }


def file_der(row: dict) -> float:
    p = row["der_parts"]
    return error_seconds(p) / p["total"] if p["total"] else 0.0


def cross_validate(rows: list[dict], folds: int = 4) -> dict:
    """The word-to-speaker rule's constants chosen by cross-validation: for each of ``folds`` folds of the tuning
    split's seeds, the grid point with the fewest speaker errors (cpWER - WER, pooled) on the other folds, scored on
    that fold; then the point chosen on the whole tuning split, scored on the held-out split. Needs the rows of
    :func:`evaluate_file` (with the diarizations)."""
    from tests.media_conversation import Utterance
    from whisper_subtitler.types import SpeakerTurn

    grid_axes = {
        "INSIDE_COST": (0.25, 0.5, 1.0, 1.5, 2.0),
        "CLAUSE_COST": (0.1, 0.2, 0.4, 0.8),
        "PAUSE": (0.3, 0.5, 0.8),
        "OVERLAP_SHARE": (0.0, 0.5, 1.0),
    }
    grid = [dict(zip(grid_axes, values)) for values in itertools.product(*grid_axes.values())]
    tuning = [r for r in rows if r["split"] == "tuning" and "ref_words" in r]
    held = [r for r in rows if r["split"] == "held-out" and "ref_words" in r]
    check_tuning_seeds(r["seed"] for r in tuning)
    cached = {r["name"]: json.loads(Path(r["_cache"]).read_text()) for r in tuning + held}

    def speaker_errors(row: dict, point: dict) -> tuple[int, int]:
        turns = tuple(SpeakerTurn(a, b, s) for a, b, s in row["_turns"])
        exclusive = tuple(SpeakerTurn(a, b, s) for a, b, s in row["_exclusive"])
        words = assign(cached[row["name"]], turns, exclusive, **point)
        result = word_errors(words, [Utterance(*u) for u in row["_ref"]])
        return result["cp_errors"] - result["errors"], result["ref_words"]

    table = {r["name"]: [speaker_errors(r, point) for point in grid] for r in tuning + held}

    def pooled(names, k):
        errors = sum(table[n][k][0] for n in names)
        return errors / max(1, sum(table[n][k][1] for n in names))

    seeds = sorted({r["seed"] for r in tuning})
    fold_of = {seed: i % folds for i, seed in enumerate(seeds)}
    per_fold = []
    for fold in range(folds):
        train = [r["name"] for r in tuning if fold_of[r["seed"]] != fold]
        test = [r["name"] for r in tuning if fold_of[r["seed"]] == fold]
        best = min(range(len(grid)), key=lambda k: (pooled(train, k), k))
        per_fold.append({"fold": fold, "chosen": grid[best], "train": round(pooled(train, best), 4),
                         "test": round(pooled(test, best), 4)})  # fmt: skip
    names = [r["name"] for r in tuning]
    best = min(range(len(grid)), key=lambda k: (pooled(names, k), k))
    from whisper_subtitler import speakers

    default = grid.index({name: getattr(speakers, name) for name in grid_axes})  # the module's constants
    held_names = [r["name"] for r in held]
    return {
        "grid": grid_axes,
        "folds": per_fold,
        "cv_test_mean": round(sum(f["test"] for f in per_fold) / folds, 4),
        "chosen_on_tuning": grid[best],
        "tuning_errors_chosen": round(pooled(names, best), 4),
        "held_out_chosen": round(pooled(held_names, best), 4),
        "held_out_default": round(pooled(held_names, default), 4),
        "tuning_default": round(pooled(names, default), 4),
        "held_out_per_file_default": {n: table[n][default] for n in held_names},
        "held_out_per_file_chosen": {n: table[n][best] for n in held_names},
        "points_tied_with_best_on_tuning": sum(pooled(names, k) == pooled(names, best) for k in range(len(grid))),
    }


def long_child(wav: Path, rttm: Path) -> dict:
    """Diarize a long file in this process as ``transcribe`` does (speech regions of the VAD; the host allocator
    step); speakers found, DER, seconds, peak RSS."""
    from tests.media_speech import read_wav
    from whisper_subtitler.diarize import DiarizationOptions, load_diarizer
    from whisper_subtitler.platform import allocator
    from whisper_subtitler.types import Audio
    from whisper_subtitler.vad import speech_regions

    if allocator.why_not(os.environ) is None:
        allocator.apply()
    samples = read_wav(wav)
    speech = speech_regions(samples)
    diarizer = load_diarizer(DiarizationOptions(), "cpu")
    started = time.perf_counter()
    diarization = diarizer.diarize(Audio(samples, 16_000, wav), speech=speech)
    seconds = time.perf_counter() - started
    turns = tuple(diarization.turns)
    parts = der_parts(read_rttm(rttm), as_annotation(turns), len(samples) / 16_000)
    return {
        "speakers_found": len({t.speaker for t in turns}),
        "der_parts": parts,
        "diarize_s": round(seconds, 1),
        "peak_rss_bytes": peak_rss_bytes(),
    }


def evaluate_long(entry: dict, folder: Path) -> dict:
    """:func:`long_child` in its own process (a clean peak RSS)."""
    code = (
        "import json, sys; sys.path.insert(0, 'bench'); from pathlib import Path; import speakers; "
        f"print(json.dumps(speakers.long_child(Path({str(folder / entry['wav'])!r}), "
        f"Path({str(folder / entry['rttm'])!r}))))"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(done.stderr[-2000:])
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return {"name": entry["name"], "split": entry["split"], "group": "long", "seed": entry["seed"],
            "duration": round(entry["duration"], 1), "speakers": entry["speakers"], **result}  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", type=Path, required=True, help="the folder bench/conversations.py wrote")
    parser.add_argument("--out", type=Path, help="write the JSON here (default: stdout)")
    parser.add_argument("--groups", default="", help="comma-separated groups to run (default: all)")
    parser.add_argument("--splits", default="tuning,held-out", help="comma-separated splits")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/whisper-subtitler-speakers"), help="transcripts")
    parser.add_argument("--cv", action="store_true", help="cross-validate the word-to-speaker rule's constants")
    parser.add_argument("--long", action="store_true", help="also the long files (when the set has them)")
    parser.add_argument("--long-only", action="store_true", help="only the long files")
    parser.add_argument("--label", default="", help="a label stored in the JSON (e.g. before/after)")
    parser.add_argument("--cached-only", action="store_true", help="only the files already transcribed in --cache")
    parser.add_argument(
        "--reference-tools", action="store_true",
        help="also pyannote's own pipeline (same models) with whisperX's word-to-speaker rule, on the same words",
    )  # fmt: skip
    parser.add_argument(
        "--trim-vad",
        metavar="THRESHOLD:PAD_MS[:END_THRESHOLD]",
        help="cut the speaker turns to silero-vad's speech at this threshold and padding (and end threshold) instead "
        "of diarize.embedded.TRIM_VAD's (a measurement, docs/diarization.md)",
    )
    parser.add_argument(
        "--energy-edges",
        metavar="DB:PERCENTILE:MAX_S",
        help="the turns' edges pulled in over frames up to DB dB over the PERCENTILE-th percentile of the background, "
        "at most MAX_S seconds (0: not at all), instead of diarize.edges' constants (a measurement, "
        "docs/diarization.md)",
    )
    parser.add_argument(
        "--highpass", type=float, default=0.0, metavar="HZ",
        help="the diarization hears each file through a high-pass filter at HZ (a measurement, docs/diarization.md)",
    )  # fmt: skip
    parser.add_argument(
        "--vad-threshold", type=float, metavar="P",
        help="silero-vad's speech threshold for the transcription's speech regions (default: vad.VadOptions'; a "
        "measurement, docs/diarization.md; transcripts cached apart)",
    )  # fmt: skip
    args = parser.parse_args()
    global HIGHPASS_HZ, VAD_THRESHOLD
    HIGHPASS_HZ = args.highpass
    if args.vad_threshold is not None:
        from whisper_subtitler import vad

        VAD_THRESHOLD = args.vad_threshold
        vad.speech_regions.__defaults__ = (vad.VadOptions(threshold=args.vad_threshold),)
    if args.energy_edges:
        from whisper_subtitler.diarize import edges

        try:
            db, percentile, max_s = (float(x) for x in args.energy_edges.split(":"))
        except ValueError:
            parser.error("--energy-edges takes DB:PERCENTILE:MAX_S")
        edges.ABOVE_BACKGROUND_DB, edges.BACKGROUND_PERCENTILE, edges.MAX_TRIM = db, percentile, max_s
    if args.trim_vad:
        from whisper_subtitler.diarize import embedded
        from whisper_subtitler.vad import VadOptions

        threshold, pad, *neg = args.trim_vad.split(":")
        if len(neg) > 1:
            parser.error("--trim-vad takes THRESHOLD:PAD_MS[:END_THRESHOLD]")
        embedded.TRIM_VAD = VadOptions(
            threshold=float(threshold), min_silence_duration_ms=embedded.TRIM_VAD.min_silence_duration_ms,
            speech_pad_ms=int(pad), neg_threshold=float(neg[0]) if neg else None,
        )  # fmt: skip
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    manifest = json.loads((args.set / "manifest.json").read_text())
    groups = {g for g in args.groups.split(",") if g}
    splits = {s for s in args.splits.split(",") if s}
    rows = []
    if not args.long_only:
        from whisper_subtitler.diarize import DiarizationOptions, load_diarizer

        transcriber = Transcriber(args.cache)
        diarizer = load_diarizer(DiarizationOptions(), "cpu")
        stock = None
        if args.reference_tools:
            from whisper_subtitler.diarize.embedded import OfflineSpeakerDiarization
            from whisper_subtitler.diarize.load import Diarizer

            stock = Diarizer(OfflineSpeakerDiarization(fast=False), DiarizationOptions(), "embedded")
        for entry in manifest:
            if entry["group"] == "long" or entry["split"] not in splits or (groups and entry["group"] not in groups):
                continue
            if args.cached_only and not transcriber.path(args.set / entry["wav"]).exists():
                continue
            row = evaluate_file(entry, args.set, transcriber, diarizer, stock)
            row.pop("_keep")
            rows.append(row)
            log.info(
                "%s: DER %.1f %%, %d/%d speakers, cpWER-WER %d/%d words, background %d words %.1f s",
                row["name"], 100 * file_der(row), row["speakers_found"], row["speakers"],
                row["cp_errors"] - row["errors"], row["ref_words"], row["background_words"], row["background_turn_s"],
            )  # fmt: skip
    if args.long or args.long_only:
        for entry in manifest:
            if entry["group"] == "long":
                row = evaluate_long(entry, args.set)
                rows.append(row)
                log.info("%s: %s", row["name"], {k: v for k, v in row.items() if k != "der_parts"})
    result = {"label": args.label, "summary": summarise(rows), "sample_references": sample_references()}
    if args.cv:
        result["cross_validation"] = cross_validate(rows)
    result["files"] = [{k: v for k, v in r.items() if not k.startswith("_")} for r in rows]
    write_json(result, args.out, indent=1)
    for key, value in result["summary"].items():
        log.info("%s: %s", key, value)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
