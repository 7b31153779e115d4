"""ASS: loads in pysubs2, one style per speaker with its own colour, karaoke tags."""

import re

import pysubs2
import pytest

from tests.writer_cases import CASES, case
from whisper_subtitler.writers import WriterOptions, render


@pytest.mark.parametrize("name", CASES)
def test_loads_in_pysubs2(name):
    transcript, cues = case(name)
    subs = pysubs2.SSAFile.from_string(render("ass", transcript, cues))
    assert len(subs.events) == len(cues)
    for event, cue in zip(subs.events, cues):
        assert event.start == pytest.approx(cue.start * 1000, abs=10)
        assert event.end > event.start
        assert (
            event.plaintext.replace("\n", " ").split()
            == " ".join(cue.shown_lines).replace("{", "(").replace("}", ")").split()
        )


def test_one_style_per_speaker_with_its_own_colour():
    transcript, cues = case("tricky")
    subs = pysubs2.SSAFile.from_string(render("ass", transcript, cues))
    assert set(subs.styles) == {"Default", "SPEAKER_00", "SPEAKER_01"}
    assert subs.styles["SPEAKER_00"].primarycolor != subs.styles["SPEAKER_01"].primarycolor
    assert [e.style for e in subs.events] == [c.speaker for c in cues]


def test_karaoke_tags_cover_the_cue():
    transcript, cues = case("plain")
    text = render("ass", transcript, cues, WriterOptions(word_level=True))
    subs = pysubs2.SSAFile.from_string(text)
    for event, cue in zip(subs.events, cues):
        ks = [int(k) for k in re.findall(r"\{\\k(\d+)\}", event.text)]
        assert len(ks) >= len(cue.words)
        spoken = round(cue.words[-1].end * 100) - round(cue.start * 100)
        assert abs(sum(ks) - spoken) <= 1


def test_text_cannot_open_override_blocks():
    transcript, cues = case("tricky")
    text = render("ass", transcript, cues)
    events = [line for line in text.splitlines() if line.startswith("Dialogue:")]
    assert all("{" not in line for line in events)
