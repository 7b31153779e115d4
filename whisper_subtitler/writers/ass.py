"""Advanced SubStation Alpha (ASS, v4.00+): one style per speaker, each with its own colour.

Layout: ``[Script Info]`` (1920x1080 play resolution, ``WrapStyle: 2`` since lines are already broken),
``[V4+ Styles]`` (``Default`` plus one style per speaker), ``[Events]`` (one ``Dialogue`` per cue, lines
joined with ``\\N``). Times are ``H:MM:SS.cc``, centiseconds from the millisecond time, rounded as Aegisub and
pysubs2 do. With ``word_level``, each word gets a ``{\\kNN}`` karaoke tag (duration in centiseconds): words
turn from the secondary colour (grey) to the style's primary colour as they are spoken.

Speakers: each speaker's events use the speaker's style (its colour) and name, in every speaker style; the
shown text follows the speaker style as in SRT (``Cue.prefixes``: a label or dialogue dashes). A dialogue
cue is one event (both lines on screen together, as Netflix's dual-speaker rule wants) in the first
speaker's style, named ``A / B``; its second line starts with a ``{\\c&HBBGGRR&}`` override in the second
speaker's colour, so each line keeps its speaker's colour (BBC practice: colour marks the speaker).

Right-to-left files (Arabic, Hebrew, Persian, Urdu: ``writers.bidi``): every style has ``Encoding -1``, the value
libass reads as "base direction from the text" (any Windows charset number gives VSFilter's left-to-right), and each
right-to-left line is held in right-to-left marks (RLM, RLE ... PDF), which put its punctuation right under VSFilter
too;
alignment stays bottom centre (2), as Netflix's guides want every subtitle centred.

Text cannot hold override blocks: ``{``/``}`` become ``(``/``)`` and a backslash is followed by a word
joiner (U+2060) so it never starts a tag.
"""

from __future__ import annotations

from collections.abc import Sequence

from whisper_subtitler.types import Cue, Transcript
from whisper_subtitler.writers.base import Writer, WriterOptions, to_milliseconds, words_by_line
from whisper_subtitler.writers.bidi import cue_is_rtl, is_rtl_language, mark

# Speaker colours as ASS &HAABBGGRR: white, yellow, cyan, light green, pink, orange, light blue, light red.
PALETTE = (
    "&H00FFFFFF",
    "&H0000FFFF",
    "&H00FFFF00",
    "&H0080FF80",
    "&H00FF80FF",
    "&H000080FF",
    "&H00FFC080",
    "&H008080FF",
)
STYLE_FORMAT = (
    "Name, Fontname, Fontsize, PrimaryColour, SecondaryColour, OutlineColour, BackColour, Bold, Italic, "
    "Underline, StrikeOut, ScaleX, ScaleY, Spacing, Angle, BorderStyle, Outline, Shadow, Alignment, "
    "MarginL, MarginR, MarginV, Encoding"
)
AUTO_DIRECTION = -1  # Encoding -1: libass takes each line's base direction from its text (ass_resolve_base_direction)
EVENT_FORMAT = "Layer, Start, End, Style, Name, MarginL, MarginR, MarginV, Effect, Text"
DEFAULT_STYLE = "Default"


def ass_timestamp(seconds: float) -> str:
    """``H:MM:SS.cc`` from seconds (via whole milliseconds, rounded to centiseconds)."""
    cs = (to_milliseconds(seconds) + 5) // 10
    h, cs = divmod(cs, 360_000)
    m, cs = divmod(cs, 6_000)
    s, cs = divmod(cs, 100)
    return f"{h:d}:{m:02d}:{s:02d}.{cs:02d}"


def escape(text: str) -> str:
    """Text safe in an ASS event: no override blocks, no backslash tags, no line breaks."""
    text = text.replace("\\", "\\\u2060").replace("{", "(").replace("}", ")")
    return " ".join(text.splitlines())


def style_name(speaker: str) -> str:
    """A speaker label usable as an ASS style name (no commas, which separate fields)."""
    return speaker.replace(",", ";").strip() or "Speaker"


def _style(name: str, colour: str, encoding: int = 1) -> str:
    return (
        f"Style: {name},Arial,56,{colour},&H00A0A0A0,&H00000000,&H80000000,0,0,0,0,100,100,0,0,1,3,1,2,60,60,50,"
        f"{encoding}"
    )


def colour_override(colour: str) -> str:
    """``{\\c&HBBGGRR&}`` for a style colour ``&HAABBGGRR``: the primary colour of the text after it."""
    return f"{{\\c&H{colour[-6:]}&}}"


def _karaoke(cue: Cue) -> list[str] | None:
    """Cue text with a ``{\\kNN}`` tag before each word: the word is highlighted from its start until the
    next word starts (the last one until its end); silence before the first word is an empty syllable.
    Durations come from cumulative centisecond times, so rounding never drifts."""
    layout = words_by_line(cue)
    if layout is None:
        return None
    start, end = to_milliseconds(cue.start), to_milliseconds(cue.end)
    items = [item for line in layout for item in line]

    def clamp(seconds: float) -> int:
        return min(max(to_milliseconds(max(seconds, 0.0)), start), end)

    marks = [clamp(w.start) for _, w in items] + [clamp(items[-1][1].end)]
    for k in range(1, len(marks)):  # never backwards
        marks[k] = max(marks[k], marks[k - 1])

    def cs(ms: int) -> int:
        return (ms + 5) // 10

    lead = f"{{\\k{cs(marks[0]) - cs(start)}}}" if marks[0] > start else ""
    out_lines, k = [], 0
    for line in layout:
        parts = []
        for text, _ in line:
            parts.append(f"{{\\k{cs(marks[k + 1]) - cs(marks[k])}}}{escape(text)}")
            k += 1
        out_lines.append("".join(parts))
    out_lines[0] = lead + out_lines[0]
    return out_lines


class AssWriter(Writer):
    """ASS with one coloured style per speaker and optional ``\\k`` karaoke tags."""

    name = "ass"
    extension = "ass"
    cue_based = True

    def render(self, transcript: Transcript, cues: Sequence[Cue], options: WriterOptions) -> str:
        speakers = list(
            dict.fromkeys(
                [*transcript.speakers, *(s for c in cues for s in (c.speaker, *c.line_speakers) if s is not None)]
            )
        )
        # libass lays out a style of Encoding -1 in the direction of its text, any other in VSFilter's left-to-right.
        encoding = AUTO_DIRECTION if transcript.task != "translate" and is_rtl_language(transcript.language) else 1
        styles = [_style(DEFAULT_STYLE, PALETTE[0], encoding)]
        styles += [_style(style_name(s), PALETTE[i % len(PALETTE)], encoding) for i, s in enumerate(speakers)]
        title = escape(transcript.source or "whisper-subtitler")
        out = [
            "[Script Info]\n",
            f"Title: {title}\n",
            "ScriptType: v4.00+\n",
            "WrapStyle: 2\n",
            "ScaledBorderAndShadow: yes\n",
            "PlayResX: 1920\n",
            "PlayResY: 1080\n",
            "\n[V4+ Styles]\n",
            f"Format: {STYLE_FORMAT}\n",
            *(s + "\n" for s in styles),
            "\n[Events]\n",
            f"Format: {EVENT_FORMAT}\n",
        ]
        colours = {s: PALETTE[i % len(PALETTE)] for i, s in enumerate(speakers)}
        for cue in cues:
            lines = _karaoke(cue) if options.word_level else None
            if lines is None:
                lines = [escape(line.strip()) for line in cue.lines]
            shown = []
            rtl = cue_is_rtl(cue, transcript)
            for i, line in enumerate(lines):
                if not line.strip():
                    continue
                prefix = escape(cue.prefixes[i]) if i < len(cue.prefixes) else ""
                body = mark(prefix + line) if rtl else prefix + line  # right-to-left marks (writers.bidi)
                speaker = cue.speaker_of_line(i)
                if cue.dialogue and speaker != cue.speaker and speaker in colours:
                    body = colour_override(colours[speaker]) + body
                shown.append(body)
            text = "\\N".join(shown)
            if not text:
                continue
            style = style_name(cue.speaker) if cue.speaker is not None else DEFAULT_STYLE
            name = style if cue.speaker is not None else ""
            if cue.dialogue:
                name = " / ".join(style_name(s) for s in dict.fromkeys(cue.line_speakers) if s is not None)
            out.append(
                f"Dialogue: 0,{ass_timestamp(cue.start)},{ass_timestamp(cue.end)},{style},{name},0,0,0,,{text}\n"
            )
        return "".join(out)
