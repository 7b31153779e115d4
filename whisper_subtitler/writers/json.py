"""The full transcript as JSON, and reading it back (``read_transcript``) for the ``format`` command.

Schema (``"schema": "whisper-subtitler/transcript"``, ``"version": 1``), times in float seconds:
``source``, ``language``, ``task``, ``model``, ``duration``, ``speakers`` (labels in order of appearance),
``text``, ``segments`` (``start``, ``end``, ``text``, ``speaker``, ``language``, ``avg_logprob``,
``compression_ratio``, ``no_speech_prob``, ``words``: ``text``, ``start``, ``end``, ``probability``, ``speaker``),
``turns`` (``start``, ``end``, ``speaker``), ``cues`` as the subtitle files show them (``start``, ``end``,
``lines``, ``speaker``, ``language``) and ``removed``: the words the hallucination guards removed on purpose
(``reason``, ``start``, ``end``, ``text``, ``stage``; ``types.Removal``). Every word of ``segments`` is in a cue or
in a ``removed`` entry of stage ``cues``; stage ``transcript`` words were removed before the segments.
``language`` at the top is the file's main language (the one spoken longest), with ``language_probability`` and
``language_sure`` when it was detected (``types.LanguageDetection``; absent when given);
each segment and cue has the language it was decoded in (ISO 639-1). Stage timings (wall seconds) are not
written: the same input and options give the same file, byte for byte; the ``--json`` summary of a run carries
them. An older file's ``timings`` are still read.
``voices`` (``--voices`` only; ``types.VoiceMatch``): per speaker cluster of the diarization, ``cluster`` (its label
there), ``speaker`` (the label shown: a library name, ``SPEAKER_A``... or the cluster's), ``source`` (``library``,
``session`` or null), ``scores`` (the best library voices, ``[name, cosine similarity]``) and ``seconds`` (speech
embedded); absent without ``--voices``.
``shot_changes`` (seconds, ascending) and ``fps`` (frames per second): the video's shot changes the cues were timed by
and the frame rate of those rules (``cues.shots``), so that ``format`` and ``check --transcript`` time and check
cues by them again; absent when the cues were not timed by shot changes, and in older files.
``audio_channel`` (``used``, ``reason``, ``layout``; ``channels.ChannelUse``) says which channel of a multichannel
audio stream was transcribed and why; it is absent for the downmix of a mono or stereo stream, and in older files.
Floats are written at full precision, so ``read_transcript``
gives back an equal ``Transcript``; a non-finite time is written as ``null``. UTF-8, never a BOM (RFC 8259).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from whisper_subtitler.channels import describe, from_description
from whisper_subtitler.errors import InputError
from whisper_subtitler.types import Cue, Removal, Segment, SpeakerTurn, Transcript, VoiceMatch, Word
from whisper_subtitler.writers.base import Writer, WriterOptions

SCHEMA = "whisper-subtitler/transcript"
VERSION = 1


def _num(x: float) -> float | None:
    return x if isinstance(x, (int, float)) and math.isfinite(x) else None


def _audio_channel(transcript: Transcript) -> dict[str, Any]:
    """``{"audio_channel": {"used", "reason", "layout"}}`` for a multichannel stream or a ``--channels`` choice;
    ``{}`` for the downmix of a mono or stereo stream (``ChannelUse.default``), which earlier files did not say."""
    use = transcript.channel
    return {} if use is None or use.default else {"audio_channel": describe(use)}


def _voices(transcript: Transcript) -> dict[str, Any]:
    """``{"voices": [...]}`` with ``--voices`` (``types.VoiceMatch``), ``{}`` without, as files before it."""
    if not transcript.voices:
        return {}
    return {
        "voices": [
            {
                "cluster": m.cluster,
                "speaker": m.speaker,
                "source": m.source,
                "scores": [[name, score] for name, score in m.scores],
                "seconds": m.seconds,
            }
            for m in transcript.voices
        ]
    }


def _language_detection(transcript: Transcript) -> dict[str, Any]:
    """``{"language_probability": p, "language_sure": bool}`` when the language was detected
    (``types.LanguageDetection``: when not sure, the file's language is uncertain); ``{}`` when it was given, as
    files before it."""
    detection = transcript.language_detection
    if detection is None:
        return {}
    return {"language_probability": detection.probability, "language_sure": detection.sure}


def _shot_changes(transcript: Transcript) -> dict[str, Any]:
    """``{"shot_changes": [...], "fps": ...}`` when the cues were timed by shot changes, ``{}`` otherwise."""
    if not transcript.shot_changes:
        return {}
    return {"shot_changes": list(transcript.shot_changes), "fps": transcript.fps}


def transcript_to_dict(transcript: Transcript, cues: Sequence[Cue] = ()) -> dict[str, Any]:
    """The JSON-ready dict of ``transcript`` and its ``cues`` (schema in the module docstring)."""

    def word(w: Word) -> dict[str, Any]:
        return {
            "text": w.text,
            "start": _num(w.start),
            "end": _num(w.end),
            "probability": w.probability,
            "speaker": w.speaker,
        }

    return {
        "schema": SCHEMA,
        "version": VERSION,
        "source": transcript.source,
        "language": transcript.language,
        **_language_detection(transcript),
        "task": transcript.task,
        "model": transcript.model,
        "duration": transcript.duration,
        **_audio_channel(transcript),
        "speakers": list(transcript.speakers),
        "text": transcript.text,
        "segments": [
            {
                "start": _num(s.start),
                "end": _num(s.end),
                "text": s.text,
                "speaker": s.speaker,
                "language": s.language,
                "avg_logprob": _num(s.avg_logprob),
                "compression_ratio": _num(s.compression_ratio),
                "no_speech_prob": _num(s.no_speech_prob),
                "words": [word(w) for w in s.words],
            }
            for s in transcript.segments
        ],
        "turns": [{"start": t.start, "end": t.end, "speaker": t.speaker} for t in transcript.turns],
        **_voices(transcript),
        **_shot_changes(transcript),
        "cues": [
            {
                "start": _num(c.start),
                "end": _num(c.end),
                "lines": list(c.shown_lines),
                "speaker": c.speaker,
                "language": c.language,
            }
            for c in cues
        ],
        "removed": [
            {"reason": r.reason, "start": _num(r.start), "end": _num(r.end), "text": r.text, "stage": r.stage}
            for r in transcript.removed
        ],
    }


def _float(value: Any, default: float = math.nan) -> float:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"expected a number, got {value!r}")
    return float(value)


def _times(values: Sequence[Any]) -> tuple[float, ...]:
    """Shot changes: times in seconds, each finite and not negative, ascending. Raises ``ValueError``."""
    times = tuple(_float(v) for v in values)
    if not all(0 <= t < math.inf for t in times) or list(times) != sorted(times):
        raise ValueError("'shot_changes' must be ascending times in seconds")
    return times


def _word(d: Mapping[str, Any], language: str | None = None) -> Word:
    text = d["text"] if "text" in d else d["word"]
    prob = d.get("probability", d.get("score"))
    start, end = _float(d.get("start")), _float(d.get("end"))
    return Word(str(text), start, end, _float(prob, 1.0), d.get("speaker"), language)


def _segment(d: Mapping[str, Any]) -> Segment:
    text = str(d.get("text", ""))
    language = d.get("language") or None
    words = tuple(_word(w, language) for w in d.get("words") or ())
    if words and " " in text.strip() and not any(w.text[:1].isspace() for w in words):
        # whisperX strips Whisper's leading spaces; put them back where the text has spaces.
        words = tuple(Word(" " + w.text, w.start, w.end, w.probability, w.speaker, language) for w in words)
    return Segment(
        start=_float(d.get("start")),
        end=_float(d.get("end")),
        text=text,
        words=words,
        speaker=d.get("speaker"),
        avg_logprob=_float(d.get("avg_logprob"), 0.0),
        compression_ratio=_float(d.get("compression_ratio"), 1.0),
        no_speech_prob=_float(d.get("no_speech_prob"), 0.0),
        language=language,
    )


def transcript_from_dict(data: Mapping[str, Any]) -> Transcript:
    """A ``Transcript`` from our JSON schema, or from openai-whisper's or whisperX's JSON.

    Raises ``KeyError``, ``TypeError`` or ``ValueError`` on a malformed document (``read_transcript`` turns
    them into ``InputError``).
    """
    if not isinstance(data, Mapping) or not isinstance(data.get("segments"), Sequence):
        raise ValueError("no 'segments' list")
    if data.get("schema", SCHEMA) != SCHEMA or int(data.get("version", VERSION)) > VERSION:
        raise ValueError(f"unsupported schema {data.get('schema')!r} version {data.get('version')!r}")
    segments = tuple(_segment(s) for s in data["segments"])
    ends = [s.end for s in segments if math.isfinite(s.end)]
    duration = _float(data.get("duration"), max(ends, default=0.0))
    return Transcript(
        segments=segments,
        language=str(data.get("language") or ""),
        duration=duration,
        model=str(data.get("model") or ""),
        source=str(data.get("source") or ""),
        task=str(data.get("task") or "transcribe"),
        channel=from_description(data.get("audio_channel")),
        turns=tuple(
            SpeakerTurn(_float(t["start"]), _float(t["end"]), str(t["speaker"])) for t in data.get("turns") or ()
        ),
        timings={str(k): float(v) for k, v in (data.get("timings") or {}).items()},
        removed=tuple(
            Removal(str(r["reason"]), _float(r["start"]), _float(r["end"]), str(r["text"]), str(r.get("stage", "cues")))
            for r in data.get("removed") or ()
        ),
        voices=tuple(
            VoiceMatch(
                str(v["cluster"]),
                str(v["speaker"]),
                v.get("source"),
                tuple((str(name), float(score)) for name, score in v.get("scores") or ()),
                float(v.get("seconds", 0.0)),
            )
            for v in data.get("voices") or ()
        ),
        shot_changes=_times(data.get("shot_changes") or ()),
        fps=_float(data["fps"]) if data.get("fps") is not None else None,
    )


def read_transcript(path: str | Path) -> Transcript:
    """Read a transcript JSON file written by the ``json`` format (or by openai-whisper or whisperX).

    Raises ``InputError`` when the file is missing, unreadable, not JSON, or not a transcript.
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read: {exc}") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not JSON: {exc}", hint="pass a transcript written with --format json") from None
    try:
        return transcript_from_dict(data)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise InputError(
            f"{path}: not a transcript: {exc}", hint="pass a transcript written with --format json"
        ) from None


class JsonWriter(Writer):
    """The full transcript (not the cues) as indented UTF-8 JSON."""

    name = "json"
    extension = "json"
    cue_based = False
    allows_bom = False

    def render(self, transcript: Transcript, cues: Sequence[Cue], options: WriterOptions) -> str:
        return json.dumps(transcript_to_dict(transcript, cues), ensure_ascii=False, indent=2, allow_nan=False) + "\n"
