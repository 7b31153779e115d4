"""SRT: strict round trip through the ``srt`` library, speaker labels, escaping, BOM and CRLF."""

import pytest
import srt

from tests.writer_cases import CASES, case
from whisper_subtitler.writers import WriterOptions, encode, render


@pytest.mark.parametrize("name", CASES)
def test_round_trips_through_srt_library_unchanged(name):
    transcript, cues = case(name)
    text = render("srt", transcript, cues, WriterOptions())
    assert srt.compose(srt.parse(text)) == text
    parsed = list(srt.parse(text))
    assert len(parsed) == len(cues)
    for sub, cue in zip(parsed, cues):
        assert sub.start.total_seconds() == pytest.approx(cue.start, abs=5e-4)
        assert sub.end.total_seconds() == pytest.approx(cue.end, abs=5e-4)
        assert sub.end > sub.start


def test_speaker_label_starts_each_cue_in_label_style_and_text_is_literal():
    transcript, cues = case("tricky", "label")
    subs = list(srt.parse(render("srt", transcript, cues)))
    assert all(s.content.startswith(("[SPEAKER_00]: ", "[SPEAKER_01]: ")) for s in subs)
    body = "\n".join(s.content for s in subs)
    assert "-->" not in body and "<live>" in body and "&" in body


def test_timestamp_format():
    transcript, cues = case("plain")
    first = render("srt", transcript, cues).splitlines()[:2]
    end = round(cues[0].end * 1000)  # milliseconds
    assert first[0] == "1"
    assert first[1] == f"00:00:01,000 --> 00:00:{end // 1000:02d},{end % 1000:03d}" and end < 60_000


def test_no_label_without_speakers():
    transcript, cues = case("plain")
    assert "[" not in render("srt", transcript, cues)


def test_bom_and_crlf_are_optional():
    transcript, cues = case("plain")
    text = render("srt", transcript, cues)
    plain = encode(text, "srt", WriterOptions())
    assert not plain.startswith(b"\xef\xbb\xbf") and b"\r\n" not in plain
    both = encode(text, "srt", WriterOptions(bom=True, crlf=True))
    assert both.startswith(b"\xef\xbb\xbf") and b"\r\n" in both and b"\n" not in both.replace(b"\r\n", b"")
    assert srt.compose(srt.parse(both.decode("utf-8-sig")), eol="\r\n") == both.decode("utf-8-sig")
