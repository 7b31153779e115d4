"""A file's audio as pieces cut at pauses, each with its speech regions, so that memory does not grow with the
duration of the file.

ffmpeg decodes ``audio.PIECE_SECONDS`` at a time (``audio.stream_audio``); each piece is cut in a pause the VAD
found (``vad.split_at_pause``) and the rest, the carried tail, goes in front of the next piece, so that no word is
cut in two. With diarization the file is one piece: speakers are clustered over the whole file.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TypeVar

import numpy as np

from whisper_subtitler.audio import PIECE_SECONDS, stream_audio
from whisper_subtitler.prefetch import Prepared
from whisper_subtitler.stages import Stage, StageTimer
from whisper_subtitler.transcription import Region
from whisper_subtitler.types import Audio, ChannelUse
from whisper_subtitler.vad import split_at_pause

T = TypeVar("T")

FindSpeech = Callable[[np.ndarray], tuple[Region, ...]]  # 16 kHz samples -> speech regions in seconds


@dataclass(frozen=True)
class SpeechPiece:
    """A piece of a file cut at a pause: ``audio`` (``audio.offset``: where it starts in the file, seconds) and its
    VAD ``speech`` regions in seconds from the piece's start, none past its end; ``tight``: its speech regions with
    no padding (``speech_pieces``' ``find_tight``; empty without it), likewise."""

    audio: Audio
    speech: tuple[Region, ...]
    tight: tuple[Region, ...] = ()


def open_stream(
    source: Path, audio_track: int, whole: bool, audio_language: str | None = None, channels: str = "auto"
) -> Generator[Audio, None, None]:
    """``source``'s audio in pieces of ``PIECE_SECONDS`` (``audio.stream_audio``), or in one piece when ``whole``;
    with ``audio_language``, from the audio stream tagged with it (``streams.pick_audio_track``, which raises
    ``AudioLanguageError`` when there is none) instead of ``audio_track``; of a multichannel stream, the channel
    ``--channels channels`` chooses (``channels.choose_channel``)."""
    if audio_language:
        from whisper_subtitler.streams import pick_audio_track

        audio_track = pick_audio_track(source, audio_language)
    piece_seconds = None if whole else PIECE_SECONDS
    return stream_audio(source, audio_track=audio_track, piece_seconds=piece_seconds, channels=channels)


def planned_channel(
    source: Path, audio_track: int, audio_language: str | None = None, channels: str = "auto"
) -> tuple[ChannelUse, bool]:
    """The channel ``open_stream`` would take from ``source`` as far as ffprobe tells without decoding (``--dry-run``):
    ``(use, decided)``, ``channels.choose_by_layout`` on the stream's layout; ``decided`` is False for ``auto``'s
    centre, which the speech check (``channels.centre_has_speech``) may still turn into the downmix when the file
    is read. Raises ``InputError`` (not media, no audio, no such track), ``UsageError`` (no stream in
    ``audio_language``) or ``ChannelError`` (a channel the stream lacks), as the run would for that file."""
    from whisper_subtitler.audio import probe
    from whisper_subtitler.channels import AUTO, choose_by_layout
    from whisper_subtitler.errors import InputError
    from whisper_subtitler.inputs import check_input

    if audio_language:
        from whisper_subtitler.streams import pick_audio_track

        audio_track = pick_audio_track(source, audio_language)
    info = probe(check_input(source))
    if info.audio_streams == 0:
        raise InputError(f"{source}: no audio stream")
    if audio_track >= info.audio_streams:
        raise InputError(f"{source}: no audio track {audio_track} (the file has {info.audio_streams})")
    layout, count = info.layouts[audio_track] if audio_track < len(info.layouts) else ("", 0)
    use = choose_by_layout(channels, layout, count, source)
    return use, not (channels == AUTO and use.used == "FC")


def prepare_first(stream: Generator[Audio, None, None], find_speech: FindSpeech) -> Prepared:
    """The first piece of ``stream`` and its speech regions, the rest left in the stream (``prefetch``); the stream
    is closed when this fails."""
    try:
        first = next(stream)
        return Prepared(first, find_speech(first.samples), stream)
    except BaseException:
        stream.close()
        raise


def resume(prepared: Prepared) -> Generator[Audio, None, None]:
    """The prepared first piece, then the rest of the stream; closing this closes the stream."""
    try:
        yield prepared.first
        yield from prepared.rest
    finally:
        prepared.close()


def with_last(items: Iterable[T]) -> Iterator[tuple[T, bool]]:
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


def speech_pieces(
    stream: Iterable[Audio],
    find_speech: FindSpeech,
    timer: StageTimer,
    first_speech: tuple[Region, ...] | None = None,
    find_tight: FindSpeech | None = None,
    known: Sequence[int] = (),
) -> Iterator[SpeechPiece]:
    """The pieces of ``stream`` cut at pauses, in order, with their speech regions (``find_speech``, timed as
    ``Stage.VAD``). ``first_speech``: the first piece's regions when already found (``prefetch``). ``find_tight``:
    also the regions it finds (``vad.tight_regions``), on the same samples as ``find_speech``, so that the VAD's
    probabilities are computed once. The last piece ends where the audio ends; together the pieces hold every
    sample once. ``known``: the lengths (samples) of the first pieces as an earlier run cut them (a resumed file,
    ``library.checkpoints``): those pieces are cut there, without the VAD, and yielded with no speech regions."""
    carry: Audio | None = None
    for index, (piece, last) in enumerate(with_last(stream)):
        if carry is not None:
            piece = replace(piece, samples=np.concatenate([carry.samples, piece.samples]), offset=carry.offset)
        if index < len(known):
            n, first_speech = known[index], None
            carry = replace(piece, samples=piece.samples[n:], offset=piece.offset + n / piece.sample_rate)
            yield SpeechPiece(replace(piece, samples=piece.samples[:n]), ())
            continue
        timer.start(Stage.VAD)
        regions = first_speech if first_speech is not None else find_speech(piece.samples)
        tight = find_tight(piece.samples) if find_tight is not None else ()
        first_speech = None
        cut = piece.duration if last else split_at_pause(regions, piece.duration)
        n = int(round(cut * piece.sample_rate))
        if not last:
            carry = replace(piece, samples=piece.samples[n:], offset=piece.offset + n / piece.sample_rate)
        yield SpeechPiece(replace(piece, samples=piece.samples[:n]), _before(regions, cut), _before(tight, cut))


def _before(regions: Iterable[Region], cut: float) -> tuple[Region, ...]:
    """The parts of ``regions`` (seconds) before ``cut``."""
    return tuple((a, min(b, cut)) for a, b in regions if a < cut)
