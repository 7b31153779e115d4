"""Which channel of a multichannel audio stream is transcribed: the dialogue from the mix it lives in.

Films and series carry a surround mix whose front-centre channel (``FC``) holds the dialogue while the score and the
effects sit in the others (ITU-R BS.775 placement; Dolby's and the cinema's mixing practice). Downmixing such a mix
(``-ac 1``) brings the score in as loud as the voices, so ``--channels auto`` (the default) chooses by the stream's
layout, as ffprobe names it (``channel_layout``; the names and their channels are libavutil's, ``ffmpeg -layouts``):

- a layout with a front-centre channel and more than one channel (3.0, 4.0, 5.0, 5.1, 5.1(side), 6.1, 7.1, ...):
  the centre, unless it carries no speech (``centre_has_speech``): then the downmix;
- mono, stereo and the layouts without a centre (quad, 2.1, ...): the downmix, with the same ffmpeg command as every
  earlier version (so their outputs are unchanged, byte for byte);
- a layout ffprobe cannot name, with more than two channels: the downmix, with a warning.

``--channels downmix|center|left|right|N`` overrides the choice: ``N`` is the channel's number in the stream (0 =
first). A named channel the layout lacks, or a number past its channels, fails that file with ``ChannelError``
(a usage error, exit code 2, naming the file and the layout); the batch goes on.
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
MODES = (AUTO, DOWNMIX, CENTER, LEFT, RIGHT)
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


def check_channels(value: str) -> str:
    """``value`` of ``--channels`` in its canonical form (``auto``, ``downmix``, ``center``, ``left``, ``right`` or a
    channel number ``N`` >= 0; ``centre`` is taken for ``center``). Raises ``UsageError`` (exit 2) otherwise."""
    text = str(value).strip().lower()
    text = CENTER if text == "centre" else text
    if text in MODES or (text.isdigit() and text.isascii()):
        return str(int(text)) if text.isdigit() else text
    raise UsageError(f"--channels {value!r}: choose auto, downmix, center, left, right or a channel number (0 = first)")


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
