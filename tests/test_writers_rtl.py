"""Right-to-left subtitles (Arabic, Hebrew): every line shows as a right-to-left paragraph, punctuation and numbers
where a reader of the language expects them, whatever base direction the player takes (checked with python-bidi, the
Unicode Bidirectional Algorithm of the Rust crate unicode-bidi); the VTT accepted by W3C's webvtt-parser with its
``<lang>`` spans; ASS styles that let libass take the direction from the text. Hand-made word timings test the
writers; the last test transcribes Hebrew and Arabic speech (espeak-ng) with the default model, end to end."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pysubs2
import pytest
import srt

from tests.cue_helpers import transcript_of, words_of
from whisper_subtitler.cues import CueOptions, build_cues
from whisper_subtitler.cues.width import display_width
from whisper_subtitler.quality import check_cues, read_subtitles
from whisper_subtitler.writers import render
from whisper_subtitler.writers.bidi import OPEN, PDF, RLM, mark

bidi = pytest.importorskip("bidi", reason="python-bidi is in the test extra")

ARABIC_A = "اتصل بي الساعة 10 صباحا. هل أنت بخير؟"
ARABIC_B = "نعم، شكرا جزيلا. رقمي هو 555 1234."
HEBREW = "GPS לא עובד? 3 תפוחים על השולחן. שלום, מה שלומך?"
TAGS = re.compile(r"<[^>]*>")
MARKS = re.compile("[\u200e\u200f\u202a-\u202e]")


def in_language(words, language):
    return [replace(w, language=language) for w in words]


def arabic_dialogue():
    a = in_language(words_of(ARABIC_A, 0.5, speaker="SPEAKER_00"), "ar")
    b = in_language(words_of(ARABIC_B, a[-1].end + 0.3, speaker="SPEAKER_01"), "ar")
    transcript = transcript_of(a, b, language="ar")
    return transcript, build_cues(transcript)


def hebrew():
    transcript = transcript_of(in_language(words_of(HEBREW, 0.5), "he"), language="he")
    return transcript, build_cues(transcript)


def shows_right_to_left(line: str) -> bool:
    """Whether ``line`` (as written, marks included) displays as the right-to-left paragraph of its text under a
    left-to-right, a right-to-left and a first-strong-character base direction alike."""
    expected = bidi.get_display(MARKS.sub("", line), base_dir="R")
    shown = [MARKS.sub("", bidi.get_display(line, base_dir=d)) for d in ("L", "R")]
    return shown == [expected, expected] and MARKS.sub("", bidi.get_display(line)) == expected


def test_unmarked_lines_break_in_a_left_to_right_player_and_marked_ones_do_not():
    for line in ("שלום, מה שלומך?", "3 תפוחים על השולחן.", "GPS לא עובד?", "اتصل بي الساعة 10."):
        assert not shows_right_to_left(line)
        assert shows_right_to_left(mark(line))
    assert mark("") == "" and mark(mark("שלום")) == mark("שלום")
    assert display_width(mark("שלום")) == 4  # the marks take no room


@pytest.mark.parametrize("make", [arabic_dialogue, hebrew])
def test_srt_lines_show_right_to_left_and_parse(make, tmp_path):
    transcript, cues = make()
    text = render("srt", transcript, cues)
    assert srt.compose(srt.parse(text)) == text
    lines = [line for sub in srt.parse(text) for line in sub.content.splitlines()]
    assert lines and all(line.startswith(OPEN) and line.endswith(PDF) for line in lines)
    assert all(shows_right_to_left(line) for line in lines)
    path = tmp_path / "rtl.srt"
    path.write_text(text, encoding="utf-8")
    faults = check_cues(read_subtitles(path).cues, language=transcript.language)
    assert not [f for f in faults if f.kind in ("line_width", "orphan", "unbalanced")]  # marks are not counted


def webvtt_report(path: Path) -> dict:
    """W3C's webvtt-parser (npm, installed under .venv/node by make install-test) on ``path``."""
    node, parser = shutil.which("node"), Path(os.environ.get("WEBVTT_PARSER_DIR", ".venv/node/node_modules"))
    if node is None or not (parser / "webvtt-parser").is_dir():
        pytest.skip("node or npm's webvtt-parser is missing (make install-test installs the parser)")
    checker = Path(__file__).with_name("webvtt_check.js")
    env = {**os.environ, "NODE_PATH": str(parser.resolve())}
    done = subprocess.run([node, str(checker), str(path)], capture_output=True, text=True, check=True, env=env)
    return json.loads(done.stdout)


@pytest.mark.parametrize("make", [arabic_dialogue, hebrew])
def test_vtt_lines_show_right_to_left_and_the_w3c_parser_accepts_them(make, tmp_path):
    transcript, cues = make()
    text = render("vtt", transcript, cues)
    blocks = text.split("\n\n")[1:-1]
    lines = [TAGS.sub("", line) for block in blocks for line in block.splitlines()[1:]]
    assert lines and all(shows_right_to_left(line) for line in lines)
    path = tmp_path / "rtl.vtt"
    path.write_text(text, encoding="utf-8")
    report = webvtt_report(path)
    assert report["errors"] == [] and report["cues"] == len(cues)


def test_an_arabic_cue_in_an_english_file_is_marked_inside_its_language_span(tmp_path):
    english = in_language(words_of("She said it in Arabic, and then she repeated it.", 0.5), "en")
    arabic = in_language(words_of(ARABIC_A, english[-1].end + 1.5), "ar")
    transcript = transcript_of(english, arabic, language="en")
    cues = build_cues(transcript)
    text = render("vtt", transcript, cues)
    assert f"<lang ar>{OPEN}" in text and f"{PDF}</lang>" in text
    english_lines = [c for c in cues if c.language == "en"]
    assert english_lines and RLM not in "".join(render("srt", transcript, english_lines))
    path = tmp_path / "mixed.vtt"
    path.write_text(text, encoding="utf-8")
    report = webvtt_report(path)
    assert report["errors"] == [] and report["langs"] == ["ar"] * sum(c.language == "ar" for c in cues)


def test_ass_styles_take_the_direction_from_the_text(tmp_path):
    transcript, cues = arabic_dialogue()
    path = tmp_path / "rtl.ass"
    path.write_text(render("ass", transcript, cues), encoding="utf-8")
    subs = pysubs2.load(str(path))
    assert {style.encoding for style in subs.styles.values()} == {-1}  # libass: base direction from the text
    assert {style.alignment for style in subs.styles.values()} == {pysubs2.Alignment.BOTTOM_CENTER}
    for event in subs.events:
        for line in event.plaintext.splitlines():
            assert line.startswith(OPEN) and line.endswith(PDF) and shows_right_to_left(line)
    english = transcript_of(words_of("Hello there, how are you?", 0.5), language="en")
    plain = tmp_path / "en.ass"
    plain.write_text(render("ass", english, build_cues(english)), encoding="utf-8")
    assert {style.encoding for style in pysubs2.load(str(plain)).styles.values()} == {1}


def test_a_translation_is_not_marked():
    transcript, cues = arabic_dialogue()
    english = replace(transcript, task="translate")
    assert RLM not in render("srt", english, cues) and RLM not in render("vtt", english, cues)


def test_dialogue_dashes_and_labels_stay_at_the_start_of_the_line():
    transcript, cues = arabic_dialogue()
    labelled = build_cues(transcript, CueOptions(speaker_style="label"))
    for line in render("srt", transcript, labelled).splitlines():
        if RLM in line:
            assert line.startswith(OPEN + "[SPEAKER_0")  # shown on the right, where an RTL line starts


def test_a_hebrew_dialogue_cue_dashes_the_second_speaker_only_without_a_space(tmp_path):
    """Netflix's Hebrew guide, "Dual Speakers": a hyphen without a space before the second speaker's line only;
    Arabic keeps the template's hyphen and space on both lines. check reads both as dialogue cues."""
    question = in_language(words_of("מה השעה?", 0.5, speaker="SPEAKER_00"), "he")
    answer = in_language(words_of("שמונה בבוקר.", question[-1].end + 0.3, speaker="SPEAKER_01"), "he")
    transcript = transcript_of(question, answer, language="he")
    cues = build_cues(transcript)
    assert [c.prefixes for c in cues] == [("", "-")]
    lines = render("srt", transcript, cues).splitlines()[2:4]
    assert lines == [mark("מה השעה?"), mark("-שמונה בבוקר.")]
    assert all(shows_right_to_left(line) for line in lines)
    assert bidi.get_display(MARKS.sub("", lines[1]), base_dir="R").endswith("-")  # the dash shows on the right
    asked = in_language(words_of("هل أنت بخير؟", 0.5, speaker="SPEAKER_00"), "ar")
    arabic = transcript_of(asked, in_language(words_of("نعم، شكرا.", asked[-1].end + 0.3, speaker="SPEAKER_01"), "ar"))
    arabic = replace(arabic, language="ar")
    arabic_cues = build_cues(arabic)
    assert [c.prefixes for c in arabic_cues] == [("- ", "- ")]
    for name, (t, c) in {"he": (transcript, cues), "ar": (arabic, arabic_cues)}.items():
        path = tmp_path / f"{name}.srt"
        path.write_text(render("srt", t, c), encoding="utf-8")
        faults = check_cues(read_subtitles(path).cues, language=t.language)
        assert not [f for f in faults if f.kind in ("orphan", "unbalanced")], faults


# Transcribed speech: espeak-ng reads a Hebrew and an Arabic text, Whisper (the default model) writes them.
SPOKEN = {
    "he": "שלום, מה שלומך? יש שלושה תפוחים על השולחן. האוטובוס יוצא בשעה שמונה בבוקר.",
    "ar": "مرحبا، كيف حالك؟ عندي ثلاثة تفاحات على الطاولة. الحافلة تغادر في الساعة الثامنة صباحا.",
}


@pytest.mark.slow
def test_transcribed_hebrew_and_arabic_speech_shows_right_to_left(tmp_path):
    """The language given (-l he / -l ar; espeak-ng's voices are too far from real speech for the base model to
    tell them from English): each run's SRT and VTT lines are in the language's script, marked, and show right to
    left under any base direction; srt and W3C's parser read them back. Greedy decoding only: the model is unsure
    of this synthetic speech (mean log-probability near -1), and the temperature fallback would sample it five
    times at each of six temperatures for the same test."""
    from dataclasses import replace as with_options

    from tests.media import espeak
    from whisper_subtitler import Subtitler
    from whisper_subtitler.writers.bidi import mostly_rtl

    first = Subtitler(diarize=False, device="cpu")
    for language, text in SPOKEN.items():
        wav = espeak(text, tmp_path / f"{language}.wav", voice=language)
        decoding = with_options(first.decoding, language=language, temperatures=(0.0,))
        result = first.replace(decoding=decoding).run(wav)
        assert result.transcript.language == language and result.cues
        srt_text = result.render("srt")
        lines = [line for sub in srt.parse(srt_text) for line in sub.content.splitlines()]
        assert all(line.startswith(OPEN) and line.endswith(PDF) for line in lines), lines
        assert all(mostly_rtl(line) and shows_right_to_left(line) for line in lines), lines
        vtt = result.write(tmp_path / f"{language}.vtt")
        blocks = vtt.read_text(encoding="utf-8").split("\n\n")[1:-1]
        vtt_lines = [TAGS.sub("", line) for block in blocks for line in block.splitlines()[1:]]
        assert vtt_lines == lines  # the same marked lines in both formats
        report = webvtt_report(vtt)
        assert report["errors"] == [] and report["cues"] == len(result.cues)
