"""Surround files as films carry them, made with ffmpeg: real dialogue (pyannote's ``sample.wav``, rearranged with
its exact references by ``media_conversation``) in the front centre, a music bed synthesised with sox in the other
channels at the dialogue's level, encoded as AC-3, E-AC-3 or AAC in Matroska or MP4; and stereo mixes as TV
episodes and web releases carry them (``stereo_mix``): the dialogue the same in L and R, a score spread wide.
Nothing is committed or downloaded; the same arguments give the same file.

Used by ``tests/test_channels.py``, ``tests/test_channels_stereo.py`` and ``bench/channels.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from tests.media import ffmpeg
from tests.media_conversation import music_bed
from tests.media_speech import write_wav
from whisper_subtitler.channels import LAYOUTS

CODECS = {  # codec -> ffmpeg's encoder arguments
    "ac3": ("-c:a", "ac3", "-b:a", "448k"),
    "eac3": ("-c:a", "eac3", "-b:a", "640k"),
    "aac": ("-c:a", "aac", "-b:a", "512k"),
}


def rms(samples: np.ndarray) -> float:
    """The root mean square of ``samples`` (float64)."""
    return float(np.sqrt(np.mean(np.asarray(samples, dtype=np.float64) ** 2)))


def surround(
    target: Path,
    speech: np.ndarray,
    speech_level: float,
    layout: str = "5.1",
    codec: str = "ac3",
    *,
    dialogue: Sequence[str] = ("FC",),
    silent: Sequence[str] = (),
    bed_db: float | None = 0.0,
    seed: int = 0,
) -> Path:
    """Write ``target`` (.mkv or .mp4, by its extension): one audio stream of ffmpeg ``layout`` encoded with
    ``codec`` (a key of ``CODECS``) at 48 kHz, with ``speech`` (16 kHz mono float) in each channel of ``dialogue``
    (two channels: each at -3 dB, a phantom centre), nothing in those of ``silent``, and a music bed
    (``media_conversation.music_bed``, one seed per channel pair) in every other channel, ``bed_db`` dB above
    ``speech_level`` (the RMS of the speech in its utterances; ``None``: those channels silent too). Raises
    ``CalledProcessError`` when ffmpeg or sox fails."""
    names = LAYOUTS[layout]
    work = target.parent / f"{target.stem}-channels"
    work.mkdir(parents=True, exist_ok=True)
    n = len(speech)
    gain = 1.0 if len(dialogue) == 1 else 10 ** (-3 / 20)
    tracks: list[np.ndarray] = []
    for i, name in enumerate(names):
        if name in dialogue:
            tracks.append(np.asarray(speech, dtype=np.float64) * gain)
        elif bed_db is None or name in silent:
            tracks.append(np.zeros(n))
        else:
            music = _bed(n, seed * 100 + i // 2, work)
            tracks.append(music * (speech_level * 10 ** (bed_db / 20) / max(rms(music), 1e-12)))
    peak = max(float(np.max(np.abs(t))) for t in tracks)
    scale = 0.95 / peak if peak > 0.95 else 1.0  # no clipping; the ratios are kept
    inputs: list[str] = []
    for i, track in enumerate(tracks):
        wav = write_wav(work / f"{i}.wav", (track * scale).astype(np.float32))
        inputs += ["-i", str(wav)]
    mapping = "|".join(f"{i}.0-{name}" for i, name in enumerate(names))
    pads = "".join(f"[{i}:a]" for i in range(len(names)))
    graph = f"{pads}join=inputs={len(names)}:channel_layout={layout}:map={mapping}"
    ffmpeg(*inputs, "-filter_complex", graph, "-ar", "48000", *CODECS[codec], str(target))
    for wav in work.iterdir():
        wav.unlink()
    work.rmdir()
    return target


def _bed(n_samples: int, seed: int, work_dir: Path) -> np.ndarray:
    """``music_bed``, made once per process for each ``(n_samples, seed)`` (sox takes seconds per bed)."""
    key = (n_samples, seed)
    if key not in _BEDS:
        _BEDS[key] = music_bed(n_samples, seed, work_dir)
    return _BEDS[key]


_BEDS: dict[tuple[int, int], np.ndarray] = {}


def centre_alone(source: Path, target: Path, channel: str = "FC") -> Path:
    """``channel`` of ``source``'s first audio stream alone, as a 16 kHz mono 16-bit WAV (``ffmpeg -af
    pan=mono|c0=FC``): what a user would transcribe by hand."""
    ffmpeg("-i", str(source), "-map", "0:a:0", "-af", f"pan=mono|c0={channel}", "-ar", "16000", str(target))
    return target


def downmix_alone(source: Path, target: Path) -> Path:
    """``source``'s first audio stream downmixed to a 16 kHz mono WAV (``ffmpeg -ac 1``): the default before."""
    ffmpeg("-i", str(source), "-map", "0:a:0", "-ac", "1", "-ar", "16000", str(target))
    return target


WIDE_DELAY_S = 0.35  # seconds between the bed in L and the same bed in R: a wide, decorrelated score


def wide(track: np.ndarray, n_samples: int, offset: int = 0) -> np.ndarray:
    """``n_samples`` of a mono ``track`` (16 kHz, looped when short) made wide: L the track from ``offset``, R the
    same track ``WIDE_DELAY_S`` later (as ``bench/real_speech.py`` makes its stereo music), so that L and R are
    about uncorrelated; float64 of shape ``(n_samples, 2)``."""
    delay = round(WIDE_DELAY_S * 16_000)
    looped = np.resize(np.asarray(track, dtype=np.float64), offset + n_samples + delay)
    return np.stack([looped[offset : offset + n_samples], looped[offset + delay : offset + delay + n_samples]], axis=1)


def wide_bed(n_samples: int, seed: int, work_dir: Path) -> np.ndarray:
    """A sox music bed (``media_conversation.music_bed``) made ``wide``: shape ``(n_samples, 2)``, float64."""
    delay = round(WIDE_DELAY_S * 16_000)
    return wide(_bed(n_samples + delay, seed, work_dir), n_samples)


def stereo_mix(
    target: Path,
    speech: np.ndarray,
    speech_level: float,
    music: np.ndarray | None = None,
    *,
    bed_db: float = 0.0,
    right: np.ndarray | None = None,
    codec: str = "aac",
) -> Path:
    """Write ``target`` (.wav: 16-bit PCM; .mp4/.m4a/.mkv: ``codec``, a key of ``CODECS``, at 48 kHz): a stereo
    track with ``speech`` (16 kHz mono float) the same in L and R (centred; with ``right``: ``speech`` in L alone
    and ``right`` in R alone, a dual-mono recording) and ``music`` (shape ``(n, 2)``, ``None``: none) scaled so that
    its RMS over both channels is ``bed_db`` dB from ``speech_level`` (the RMS of the speech in its utterances: 0 dB,
    the score as loud as the dialogue in each channel). Raises ``CalledProcessError`` when ffmpeg fails."""
    n = len(speech)
    left_channel = np.asarray(speech, dtype=np.float64)
    right_channel = left_channel if right is None else np.resize(np.asarray(right, dtype=np.float64), n)
    tracks = np.stack([left_channel, right_channel], axis=1)
    if music is not None:
        bed = np.asarray(music, dtype=np.float64)[:n]
        tracks = tracks + bed * (speech_level * 10 ** (bed_db / 20) / max(rms(bed), 1e-12))
    peak = float(np.max(np.abs(tracks))) if n else 0.0
    tracks = tracks * (0.95 / peak if peak > 0.95 else 1.0)  # no clipping; the ratios are kept
    raw = target.with_suffix(".f32")
    raw.write_bytes(tracks.astype("<f4").tobytes())
    encode = ("-c:a", "pcm_s16le") if target.suffix == ".wav" else (*CODECS[codec], "-ar", "48000")
    try:
        ffmpeg("-f", "f32le", "-ar", "16000", "-ac", "2", "-i", str(raw), *encode, str(target))
    finally:
        raw.unlink()
    return target
