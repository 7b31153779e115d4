"""Voice activity detection (VAD): where in the audio someone speaks.

Uses Silero VAD (silero-vad package, MIT; the model ships in the wheel) through its batched "sequence" ONNX
model, which gives the same speech timestamps as the stock streaming model with one ONNX call per block of
frames instead of a Python loop per 32 ms frame (silero-vad ``sequence_vad.py``, snakers4/silero-vad PR 784),
itself cut in two so that its frame encoder runs on every CPU thread (:mod:`.vad_network`).
"""

from __future__ import annotations

import hashlib
import logging
import threading
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from whisper_subtitler.types import SAMPLE_RATE
from whisper_subtitler.vad_network import FRAME_SAMPLES  # samples per Silero VAD frame at 16 kHz (32 ms)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class VadOptions:
    """Silero VAD settings; names and defaults follow faster-whisper's ``VadOptions`` where they overlap.

    ``threshold`` is the speech probability above which a frame is speech; a region ends where it falls under
    ``neg_threshold`` (``None``: silero-vad's ``max(threshold - 0.15, 0.01)``); durations are in milliseconds.
    """

    threshold: float = 0.5
    min_speech_duration_ms: int = 250
    min_silence_duration_ms: int = 500
    speech_pad_ms: int = 200
    neg_threshold: float | None = None


# No padding and short pauses: where the speech and the pauses between words are (word timestamps move onto them),
# not chunks to decode.
PAUSE_VAD = VadOptions(min_silence_duration_ms=100, speech_pad_ms=0, min_speech_duration_ms=100)
MIN_PAUSE = 0.08  # seconds: shorter gaps between speech regions are not pauses


@lru_cache(maxsize=1)
def _load_model():
    """Silero VAD's sequence model in its fastest exact form (:func:`.vad_network.load`) and silero-vad's rules
    from probabilities to speech timestamps."""
    from whisper_subtitler import vad_network

    silero = vad_network.silero()
    return vad_network.load(vad_network.default_threads()), silero.get_speech_timestamps_from_probs


KEPT_PROBABILITIES = 4  # audio whose probabilities are kept: the file in hand and the next one being prefetched
_kept: OrderedDict[bytes, np.ndarray] = OrderedDict()  # content digest -> probabilities, oldest first
_kept_arrays: dict[bytes, weakref.ref] = {}  # content digest -> the samples they came from, while alive
_kept_lock = threading.Lock()


def speech_probabilities(samples: np.ndarray) -> np.ndarray:
    """Silero VAD's speech probability of every 32 ms frame (512 samples) of 16 kHz mono float32 ``samples``
    ``(n,)``: ``(ceil(n / 512),)`` floats in [0, 1].

    The last :data:`KEPT_PROBABILITIES` results are kept, keyed by a digest of the samples (a few hundred KB per
    hour of audio): the transcription's VAD and the diarization's tighter one (``diarize.embedded.trim_to_speech``)
    read the same audio with different settings, and the network runs once (docs/performance.md gives its cost
    per hour of audio), also when the next file's first piece is prefetched in between (:mod:`.prefetch`).
    """
    samples = np.ascontiguousarray(samples, dtype=np.float32)
    with _kept_lock:
        for digest, ref in _kept_arrays.items():
            whole = ref()
            if whole is not None and _is_prefix(samples, whole):
                return _kept[digest][: -(-len(samples) // FRAME_SAMPLES)]
    digest = hashlib.sha256(samples.data).digest()[:16]  # SHA-256 runs on the CPU's SHA extensions: 2.5x BLAKE2b
    with _kept_lock:
        if digest in _kept:
            _kept.move_to_end(digest)
            return _kept[digest]
    model, _ = _load_model()
    probabilities = model.audio_forward(samples, sampling_rate=SAMPLE_RATE)
    probabilities.setflags(write=False)
    with _kept_lock:
        _kept[digest] = probabilities
        _kept_arrays[digest] = weakref.ref(samples)
        while len(_kept) > KEPT_PROBABILITIES:
            _kept_arrays.pop(_kept.popitem(last=False)[0], None)
    return probabilities


def _is_prefix(samples: np.ndarray, whole: np.ndarray) -> bool:
    """Whether ``samples`` is a view of the start of ``whole`` (the same memory, not a copy): the pipeline cuts a
    piece at a pause after finding its speech, and finds the units of language detection on the cut piece. Silero
    VAD is causal, so the probabilities of a prefix are those of the whole but for the last, partial frame, which the
    prefix alone would pad with zeros (32 ms at the cut, which the pipeline makes in a pause)."""
    return (
        samples.ndim == whole.ndim == 1
        and len(samples) <= len(whole)
        and samples.strides == whole.strides  # not every other sample of it
        and samples.__array_interface__["data"][0] == whole.__array_interface__["data"][0]
    )


def speech_regions(samples: np.ndarray, options: VadOptions = VadOptions()) -> tuple[tuple[float, float], ...]:
    """Speech regions of 16 kHz mono ``samples`` (shape ``(n,)``), as ``(start, end)`` seconds, sorted, disjoint:
    silero-vad's ``get_speech_timestamps`` rules applied to :func:`speech_probabilities` with ``options``."""
    if len(samples) < SAMPLE_RATE // 10:  # under 0.1 s: nothing a person could say
        return ()
    stamps = _timestamps(speech_probabilities(samples), len(samples), options)
    return tuple((s["start"] / SAMPLE_RATE, s["end"] / SAMPLE_RATE) for s in stamps)


def _timestamps(probabilities, n_samples: int, options: VadOptions) -> list[dict]:
    """silero-vad's ``get_speech_timestamps`` rules with ``options`` on per-frame speech ``probabilities`` of
    ``n_samples`` samples: ``[{"start", "end"}]`` in samples."""
    _, get_speech_timestamps_from_probs = _load_model()
    return get_speech_timestamps_from_probs(
        probabilities,
        sampling_rate=SAMPLE_RATE,
        threshold=options.threshold,
        min_speech_duration_ms=options.min_speech_duration_ms,
        min_silence_duration_ms=options.min_silence_duration_ms,
        speech_pad_ms=options.speech_pad_ms,
        neg_threshold=options.neg_threshold,
        audio_length_samples=n_samples,
    )


def split_at_pause(regions: Sequence[tuple[float, float]], duration: float, keep: float = 0.5) -> float:
    """Where to end a piece of ``duration`` seconds so that no speech region is cut: a time in seconds.

    The end of the piece when it ends in silence; else the middle of the last pause (the gap between two
    ``regions``) in the piece's last ``1 - keep`` part; else the start of the speech running into the end, if
    that leaves at least ``keep`` of the piece; else ``duration`` (speech with no pause: cut anyway).
    """
    if not regions or regions[-1][1] < duration - 0.1:
        return duration
    for (_, end), (start, _) in zip(reversed(regions[:-1]), reversed(regions[1:])):
        middle = (end + start) / 2
        if middle < keep * duration:
            break
        return middle
    return regions[-1][0] if regions[-1][0] >= keep * duration else duration


def tight_regions(samples: np.ndarray) -> tuple[tuple[float, float], ...]:
    """Speech regions of 16 kHz mono ``samples`` with no padding and pauses down to 100 ms (:data:`PAUSE_VAD`), in
    seconds; the probabilities of :func:`speech_regions` are reused for the same samples."""
    return speech_regions(samples, PAUSE_VAD)


def pauses(regions: Sequence[tuple[float, float]], start: float, end: float) -> list[tuple[float, float]]:
    """The pauses between ``start`` and ``end`` seconds: before the first speech region of ``regions`` (sorted,
    disjoint, seconds), between regions and after the last, each at least :data:`MIN_PAUSE` long."""
    edges = [start] + [x for r in regions for x in r] + [end]
    gaps = [(edges[i], edges[i + 1]) for i in range(0, len(edges) - 1, 2)]
    return [(a, b) for a, b in gaps if b - a >= MIN_PAUSE]


def speech_seconds(samples: np.ndarray, options: VadOptions = VadOptions()) -> float:
    """Seconds of speech in 16 kHz mono ``samples`` ``(n,)``: the total length of the regions silero-vad's
    ``get_speech_timestamps`` rules find with ``options``. Unlike :func:`speech_regions`, the probabilities are not
    kept (a probe of a few windows, ``channels.centre_has_speech``, must not push a file's own out of the cache)."""
    if len(samples) < SAMPLE_RATE // 10:
        return 0.0
    model, _ = _load_model()
    probabilities = model.audio_forward(np.ascontiguousarray(samples, dtype=np.float32), sampling_rate=SAMPLE_RATE)
    stamps = _timestamps(probabilities, len(samples), options)
    return sum(s["end"] - s["start"] for s in stamps) / SAMPLE_RATE
