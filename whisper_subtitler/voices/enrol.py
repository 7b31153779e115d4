"""A clip of one voice, checked and embedded for the library (``whisper-subtitler voices add``).

A clip is refused, with the reason, when it cannot serve as a reference of one person's voice:

- it cannot be decoded (ffmpeg), or its ``start``/``end`` lie outside it or in the wrong order;
- it is empty, or holds less than :data:`MIN_SPEECH` seconds of speech by silero-vad (silence, music, noise);
- the diarization (the embedded pipeline: the same segmentation and CAM++ as a transcription) hears no speaker,
  or two speakers or more, or two voices at once for :data:`MAX_OVERLAP` seconds or more.

The embedding is then :func:`.embed.embed_speech` over the one speaker's turns: the same speech and pooling as a
speaker cluster of a transcribed file gets.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from whisper_subtitler.errors import InputError, UsageError
from whisper_subtitler.types import Audio
from whisper_subtitler.voices.library import Clip, Voice

MIN_SPEECH = 1.0  # s of speech (silero-vad) a clip must hold: CAM++ on less is too unsteady to name anyone by
MAX_OVERLAP = 0.5  # s of overlapped speech (two speakers' turns at once) from which a clip holds several voices


class VoiceClipError(UsageError):
    """A clip that cannot be enrolled (unreadable, empty, no speech, several voices): exit 2."""

    ends_batch = True


@dataclass(frozen=True)
class ClipRange:
    """The part of a file to enrol: ``start`` and ``end`` in seconds (``None``: the file's start or end)."""

    start: float | None = None
    end: float | None = None


def cut(audio: Audio, part: ClipRange, name: str) -> Audio:
    """``audio`` cut to ``part``; VoiceClipError when the range is empty or starts past the end."""
    from dataclasses import replace

    start = part.start or 0.0
    end = audio.duration if part.end is None else min(part.end, audio.duration)
    if start < 0 or (part.end is not None and part.end <= start):
        raise VoiceClipError(f"{name}: --start {start:g} and --end {part.end:g} give no time")
    if start >= audio.duration and audio.duration > 0:
        raise VoiceClipError(f"{name}: --start {start:g} is past its end ({audio.duration:.1f} s)")
    first, last = round(start * audio.sample_rate), round(end * audio.sample_rate)
    return replace(audio, samples=audio.samples[first:last])


def read_clip(path: Path, part: ClipRange = ClipRange()) -> tuple[Audio, tuple[tuple[float, float], ...]]:
    """``path``'s audio cut to ``part``, and its speech regions (silero-vad, seconds): the checks that need no
    diarization. Raises VoiceClipError (exit 2) for an unreadable file, an empty or silent clip, or less than
    :data:`MIN_SPEECH` seconds of speech; MissingRequirementError without ffmpeg."""
    from whisper_subtitler.audio import extract_audio
    from whisper_subtitler.vad import speech_regions

    try:
        audio = extract_audio(path)
    except InputError as error:
        raise VoiceClipError(error.message, error.hint) from None
    audio = cut(audio, part, str(path))
    if len(audio.samples) == 0 or not audio.samples.any():
        raise VoiceClipError(f"{path}: the clip is empty (no sound)")
    speech = speech_regions(audio.samples)
    seconds = sum(b - a for a, b in speech)
    if seconds < MIN_SPEECH:
        raise VoiceClipError(
            f"{path}: {seconds:.1f} s of speech found (silence, music or noise?); a voice needs at least "
            f"{MIN_SPEECH:g} s",
            hint="give a clip where the person speaks, alone (--start/--end cut one out)",
        )
    return audio, speech


def embed_clip(path: Path, part: ClipRange, audio: Audio, speech, diarizer) -> Clip:
    """The library clip of ``audio`` (``path`` cut to ``part``, with its ``speech`` regions: :func:`read_clip`),
    checked with ``diarizer`` (a loaded ``diarize.load.Diarizer``) for one voice. Raises VoiceClipError (exit 2)."""
    from whisper_subtitler.voices.embed import embed_speech

    diarization = diarizer.diarize(audio, speech=speech)
    speakers = diarization.speakers
    if not speakers:
        raise VoiceClipError(f"{path}: the diarization hears no speaker in it (music or noise?)")
    if len(speakers) > 1:
        raise VoiceClipError(
            f"{path}: {len(speakers)} voices speak in it; a clip must hold one person's voice",
            hint="cut out a part where the person speaks alone with --start and --end",
        )
    overlap = _overlap_seconds(diarization.turns)
    if overlap >= MAX_OVERLAP:
        raise VoiceClipError(f"{path}: two voices speak at once for {overlap:.1f} s; a clip must hold one voice")
    turns = diarization.exclusive_turns or diarization.turns
    vector, embedded = embed_speech(audio.samples, [(t.start, t.end) for t in turns])
    if embedded < MIN_SPEECH:
        raise VoiceClipError(f"{path}: {embedded:.1f} s of one voice's speech; a voice needs at least {MIN_SPEECH:g} s")
    return Clip(path.name, part.start, part.end, round(embedded, 3), vector)


def add_voice(
    name: str,
    clips: Sequence[tuple[Path, ClipRange]],
    directory: Path | None = None,
    *,
    replace_existing: bool = False,
    diarizer=None,
) -> Voice:
    """Enrol ``name`` from ``clips`` (``(file, range)`` each) into the library in ``directory`` (``None``: the
    user's data folder) and write it; returns the new voice. Everything is checked before the library is written
    (nothing changes on failure): the name, the library file, the name's absence (unless ``replace_existing``),
    each clip without the diarization (:func:`read_clip`), then with it (:func:`embed_clip`; ``diarizer``: a
    loaded one to use, else the embedded offline pipeline is loaded). Raises UsageError or VoiceClipError (exit
    2), VoiceLibraryError or MissingRequirementError (exit 3)."""
    from whisper_subtitler.voices.embed import identity
    from whisper_subtitler.voices.library import check_name, library_path, read_library, write_library

    name = check_name(name)
    if not clips:
        raise UsageError(f"no clip given for {name!r}")
    path = library_path(directory)
    library = read_library(path, identity())
    library.with_voices([Voice(name, ())], replace_existing=replace_existing)  # the name's check, before the work
    read = [(file, part, *read_clip(file, part)) for file, part in clips]
    if diarizer is None:
        from whisper_subtitler.diarize import DiarizationOptions, load_diarizer

        with load_diarizer(DiarizationOptions()) as loaded:
            enrolled = [embed_clip(file, part, audio, speech, loaded) for file, part, audio, speech in read]
    else:
        enrolled = [embed_clip(file, part, audio, speech, diarizer) for file, part, audio, speech in read]
    voice = Voice(name, tuple(enrolled))
    write_library(path, library.with_voices([voice], replace_existing=replace_existing))
    return voice


def _overlap_seconds(turns) -> float:
    """Seconds during which two turns or more overlap (turns sorted by start)."""
    events = sorted([(t.start, 1) for t in turns] + [(t.end, -1) for t in turns])
    total, active, last = 0.0, 0, 0.0
    for time, step in events:
        if active >= 2:
            total += time - last
        active += step
        last = time
    return total
