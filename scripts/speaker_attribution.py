#!/usr/bin/env python3
"""Speaker attribution figures: WER, cpWER and DER on real speech, for each word-to-speaker assignment rule.

    PYTHONPATH=. .venv/bin/python scripts/speaker_attribution.py                  # sample.wav + conversations 0, 1
    PYTHONPATH=. .venv/bin/python scripts/speaker_attribution.py --seeds 0 1 2 --cache /tmp/attribution
    PYTHONPATH=. .venv/bin/python scripts/speaker_attribution.py --json            # one JSON document on stdout
    PYTHONPATH=. .venv/bin/python scripts/speaker_attribution.py --seeds 0 1 2 3 4 --openai  # + openai-whisper's WER
    PYTHONPATH=. .venv/bin/python scripts/speaker_attribution.py --score out/sample.json --stm sample.stm \
        --rttm sample.rttm                                      # score a transcript written by `transcribe -f json`

Audio: pyannote's real 30 s two-speaker ``sample.wav`` (reference ``sample.stm``) and the same utterances
re-arranged into other conversations (``tests/media_conversation.py``, one per ``--seeds`` value, exact STM/RTTM).
Each file is transcribed as ``whisper-subtitler transcribe FILE --diarize`` does with default options (batched
decoding, Whisper base, the embedded offline diarization) and the words with their word timestamps and the
diarization (both the speaker turns and the exclusive ones) are kept in ``--cache`` (JSON), so that a second run
only re-scores the assignment rules (milliseconds).

Figures, all with the reference's and the hypothesis' words lower-cased and without punctuation
(``tests.media.normalize``):

- ``wer``: word error rate of the words in time order, speakers ignored (meeteval, one speaker on both sides);
- ``cpwer``: concatenated minimum-permutation WER (CHiME-6; ``meeteval.wer.cpwer``): each speaker's words
  concatenated, hypothesis speakers mapped to reference speakers by the permutation with the fewest errors;
- ``cpwer - wer``: the errors that speaker attribution adds;
- ``der``: diarization error rate of the speaker turns against the reference RTTM (``pyannote.metrics``, no
  collar, overlap scored), which the assignment rule does not change.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def capture(wav: Path, cache: Path) -> dict:
    """Transcribe and diarize ``wav`` once as the pipeline does by default; the words (no speakers yet) and both
    diarizations as a JSON-ready dict, read from ``cache`` when already there."""
    if cache.exists():
        return json.loads(cache.read_text())
    from whisper_subtitler import platform
    from whisper_subtitler.audio import stream_audio
    from whisper_subtitler.diarize import DiarizationOptions, load_diarizer
    from whisper_subtitler.pipeline import Pipeline, RunOptions
    from whisper_subtitler.transcription import TranscribeOptions
    from whisper_subtitler.writers.json import transcript_to_dict

    selection = platform.configure(
        gpu_backend="cpu", optimization_level=None, no_fallback=False, env_file=None, model=None
    )
    platform.apply_optimizations(selection)
    options = RunOptions(transcribe=TranscribeOptions(fp16=False), formats=(), diarization=DiarizationOptions())
    pipeline = Pipeline(options, selection)
    transcribed = pipeline.transcribe(stream_audio(wav, piece_seconds=None))
    transcript, speech, audio = transcribed.transcript, transcribed.speech, transcribed.audio
    diarization = load_diarizer(DiarizationOptions(), "cpu").diarize(audio, speech=speech)

    def turns(ts):
        return [{"start": t.start, "end": t.end, "speaker": t.speaker} for t in ts]

    data = {
        "transcript": transcript_to_dict(transcript),
        "turns": turns(diarization.turns),
        "exclusive_turns": turns(diarization.exclusive_turns),
        "speech": [list(r) for r in speech],
    }
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(data))
    return data


def capture_openai(wav: Path, cache: Path) -> list:
    """openai-whisper's own ``transcribe(word_timestamps=True)`` (what ``whisper FILE --word_timestamps True``
    runs: its defaults, temperature fallback included) with the same base weights: ``(start, end, word)`` rows,
    read from ``cache`` when already there."""
    if cache.exists():
        return json.loads(cache.read_text())
    import whisper

    from whisper_subtitler.models import load_whisper, resolve_model

    model = load_whisper(resolve_model("base"), device="cpu")
    result = whisper.transcribe(model, str(wav), word_timestamps=True, fp16=False, verbose=None)
    rows = [(w["start"], w["end"], w["word"]) for seg in result["segments"] for w in seg.get("words", [])]
    cache.write_text(json.dumps(rows))
    return rows


def _seglst(rows):
    from meeteval.io import SegLST

    return SegLST(
        [dict(session_id="s", speaker=spk, start_time=a, end_time=b, words=text) for spk, a, b, text in rows if text]
    )


def score(words, reference, turns, rttm: Path) -> dict:
    """WER, cpWER and DER of ``words`` (``(speaker, start, end, text)``, seconds) against ``reference``
    utterances (``tests.media_conversation.Utterance``) and of ``turns`` against ``rttm``."""
    from meeteval.wer import cpwer

    from tests.media import normalize

    ref = [(u.speaker, u.start, u.end, normalize(u.text)) for u in reference]
    hyp = [(spk or "?", a, b, normalize(text)) for spk, a, b, text in words]
    plain = cpwer(_seglst([("one", a, b, t) for _, a, b, t in ref]), _seglst([("one", a, b, t) for _, a, b, t in hyp]))
    cp = cpwer(_seglst(ref), _seglst(hyp))
    wer, cpw = plain["s"], cp["s"]
    return {
        "wer": round(wer.error_rate, 4),
        "cpwer": round(cpw.error_rate, 4),
        "cpwer_minus_wer": round(cpw.error_rate - wer.error_rate, 4),
        "ref_words": wer.length,
        "errors": wer.errors,
        "cp_errors": cpw.errors,
        "der": round(der(turns, rttm), 4),
    }


def der(turns, rttm: Path) -> float:
    """Diarization error rate of ``turns`` against ``rttm`` (pyannote.metrics, no collar, overlap scored)."""
    from pyannote.core import Annotation, Segment
    from pyannote.metrics.diarization import DiarizationErrorRate

    reference = Annotation()
    for line in rttm.read_text().splitlines():
        f = line.split()
        reference[Segment(float(f[3]), float(f[3]) + float(f[4])), f"{f[3]}"] = f[7]
    hypothesis = Annotation()
    for k, t in enumerate(turns):
        hypothesis[Segment(t.start, t.end), k] = t.speaker
    return float(DiarizationErrorRate(collar=0.0, skip_overlap=False)(reference, hypothesis))


def rules():
    """The assignment rules compared: name -> function(transcript, turns, exclusive) -> Transcript."""
    from whisper_subtitler import speakers

    return {
        "overlap_turns": lambda t, turns, excl: speakers.assign_speakers(t, turns, rule="overlap"),
        "overlap": lambda t, turns, excl: speakers.assign_speakers(t, turns, exclusive=excl, rule="overlap"),
        "boundaries": lambda t, turns, excl: speakers.assign_speakers(t, turns, exclusive=excl),
    }


def reference_turns(rttm: Path):
    """The speaker turns of an RTTM file, sorted."""
    from whisper_subtitler.types import SpeakerTurn

    turns = []
    for line in rttm.read_text().splitlines():
        f = line.split()
        turns.append(SpeakerTurn(float(f[3]), float(f[3]) + float(f[4]), f[7]))
    return tuple(sorted(turns, key=lambda t: (t.start, t.end)))


def evaluate(data: dict, reference, rttm: Path) -> dict:
    """Figures of each assignment rule on one captured file, with the diarization's turns and (``oracle/``) with
    the reference turns, which leaves only the errors of the rule and of the word timestamps."""
    from whisper_subtitler.cues.guards import clean_transcript
    from whisper_subtitler.types import SpeakerTurn
    from whisper_subtitler.writers.json import transcript_from_dict

    transcript = clean_transcript(transcript_from_dict(data["transcript"]))  # as the pipeline does
    turns = tuple(SpeakerTurn(**t) for t in data["turns"])
    exclusive = tuple(SpeakerTurn(**t) for t in data["exclusive_turns"])
    oracle = reference_turns(rttm)
    out = {}
    for name, rule in rules().items():
        assigned = rule(transcript, turns, exclusive)
        out[name] = score([(w.speaker, w.start, w.end, w.text) for w in assigned.words], reference, turns, rttm)
    for name, rule in rules().items():
        if name == "overlap_turns":
            continue
        assigned = rule(transcript, oracle, oracle)
        out[f"oracle/{name}"] = score(
            [(w.speaker, w.start, w.end, w.text) for w in assigned.words], reference, oracle, rttm
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="*", default=[0, 1], help="re-arranged conversations to add")
    parser.add_argument(
        "--cache",
        type=Path,
        default=Path("/tmp/whisper-subtitler-attribution"),
        help="folder for the generated audio and the captured transcripts",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of a table")
    parser.add_argument(
        "--openai",
        action="store_true",
        help="add the WER of openai-whisper's own transcribe(word_timestamps=True), same weights",
    )
    parser.add_argument("--score", type=Path, help="a JSON transcript (transcribe --diarize -f json) to score alone")
    parser.add_argument("--stm", type=Path, help="with --score: the reference STM (default: sample.stm)")
    parser.add_argument("--rttm", type=Path, help="with --score: the reference RTTM (default: sample.rttm)")
    args = parser.parse_args()
    if args.score:
        from tests.media import SAMPLE_RTTM, SAMPLE_STM
        from tests.media_conversation import read_stm
        from whisper_subtitler.writers.json import read_transcript

        transcript = read_transcript(args.score)
        words = [(w.speaker, w.start, w.end, w.text) for w in transcript.words]
        print(json.dumps(score(words, read_stm(args.stm or SAMPLE_STM), transcript.turns, args.rttm or SAMPLE_RTTM)))
        return

    from tests.media import SAMPLE_RTTM, SAMPLE_WAV
    from tests.media_conversation import read_stm, rearranged_conversation

    files = [("sample", SAMPLE_WAV, read_stm(), SAMPLE_RTTM)]
    for seed in args.seeds:
        conv = rearranged_conversation(args.cache / f"conversation{seed}.wav", seed=seed)
        files.append((f"conversation{seed}", conv.wav, conv.utterances, conv.rttm))
    results = {}
    for name, wav, reference, rttm in files:
        print(f"{name}: {wav}", file=sys.stderr)
        data = capture(wav, args.cache / f"{name}.capture.json")
        results[name] = evaluate(data, reference, rttm)
        if args.openai:
            rows = capture_openai(wav, args.cache / f"{name}.openai.json")
            results[name]["openai-whisper"] = score(
                [(None, a, b, t) for a, b, t in rows], reference, reference_turns(rttm), rttm
            )
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"{'file':<15} {'rule':<18} {'WER':>6} {'cpWER':>6} {'cp-WER':>7} {'DER':>6}")
    for name, by_rule in results.items():
        for rule, r in by_rule.items():
            print(
                f"{name:<15} {rule:<18} {r['wer']:6.3f} {r['cpwer']:6.3f} {r['cpwer_minus_wer']:7.3f} {r['der']:6.3f}"
            )
    conversations = [n for n in results if n != "sample"]
    for rule in (r for r in next(iter(results.values())) if r != "openai-whisper"):
        errors = sum(results[n][rule]["cp_errors"] - results[n][rule]["errors"] for n in conversations)
        words = sum(results[n][rule]["ref_words"] for n in conversations)
        if words:
            print(f"{'conversations':<15} {rule:<18} cpWER - WER over {len(conversations)}: {errors / words:.3f}")
    for rule in ("boundaries", "openai-whisper") if args.openai else ():
        errors = sum(results[n][rule]["errors"] for n in conversations)
        words = sum(results[n][rule]["ref_words"] for n in conversations)
        if words:
            print(f"{'conversations':<15} {rule:<18} WER over {len(conversations)}: {errors / words:.3f}")


if __name__ == "__main__":
    main()
