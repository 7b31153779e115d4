"""Local speaker segmentation on sliding windows: pyannote's ``Inference``, with three savings on the CPU.

pyannote's ``SpeakerDiarization`` runs its segmentation model (segmentation-3.0: SincNet and a 4-layer BiLSTM)
on 10 s windows that start every second, and keeps every window's output as it is (``skip_aggregation``).
:class:`SegmentationInference` gives the same windows and the same outputs, with:

- **windows without speech skipped.** When the file dict carries ``speech`` (the VAD's speech regions,
  ``(start, end)`` seconds), a window that no region (widened by :data:`SPEECH_PAD`) touches is not run
  through the model: its output is "nobody speaks" (all zeros), which is what the model says of silence. A
  file that is mostly pauses (a lecture with long breaks, a sparse recording) costs what its speech costs.
- **both cores used, without lock-step.** The BiLSTM is hundreds of small sequential matrix products per
  window: split inside one operation over several threads, the threads wait for each other at every step and
  collapse when other processes share the cores. Here the windows are split into parts, each run on one
  intra-op thread in its own worker (as :meth:`.campplus.CAMPPlusEmbedding._frames_on_all_cores` does), and
  torch's thread count is restored afterwards.
- **the first convolution shared.** Consecutive windows overlap by nine tenths; the model's largest
  convolution runs once over each stretch of consecutive windows instead of once per window (:mod:`.sincnet`).

On other devices, and without ``speech``, the windows and their batches are pyannote's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch
import torch.nn.functional as F
from pyannote.audio.core.inference import Inference
from pyannote.audio.utils.multi_task import map_with_specifications
from pyannote.core import SlidingWindow, SlidingWindowFeature

from whisper_subtitler.diarize import sincnet

SPEECH_PAD = 0.5  # s: a window within this distance of a speech region is run (the VAD's edges are not exact)


def windows_with_speech(
    starts: np.ndarray, duration: float, speech: Sequence[tuple[float, float]] | None, pad: float = SPEECH_PAD
) -> np.ndarray:
    """Which windows ``[start, start + duration]`` (seconds) touch a speech region widened by ``pad``:
    ``(num_windows,)`` bool. ``speech=None`` (no VAD ran) keeps every window."""
    if speech is None:
        return np.ones(len(starts), dtype=bool)
    keep = np.zeros(len(starts), dtype=bool)
    for start, end in speech:
        keep |= (starts <= end + pad) & (starts + duration >= start - pad)
    return keep


def window_at(waveform: torch.Tensor, start: int, window: int) -> torch.Tensor:
    """``waveform[:, start:start + window]`` ``(channels, window)`` samples, zero-padded past the end."""
    piece = waveform[:, start : start + window]
    return piece if piece.shape[-1] == window else F.pad(piece, (0, window - piece.shape[-1]))


def _to_numpy(output: torch.Tensor, conversion, **kwargs) -> np.ndarray:
    return conversion(output).cpu().numpy()


class SegmentationInference(Inference):
    """pyannote ``Inference`` for the segmentation step of :class:`~.embedded.OfflineSpeakerDiarization`.

    Takes pyannote's arguments; ``file["speech"]`` (optional) lists the speech regions in seconds. Returns what
    pyannote's ``Inference`` returns with ``skip_aggregation=True``: a ``SlidingWindowFeature`` of shape
    ``(num_windows, num_frames, local_speakers)`` on ``SlidingWindow(start=0, duration, step)``.
    """

    _speech: Sequence[tuple[float, float]] | None = None

    def __call__(self, file, hook: Callable | None = None):
        self._speech = file.get("speech") if isinstance(file, Mapping) else None
        try:
            return super().__call__(file, hook=hook)
        finally:
            self._speech = None

    def slide(self, waveform: torch.Tensor, sample_rate: int, hook: Callable | None):
        """The outputs of every window of ``waveform`` ``(channels, n_samples)``; see the module docstring."""
        if not self.skip_aggregation or (self.device.type != "cpu" and self._speech is None):
            return super().slide(waveform, sample_rate, hook)
        window = self.model.audio.get_num_samples(self.duration)
        step = round(self.step * sample_rate)
        n_samples = waveform.shape[-1]
        # pyannote's windows: every complete one, then one zero-padded window for the rest (if any)
        complete = 0 if n_samples < window else (n_samples - window) // step + 1
        padded = n_samples < window or (n_samples - window) % step > 0
        num_windows = complete + int(padded)
        starts = np.arange(num_windows) * step / sample_rate
        keep = np.nonzero(windows_with_speech(starts, self.duration, self._speech))[0]

        def run(indices: np.ndarray) -> np.ndarray:
            if not sincnet.supports(self.model) or waveform.shape[0] != 1:
                return self.infer(torch.stack([window_at(waveform, k * step, window) for k in indices]))
            # consecutive windows share their first convolution (see .sincnet)
            runs = np.split(indices, np.nonzero(np.diff(indices) != 1)[0] + 1)
            with torch.inference_mode():
                scores = torch.cat([sincnet.segment(self.model, waveform, r * step, window) for r in runs])
            return map_with_specifications(self.model.specifications, _to_numpy, scores, self.conversion)

        # on the CPU, at least one batch per thread, so that short files use every core too
        size = (
            self.batch_size
            if self.device.type != "cpu"
            else max(1, min(self.batch_size, -(-len(keep) // torch.get_num_threads())))
        )
        batches = [keep[i : i + size] for i in range(0, len(keep), size)]
        total = max(len(batches), 1)
        if hook is not None:
            hook(completed=0, total=total)
        outputs: np.ndarray | None = None
        for done, results in enumerate(self._run(batches, run), 1):
            indices, scores = results
            if outputs is None:
                outputs = np.zeros((num_windows, *scores.shape[1:]), dtype=scores.dtype)
            outputs[indices] = scores
            if hook is not None:
                hook(completed=done, total=total)
        if outputs is None:  # no window has speech: the output of one silent window gives the shape
            with torch.inference_mode():
                silent = self.infer(torch.zeros(1, waveform.shape[0], window))
            outputs = np.zeros((num_windows, *silent.shape[1:]), dtype=silent.dtype)
        return SlidingWindowFeature(outputs, SlidingWindow(start=0.0, duration=self.duration, step=self.step))

    def _run(self, batches: list[np.ndarray], run: Callable[[np.ndarray], np.ndarray]):
        """Yield ``(window indices, outputs)`` per batch, in order; on the CPU, batches run in parallel workers
        with one intra-op thread each."""

        def infer(indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            return indices, run(indices)

        threads = torch.get_num_threads()
        if self.device.type != "cpu" or threads < 2 or len(batches) < 2:
            yield from map(infer, batches)
            return
        torch.set_num_threads(1)
        try:
            with ThreadPoolExecutor(min(threads, len(batches)), thread_name_prefix="segmentation") as pool:
                yield from pool.map(infer, batches)
        finally:
            torch.set_num_threads(threads)
