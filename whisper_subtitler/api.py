"""The Python API: ``Subtitler`` loads the models once and turns media into a ``Result``, which writes any format.

    from whisper_subtitler import Subtitler
    sub = Subtitler(model="base", diarize=True)     # options checked, device chosen, Whisper loaded
    result = sub.run("talk.mp4")                    # or 16 kHz mono float32 samples (numpy)
    result.write("talk.srt")                        # the format from the suffix

The command line builds the same ``Subtitler`` from its flags (``cli.args``) and runs a batch on its ``pipeline``,
so that the same media and options give the same bytes. Nothing here prints or exits: failures are the typed
exceptions of ``errors`` (``SubtitlerError`` and its subclasses), logs go to the ``whisper_subtitler`` logger
(no handler of its own), progress to an optional callback.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Generator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from whisper_subtitler import pipeline as runs  # looked up when used: tests stand a Pipeline in
from whisper_subtitler.errors import InputError, UsageError
from whisper_subtitler.inputs import check_input
from whisper_subtitler.options import (
    AudioOptions,
    CueOptions,
    DecodingOptions,
    DeviceOptions,
    OutputOptions,
    SpeakerOptions,
    check_diarization,
)
from whisper_subtitler.outputs import write_atomic
from whisper_subtitler.pipeline import RunOptions
from whisper_subtitler.stages import Stage, StageTimer
from whisper_subtitler.types import SAMPLE_RATE, Audio, Cue, Removal, Segment, SpeakerTurn, Transcript, Word
from whisper_subtitler.video.shots import ShotChanges
from whisper_subtitler.writers import FORMATS, WriterOptions, encode, render

if TYPE_CHECKING:
    from whisper_subtitler.platform import Selection

__all__ = ["ProgressCallback", "Result", "Subtitler"]

ProgressCallback = Callable[[str, float | None], None]
"""``progress(stage, fraction)``: ``stage`` (``audio``, ``vad``, ``model_load``, ``transcribe``, ``diarize``,
``cues``, ...) as it starts, with ``fraction`` ``None``; then, while transcribing, the share of the audio done (0-1)."""

ARRAY_SOURCE = Path("array")  # the source name of a transcript of samples given as an array


@dataclass(frozen=True)
class Result:
    """The subtitles of one input, nothing written yet.

    ``transcript``: segments and words with times in seconds from the start of the audio, speakers assigned with
    diarization; ``cues``: the subtitle cues the readability rules built (``CueOptions``); ``speech``: the speech
    regions the VAD found, ``(start, end)`` in seconds; ``writer``: how ``write``/``render`` encode text;
    ``timings``: wall seconds per stage; ``shot_changes``: the shot changes (seconds) the cues were timed by
    (``CueOptions.shot_changes``: a video's own with ``auto``; empty without any).
    """

    transcript: Transcript
    cues: tuple[Cue, ...]
    speech: tuple[tuple[float, float], ...] = ()
    writer: WriterOptions = WriterOptions()
    timings: dict[str, float] = field(default_factory=dict, compare=False)
    shot_changes: tuple[float, ...] = ()

    @property
    def language(self) -> str:
        """ISO 639-1 code of the language, given or detected: the one spoken longest (each segment has its own);
        ``""`` when there was no speech to detect it from."""
        return self.transcript.language

    @property
    def duration(self) -> float:
        """Duration of the audio in seconds."""
        return self.transcript.duration

    @property
    def unheard_speech(self) -> tuple[tuple[float, float], ...]:
        """The stretches ``(start, end)`` in seconds of at least 1 s where the VAD heard speech and no word was
        written (``quality.coverage.unheard_speech``): speech the subtitles lost."""
        from whisper_subtitler.quality.coverage import unheard_in

        return unheard_in(self.transcript, self.speech)

    @property
    def removed(self) -> tuple[Removal, ...]:
        """What the hallucination guards removed on purpose (``types.Removal``: reason, span in seconds, text,
        stage), in time order; every other word of ``segments`` is in a cue."""
        return self.transcript.removed

    @property
    def segments(self) -> tuple[Segment, ...]:
        """Whisper's segments, times in seconds, each with its words."""
        return self.transcript.segments

    @property
    def words(self) -> tuple[Word, ...]:
        """Every word in time order: text, start and end (seconds), probability (0-1), speaker (or ``None``)."""
        return self.transcript.words

    @property
    def speakers(self) -> tuple[str, ...]:
        """Speaker labels (or the names given) in order of first appearance; empty without diarization or with one
        speaker."""
        return self.transcript.speakers

    @property
    def turns(self) -> tuple[SpeakerTurn, ...]:
        """The diarization's speaker turns (seconds; may overlap), empty without diarization."""
        return self.transcript.turns

    @property
    def text(self) -> str:
        """The plain transcript text."""
        return self.transcript.text

    @property
    def forced_cues(self) -> tuple[Cue, ...]:
        """The cues in another language than ``language`` (forced narrative subtitles, ``narratives.foreign_cues``):
        what ``render(fmt, forced=True)`` renders and ``--forced`` writes to ``<name>.<language>.forced.<ext>``."""
        from whisper_subtitler.narratives import foreign_cues

        return foreign_cues(self.cues, self.language)

    def render(self, fmt: str, *, forced: bool = False) -> str:
        """The text of format ``fmt`` (``srt``, ``vtt``, ``ass``, ``lrc``, ``json``, ``txt``, ``tsv``, ``rttm``), with
        ``\\n`` line ends; with ``forced``, of the ``forced_cues`` only (cue-based formats). Raises ``UsageError`` for
        an unknown format."""
        return render(fmt, self.transcript, self.forced_cues if forced else self.cues, self.writer)

    def to_bytes(self, fmt: str, *, forced: bool = False) -> bytes:
        """The bytes of a ``fmt`` file, as ``write`` writes them (BOM and CR LF as ``writer`` asks)."""
        return encode(self.render(fmt, forced=forced), fmt, self.writer)

    def write(self, path: str | Path, fmt: str | None = None, *, overwrite: bool = True, forced: bool = False) -> Path:
        """Write the subtitles to ``path`` atomically (never half-written) in format ``fmt``, by default the one of
        ``path``'s suffix (``.srt``, ``.vtt``, ``.ass``, ``.lrc``, ``.json``, ``.txt``, ``.tsv``, ``.rttm``); returns
        ``path``. With ``forced``, only the ``forced_cues`` (name the file ``<name>.<language>.forced.<ext>``, as
        players expect; ``narratives``).

        Raises ``UsageError`` for an unknown format or suffix, ``InputError`` when the file exists and ``overwrite``
        is false, or cannot be written."""
        path = Path(path)
        fmt = fmt if fmt is not None else format_of(path)
        data = self.to_bytes(fmt, forced=forced)
        try:
            write_atomic(path, data, overwrite=overwrite)
        except FileExistsError:
            raise InputError(f"{path} exists", hint="pass overwrite=True to replace it") from None
        except OSError as e:
            raise InputError(f"{path}: cannot write ({e.strerror or e})") from None
        return path


def format_of(path: Path) -> str:
    """The format whose file extension ``path`` has; raises ``UsageError`` when none has it."""
    by_extension = {writer.extension: name for name, writer in FORMATS.items()}
    try:
        return by_extension[path.suffix.lower().lstrip(".")]
    except KeyError:
        raise UsageError(
            f"{path}: no subtitle format has the suffix {path.suffix!r}",
            hint=f"use one of {', '.join('.' + e for e in by_extension)} or pass fmt=",
        ) from None


class Subtitler:
    """Media to subtitles with the models loaded once; ``run`` as many inputs as you like.

    ``model``, ``language`` and ``diarize`` are shortcuts for the fields of ``decoding`` and ``speakers`` of the
    same names; ``device`` a backend name (``cuda``, ``rocm``, ``mps``, ``cpu``, ``auto``) or ``DeviceOptions``
    (``None``: ``$GPU_BACKEND``, else auto). ``progress``: see ``ProgressCallback``. ``load``: load Whisper now
    (else on the first ``run``). ``check_speakers``: check before anything runs that the diarization pipeline can
    be loaded (``diarize=None`` and a missing pyannote.audio then turn diarization off with a warning).

    Raises, on construction: ``UsageError`` for invalid options (``whisper_subtitler.options``),
    ``ModelNotFoundError``/``ModelError`` for a model that cannot be found or loaded, ``MissingRequirementError`` when
    diarization is asked for and cannot run, ``BackendUnavailableError`` when the backend asked for does not work
    and ``DeviceOptions.fallback`` is off. Whisper stays loaded on the chosen device; the diarization pipeline is
    loaded on the first ``run`` that needs it and stays (on an accelerator too small for both, one at a time).
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        language: str | None = None,
        diarize: bool | None = None,
        device: str | DeviceOptions | None = None,
        decoding: DecodingOptions | None = None,
        speakers: SpeakerOptions | None = None,
        cues: CueOptions = CueOptions(),
        output: OutputOptions = OutputOptions(),
        audio: AudioOptions = AudioOptions(),
        progress: ProgressCallback | None = None,
        load: bool = True,
        check_speakers: bool = True,
    ) -> None:
        decoding = decoding or DecodingOptions()
        if model is not None:
            decoding = replace(decoding, model=model)
        if language is not None:
            decoding = replace(decoding, language=language)
        speakers = speakers or SpeakerOptions()
        if diarize is not None:
            speakers = replace(speakers, diarize=diarize)
        devices = device if isinstance(device, DeviceOptions) else DeviceOptions(backend=device)
        self.decoding, self.speakers, self.device = decoding, speakers, devices
        self.cues, self.output, self.audio = cues, output, audio
        self.progress = progress
        selection = devices.select(decoding.model, decoding.compute_type)
        options = _run_options(decoding, speakers, cues, output, audio, selection, check_speakers)
        self.pipeline = runs.Pipeline(options, selection)
        if load:
            self.pipeline.models.transcriber()

    def replace(
        self,
        *,
        decoding: DecodingOptions | None = None,
        speakers: SpeakerOptions | None = None,
        cues: CueOptions | None = None,
        output: OutputOptions | None = None,
        audio: AudioOptions | None = None,
    ) -> Subtitler:
        """A ``Subtitler`` with some options replaced that uses this one's loaded models and device (nothing is
        loaded again): the per-request options of a server. Not thread-safe with this one: run one at a time.

        ``decoding`` must keep ``model`` and ``compute_type``. ``speakers``: ``diarize=None`` follows this one
        (on when it diarizes); diarization can be on only when it is on here, with the same model. Raises
        ``UsageError`` otherwise and for invalid options."""
        decoding = decoding or self.decoding
        speakers = speakers or self.speakers
        if (decoding.model, decoding.compute_type) != (self.decoding.model, self.decoding.compute_type):
            raise UsageError("the model and compute type are chosen when the models are loaded; they cannot change")
        if speakers.diarize is None:
            speakers = replace(speakers, diarize=self.diarizing)
        if speakers.diarize and not self.diarizing:
            raise UsageError("diarization is off here", hint="start with diarization on (--diarize)")
        if speakers.diarize and speakers.model != self.speakers.model:
            raise UsageError("the diarization model is chosen when the models are loaded; it cannot change")
        new = copy.copy(self)
        new.decoding, new.speakers = decoding, speakers
        new.cues, new.output, new.audio = cues or self.cues, output or self.output, audio or self.audio
        options = _run_options(decoding, speakers, new.cues, new.output, new.audio, self.selection, False)
        models = self.pipeline.models.sharing(options.decoding, options.transcribe, options.diarization)
        new.pipeline = runs.Pipeline(options, self.selection, models)
        return new

    @property
    def selection(self) -> Selection:
        """The platform's choice: backend, device, dtype, batch size (``platform.Selection``)."""
        selection: Selection = self.pipeline.selection
        return selection

    @property
    def diarizing(self) -> bool:
        """Whether runs label speakers (asked for, or on by default and installed)."""
        return self.pipeline.options.diarization is not None

    def run(self, media: str | Path | np.ndarray, *, progress: ProgressCallback | None = None) -> Result:
        """The subtitles of ``media``: a file ffmpeg reads (video or audio), or mono samples at 16 kHz (``SAMPLE_RATE``)
        as a 1-D float array of shape ``(n_samples,)`` with values in [-1, 1]. ``progress`` replaces the
        ``Subtitler``'s for this run.

        Raises ``InputError`` for a path that is missing, a folder, a FIFO or empty (``inputs.check_input``) or cannot
        be decoded (no audio stream, corrupt),
        ``AudioLanguageError`` when no audio stream has ``AudioOptions.language``, ``UsageError`` for an array that
        is not 1-D, ``MissingRequirementError`` when ffmpeg or the diarization pipeline is missing."""
        report = progress or self.progress
        timer = StageTimer((lambda stage, fraction=None: report(str(stage), fraction)) if report else _silent)
        timer.start(Stage.AUDIO)
        if isinstance(media, np.ndarray):
            stream = _one_piece(media)
        else:
            path = Path(media)
            check_input(path)  # its reason (missing, a folder, a FIFO, empty), before ffprobe opens it
            stream = self.pipeline.open(path)
        shots = ShotChanges(None if isinstance(media, np.ndarray) else Path(media), self.pipeline.options.cues)
        subtitled = self.pipeline.subtitle(stream, timer, shots=shots)
        return Result(
            subtitled.transcript,
            subtitled.cues,
            subtitled.speech,
            self.pipeline.options.writer,
            timer.stop(),
            subtitled.shot_changes,
        )

    def detect_language(self, media: str | Path | np.ndarray) -> tuple[str, float]:
        """The language spoken in ``media`` (a path or samples, as ``run`` takes): Whisper's language detection on
        the 30 s from the first speech (``pipeline.Pipeline.detect_language``). Returns ``(ISO 639-1 code,
        probability 0-1)``; ``("en", 1.0)`` with an English-only model. Raises what ``run`` raises for the media."""
        if isinstance(media, np.ndarray):
            return self.pipeline.detect_language(_one_piece(media))
        path = Path(media)
        check_input(path)
        return self.pipeline.detect_language(self.pipeline.open(path, whole=False))

    def close(self) -> None:
        """Stop background work; the models are freed with this object."""
        self.pipeline.close()

    def __enter__(self) -> Subtitler:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _run_options(
    decoding: DecodingOptions,
    speakers: SpeakerOptions,
    cues: CueOptions,
    output: OutputOptions,
    audio: AudioOptions,
    selection: Selection,
    check_speakers: bool,
) -> RunOptions:
    """What the pipeline runs with, from the option objects; raises what ``Subtitler`` raises for them."""
    formats = output.resolved()
    diarization, names = speakers.diarization(output.formats)
    if diarization is not None and check_speakers:
        diarization = check_diarization(diarization)  # a missing extra, token or model fails now
    voices = speakers.voices_options()
    if voices is not None and check_speakers:
        from whisper_subtitler.voices.naming import VoiceNamer

        VoiceNamer(voices)  # a library that cannot be used fails now (exit 3), before any file
    return RunOptions(
        model=decoding.model,
        transcribe=decoding.transcribe_options(fp16=selection.dtype == "float16"),
        decoding=decoding.decoding(),
        formats=formats if diarization is not None else tuple(f for f in formats if f != "rttm"),
        output_dir=output.output_dir,
        name_template=output.name_template,
        overwrite=output.overwrite,
        audio_track=audio.track,
        audio_language=audio.language,
        channels=audio.channels,
        embed=output.embed,
        burn_in=output.burn_in,
        forced=output.forced,
        cues=cues,
        writer=output.writer(cues.speaker_style),
        diarization=diarization,
        speaker_names=names,
        voices=voices,
    )


def _silent(stage: object, fraction: float | None = None) -> None:
    """No progress wanted."""


def _one_piece(samples: np.ndarray) -> Generator[Audio, None, None]:
    """``samples`` (16 kHz mono, 1-D) as a stream of one piece; raises ``UsageError`` for another shape."""
    if samples.ndim != 1:
        raise UsageError(f"audio samples must be 1-D (mono, {SAMPLE_RATE} Hz), not of shape {samples.shape}")
    audio = Audio(np.ascontiguousarray(samples, dtype=np.float32), SAMPLE_RATE, ARRAY_SOURCE)

    def stream() -> Generator[Audio, None, None]:
        yield audio

    return stream()
