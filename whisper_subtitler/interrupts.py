"""Ending a run on a signal: SIGTERM and SIGHUP end a batch as Ctrl-C (SIGINT) does.

SIGTERM is what ``timeout``, systemd, Docker, Kubernetes and Slurm send; SIGHUP comes when the terminal goes. Python
turns only SIGINT into an exception (``KeyboardInterrupt``); the others kill the process on the spot, and a temporary
output file being written is left behind. Inside ``ending_on_signals`` they raise ``Interrupted``, a
``KeyboardInterrupt``, in the main thread, so that they get every clean-up Ctrl-C gets: the current file is
abandoned (its temporary file removed, ffmpeg stopped), the finished files stay, the ``--json`` summary is printed,
and the exit code is 128 + the signal's number, as a shell reports a process killed by it (130, 143, 129).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

ENDING_SIGNALS = tuple(s for s in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)) if s is not None)


class Interrupted(KeyboardInterrupt):
    """SIGTERM or SIGHUP arrived (``signum``); caught wherever ``KeyboardInterrupt`` is."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def signal_number(interrupt: KeyboardInterrupt) -> int:
    """The signal behind ``interrupt``: its ``signum`` for an ``Interrupted``, SIGINT for Ctrl-C."""
    return int(getattr(interrupt, "signum", signal.SIGINT))


def exit_code(interrupt: KeyboardInterrupt) -> int:
    """128 + the signal's number: 130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP."""
    return 128 + signal_number(interrupt)


@contextmanager
def ending_on_signals() -> Iterator[None]:
    """Within: SIGTERM and SIGHUP raise ``Interrupted`` in the main thread, once (a second signal during the
    clean-up is ignored, so that the clean-up finishes; SIGKILL still ends the process); the previous handlers come
    back afterwards. A signal the process was started with ignored (``nohup`` ignores SIGHUP) stays ignored. Outside
    the main thread nothing changes (Python handles signals there only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.getsignal(s) for s in ENDING_SIGNALS}
    raised = False

    def handler(signum: int, frame: FrameType | None) -> None:
        nonlocal raised
        if not raised:
            raised = True
            raise Interrupted(signum)

    try:
        for s, old in previous.items():
            if old is not signal.SIG_IGN:
                signal.signal(s, handler)
        yield
    finally:
        for s, old in previous.items():
            signal.signal(s, old if old is not None else signal.SIG_DFL)
