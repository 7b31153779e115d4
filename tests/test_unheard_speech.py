"""Speech that got no words is reported (``quality.coverage``): pure rules, and a real file whose clip the
sequential path drops, which the run names on stderr and in ``--json``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from whisper_subtitler.quality.coverage import clock, describe, unheard_speech


def test_speech_covered_by_words_is_not_reported():
    speech = [(0.0, 5.0), (6.0, 9.0)]
    words = [(0.2, 0.6), (0.7, 1.5), (1.9, 3.0), (3.1, 4.6), (6.2, 8.8)]
    assert unheard_speech(speech, words) == ()


def test_a_stretch_of_a_second_or_more_without_words_is_reported():
    speech = [(0.0, 8.0)]
    words = [(0.2, 0.6), (0.7, 2.0), (6.0, 7.5)]  # nothing from 2.0 to 6.0
    assert unheard_speech(speech, words) == ((2.5, 5.5),)  # each word reaches 0.5 s to either side


def test_short_gaps_and_speech_without_any_word():
    assert unheard_speech([(0.0, 3.0)], [(0.2, 1.0), (2.2, 2.8)]) == ()  # 1.5 -> 1.7: too short
    assert unheard_speech([(1.0, 1.8), (4.0, 6.5)], []) == ((4.0, 6.5),)  # a 0.8 s region: a breath, a laugh
    assert unheard_speech([(0.0, 4.0)], [(0.0, 4.0)], reach=0.0) == ()


def test_each_region_is_measured_on_its_own_and_words_outside_speech_do_not_count():
    speech = [(0.0, 2.0), (10.0, 14.0), (20.0, 21.0)]
    words = [(0.5, 1.5), (5.0, 6.0), (13.0, 13.8), (20.1, 20.9)]
    assert unheard_speech(speech, words) == ((10.0, 12.5),)


def test_overlapping_words_long_words_and_words_across_two_regions():
    speech = [(0.0, 6.0), (6.5, 12.0)]
    words = [(0.5, 4.0), (1.0, 1.5), (2.0, 2.5), (5.8, 6.8), (10.0, 10.5)]  # sorted by start, not by end
    assert unheard_speech(speech, words) == ((7.3, 9.5), (11.0, 12.0))  # (5.8, 6.8) reaches into both regions
    assert unheard_speech([(0.0, 10.0)], [(5.0, 6.0), (0.5, 1.0), (5.2, 5.4)]) == ((1.5, 4.5), (6.5, 10.0))


def test_the_line_says_how_many_how_long_and_where():
    assert clock(59.96) == "1:00.0"
    assert clock(75.25) == "1:15.2"
    assert clock(3723.0) == "1:02:03.0"
    line = describe([(11.0, 14.7), (60.0, 61.5), (70.0, 72.0), (80.0, 81.0)])
    assert line.startswith("4 stretches of speech (8.2 s) got no words, at 0:11.0-0:14.7, 1:00.0-1:01.5")
    assert line.endswith("and 1 more")
    assert describe([(1.0, 2.5)]).startswith("1 stretch of speech (1.5 s)")


def test_quiet_keeps_the_stretches_off_stderr(capsys):
    from whisper_subtitler.cli.app import report_result
    from whisper_subtitler.results import FileResult, FileStatus

    result = FileResult(source=Path("talk.wav"), status=FileStatus.DONE, unheard_speech=((11.0, 14.7),))
    report_result(result, quiet=False)
    assert "talk.wav: 1 stretch of speech (3.7 s) got no words, at 0:11.0-0:14.7" in capsys.readouterr().err
    report_result(result, quiet=True)
    assert capsys.readouterr().err == ""


@pytest.mark.slow
def test_a_clip_the_sequential_path_drops_is_named_on_stderr_and_in_the_json_summary(tmp_path, cli):
    """Hindi counting laid into a real English conversation: openai-whisper's ``transcribe()`` (``--no-batch``)
    writes nothing over its 3.7 s; the default path decodes that stretch again (``ChunkTranscriber._with_gaps``)
    and has words there."""
    from tests import media_multilingual as mm

    wav = tmp_path / "quote.wav"
    placed, _ = mm.in_conversation(wav, "hi/ginti", seed=5006)
    wide = {"COLUMNS": "400"}  # one log line on one line
    # the CPU's float32: on an H200 (TF32) openai-whisper kept words in this stretch, so the premise needs the CPU
    common = ("-f", "json", "--no-diarize", "--overwrite", "--json", "--gpu-backend", "cpu")
    dropped = cli("transcribe", str(wav), "-o", str(tmp_path / "seq"), "--no-batch", *common, env=wide)
    assert dropped.returncode == 0, dropped.stderr
    (stretch,) = json.loads(dropped.stdout)["files"][0]["unheard_speech"]
    assert stretch[0] <= placed.start + 0.5 and stretch[1] >= placed.end - 0.5
    assert "quote.wav: 1 stretch of speech" in dropped.stderr and "got no words, at 0:1" in dropped.stderr
    assert (tmp_path / "seq" / "quote.json").exists()  # a warning: the subtitles are still written

    kept = cli("transcribe", str(wav), "-o", str(tmp_path / "default"), *common, env=wide)
    assert kept.returncode == 0, kept.stderr
    assert json.loads(kept.stdout)["files"][0]["unheard_speech"] == []
    assert "got no words" not in kept.stderr
