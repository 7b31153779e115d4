"""The values that flow between pipeline stages.

Every stage takes and returns these frozen dataclasses; none edits its input. Times are float seconds
from the start of the audio everywhere, and become text only in the writers (``whisper_subtitler.writers``).

    audio.extract_audio -> Audio
    transcribe.transcribe -> Transcript (Segment, Word)
    diarize.diarize -> tuple[SpeakerTurn, ...]
    speakers.assign_speakers -> Transcript with Word.speaker / Segment.speaker set
    cues.build_cues -> tuple[Cue, ...] (and the words its guards removed: Removal)
    writers.* -> files
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy is a hard dependency, but pure-logic modules must not need it at import time
    import numpy as np


SAMPLE_RATE = 16_000  # Hz: what Whisper, silero-vad and pyannote segmentation-3.0 expect


class StrEnum(str, Enum):
    """An enum whose members are their string values, printed and formatted as the value (``enum.StrEnum`` of
    Python 3.11, which 3.10 lacks): ``f"{Stage.VAD}"`` is ``vad`` and ``Stage.VAD == "vad"``."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)

    def __hash__(self) -> int:  # equal to its value, so the same hash (Python 3.10's Enum hashes the name)
        return str.__hash__(self)


@dataclass(frozen=True, slots=True)
class LanguageDetection:
    """How sure the detection of a file's language was: ``probability`` (0-1) is the windows' own detections
    averaged over their speech (``decoding.code_switching.file_language``; for a file transcribed in pieces, the
    least sure piece's), ``sure`` whether it reached the bar above which the file's language is the prior every
    speech region must overcome with strong evidence; when not sure, each region's language was decided on its own
    evidence and the file's language is uncertain."""

    probability: float
    sure: bool


@dataclass(frozen=True, slots=True)
class ChannelUse:
    """The channel a file's audio was taken from and why.

    ``used``: ``"downmix"`` (every channel mixed to mono, ffmpeg ``-ac 1``) or the libavutil name of the one channel
    taken (``FC``, ``FL``, ``FR``; ``c3`` for the fourth channel of a layout without names); ``reason``: one line for
    people; ``layout``: ffprobe's ``channel_layout`` of the stream (``""`` when it has none); ``default``: the downmix
    of a mono or stereo stream that ``auto`` chose, what every version before the choice did (the JSON transcript
    leaves it out, so that such outputs stay unchanged byte for byte)."""

    used: str
    reason: str
    layout: str = ""
    default: bool = False

    @property
    def pan(self) -> str | None:
        """ffmpeg's filter taking the one channel (``pan=mono|c0=FC``); ``None`` for the downmix."""
        return None if self.used == "downmix" else f"pan=mono|c0={self.used}"


@dataclass(frozen=True, eq=False)
class Audio:
    """Decoded audio of one input: mono float32 samples at ``sample_rate`` Hz.

    ``samples`` has shape ``(n_samples,)``, values in [-1, 1]. ``container_duration`` is the duration the
    container declares (seconds, ``None`` when unknown), kept to detect truncated files. ``offset`` is where
    these samples start in the file (seconds), for audio decoded in pieces (``audio.stream_audio``).
    """

    samples: np.ndarray
    sample_rate: int
    source: Path
    container_duration: float | None = None
    offset: float = 0.0
    channel: ChannelUse | None = None  # the channel taken from a multichannel stream, and why (channels.py)

    @property
    def duration(self) -> float:
        """Decoded duration in seconds."""
        return len(self.samples) / self.sample_rate


@dataclass(frozen=True, slots=True)
class Word:
    """One word with its word timestamp (seconds), as Whisper's cross-attention alignment gives it.

    ``text`` keeps Whisper's leading space (`` hello``), which is how word joining works for languages
    written with spaces; languages without spaces have no leading space. ``probability`` is the mean token
    probability in [0, 1]. ``speaker`` is set by speaker assignment, ``None`` before or without diarization.
    ``language`` is the ISO 639-1 code the word was decoded in (its segment's), ``None`` when unknown.
    """

    text: str
    start: float
    end: float
    probability: float = 1.0
    speaker: str | None = None
    language: str | None = None

    @property
    def duration(self) -> float:
        return self.end - self.start

    def shifted(self, seconds: float) -> Word:
        """The same word, ``seconds`` later."""
        return replace(self, start=self.start + seconds, end=self.end + seconds)


@dataclass(frozen=True, slots=True)
class Segment:
    """A run of words that Whisper decoded together (at most one 30 s window), times in seconds.

    ``avg_logprob``, ``compression_ratio`` and ``no_speech_prob`` are Whisper's decoding statistics,
    used by the hallucination guards. ``language`` is the ISO 639-1 code of the language token it was decoded
    with (``None`` when unknown, as in transcripts read from other tools).
    """

    start: float
    end: float
    text: str
    words: tuple[Word, ...] = ()
    speaker: str | None = None
    avg_logprob: float = 0.0
    compression_ratio: float = 1.0
    no_speech_prob: float = 0.0
    language: str | None = None

    def shifted(self, seconds: float) -> Segment:
        """The same segment and its words, ``seconds`` later (pieces of audio decoded separately)."""
        return replace(
            self,
            start=self.start + seconds,
            end=self.end + seconds,
            words=tuple(w.shifted(seconds) for w in self.words),
        )


@dataclass(frozen=True, slots=True)
class SpeakerTurn:
    """One speaker turn from diarization: ``speaker`` speaks from ``start`` to ``end`` (seconds).

    Turns of different speakers may overlap (overlapped speech), as in RTTM.
    """

    start: float
    end: float
    speaker: str


@dataclass(frozen=True, slots=True)
class Diarization:
    """What speaker diarization found in one input: who speaks when.

    ``turns`` may overlap (overlapped speech, as in RTTM); ``exclusive_turns`` is the same diarization with at
    most one speaker at any time (pyannote 4's ``exclusive_speaker_diarization``: in overlapped speech, the
    most likely speaker), which is what word-to-speaker assignment needs. Both sorted by (start, end), times in
    seconds. A pipeline without an exclusive output gives ``exclusive_turns == turns``.
    """

    turns: tuple[SpeakerTurn, ...] = ()
    exclusive_turns: tuple[SpeakerTurn, ...] = ()

    @property
    def speakers(self) -> tuple[str, ...]:
        """Speaker labels in order of first appearance."""
        return tuple(dict.fromkeys(t.speaker for t in self.turns))


@dataclass(frozen=True, slots=True)
class VoiceMatch:
    """How one speaker cluster of a file compared with the voice library (``--voices``, ``whisper_subtitler.voices``).

    ``cluster`` is the diarization's label (``SPEAKER_00``...), ``speaker`` the label the transcript shows (a
    library name, ``SPEAKER_A``... for a voice heard before in the batch but not enrolled, or ``cluster``);
    ``source`` says where ``speaker`` came from: ``"library"``, ``"session"`` (the batch's unnamed voices) or
    ``None`` (no match). ``scores`` are the best library voices, ``(name, cosine similarity)``, best first;
    ``seconds`` the cluster's speech that was embedded.
    """

    cluster: str
    speaker: str
    source: str | None = None
    scores: tuple[tuple[str, float], ...] = ()
    seconds: float = 0.0


@dataclass(frozen=True, slots=True)
class Removal:
    """Words a hallucination guard removed on purpose (``cues.guards``), so that what was left out is on record.

    ``reason`` names the guard (a key of ``cues.guards.REASONS``: ``loop``, ``repeated_sentence``, ...); ``start``
    and ``end`` (seconds) span the removed words, ``text`` is their text as Whisper wrote it. ``stage`` says where
    they were removed: ``"transcript"`` before the transcript's segments were final (they are not in
    ``Transcript.segments``), ``"cues"`` between the segments and the cues (they are in the segments, in no cue).
    Every word of the segments is in a cue or in a ``"cues"`` removal: the pipeline checks it (``cues.guards``).
    """

    reason: str
    start: float
    end: float
    text: str
    stage: str = "cues"


@dataclass(frozen=True)
class Transcript:
    """The whole result for one input.

    ``language`` is the file's main language (ISO 639-1): the one spoken longest, each segment having its own
    (``Segment.language``). ``duration`` is the audio duration in seconds; ``timings`` maps stage names
    (``audio``, ``transcribe``, ``diarize``, ...) to wall seconds; ``turns`` holds the diarization speaker turns
    (empty without it); ``removed`` the words the hallucination guards removed on purpose, in time order
    (``Removal``); ``voices`` how each speaker cluster compared with the voice library (``VoiceMatch``, ``--voices``);
    ``shot_changes`` the video's shot changes the cues were timed by (seconds, ascending; empty when none were used)
    and ``fps`` the frame rate (frames per second) those rules counted frames at (``None`` without shot changes);
    ``language_detection`` how sure the detection of the file's language was (``None`` when it was given).
    """

    segments: tuple[Segment, ...]
    language: str
    duration: float
    model: str = ""
    source: str = ""
    task: str = "transcribe"
    turns: tuple[SpeakerTurn, ...] = ()
    channel: ChannelUse | None = field(default=None, compare=False)  # the audio channel transcribed (channels.py)
    timings: dict[str, float] = field(default_factory=dict, compare=False)
    removed: tuple[Removal, ...] = ()
    voices: tuple[VoiceMatch, ...] = ()  # each speaker cluster against the voice library (--voices)
    shot_changes: tuple[float, ...] = ()  # the shot changes the cues were timed by (cues.shots), seconds
    fps: float | None = None  # the frame rate of those rules (the video's), frames per second
    language_detection: LanguageDetection | None = field(default=None, compare=False)

    @property
    def words(self) -> tuple[Word, ...]:
        """All words of all segments, in time order."""
        return tuple(w for s in self.segments for w in s.words)

    @property
    def text(self) -> str:
        """The plain transcript text."""
        return "".join(s.text for s in self.segments).strip()

    @property
    def speakers(self) -> tuple[str, ...]:
        """Speaker labels in order of first appearance (in words, else in turns)."""
        seen: dict[str, None] = {}
        for w in self.words:
            if w.speaker is not None:
                seen.setdefault(w.speaker)
        for t in sorted(self.turns, key=lambda t: t.start):
            seen.setdefault(t.speaker)
        return tuple(seen)


@dataclass(frozen=True, slots=True)
class Cue:
    """One subtitle cue: shown from ``start`` to ``end`` (seconds), text already broken into ``lines``.

    ``words`` are the timed words it was built from (for word-level highlighting); ``speaker`` is the one
    speaker of the cue (of its first line for a dialogue cue), or ``None``.

    What the speaker style shows is decided by the cue builder and carried here, so writers only print it:
    ``prefixes`` holds the text shown before each line (a speaker label ``[SPEAKER_00]: ``, a dialogue dash
    ``- `` or ``""``), empty when nothing is shown; ``line_speakers`` holds the speaker of each line of a
    dialogue cue (two speakers, one line each: Netflix's dual-speaker rule), empty for a single-speaker cue.
    ``language`` is the ISO 639-1 code its words were decoded in (a cue never mixes two), ``None`` when unknown.
    """

    start: float
    end: float
    lines: tuple[str, ...]
    speaker: str | None = None
    words: tuple[Word, ...] = ()
    prefixes: tuple[str, ...] = ()
    line_speakers: tuple[str | None, ...] = ()
    language: str | None = None

    @property
    def text(self) -> str:
        """The cue's lines without speaker labels or dashes, joined with line breaks."""
        return "\n".join(self.lines)

    @property
    def dialogue(self) -> bool:
        """Whether this is a dialogue cue: its lines are spoken by different speakers."""
        return len(set(self.line_speakers)) > 1

    @property
    def shown_lines(self) -> tuple[str, ...]:
        """The lines as shown: each with its prefix (speaker label or dialogue dash) when it has one."""
        if not self.prefixes:
            return self.lines
        return tuple(p + line for p, line in zip(self.prefixes, self.lines)) + self.lines[len(self.prefixes) :]

    def speaker_of_line(self, index: int) -> str | None:
        """The speaker of line ``index``: from ``line_speakers`` in a dialogue cue, else ``speaker``."""
        if index < len(self.line_speakers):
            return self.line_speakers[index]
        return self.speaker
