"""The pipeline: one input file to subtitle files, with models loaded once per run.

    audio.extract_audio      ffmpeg -> 16 kHz mono float32                      (Audio)
    vad.speech_regions       where someone speaks                              (seconds)
    transcribe               openai-whisper with word timestamps               (Transcript)
    diarize + speakers       pyannote speaker turns, one speaker per word      (Transcript with speakers)
    cues.build_cues          readability rules                                 (Cue)
    writers                  SRT, WebVTT, ...                                  (text)
    outputs.write_atomic     temp file, then moved into place, never clobbers  (files)
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import closing
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TypeVar

import numpy as np

from whisper_subtitler.audio import PIECE_SECONDS, stream_audio
from whisper_subtitler.cues import CueOptions, build_cues
from whisper_subtitler.cues.guards import clean_transcript
from whisper_subtitler.errors import SubtitlerError
from whisper_subtitler.outputs import output_path, write_subtitles
from whisper_subtitler.prefetch import Prefetcher, Prepared
from whisper_subtitler.transcription import TranscribeOptions
from whisper_subtitler.types import Audio, Transcript
from whisper_subtitler.writers import FORMATS, WriterOptions

T = TypeVar("T")


def _resume(prepared: Prepared) -> Iterator[Audio]:
    """The prepared first piece, then the rest of the stream; closing this closes the stream."""
    try:
        yield prepared.first
        yield from prepared.rest
    finally:
        prepared.close()


def _with_last(items: Iterable[T]) -> Iterator[tuple[T, bool]]:
    """``(item, is_last)`` pairs, looking one item ahead."""
    iterator = iter(items)
    try:
        previous = next(iterator)
    except StopIteration:
        return
    for item in iterator:
        yield previous, False
        previous = item
    yield previous, True

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunOptions:
    """Everything a run needs besides the inputs; built by the CLI, read-only afterwards.

    ``model`` is a Whisper name or path (``None``: the embedded default); ``formats`` are writer names
    (``writers.FORMATS``); ``output_dir`` ``None`` writes beside each input.
    """

    model: str | None = None
    transcribe: TranscribeOptions = TranscribeOptions()
    formats: tuple[str, ...] = ("srt", "vtt")
    output_dir: Path | None = None
    name_template: str = "{stem}"
    overwrite: bool = False
    audio_track: int = 0
    cues: CueOptions = CueOptions()
    writer: WriterOptions = WriterOptions()
    diarization: object | None = None  # whisper_subtitler.diarize.DiarizationOptions when --diarize
    speaker_names: tuple[str, ...] = ()
    batched: bool = True  # False (--no-batch): openai-whisper's sequential transcribe()
    batch_size: int | None = None  # --batch-size; None: the platform's advice (measured at level 2)


@dataclass(frozen=True)
class FileResult:
    """The outcome for one input: ``status`` is ``done``, ``skipped`` (every output existed) or ``failed``."""

    source: Path
    status: str
    outputs: tuple[Path, ...] = ()
    skipped_outputs: tuple[Path, ...] = ()
    error: str | None = None
    duration: float | None = None  # audio seconds
    language: str | None = None
    speakers: tuple[str, ...] = ()
    timings: dict[str, float] = field(default_factory=dict)


class Pipeline:
    """Runs the stages for one file after another; the Whisper model is loaded on first use and kept.

    ``selection`` is the platform layer's device choice (``whisper_subtitler.platform.Selection``).
    """

    def __init__(self, options: RunOptions, selection) -> None:
        self.options = options
        self.selection = selection
        self._model = None
        self._model_name = ""
        self._diarizer = None
        self._prefetcher: Prefetcher | None = None

    def prefetch(self, source: Path) -> None:
        """Start decoding ``source``'s first audio piece and finding its speech in the background, to be taken
        when ``process(source)`` runs (``whisper_subtitler.prefetch``). Nothing is prefetched with diarization,
        which needs the whole file's audio."""
        if self.options.diarization is not None:
            return
        if self._prefetcher is None:
            self._prefetcher = Prefetcher(self._prepare)
        self._prefetcher.start(source)

    def _prepare(self, source: Path) -> Prepared | None:
        from whisper_subtitler.vad import speech_regions

        if self._existing_outputs(source):
            return None  # will be skipped
        pieces = self._stream(source)
        try:
            first = next(pieces)
            return Prepared(first, speech_regions(first.samples), pieces)
        except BaseException:
            pieces.close()
            raise

    def close(self) -> None:
        """Stop a background preparation (``prefetch``) that was not used."""
        if self._prefetcher is not None:
            self._prefetcher.close()

    def _whisper(self):
        if self._model is None:
            from whisper_subtitler import platform
            from whisper_subtitler.models import load_whisper, resolve_model

            resolved = resolve_model(self.options.model)
            log.info("model %s from %s (%s)", resolved.name, resolved.source, resolved.path)
            model = load_whisper(resolved, device="cpu")
            self._model = platform.prepare_model(model, self.selection)
            self._model_name = resolved.name
        return self._model

    def outputs_for(self, source: Path) -> list[Path]:
        """The output paths ``source`` would get, one per format."""
        return [
            output_path(source, self.options.output_dir, FORMATS[fmt].extension, self.options.name_template)
            for fmt in self.options.formats
        ]

    def _existing_outputs(self, source: Path) -> list[Path]:
        """All of ``source``'s outputs when every one exists and ``--overwrite`` is off (the file is skipped)."""
        targets = self.outputs_for(source)
        existing = [t for t in targets if t.exists()] if not self.options.overwrite else []
        return existing if targets and len(existing) == len(targets) else []

    def _stream(self, source: Path) -> Iterator[Audio]:
        """``source``'s audio: in pieces, so memory does not grow with the duration; whole with diarization,
        which clusters speakers over the whole file."""
        piece_seconds = None if self.options.diarization is not None else PIECE_SECONDS
        return stream_audio(source, audio_track=self.options.audio_track, piece_seconds=piece_seconds)

    def process(self, source: Path, on_stage: Callable[[str], None] = lambda stage: None) -> FileResult:
        """Turn ``source`` into subtitle files; expected failures become a ``failed`` result, not an exception.

        ``on_stage`` is called with each stage's name as it starts (for progress displays).
        ``MissingRequirementError`` (no ffmpeg, no model) and ``KeyboardInterrupt`` propagate: they end the batch.
        """
        from whisper_subtitler.errors import MissingRequirementError

        try:
            return self._process(source, on_stage)
        except MissingRequirementError:
            raise
        except SubtitlerError as e:
            return FileResult(source=source, status="failed", error=e.message if not e.hint else str(e))

    def _process(self, source: Path, on_stage: Callable[[str], None]) -> FileResult:
        prepared = self._prefetcher.take(source) if self._prefetcher is not None else None
        existing = self._existing_outputs(source)
        if existing:
            if prepared is not None:
                prepared.close()
            return FileResult(source=source, status="skipped", skipped_outputs=tuple(existing))

        timings: dict[str, float] = {}
        clock = time.perf_counter()

        def stage(name: str) -> None:
            """Close the running stage's timing and announce ``name``."""
            nonlocal clock, current
            now = time.perf_counter()
            if current:
                timings[current] = round(timings.get(current, 0.0) + now - clock, 3)
            clock, current = now, name
            on_stage(name)

        current = ""
        stage("audio")
        if prepared is not None:
            pieces, first_regions = _resume(prepared), prepared.regions
        else:
            pieces, first_regions = self._stream(source), None
        transcript, speech, audio = self._transcribe_pieces(pieces, stage, first_regions)
        transcript = clean_transcript(transcript, self.options.cues.max_cps)  # before speakers: JSON = cues
        if self.options.diarization is not None:
            stage("diarize")
            transcript = self._diarize(audio, transcript, speech)
        stage("cues")
        cues = build_cues(transcript, self.options.cues, speech=speech)
        stage("write")
        transcript = replace(transcript, timings=dict(timings))

        written, kept = write_subtitles(
            transcript, cues, list(zip(self.options.formats, self.outputs_for(source))), self.options.writer,
            overwrite=self.options.overwrite,
        )
        stage("")
        return FileResult(
            source=source,
            status="done",
            outputs=tuple(written),
            skipped_outputs=tuple(kept),
            duration=round(transcript.duration, 3),
            language=transcript.language,
            speakers=transcript.speakers,
            timings=timings,
        )

    def _transcribe_pieces(self, pieces: Iterator[Audio], stage: Callable[[str], None],
                           first_regions: tuple[tuple[float, float], ...] | None = None):
        """Transcribe consecutive audio pieces; each is cut at a pause, the rest carried into the next piece.
        ``first_regions``: the first piece's speech regions when already found (``prefetch``).

        Returns ``(transcript, speech regions, last audio piece)`` with times in seconds from the file's start;
        with a single piece (diarization) the last piece is the whole audio.
        """
        from whisper_subtitler.vad import speech_regions, split_at_pause

        options = self.options.transcribe
        segments: list = []
        speech: list[tuple[float, float]] = []
        language = options.language
        carry: Audio | None = None
        with closing(pieces):
            for piece, last in _with_last(pieces):
                if carry is not None:
                    piece = replace(piece, samples=np.concatenate([carry.samples, piece.samples]), offset=carry.offset)
                stage("vad")
                regions = first_regions if first_regions is not None else speech_regions(piece.samples)
                first_regions = None
                cut = piece.duration if last else split_at_pause(regions, piece.duration)
                n = int(round(cut * piece.sample_rate))
                carry = None if last else replace(piece, samples=piece.samples[n:], offset=piece.offset + n / piece.sample_rate)
                piece = replace(piece, samples=piece.samples[:n])
                regions = tuple((a, min(b, cut)) for a, b in regions if a < cut)
                if regions:
                    stage("model_load")
                    model = self._whisper()
                    stage("transcribe")
                    part = self._transcribe(model, piece, regions, replace(options, language=language))
                    language = language or part.language
                    segments.extend(seg.shifted(piece.offset) for seg in part.segments)
                speech.extend((a + piece.offset, b + piece.offset) for a, b in regions)
                audio = piece
        duration = audio.offset + audio.duration
        transcript = Transcript(segments=tuple(segments), language=language or "", duration=duration,
                                model=self._model_name, source=str(audio.source), task=options.task)
        return transcript, tuple(speech), audio

    def _transcribe(self, model, audio: Audio, speech, options: TranscribeOptions) -> Transcript:
        from whisper_subtitler.decoding.transcriber import BatchedTranscriber
        from whisper_subtitler.transcribe import SequentialTranscriber

        if self.options.batched:
            transcriber = BatchedTranscriber(model, options, model_name=self._model_name, selection=self.selection,
                                             batch_size=self.options.batch_size)
        else:
            transcriber = SequentialTranscriber(model, options, model_name=self._model_name)
        return transcriber.transcribe(audio, speech)

    def _diarize(self, audio, transcript, speech):
        from whisper_subtitler.diarize import load_diarizer
        from whisper_subtitler.speakers import assign_speakers, rename_speakers, without_single_speaker

        from whisper_subtitler.diarize.memory import one_model_at_a_time, release_accelerator_memory

        exclusive = one_model_at_a_time(self.selection.device, self.selection.device_info.total_memory)
        if exclusive and self._model is not None:
            self._model = None  # whisperX's order: transcribe, free Whisper, then diarize
            release_accelerator_memory(self.selection.device)
        if self._diarizer is None:
            self._diarizer = load_diarizer(self.options.diarization, self.selection.device)
        diarization = self._diarizer.diarize(audio, speech=speech)
        if exclusive:
            self._diarizer.close()  # Whisper comes back for the next file
            self._diarizer = None
        transcript = assign_speakers(transcript, diarization.turns, exclusive=diarization.exclusive_turns)
        if self.options.speaker_names:
            return rename_speakers(transcript, self.options.speaker_names)
        return without_single_speaker(transcript)
