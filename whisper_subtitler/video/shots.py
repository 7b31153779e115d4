"""Shot changes of a video, found by ffmpeg's scene score, and the video's frame rate (ffprobe).

Why ffmpeg and not PySceneDetect (measured, ``bench/shots.py --compare``; docs/shot-changes.md): decoding the
picture is nearly all the cost, and both decode every frame (a compressed frame cannot be skipped without losing the
cut's exact frame: with B-frames skipped, ffmpeg missed cuts and scored an ordinary frame of a noisy shot as one).
On our test reels ffmpeg's score put the hard cuts it found on their exact frame, with no false change; it uses less
CPU than PySceneDetect's ``ContentDetector`` and needs no new dependency (ffmpeg is already required), where
PySceneDetect needs OpenCV (about 150 MB installed). PySceneDetect found one more cut (out of a noisy shot, whose
motion hides a cut from ffmpeg's score) but put another one frame early: a missed cut leaves a cue timed as without
the rule, a cut a frame early moves a cue onto the wrong frame, a one-frame flash. Neither finds a one-second
dissolve, which does not flash as a cut does.

How: ffmpeg decodes the first video stream with the deblocking filter skipped (``-skip_loop_filter all``: a cheaper
picture that scores the same), scales it to ``SCALE_WIDTH`` pixels wide, and prints the frames whose scene score
(``select``'s ``scene``: 0 to 1, the picture change against the frame before) is above ``SCENE_THRESHOLD``; a frame
within ``MIN_SHOT_FRAMES`` of the previous change is dropped (the frame after a cut often scores high too, from the
encoder's repair of the cut frame). Times are the frames' presentation times less the file's start time, as players
show them: ffmpeg counts from the file's start already (without ``-copyts`` it takes the start off every timestamp it
reads, so an MPEG-TS file starting at 1.4 s prints its first frame at 0); taking ``VideoInfo.start`` off again put
the cuts of a file not starting at 0 off by its start (1.4 s early in such a file). They are read to the microsecond:
``settb=AVTB`` gives the frames a time base of microseconds and the ``pts`` ffmpeg prints is read, not its
``pts_time``, which has 6 significant digits (a cut at 1003.336667 s printed 1003.34, 3 ms late: a cue put on it
showed a frame late; from 100 s on, 123.4567 s printed 123.457 already lands after the frame's time).
ffmpeg runs with the hardening of ``audio.py`` (argument list, ``file:`` URL, protocol whitelist).
"""

from __future__ import annotations

import logging
import re
import subprocess
import threading
import weakref
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from whisper_subtitler.audio import ffmpeg_binary, ffmpeg_url, last_error_line, probe_json
from whisper_subtitler.cues.options import CueOptions
from whisper_subtitler.errors import InputError, MissingRequirementError

log = logging.getLogger(__name__)

SCENE_THRESHOLD = 0.1  # ffmpeg scene score (0-1) above which a frame starts a new shot: the scdet filter's default
SCALE_WIDTH = 160  # pixels: the width the picture is scored at (the height keeps the aspect ratio)
MIN_SHOT_FRAMES = 3  # a change this few frames after the previous one is the same cut
MICROSECONDS = Fraction(1, 1_000_000)  # the time base the detection gives the frames (settb=AVTB)
_PTS = re.compile(rb"pts:\s*(-?\d+)\s+pts_time:(-?[\d.]+(?:e[-+]?\d+)?)")


@dataclass(frozen=True)
class VideoInfo:
    """A file's first video stream: ``fps`` (frames per second; ``None`` when ffprobe gives none) and ``start``, the
    file's start time in seconds (what players show as 0, and ffmpeg counts from: the detection's times need no
    correction for it)."""

    fps: float | None
    start: float = 0.0


def video_info(path: Path) -> VideoInfo | None:
    """The first real video stream of ``path`` (cover pictures are not videos), or ``None`` when it has none.
    Raises ``InputError`` for a file ffprobe cannot read, ``MissingRequirementError`` without ffprobe."""
    info = probe_json(Path(path))
    for stream in info.get("streams", []):
        if stream.get("codec_type") != "video" or (stream.get("disposition") or {}).get("attached_pic"):
            continue
        fps = None
        for key in ("avg_frame_rate", "r_frame_rate"):
            try:
                rate = Fraction(str(stream.get(key) or "0/0"))
            except (ValueError, ZeroDivisionError):
                continue
            if 0 < rate < 1000:
                fps = float(rate)
                break
        try:
            start = float((info.get("format") or {}).get("start_time") or 0.0)
        except (TypeError, ValueError):
            start = 0.0
        return VideoInfo(fps, start)
    return None


class ShotDetection:
    """ffmpeg finding the shot changes of ``path`` in the background (a thread reading its output), so that it runs
    while the speech is transcribed. ``result()`` waits for it; ``close()`` stops it (always call it: a
    ``with`` block does). ``info`` is the file's video stream (``video_info``: its start time and frame rate)."""

    def __init__(self, path: Path, info: VideoInfo = VideoInfo(None), threshold: float = SCENE_THRESHOLD) -> None:
        self.path = Path(path)
        self.info = info
        vf = (
            f"settb=AVTB,scale={SCALE_WIDTH}:-2:flags=fast_bilinear,select='gt(scene,{threshold})',"
            "metadata=mode=print:file=pipe\\\\:1"
        )
        cmd = [ffmpeg_binary(), "-hide_banner", "-nostdin", "-nostats", "-loglevel", "error"]
        cmd += ["-skip_loop_filter", "all", "-protocol_whitelist", "file", "-i", ffmpeg_url(self.path.absolute())]
        cmd += ["-map", "0:V:0", "-an", "-sn", "-dn", "-vf", vf, "-f", "null", "-"]
        try:
            self._proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except FileNotFoundError:
            raise MissingRequirementError("ffmpeg not found", hint="install ffmpeg") from None
        self._output: list[bytes] = []  # stdout, stderr once ffmpeg ends
        self._reader = threading.Thread(target=_communicate, args=(self._proc, self._output), daemon=True)
        self._reader.start()
        weakref.finalize(self, _stop, self._proc)  # a detection dropped unused (its file failed) stops ffmpeg

    def result(self) -> tuple[float, ...]:
        """The shot changes in seconds, sorted. Raises ``InputError`` when ffmpeg cannot decode the video."""
        self._reader.join()
        out, err = self._output or [b"", b""]
        if self._proc.returncode != 0:
            raise InputError(f"{self.path}: ffmpeg could not find the shot changes ({last_error_line(err)})")
        return changes_from(out, fps=self.info.fps, time_base=MICROSECONDS)

    def close(self) -> None:
        """Stop ffmpeg if it still runs and wait for the reader."""
        _stop(self._proc)
        self._reader.join()

    def __enter__(self) -> ShotDetection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _communicate(proc: subprocess.Popen, output: list[bytes]) -> None:
    """Wait for ``proc``, then put its stdout and stderr in ``output`` (no reference to the detection is held)."""
    out, err = proc.communicate()
    output += [out or b"", err or b""]


def _stop(proc: subprocess.Popen) -> None:
    """Kill ``proc`` if it still runs."""
    if proc.poll() is None:
        proc.kill()


def changes_from(
    output: bytes, start: float = 0.0, fps: float | None = None, time_base: Fraction | None = None
) -> tuple[float, ...]:
    """The shot changes (seconds, less ``start``: 0 for ffmpeg's own output, which counts from the file's start) of
    ffmpeg's ``metadata=print`` ``output``: one per frame printed, a frame within ``MIN_SHOT_FRAMES`` frames (at
    ``fps``, else 24) of the one kept before it dropped. With ``time_base`` (the filter's, ``MICROSECONDS`` after
    ``settb=AVTB``) the times are the printed ``pts`` in it, exact; without, the printed ``pts_time`` (6 significant
    digits: to 10 ms from 1000 s on)."""
    step = MIN_SHOT_FRAMES / (fps or 24.0)
    kept: list[float] = []
    for found in _PTS.finditer(output):
        pts = int(found.group(1)) * time_base if time_base is not None else float(found.group(2))
        t = round(float(pts) - start, 6)
        if t <= 0:  # the first frame is no change
            continue
        if not kept or t - kept[-1] > step:
            kept.append(t)
    return tuple(kept)


def detect_shot_changes(path: Path, info: VideoInfo | None = None) -> tuple[float, ...]:
    """The shot changes of ``path``'s first video stream, in seconds (``ShotDetection``, waited for); ``info``: its
    ``video_info`` when already probed."""
    with ShotDetection(path, info or video_info(path) or VideoInfo(None)) as detection:
        return detection.result()


class ShotChanges:
    """The shot changes one input's cues are timed by, as ``CueOptions.shot_changes`` asks: ``"auto"`` starts
    ffmpeg on ``source``'s video in the background (``ShotDetection``), ``"off"`` does nothing, and times given
    (a file read, or a list) are used as they are. The frame rate of the rules is the video's (ffprobe) when the
    input has one, else ``CueOptions.fps``.

    With ``"auto"``, an input without a video stream, one ffprobe cannot read, an array of samples (``source``
    ``None``) and a video ffmpeg cannot decode just go without the rule, said at INFO (``-v``); nothing is raised.
    ``cue_options()`` waits for the detection; ``close()`` stops it (a ``with`` block does).
    """

    def __init__(self, source: Path | None, options: CueOptions) -> None:
        self.source, self.options = source, options
        self._detection: ShotDetection | None = None
        self._info: VideoInfo | None = None
        self._resolved: CueOptions | None = None
        wanted = options.shot_changes
        if wanted == "off" or source is None:
            return
        try:
            self._info = video_info(source)
        except InputError as e:
            if wanted == "auto":
                log.info("%s: shot changes not used: %s", source, e.message)
            return
        if wanted != "auto":
            return
        if self._info is None:
            log.info("%s: no video stream: cues not timed by shot changes", source)
            return
        try:
            self._detection = ShotDetection(source, self._info)
        except MissingRequirementError as e:
            log.info("%s: shot changes not used: %s", source, e.message)

    def cue_options(self) -> CueOptions:
        """``CueOptions`` with the shot changes as times (seconds) and the video's frame rate; unchanged when there
        are none to use. Waits for the detection the first time."""
        if self._resolved is None:
            self._resolved = self._resolve()
        return self._resolved

    def _resolve(self) -> CueOptions:
        from dataclasses import replace

        options = self.options
        fps = self._info.fps if self._info is not None and self._info.fps else options.fps
        if isinstance(options.shot_changes, tuple):
            return replace(options, fps=fps) if options.shot_changes else options
        if self._detection is None:
            return options
        try:
            times = self._detection.result()
        except InputError as e:
            log.info("%s: shot changes not used: %s", self.source, e.message)
            return options
        log.info("%s: %d shot changes at %g fps", self.source, len(times), fps)
        return replace(options, shot_changes=times, fps=fps) if times else options

    def close(self) -> None:
        """Stop the detection if it still runs."""
        if self._detection is not None:
            self._detection.close()

    def __enter__(self) -> ShotChanges:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
