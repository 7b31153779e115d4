"""The RTTM writer: exact lines, field escaping, and a round trip through pyannote's RTTM reader."""

from __future__ import annotations

import logging

from whisper_subtitler.types import SpeakerTurn, Transcript
from whisper_subtitler.writers import FORMATS, WriterOptions, encode, render


def transcript(turns, source="/media/My Talk.mp4") -> Transcript:
    return Transcript(segments=(), language="en", duration=30.0, source=source, turns=tuple(turns))


def test_rttm_is_registered_and_not_cue_based():
    assert FORMATS["rttm"].extension == "rttm" and FORMATS["rttm"].cue_based is False


def test_one_speaker_line_per_turn_sorted_with_millisecond_times():
    turns = [
        SpeakerTurn(10.4597, 14.7459, "SPEAKER_01"),
        SpeakerTurn(6.7303, 7.1691, "SPEAKER_00"),
        SpeakerTurn(10.4597, 10.9828, "SPEAKER_00"),
    ]
    assert render("rttm", transcript(turns), ()) == (
        "SPEAKER My_Talk 1 6.730 0.439 <NA> <NA> SPEAKER_00 <NA> <NA>\n"
        "SPEAKER My_Talk 1 10.460 0.523 <NA> <NA> SPEAKER_00 <NA> <NA>\n"
        "SPEAKER My_Talk 1 10.460 4.286 <NA> <NA> SPEAKER_01 <NA> <NA>\n"
    )


def test_spaces_in_speaker_names_become_underscores_and_no_bom():
    text = render("rttm", transcript([SpeakerTurn(0.0, 1.5, "Dr. Ann  Lee")], source=""), ())
    assert text == "SPEAKER audio 1 0.000 1.500 <NA> <NA> Dr._Ann_Lee <NA> <NA>\n"
    assert encode(text, "rttm", WriterOptions(bom=True)).startswith(b"SPEAKER")


def test_without_turns_the_file_is_empty_and_a_warning_says_why(caplog):
    with caplog.at_level(logging.WARNING):
        assert render("rttm", transcript([]), ()) == ""
    assert "--diarize" in caplog.text


def test_round_trip_through_pyannote_reader(tmp_path):
    from pyannote.database.util import load_rttm

    turns = [SpeakerTurn(0.5, 2.25, "SPEAKER_00"), SpeakerTurn(2.0, 4.0, "SPEAKER_01"), SpeakerTurn(5, 6, "SPEAKER_00")]
    path = tmp_path / "talk.rttm"
    path.write_text(render("rttm", transcript(turns, source="talk.wav"), ()))
    annotation = load_rttm(str(path))["talk"]
    read = sorted(
        (round(s.start, 3), round(s.end, 3), label) for s, _, label in annotation.itertracks(yield_label=True)
    )
    assert read == [(0.5, 2.25, "SPEAKER_00"), (2.0, 4.0, "SPEAKER_01"), (5.0, 6.0, "SPEAKER_00")]
