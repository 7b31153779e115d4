"""Silero VAD's network split in two, so that its costly half runs on every CPU thread, and that half rewritten as
matrix products.

Silero VAD v5 computes, for each 32 ms frame (576 samples: 64 of context and 512 new), an STFT and four
convolutions (the encoder), then one LSTM step and a sigmoid head. The stock sequence model (silero-vad's
``sequence_vad.py``) runs both on one ONNX Runtime thread; the encoder, which treats every frame on its own,
is 80-90 % of the time (ONNX Runtime's profiler on the benchmark clip). Cut at the encoder's output, the
encoder runs over blocks of frames in several threads (ONNX Runtime releases the GIL; ``run`` is thread-safe)
while the LSTM and the head consume the encoded blocks in order, carrying their state from block to block as the
stock model does.

ONNX Runtime runs the encoder's convolutions on each frame's tiny image (4 STFT columns) one frame at a time.
:func:`matmul_encoder` writes the same encoder, from the same weights, as one matrix product per layer over all
the frames of a block (the STFT's windows and each convolution's taps laid side by side), which ONNX Runtime runs
several times as fast (``docs/performance.md``). Its output differs from the stock encoder's by float rounding
only; :func:`load` checks that on a probe block and keeps the stock encoder when it does not hold (another model,
another graph).
The speech probabilities then differ from the stock model's by a few 1e-5 at most (``tests/test_vad.py``), the
speech regions not at all on the evaluation sets (``docs/performance.md``, "The VAD network on every thread").

The two halves are cut from the ONNX file in the silero-vad wheel with the ``onnx`` package once per model file
and kept in ``$XDG_CACHE_HOME/whisper-subtitler/models``, written atomically (a read-only cache keeps them in
memory), so that a process loads two small sessions and does not import ``onnx``. When the cut cannot be made,
:func:`load` returns the stock sequence model, which gives the same numbers up to float rounding, more slowly
(logged once).
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

SPLIT_FORMAT = 2  # bump when the cut changes (its tensors, the files' names), so that old cache files go unused
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


STFT_PAD = 64  # samples each frame gets on the right by reflection in silero-vad's STFT: 640, four windows of 256
PROBE_TOLERANCE = 1e-3  # largest difference allowed between the two encoders' outputs (they reach about 10)


def matmul_encoder(model: bytes) -> bytes:
    """The encoder of the sequence model ``model`` (ONNX bytes) as matrix products, as ONNX bytes: the same input
    ``(frames, 576)`` and output :data:`ENCODED` ``(frames, 128, 1)`` as :func:`cut`'s encoder, from its weights.

    The STFT (a convolution of 258 basis rows, 256 taps, stride 128, on the frame padded by :data:`STFT_PAD` by
    reflection) becomes one product of the frame's four windows, laid side by side, with the basis; each of the
    four convolutions (3 taps, padding 1, strides read from the graph) one product of its three taps' inputs,
    concatenated, with the weights reshaped to ``(3 * in, out)``, then the bias and a ReLU. Raises ImportError
    without the ``onnx`` package, KeyError or ValueError when the graph is not silero-vad v5's.
    """
    import onnx
    from onnx import helper, numpy_helper

    proto = onnx.load_from_string(model)
    weights = {w.name: numpy_helper.to_array(w) for w in proto.graph.initializer}
    strides = {
        n.input[1]: list(helper.get_attribute_value(a) for a in n.attribute if a.name == "strides")[0][0]
        for n in proto.graph.node
        if n.op_type == "Conv"
    }
    basis = weights["stft.forward_basis_buffer"]  # (2 * bins, 1, window)
    rows, _, window = basis.shape
    hop = strides["stft.forward_basis_buffer"]
    if window != 2 * hop or rows % 2:
        raise ValueError(f"an STFT of {rows} rows, {window} taps, hop {hop} is not silero-vad v5's")
    nodes: list = []
    inits: list = []

    def const(name: str, value) -> str:
        inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def op(kind: str, inputs: list[str], name: str, **attrs) -> str:
        nodes.append(helper.make_node(kind, inputs, [name], **attrs))
        return name

    def ints(*values: int) -> np.ndarray:
        return np.array(values, dtype=np.int64)

    padded_len = CONTEXT_SAMPLES + FRAME_SAMPLES + STFT_PAD
    columns = (padded_len - window) // hop + 1
    padded = op("Pad", ["input", const("stft_pads", ints(0, 0, 0, STFT_PAD))], "padded", mode="reflect")
    hops = op("Reshape", [padded, const("hops_shape", ints(-1, padded_len // hop, hop))], "hops")
    axis1, axis2 = const("axis1", ints(1)), const("axis2", ints(2))
    first = op("Slice", [hops, const("zero", ints(0)), const("columns", ints(columns)), axis1], "first_halves")
    second = op("Slice", [hops, const("one", ints(1)), const("columns_1", ints(columns + 1)), axis1], "second_halves")
    windows = op("Concat", [first, second], "windows", axis=2)  # (frames, columns, window)
    spectrum = op("MatMul", [windows, const("basis", basis[:, 0, :].T.copy())], "spectrum")
    bins = const("bins", ints(rows // 2))
    real = op("Slice", [spectrum, "zero", bins, axis2], "real")
    imag = op("Slice", [spectrum, bins, const("rows", ints(rows)), axis2], "imag")
    power = op("Add", [op("Mul", [real, real], "real2"), op("Mul", [imag, imag], "imag2")], "power")
    layer, length = op("Sqrt", [power], "magnitude"), columns  # (frames, columns, bins): channels last
    for k in range(4):
        weight, bias = weights[f"encoder.{k}.weight"], weights[f"encoder.{k}.bias"]  # (out, in, 3), (out,)
        out_channels, in_channels, taps = weight.shape
        stride = strides[f"encoder.{k}.weight"]
        if taps != 3:
            raise ValueError(f"encoder.{k} has {taps} taps, not 3")
        out_len = (length - 1) // stride + 1  # padding 1 on each side
        edge = op("Pad", [layer, const(f"pads{k}", ints(0, 1, 0, 0, 1, 0))], f"edged{k}")
        step = const(f"stride{k}", ints(stride))
        inputs = [
            op(
                "Slice",
                [
                    edge,
                    const(f"from{k}{t}", ints(t)),
                    const(f"to{k}{t}", ints(t + stride * (out_len - 1) + 1)),
                    axis1,
                    step,
                ],
                f"tap{k}{t}",
            )
            for t in range(taps)
        ]
        stacked = op("Concat", inputs, f"taps{k}", axis=2)  # (frames, out_len, 3 * in), tap-major
        matrix = weight.transpose(2, 1, 0).reshape(taps * in_channels, out_channels).copy()
        product = op("MatMul", [stacked, const(f"weight{k}", matrix)], f"product{k}")
        layer = op("Relu", [op("Add", [product, const(f"bias{k}", bias)], f"biased{k}")], f"relu{k}")
        length = out_len
    if length != 1:
        raise ValueError(f"the encoder ends on {length} columns, not 1")
    op("Transpose", [layer], ENCODED, perm=[0, 2, 1])
    graph = helper.make_graph(
        nodes,
        "silero_vad_encoder_matmul",
        [helper.make_tensor_value_info("input", onnx.TensorProto.FLOAT, [None, padded_len - STFT_PAD])],
        [helper.make_tensor_value_info(ENCODED, onnx.TensorProto.FLOAT, [None, out_channels, 1])],
        inits,
    )
    encoder = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    encoder.ir_version = min(proto.ir_version, encoder.ir_version)
    onnx.checker.check_model(encoder)
    return encoder.SerializeToString()


def _agrees(candidate: bytes, stock: bytes) -> bool:
    """Whether the encoder ``candidate`` gives ``stock``'s output within :data:`PROBE_TOLERANCE` on a probe block:
    64 frames each of seeded noise at a speech level, seeded noise near silence and a 440 Hz tone."""
    rng = np.random.default_rng(0)
    n = 64
    tone = 0.3 * np.sin(2 * np.pi * 440 * np.arange(n * FRAME_SAMPLES) / 16_000)
    samples = np.concatenate(
        [rng.normal(0, 0.1, n * FRAME_SAMPLES), rng.normal(0, 1e-4, n * FRAME_SAMPLES), tone]
    ).astype(np.float32)
    block = next(iter(frame_blocks(samples)))
    got, want = (_session(m).run([ENCODED], {"input": block})[0] for m in (candidate, stock))
    return got.shape == want.shape and float(np.max(np.abs(got - want))) <= PROBE_TOLERANCE


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
    ``SileroVADSequence.audio_forward`` does (same framing, zero-padded last frame, the same numbers up to float
    rounding). Raises ValueError for another sampling rate. Thread-safe; at most ``2 * threads`` blocks are in
    flight, so the memory does not grow with the length of the audio.
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
    """The fastest form of Silero VAD's sequence model that gives its numbers (up to float rounding): a
    :class:`SplitSileroVad` with ``threads`` encoder threads (the encoder as matrix products,
    :func:`matmul_encoder`, where it agrees with the stock one), from the cut kept in ``directory`` (default:
    ``cache.converted_cache_dir()``) or made now and kept there; else (no ``onnx``, a cut or session that fails)
    silero-vad's own ``load_silero_vad(sequence=True)``. Both have ``audio_forward(samples, sampling_rate)``.

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
        encoder = _faster_encoder(data, encoder)
        model = SplitSileroVad(encoder, recurrent, threads)
    except Exception as exc:  # noqa: BLE001 - no onnx, or a model of another shape: the stock model still works
        log.info("Silero VAD runs on one thread: the split failed (%s: %s)", type(exc).__name__, exc)
        return _stock()
    write_atomically(encoder_file, encoder, "the split Silero VAD")
    write_atomically(recurrent_file, recurrent, "the split Silero VAD")
    return model


def _faster_encoder(model: bytes, stock: bytes) -> bytes:
    """:func:`matmul_encoder` of ``model`` when it agrees with the ``stock`` encoder on a probe block, else
    ``stock`` (logged)."""
    try:
        candidate = matmul_encoder(model)
        if _agrees(candidate, stock):
            return candidate
        reason = "its output differs from the stock encoder's"
    except Exception as exc:  # noqa: BLE001 - another graph: the stock encoder is right, only slower
        reason = f"{type(exc).__name__}: {exc}"
    log.info("Silero VAD's encoder runs as exported: the matrix-product form was not kept (%s)", reason)
    return stock


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
