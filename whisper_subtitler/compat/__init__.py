"""Other libraries' internals, one module per library: every change this package makes to the behaviour of
openai-whisper (``compat.whisper``) and of torch (``compat.torch``), and every use of their private names, lives there.
pyannote.audio's adapter is ``diarize.pyannote_compat``.

Each of these modules was written against some versions of its library and checks the installed one (``Gate``): on
a version it does not know, the library's own code runs instead of ours, and one warning per process says so. The
installed version is read with ``importlib.metadata`` (``installed_version``, looked up at each check so that a test
can stand in another version).
"""

from __future__ import annotations

import importlib.metadata
import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)


def installed_version(distribution: str) -> str | None:
    """The installed version of ``distribution`` (its metadata's ``Version``), or None when it is not installed."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


class Gate:
    """Whether the installed ``distribution`` is a version our changes to it were written against (``knows``: the
    version string -> bool). ``known()`` reads the version once per process; on a version it does not know it logs
    one warning, ``"<distribution> <version> is not a version whisper-subtitler knows (<written_for>): <instead>"``,
    and answers False from then on: the callers then leave the library's own code as it is. Thread-safe."""

    def __init__(self, distribution: str, knows: Callable[[str], bool], written_for: str, instead: str) -> None:
        self.distribution = distribution
        self.knows = knows
        self.written_for = written_for
        self.instead = instead
        self._lock = threading.Lock()
        self._verdict: bool | None = None

    def known(self) -> bool:
        """True when the installed version is one ``knows`` accepts (the first call reads it; one warning if not)."""
        if self._verdict is not None:
            return self._verdict
        with self._lock:
            if self._verdict is None:
                version = installed_version(self.distribution)
                self._verdict = version is not None and self.knows(version)
                if not self._verdict:
                    log.warning(
                        "%s %s is not a version whisper-subtitler knows (%s): %s",
                        self.distribution,
                        version or "(not installed)",
                        self.written_for,
                        self.instead,
                    )
            return self._verdict

    def forget(self) -> None:
        """Read the version again at the next ``known()`` (and warn again): for tests that stand in a version."""
        with self._lock:
            self._verdict = None
