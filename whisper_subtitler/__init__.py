"""whisper-subtitler: video and audio to subtitles with Whisper, pyannote and ffmpeg."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("whisper-subtitler")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+unknown"
