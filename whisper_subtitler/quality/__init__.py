"""Subtitle quality: the faults of a subtitle file against the readability rules that cue building follows.

    from whisper_subtitler.quality import check_file
    report = check_file(Path("talk.srt"), CueOptions())   # FileReport: its cues, faults and figures
    report.failed                                         # True when a fault is an error or a warning

``read`` parses SRT (``srt``), WebVTT (``webvtt-py``) and ASS (``pysubs2``) into ``SubtitleCue``s; ``rules`` finds
the faults of each cue (``Fault``); ``report`` sums them up per file; ``against`` scores a file against a reference
(SubER, timing offsets). The rules are written out in ``docs/check.md``. Pure Python: no torch, no ffmpeg.
"""

from whisper_subtitler.quality.read import SubtitleCue, SubtitleFile, read_subtitles, shown_cues
from whisper_subtitler.quality.report import FileReport, check_file, report_of
from whisper_subtitler.quality.rules import KINDS, Fault, Severity, check_cues

__all__ = [
    "KINDS",
    "Fault",
    "FileReport",
    "Severity",
    "SubtitleCue",
    "SubtitleFile",
    "check_cues",
    "check_file",
    "read_subtitles",
    "report_of",
    "shown_cues",
]
