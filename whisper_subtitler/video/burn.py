"""``--burn-in``: a copy of the video with the subtitles rendered into the picture by libass (ffmpeg's ``ass``
filter), from our ASS output, so speaker colours and karaoke (``--word-level``) look as in a player.

Our ASS is laid out on a 1080-line canvas (``PlayResY: 1080``; font size 56, 5.2 % of the frame height, whatever
the resolution). Its ``PlayResX`` is set to the video's aspect ratio (1080 x width / height) before rendering:
libass stretches text horizontally when the canvas and the frame differ in shape.

The picture is re-encoded with libx264 at ``CRF`` 20, preset ``medium`` (x264's default preset; CRF 18-23 is
its visually transparent to good range) in 4:2:0 (``yuv420p``, what every player decodes); the audio streams are
copied. MP4 and QuickTime inputs keep their container; anything else becomes Matroska, which holds any audio codec.
"""

from __future__ import annotations

import re
from pathlib import Path

from whisper_subtitler.audio import ffmpeg_binary, ffmpeg_url
from whisper_subtitler.errors import InputError
from whisper_subtitler.streams import StreamList
from whisper_subtitler.video.run import run_ffmpeg

CRF = 20  # libx264 constant rate factor: lower is better and larger
PRESET = "medium"  # libx264 speed/size trade-off
PLAY_RES_Y = 1080  # our ASS writer's canvas height


def fit_canvas(ass_text: str, width: int, height: int) -> str:
    """``ass_text`` with ``PlayResX`` set so that the canvas has the ``width``/``height`` shape of the frame."""
    play_res_x = max(1, round(PLAY_RES_Y * width / height))
    return re.sub(r"(?m)^PlayResX: *\d+$", f"PlayResX: {play_res_x}", ass_text, count=1)


def burn_in(
    source: Path, streams: StreamList, ass_file: str, filter_name: str, muxer: str, target: Path, workdir: Path
) -> None:
    """Render ``ass_file`` (a name in ``workdir``, already fitted with ``fit_canvas``) into the first video stream
    of ``source`` and write it with all audio streams copied to ``target`` (a temporary file, container ``muxer``).
    Raises ``InputError`` when ffmpeg fails or the file has no video stream."""
    import ffmpeg

    video = streams.video
    if video is None:
        raise InputError(f"{source}: no video stream to burn the subtitles into")
    inp = ffmpeg.input(ffmpeg_url(source.absolute()), protocol_whitelist="file")
    picture = inp[f"v:{video.position}"].filter(filter_name, ass_file)
    cmd = ffmpeg.output(
        picture,
        inp["a?"],
        ffmpeg_url(target.absolute()),
        f=muxer,
        vcodec="libx264",
        crf=CRF,
        preset=PRESET,
        pix_fmt="yuv420p",
        acodec="copy",
    ).compile(cmd=ffmpeg_binary())
    run_ffmpeg(cmd, source, "burn the subtitles in", cwd=workdir)
