"""Shot changes given as a file (``--shot-changes FILE``) or a list: one time per line, in seconds, as Subtitle
Edit saves them (its ``.shotchanges`` files hold one time in seconds per line, written with an invariant culture:
``12.345``), or as ``[HH:]MM:SS[.mmm]``. Pure Python; the rules that use them are ``cues.shots``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from pathlib import Path

from whisper_subtitler.errors import UsageError

_CLOCK = re.compile(r"^(?:(\d+):)?(\d{1,2}):(\d{1,2}(?:[.,]\d+)?)$")  # [HH:]MM:SS[.mmm]


def shot_times(values: Iterable[float]) -> tuple[float, ...]:
    """``values`` (seconds) sorted, each once. Raises ``UsageError`` for a negative, endless or non-numeric one."""
    times: set[float] = set()
    for value in values:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < math.inf:
            raise UsageError(f"shot change {value!r} is not a time in seconds (0 or more)")
        times.add(float(value))
    return tuple(sorted(times))


def read_shot_changes(path: Path) -> tuple[float, ...]:
    """The shot changes listed in the text file ``path``: one time per line, in seconds (``12.345``, as Subtitle
    Edit saves them) or as ``[HH:]MM:SS[.mmm]`` (a comma before the milliseconds is read too); blank lines and lines
    starting with ``#`` are skipped. Returns the times in seconds, sorted, each once.

    Raises ``UsageError`` (exit 2) naming the file and the line for a line that is not a time or is negative, and
    naming the file when it cannot be read.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise UsageError(f"--shot-changes {path}: no such file (give auto, off or a file of times)") from None
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"--shot-changes {path}: cannot read ({e})") from None
    times: set[float] = set()
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        seconds = _seconds(line)
        if seconds is None:
            raise UsageError(
                f"{path}:{number}: not a shot-change time: {line[:60]!r}",
                hint="one time per line, in seconds (12.345) or as HH:MM:SS.mmm, as Subtitle Edit saves them",
            )
        times.add(seconds)
    return tuple(sorted(times))


def _seconds(text: str) -> float | None:
    """Seconds of ``12.345`` or ``[HH:]MM:SS[.mmm]``; ``None`` for anything else or a negative or endless time."""
    found = _CLOCK.match(text)
    if found:
        hours, minutes, seconds = found.groups()
        if int(minutes) > 59 and hours is not None:
            return None
        return int(hours or 0) * 3600 + int(minutes) * 60 + float(seconds.replace(",", "."))
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None
