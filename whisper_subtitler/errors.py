"""The expected failures, each with its documented exit code.

The CLI catches ``SubtitlerError`` once, prints ``message`` (and ``hint``) as one line on stderr and exits
with ``exit_code``; anything else is a bug and keeps its traceback (locals hidden). In a batch, an error whose class
has ``ends_batch`` false fails only the file it was raised for (the runner reports it and goes on); the others
(a missing requirement, a usage error, an unavailable backend) would fail every file the same way, so they end the
run at once.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """Process exit codes, documented in the README and ``--help``."""

    OK = 0
    FAILED = 1  # one or more inputs failed; the rest were processed
    USAGE = 2  # invalid option or value (Typer/Click also use 2)
    MISSING_REQUIREMENT = 3  # ffmpeg, a model, an optional dependency, a token or gated-model access
    BACKEND_UNAVAILABLE = 4  # a requested GPU backend is not available and fallback is disabled
    HANGUP = 129  # SIGHUP (128 + 1): the batch ended as on Ctrl-C
    INTERRUPTED = 130  # SIGINT (128 + 2)
    TERMINATED = 143  # SIGTERM (128 + 15): the batch ended as on Ctrl-C


class SubtitlerError(Exception):
    """Base of every expected failure: ``message`` says what and where, ``hint`` what to do."""

    exit_code: ExitCode = ExitCode.FAILED
    ends_batch: bool = False  # True: no later file can succeed either, stop the batch

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message


class InputError(SubtitlerError):
    """One input cannot be processed (missing, unreadable, no audio stream, corrupt); the batch goes on."""

    exit_code = ExitCode.FAILED


class UsageError(SubtitlerError):
    """Invalid options or option combinations."""

    exit_code = ExitCode.USAGE
    ends_batch = True


class AudioLanguageError(UsageError):
    """An input has no audio stream tagged with the ``--audio-language`` asked: that file fails with exit code 2
    and the batch goes on (other files may have it)."""

    ends_batch = False


class ChannelError(UsageError):
    """``--channels`` names a channel an input's audio stream does not have (``--channels center`` on a stereo
    track, a channel number past its channels): that file fails with exit code 2, one line naming the file and the
    stream's layout, and the batch goes on (other files may have it)."""

    ends_batch = False


class MissingRequirementError(SubtitlerError):
    """Something the run needs is not installed or not reachable: ffmpeg, weights, an extra, a token."""

    exit_code = ExitCode.MISSING_REQUIREMENT
    ends_batch = True


class ModelError(MissingRequirementError):
    """The model asked for cannot be used: not a checkpoint, not loadable, not convertible."""


class ModelNotFoundError(ModelError):
    """No Whisper or diarization model could be found; the message lists what was tried."""


class BackendUnavailableError(SubtitlerError):
    """The requested compute backend is not available and ``--no-fallback`` is set."""

    exit_code = ExitCode.BACKEND_UNAVAILABLE
    ends_batch = True
