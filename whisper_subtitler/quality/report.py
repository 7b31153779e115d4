"""A subtitle file's quality report: its faults (``rules``) and the figures of its cues.

Figures: reading speed in characters per second (mean and maximum over the cues with text and a positive
duration), line width in columns (CPL: mean over the lines, maximum), cue count, faults by kind and severity.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from whisper_subtitler.cues.options import CueOptions
from whisper_subtitler.cues.width import display_width, is_spaceless
from whisper_subtitler.quality.read import SubtitleCue, read_subtitles, shown_cues
from whisper_subtitler.quality.rules import KINDS, Fault, Severity, check_cues, reading_chars
from whisper_subtitler.types import Cue

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class FileReport:
    """The report of one file: ``path``, ``format``, ``cues`` (count), ``faults`` (in cue order), the reading speed
    (``mean_cps``, ``max_cps``) and line widths (``mean_cpl``, ``max_cpl``), and ``against`` (a reference's
    scores, ``against.compare``) when one was given."""

    path: str
    format: str
    cues: int
    faults: tuple[Fault, ...]
    mean_cps: float
    max_cps: float
    mean_cpl: float
    max_cpl: int
    against: dict[str, Any] | None = field(default=None)

    @property
    def failed(self) -> bool:
        """Whether a fault is an error or a warning (``info`` faults, which nothing could avoid, do not fail)."""
        return any(f.severity is not Severity.info for f in self.faults)

    def by_kind(self) -> dict[str, int]:
        """Faults per kind, in the order of ``KINDS``, kinds without faults left out."""
        counts = Counter(f.kind for f in self.faults)
        return {kind: counts[kind] for kind in KINDS if counts[kind]}

    def by_severity(self) -> dict[str, int]:
        """Faults per severity (``error``, ``warning``, ``info``), zeros included."""
        counts = Counter(f.severity for f in self.faults)
        return {s.value: counts[s] for s in Severity}

    def as_dict(self) -> dict[str, Any]:
        """The documented ``check --json`` object of one file (``docs/check.md``)."""
        out: dict[str, Any] = {
            "path": self.path,
            "format": self.format,
            "cues": self.cues,
            "failed": self.failed,
            "faults_by_kind": self.by_kind(),
            "faults_by_severity": self.by_severity(),
            "mean_cps": self.mean_cps,
            "max_cps": self.max_cps,
            "mean_cpl": self.mean_cpl,
            "max_cpl": self.max_cpl,
            "faults": [f.as_dict() for f in self.faults],
        }
        if self.against is not None:
            out["against"] = self.against
        return out


def report_of(
    path: str,
    fmt: str,
    cues: Sequence[SubtitleCue],
    options: CueOptions = CueOptions(),
    *,
    language: str | None = None,
    end: float | None = None,
    resolution: float = 0.001,
) -> FileReport:
    """The report of ``cues`` read from ``path`` in format ``fmt`` (arguments as ``rules.check_cues``)."""
    faults = check_cues(cues, options, language=language, end=end, resolution=resolution)
    spaceless = is_spaceless(language, " ".join(line for c in cues for line in c.lines))
    speeds = [reading_chars(c.lines, spaceless) / (c.end - c.start) for c in cues if c.lines and c.end > c.start]
    widths = [display_width(line) for c in cues for line in c.lines]
    return FileReport(
        path=path,
        format=fmt,
        cues=len(cues),
        faults=tuple(faults),
        mean_cps=round(sum(speeds) / len(speeds), 2) if speeds else 0.0,
        max_cps=round(max(speeds), 2) if speeds else 0.0,
        mean_cpl=round(sum(widths) / len(widths), 2) if widths else 0.0,
        max_cpl=max(widths, default=0),
    )


def check_file(path: Path, options: CueOptions = CueOptions(), *, language: str | None = None) -> FileReport:
    """Read ``path`` (``read.read_subtitles``) and report its faults against ``options``; ``language`` (ISO 639-1)
    overrides the one the file declares. Raises ``InputError`` for an unreadable file."""
    sub = read_subtitles(path)
    return report_of(
        str(path), sub.format, sub.cues, options, language=language or sub.language, resolution=sub.resolution
    )


def log_faults(name: str, cues: Sequence[Cue], options: CueOptions, language: str | None, end: float) -> FileReport:
    """Check built ``cues`` as they are written (``read.shown_cues``) and log each fault at INFO (``-v``) on the
    ``whisper_subtitler.quality`` logger, naming ``name`` (the output's file name) and the cue; ``end`` (seconds,
    0 unknown) is the end of the audio. What ``transcribe`` runs on the cues it wrote: faults left are those the
    rules could not avoid (the speech is faster than the reading speed, a word too wide to balance)."""
    report = report_of(name, "cues", shown_cues(cues), options, language=language, end=end if end > 0 else None)
    for f in report.faults:
        logger.info("%s: cue %d at %.3f s: %s %s: %s", name, f.index, f.start, f.severity.value, f.kind, f.message)
    return report
