"""The number of speakers checked again after clustering, from direct speaker embeddings of each speaker's speech.

pyannote's clustering links window embeddings (one per local speaker and 10 s window, pooled under the segmentation
mask) with one distance threshold. Two things make it find too many speakers on real-world audio:

- **Music and noise**: a window's local speaker holds the voice and whatever plays under it, so the same voice over
  a louder stretch of the bed, or a local speaker that the segmentation model hears in the music, makes embeddings
  that lie apart from the voice's; they form a cluster of their own, a speaker with a few seconds of speech.
- **Long files**: the clustering sees thousands of embeddings, and the ones of windows with little or overlapped
  speech make clusters larger than pyannote's ``min_cluster_size`` (12): a 30-minute and a 3-hour two-speaker file
  gave 4 speakers.

Both are checked here on the speakers' own audio. Each speaker's reference is the mean of unit-normalised direct
CAM++ embeddings of its longest exclusive turns (at most ``max_turns``, each cut to its middle ``max_turn_seconds``;
the same stretches and embedding as :mod:`.reassign`), then, as long as there are two speakers or more:

1. a speaker with less than :data:`MIN_SPEECH` seconds of exclusive speech in all (counting its turns of at least
   :data:`.reassign.MIN_REGION`, silero-vad's shortest speech region: shorter ones are the segmentation's flicker,
   and a 3-hour file had a cluster of 183 turns of 0.02-0.23 s and one of 2.25 s), or with no exclusive turn as long
   as :data:`.reassign.MAX_REGION` (the length under which the pipeline takes a region's voice from the region's own
   embedding, not from the windows'), is merged into the speaker whose reference is nearest (cosine similarity) among
   those with more speech than it, the one with the least speech first: a person who says less than that in a whole
   file cannot be told from a stretch of music, a laugh or a mis-segmented edge, and one heard only in slivers is
   what the clustering makes of windows in which two voices answer each other quickly ("Hello?" "Oh, hello.",
   repeated through a long file), as long as another speaker is heard in a longer turn; the short regions are then
   given to a speaker each by :mod:`.reassign`;
2. the two speakers whose references are most alike are merged while their cosine similarity is at least
   :data:`MERGE_SIMILARITY`: two clusters of one voice.

A merged speaker's reference is the mean of its stretches' embeddings. Only labels change: the turns keep their
times (a speaker's turns that come to overlap or touch are joined). With ``num_speakers`` given nothing is merged,
and never below ``min_speakers``. This is the agglomerative clustering carried on with better embeddings and a
stopping rule of its own, as VBx re-estimates speakers from a first clustering (Landini et al., "Bayesian HMM
clustering of x-vector sequences (VBx) in speaker diarization", Computer Speech & Language 2022), and as whisperX's
and NeMo's pipelines re-check the speaker count from the embeddings' similarity (NeMo: the eigengap of the affinity
matrix). Constants: chosen on the tuning split of ``bench/conversations.py`` (docs/diarization.md, "Real-world
audio"), never on its held-out seeds.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import replace

import numpy as np

from whisper_subtitler.diarize.reassign import MAX_REGION, MAX_TURN_SECONDS, MAX_TURNS, MIN_REGION, Embed, unit

MIN_SPEECH = 3.0  # s of exclusive speech a speaker must have in the whole file, else it is merged into the nearest
MERGE_SIMILARITY = 0.6  # cosine similarity of two speakers' references from which they are one speaker


def speaker_stretches(
    exclusive, max_turns: int = MAX_TURNS, max_turn_seconds: float = MAX_TURN_SECONDS
) -> dict[Hashable, list[tuple[float, float]]]:
    """Per speaker label of ``exclusive`` (pyannote ``Annotation``), its ``max_turns`` longest turns of at least
    :data:`MIN_REGION` seconds (the earliest first on ties), each cut to its middle ``max_turn_seconds``: the
    ``(start, end)`` stretches (seconds, in time order) its reference embeds. Speakers with none are absent."""
    turns: dict[Hashable, list[tuple[float, float]]] = {}
    for segment, _, label in exclusive.itertracks(yield_label=True):
        if segment.duration >= MIN_REGION:
            turns.setdefault(label, []).append((float(segment.start), float(segment.end)))
    chosen = {}
    for label, spans in turns.items():
        spans = sorted(spans, key=lambda s: (-(s[1] - s[0]), s[0]))[:max_turns]
        cut = []
        for start, end in sorted(spans):
            excess = max(0.0, (end - start) - max_turn_seconds) / 2
            cut.append((start + excess, end - excess))
        chosen[label] = cut
    return chosen


def merges(
    speech: dict[Hashable, float],
    vectors: dict[Hashable, np.ndarray],
    min_speech: float = MIN_SPEECH,
    merge_similarity: float = MERGE_SIMILARITY,
    min_speakers: int = 1,
    longest: dict[Hashable, float] | None = None,
) -> dict[Hashable, Hashable]:
    """Which speakers to merge into which (module docstring, rules 1 and 2): ``{label: label it joins}``, chained
    merges resolved to the final label.

    ``speech`` gives each label's seconds of exclusive speech; ``longest`` its longest exclusive turn in seconds
    (``None``: not checked), a speaker whose turns are all shorter than :data:`.reassign.MAX_REGION` counting as one
    with too little speech while another speaker has a longer one; ``vectors`` each label's stretch embeddings
    ``(n, d)`` (labels with none cannot be compared: they are merged only by rule 1, into the speaker with the most
    speech). Pure; no randomness (ties go to the label that sorts first).
    """
    groups: dict[Hashable, list[Hashable]] = {label: [label] for label in sorted(speech, key=str)}

    def seconds(label: Hashable) -> float:
        return sum(speech[m] for m in groups[label])

    def heard_whole(label: Hashable) -> bool:  # one exclusive turn at least MAX_REGION long
        return longest is None or max(longest.get(m, 0.0) for m in groups[label]) >= MAX_REGION

    def minor(label: Hashable) -> bool:
        if seconds(label) < min_speech:
            return True
        # slivers only where another speaker is heard whole: fast talk broken up everywhere keeps its speakers
        return not heard_whole(label) and any(heard_whole(other) for other in groups if other != label)

    def reference(label: Hashable) -> np.ndarray | None:
        rows = [vectors[m] for m in groups[label] if m in vectors and len(vectors[m])]
        return unit(np.concatenate(rows)).mean(axis=0) if rows else None

    def similarity(a: Hashable, b: Hashable) -> float:
        ra, rb = reference(a), reference(b)
        if ra is None or rb is None:
            return -2.0
        return float(unit(ra[None])[0] @ unit(rb[None])[0])

    while len(groups) > max(1, min_speakers):
        labels = list(groups)
        small_ones = sorted((label for label in labels if minor(label)), key=lambda x: (seconds(x), str(x)))
        if small_ones:
            small = small_ones[0]
            # into a speaker with more speech: a sliver speaker must not grow a small one into a third voice
            others = [label for label in labels if label != small and seconds(label) > seconds(small)]
            others = others or [label for label in labels if label != small]
            if reference(small) is None:
                target = max(others, key=lambda x: (seconds(x), -labels.index(x)))
            else:
                target = max(others, key=lambda x: (similarity(small, x), -labels.index(x)))
        else:
            pairs = [(similarity(a, b), a, b) for i, a in enumerate(labels) for b in labels[i + 1 :]]
            best = max(pairs, key=lambda p: p[0])
            if best[0] < merge_similarity:
                break
            _, a, b = best
            small, target = (a, b) if seconds(a) < seconds(b) else (b, a)
        groups[target] += groups.pop(small)
    return {member: label for label, members in groups.items() for member in members if member != label}


def relabel_all(annotation, mapping: dict[Hashable, Hashable]):
    """``annotation`` (pyannote ``Annotation``) with the labels of ``mapping`` renamed, each speaker's overlapping
    or touching turns joined. A new annotation."""
    if not mapping:
        return annotation
    return annotation.rename_labels(mapping=mapping).support()


def recount(
    output,
    embed: Embed,
    min_speakers: int = 1,
    min_speech: float = MIN_SPEECH,
    merge_similarity: float = MERGE_SIMILARITY,
):
    """pyannote's ``DiarizeOutput`` ``output`` with speakers merged by the rules of the module docstring; a new
    ``DiarizeOutput``, or ``output`` itself when nothing merges.

    ``embed(spans)`` embeds ``n`` stretches ``(start, end)`` (seconds) of the file's audio, ``(n, dimension)``
    (:func:`.reassign.embedder`). ``speaker_embeddings`` (the clustering's centroids, one row per label) keep the
    rows of the labels left.
    """
    exclusive = output.exclusive_speaker_diarization
    labels = output.speaker_diarization.labels()
    if len(labels) <= max(1, min_speakers):
        return output
    speech = {label: 0.0 for label in labels}
    longest = {label: 0.0 for label in labels}
    for segment, _, label in exclusive.itertracks(yield_label=True):
        if segment.duration >= MIN_REGION:  # shorter turns are the segmentation's flicker, not speech
            speech[label] = speech.get(label, 0.0) + float(segment.duration)
        longest[label] = max(longest.get(label, 0.0), float(segment.duration))
    stretches = speaker_stretches(exclusive)
    spans: list[tuple[float, float]] = [span for label in labels for span in stretches.get(label, [])]
    embedded = embed(spans) if spans else np.zeros((0, 1))
    vectors, done = {}, 0
    for label in labels:
        n = len(stretches.get(label, []))
        vectors[label] = embedded[done : done + n]
        done += n
    mapping = merges(speech, vectors, min_speech, merge_similarity, min_speakers, longest)
    if not mapping:
        return output
    diarization = relabel_all(output.speaker_diarization, mapping)
    centroids = output.speaker_embeddings
    if centroids is not None and len(centroids) == len(labels):
        centroids = centroids[[labels.index(label) for label in diarization.labels()]]
    return replace(
        output,
        speaker_diarization=diarization,
        exclusive_speaker_diarization=relabel_all(exclusive, mapping),
        speaker_embeddings=centroids,
    )


def spans_of(annotation) -> Sequence[tuple[float, float, Hashable]]:
    """``(start, end, label)`` of every turn of ``annotation``, in time order (for logs and tests)."""
    return [(float(s.start), float(s.end), label) for s, _, label in annotation.itertracks(yield_label=True)]
