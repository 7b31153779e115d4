"""Cue building: timed words to subtitle cues by the readability rules (Netflix Timed Text Style Guide).

    from whisper_subtitler.cues import CueOptions, build_cues
    cues = build_cues(transcript, CueOptions(max_line_width=37), speech=vad_regions)

Pure logic: no torch, numpy or ffmpeg import.
"""

from whisper_subtitler.cues.builder import build_cues
from whisper_subtitler.cues.labels import SpeakerStyle, speaker_label
from whisper_subtitler.cues.options import CueOptions

__all__ = ["CueOptions", "SpeakerStyle", "build_cues", "speaker_label"]
