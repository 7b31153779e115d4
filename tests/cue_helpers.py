"""Synthetic word timings for the cue and writer tests: no model, no audio."""

from __future__ import annotations

from whisper_subtitler.types import Segment, Transcript, Word


def words_of(
    text: str,
    start: float = 0.0,
    *,
    char_seconds: float = 0.07,
    gap: float = 0.04,
    speaker: str | None = None,
    probability: float = 0.9,
    spaceless: bool = False,
) -> list[Word]:
    """Words of ``text`` spoken from ``start``: each lasts 0.07 s per character (about 15 characters per
    second with the gaps), with ``gap`` seconds between words. Spaceless text gives one word per character."""
    pieces = list(text.replace(" ", "")) if spaceless else [" " + w for w in text.split()]
    out, t = [], start
    for p in pieces:
        d = char_seconds * len(p.strip())
        out.append(Word(p, round(t, 3), round(t + d, 3), probability, speaker))
        t += d + gap
    return out


def transcript_of(*word_lists: list[Word], language: str = "en", duration: float | None = None) -> Transcript:
    """A transcript with one segment per word list."""
    segments = tuple(
        Segment(ws[0].start, ws[-1].end, "".join(w.text for w in ws), tuple(ws), ws[0].speaker)
        for ws in word_lists
        if ws
    )
    end = max((s.end for s in segments), default=0.0)
    return Transcript(segments, language, duration if duration is not None else end + 2.0)


MONOLOGUE = (
    "So what we are going to do today is look at the pipeline and the reason "
    "I want to do it this way is that every stage has its own problems that nobody tells you about "
    "until you run it on real recordings"
)  # no punctuation, no pause: about 190 characters, 12 to 13 seconds at the default speed


def assert_check_passes(path, end: float | None = None) -> None:
    """``check`` on one of our subtitle files (``path``: SRT, VTT or ASS, or built cues as a tuple; ``end``: the
    media's end in seconds, when known): no fault that the speech allowed avoiding. No orphan word or unbalanced
    lines at all; a reading speed or duration over the limit only where the cue already runs until the next one or
    the end (reported as unavoidable: the speech is faster)."""
    from whisper_subtitler.quality import check_cues, read_subtitles, shown_cues

    if isinstance(path, tuple):
        faults = check_cues(shown_cues(path), end=end)
    else:
        sub = read_subtitles(path)
        faults = check_cues(sub.cues, end=end, resolution=sub.resolution)
    assert [(f.kind, f.message) for f in faults if f.avoidable] == [], path
    assert all(f.kind in ("cps", "short") for f in faults), [(f.kind, f.message) for f in faults]
