"""The readability rules of cue building, as one frozen option set.

Defaults follow Netflix's Timed Text Style Guide (English template), the reference most subtitlers work to:
42 characters per line, 2 lines, 17 characters per second, 5/6 s to 7 s per cue, 2 frames between cues at
24 fps; Japanese, Chinese and Korean get their own guides' line width and reading speed (``cues.guides``). How
speakers are shown (``speaker_style``): ``cues.labels`` and ``docs/speakers-in-subtitles.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from whisper_subtitler.cues.labels import SpeakerStyle
from whisper_subtitler.errors import UsageError

_STYLES = tuple(s.value for s in SpeakerStyle)


@dataclass(frozen=True)
class CueOptions:
    """How words become cues. Times in seconds, widths in display columns (a wide character counts 2).

    Raises ``UsageError`` (exit code 2) on construction when a value is out of range.
    """

    max_line_width: int = 42  # columns per line, spaces counted (Netflix: 42)
    max_lines: int = 2  # lines per cue (Netflix: 2)
    max_cps: float = 17.0  # reading speed, characters per second (Netflix adult: 17; children: 13)
    min_duration: float = 5 / 6  # seconds a cue stays at least (20 frames at 24 fps)
    max_duration: float = 7.0  # seconds a cue stays at most
    fps: float = 24.0  # frames per second of the video the subtitles go with
    min_gap_frames: int = 2  # frames between consecutive cues (Netflix: 2)
    chain_frames: int = 12  # a gap shorter than this is closed down to min_gap_frames (Netflix "chaining")
    pause: float = 1.0  # seconds of silence between two words that always start a new cue
    max_word_duration: float = 2.5  # seconds; a longer word timestamp is treated as an alignment error
    min_cue_probability: float = 0.15  # a cue whose mean word probability is lower is dropped as hallucinated
    max_repeats: int = 3  # a word or phrase repeated more often in a row is cut back to this (Whisper loops)
    speech_pad: float = 0.3  # seconds of tolerance around VAD speech regions for the silence guard
    spaceless: bool | None = None  # break by characters; None: decide from the language and the text
    speaker_style: str = "change"  # how speakers are shown: change, dash, label or none (cues.labels.SpeakerStyle)
    # Shot changes the cues are timed by (cues.shots): "auto" (a video input's own, found by ffmpeg), "off", or the
    # times in seconds; a file name (str or Path) is read on construction (cues.shot_list: Subtitle Edit's format).
    shot_changes: str | Path | tuple[float, ...] = "auto"
    language_guides: bool = True  # width and speed at their defaults follow the language's guide (cues.guides)

    def __post_init__(self) -> None:
        checks = (
            (self.max_line_width >= 8, "max_line_width must be at least 8 columns"),
            (self.max_lines >= 1, "max_lines must be at least 1"),
            (self.max_cps > 0, "max_cps must be positive"),
            (self.fps > 0, "fps must be positive"),
            (self.min_duration >= 0, "min_duration must not be negative"),
            (self.max_duration > 0, "max_duration must be positive"),
            (self.min_duration <= self.max_duration, "min_duration must not exceed max_duration"),
            (self.min_gap_frames >= 0, "min_gap_frames must not be negative"),
            (self.chain_frames >= 0, "chain_frames must not be negative"),
            (self.pause > 0, "pause must be positive"),
            (self.max_word_duration > 0, "max_word_duration must be positive"),
            (0 <= self.min_cue_probability <= 1, "min_cue_probability must be in [0, 1]"),
            (self.max_repeats >= 1, "max_repeats must be at least 1"),
            (self.speech_pad >= 0, "speech_pad must not be negative"),
            (self.speaker_style in _STYLES, f"speaker_style must be one of {', '.join(_STYLES)}"),
        )
        for ok, message in checks:
            if not ok:
                raise UsageError(f"invalid cue option: {message}")
        from whisper_subtitler.cues.shot_list import read_shot_changes, shot_times

        shots = self.shot_changes
        if isinstance(shots, Path) or (isinstance(shots, str) and shots not in ("auto", "off")):
            object.__setattr__(self, "shot_changes", read_shot_changes(Path(shots)))
        elif not isinstance(shots, str):
            object.__setattr__(self, "shot_changes", shot_times(shots))

    @property
    def frame(self) -> float:
        """One frame in seconds."""
        return 1.0 / self.fps

    @property
    def min_gap(self) -> float:
        """The minimum gap between two cues, in seconds."""
        return self.min_gap_frames / self.fps

    @property
    def chain_gap(self) -> float:
        """Gaps shorter than this (seconds) are closed to ``min_gap``."""
        return self.chain_frames / self.fps
