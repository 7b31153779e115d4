"""How speakers are shown in subtitle text: the speaker style, speaker labels and dialogue dashes.

Styles (``--speaker-style``; rules in ``docs/speakers-in-subtitles.md``):

- ``change`` (default): the label ``[SPEAKER_00]: `` on the first cue and on the first cue after each speaker
  change only, as subtitlers name a speaker once and not again while the same person goes on (SDH practice);
  two short utterances of two speakers share a dialogue cue, one line each, each line starting with a
  hyphen and a space (Netflix Timed Text Style Guide, "dual speakers");
- ``dash``: dialogue cues with their dashes, never a name;
- ``label``: the label on every cue (whisperX's ``[SPEAKER_00]: ``), no dialogue cues;
- ``none``: nothing shown, no dialogue cues.

A transcript with fewer than two speakers shows no label and no dash in any style. Metadata is not shown
text and is kept in every style: WebVTT voice spans, ASS styles, the TSV speaker column, JSON and RTTM.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from enum import Enum

DIALOGUE_DASH = "- "  # Netflix: "a hyphen followed by a space" starts each speaker's line of a dialogue cue


class SpeakerStyle(str, Enum):
    """How speakers are shown in cue text (see the module docstring)."""

    change = "change"
    dash = "dash"
    label = "label"
    none = "none"


def speaker_label(speaker: str) -> str:
    """``"[SPEAKER_00]: "`` for ``"SPEAKER_00"``: the prefix of a labelled cue's first line (whisperX style)."""
    return f"[{speaker}]: "


def several_speakers(speakers: Iterable[str | None]) -> bool:
    """Whether at least two different speakers occur (``None``, no speaker, is not counted).

    With one speaker, a label on every cue names nobody new and costs a third of a 42-column line."""
    seen: set[str] = set()
    for s in speakers:
        if s is not None:
            seen.add(s)
            if len(seen) > 1:
                return True
    return False


def forms_dialogue(style: SpeakerStyle | str) -> bool:
    """Whether ``style`` puts two short utterances of two speakers in one dialogue cue (``change``, ``dash``)."""
    return SpeakerStyle(style) in (SpeakerStyle.change, SpeakerStyle.dash)


def shows_label(style: SpeakerStyle | str, speaker: str | None, previous: str | None, first: bool) -> bool:
    """Whether a single-speaker cue of ``speaker`` carries the speaker label.

    ``previous`` is the speaker of the line shown just before (the last line of the previous cue), ``first``
    whether this is the first cue. ``label``: always; ``change``: on the first cue and after a speaker change;
    ``dash``/``none``: never. The caller checks ``several_speakers`` first.
    """
    style = SpeakerStyle(style)
    if speaker is None:
        return False
    if style is SpeakerStyle.label:
        return True
    return style is SpeakerStyle.change and (first or speaker != previous)


def line_prefixes(speakers: Sequence[str | None], style: SpeakerStyle | str) -> list[str]:
    """What precedes each line of a plain transcript (TXT), given the speaker of each line in order.

    ``label``: the label on every line; ``change``: the label at the first line and at each speaker change;
    ``dash``: a dialogue dash at the first line and at each speaker change; ``none``, or fewer than two
    speakers: nothing.
    """
    style = SpeakerStyle(style)
    if not several_speakers(speakers):
        return [""] * len(speakers)
    out: list[str] = []
    for i, speaker in enumerate(speakers):
        previous = speakers[i - 1] if i else None
        if style is SpeakerStyle.dash:
            out.append(DIALOGUE_DASH if speaker is not None and (i == 0 or speaker != previous) else "")
        else:
            out.append(speaker_label(speaker) if shows_label(style, speaker, previous, i == 0) else "")
    return out
