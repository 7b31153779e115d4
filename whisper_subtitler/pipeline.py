"""The pipeline: one input file to subtitle files, with the models loaded once per run (``models.holder``).

pieces.speech_pieces     ffmpeg -> 16 kHz mono float32 in pieces cut at pauses  (Audio)
  vad.speech_regions       where someone speaks; vad.tight_regions: the pauses   (seconds)
  transcription            Whisper with word timestamps; one that holds a pause
                           starts after it (transcription.pauses)                (Transcript)
cues.guards              hallucination guards                                  (Transcript)
diarize + speakers       pyannote speaker turns, one speaker per word          (Transcript with speakers)
cues.build_cues          readability rules                                     (Cue)
outputs.write_subtitles  SRT, WebVTT, ... written atomically, never clobbered  (files)
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator, Iterable, Sequence
from contextlib import closing
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from whisper_subtitler import narratives
from whisper_subtitler.cues import CueOptions, build_cues
from whisper_subtitler.cues.guards import clean_transcript, log_removals, with_removals
from whisper_subtitler.cues.shots import keeping_shot_changes, used_shot_changes
from whisper_subtitler.decoding.code_switching import main_language
from whisper_subtitler.errors import SubtitlerError
from whisper_subtitler.library.checkpoints import Checkpoint, FinishedPiece, open_checkpoint
from whisper_subtitler.models.holder import ModelHolder
from whisper_subtitler.outputs import (
    language_template,
    needs_language,
    output_path,
    without_language,
    write_subtitles,
)
from whisper_subtitler.pieces import open_stream, prepare_first, resume, speech_pieces
from whisper_subtitler.prefetch import Prefetcher, Prepared
from whisper_subtitler.quality.coverage import unheard_in
from whisper_subtitler.quality.report import log_faults
from whisper_subtitler.results import FileResult, FileStatus
from whisper_subtitler.stages import OnStage, Stage, StageTimer
from whisper_subtitler.transcription import Decoding, Region, TranscribeOptions, new_transcript
from whisper_subtitler.transcription.batch_log import recording
from whisper_subtitler.transcription.batched import BatchedDecoding
from whisper_subtitler.transcription.pauses import start_after_pauses
from whisper_subtitler.types import (
    SAMPLE_RATE,
    Audio,
    Cue,
    LanguageDetection,
    Removal,
    Segment,
    Transcript,
    VoiceMatch,
)
from whisper_subtitler.vad import pauses, speech_regions, tight_regions
from whisper_subtitler.video import video_targets, write_video_copies
from whisper_subtitler.video.run import require_subtitle_filter
from whisper_subtitler.video.shots import ShotChanges
from whisper_subtitler.writers import FORMATS, WriterOptions

logger = logging.getLogger(__name__)

LANGUAGE_SEARCH_S = 120.0  # seconds at the start of a file searched for the speech that language detection hears


@dataclass(frozen=True)
class RunOptions:
    """Everything a run needs besides the inputs; built by the CLI, read-only afterwards.

    ``model`` is a Whisper name or path (``None``: the embedded default); ``decoding`` the way to decode and its
    options (``BatchedDecoding``, or ``transcribe.SequentialDecoding`` for ``--no-batch``); ``formats`` are writer
    names (``writers.FORMATS``); ``output_dir`` ``None`` writes beside each input; ``diarization`` is a
    ``diarize.DiarizationOptions``, ``None`` without speakers. ``resume_dir``: keep checkpoints of each file there
    and go on from them (``library.checkpoints``); ``skip_existing``: languages (ISO 639-1, ``und`` for subtitles
    without one) whose sidecar or embedded subtitles make a file ``skipped`` (``library.skip``).
    """

    model: str | None = None
    transcribe: TranscribeOptions = TranscribeOptions()
    decoding: Decoding = BatchedDecoding()
    formats: tuple[str, ...] = ("srt", "vtt")
    output_dir: Path | None = None
    name_template: str = "{stem}"
    overwrite: bool = False
    audio_track: int = 0
    audio_language: str | None = None  # --audio-language: the audio stream tagged with it (streams.pick_audio_track)
    channels: str = "auto"  # --channels: which channel of a multichannel stream (channels.choose_channel)
    embed: bool = False  # --embed: a video copy with soft subtitle tracks (whisper_subtitler.video)
    burn_in: bool = False  # --burn-in: a video copy with the subtitles in the picture
    forced: bool = False  # --forced: also {name}.{lang}.forced.{ext} with the lines in other languages (narratives)
    cues: CueOptions = CueOptions()
    writer: WriterOptions = WriterOptions()
    diarization: Any = None
    speaker_names: tuple[str, ...] = ()
    voices: Any = None  # --voices: a voices.VoicesOptions (speakers named from the voice library), None without
    resume_dir: Path | None = None  # --resume: checkpoints of long files under this state dir (library.checkpoints)
    skip_existing: tuple[str, ...] = ()  # --skip-existing: ISO 639-1 codes whose subtitles skip a file (library.skip)


@dataclass(frozen=True)
class Transcribed:
    """A file transcribed: ``transcript`` and ``speech`` regions in seconds from the file's start, and the last
    piece of ``audio`` (the whole audio when the file was one piece, as with diarization)."""

    transcript: Transcript
    speech: tuple[Region, ...]
    audio: Audio


@dataclass(frozen=True)
class Subtitled:
    """A file's subtitles before any file is written: the ``transcript`` (speakers assigned, with diarization), its
    ``cues``, the ``speech`` regions and the ``shot_changes`` the cues were timed by (seconds from the file's
    start)."""

    transcript: Transcript
    cues: tuple[Cue, ...]
    speech: tuple[Region, ...]
    shot_changes: tuple[float, ...] = ()


class Pipeline:
    """Runs the stages for one file after another. ``selection`` is the platform layer's device choice
    (``platform.Selection``); ``models``: a ``ModelHolder`` to use (``ModelHolder.sharing``), else one of its own.
    Expected failures are raised as ``SubtitlerError``: the runner decides whether they end the batch
    (``SubtitlerError.ends_batch``)."""

    def __init__(self, options: RunOptions, selection: Any, models: ModelHolder | None = None) -> None:
        self.options = options
        self.selection = selection
        self.models = models or ModelHolder(
            options.model, options.decoding, options.transcribe, selection, options.diarization
        )
        self._prefetcher = Prefetcher(lambda source: self._prepare(source))
        self._voices: Any = None  # the voices.naming.VoiceNamer of the batch, made at the first file

    def load(self, sources: Iterable[Path] = ()) -> None:
        """Resolve and load Whisper before the first file, so that a bad ``--model`` ends the run once (exit 3), not
        every file; nothing is loaded when every one of ``sources`` would be skipped (all its outputs exist, or
        ``--skip-existing`` finds subtitles)."""
        sources = list(sources)
        if not sources or not all(self.skipped(s) for s in sources):
            self.models.transcriber()

    def prefetch(self, source: Path) -> None:
        """Start decoding ``source``'s first audio piece and finding its speech in the background, to be taken by
        ``process(source)`` (``whisper_subtitler.prefetch``). Not with diarization, which needs the whole audio."""
        if self.options.diarization is None:
            self._prefetcher.start(source)

    def _prepare(self, source: Path) -> Prepared | None:
        return None if self._existing_outputs(source) else prepare_first(self.open(source), speech_regions)

    def close(self) -> None:
        """Stop a background preparation (``prefetch``) that was not used."""
        self._prefetcher.close()

    def outputs_for(self, source: Path, language: str | None = None) -> list[Path]:
        """The output paths ``source`` would get, one per format, then its video copies (``--embed``, ``--burn-in``).
        ``language``: the one ``{lang}`` and ``{lang3}`` of ``--name-template`` stand for (``output_language``);
        ``None``: the one given with ``--language``, else, before the file is transcribed, the placeholders
        themselves (``outputs.output_path``)."""
        o = self.options
        language = language or self.given_language()
        return [
            output_path(source, o.output_dir, FORMATS[fmt].extension, o.name_template, language) for fmt in o.formats
        ] + [target for _, target in self._video_targets(source, language)]

    def given_language(self) -> str | None:
        """The language of the outputs known before transcribing: English for ``--task translate``, else the one
        ``--language`` forces; ``None`` when it is detected."""
        return "en" if self.options.transcribe.task == "translate" else self.options.transcribe.language

    def output_language(self, transcript: Transcript) -> str | None:
        """The language the subtitles of ``transcript`` are in (``{lang}`` of ``--name-template``): the given one,
        else the detected one; ``None`` when there was no speech to detect it from."""
        return self.given_language() or transcript.language or None

    def _video_targets(self, source: Path, language: str | None = None) -> list[tuple[str, Path]]:
        o = self.options
        template = o.name_template if language is None else language_template(o.name_template, language)
        return video_targets(source, o.output_dir, template, embed=o.embed, burn_in=o.burn_in)

    def _existing_outputs(self, source: Path) -> list[Path]:
        """All of ``source``'s outputs when every one exists and ``--overwrite`` is off (the file is skipped). With
        ``{lang}`` in the name template and the language to be detected, the names are not known yet: none exists."""
        if needs_language(self.options.name_template) and self.given_language() is None:
            return []
        targets = self.outputs_for(source)
        existing = [t for t in targets if t.exists()] if not self.options.overwrite else []
        return existing if targets and len(existing) == len(targets) else []

    def skipped(self, source: Path) -> FileResult | None:
        """The ``skipped`` result of ``source`` when all its outputs exist and ``--overwrite`` is off, or when it has
        subtitles in a language of ``--skip-existing`` (``library.skip``: then ``skipped_outputs`` names them), else
        None."""
        if self.options.skip_existing:
            from whisper_subtitler.library.skip import existing_subtitles

            if found := existing_subtitles(source, self.options.skip_existing):
                names = ", ".join("an embedded stream" if p == source else p.name for p in found)
                reason = f"it has subtitles in {','.join(self.options.skip_existing)} ({names})"
                return FileResult(source, FileStatus.SKIPPED, skipped_outputs=tuple(found), skip_reason=reason)
        existing = self._existing_outputs(source)
        return (
            FileResult(source=source, status=FileStatus.SKIPPED, skipped_outputs=tuple(existing)) if existing else None
        )

    def resume_fingerprint(self) -> str:
        """What a checkpoint depends on besides the file (``library.checkpoints``): the model, the decoding and audio
        options, diarization, the device, dtype and batch size; not the cue and output options, which apply after
        transcription."""
        o, s = self.options, self.selection
        parts = (o.model, o.transcribe, o.decoding, o.audio_track, o.audio_language, o.channels, o.diarization)
        machine = tuple(getattr(s, name, None) for name in ("device", "dtype", "batch_size", "optimization_level"))
        return repr((parts, machine))

    def _checkpoint(self, source: Path) -> Checkpoint | None:
        """``source``'s checkpoint with ``resume_dir`` (what an earlier run finished), else ``None``."""
        if self.options.resume_dir is None:
            return None
        try:
            checkpoint = open_checkpoint(self.options.resume_dir, source, self.resume_fingerprint())
        except OSError:
            return None  # the file cannot be read: opening it fails with its reason
        if checkpoint.resumed:
            done = sum(p.samples for p in checkpoint.pieces) / SAMPLE_RATE
            logging.getLogger(__name__).warning(
                "%s: resuming from a checkpoint (%d pieces, %.1f s, and %d chunks finished)",
                source,
                len(checkpoint.pieces),
                done,
                len(checkpoint.journal.results),
            )
        return checkpoint

    def write_subtitles(
        self, transcript: Transcript, cues: Sequence[Cue], targets: Sequence[tuple[str, Path]]
    ) -> tuple[list[Path], list[Path]]:
        """Write the subtitle ``(format, target)`` files (``outputs.write_subtitles``); returns ``(written, kept)``. A
        Ray worker renders them instead, for its driver to write (``executors.ray_worker``)."""
        o = self.options
        return write_subtitles(transcript, cues, targets, o.writer, overwrite=o.overwrite)

    def open(self, source: Path, whole: bool | None = None) -> Generator[Audio, None, None]:
        """``source``'s audio in pieces (``pieces.open_stream``): in one piece when ``whole``, by default with
        diarization, which needs the whole audio. Raises ``InputError`` for a file ffmpeg cannot read,
        ``AudioLanguageError`` for a missing tag."""
        o = self.options
        whole = o.diarization is not None if whole is None else whole
        return open_stream(source, o.audio_track, whole, o.audio_language, o.channels)

    def subtitle(
        self,
        stream: Generator[Audio, None, None],
        timer: StageTimer | None = None,
        first_speech: tuple[Region, ...] | None = None,
        checkpoint: Checkpoint | None = None,
        shots: ShotChanges | None = None,
    ) -> Subtitled:
        """The stages between the audio and the files: ``stream`` transcribed (``transcribe``), the hallucination
        guards, speakers (with diarization) and cues. ``timer`` hears each stage start; ``checkpoint``: what an
        earlier run finished, kept up to date (``library.checkpoints``). Closes ``stream``. ``shots``: the
        input's shot changes (``video.shots.ShotChanges``), which time the cues."""
        timer = timer or StageTimer()
        transcribed = self.transcribe(stream, timer, first_speech, checkpoint)
        transcript = clean_transcript(transcribed.transcript, self.options.cues.max_cps)  # before speakers: JSON = cues
        if self.options.diarization is not None:
            timer.start(Stage.DIARIZE)
            transcript = self._diarize(transcribed.audio, transcript, transcribed.speech)
        timer.start(Stage.CUES)
        cue_options = shots.cue_options() if shots is not None else self.options.cues
        removed: list[Removal] = []
        cues = build_cues(transcript, cue_options, speech=transcribed.speech, removed=removed)
        transcript = with_removals(transcript, removed)
        transcript = keeping_shot_changes(transcript, cue_options)  # in the JSON: format times the cues the same way
        return Subtitled(transcript, tuple(cues), transcribed.speech, used_shot_changes(cue_options))

    def process(self, source: Path, on_stage: OnStage = lambda stage, fraction=None: None) -> FileResult:
        """Turn ``source`` into subtitle files; ``on_stage`` is called with each stage as it starts (progress), and
        as ``on_stage(stage, fraction)`` with the share of the file's audio transcribed (``StageTimer.advance``).
        Raises ``SubtitlerError`` for an expected failure (a bad input, a missing requirement)."""
        prepared = self._prefetcher.take(source)
        if skipped := self.skipped(source):
            if prepared is not None:
                prepared.close()
            return skipped
        if self.options.burn_in and self._video_targets(source):
            require_subtitle_filter(source)  # fails this file now, not after transcribing it
        timer = StageTimer(on_stage)
        timer.start(Stage.AUDIO)
        stream = resume(prepared) if prepared is not None else self.open(source)
        shots = ShotChanges(source, self.options.cues)  # ffmpeg finds them while the speech is transcribed
        checkpoint = self._checkpoint(source)
        try:
            subtitled = self.subtitle(
                stream, timer, prepared.regions if prepared is not None else None, checkpoint, shots=shots
            )
        except SubtitlerError:
            if checkpoint is not None:
                checkpoint.remove()  # a file that fails leaves nothing behind
            raise
        transcript, cues = subtitled.transcript, subtitled.cues
        timer.start(Stage.WRITE)
        targets = list(zip(self.options.formats, self.outputs_for(source, self.output_language(transcript))))
        written, kept = self.write_subtitles(transcript, cues, targets)
        forced_cues = None
        if self.options.forced:
            forced_cues, made, old = self._write_forced(source, transcript, cues)
            written, kept = written + made, kept + old
        log_faults(source.name, cues, shots.cue_options(), transcript.language or None, transcript.duration)
        log_removals(source.name, transcript.removed)
        if videos := self._video_targets(source, self.output_language(transcript)):
            timer.start(Stage.VIDEO)
            o = self.options
            made, old = write_video_copies(source, transcript, cues, videos, o.writer, o.formats, overwrite=o.overwrite)
            written, kept = written + made, kept + old
        if checkpoint is not None:
            checkpoint.remove()  # every output is written
        return FileResult(
            source=source,
            status=FileStatus.DONE,
            outputs=tuple(written),
            skipped_outputs=tuple(kept),
            duration=round(transcript.duration, 3),
            language=transcript.language,
            speakers=transcript.speakers,
            channel=transcript.channel,
            unheard_speech=unheard_in(transcript, subtitled.speech),
            removed=transcript.removed,
            shot_changes=subtitled.shot_changes,
            timings=timer.stop(),
            forced_cues=forced_cues,
        )

    def _write_forced(
        self, source: Path, transcript: Transcript, cues: Sequence[Cue]
    ) -> tuple[int, list[Path], list[Path]]:
        """``--forced``: the file's forced narrative cues (``narratives.plan``) written to their own files; returns
        their number and ``(written, kept)``. Nothing is written when every cue is in the main language."""
        o = self.options
        template = without_language(o.name_template)  # narratives names the language itself: Movie.en.forced.srt
        forced = narratives.plan(source, transcript, cues, o.formats, o.output_dir, template)
        logger.info(forced.message(source))
        written, kept = self.write_subtitles(transcript, forced.cues, forced.targets) if forced.targets else ([], [])
        return len(forced.cues), written, kept

    def transcribe(
        self,
        stream: Generator[Audio, None, None],
        timer: StageTimer | None = None,
        first_speech: tuple[Region, ...] | None = None,
        checkpoint: Checkpoint | None = None,
    ) -> Transcribed:
        """Transcribe a file's audio ``stream`` piece by piece (``pieces.speech_pieces``); without ``--language``,
        each speech region's language is found anew (``decoding.language_plan``) and the file's language is the one
        spoken longest (``code_switching.main_language``). ``first_speech``: the first piece's speech regions when
        already found. ``checkpoint``: the pieces and batches an earlier run finished, taken instead of decoding
        them, and each piece and batch finished here added to it (``library.checkpoints``). Closes ``stream``, and so
        stops ffmpeg, also on failure."""
        timer = timer or StageTimer()
        segments: list[Segment] = []
        speech: list[Region] = []
        forced, detected, audio = self.options.transcribe.language, None, None
        sure: list[LanguageDetection] = []  # how sure each piece's detection of its language was
        finished = list(checkpoint.pieces) if checkpoint is not None else []
        known = [p.samples for p in finished]
        with closing(stream):
            pieces = speech_pieces(stream, speech_regions, timer, first_speech, find_tight=tight_regions, known=known)
            for index, piece in enumerate(pieces):
                audio = piece.audio
                if index < len(finished):  # finished by an earlier run: its results, nothing decoded
                    done = finished[index]
                    segments.extend(done.segments)
                    speech.extend(done.speech)
                    detected = detected or done.language
                    _advancing(timer, audio)(1.0)
                    continue
                part_segments: list[Segment] = []
                part_language = None
                if piece.speech:
                    timer.start(Stage.MODEL_LOAD)
                    transcriber = self.models.transcriber()
                    timer.start(Stage.TRANSCRIBE)
                    with recording(checkpoint.journal if checkpoint is not None else None):
                        part = transcriber.transcribe(audio, piece.speech, forced, _advancing(timer, audio))
                    part_language = part.language
                    detected = detected or part.language
                    if part.language_detection is not None:
                        sure.append(part.language_detection)
                    timed = start_after_pauses(part.segments, pauses(piece.tight, 0.0, audio.duration))
                    part_segments = [segment.shifted(audio.offset) for segment in timed]
                    segments.extend(part_segments)
                part_speech = tuple((a + audio.offset, b + audio.offset) for a, b in piece.speech)
                speech.extend(part_speech)
                if checkpoint is not None:
                    n = len(audio.samples)
                    checkpoint.piece_done(FinishedPiece(n, tuple(part_segments), part_speech, part_language or None))
                _advancing(timer, audio)(1.0)
        assert audio is not None, "audio.stream_audio yields at least one piece"
        language = forced or main_language((s.language, s.end - s.start) for s in segments) or detected
        transcript = new_transcript(
            audio.source,
            audio.offset + audio.duration,
            self.options.transcribe,
            self.models.model_name,
            segments,
            language,
        )
        detection = min(sure, key=lambda d: d.probability, default=None)
        transcript = replace(transcript, channel=audio.channel, language_detection=detection)
        return Transcribed(transcript, tuple(speech), audio)

    def detect_language(self, stream: Generator[Audio, None, None]) -> tuple[str, float]:
        """The language of a file's audio ``stream``: Whisper's language detection on the 30 s that start at the
        first speech the VAD finds in the first ``LANGUAGE_SEARCH_S`` seconds (at the start of the file when there
        is none), so that leading music or silence does not decide. Returns ``(ISO 639-1 code, probability)``;
        ``("en", 1.0)`` with an English-only model. Closes ``stream``."""
        from whisper_subtitler.decoding.language_id import window_language

        with closing(stream):
            first = next(stream)
        head = first.samples[: int(LANGUAGE_SEARCH_S * first.sample_rate)]
        regions = speech_regions(head) if len(head) else ()
        start = int(regions[0][0] * first.sample_rate) if regions else 0
        return window_language(self.models.whisper(), first.samples[start:])

    def _diarize(self, audio: Audio, transcript: Transcript, speech: tuple[Region, ...]) -> Transcript:
        from whisper_subtitler.speakers import assign_speakers, rename_speakers, without_single_speaker

        with self.models.diarizer() as diarizer:
            diarization = diarizer.diarize(audio, speech=speech)
        matches: tuple[VoiceMatch, ...] = ()
        if self.options.voices is not None:  # --voices: clusters named from the library, in input order
            from whisper_subtitler.voices.naming import VoiceNamer

            self._voices = self._voices or VoiceNamer(self.options.voices)
            diarization, matches = self._voices.name(audio, diarization)
        transcript = assign_speakers(transcript, diarization.turns, exclusive=diarization.exclusive_turns)
        transcript = replace(transcript, voices=matches)
        if self.options.speaker_names:
            return rename_speakers(transcript, self.options.speaker_names)
        return transcript if any(m.source == "library" for m in matches) else without_single_speaker(transcript)


def _advancing(timer: StageTimer, piece: Audio) -> Callable[[float], None]:
    """The progress callback of ``piece``: ``done`` (0 to 1) of it transcribed is announced as the share of the file
    (``StageTimer.advance``): by the duration the file declares, else by the end of this piece."""

    def advance(done: float) -> None:
        total = piece.container_duration or piece.offset + piece.duration
        timer.advance(min(1.0, (piece.offset + done * piece.duration) / max(total, 1e-9)))

    return advance
