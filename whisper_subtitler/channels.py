"""Which channel of a multichannel audio stream is transcribed: the dialogue from the mix it lives in.

Films and series carry a surround mix whose front-centre channel (``FC``) holds the dialogue while the score and the
effects sit in the others (ITU-R BS.775 placement; Dolby's and the cinema's mixing practice). Downmixing such a mix
(``-ac 1``) brings the score in as loud as the voices, so ``--channels auto`` (the default) chooses by the stream's
layout, as ffprobe names it (``channel_layout``; the names and their channels are libavutil's, ``ffmpeg -layouts``):

- a layout with a front-centre channel and more than one channel (3.0, 4.0, 5.0, 5.1, 5.1(side), 6.1, 7.1, ...):
  the centre, unless it carries no speech (``centre_has_speech``): then the downmix;
- a stereo (two-channel) track whose channels differ: the phantom centre, what L and R have in common
  (``PhantomCentre``: the dialogue of a TV or web mix, the score spread wide taken out), unless it carries too
  little of the speech (``stereo_centre_check``: a dual-mono interview, one voice a side): then the downmix;
- mono, a stereo track whose L and R are one signal, and the layouts without a centre (quad, 2.1, ...): the
  downmix, with the same ffmpeg command as every earlier version (so their outputs are unchanged, byte for byte);
- a layout ffprobe cannot name, with more than two channels: the downmix, with a warning.

``--channels downmix|center|left|right|phantom|N`` overrides the choice: ``N`` is the channel's number in the stream
(0 = first); ``phantom`` the centre of a two-channel track. A named channel the layout lacks, ``phantom`` on a
track that is not two channels, or a number past its channels, fails that file with ``ChannelError`` (a usage
error, exit code 2, naming the file and the layout); the batch goes on.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from whisper_subtitler.errors import UsageError
from whisper_subtitler.types import SAMPLE_RATE, ChannelUse

if TYPE_CHECKING:  # numpy only where samples are read: the command line imports this module for its options
    import numpy as np

log = logging.getLogger(__name__)

WindowReader = Callable[[float, float], "np.ndarray"]  # (start, length) seconds -> 16 kHz samples (n, channels)

AUTO, DOWNMIX, CENTER, LEFT, RIGHT = "auto", "downmix", "center", "left", "right"
PHANTOM = "phantom"  # the phantom centre of a stereo pair: ``ChannelUse.used`` too
MODES = (AUTO, DOWNMIX, CENTER, LEFT, RIGHT, PHANTOM)
NAMED = {CENTER: "FC", LEFT: "FL", RIGHT: "FR"}  # --channels name -> libavutil's channel name

# libavutil's standard layouts (ffmpeg 5.1 ``ffmpeg -layouts``, with the immersive ones of ffmpeg 6 and 7).
LAYOUTS: dict[str, tuple[str, ...]] = {
    name: tuple(channels.split("+"))
    for name, channels in {
        "mono": "FC",
        "stereo": "FL+FR",
        "2.1": "FL+FR+LFE",
        "3.0": "FL+FR+FC",
        "3.0(back)": "FL+FR+BC",
        "4.0": "FL+FR+FC+BC",
        "quad": "FL+FR+BL+BR",
        "quad(side)": "FL+FR+SL+SR",
        "3.1": "FL+FR+FC+LFE",
        "5.0": "FL+FR+FC+BL+BR",
        "5.0(side)": "FL+FR+FC+SL+SR",
        "4.1": "FL+FR+FC+LFE+BC",
        "5.1": "FL+FR+FC+LFE+BL+BR",
        "5.1(side)": "FL+FR+FC+LFE+SL+SR",
        "6.0": "FL+FR+FC+BC+SL+SR",
        "6.0(front)": "FL+FR+FLC+FRC+SL+SR",
        "hexagonal": "FL+FR+FC+BL+BR+BC",
        "6.1": "FL+FR+FC+LFE+BC+SL+SR",
        "6.1(back)": "FL+FR+FC+LFE+BL+BR+BC",
        "6.1(front)": "FL+FR+LFE+FLC+FRC+SL+SR",
        "7.0": "FL+FR+FC+BL+BR+SL+SR",
        "7.0(front)": "FL+FR+FC+FLC+FRC+SL+SR",
        "7.1": "FL+FR+FC+LFE+BL+BR+SL+SR",
        "7.1(wide)": "FL+FR+FC+LFE+BL+BR+FLC+FRC",
        "7.1(wide-side)": "FL+FR+FC+LFE+FLC+FRC+SL+SR",
        "7.1(top)": "FL+FR+FC+LFE+BL+BR+TFL+TFR",
        "3.1.2": "FL+FR+FC+LFE+TFL+TFR",
        "5.1.2(back)": "FL+FR+FC+LFE+BL+BR+TFL+TFR",
        "5.1.4(back)": "FL+FR+FC+LFE+BL+BR+TFL+TFR+TBL+TBR",
        "7.1.2": "FL+FR+FC+LFE+BL+BR+SL+SR+TFL+TFR",
        "7.1.4(back)": "FL+FR+FC+LFE+BL+BR+SL+SR+TFL+TFR+TBL+TBR",
        "octagonal": "FL+FR+FC+BL+BR+BC+SL+SR",
        "cube": "FL+FR+BL+BR+TFL+TFR+TBL+TBR",
        "downmix": "DL+DR",
    }.items()
}

# The speech check of ``auto`` (``centre_has_speech``): a few windows spread over the file, the centre and the other
# channels through the project's VAD. A centre with at least CENTRE_SHARE of the speech heard elsewhere keeps the
# dialogue; under it, the speech is elsewhere in the mix. Too little speech elsewhere (credits, a score) to tell:
# the layout's choice stands.
CHECK_SECONDS = 120.0  # seconds of audio the check hears: the whole file when it is shorter
CHECK_WINDOWS = 4  # windows of CHECK_SECONDS / CHECK_WINDOWS seconds, spread evenly over a longer file
CENTRE_SHARE = 0.5  # centre speech seconds / speech seconds elsewhere at or above which the centre is kept
MIN_SPEECH_S = 2.0  # speech seconds elsewhere under which the check cannot tell and the centre is kept
CHECK_TIMEOUT_S = 120.0  # seconds ffmpeg may take to decode one window

# The stereo check of ``auto`` (``stereo_centre_check``), over the same windows: L and R count as one signal (the
# downmix, unchanged) while their difference, the side (L - R) / 2, is IDENTICAL_DB or more under their sum, the mid
# (L + R) / 2 (a mono source encoded as stereo: -inf; lossy joint stereo of one: far under -40 dB; dialogue with a
# wide score 20 dB under it: about -23 dB). Else the phantom centre is taken when its VAD speech is at least
# STEREO_SHARE of the downmix's and MIN_SPEECH_S or more.
IDENTICAL_DB = -40.0  # side / mid energy, dB, under which L and R are one signal
STEREO_SHARE = 0.8  # phantom-centre speech seconds / downmix speech seconds at or above which the centre is taken

# The phantom centre's short-time Fourier transform (``PhantomCentre``), at 16 kHz.
CENTRE_FFT = 2048  # samples in a frame (128 ms): the partials of a score resolved apart from the voice's
CENTRE_HOP = 512  # samples between frames (32 ms; 75 % overlap, square-root Hann windows: exact reconstruction)
CENTRE_KAPPA = 0.5  # side / mid power of a bin at which its gain reaches 0 (gain = 1 - ratio / kappa)
CENTRE_BATCH = 1024  # frames transformed at once (about 17 MB of complex64 a channel)


def check_channels(value: str) -> str:
    """``value`` of ``--channels`` in its canonical form (``auto``, ``downmix``, ``center``, ``left``, ``right``,
    ``phantom`` or a channel number ``N`` >= 0; ``centre`` is taken for ``center``). Raises ``UsageError`` (exit 2)
    otherwise."""
    text = str(value).strip().lower()
    text = CENTER if text == "centre" else text
    if text in MODES or (text.isdigit() and text.isascii()):
        return str(int(text)) if text.isdigit() else text
    raise UsageError(
        f"--channels {value!r}: choose auto, downmix, center, left, right, phantom or a channel number (0 = first)"
    )


def layout_channels(layout: str, count: int) -> tuple[str, ...] | None:
    """The channel names of ffprobe's ``layout`` (``"5.1(side)"``, ``"FL+FR+FC"``, ``"6 channels (FL+FR+...)"``) for
    a stream of ``count`` channels, in stream order; ``None`` when the layout is absent, unknown to libavutil's list
    (``LAYOUTS``) or does not have ``count`` channels."""
    name = (layout or "").strip()
    names = LAYOUTS.get(name)
    if names is None and "+" in name:
        inner = name[name.find("(") + 1 : name.rfind(")")] if name.endswith(")") and "(" in name else name
        names = tuple(part.strip() for part in inner.split("+") if part.strip())
    if not names or (count and len(names) != count):
        return None
    return names


def choose_by_layout(mode: str, layout: str, count: int, source: Path | str = "") -> ChannelUse:
    """The channel ``mode`` (``check_channels``' form) takes from a stream of ``count`` channels with ffprobe's
    ``layout``, before any speech check: ``auto`` on a layout with a centre gives the centre (``centre_has_speech``
    may then turn it into the downmix). Raises ``ChannelError`` (exit 2) naming ``source`` and the layout when the
    named or numbered channel is not in the stream."""
    from whisper_subtitler.errors import ChannelError

    names = layout_channels(layout, count)
    shown = layout or "unnamed"
    described = f"layout {shown}, {count} channel{'s' if count != 1 else ''}"
    if mode == DOWNMIX:
        return ChannelUse(DOWNMIX, "--channels downmix", layout)
    if mode == AUTO:
        if count <= 2:
            kind = {1: "mono", 2: "stereo"}.get(count, "no channels")
            return ChannelUse(DOWNMIX, f"{kind} track: downmix", layout, default=True)
        if names is None:
            return ChannelUse(DOWNMIX, f"{described}: channels not named, downmix", layout)
        if "FC" in names:
            return ChannelUse("FC", f"{described}: front centre, where the dialogue of a surround mix is", layout)
        return ChannelUse(DOWNMIX, f"{described}: no front centre, downmix", layout)
    if mode == PHANTOM:
        if count != 2:
            raise ChannelError(
                f"{source}: --channels phantom: {described} is not a stereo pair",
                hint="--channels center for the centre of a surround mix, downmix, or a channel number",
            )
        return ChannelUse(PHANTOM, "--channels phantom: the phantom centre, what L and R have in common", layout)
    if mode.isdigit():
        number = int(mode)
        if number >= count:
            raise ChannelError(f"{source}: --channels {number}: no such channel ({described}; 0 = first)")
        used = names[number] if names is not None else f"c{number}"
        return ChannelUse(used, f"--channels {number}", layout)
    wanted = NAMED[mode]
    if names is None or wanted not in names:
        channels = "+".join(names) if names else "channels not named"
        raise ChannelError(
            f"{source}: --channels {mode}: {described} ({channels}) has no {wanted} channel",
            hint="--channels auto, downmix or a channel number",
        )
    return ChannelUse(wanted, f"--channels {mode}", layout)


def check_windows(duration: float | None) -> list[tuple[float, float]]:
    """``(start, length)`` in seconds of the windows the speech check decodes: the first ``CHECK_SECONDS`` of a
    short file (or one of unknown ``duration``), else ``CHECK_WINDOWS`` windows centred at 1/8, 3/8, 5/8 and 7/8 of
    it, so that an opening title score does not decide alone."""
    if duration is None or duration <= CHECK_SECONDS:
        return [(0.0, CHECK_SECONDS)]
    length = CHECK_SECONDS / CHECK_WINDOWS
    centres = [(i + 0.5) * duration / CHECK_WINDOWS for i in range(CHECK_WINDOWS)]
    return [(max(0.0, round(c - length / 2, 3)), length) for c in centres]


def speech_seconds(samples: np.ndarray) -> float:
    """Seconds of speech the project's VAD (``vad.speech_regions``' rules) finds in 16 kHz mono ``samples``."""
    from whisper_subtitler.vad import speech_seconds as vad_seconds

    return vad_seconds(samples)


def centre_has_speech(
    read: WindowReader, duration: float | None, names: tuple[str, ...], channel: str = "FC"
) -> tuple[bool, float, float]:
    """Whether ``channel`` of a stream (channel ``names`` in stream order; ``read(start, length)`` gives its samples
    there, ``audio.decode_window``) carries the file's speech: ``(kept, centre_s, elsewhere_s)``, the VAD's speech
    seconds of the channel alone and the most of two other signals, the front pair (the mean of ``FL`` and ``FR``, where
    a mix without a dialogue centre puts the voices) and the downmix (the mean of every channel but the LFE ones), over
    the windows of ``check_windows`` (``nan`` when the centre alone holds speech for over ``CENTRE_SHARE`` of the
    windows: no other signal could then have twice as much, and the two are not decoded through the VAD).

    The rule: kept when ``centre_s >= CENTRE_SHARE * elsewhere_s``, or when ``elsewhere_s`` is under ``MIN_SPEECH_S``
    (nothing to tell by). A centre carrying the dialogue has about as much speech as any other signal, often more: a
    score at the dialogue's level hides most of it from the VAD in the downmix (measured in
    ``bench/records/channels.json``). A silent centre, or one with music only (a music video, a commentary in L/R),
    has next to none. Raises ``InputError`` when ffmpeg cannot decode a window."""
    import numpy as np

    mixed = [i for i, name in enumerate(names) if not name.startswith("LFE")]
    front = [names.index(n) for n in ("FL", "FR") if n in names]
    centre_parts, other_parts = [], []
    for start, length in check_windows(duration):
        window = read(start, length)
        centre_parts.append(window[:, names.index(channel)])
        other_parts.append(np.stack([window[:, front].mean(axis=1), window[:, mixed].mean(axis=1)]))
    centre = np.ascontiguousarray(np.concatenate(centre_parts), dtype=np.float32)
    centre_s = speech_seconds(centre)
    if centre_s >= CENTRE_SHARE * len(centre) / SAMPLE_RATE:  # no other signal can have twice as much: kept
        return True, centre_s, math.nan
    others = np.concatenate(other_parts, axis=1)
    elsewhere_s = max(speech_seconds(np.ascontiguousarray(row, dtype=np.float32)) for row in others)
    kept = elsewhere_s < MIN_SPEECH_S or centre_s >= CENTRE_SHARE * elsewhere_s
    return kept, centre_s, elsewhere_s


class PhantomCentre:
    """The phantom centre of a stereo pair, block by block: what the left and right channels have in common, in
    phase and in level (the dialogue of a TV or web mix), without what they do not (a score or an ambience spread
    wide). ``push`` takes 16 kHz float samples of shape ``(n, 2)`` (L, R) and gives the mono centre samples that are
    final, float32 of shape ``(m,)``; ``finish`` gives the rest, so that the output, all pieces together, has as many
    samples as the input, aligned to it (no delay). Pushing in any block sizes gives the same output (to float32
    rounding): no state but the samples in flight.

    The method: a frequency-domain centre extraction (C. Avendano and J.-M. Jot, "A frequency-domain approach to
    multichannel upmix", J. Audio Eng. Soc. 52(7/8), 2004: a short-time Fourier transform of both channels, a
    per-bin measure of how alike L and R are, the bins of the centre kept). Here the measure is the one a centred
    source gives exactly: in each bin of each frame the side D = (L - R) / sqrt(2) holds nothing of a source that
    is the same in L and R, while the mid M = (L + R) / sqrt(2) (ffmpeg's ``-ac 1`` downmix) holds all of it; a
    source spread wide (L and R uncorrelated) puts about as much in D as in M. The centre is ``g * M`` with the
    gain ``g = max(0, 1 - (|D|^2 / |M|^2) / CENTRE_KAPPA)``, a spectral subtraction of the side from the mid, bin
    by bin (Avendano and Jot's similarity mask, without their smoothing over time): frames of ``CENTRE_FFT``
    samples ``CENTRE_HOP`` apart, square-root Hann analysis and synthesis windows, overlap-add. L and R equal give
    the mid itself, the downmix; a source panned off centre, or a wide one, is attenuated the more it differs.

    Chosen on the tuning conversations (pyannote's sample re-arranged, seeds 21-26, under a recorded song and a sox
    bed made wide, and the real set's ``conv-nl-tuning-1``; ``bench/channels.py --stereo`` measures held-out ones)
    with the score at the dialogue's level: the scale-invariant signal-to-distortion ratio rose 2-10 dB over the
    downmix's; gains from cross-spectra smoothed over 0.05-0.4 s (Avendano and Jot's, or a Wiener gain) did 0.7-3
    dB worse, ffmpeg's ``surround`` filter's front centre 0.5-0.9 dB worse (and lags by half its window). A harder
    gain (``CENTRE_KAPPA`` 0.1, or the gain squared), gains smoothed over neighbouring bins or frames and a gain on
    whole frames made the speaker stage merge the two voices more often. ``CENTRE_KAPPA`` 0.25, 0.5 and 1 were
    within the noise of one another (with 0.25 and 0.5, DER 13-22 % where two speakers were found; the count went
    wrong on 1-2 of the 6-7 files with any of them): 0.5 was kept."""

    def __init__(self, n_fft: int = CENTRE_FFT, hop: int = CENTRE_HOP, kappa: float = CENTRE_KAPPA) -> None:
        import numpy as np

        if n_fft % hop:
            raise ValueError("n_fft must be a multiple of hop")
        self.n_fft, self.hop, self.kappa = n_fft, hop, kappa
        # periodic Hann, square-rooted: analysis times synthesis window sums to n_fft / (2 hop) at every sample
        self._window = np.sqrt(0.5 - 0.5 * np.cos(2 * np.pi * np.arange(n_fft) / n_fft)).astype(np.float32)
        self._scale = np.float32(2 * hop / n_fft)
        # mid (L + R) / sqrt(2) and side (L - R) / sqrt(2) not yet transformed, shape (2, n); the first frame
        # starts n_fft - hop samples before the input
        self._input = np.zeros((2, n_fft - hop), dtype=np.float32)
        self._tail = np.zeros(n_fft - hop, dtype=np.float32)  # overlap-add still to come from later frames
        self._drop = n_fft - hop  # output samples before the input's first
        self._pushed = 0
        self._given = 0

    def push(self, block: np.ndarray) -> np.ndarray:
        """The centre samples made final by ``block`` (shape ``(n, 2)``, 16 kHz, L then R)."""
        import numpy as np

        block = np.asarray(block, dtype=np.float32).reshape(-1, 2)
        self._pushed += len(block)
        half = np.float32(math.sqrt(0.5))  # the scale of ffmpeg's -ac 1 downmix
        mid_side = np.stack([(block[:, 0] + block[:, 1]) * half, (block[:, 0] - block[:, 1]) * half])
        self._input = np.concatenate([self._input, mid_side], axis=1)
        return self._run()

    def finish(self) -> np.ndarray:
        """The last centre samples: the output then has as many samples as were pushed."""
        import numpy as np

        self._input = np.concatenate([self._input, np.zeros((2, self.n_fft), dtype=np.float32)], axis=1)
        rest = self._run()[: self._pushed - self._given]
        self._given += len(rest)
        self._input = np.zeros((2, 0), dtype=np.float32)
        return rest

    def _run(self) -> np.ndarray:
        import numpy as np
        from numpy.lib.stride_tricks import sliding_window_view

        n_fft, hop = self.n_fft, self.hop
        length = self._input.shape[1]
        frames = (length - n_fft) // hop + 1 if length >= n_fft else 0
        parts = []
        for first in range(0, frames, CENTRE_BATCH):
            k = min(CENTRE_BATCH, frames - first)
            span = self._input[:, first * hop : (first + k - 1) * hop + n_fft]
            windowed = sliding_window_view(span, n_fft, axis=1)[:, ::hop] * self._window  # (2, k, n_fft)
            mid, side = np.fft.rfft(windowed, axis=-1)  # (k, n_fft // 2 + 1) each; complex64 with numpy 2
            mid_power = mid.real**2 + mid.imag**2
            side_power = side.real**2 + side.imag**2
            gain = 1 - side_power / np.maximum(np.float32(self.kappa) * mid_power, np.float32(1e-30))
            np.clip(gain, 0, 1, out=gain)
            out = np.fft.irfft(gain * mid, n_fft, axis=-1).astype(np.float32) * (self._window * self._scale)
            added = np.zeros(k * hop + n_fft - hop, dtype=np.float32)
            added[: n_fft - hop] += self._tail
            pieces = out.reshape(k, n_fft // hop, hop)
            for r in range(n_fft // hop):
                added[r * hop : r * hop + k * hop] += pieces[:, r].reshape(-1)
            parts.append(added[: k * hop])
            self._tail = added[k * hop :].copy()
        self._input = self._input[:, frames * hop :]
        made = np.concatenate(parts) if parts else np.zeros(0, dtype=np.float32)
        dropped = min(self._drop, len(made))
        self._drop -= dropped
        made = made[dropped:]
        self._given += len(made)
        return made


def phantom_centre(stereo: np.ndarray) -> np.ndarray:
    """``PhantomCentre`` of 16 kHz ``stereo`` samples of shape ``(n, 2)`` all at once: float32 of shape ``(n,)``."""
    import numpy as np

    extractor = PhantomCentre()
    return np.concatenate([extractor.push(stereo), extractor.finish()])


def side_to_mid_db(stereo: np.ndarray) -> float:
    """The energy of the side (L - R) / 2 over that of the mid (L + R) / 2 of ``stereo`` (shape ``(n, 2)``), in dB:
    ``-inf`` for L and R equal, about 0 for two unrelated signals, ``inf`` for L = -R or a silent mid."""
    import numpy as np

    both = np.asarray(stereo, dtype=np.float64)
    side = float(np.sum((both[:, 0] - both[:, 1]) ** 2))
    mid = float(np.sum((both[:, 0] + both[:, 1]) ** 2))
    if side == 0.0:
        return -math.inf
    return math.inf if mid == 0.0 else 10 * math.log10(side / mid)


def stereo_centre_check(read: WindowReader, duration: float | None) -> tuple[bool, float, float, float]:
    """Whether ``auto`` takes the phantom centre (``PhantomCentre``) of a two-channel stream (``read(start,
    length)`` gives its samples there, shape ``(n, 2)``): ``(kept, side_db, centre_s, downmix_s)`` over the windows
    of ``check_windows``: the side-to-mid energy in dB (``side_to_mid_db``) and the VAD's speech seconds of the
    centre and of the downmix (``nan`` both when not measured).

    L and R that are one signal (``side_db`` under ``IDENTICAL_DB``: a mono source in a stereo file) give the
    downmix, not decoded through the VAD. Else the centre is taken when it holds ``MIN_SPEECH_S`` of speech or
    more and at least ``STEREO_SHARE`` of the downmix's: a score spread wide at the dialogue's level hides speech
    from the VAD in the downmix, the centre hears as much or more; a dual-mono recording (one voice a side), whose
    centre holds little of either voice, or a file without speech keep the downmix."""
    import numpy as np

    windows = [
        np.asarray(read(start, length), dtype=np.float32).reshape(-1, 2) for start, length in check_windows(duration)
    ]
    side_db = side_to_mid_db(np.concatenate(windows)) if windows else -math.inf
    if not side_db >= IDENTICAL_DB:
        return False, side_db, math.nan, math.nan
    centre = np.ascontiguousarray(np.concatenate([phantom_centre(w) for w in windows]), dtype=np.float32)
    downmix = np.ascontiguousarray(np.concatenate([w.mean(axis=1) for w in windows]), dtype=np.float32)
    centre_s, downmix_s = speech_seconds(centre), speech_seconds(downmix)
    kept = centre_s >= MIN_SPEECH_S and centre_s >= STEREO_SHARE * downmix_s
    return kept, side_db, centre_s, downmix_s


def choose_channel(
    path: Path, read: WindowReader, mode: str, layout: str, count: int, duration: float | None
) -> ChannelUse:
    """The channel of a stream of ``path`` (``read(start, length)``: its ``count`` channels there, as
    ``audio.decode_window`` gives them) to transcribe with ``--channels mode``: ``choose_by_layout``, then for
    ``auto``'s centre the speech check (``centre_has_speech``). Logs the choice (``-v``) and warns for an unnamed
    layout. Raises ``ChannelError`` (exit 2) for a channel the stream lacks, ``InputError`` for a stream ffmpeg cannot
    decode."""
    use = choose_by_layout(mode, layout, count, path)
    if mode == AUTO and use.used == "FC":
        names = layout_channels(layout, count) or ()
        kept, centre_s, elsewhere_s = centre_has_speech(read, duration, names, use.used)
        heard = f"speech {centre_s:.1f} s in the centre" + (
            "" if math.isnan(elsewhere_s) else f", at most {elsewhere_s:.1f} s in the front pair or the downmix"
        )
        if kept:
            use = ChannelUse("FC", f"{use.reason} ({heard})", layout)
        else:
            use = ChannelUse(DOWNMIX, f"layout {layout}: the centre carries little speech ({heard}), downmix", layout)
    if mode == AUTO and count == 2:
        kept, side_db, centre_s, downmix_s = stereo_centre_check(read, duration)
        if math.isnan(centre_s):
            why = f"L and R are one signal (side/mid {side_db:.0f} dB)"
        else:
            why = (
                f"L and R differ (side/mid {side_db:.0f} dB); speech {centre_s:.1f} s in their phantom "
                f"centre, {downmix_s:.1f} s in the downmix"
            )
        if kept:
            use = ChannelUse(PHANTOM, f"stereo track: the phantom centre, what L and R have in common ({why})", layout)
        else:  # the downmix as before, the same ChannelUse: outputs unchanged
            log.info("%s: stereo track downmixed: %s", path, why)
    if mode == AUTO and count > 2 and layout_channels(layout, count) is None:
        log.warning("%s: audio layout %s (%d channels) is not named: downmixed", path, layout or "unknown", count)
    log.info("%s: audio channel %s (%s)", path, use.used, use.reason)
    return use


def describe(use: ChannelUse | None) -> dict[str, str] | None:
    """``use`` as the JSON outputs write it: ``{"used", "reason", "layout"}``; ``None`` for ``None``."""
    return None if use is None else {"used": use.used, "reason": use.reason, "layout": use.layout}


def from_description(data: object) -> ChannelUse | None:
    """The ``ChannelUse`` of ``describe``'s dict, ``None`` when absent or not such a dict (older files)."""
    if not isinstance(data, dict) or not isinstance(data.get("used"), str):
        return None
    return ChannelUse(str(data["used"]), str(data.get("reason") or ""), str(data.get("layout") or ""))
