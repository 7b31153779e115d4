"""WebVTT: header, escaping, voices read back by webvtt-py, karaoke timestamp tags."""

import html
import re

import pytest
import webvtt

from tests.writer_cases import CASES, case
from whisper_subtitler.writers import WriterOptions, render


def parse(text):
    return webvtt.from_string(text)


def seconds(stamp: str) -> float:
    h, m, s = stamp.split(":")
    return int(h) * 3600 + int(m) * 60 + float(s)


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("word_level", [False, True])
def test_parses_with_webvtt_py(name, word_level):
    transcript, cues = case(name)
    text = render("vtt", transcript, cues, WriterOptions(word_level=word_level))
    assert text.startswith("WEBVTT\n\n")
    captions = parse(text).captions
    assert len(captions) == len(cues)
    starts = [seconds(c.start) for c in captions]
    assert starts == sorted(starts)
    assert all(seconds(c.end) > seconds(c.start) for c in captions)
    assert [seconds(c.start) for c in captions] == [round(c.start, 3) for c in cues]


def test_voices_are_read_back_on_every_cue_and_closed():
    transcript, cues = case("tricky")
    text = render("vtt", transcript, cues)
    captions = parse(text).captions
    assert [c.voice for c in captions] == [c.speaker for c in cues]
    assert text.count("<v ") == text.count("</v>") == len(cues)


def test_text_is_escaped_and_never_holds_an_arrow_in_cue_text():
    transcript, cues = case("tricky")
    text = render("vtt", transcript, cues)
    body = [line for line in text.splitlines()[2:] if line and not re.match(r"^\d\d:\d\d:\d\d\.\d{3} --> ", line)]
    assert body and not any("-->" in line for line in body)
    assert "&amp;" in text and "&lt;live&gt;" in text
    assert "Rock & roll <live>" in html.unescape(" ".join(c.text for c in parse(text).captions))


def test_word_level_timestamps_are_inside_the_cue_and_increasing():
    transcript, cues = case("plain")
    text = render("vtt", transcript, cues, WriterOptions(word_level=True))
    blocks = text.split("\n\n")[1:-1]
    assert len(blocks) == len(cues)
    tag = re.compile(r"<(\d\d):(\d\d):(\d\d)\.(\d{3})>")
    for block, cue in zip(blocks, cues):
        stamps = [int(h) * 3600 + int(m) * 60 + int(s) + int(ms) / 1000 for h, m, s, ms in tag.findall(block)]
        assert stamps, block
        assert stamps == sorted(set(stamps))
        assert cue.start < stamps[0] and stamps[-1] < cue.end
        assert block.count("<c>") == block.count("</c>") == len(cue.words)


def test_no_voice_span_without_speakers():
    transcript, cues = case("plain")
    assert "<v" not in render("vtt", transcript, cues)


def _bilingual(task: str = "transcribe"):
    from whisper_subtitler.cues import build_cues
    from whisper_subtitler.types import Segment, Transcript, Word

    def segment(start, words, language):
        ws = tuple(
            Word(f" {w}", start + 0.4 * i, start + 0.4 * i + 0.3, language=language) for i, w in enumerate(words)
        )
        return Segment(ws[0].start, ws[-1].end, "".join(w.text for w in ws), ws, language=language)

    segments = (
        segment(0.0, ["Good", "morning", "everyone."], "en"),
        segment(3.0, ["Buenos", "días", "a", "todos."], "es"),
        segment(6.0, ["Thank", "you."], "en"),
    )
    transcript = Transcript(segments, "en", 8.0, task=task)
    return transcript, build_cues(transcript)


def test_cues_in_another_language_get_a_cue_language_span():
    transcript, cues = _bilingual()
    assert [c.language for c in cues] == ["en", "es", "en"]
    text = render("vtt", transcript, cues)
    assert text.count("<lang es>") == 1 and text.count("</lang>") == 1 and "<lang en>" not in text
    assert "<lang es>Buenos días a todos.</lang>" in text
    assert [c.text for c in parse(text).captions][1] == "Buenos días a todos."  # webvtt-py reads the text inside


def test_a_translation_has_no_language_spans():
    transcript, cues = _bilingual("translate")
    assert "<lang" not in render("vtt", transcript, cues)
