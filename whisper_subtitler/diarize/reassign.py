"""Short speech regions re-assigned to speakers by a direct speaker embedding of their own audio.

pyannote's pipeline decides who speaks in 10 s windows: the segmentation model gives each window up to three local
speakers, each local speaker gets one embedding pooled over the window, and clustering links them across windows. A
short utterance that the segmentation puts under the same local speaker as another person's utterance in every window
that holds it (two "Hello?" a second apart on a phone line, ``sample.wav``) cannot be separated by the clustering, and
the reconstruction may then split it between two speakers mid-word. Its own audio, embedded on its own, usually says
clearly whose voice it is.

This step is a resegmentation after clustering, as VBx resegments a first diarization with its speakers' models
(Landini, Profant, Diez, Burget, "Bayesian HMM clustering of x-vector sequences (VBx) in speaker diarization",
Computer Speech & Language 2022) and pyannote's ``Resegmentation`` pipeline does with its segmentation model, restricted
to where the windows are blind: the speech regions that pauses separate from the rest and that are short.

1. Regions: the tight speech regions of silero-vad (``embedded.TRIM_VAD``, the ones the turns are cut to) of at most
   ``max_region`` seconds; a pause of at least 100 ms lies on both sides of each. Short and bounded by pauses, such
   a region is taken to be one person's.
2. Speakers: a speaker's reference is the mean of the unit-normalised direct CAM++ embeddings of its longest exclusive
   turns (longer than ``max_region``, so never a region being decided; at most ``max_turns`` of them, each cut to its
   middle ``max_turn_seconds``): audio embedded the same way as the regions, unlike the clustering's centroids of
   window embeddings pooled under a segmentation mask.
3. Decision, only for the regions that the diarization splits between two speakers or more (the clustering's blind
   spot): cosine similarity of the region's embedding to each reference; the region goes, whole, to the nearest
   speaker when that one beats the runner-up by ``margin``, else nothing changes. A region that the diarization gives
   wholly to one speaker keeps it: on a 0.4-0.6 s "Hello?" under a music bed the clustering, which hears the
   segmentation's 10 s of context, was right more often than CAM++ on the region alone (on the tuning split, each of
   the six times the step turned such a region over, it made it wrong). Regions holding a speaker with no reference
   (no long turn) and files with fewer than two references are left as they are.

Only labels move: a region's diarized time (the union of its turns) stays what it was, given to one speaker, in both
the diarization and the exclusive diarization. No randomness. The cost is one CAM++ pass over the short regions and
over at most ``max_turns * max_turn_seconds`` seconds per speaker, and nothing when no region is short.
The constants were chosen on the tuning set, the re-arranged conversations and two held-out sets, never on
``sample.wav`` alone (a grid, ``docs/diarization.md``, "Accuracy"); which regions are decided, on the tuning split of
``bench/conversations.py`` (``bench/notes/diarization.md``, "Short regions: only the split ones").
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, replace

import numpy as np

# Chosen on a grid over the tuning set, the re-arranged conversations and held-out sets, where no region changed
# for the worse and DER is flat around them (docs/diarization.md, "Accuracy").
MAX_REGION = 1.5  # s: longer speech regions are left to the clustering (flat from 1.25 to 2.0 s)
MARGIN = 0.075  # cosine similarity by which the nearest reference must beat the runner-up (no wrong change: 0.05-0.1)
MAX_TURNS = 4  # per speaker: its longest exclusive turns make its reference (2 made a wrong change; flat 3-8)
MAX_TURN_SECONDS = 4.0  # s: the middle of a longer turn is embedded (flat from 4 to 6 s)
MIN_REGION = 0.25  # s: silero-vad's shortest speech region (min_speech_duration_ms); keeps CAM++ off slivers
LENGTH_STEP = 0.05  # s: embedded stretches are trimmed to a multiple of this, so that many have the same length
EMBED_BATCH = 32  # stretches of audio of the same length per CAM++ call
BATCHES_AT_ONCE = 8  # such calls computed together over the cores (their frames: at most about 40 MB)

Embed = Callable[[Sequence[tuple[float, float]]], np.ndarray]  # n spans (start, end) in seconds -> (n, dimension)


@dataclass(frozen=True)
class Settings:
    """The constants above, as one value (the evaluation script tries others)."""

    max_region: float = MAX_REGION
    margin: float = MARGIN
    max_turns: int = MAX_TURNS
    max_turn_seconds: float = MAX_TURN_SECONDS


def short_regions(speech: Sequence[tuple[float, float]], max_region: float) -> list[tuple[float, float]]:
    """The ``(start, end)`` speech regions (seconds) from :data:`MIN_REGION` to ``max_region`` seconds long, in the
    order given."""
    return [(start, end) for start, end in speech if MIN_REGION <= end - start <= max_region]


def reference_turns(exclusive, settings: Settings = Settings()) -> dict[Hashable, list[tuple[float, float]]]:
    """Per speaker label, the stretches ``(start, end)`` (seconds, in time order) of the exclusive diarization
    ``exclusive`` (pyannote ``Annotation``) that make its reference: its turns longer than ``max_region``, the
    ``max_turns`` longest (the earliest first on ties), each cut to its middle ``max_turn_seconds``. Speakers with
    no such turn are absent."""
    turns: dict[Hashable, list[tuple[float, float]]] = {}
    for segment, _, label in exclusive.itertracks(yield_label=True):
        if segment.duration > settings.max_region:
            turns.setdefault(label, []).append((float(segment.start), float(segment.end)))
    chosen = {}
    for label, spans in turns.items():
        spans = sorted(spans, key=lambda s: (-(s[1] - s[0]), s[0]))[: settings.max_turns]
        cut = []
        for start, end in sorted(spans):
            excess = max(0.0, (end - start) - settings.max_turn_seconds) / 2
            cut.append((start + excess, end - excess))
        chosen[label] = cut
    return chosen


def unit(vectors: np.ndarray) -> np.ndarray:
    """Rows of ``vectors`` ``(n, d)`` scaled to unit Euclidean norm (zero rows stay zero)."""
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return vectors / np.where(norms > 0, norms, 1.0)


def nearest_clear(embeddings: np.ndarray, centroids: np.ndarray, margin: float) -> np.ndarray:
    """For each embedding ``(n, d)``, the index of the nearest centroid ``(k, d)`` by cosine similarity, or -1 when
    it beats the runner-up by less than ``margin`` (or ``k < 2``): ``(n,)`` int.

    Raises ValueError when the dimensions differ.
    """
    if embeddings.ndim != 2 or centroids.ndim != 2 or embeddings.shape[1] != centroids.shape[1]:
        raise ValueError(f"embeddings {embeddings.shape} and centroids {centroids.shape}: expected (n, d) and (k, d)")
    result = np.full(len(embeddings), -1, dtype=np.int64)
    if len(centroids) < 2 or len(embeddings) == 0:
        return result
    similarity = unit(embeddings) @ unit(centroids).T  # (n, k)
    order = np.argsort(-similarity, axis=1, kind="stable")
    best, second = order[:, 0], order[:, 1]
    rows = np.arange(len(embeddings))
    clear = similarity[rows, best] - similarity[rows, second] >= margin
    result[clear] = best[clear]
    return result


def relabel(annotation, region: tuple[float, float], label: Hashable):
    """``annotation`` (pyannote ``Annotation``) with the turns inside ``region`` ``(start, end)`` seconds replaced
    by their union, given to ``label``: the same diarized time, one speaker. A new annotation."""
    from pyannote.core import Segment

    window = Segment(*region)
    inside = annotation.crop(window, mode="intersection")
    if not inside:
        return annotation
    result = annotation.extrude(window, mode="intersection")
    for segment in inside.get_timeline().support():
        result[segment, "reassigned"] = label
    return result


def decide(
    diarization,
    exclusive,
    speech: Sequence[tuple[float, float]],
    embed: Embed,
    settings: Settings = Settings(),
    references: dict[Hashable, np.ndarray] | None = None,
) -> list[tuple[tuple[float, float], Hashable]]:
    """The short regions to re-assign and their new speaker: ``[((start, end), label), ...]``, times in seconds.

    ``diarization`` and ``exclusive`` are the pipeline's pyannote ``Annotation`` s, their turns already cut to
    ``speech`` (the tight speech regions, ``(start, end)`` seconds); ``embed(spans)`` embeds ``n`` stretches of the
    audio, ``(n, dimension)``. ``references`` (label -> ``(dimension,)``) replaces the speakers' references, e.g. by
    the clustering's centroids (for comparison). Only the short regions whose speakers all have a reference are
    embedded, and the references only when there is such a region.
    """
    from pyannote.core import Segment

    turns = reference_turns(exclusive, settings)
    labels = sorted(references if references is not None else turns, key=str)
    if len(labels) < 2:
        return []
    candidates = []
    for region in short_regions(speech, settings.max_region):
        inside = diarization.crop(Segment(*region), mode="intersection")
        present = set(inside.labels())
        if len(present) > 1 and present <= set(labels):
            candidates.append(region)
    if not candidates:
        return []
    if references is not None:
        centroids = np.stack([references[label] for label in labels])
    else:
        spans = [span for label in labels for span in turns[label]]
        owners = np.repeat(np.arange(len(labels)), [len(turns[label]) for label in labels])
        vectors = unit(embed(spans))
        centroids = np.stack([vectors[owners == k].mean(axis=0) for k in range(len(labels))])
    embeddings = embed(candidates)
    chosen = nearest_clear(embeddings, centroids, settings.margin)
    return [(region, labels[k]) for region, k in zip(candidates, chosen) if k >= 0]


def embedder(waveform, sample_rate: int, model) -> Embed:
    """``embed(spans)``: direct CAM++ embeddings ``(n, dimension)`` of ``n`` stretches ``(start, end)`` (seconds) of
    ``waveform`` (torch tensor ``(1, n_samples)`` or ``(n_samples,)`` at ``sample_rate`` Hz), by ``model`` (a
    :class:`~.campplus.CAMPPlusEmbedding`, in inference mode on its own device, with its CPU path on ONNX Runtime
    when it has one). Each span is trimmed to a whole number of :data:`LENGTH_STEP` (symmetrically: at most half a
    step off each edge, which is the VAD's padding), so that spans of equal length go through CAM++ in one call
    (0.8 s regions: 25 ms each alone, 8 ms each in a batch of 32), and up to :data:`BATCHES_AT_ONCE` such batches run
    together over every core (:meth:`~.campplus.CAMPPlusEmbedding.frames_of_many`: the speakers' stretches mostly
    differ in length, and one at a time left the other cores idle; issue 48). A span embedded once is not embedded
    again (the speaker count's check and the re-assignment share the speakers' stretches).

    Raises ValueError when ``sample_rate`` is not the model's.
    """
    import torch

    if sample_rate != model.audio.sample_rate:
        raise ValueError(f"audio at {sample_rate} Hz, the embedding model expects {model.audio.sample_rate} Hz")
    device = next(model.parameters()).device
    samples = waveform.reshape(-1)
    step = max(1, int(round(LENGTH_STEP * sample_rate)))
    known: dict[tuple[int, int], np.ndarray] = {}

    def cut(start: float, end: float) -> tuple[int, int]:
        first, last = int(round(start * sample_rate)), min(int(round(end * sample_rate)), len(samples))
        length = max(step, (last - first) // step * step)
        return max(0, min(first + (last - first - length) // 2, len(samples) - length)), length

    def embed(spans: Sequence[tuple[float, float]]) -> np.ndarray:
        cuts = [cut(start, end) for start, end in spans]
        new = sorted(set(cuts) - set(known), key=lambda c: (c[1], c[0]))
        batches = []  # stretches of one length, at most EMBED_BATCH each
        for length in sorted({length for _, length in new}):
            rows = [c for c in new if c[1] == length]
            batches += [rows[done : done + EMBED_BATCH] for done in range(0, len(rows), EMBED_BATCH)]
        for group in range(0, len(batches), BATCHES_AT_ONCE):
            together = batches[group : group + BATCHES_AT_ONCE]
            pieces = [torch.stack([samples[first : first + n] for first, n in b]).unsqueeze(1) for b in together]
            with torch.inference_mode():  # model(pieces), with CAM++'s CPU path (ONNX Runtime) when it has one
                # the batches' frame-level passes together, over every core: (batch, 1, length) -> (batch, 512, frames)
                for batch, frames in zip(together, model.frames_of_many([p.to(device) for p in pieces])):
                    weights = torch.ones(frames.shape[0], frames.shape[-1], device=frames.device)
                    vectors = model.embed_frames(frames, weights).float().cpu().numpy()  # (batch, d)
                    for c, vector in zip(batch, vectors):
                        known[c] = vector
        if not cuts:
            return np.zeros((0, model.dimension), dtype=np.float32)
        return np.stack([known[c] for c in cuts]).astype(np.float32)

    return embed


def reassign_short_regions(
    output, waveform, sample_rate: int, speech, model, settings: Settings = Settings(), embed: Embed | None = None
):
    """pyannote's ``DiarizeOutput`` ``output`` with its short speech regions re-assigned (module docstring); a new
    ``DiarizeOutput``, or ``output`` itself when nothing changes.

    ``waveform`` is the file's audio, a torch tensor ``(1, n_samples)`` (or ``(n_samples,)``) at ``sample_rate`` Hz;
    ``speech`` the tight speech regions ``(start, end)`` in seconds that the turns were cut to; ``model`` a
    :class:`~.campplus.CAMPPlusEmbedding` (``(batch, 1, samples) -> (batch, 192)``), run in inference mode on its
    own device; ``embed``, when given, an :func:`embedder` of the same audio and model to share. ``speaker_embeddings``
    (the clustering's centroids, one row per label of the diarization) are kept, their rows dropped for a speaker
    left with no turn. Raises ValueError when ``sample_rate`` is not the model's.
    """
    if embed is None:
        embed = embedder(waveform, sample_rate, model)
    changes = decide(output.speaker_diarization, output.exclusive_speaker_diarization, speech, embed, settings)
    if not changes:
        return output
    diarization, exclusive = output.speaker_diarization, output.exclusive_speaker_diarization
    before = diarization.labels()
    for region, label in changes:
        diarization = relabel(diarization, region, label)
        exclusive = relabel(exclusive, region, label)
    centroids = output.speaker_embeddings
    if centroids is not None and diarization.labels() != before and len(centroids) == len(before):
        centroids = centroids[[before.index(label) for label in diarization.labels()]]
    return replace(
        output, speaker_diarization=diarization, exclusive_speaker_diarization=exclusive, speaker_embeddings=centroids
    )
