"""CAM++'s frame-level network on ONNX Runtime, for the CPU: the same features, in about half the time.

The pooled speaker embeddings (:mod:`.pooled`) run CAM++'s frame-level network (its 2-D convolutional front
end ``FCM``, then the TDNN and dense blocks, up to statistics pooling) over 40 s blocks of audio. On the CPU,
torch runs the front end's 2-D convolutions (32 channels over 80 mel bins x 100 frames per second), each
followed by its own BatchNorm and ReLU, one operation at a time; ONNX Runtime folds the BatchNorms into the
convolutions and fuses the activations. Measured on one thread (AVX-512 CPU, one 40 s block): front end 0.18 s
against 0.48-0.57 s, whole frame-level network 0.56-0.68 s against 0.92-1.17 s, outputs equal to 2e-5
(``docs/diarization.md``). ``torch.jit.optimize_for_inference`` reached the same speed on the front end but
took 7.7 s to prepare the whole network, in every process.

The network is exported once per checkpoint and torch version with ``torch.onnx.export`` (the ``onnx``
package, a base dependency) and kept in ``$XDG_CACHE_HOME/whisper-subtitler/models``, written
atomically; a read-only cache keeps the export in memory. Without ``onnx``, or when the export or ONNX
Runtime fails, :func:`cpu_session` returns ``None`` and the caller stays on torch (logged once).
"""

from __future__ import annotations

import hashlib
import logging
import tempfile
from pathlib import Path

import numpy as np
import torch

from whisper_subtitler.cache import write_atomically

log = logging.getLogger(__name__)

EXPORT_FORMAT = 1  # bump when the exported graph changes (inputs, outputs, opset), so old cache files are unused
OPSET = 17
WHAT = "the CAM++ ONNX export"  # in the log line of a cache that cannot be written


class FrameNetwork(torch.nn.Module):
    """CAM++ from its filterbank features to its frame-level features, the part before statistics pooling:
    ``(batch, 80, n_fbank_frames)`` -> ``(batch, 512, n_fbank_frames // 2)`` (its first TDNN has stride 2)."""

    def __init__(self, campplus: torch.nn.Module) -> None:
        super().__init__()
        self.head: torch.nn.Module = campplus.head  # type: ignore[assignment]
        self.layers = torch.nn.ModuleList()
        xvector: torch.nn.Module = campplus.xvector  # type: ignore[assignment]
        for name, layer in xvector.named_children():
            if name == "stats":
                break
            self.layers.append(layer)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        x = self.head(features)
        for layer in self.layers:
            x = layer(x)
        return x


class OnnxFrameNetwork:
    """A :class:`FrameNetwork` as an ONNX Runtime session on the CPU with one intra-op thread (callers run
    several blocks at once in their own threads; ``InferenceSession.run`` is thread-safe).

    Called with ``(batch, 80, n_fbank_frames)`` float32 CPU features, returns the torch tensor the network
    returns. Deterministic: one thread, fixed graph.
    """

    def __init__(self, model: bytes | Path) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.log_severity_level = 3  # errors only: ORT's warnings about unused initialisers are noise here
        source = str(model) if isinstance(model, Path) else model
        self.session = ort.InferenceSession(source, sess_options=options, providers=["CPUExecutionProvider"])
        self.expected: torch.Tensor | None = None  # torch's output on the check's input, once checked

    def __call__(self, features: torch.Tensor) -> torch.Tensor:
        inputs = {"features": np.ascontiguousarray(features.detach().cpu().numpy(), dtype=np.float32)}
        return torch.from_numpy(self.session.run(["frames"], inputs)[0])


def export_key(checkpoint: Path) -> str:
    """16 hex digits naming the export of ``checkpoint``: its bytes, torch's version and :data:`EXPORT_FORMAT`."""
    digest = hashlib.sha256()
    with open(checkpoint, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    digest.update(f"{torch.__version__}/{EXPORT_FORMAT}/{OPSET}".encode())
    return digest.hexdigest()[:16]


def export(network: FrameNetwork) -> bytes:
    """``network`` as an ONNX model (bytes), with the batch and frame axes dynamic.

    Raises ImportError without the ``onnx`` package, or what ``torch.onnx.export`` raises.
    """
    import warnings

    import onnx  # noqa: F401  (torch's exporter needs it; fail here with a clear ImportError)

    example = torch.zeros(1, 80, 200)
    with tempfile.TemporaryDirectory(prefix="whisper-subtitler-onnx-") as work, warnings.catch_warnings():
        path = Path(work) / "frames.onnx"
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation notice; the export is checked below
        torch.onnx.export(
            network.eval(),
            (example,),
            path,
            dynamo=False,
            opset_version=OPSET,
            input_names=["features"],
            output_names=["frames"],
            dynamic_axes={"features": {0: "batch", 2: "fbank_frames"}, "frames": {0: "batch", 2: "frames"}},
        )
        return path.read_bytes()


def cpu_session(
    network: FrameNetwork, checkpoint: Path | None, directory: Path | None = None
) -> OnnxFrameNetwork | None:
    """An ONNX Runtime session of ``network`` (CAM++ loaded from ``checkpoint``), exported once and cached in
    ``directory`` (default: ``models.converted_cache_dir()``, beside the converted Whisper checkpoints), checked
    against torch on a short input.

    The check runs torch once, when the export is made (or first found without its record): torch's output on
    the fixed input is kept beside the export (``.check.npy``, 300 KB), and a later process compares the session's
    output with that record instead of running CAM++ on torch again (0.3-0.5 s of every diarized process on 2
    cores; issue 48).

    Returns ``None`` (and logs why) when ``onnx`` is not installed, or the export, the session or the check
    fails: the caller then runs ``network`` with torch. A cache file that does not load or does not match its
    record is exported again.
    """
    from whisper_subtitler.cache import converted_cache_dir

    directory = converted_cache_dir() if directory is None else directory
    target = directory / f"campplus-frames-{export_key(checkpoint)}.onnx" if checkpoint is not None else None
    try:
        if target is not None and target.is_file():
            try:
                return _checked_cached(OnnxFrameNetwork(target), network, check_record(target))
            except Exception as exc:  # noqa: BLE001 - a damaged cache file: export it again
                log.info("ONNX export %s does not load (%s); exporting again", target, exc)
        model = export(network)
        session = _checked(OnnxFrameNetwork(model), network)
    except ImportError as exc:
        log.info("CAM++ stays on torch: %s (pip install onnx for the faster ONNX Runtime path)", exc)
        return None
    except Exception as exc:  # noqa: BLE001 - any exporter or runtime failure: torch still works
        log.info("CAM++ stays on torch: the ONNX Runtime path failed (%s: %s)", type(exc).__name__, exc)
        return None
    if target is not None:
        write_atomically(target, model, WHAT)
        write_atomically(check_record(target), _record(session.expected), WHAT)
    return session


def check_record(target: Path) -> Path:
    """Where the torch output that the export ``target`` was checked against is kept: ``NAME.check.npy``."""
    return target.with_suffix(".check.npy")


def _check_input() -> torch.Tensor:
    """The fixed input of the check: ``(1, 80, 300)`` standard normal features (3 s), seed 0."""
    generator = torch.Generator().manual_seed(0)
    return torch.randn(1, 80, 300, generator=generator)


def _matches(session: OnnxFrameNetwork, expected: torch.Tensor) -> bool:
    """Whether ``session`` gives ``expected`` on :func:`_check_input` (to 1e-3)."""
    got = session(_check_input())
    return got.shape == expected.shape and torch.allclose(got, expected, atol=1e-3, rtol=1e-3)


def _checked(session: OnnxFrameNetwork, network: FrameNetwork) -> OnnxFrameNetwork:
    """``session`` when it gives ``network``'s output on a fixed 3 s input (to 1e-3), with that torch output as
    ``session.expected``; ValueError otherwise."""
    with torch.inference_mode():
        expected = network(_check_input())
    if not _matches(session, expected):
        raise ValueError("the ONNX Runtime output differs from torch's")
    session.expected = expected
    return session


def _checked_cached(session: OnnxFrameNetwork, network: FrameNetwork, record: Path) -> OnnxFrameNetwork:
    """``session`` of a cached export checked against its ``record`` of torch's output (no torch run), or, when the
    record is missing or unreadable, against torch (:func:`_checked`), the record then written. ValueError when the
    session's output differs from the record's or from torch's."""
    try:
        expected = torch.from_numpy(np.load(record, allow_pickle=False))
    except (OSError, ValueError):
        session = _checked(session, network)
        write_atomically(record, _record(session.expected), WHAT)
        return session
    if not _matches(session, expected):
        raise ValueError(f"the ONNX Runtime output differs from the record {record.name}")
    session.expected = expected
    return session


def _record(expected: torch.Tensor | None) -> bytes:
    """``expected`` (a checked session's) as the bytes of a ``.npy`` file."""
    import io

    assert expected is not None, "only a checked session has a record"
    buffer = io.BytesIO()
    np.save(buffer, expected.numpy(), allow_pickle=False)
    return buffer.getvalue()
