"""The voice library: speakers by name, from the speaker embeddings of clips of their voice.

    whisper-subtitler voices add Alice alice.wav        # enrol: one CAM++ embedding per clip (voices.enrol)
    whisper-subtitler transcribe --voices show.mp4      # name the clusters that match (voices.matching)

Modules, in the order a run uses them: :mod:`.library` (the versioned file in the user's data folder, pure),
:mod:`.matching` (clusters against voices: threshold, margin, one name per cluster; the batch's unnamed voices; pure),
:mod:`.embed` (the diarization's own CAM++ model on a speaker's speech, and the model's identity) and :mod:`.enrol`
(a clip checked and embedded). Importing this package imports neither torch nor pyannote.
"""

from __future__ import annotations

from whisper_subtitler.voices.library import VoiceLibrary, library_path
from whisper_subtitler.voices.matching import MARGIN, THRESHOLD, VoicesOptions

__all__ = ["MARGIN", "THRESHOLD", "VoiceLibrary", "VoicesOptions", "library_path"]
