"""``align``: one media file and its transcript to subtitle files.

    read_script        TXT, SRT, WebVTT or JSON -> lines                       (script)
    script_words       the tokenizer's words, in sentences                     (words)
    stream_audio       ffmpeg -> 16 kHz mono in pieces cut at pauses           (audio)
    tight_regions      VAD with no padding: speech and the pauses between       (vad)
    WindowAligner      Whisper cross-attention DTW on the given tokens          (forced, windows)
    not_found          sentences the audio does not hold, reported              (refine)
    snap_to_pauses     word boundaries onto the pauses                          (refine)
    diarize            pyannote speaker turns, as ``transcribe``                (optional)
    build_cues         the same readability rules and writers as ``transcribe``

The subtitles keep every word of the transcript that was placed, even where ``transcribe``'s hallucination guards
would drop text (improbable or repeated words: here the words are given, not guessed): the cue options get no
probability floor and no repetition limit.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from whisper_subtitler.align.forced import WindowAligner
from whisper_subtitler.align.refine import not_found, snap_to_pauses
from whisper_subtitler.align.script import read_script
from whisper_subtitler.align.words import script_words, sentence_text
from whisper_subtitler.cues import CueOptions, build_cues
from whisper_subtitler.cues.guards import with_removals
from whisper_subtitler.errors import UsageError
from whisper_subtitler.outputs import output_path, write_subtitles
from whisper_subtitler.types import Audio, Removal, Segment, Transcript, Word
from whisper_subtitler.vad import pauses, tight_regions
from whisper_subtitler.writers import FORMATS, WriterOptions

log = logging.getLogger(__name__)

SPEECH_PAD = 0.2  # seconds added around the regions for diarization and the cue builder's silence guard
SPEECH_JOIN = 0.5  # seconds: padded regions closer than this are one (the pipeline's VAD settings)
REPEATS_KEPT = 1_000_000  # cue option max_repeats: no repetition of a given transcript is cut


@dataclass(frozen=True)
class AlignOptions:
    """What ``align_media`` needs besides the two files; fields as ``pipeline.RunOptions``. ``language`` (ISO 639-1)
    wins over the transcript's; ``None``: the transcript's, else detected from the audio."""

    model: str | None = None
    language: str | None = None
    formats: tuple[str, ...] = ("srt", "vtt")
    output_dir: Path | None = None
    name_template: str = "{stem}"
    overwrite: bool = False
    audio_track: int = 0
    audio_language: str | None = None
    channels: str = "auto"  # which channel of a multichannel stream (channels.choose_channel)
    cues: CueOptions = CueOptions()
    writer: WriterOptions = WriterOptions()
    diarization: object | None = None  # whisper_subtitler.diarize.DiarizationOptions
    speaker_names: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Unplaced:
    """A sentence of the transcript that was not placed: its ``text``, its ``line`` (1-based, in the transcript's
    lines: a cue of SRT/WebVTT, a segment of JSON, a non-empty line of text), ``after``: the end (seconds) of the
    last word placed before it (``None`` at the start), and why (``reason``)."""

    text: str
    line: int
    after: float | None
    reason: str


@dataclass(frozen=True)
class AlignResult:
    """What ``align_media`` did: files ``outputs`` written and ``kept``, the ``language``, audio ``duration``
    (seconds), ``words`` in the transcript and ``placed`` in the subtitles, the ``unplaced`` sentences, speakers,
    and wall seconds per stage."""

    media: Path
    transcript: Path
    outputs: tuple[Path, ...] = ()
    kept: tuple[Path, ...] = ()
    language: str = ""
    duration: float = 0.0
    words: int = 0
    placed: int = 0
    unplaced: tuple[Unplaced, ...] = ()
    speakers: tuple[str, ...] = ()
    timings: dict[str, float] = field(default_factory=dict)


def outputs_for(media: Path, options: AlignOptions) -> list[tuple[str, Path]]:
    """``(format, target)`` of each output: named after ``media`` as ``transcribe`` names them."""
    return [
        (fmt, output_path(media, options.output_dir, FORMATS[fmt].extension, options.name_template))
        for fmt in options.formats
    ]


def load_model(name: str | None, selection):
    """The Whisper model ``name`` (``None``: the default) on ``selection``'s device, as the pipeline loads it."""
    from whisper_subtitler import platform
    from whisper_subtitler.models import load_whisper, resolve_model

    resolved = resolve_model(name)
    log.info("model %s from %s (%s)", resolved.name, resolved.source, resolved.path)
    return platform.prepare_model(load_whisper(resolved, device="cpu"), selection), resolved.name


def _pieces(media: Path, options: AlignOptions) -> Iterator[tuple[Audio, tuple[tuple[float, float], ...], bool]]:
    """``media``'s audio in pieces cut at a pause (``pieces.speech_pieces``, as the pipeline cuts them), each with
    its speech regions in seconds from the start of the file and whether it is the last; one piece with
    diarization, which needs the whole file."""
    from whisper_subtitler.pieces import open_stream, speech_pieces, with_last
    from whisper_subtitler.stages import StageTimer

    whole = options.diarization is not None
    stream = open_stream(media, options.audio_track, whole, options.audio_language, options.channels)
    try:
        pieces = speech_pieces(stream, tight_regions, StageTimer())
        for piece, last in with_last(pieces):
            offset = piece.audio.offset
            yield piece.audio, tuple((a + offset, b + offset) for a, b in piece.speech), last
    finally:
        stream.close()


def coarse_speech(regions, duration: float) -> tuple[tuple[float, float], ...]:
    """``regions`` padded by ``SPEECH_PAD`` and joined across gaps under ``SPEECH_JOIN`` (seconds): speech regions
    as the pipeline's VAD settings give them, for diarization and the cue builder."""
    out: list[list[float]] = []
    for a, b in regions:
        a, b = max(0.0, a - SPEECH_PAD), min(duration, b + SPEECH_PAD)
        if out and a - out[-1][1] < SPEECH_JOIN:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return tuple((a, b) for a, b in out)


def _language(options: AlignOptions, script, model, first: Audio, regions) -> str:
    """The language to align in: given, the transcript's, ``en`` for English-only models, else detected."""
    from whisper.tokenizer import LANGUAGES

    from whisper_subtitler.languages import normalize

    for candidate in (options.language, script.language):
        code = normalize(candidate or "")
        code = {"jv": "jw", "he": "iw"}.get(code, code)  # Whisper's codes for Javanese and Hebrew
        if code in LANGUAGES:
            if not model.is_multilingual and code != "en":
                raise UsageError(
                    f"the model is English-only and the transcript is in {LANGUAGES[code]}; "
                    "use a multilingual model (--model base, small, ...)"
                )
            return code
    if not model.is_multilingual:
        return "en"
    import torch
    import whisper

    from whisper_subtitler.transcription import detect_language

    start = max(0, round((regions[0][0] - first.offset) * first.sample_rate)) if regions else 0
    window = whisper.pad_or_trim(torch.from_numpy(first.samples[start:]))  # the first 30 s from the first speech
    mel = whisper.log_mel_spectrogram(window, model.dims.n_mels).to(model.device)
    with torch.inference_mode():
        features = model.embed_audio(mel.unsqueeze(0).to(next(model.parameters()).dtype))
        return detect_language(model, features)


def align_media(media: Path, transcript_path: Path, options: AlignOptions, selection) -> AlignResult:
    """Align the transcript ``transcript_path`` to ``media`` and write the subtitle files.

    Raises ``InputError`` for an unreadable media file or transcript, ``UsageError`` when an output would replace
    the transcript or the language does not suit the model, ``MissingRequirementError`` (model, ffmpeg,
    diarization). Sentences not found in the audio are returned in ``unplaced``, not raised.
    """
    media, transcript_path = Path(media), Path(transcript_path)
    timings: dict[str, float] = {}
    clock = time.perf_counter()

    def stage(name: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        timings[name] = round(timings.get(name, 0.0) + now - clock, 3)
        clock = now

    script = read_script(transcript_path)
    targets = outputs_for(media, options)
    for _, target in targets:
        if target.absolute() == transcript_path.absolute() or (target.exists() and target.samefile(transcript_path)):
            raise UsageError(
                f"{target}: the output would replace the transcript being aligned; use --output-dir or --name-template"
            )
    if targets and not options.overwrite and all(t.exists() for _, t in targets):
        return AlignResult(media, transcript_path, kept=tuple(t for _, t in targets))
    model, model_name = load_model(options.model, selection)
    stage("model_load")

    aligner = None
    regions: list[tuple[float, float]] = []
    audio = None
    language = ""
    words = sentences = ()
    for piece, piece_regions, last in _pieces(media, options):
        stage("audio")
        if aligner is None:
            from whisper.tokenizer import get_tokenizer

            language = _language(options, script, model, piece, piece_regions)
            tokenizer = get_tokenizer(
                model.is_multilingual, num_languages=model.num_languages, language=language, task="transcribe"
            )
            words, sentences = script_words(script, tokenizer)
            aligner = WindowAligner(model, tokenizer, words)
        aligner.align_piece(piece.samples, piece.offset, piece_regions, last=last)
        regions.extend(piece_regions)
        audio = piece
        stage("align")
    duration = audio.offset + audio.duration

    missing = set(not_found(words, sentences, aligner.times, regions))
    kept_sentences = [k for k in range(len(sentences)) if k not in missing]
    keep = [i for k in kept_sentences for i in range(sentences[k].first, sentences[k].last + 1)]
    snapped = dict(
        zip(
            keep,
            snap_to_pauses(
                [(aligner.times[i].start, aligner.times[i].end) for i in keep], pauses(regions, 0.0, duration)
            ),
        )
    )
    segments = []
    for k in kept_sentences:
        s: Any = sentences[k]
        ws = tuple(
            Word(
                words[i].text,
                round(snapped[i][0], 3),
                round(snapped[i][1], 3),
                round(aligner.times[i].probability, 4),
                s.speaker,
            )
            for i in range(s.first, s.last + 1)
        )
        segments.append(Segment(ws[0].start, ws[-1].end, "".join(w.text for w in ws), ws, speaker=s.speaker))
    transcript = Transcript(tuple(segments), language, duration, model_name, str(media), "transcribe")
    unplaced = []
    for k in sorted(missing):
        s = sentences[k]
        before = [snapped[i][1] for i in keep if i < s.first]
        reason = "not in the audio" if aligner.times[s.first] is not None else "after the last speech placed"
        unplaced.append(Unplaced(sentence_text(words, s), s.line + 1, before[-1] if before else None, reason))
    speech = coarse_speech(regions, duration)
    stage("refine")

    if options.diarization is not None:
        aligner = model = None  # whisperX's order: free Whisper, then diarize
        transcript = _diarize(transcript, audio, speech, options, selection)
        stage("diarize")
    cue_options = replace(options.cues, min_cue_probability=0.0, max_repeats=REPEATS_KEPT)
    removed: list[Removal] = []
    cues = build_cues(transcript, cue_options, speech=speech, removed=removed)
    transcript = with_removals(transcript, removed)
    in_cues = sum(len(c.words) for c in cues)
    if in_cues < len(keep):
        log.warning(
            "%s: %d placed words were left out by the cue rules (repeated cue text or words over silence)",
            media,
            len(keep) - in_cues,
        )
    stage("cues")
    written, kept = write_subtitles(transcript, cues, targets, options.writer, overwrite=options.overwrite)
    stage("write")
    return AlignResult(
        media,
        transcript_path,
        tuple(written),
        tuple(kept),
        language,
        round(duration, 3),
        len(words),
        in_cues,
        tuple(unplaced),
        transcript.speakers,
        timings,
    )


def _diarize(transcript: Transcript, audio: Audio, speech, options: AlignOptions, selection) -> Transcript:
    """Speakers as ``transcribe`` assigns them (the caller has let the Whisper model go)."""
    from whisper_subtitler.diarize import load_diarizer
    from whisper_subtitler.diarize.memory import release_accelerator_memory
    from whisper_subtitler.speakers import assign_speakers, rename_speakers, without_single_speaker

    release_accelerator_memory(selection.device)
    diarizer = load_diarizer(options.diarization, selection.device)
    try:
        diarization = diarizer.diarize(audio, speech=speech)
    finally:
        diarizer.close()
    transcript = assign_speakers(transcript, diarization.turns, exclusive=diarization.exclusive_turns)
    if options.speaker_names:
        return rename_speakers(transcript, options.speaker_names)
    return without_single_speaker(transcript)
