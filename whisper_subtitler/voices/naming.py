"""``--voices`` in a run: each file's speaker clusters named from the library, the rest labelled across the batch.

    namer = VoiceNamer(VoicesOptions())                 # reads and checks the library now (exit 3 when unusable)
    diarization, matches = namer.name(audio, diarization)  # per file, in input order

One namer serves a whole batch: it holds the batch's unnamed voices (:class:`.matching.SessionVoices`), so the files
must be named one after another in input order (the local executor does; each Ray worker keeps its own).
"""

from __future__ import annotations

from whisper_subtitler.types import Audio, Diarization, VoiceMatch
from whisper_subtitler.voices.matching import SessionVoices, VoicesOptions, name_clusters, relabel


class VoiceNamer:
    """The library of ``options.directory`` read once (``library.read_library``, checked against this installation's
    CAM++ identity), and the batch's unnamed voices when ``options.session``. Raises VoiceLibraryError (exit 3)
    for a library file that cannot be used, MissingRequirementError without the CAM++ weights."""

    def __init__(self, options: VoicesOptions) -> None:
        from whisper_subtitler.voices.embed import identity
        from whisper_subtitler.voices.library import library_path, read_library

        self.options = options
        self.library = read_library(library_path(options.directory), identity())
        self._references = self.library.matrix()
        self.session = SessionVoices(options.threshold, options.margin) if options.session else None

    def name(self, audio: Audio, diarization: Diarization) -> tuple[Diarization, tuple[VoiceMatch, ...]]:
        """``diarization`` of ``audio`` (16 kHz mono, the whole file) with its clusters relabelled, and how each
        cluster matched (``types.VoiceMatch``, in order of first appearance). Clusters are embedded from the
        exclusive turns (one speaker at a time), as enrolment clips are (:mod:`.embed`)."""
        from whisper_subtitler.voices.embed import speaker_clusters

        turns = diarization.exclusive_turns or diarization.turns
        if not turns:
            return diarization, ()
        clusters = speaker_clusters(audio.samples, turns)
        order = {label: k for k, label in enumerate(diarization.speakers)}
        clusters.sort(key=lambda c: order.get(c.label, len(order)))
        matches = name_clusters(
            clusters,
            self.library.names,
            self._references,
            self.session,
            self.options.threshold,
            self.options.margin,
        )
        return relabel(diarization, matches), matches
