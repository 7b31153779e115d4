"""WebVTT (W3C WebVTT, ``text/vtt``): ``WEBVTT`` header, then cues ``HH:MM:SS.mmm --> HH:MM:SS.mmm``.

Cue text escapes ``&``, ``<`` and ``>`` (so it never contains ``-->``); a speaker is named with a voice span
``<v SPEAKER_00>...</v>`` on every cue (a voice applies to one cue only), always closed, in every speaker
style: it is metadata that players can style (``::cue(v[voice="SPEAKER_00"])``), not shown text. A dialogue
cue gets one voice span per line, each holding its speaker's line. The shown text follows the speaker style
as in SRT (``Cue.prefixes``: a label or dialogue dashes). With
``word_level``, every word after the first is preceded by a timestamp tag ``<HH:MM:SS.mmm>`` and wrapped in
a ``<c>`` class span, so players can style spoken and unspoken words (``::cue(:past)``, karaoke style);
timestamp tags are strictly inside the cue's time and increasing, as the spec requires. A cue in another
language than the file's (``Cue.language`` against ``Transcript.language``) has its text in a cue language span
``<lang xx>...</lang>`` (WebVTT, "WebVTT cue language span"), inside the voice span, so that players and screen
readers pronounce and hyphenate it as that language; the file's own language is the track's (``--embed`` tags it).
A translation (``--task translate``) is English throughout and has no language spans. A right-to-left line (Arabic,
Hebrew, Persian, Urdu) is held in right-to-left marks (RLM, RLE ... PDF) inside its spans, so that it is laid out
right to left and its punctuation is where readers expect it (``writers.bidi``).
"""

from __future__ import annotations

from collections.abc import Sequence

from whisper_subtitler.types import Cue, Transcript
from whisper_subtitler.writers.base import Writer, WriterOptions, format_timestamp, to_milliseconds, words_by_line
from whisper_subtitler.writers.bidi import cue_is_rtl, mark


def escape(text: str) -> str:
    """WebVTT cue text escaping: ``&`` -> ``&amp;``, ``<`` -> ``&lt;``, ``>`` -> ``&gt;``."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _voice_name(speaker: str) -> str:
    # A voice annotation ends at '>' and may not hold a line break.
    return escape(" ".join(speaker.split()))


def _karaoke_lines(cue: Cue) -> list[str] | None:
    layout = words_by_line(cue)
    if layout is None:
        return None
    start_ms, end_ms = to_milliseconds(cue.start), to_milliseconds(cue.end)
    last = start_ms
    lines = []
    for items in layout:
        parts = []
        for text, word in items:
            t = to_milliseconds(max(word.start, 0.0))
            bare = escape(text.strip())
            lead = text[: len(text) - len(text.lstrip())]
            if last < t < end_ms:
                parts.append(f"{lead}<{format_timestamp(t / 1000)}><c>{bare}</c>")
                last = t
            else:
                parts.append(f"{lead}<c>{bare}</c>")
        lines.append("".join(parts))
    return lines


class VttWriter(Writer):
    """WebVTT with voice spans for speakers and optional word-level timestamp tags."""

    name = "vtt"
    extension = "vtt"
    cue_based = True

    def render(self, transcript: Transcript, cues: Sequence[Cue], options: WriterOptions) -> str:
        out = ["WEBVTT\n\n"]
        main = None if transcript.task == "translate" else transcript.language or None
        for cue in cues:
            lines = _karaoke_lines(cue) if options.word_level else None
            if lines is None:
                lines = [escape(line.strip()) for line in cue.lines]
            prefixes = [escape(p) for p in cue.prefixes] + [""] * (len(lines) - len(cue.prefixes))
            shown = [
                (p + line, cue.speaker_of_line(i)) for i, (p, line) in enumerate(zip(prefixes, lines)) if line.strip()
            ]
            if not shown:
                continue
            if cue_is_rtl(cue, transcript):  # right-to-left: punctuation on the right side (writers.bidi)
                shown = [(mark(line), s) for line, s in shown]
            if main is not None and cue.language and cue.language != main:
                shown = [(f"<lang {_voice_name(cue.language)}>{line}</lang>", s) for line, s in shown]
            if cue.dialogue:  # one voice per line
                text = "\n".join(f"<v {_voice_name(s)}>{line}</v>" if s is not None else line for line, s in shown)
            else:
                text = "\n".join(line for line, _ in shown)
                if cue.speaker is not None:
                    text = f"<v {_voice_name(cue.speaker)}>{text}</v>"
            out.append(f"{format_timestamp(cue.start)} --> {format_timestamp(cue.end)}\n{text}\n\n")
        return "".join(out)
