"""The C library's heap allocator, set for large tensors that are freed and allocated again at every batch.

glibc's ``malloc`` serves requests above its mmap threshold (128 KiB at first, at most 32 MiB once it adapts)
with fresh ``mmap`` pages and returns them on ``free``: each batch of CPU inference (a segmentation batch holds
tens of MB per layer) then faults in zeroed pages again, which shows as system time, not compute. Worker threads
also get arenas of their own whose heaps are capped at 64 MiB, so their large tensors always take that path.
With one arena, a high mmap threshold and a high trim threshold the freed blocks stay in the heap and are
reused; the process keeps what it has used at its peak instead of returning it between batches.

The three settings are ``mallopt(3)`` parameters (``M_ARENA_MAX``, ``M_MMAP_THRESHOLD``, ``M_TRIM_THRESHOLD``),
the same as the ``MALLOC_ARENA_MAX``, ``MALLOC_MMAP_THRESHOLD_`` and ``MALLOC_TRIM_THRESHOLD_`` variables; what
they save is measured in docs/diarization.md.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import platform
from collections.abc import Mapping

M_TRIM_THRESHOLD = -1  # glibc <malloc.h>
M_MMAP_THRESHOLD = -3
M_ARENA_MAX = -8

SETTINGS: tuple[tuple[str, int, int], ...] = (
    ("M_ARENA_MAX", M_ARENA_MAX, 1),
    ("M_MMAP_THRESHOLD", M_MMAP_THRESHOLD, 512 << 20),  # bytes
    ("M_TRIM_THRESHOLD", M_TRIM_THRESHOLD, 1 << 30),  # bytes
)
USER_VARIABLES = ("MALLOC_ARENA_MAX", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES")


def why_not(environ: Mapping[str, str], system: str | None = None, libc: str | None = None) -> str | None:
    """``None`` when the settings apply here; else why not (another OS or C library, or the user set them)."""
    system = platform.system() if system is None else system
    libc = platform.libc_ver()[0] if libc is None else libc
    if system != "Linux" or libc != "glibc":
        return f"glibc only (this is {system}{' with ' + libc if libc else ''})"
    user = [name for name in USER_VARIABLES if environ.get(name)]
    if user:
        return f"{user[0]} is set by the user"
    return None


def describe() -> str:
    """The settings as ``mallopt`` calls, for logs and ``doctor``."""
    return ", ".join(f"{name}={value}" for name, _, value in SETTINGS)


def apply() -> str:
    """Set the parameters of :data:`SETTINGS` on this process's glibc allocator; returns what was set.

    Raises ``OSError`` when the C library cannot be loaded or refuses a setting (``mallopt`` returns 0).
    """
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    for name, param, value in SETTINGS:
        if libc.mallopt(ctypes.c_int(param), ctypes.c_int(value)) != 1:
            raise OSError(f"mallopt({name}, {value}) was refused")
    return describe()
