"""Speaker display (``--speaker-style``): labels at speaker changes, dialogue cues with dashes, the four styles
in SRT, WebVTT, ASS and TXT read back by their parsers, and a label that never leaves a one-word first line."""

from dataclasses import FrozenInstanceError, replace

import pysubs2
import pytest
import srt
import webvtt

from tests.cue_helpers import MONOLOGUE, transcript_of, words_of
from whisper_subtitler.cues import CueOptions, build_cues
from whisper_subtitler.cues.labels import SpeakerStyle, line_prefixes, speaker_label
from whisper_subtitler.cues.linebreak import layout, tokenize
from whisper_subtitler.cues.stats import shown_lines
from whisper_subtitler.cues.width import display_width
from whisper_subtitler.writers import WriterOptions, render

A, B, C = "SPEAKER_00", "SPEAKER_01", "SPEAKER_02"
STYLES = [s.value for s in SpeakerStyle]


def options(style: str) -> CueOptions:
    return CueOptions(speaker_style=style)


def conversation():
    """Long turns (none fits one line, so no dialogue cue), same-speaker continuations after a pause, three
    speakers: 11 turns, 7 speaker changes."""
    plan = [
        (A, MONOLOGUE + ".", 0.3),
        (B, "That sounds like a plan, but what do we do about the recordings that are noisy?", 0.3),
        (B, "Some of them have music underneath the voices for the whole hour.", 1.6),  # same speaker, pause
        (A, "We clean them first and then we run the model on every one of them again.", 0.4),
        (C, "I can help with the cleaning if somebody shows me where the files are stored.", 0.4),
        (C, "I have done this kind of work before for the radio station downtown.", 2.0),
        (A, "Perfect, then you take the first half of the folder and I take the rest of it.", 0.3),
        (B, "And I will write the report about everything we found in the recordings.", 0.3),
        (B, "It should be ready by the end of next week if nothing goes wrong with it.", 1.5),
        (A, "Good, then we meet again next Friday morning in the big meeting room upstairs.", 0.3),
        (C, "See you then, and thank you all for coming in so early today to talk.", 0.3),
    ]
    words, t = [], 0.5
    for speaker, text, gap in plan:
        ws = words_of(text, t, speaker=speaker)
        words += ws
        t = ws[-1].end + gap
    return transcript_of(words)


def exchange(gap: float = 0.3, first: str = "Are you ready?", second: str = "Yes, I am."):
    """A long sentence of A, a pause, then a quick exchange A/B, a pause, and a long answer of B."""
    intro = words_of("Welcome back to the show, it is good to have you here with us tonight.", 0.0, speaker=A)
    q = words_of(first, intro[-1].end + 1.5, speaker=A)
    r = words_of(second, q[-1].end + gap, speaker=B)
    tail = words_of("Then let us talk about the first question of the evening right away.", r[-1].end + 1.5, speaker=B)
    return transcript_of(intro, q + r, tail)


def speaker_changes(cues) -> int:
    return sum(a.speaker != b.speaker for a, b in zip(cues, cues[1:]))


# --- which cues carry the label -------------------------------------------------------------------------


def test_change_style_labels_the_first_cue_and_each_cue_after_a_speaker_change_only():
    transcript = conversation()
    cues = build_cues(transcript, options("change"))
    assert not any(c.dialogue for c in cues)
    assert len(cues) > 11  # several cues per turn: most cues carry no label
    labelled = [c for c in cues if c.prefixes]
    assert speaker_changes(cues) == 7
    assert len(labelled) == speaker_changes(cues) + 1
    assert cues[0].prefixes == (speaker_label(A),)
    for prev, cue in zip(cues, cues[1:]):
        assert bool(cue.prefixes) == (cue.speaker != prev.speaker)
        if cue.prefixes:
            assert cue.prefixes == (speaker_label(cue.speaker),)
    srt_text = render("srt", transcript, cues)
    assert sum(s.content.startswith("[SPEAKER_0") for s in srt.parse(srt_text)) == 8


def test_label_style_labels_every_cue_and_dash_and_none_label_none():
    transcript = conversation()
    labelled = build_cues(transcript, options("label"))
    assert all(c.prefixes == (speaker_label(c.speaker),) for c in labelled)
    for style in ("dash", "none"):
        assert not any(c.prefixes for c in build_cues(transcript, options(style)))


@pytest.mark.parametrize("style", STYLES)
def test_one_speaker_shows_no_label_and_no_dash_in_any_style(style):
    words = words_of("Are you ready?", 0.0, speaker=A)
    words += words_of("Yes, I am.", words[-1].end + 0.3, speaker=A)
    words += words_of(MONOLOGUE + ".", words[-1].end + 1.5, speaker=A)
    transcript = transcript_of(words)
    cues = build_cues(transcript, options(style))
    assert len(cues) >= 3
    assert all(not c.prefixes and not c.dialogue and c.shown_lines == c.lines for c in cues)
    srt_text = render("srt", transcript, cues)
    assert "[" not in srt_text and "- " not in srt_text
    assert "[" not in render("txt", transcript, cues, WriterOptions(speaker_style=style))
    captions = webvtt.from_string(render("vtt", transcript, cues)).captions
    assert [c.voice for c in captions] == [A] * len(cues)  # voice spans are metadata: kept
    assert all(not c.text.startswith(("[", "- ")) for c in captions)


def test_no_speakers_no_label_in_label_style():
    transcript = transcript_of(words_of(MONOLOGUE + ".", 0.0))
    cues = build_cues(transcript, options("label"))
    assert all(not c.prefixes for c in cues) and "<v" not in render("vtt", transcript, cues)


# --- dialogue cues ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("style", ["change", "dash"])
def test_two_short_utterances_of_two_speakers_make_one_dialogue_cue(style):
    transcript = exchange()
    cues = build_cues(transcript, options(style))
    dialogue = [c for c in cues if c.dialogue]
    assert len(dialogue) == 1
    (cue,) = dialogue
    assert cue.lines == ("Are you ready?", "Yes, I am.")
    assert cue.shown_lines == ("- Are you ready?", "- Yes, I am.")
    assert cue.line_speakers == (A, B) and cue.speaker == A
    assert {w.speaker for w in cue.words} == {A, B}
    assert cue.end - cue.start >= CueOptions().min_duration
    (sub,) = [s for s in srt.parse(render("srt", transcript, cues)) if "ready" in s.content]
    assert sub.content.split("\n") == ["- Are you ready?", "- Yes, I am."]
    # In change style the cue after the dialogue keeps B's speaker: no label; the first cue has one.
    assert bool(cues[0].prefixes) == (style == "change")
    assert not cues[-1].prefixes


@pytest.mark.parametrize("style", ["label", "none"])
def test_label_and_none_styles_form_no_dialogue_cue(style):
    cues = build_cues(exchange(), options(style))
    assert not any(c.dialogue for c in cues)
    assert [c.lines for c in cues if "ready" in c.text or "I am" in c.text] == [("Are you ready?",), ("Yes, I am.",)]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"gap": 1.2},  # a pause of `pause` (1 s) or more between them
        {"first": "Are you ready to go to the station with all of your bags now?"},  # first does not fit a line
        {"first": "So are you"},  # not a self-contained sentence
        {"second": "Yes, I am and"},
    ],
)
def test_no_dialogue_cue_when_the_rules_do_not_allow_it(kwargs):
    cues = build_cues(exchange(**kwargs), options("change"))
    assert not any(c.dialogue for c in cues)
    assert all(len({w.speaker for w in c.words}) == 1 for c in cues)


def test_dialogue_lines_fit_the_width_with_their_dash_and_are_the_first_line_after_a_label():
    transcript = exchange(first="Did you bring everything that we need?", second="I think so, yes.")
    cues = build_cues(transcript, CueOptions(max_line_width=40))
    (cue,) = [c for c in cues if c.dialogue]
    assert all(display_width(line) <= 40 for line in cue.shown_lines)
    cues = build_cues(transcript, CueOptions(max_line_width=38))  # "- Did you ... need?" is 40 columns
    assert not any(c.dialogue for c in cues)


# --- each style in each format, read back by its parser ----------------------------------------------------


@pytest.mark.parametrize("style", STYLES)
def test_each_style_in_srt_vtt_ass_and_txt(style):
    transcript = exchange()
    cues = build_cues(transcript, options(style))
    wopt = WriterOptions(speaker_style=style)

    subs = list(srt.parse(render("srt", transcript, cues, wopt)))
    assert [s.content for s in subs] == ["\n".join(c.shown_lines) for c in cues]
    labels = [s.content.startswith("[") for s in subs]
    dashes = [s.content.startswith("- ") for s in subs]
    assert sum(labels) == {"change": 1, "dash": 0, "label": len(cues), "none": 0}[style]
    assert sum(dashes) == (1 if style in ("change", "dash") else 0)

    vtt_text = render("vtt", transcript, cues, wopt)
    captions = webvtt.from_string(vtt_text).captions
    assert len(captions) == len(cues)
    assert [c.voice for c in captions] == [c.speaker for c in cues]  # a voice span on every cue, every style
    for caption, cue in zip(captions, cues):
        if cue.dialogue:
            assert caption.raw_text == f"<v {A}>- Are you ready?</v>\n<v {B}>- Yes, I am.</v>"
        else:
            assert caption.raw_text == f"<v {cue.speaker}>" + "\n".join(cue.shown_lines) + "</v>"
    assert vtt_text.count("<v ") == vtt_text.count("</v>")

    ass = pysubs2.SSAFile.from_string(render("ass", transcript, cues, wopt))
    assert {A, B} <= set(ass.styles)
    assert [e.plaintext.split("\n") for e in ass.events] == [list(c.shown_lines) for c in cues]
    assert [e.style for e in ass.events] == [c.speaker for c in cues]
    for event, cue in zip(ass.events, cues):
        if cue.dialogue:  # the second line in B's colour, the event named after both
            colour = ass.styles[B].primarycolor
            assert f"\\N{{\\c&H{colour.b:02X}{colour.g:02X}{colour.r:02X}&}}- Yes, I am." in event.text
            assert event.name == f"{A} / {B}"

    txt = render("txt", transcript, cues, wopt).splitlines()
    expected = {
        "change": [f"[{A}]: Welcome", "Are you", f"[{B}]: Yes", "Then"],
        "dash": ["- Welcome", "Are you", "- Yes", "Then"],
        "label": [f"[{A}]: Welcome", f"[{A}]: Are you", f"[{B}]: Yes", f"[{B}]: Then"],
        "none": ["Welcome", "Are you", "Yes", "Then"],
    }[style]
    assert len(txt) == 4 and all(line.startswith(start) for line, start in zip(txt, expected))


def test_line_prefixes_of_a_plain_transcript():
    speakers = [A, A, B, None, B, A]
    assert line_prefixes(speakers, "change") == [
        "[SPEAKER_00]: ",
        "",
        "[SPEAKER_01]: ",
        "",
        "[SPEAKER_01]: ",
        "[SPEAKER_00]: ",
    ]
    assert line_prefixes(speakers, "dash") == ["- ", "", "- ", "", "- ", "- "]
    assert line_prefixes([A, A], "label") == ["", ""]


def test_invalid_style_is_a_usage_error():
    from whisper_subtitler.errors import UsageError

    with pytest.raises(UsageError):
        CueOptions(speaker_style="names")


# --- a label never leaves a one-word first line ------------------------------------------------------------

LONG_NAME = "Dr. Alexandra Montgomery-Smith"  # a 34-column label: the balanced break would be after one word


@pytest.mark.parametrize(
    "text",
    [
        "So we begin with the first question tonight.",
        "Well, I think that is exactly what happened.",
        "Yes, we should probably go home right now.",
    ],
)
def test_layout_with_a_label_keeps_two_words_on_the_first_line(text):
    tokens = tokenize([" " + w for w in text.split()], False)
    lay = layout(tokens, max_width=42, max_lines=2, first_line_indent=display_width(speaker_label(LONG_NAME)))
    assert lay is not None and len(lay.lines) == 2
    assert len(lay.lines[0].split()) >= 2
    assert display_width(speaker_label(LONG_NAME) + lay.lines[0]) <= 42


@pytest.mark.parametrize("name", [LONG_NAME, A])
def test_labelled_cues_never_have_a_one_word_first_line(name):
    sentences = [
        "So we begin with the first question tonight.",
        "Yes, we should probably go home right now.",
        "Well, I think that is exactly what happened.",
        "Oh, that is not what I wanted to hear today.",
    ]
    words, t = [], 0.0
    for k, s in enumerate(sentences * 2):
        ws = words_of(s, t, speaker=name if k % 2 == 0 else "Bo")
        words += ws
        t = ws[-1].end + 0.3
    opt = options("label")
    cues = build_cues(transcript_of(words), opt)
    assert all(c.prefixes for c in cues)
    for cue in cues:
        assert all(display_width(line) <= opt.max_line_width for line in shown_lines(cue))
        if len(cue.lines) > 1:
            assert len(cue.lines[0].split()) >= 2, cue.shown_lines


def test_change_style_reserves_room_only_on_labelled_cues():
    transcript = conversation()
    change = build_cues(transcript, options("change"))
    none = build_cues(transcript, options("none"))
    assert all(display_width(line) <= 42 for c in change for line in c.shown_lines)
    # Unlabelled cues may use the full width: some line of an unlabelled cue is wider than 42 - label.
    room = 42 - display_width(speaker_label(A))
    assert any(display_width(c.lines[0]) > room for c in change if not c.prefixes)
    assert len(change) <= len(build_cues(transcript, options("label")))
    assert len(none) <= len(change)


def test_format_command_applies_the_style(tmp_path):
    from typer.testing import CliRunner

    from whisper_subtitler.cli import app

    transcript = exchange()
    path = tmp_path / "talk.json"
    path.write_text(render("json", transcript, build_cues(transcript)), encoding="utf-8")
    out = {}
    for style in ("dash", "label"):
        result = CliRunner().invoke(
            app, ["format", str(path), "-f", "srt,txt", "-o", str(tmp_path / style), "--speaker-style", style]
        )
        assert result.exit_code == 0, result.output
        out[style] = [s.content for s in srt.parse((tmp_path / style / "talk.srt").read_text(encoding="utf-8"))]
    assert "- Are you ready?\n- Yes, I am." in out["dash"] and not any("[" in c for c in out["dash"])
    assert all(c.startswith("[SPEAKER_0") for c in out["label"])
    assert (tmp_path / "label" / "talk.txt").read_text().count("[SPEAKER_0") == 4
    bad = CliRunner().invoke(app, ["format", str(path), "--speaker-style", "names"])
    assert bad.exit_code == 2


def test_replace_keeps_cue_frozen():
    (cue,) = [c for c in build_cues(exchange()) if c.dialogue]
    with pytest.raises(FrozenInstanceError):
        cue.lines = ()  # type: ignore[misc]
    assert replace(cue, prefixes=()).shown_lines == cue.lines


# --- end to end on real speech -----------------------------------------------------------------------------


@pytest.mark.slow
def test_cli_on_real_two_speaker_speech_labels_speaker_changes_only(cli, tmp_path):
    """pyannote's sample.wav (a real two-speaker phone call), tiny.en, default ``change`` style: the SRT
    labels exactly the first cue and the cues after a speaker change (speakers read back from the WebVTT
    voice spans, kept on every cue); ``format --speaker-style label`` then labels every cue."""
    import re
    import shutil

    from tests import media

    source = shutil.copy(media.SAMPLE_WAV, tmp_path / "sample.wav")
    result = cli(
        "transcribe",
        str(source),
        "--diarize",
        "--format",
        "srt,vtt,txt,json",
        "--model",
        "tiny.en",
        "--output-dir",
        str(tmp_path / "out"),
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    out = tmp_path / "out"
    subs = list(srt.parse((out / "sample.srt").read_text(encoding="utf-8")))
    captions = webvtt.from_string((out / "sample.vtt").read_text(encoding="utf-8")).captions
    assert len(subs) == len(captions) >= 5
    voices = [re.findall(r"<v ([^>]+)>", c.raw_text) for c in captions]
    assert all(voices) and len({v for vs in voices for v in vs}) == 2
    previous = None
    for k, (sub, vs) in enumerate(zip(subs, voices)):
        lines = sub.content.split("\n")
        if len(vs) == 2:  # a dialogue cue: one voice and one dash per line
            assert len(lines) == 2 and all(line.startswith("- ") for line in lines) and vs[0] != vs[1]
        else:
            labelled = k == 0 or vs[0] != previous
            assert sub.content.startswith(f"[{vs[0]}]: ") == labelled, (k, sub.content, previous)
            assert sub.content.count("]: ") == int(labelled)
        previous = vs[-1]
    changes = sum(a[-1] != b[0] for a, b in zip(voices, voices[1:]))
    assert changes >= 2 and len(subs) > changes + 1  # some cues carry no label
    if not any(len(vs) == 2 for vs in voices):  # no dialogue cue: labels = speaker changes + the first cue
        assert sum(s.content.startswith("[") for s in subs) == changes + 1

    # TXT: the label at the first line and at each change of speaker (speakers from the JSON transcript).
    from whisper_subtitler.writers import read_transcript
    from whisper_subtitler.writers.txt import speaker_runs

    transcript = read_transcript(out / "sample.json")
    speakers = [sp for seg in transcript.segments for sp, text in speaker_runs(seg) if text.strip()]
    txt = (out / "sample.txt").read_text(encoding="utf-8").splitlines()
    assert len(txt) == len(speakers)
    for k, line in enumerate(txt):
        assert line.startswith(f"[{speakers[k]}]: ") == (k == 0 or speakers[k] != speakers[k - 1]), line

    result = cli(
        "format", str(out / "sample.json"), "-f", "srt", "-o", str(tmp_path / "label"), "--speaker-style", "label"
    )
    assert result.returncode == 0, result.stderr
    relabelled = list(srt.parse((tmp_path / "label" / "sample.srt").read_text(encoding="utf-8")))
    assert relabelled and all(re.match(r"\[SPEAKER_0\d\]: ", s.content) for s in relabelled)

    # check (issue 29): no orphan word or unbalanced lines, with the labels counted in the width, in any style.
    from tests.cue_helpers import assert_check_passes

    for path in (out / "sample.srt", out / "sample.vtt", tmp_path / "label" / "sample.srt"):
        assert_check_passes(path)


def test_transcribe_takes_the_style_for_cues_and_txt():
    from typer.testing import CliRunner

    from whisper_subtitler.cli import app, subtitle_options

    cue_options, writer_options = subtitle_options(
        max_line_width=42,
        max_lines=2,
        max_cps=17.0,
        fps=24.0,
        word_level=False,
        bom=False,
        crlf=False,
        speaker_style="dash",
    )
    assert cue_options.speaker_style == writer_options.speaker_style == "dash"
    assert (
        subtitle_options(
            max_line_width=42, max_lines=2, max_cps=17.0, fps=24.0, word_level=False, bom=False, crlf=False
        )[0].speaker_style
        == "change"
    )  # the default
    result = CliRunner().invoke(app, ["transcribe", "x.wav", "--speaker-style", "names"])
    assert result.exit_code == 2
