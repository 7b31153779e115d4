"""The smallest cluster that counts as a speaker (whisper_subtitler/diarize/embedded.py: ``min_cluster_size_of``,
``with_min_cluster_share``), on synthetic embeddings (fast).

Real three- and four-voice conversations: ``bench/speakers_real.py`` (``bench/records/speakers-real-*.json``).
"""

from __future__ import annotations

import numpy as np
import pytest

from whisper_subtitler.diarize import pyannote_compat  # noqa: F401  (prepares torchaudio before pyannote.audio)
from whisper_subtitler.diarize.embedded import (
    CLUSTERING_THRESHOLD,
    MIN_CLUSTER_FLOOR,
    MIN_CLUSTER_SHARE,
    MIN_CLUSTER_SIZE,
    min_cluster_size_of,
    with_min_cluster_share,
)


def test_min_cluster_size_follows_the_share_up_to_pyannotes_size():
    assert min_cluster_size_of(1000, MIN_CLUSTER_SHARE) == MIN_CLUSTER_SIZE
    assert min_cluster_size_of(80, 0.05) == 4
    assert min_cluster_size_of(80, 0.1) == 8  # pyannote's own rule, round(0.1 * n)
    assert min_cluster_size_of(10, 0.05) == MIN_CLUSTER_FLOOR
    assert min_cluster_size_of(10, 0.05, most=1) == 1


def groups(sizes: list[int], dimension: int = 16, spread: float = 0.08, seed: int = 0) -> np.ndarray:
    """Embeddings around ``len(sizes)`` orthogonal directions, ``sizes[k]`` around the k-th."""
    rng = np.random.default_rng(seed)
    rows = [np.eye(dimension)[k] + spread * rng.standard_normal((n, dimension)) for k, n in enumerate(sizes)]
    return np.concatenate(rows)


def clustering():
    from pyannote.audio.pipelines.clustering import AgglomerativeClustering

    result = AgglomerativeClustering(metric="cosine")
    result.instantiate({"method": "centroid", "min_cluster_size": MIN_CLUSTER_SIZE, "threshold": CLUSTERING_THRESHOLD})
    return result


@pytest.mark.parametrize(("share", "found"), [(0.1, 3), (0.05, 4)])
def test_a_speaker_with_few_embeddings_is_kept_with_a_smaller_share(share, found):
    """Four voices, one of them in 5 of 80 embeddings (a short, quick conversation): pyannote's rule (8) folds it into
    another voice; a share of 0.05 (4) keeps it."""
    embeddings = groups([30, 25, 20, 5])
    model = clustering()
    model.cluster = with_min_cluster_share(model, lambda: share)
    labels = model.cluster(embeddings.copy(), min_clusters=1, max_clusters=len(embeddings))
    assert len(set(labels.tolist())) == found
    assert model.min_cluster_size == MIN_CLUSTER_SIZE  # restored
