"""Speaker clusters named from the voice library, and the batch's unnamed voices kept apart consistently.

Each speaker cluster of a file (the diarization's ``SPEAKER_xx``) has one speaker embedding (:mod:`.embed`); each
enrolled voice one reference (:attr:`.library.Voice.embedding`). Scores are cosine similarities ``(clusters,
voices)``. A cluster may take a voice's name when

1. its similarity to that voice is at least :data:`THRESHOLD`, and
2. it beats the cluster's next-best voice by at least :data:`MARGIN` (with one voice in the library: by the
   threshold alone);

then the names go to the clusters by the assignment of largest total similarity over those pairs (the Hungarian
method, ``scipy.optimize.linear_sum_assignment``; Kuhn 1955), so that two clusters never get one name: a voice that
the diarization split in two clusters names the closer one. This is the open-set identification rule of speaker
recognition (accept the best-scoring enrolled speaker only above a threshold), with the margin of a ratio test.
Naming no one is always allowed; a wrong name is the worse error, so :data:`THRESHOLD` and :data:`MARGIN` are
chosen for precision on tuning data and reported on held-out data (``bench/voices.py``, ``docs/voices.md``).

The batch's unnamed voices (:class:`SessionVoices`, ``--voices`` over several files): the clusters that no library
voice names are compared, by the same rule, with the unnamed voices of the files before them in the batch (input
order); a match takes that voice's label, the others get new labels ``SPEAKER_A``, ``SPEAKER_B``... in the order
they first speak. A voice's reference is the mean of its clusters' unit-normalised embeddings, weighted by seconds
of speech. Same inputs in the same order, same labels. Pure: numpy (and scipy's assignment).
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from whisper_subtitler.types import Diarization, VoiceMatch

# Chosen on the tuning split of bench/voices.py (docs/voices.md): no false name and every enrolled voice named from
# 0.475 to 0.70 (the highest score of a wrong voice was 0.47, the lowest of the right one 0.71); the middle of that
# range, the higher of its two middle points. Held out: precision 1.0, recall 1.0 (bench/records/voices.json).
THRESHOLD = 0.6
# Not tuned (no trial of that set is decided by it): a cluster that two enrolled voices both fit within 0.1 is not
# named, as the short-region re-assignment's margin of CAM++ similarities (diarize.reassign.MARGIN, 0.075) does.
MARGIN = 0.1
TOP = 3  # best library voices recorded per cluster (VoiceMatch.scores)


@dataclass(frozen=True)
class VoicesOptions:
    """``--voices``: name speakers from the library in ``directory`` (``None``: the user's data folder,
    :func:`.library.library_path`). ``threshold`` and ``margin``: the naming rule (module docstring). ``session``:
    label the batch's unnamed voices ``SPEAKER_A``... consistently across its files (the CLI; the server names
    each request on its own)."""

    directory: Path | None = None
    threshold: float = THRESHOLD
    margin: float = MARGIN
    session: bool = True


@dataclass(frozen=True)
class Cluster:
    """One speaker cluster of a file: the diarization's ``label``, its speaker ``embedding`` ``(dimension,)`` and
    the ``seconds`` of speech embedded."""

    label: str
    embedding: np.ndarray
    seconds: float


def cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine similarities ``(n, m)`` between the rows of ``a`` ``(n, d)`` and ``b`` ``(m, d)`` (a zero row scores 0).
    Raises ValueError when the dimensions differ."""
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1]:
        raise ValueError(f"embeddings {a.shape} and {b.shape}: expected (n, d) and (m, d)")
    norm_a = np.linalg.norm(a, axis=1, keepdims=True)
    norm_b = np.linalg.norm(b, axis=1, keepdims=True)
    a = a / np.where(norm_a > 0, norm_a, 1.0)
    b = b / np.where(norm_b > 0, norm_b, 1.0)
    return (a.astype(np.float64) @ b.astype(np.float64).T).astype(np.float64)


def assign(scores: np.ndarray, threshold: float = THRESHOLD, margin: float = MARGIN) -> dict[int, int]:
    """Which column (voice) each row (cluster) of ``scores`` ``(clusters, voices)`` is named after: ``{row:
    column}`` for the rows the rule of the module docstring names, no column twice. Deterministic."""
    rows, columns = scores.shape
    if rows == 0 or columns == 0:
        return {}
    ordered = -np.sort(-scores, axis=1)
    runner_up = ordered[:, 1] if columns > 1 else np.full(rows, -np.inf)
    allowed = (scores >= threshold) & (scores - runner_up[:, None] >= margin) & (scores >= ordered[:, :1])
    if not allowed.any():
        return {}
    from scipy.optimize import linear_sum_assignment  # type: ignore[import-untyped]  # with pyannote (diarize extra)

    gain = np.where(allowed, scores + 2.0, 0.0)  # every allowed pair outweighs leaving its row unnamed
    chosen_rows, chosen_columns = linear_sum_assignment(gain, maximize=True)
    return {int(r): int(c) for r, c in zip(chosen_rows, chosen_columns) if allowed[r, c]}


def session_label(index: int) -> str:
    """``SPEAKER_A``, ..., ``SPEAKER_Z``, ``SPEAKER_AA``, ...: the batch's ``index``-th unnamed voice (from 0)."""
    letters = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        letters = string.ascii_uppercase[rest] + letters
    return f"SPEAKER_{letters}"


class SessionVoices:
    """The unnamed voices heard so far in a batch, to label the same voice alike in every file (module docstring).

    Not thread-safe: the files of a batch are named one after another, in input order."""

    def __init__(self, threshold: float = THRESHOLD, margin: float = MARGIN) -> None:
        self.threshold = threshold
        self.margin = margin
        self.labels: list[str] = []
        self._sums: list[np.ndarray] = []  # seconds-weighted sums of unit embeddings, one per voice

    def references(self, dimension: int) -> np.ndarray:
        """The voices' references ``(voices, dimension)``."""
        if not self._sums:
            return np.zeros((0, dimension))
        return np.stack([s / max(float(np.linalg.norm(s)), 1e-12) for s in self._sums])

    def label(self, clusters: Sequence[Cluster]) -> dict[str, tuple[str, float | None]]:
        """For each of ``clusters`` (one file's unnamed clusters, in order of first appearance), its label and the
        similarity to the voice it matched (None for a new voice): ``{cluster label: (label, score)}``. Voices
        matched take the clusters' embeddings into their references; the others become new voices."""
        if not clusters:
            return {}
        vectors = np.stack([c.embedding for c in clusters]).astype(np.float64)
        scores = cosine(vectors, self.references(vectors.shape[1]))
        matched = assign(scores, self.threshold, self.margin)
        result: dict[str, tuple[str, float | None]] = {}
        for row, cluster in enumerate(clusters):
            weight = max(cluster.seconds, 1e-3)
            vector = vectors[row] / max(float(np.linalg.norm(vectors[row])), 1e-12)
            if row in matched:
                k = matched[row]
                self._sums[k] = self._sums[k] + weight * vector
                result[cluster.label] = (self.labels[k], float(scores[row, k]))
            else:
                self.labels.append(session_label(len(self.labels)))
                self._sums.append(weight * vector)
                result[cluster.label] = (self.labels[-1], None)
        return result


def name_clusters(
    clusters: Sequence[Cluster],
    names: Sequence[str],
    references: np.ndarray,
    session: SessionVoices | None = None,
    threshold: float = THRESHOLD,
    margin: float = MARGIN,
) -> tuple[VoiceMatch, ...]:
    """One ``VoiceMatch`` per cluster (in the order given: first appearance): named after one of the library's
    voices ``names`` (references ``(voices, dimension)``) by :func:`assign`, else labelled by ``session`` when given,
    else keeping its label. ``scores`` hold the :data:`TOP` best voices, rounded to 4 decimals."""
    if not clusters:
        return ()
    vectors = np.stack([c.embedding for c in clusters])
    scores = cosine(vectors, references) if len(names) else np.zeros((len(clusters), 0))
    named = assign(scores, threshold, margin)
    best = [
        tuple((names[k], round(float(scores[row, k]), 4)) for k in np.argsort(-scores[row], kind="stable")[:TOP])
        for row in range(len(clusters))
    ]
    unnamed = [c for row, c in enumerate(clusters) if row not in named]
    labelled = session.label(unnamed) if session is not None else {}
    matches = []
    for row, cluster in enumerate(clusters):
        seconds = round(cluster.seconds, 3)
        if row in named:
            matches.append(VoiceMatch(cluster.label, names[named[row]], "library", best[row], seconds))
        elif cluster.label in labelled:
            matches.append(VoiceMatch(cluster.label, labelled[cluster.label][0], "session", best[row], seconds))
        else:
            matches.append(VoiceMatch(cluster.label, cluster.label, None, best[row], seconds))
    return tuple(matches)


def relabel(diarization: Diarization, matches: Sequence[VoiceMatch]) -> Diarization:
    """``diarization`` with each cluster's turns under its match's ``speaker`` label (turns of clusters without a
    match keep theirs)."""
    mapping = {m.cluster: m.speaker for m in matches}

    def turns(ts):
        return tuple(replace(t, speaker=mapping.get(t.speaker, t.speaker)) for t in ts)

    return Diarization(turns(diarization.turns), turns(diarization.exclusive_turns))
