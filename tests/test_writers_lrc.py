"""LRC (``-f lrc``): read back by lrcparser (PyPI, MIT: it parses enhanced LRC word tags and ID tags), its line and
word times equal to the cues' and words' (to the format's hundredths of a second); ID tags from ffprobe's tags."""

from __future__ import annotations

import subprocess
from dataclasses import replace
from itertools import zip_longest

import pytest

from tests.writer_cases import case
from whisper_subtitler.audio import ffmpeg_binary
from whisper_subtitler.writers import WriterOptions, render
from whisper_subtitler.writers.lrc import ANGLES, CLEAR_GAP, lrc_timestamp, shown_prefix

lrcparser = pytest.importorskip("lrcparser", reason="lrcparser is in the test extra")


def seconds(time) -> float:
    """lrcparser's ``LrcTime`` in seconds."""
    return float(time)


def centi(t: float) -> float:
    """A time as LRC writes it: hundredths of a second."""
    return ((round(t * 1000) + 5) // 10) / 100


def parsed(text: str) -> dict:
    return lrcparser.LrcParser.parse(text)


@pytest.mark.parametrize("name", ["tricky", "plain", "japanese"])
def test_line_times_are_the_cue_starts_and_ends(name):
    transcript, cues = case(name)
    result = parsed(render("lrc", transcript, cues))
    lines = [(seconds(line.start_time), str(line.text)) for line in result["lrc_lines"]]
    expected = []
    for k, cue in enumerate(cues):
        expected.append(centi(cue.start))
        if k + 1 == len(cues) or cues[k + 1].start - cue.end >= CLEAR_GAP:
            expected.append(centi(cue.end))  # an empty line clears the cue before a pause
    assert [t for t, _ in lines] == pytest.approx(expected, abs=1e-9)
    texts = [text for _, text in lines if text]
    assert len(texts) == len(cues)
    joiner = "" if transcript.language == "ja" else " "
    assert texts == [
        joiner.join(shown_prefix(p) + line for p, line in zip_longest(c.prefixes, c.lines, fillvalue="")) for c in cues
    ]
    assert result["attributes"]["length"] == lrc_timestamp(transcript.duration)


@pytest.mark.parametrize("name", ["tricky", "japanese"])
def test_word_tags_are_the_word_starts(name):
    transcript, cues = case(name)
    result = parsed(render("lrc", transcript, cues, WriterOptions(word_level=True)))
    shown = [line for line in result["lrc_lines"] if str(line.text)]
    assert len(shown) == len(cues)
    for line, cue in zip(shown, cues):
        assert seconds(line.start_time) == pytest.approx(centi(cue.start))
        segments = list(line.text)
        assert [seconds(s.time) for s in segments] == pytest.approx([centi(w.start) for w in cue.words])
        assert [s.text.strip() for s in segments] == [
            (shown_prefix(cue.prefixes[0]) if k == 0 and cue.prefixes else "") + w.text.strip().translate(ANGLES)
            for k, w in enumerate(cue.words)
        ]


def test_artist_and_title_come_from_the_media_tags(tmp_path):
    wav = tmp_path / "song.wav"
    subprocess.run(
        [ffmpeg_binary(), "-v", "error", "-f", "lavfi", "-i", "anullsrc=r=16000:cl=mono", "-t", "1"]
        + ["-metadata", "artist=Ada Lovelace", "-metadata", "title=Notes on the Engine", str(wav)],
        check=True,
    )
    transcript, cues = case("plain")
    text = render("lrc", replace(transcript, source=str(wav)), cues)
    attributes = parsed(text)["attributes"]
    assert attributes["ar"] == "Ada Lovelace" and attributes["ti"] == "Notes on the Engine"
    assert "[ar:" not in render("lrc", replace(transcript, source=str(tmp_path / "gone.wav")), cues)


def test_timestamps_past_an_hour_keep_counting_minutes():
    assert lrc_timestamp(0.0) == "00:00.00"
    assert lrc_timestamp(61.234) == "01:01.23"
    assert lrc_timestamp(3725.996) == "62:06.00"
