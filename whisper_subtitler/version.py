"""The package's version, from its installed metadata: a bottom-layer module, so that every layer can report it."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("whisper-subtitler")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+unknown"
