"""The phantom centre of a stereo track (issue 67, ``whisper_subtitler.channels.PhantomCentre``): TV episodes and web
releases put the dialogue the same in L and R and spread the score wide. ``--channels auto`` takes what L and R have
in common when they differ; mono, a stereo track whose L and R are one signal, and surround files are read as
before, byte for byte; ``--channels phantom`` and ``downmix`` force either."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from tests.media_channels import rms, stereo_mix, surround, wide, wide_bed
from tests.media_conversation import Rearranged, rearranged_conversation
from tests.media_speech import read_wav
from whisper_subtitler.audio import _open, extract_audio, stream_audio
from whisper_subtitler.channels import (
    IDENTICAL_DB,
    PhantomCentre,
    check_channels,
    choose_by_layout,
    phantom_centre,
    side_to_mid_db,
    stereo_centre_check,
)
from whisper_subtitler.errors import ChannelError, ExitCode
from whisper_subtitler.options import AudioOptions
from whisper_subtitler.types import SAMPLE_RATE

# ---------------------------------------------------------------------------------------------------------- rules


@pytest.mark.parametrize("value", ["phantom", "Phantom", " PHANTOM "])
def test_phantom_is_a_channels_value(value):
    assert check_channels(value) == "phantom"
    assert AudioOptions(channels=value).channels == "phantom"


def test_phantom_on_a_stereo_track_and_auto_before_the_check():
    use = choose_by_layout("phantom", "stereo", 2, "show.mp4")
    assert (use.used, use.default) == ("phantom", False) and "--channels phantom" in use.reason
    assert choose_by_layout("phantom", "", 2).used == "phantom"  # a WAV's unnamed two channels
    # what --dry-run shows: by the layout a stereo track is still the downmix of every earlier version
    assert choose_by_layout("auto", "stereo", 2) == choose_by_layout("auto", "stereo", 2, "x")


@pytest.mark.parametrize(("layout", "count"), [("mono", 1), ("5.1", 6), ("", 6), ("2.1", 3)])
def test_phantom_on_a_track_that_is_not_a_stereo_pair_is_a_usage_error_of_that_file(layout, count):
    with pytest.raises(ChannelError) as caught:
        choose_by_layout("phantom", layout, count, "dir/film.mkv")
    error = caught.value
    assert error.exit_code == ExitCode.USAGE == 2 and not error.ends_batch
    assert error.message.startswith("dir/film.mkv: ") and "not a stereo pair" in error.message


# ------------------------------------------------------------------------------------------------------ the DSP


def _noise(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(n).astype(np.float32) * 0.05


def test_equal_channels_give_the_downmix():
    """L = R: the centre is the mid itself, at the scale of ffmpeg's ``-ac 1`` downmix ((L + R) / sqrt(2)), aligned
    to the sample, as many samples as given."""
    signal = _noise(3 * SAMPLE_RATE + 123, 1)
    centre = phantom_centre(np.stack([signal, signal], axis=1))
    assert centre.dtype == np.float32 and centre.shape == signal.shape
    assert float(np.max(np.abs(centre - signal * math.sqrt(2)))) < 1e-6


def test_a_centred_source_is_kept_and_a_wide_one_taken_out():
    """A voiced, speech-like source (harmonics of a gliding pitch, in bursts) the same in L and R, and a wide pair
    as loud (noise, uncorrelated in L and R): the centre holds the first at least 5 dB further above all else than
    the downmix, which holds it 3 dB above the pair."""
    n = 4 * SAMPLE_RATE
    pitch = 140 + 40 * np.sin(2 * np.pi * 0.7 * np.arange(n) / SAMPLE_RATE)
    phase = 2 * np.pi * np.cumsum(pitch) / SAMPLE_RATE
    bursts = np.arange(n) // (SAMPLE_RATE * 3 // 10) % 3 == 0
    voiced = (sum(np.sin(k * phase) / k for k in range(1, 20)) * bursts).astype(np.float32)
    left, right = _noise(n, 3), _noise(n, 4)
    centred = voiced * np.float32(rms(left) / rms(voiced))
    centre = phantom_centre(np.stack([centred + left, centred + right], axis=1))
    target = centred * np.float32(math.sqrt(2))  # the centred source in the downmix's scale

    def ratio_db(signal: np.ndarray, reference: np.ndarray) -> float:
        scale = float(signal @ reference) / float(reference @ reference)
        rest = signal - scale * reference
        return 10 * math.log10(scale**2 * float(reference @ reference) / float(rest @ rest))

    downmix = (2 * centred + left + right) / np.float32(math.sqrt(2))
    assert abs(ratio_db(downmix, target) - 10 * math.log10(2)) < 0.5
    assert ratio_db(centre, target) > ratio_db(downmix, target) + 5, (
        ratio_db(centre, target),
        ratio_db(downmix, target),
    )


def test_any_block_sizes_give_the_same_samples():
    """``push`` in blocks of 1 to 20000 samples, then ``finish``: the samples of one call, to float32 rounding."""
    n = 5 * SAMPLE_RATE + 77
    mix = np.stack([_noise(n, 5) + _noise(n, 6), _noise(n, 5) + _noise(n, 7)], axis=1)
    whole = phantom_centre(mix)
    extractor, parts, at = PhantomCentre(), [], 0
    for size in np.random.default_rng(8).integers(1, 20_000, size=10_000):
        if at >= n:
            break
        parts.append(extractor.push(mix[at : at + int(size)]))
        at += int(size)
    parts.append(extractor.finish())
    pieces = np.concatenate(parts)
    assert pieces.shape == whole.shape == (n,)
    assert float(np.max(np.abs(pieces - whole))) < 1e-6
    assert phantom_centre(np.zeros((0, 2), dtype=np.float32)).shape == (0,)
    assert phantom_centre(mix[:100]).shape == (100,)  # shorter than one frame


def test_side_to_mid():
    signal = _noise(SAMPLE_RATE, 9)
    assert side_to_mid_db(np.stack([signal, signal], axis=1)) == -math.inf
    assert abs(side_to_mid_db(np.stack([signal, _noise(SAMPLE_RATE, 10)], axis=1))) < 0.5
    assert side_to_mid_db(np.stack([signal, signal * 0.999], axis=1)) < IDENTICAL_DB


# ------------------------------------------------------------------------------------------------ real dialogue


@pytest.fixture(scope="module")
def conversation(tmp_path_factory) -> Rearranged:
    """A real two-speaker conversation (29 s) with its exact references."""
    return rearranged_conversation(tmp_path_factory.mktemp("stereo") / "conversation.wav", seed=3)


@pytest.fixture(scope="module")
def mixes(conversation) -> dict[str, Path]:
    """The conversation as stereo files: centred under a wide sox bed at its level (AAC in MP4, and 16-bit WAV);
    centred alone in both channels (one signal: AAC); as a dual-mono recording (the first half of the utterances
    in L alone, the rest in R alone); and in the centre of a 5.1 under the bed."""
    speech = read_wav(conversation.wav)
    spans = [speech[round(u.start * SAMPLE_RATE) : round(u.end * SAMPLE_RATE)] for u in conversation.utterances]
    level = rms(np.concatenate(spans))
    folder = conversation.wav.parent
    bed = wide_bed(len(speech), 3, folder / "beds")
    left, right = np.zeros_like(speech), np.zeros_like(speech)
    for k, u in enumerate(conversation.utterances):
        part = slice(round(u.start * SAMPLE_RATE), round(u.end * SAMPLE_RATE))
        (left if k % 2 == 0 else right)[part] = speech[part]
    return {
        "wide": stereo_mix(folder / "show.mp4", speech, level, bed),
        "wide wav": stereo_mix(folder / "show.wav", speech, level, bed),
        "one signal": stereo_mix(folder / "dry.mp4", speech, level),
        "dual mono": stereo_mix(folder / "interview.wav", left, level, right=right),
        "5.1": surround(folder / "film.mp4", speech, level, "5.1", "aac"),
    }


def _decoded(path: Path, channels: int, mix: list[str] | None = None) -> np.ndarray:
    """``path``'s audio as 16 kHz float32 through ffmpeg: ``-ac channels``, or the filter arguments ``mix``."""
    import subprocess

    how = mix if mix is not None else ["-ac", str(channels)]
    cmd = ["ffmpeg", "-nostdin", "-loglevel", "error", "-i", str(path), "-map", "0:a:0", *how, "-ar", "16000"]
    return np.frombuffer(subprocess.run([*cmd, "-f", "f32le", "pipe:"], capture_output=True, check=True).stdout, "<f4")


def test_a_wide_score_gives_the_phantom_centre(mixes):
    """``auto`` on a stereo track whose channels differ takes the phantom centre of the decoded L and R (the same
    samples as ``phantom_centre``), says why, and gives the same samples in pieces as at once."""
    audio = extract_audio(mixes["wide"])
    assert audio.channel is not None and audio.channel.used == "phantom", audio.channel
    assert not audio.channel.default and "phantom centre" in audio.channel.reason and "speech" in audio.channel.reason
    stereo = _decoded(mixes["wide"], 2).reshape(-1, 2)
    assert audio.samples.shape == (len(stereo),)
    assert float(np.max(np.abs(audio.samples - phantom_centre(stereo)))) < 1e-6
    pieces = list(stream_audio(mixes["wide wav"], piece_seconds=7.0))
    assert [round(p.offset, 3) for p in pieces] == [0.0, 7.0, 14.0, 21.0, 28.0]
    whole = extract_audio(mixes["wide wav"]).samples
    assert float(np.max(np.abs(np.concatenate([p.samples for p in pieces]) - whole))) < 1e-6
    forced = extract_audio(mixes["wide"], channels="downmix")
    assert forced.channel is not None and forced.channel.used == "downmix"
    assert np.array_equal(forced.samples, _decoded(mixes["wide"], 1))


@pytest.mark.parametrize("name", ["one signal", "dual mono"])
def test_one_signal_and_a_dual_mono_recording_keep_the_downmix_of_every_earlier_version(mixes, name):
    """L and R one signal (the check never runs the VAD), or one voice a side (the centre holds too little of the
    speech): the same ChannelUse, ffmpeg command and samples as before the phantom centre."""
    _, cmd, use = _open(mixes[name], 0)
    before = choose_by_layout("auto", use.layout, 2)
    assert use == before and use.default and use.used == "downmix"
    assert "-ac" in cmd and cmd[cmd.index("-ac") + 1] == "1" and "-af" not in cmd
    assert np.array_equal(extract_audio(mixes[name]).samples, _decoded(mixes[name], 1))


def test_the_check_reads_the_side_first():
    """L and R one signal: decided by the side's level alone (no extraction, no VAD: ``nan`` speech)."""
    signal = _noise(10 * SAMPLE_RATE, 11)
    kept, side_db, centre_s, downmix_s = stereo_centre_check(lambda s, n: np.stack([signal, signal], 1), 10.0)
    assert (kept, side_db) == (False, -math.inf) and math.isnan(centre_s) and math.isnan(downmix_s)


def test_phantom_forced(mixes):
    """``--channels phantom`` on one signal: the centre all the same (the mid itself); on a 5.1 file: a usage error
    of that file."""
    one = extract_audio(mixes["one signal"], channels="phantom")
    assert one.channel is not None and one.channel.used == "phantom"
    assert float(np.max(np.abs(one.samples - _decoded(mixes["one signal"], 1)))) < 1e-5
    with pytest.raises(ChannelError, match="not a stereo pair"):
        extract_audio(mixes["5.1"], channels="phantom")


def test_mono_and_surround_samples_are_those_of_every_earlier_version(mixes, conversation):
    """A mono file and a 5.1 file: the samples of the ffmpeg commands every earlier version ran (``-ac 1``; the
    centre ``pan=mono|c0=FC``), bit for bit, so their SRT, VTT and JSON outputs are unchanged."""
    assert np.array_equal(extract_audio(conversation.wav).samples, _decoded(conversation.wav, 1))
    film = extract_audio(mixes["5.1"])
    assert film.channel is not None and film.channel.used == "FC"
    assert np.array_equal(film.samples, _decoded(mixes["5.1"], 1, ["-af", "pan=mono|c0=FC"]))


def test_wide_is_a_delayed_copy():
    track = _noise(SAMPLE_RATE, 12)
    both = wide(track, 8000, 100)
    delay = round(0.35 * SAMPLE_RATE)
    assert both.shape == (8000, 2) and np.allclose(both[:, 0], track[100:8100])
    assert np.allclose(both[:, 1], track[100 + delay : 8100 + delay])
