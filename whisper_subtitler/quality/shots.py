"""The faults of subtitle cues against the shot changes of their video (``check --video``, ``--shot-changes``): the
timing rules of ``cues.shots`` (Netflix Timed Text Style Guide, "Subtitle Timing Guidelines", section 2; BBC
Subtitle Guidelines, "Shot changes"), with the window of half a second in frames (12 at 24 fps).

- ``shot_flash`` (warning): the cue crosses a shot change with less than the window on one side of it: it flashes
  on just before the cut or hangs on just after it;
- ``shot_in`` (warning): the cue starts within the window of a shot change and not on it;
- ``shot_out`` (warning): the cue ends within the window of a shot change and not 2 frames (the minimum gap)
  before it;
- ``shot_crossing`` (info): the cue crosses a shot change with at least the window on each side, as the guides
  allow when the speech runs across the cut.

A shot change the cue crosses is reported as a flash or a crossing, not also as an in- or out-time fault.
"""

from __future__ import annotations

from collections.abc import Sequence

from whisper_subtitler.cues.options import CueOptions
from whisper_subtitler.cues.shots import ShotRules
from whisper_subtitler.quality.read import SubtitleCue
from whisper_subtitler.quality.rules import Fault, Severity


def _at(t: float) -> str:
    """A shot change's time as ``12.345 s``."""
    return f"{t:.3f} s"


def shot_faults(cues: Sequence[SubtitleCue], shots: Sequence[float], options: CueOptions) -> list[Fault]:
    """The shot-change faults of ``cues`` (in file order) against ``shots`` (seconds) at ``options.fps`` with
    ``options.min_gap``, cue by cue: flashes and crossings, then in-times, then out-times."""
    rules = ShotRules.of(options)
    shots = sorted(shots)
    fps, eps = options.fps, rules.tolerance
    window = round(rules.window * fps)
    faults: list[Fault] = []
    for cue in cues:
        found: list[tuple[str, Severity, str]] = []
        crossed = rules.crossed(shots, cue.start, cue.end)
        for shot in crossed:
            before, after = round((shot - cue.start) * fps), round((cue.end - shot) * fps)
            if min(shot - cue.start, cue.end - shot) < rules.window - eps:
                found.append(
                    (
                        "shot_flash",
                        Severity.warning,
                        f"crosses the shot change at {_at(shot)} with {before} frames before it and {after} after "
                        f"(at least {window} on each side)",
                    )
                )
            else:
                found.append(
                    (
                        "shot_crossing",
                        Severity.info,
                        f"crosses the shot change at {_at(shot)} ({before}/{after} frames)",
                    )
                )
        near = rules.near(shots, cue.start)
        if near is not None and near not in crossed:
            frames = round((cue.start - near) * fps)
            where = f"{abs(frames)} frames {'after' if frames > 0 else 'before'}"
            found.append(("shot_in", Severity.warning, f"starts {where} the shot change at {_at(near)}, not on it"))
        near = rules.near(shots, cue.end)
        if (
            near is not None
            and near not in crossed
            and near > cue.start + eps
            and abs(cue.end - near + rules.gap) > eps
        ):
            frames = round((cue.end - near) * fps)
            where = f"{abs(frames)} frames {'after' if frames > 0 else 'before'}"
            gap = round(rules.gap * fps)
            found.append(
                (
                    "shot_out",
                    Severity.warning,
                    f"ends {where} the shot change at {_at(near)}, not {gap} frames before it",
                )
            )
        faults.extend(
            Fault(kind, severity, cue.index, cue.start, message, avoidable=severity is Severity.warning)
            for kind, severity, message in found
        )
    return faults
