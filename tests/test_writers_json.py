"""JSON: the full transcript, read back equal; openai-whisper's JSON read too; clear errors."""

import json
import math

import pytest

from tests.writer_cases import case
from whisper_subtitler.errors import InputError
from whisper_subtitler.types import SpeakerTurn
from whisper_subtitler.writers import WriterOptions, encode, read_transcript, render


def test_round_trip_gives_an_equal_transcript(tmp_path):
    transcript, cues = case("tricky")
    from dataclasses import replace

    transcript = replace(
        transcript,
        model="base",
        source="talk.mp4",
        turns=(SpeakerTurn(0.4, 4.0, "SPEAKER_00"), SpeakerTurn(4.0, 9.0, "SPEAKER_01")),
        timings={"transcribe": 1.25},
        shot_changes=(4.0, 11.48),
        fps=23.976,
    )
    path = tmp_path / "t.json"
    path.write_bytes(encode(render("json", transcript, cues), "json", WriterOptions(bom=True, crlf=True)))
    assert not path.read_bytes().startswith(b"\xef\xbb\xbf")  # never a BOM in JSON
    back = read_transcript(path)
    assert back == transcript  # timings are not compared (wall seconds): they are not written
    assert back.timings == {} and "timings" not in json.loads(path.read_text())
    data = json.loads(path.read_text())
    assert data["speakers"] == ["SPEAKER_00", "SPEAKER_01"]
    assert {"text", "start", "end", "probability", "speaker"} <= set(data["segments"][0]["words"][0])
    assert data["shot_changes"] == [4.0, 11.48] and data["fps"] == 23.976


def test_shot_changes_are_written_only_when_the_cues_were_timed_by_them(tmp_path):
    transcript, cues = case("plain")
    assert not {"shot_changes", "fps"} & set(json.loads(render("json", transcript, cues)))
    data = json.loads(render("json", transcript, cues))
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({**data, "shot_changes": [11.0, 4.0]}))
    with pytest.raises(InputError, match="shot_changes"):
        read_transcript(path)


def test_non_finite_times_become_null_and_are_read_back_as_missing(tmp_path):
    transcript, cues = case("plain")
    from dataclasses import replace

    seg = transcript.segments[0]
    words = (replace(seg.words[0], start=math.nan), *seg.words[1:])
    transcript = replace(transcript, segments=(replace(seg, words=words),))
    text = render("json", transcript, cues)
    assert "NaN" not in text
    path = tmp_path / "t.json"
    path.write_text(text)
    assert math.isnan(read_transcript(path).segments[0].words[0].start)


def test_reads_openai_whisper_json(tmp_path):
    path = tmp_path / "whisper.json"
    path.write_text(
        json.dumps(
            {
                "text": " Hello world.",
                "language": "en",
                "segments": [
                    {
                        "id": 0,
                        "start": 0.0,
                        "end": 1.5,
                        "text": " Hello world.",
                        "avg_logprob": -0.2,
                        "compression_ratio": 0.9,
                        "no_speech_prob": 0.01,
                        "words": [
                            {"word": " Hello", "start": 0.0, "end": 0.6, "probability": 0.9},
                            {"word": " world.", "start": 0.7, "end": 1.5, "probability": 0.8},
                        ],
                    }
                ],
            }
        )
    )
    t = read_transcript(path)
    assert t.language == "en" and t.duration == 1.5 and [w.text for w in t.words] == [" Hello", " world."]


@pytest.mark.parametrize(
    "content", ["not json", "[1, 2]", '{"segments": [{"start": "x"}]}', '{"schema": "other", "segments": []}']
)
def test_bad_files_raise_input_error(tmp_path, content):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(InputError):
        read_transcript(path)


def test_missing_file_raises_input_error(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        read_transcript(tmp_path / "absent.json")


def test_reads_whisperx_json_with_scores_and_speakers(tmp_path):
    path = tmp_path / "wx.json"
    path.write_text(
        json.dumps(
            {
                "segments": [
                    {
                        "start": 0.5,
                        "end": 1.4,
                        "text": " Hi there.",
                        "speaker": "SPEAKER_01",
                        "words": [
                            {"word": "Hi", "start": 0.5, "end": 0.7, "score": 0.8, "speaker": "SPEAKER_01"},
                            {"word": "there.", "score": 0.4},
                        ],
                    }
                ],
                "language": "en",
            }
        )
    )
    t = read_transcript(path)
    (w1, w2) = t.words
    assert (w1.probability, w1.speaker) == (0.8, "SPEAKER_01") and math.isnan(w2.start)
    assert t.speakers == ("SPEAKER_01",) and [w.text for w in t.words] == [" Hi", " there."]


def test_languages_of_segments_and_cues_are_written_and_read_back():
    import json

    from whisper_subtitler.cues import build_cues
    from whisper_subtitler.types import Segment, Transcript, Word
    from whisper_subtitler.writers import render, transcript_from_dict

    words = (Word(" Hola", 0.0, 0.4, language="es"), Word(" mundo.", 0.5, 0.9, language="es"))
    english = (Word(" Hello.", 2.0, 2.5, language="en"),)
    segments = (
        Segment(0.0, 0.9, " Hola mundo.", words, language="es"),
        Segment(2.0, 2.5, " Hello.", english, language="en"),
    )
    transcript = Transcript(segments, "es", 3.0)
    data = json.loads(render("json", transcript, build_cues(transcript)))
    assert data["language"] == "es"
    assert [s["language"] for s in data["segments"]] == ["es", "en"]
    assert [(c["lines"], c["language"]) for c in data["cues"]] == [(["Hola mundo."], "es"), (["Hello."], "en")]
    back = transcript_from_dict(data)
    assert back == transcript
    assert [w.language for w in back.words] == ["es", "es", "en"]
