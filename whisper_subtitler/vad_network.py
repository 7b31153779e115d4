"""Silero VAD's network split in two, so that its costly half runs on every CPU thread: the same probabilities.

Silero VAD v5 computes, for each 32 ms frame (576 samples: 64 of context and 512 new), an STFT and four
convolutions (the encoder), then one LSTM step and a sigmoid head. The stock sequence model (silero-vad's
``sequence_vad.py``) runs both on one ONNX Runtime thread; the encoder, which treats every frame on its own,
is 80-90 % of the time (ONNX Runtime's profiler on the benchmark clip). Cut at the encoder's output, the
encoder runs over blocks of frames in several threads (ONNX Runtime releases the GIL; ``run`` is thread-safe)
while the LSTM and the head consume the encoded blocks in order, carrying their state from block to block as the
stock model does. The probabilities are the stock model's, bit for bit (``tests/test_vad.py``); on 2 cores the
network takes half the time (``docs/performance.md``, "Voice activity detection").

The two halves are cut from the ONNX file in the silero-vad wheel with the ``onnx`` package once per model file
and kept in ``$XDG_CACHE_HOME/whisper-subtitler/models``, written atomically (a read-only cache keeps them in
memory), so that a process loads two small sessions and does not import ``onnx``. When the cut cannot be made,
:func:`load` returns the stock sequence model, which gives the same numbers, more slowly (logged once).
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import weakref
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

SPLIT_FORMAT = 1  # bump when the cut changes (its tensors, the files' names), so that old cache files go unused
ENCODED = "/Relu_3_output_0"  # the encoder's last activation in the sequence model: (frames, 128, 1) float32
FRAME_SAMPLES, CONTEXT_SAMPLES = 512, 64  # one 32 ms frame at 16 kHz and the samples of context before it
BLOCK_FRAMES = 512  # frames per encoder call (16.4 s), silero-vad's own block size
STATE_SHAPE = (1, 1, 128)  # the LSTM's hidden and cell state
_here = threading.local()  # .one: the calling thread asked for the encoder on itself only (:func:`one_thread`)
_alive: weakref.WeakSet[SplitSileroVad] = weakref.WeakSet()  # a forked child has none of their pools' threads


def _after_fork_in_child() -> None:
    for model in list(_alive):
        model._forget_pool()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


@contextmanager
def one_thread() -> Iterator[None]:
    """Inside this block, in the calling thread, :class:`SplitSileroVad` runs its encoder in that thread only: for
    work done beside the model (the next file's VAD, :mod:`.prefetch`), which must not take the cores the model is
    using. The numbers are the same either way."""
    before = getattr(_here, "one", False)
    _here.one = True
    try:
        yield
    finally:
        _here.one = before


def sequence_model_path() -> Path:
    """The sequence ONNX model in the installed silero-vad wheel (16 kHz). Raises ImportError without silero-vad."""
    import importlib.util

    spec = importlib.util.find_spec("silero_vad")
    if spec is None or spec.origin is None:
        raise ImportError("silero-vad is not installed")
    return Path(spec.origin).parent / "data" / "silero_vad_16k_sequence.onnx"


def cut(model: bytes) -> tuple[bytes, bytes]:
    """The encoder (``input`` ``(frames, 576)`` -> :data:`ENCODED`) and the recurrent half (:data:`ENCODED`,
    ``h``, ``c`` -> ``speech_probs``, ``hn``, ``cn``) of the sequence model ``model``, as ONNX bytes.

    Raises ImportError without the ``onnx`` package, ValueError (``onnx``'s) when the model has no such tensors.
    """
    import onnx
    import onnx.utils

    proto = onnx.load_from_string(model)
    # Shape inference stops at the STFT's computed padding; the cut only needs the tensor's name and type.
    proto.graph.value_info.append(onnx.helper.make_tensor_value_info(ENCODED, onnx.TensorProto.FLOAT, None))
    extractor = onnx.utils.Extractor(proto)
    encoder = extractor.extract_model(["input"], [ENCODED])
    recurrent = extractor.extract_model([ENCODED, "h", "c"], ["speech_probs", "hn", "cn"])
    return encoder.SerializeToString(), recurrent.SerializeToString()


def _session(model: bytes | Path):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1  # the parallelism is ours: one block per thread
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    source = str(model) if isinstance(model, Path) else model
    return ort.InferenceSession(source, sess_options=options, providers=["CPUExecutionProvider"])


class SplitSileroVad:
    """Silero VAD's sequence model as its encoder, run over blocks of frames in ``threads`` threads, and its LSTM
    and head, run over the encoded blocks in order in the calling thread.

    ``audio_forward(samples, sampling_rate=16000)`` takes 16 kHz mono float32 samples ``(n,)`` and returns the
    speech probability of every 32 ms frame, ``(ceil(n / 512),)`` float32, as silero-vad's
    ``SileroVADSequence.audio_forward`` does (same framing, zero-padded last frame, same numbers). Raises
    ValueError for another sampling rate. Thread-safe; at most ``2 * threads`` blocks are in flight, so the memory
    does not grow with the length of the audio.
    """

    def __init__(self, encoder: bytes | Path, recurrent: bytes | Path, threads: int) -> None:
        self.encoder = _session(encoder)
        self.recurrent = _session(recurrent)
        self.threads = max(1, threads)
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()
        _alive.add(self)

    def _forget_pool(self) -> None:
        self._pool, self._pool_lock = None, threading.Lock()

    def _executor(self) -> ThreadPoolExecutor:
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="vad-encoder")
            return self._pool

    def _encode(self, block: np.ndarray) -> np.ndarray:
        return self.encoder.run([ENCODED], {"input": block})[0]

    def audio_forward(self, samples: np.ndarray, sampling_rate: int = 16_000) -> np.ndarray:
        if sampling_rate != 16_000:
            raise ValueError(f"the split Silero VAD runs at 16000 Hz, not {sampling_rate}")
        samples = np.ascontiguousarray(samples, dtype=np.float32).reshape(-1)
        hidden = np.zeros(STATE_SHAPE, dtype=np.float32)
        cell = np.zeros(STATE_SHAPE, dtype=np.float32)
        probabilities = []
        for encoded in self._encoded_blocks(samples):
            values, hidden, cell = self.recurrent.run(
                ["speech_probs", "hn", "cn"], {ENCODED: encoded, "h": hidden, "c": cell}
            )
            probabilities.append(values.reshape(-1))
        return np.concatenate(probabilities) if probabilities else np.zeros(0, dtype=np.float32)

    def _encoded_blocks(self, samples: np.ndarray) -> Iterator[np.ndarray]:
        """The encoder's output for each block of :func:`frame_blocks`, in order, computed ahead in the pool."""
        blocks = frame_blocks(samples)
        if self.threads == 1 or getattr(_here, "one", False):
            yield from map(self._encode, blocks)
            return
        pool, pending = self._executor(), deque[Future]()
        for block in blocks:
            pending.append(pool.submit(self._encode, block))
            if len(pending) >= 2 * self.threads:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


def frame_blocks(samples: np.ndarray) -> Iterator[np.ndarray]:
    """Blocks of up to :data:`BLOCK_FRAMES` frames of 16 kHz ``samples`` ``(n,)``: ``(frames, 576)`` float32, each
    frame preceded by the last 64 samples of the frame before it (zeros before the first), the last frame padded
    with zeros: silero-vad's ``sequence_vad.frame_blocks``, whose framing the model was exported with."""
    return silero().sequence_vad.frame_blocks(samples, FRAME_SAMPLES, CONTEXT_SAMPLES, BLOCK_FRAMES)


def load(threads: int, directory: Path | None = None):
    """The fastest form of Silero VAD's sequence model that gives its numbers: a :class:`SplitSileroVad` with
    ``threads`` encoder threads, from the cut kept in ``directory`` (default: ``cache.converted_cache_dir()``) or
    made now and kept there; else (no ``onnx``, a cut or session that fails) silero-vad's own
    ``load_silero_vad(sequence=True)``. Both have ``audio_forward(samples, sampling_rate)``.

    Raises ImportError without silero-vad.
    """
    from whisper_subtitler.cache import converted_cache_dir, write_atomically

    source = sequence_model_path()
    directory = converted_cache_dir() if directory is None else directory
    data = source.read_bytes()
    key = hashlib.sha256(data + f"/{SPLIT_FORMAT}".encode()).hexdigest()[:16]
    encoder_file = directory / f"silero-vad-encoder-{key}.onnx"
    recurrent_file = directory / f"silero-vad-recurrent-{key}.onnx"
    if encoder_file.is_file() and recurrent_file.is_file():
        try:
            return SplitSileroVad(encoder_file, recurrent_file, threads)
        except Exception as exc:  # noqa: BLE001 - a damaged cache file: cut again
            log.info("the split Silero VAD in %s does not load (%s); cutting it again", directory, exc)
    try:
        encoder, recurrent = cut(data)
        model = SplitSileroVad(encoder, recurrent, threads)
    except Exception as exc:  # noqa: BLE001 - no onnx, or a model of another shape: the stock model still works
        log.info("Silero VAD runs on one thread: the split failed (%s: %s)", type(exc).__name__, exc)
        return _stock()
    write_atomically(encoder_file, encoder, "the split Silero VAD")
    write_atomically(recurrent_file, recurrent, "the split Silero VAD")
    return model


def _stock():
    return silero().load_silero_vad(sequence=True)


def silero():
    """The ``silero_vad`` package, imported without its side effect: ``import silero_vad`` calls
    ``torch.set_num_threads(1)`` for the whole process (docs/performance.md, "Traps"); the count is put back."""
    import torch

    threads = torch.get_num_threads()
    try:
        import silero_vad
        import silero_vad.sequence_vad
    finally:
        torch.set_num_threads(threads)
    return silero_vad


def default_threads() -> int:
    """Encoder threads: torch's intra-op threads, what the rest of the run uses (the platform layer sets them)."""
    import torch

    return torch.get_num_threads()
